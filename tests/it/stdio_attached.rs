//! The stdio rules again, through the daemon: every test body of `stdio.rs`, with each
//! `mcpx serve` attached (`--attach`) to a daemon started with the test's configuration (the
//! harness sees that the test's name is under this module and starts one; see `Serve::start`).

// The same bodies, compiled a second time under this module: their path is what makes them
// attached.
#[allow(clippy::duplicate_mod)]
#[path = "stdio.rs"]
mod rules;
