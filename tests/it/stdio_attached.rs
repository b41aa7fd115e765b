//! The stdio rules again, through the daemon: every test body of `stdio.rs`, with each
//! `mcpx serve` attached (`--attach`) to a daemon started with the test's configuration (the
//! harness sees that the test's name is under this module and starts one; see `Serve::start`).

#[path = "stdio.rs"]
mod rules;
