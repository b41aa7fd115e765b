//! The stdio rules again, through the daemon: every test body of tests/stdio.rs, with each
//! `mcpx serve` attached (`--attach`) to a daemon started with the test's configuration (the
//! harness sees this binary's name and starts one; see `Serve::start`).

#[path = "stdio.rs"]
mod rules;
