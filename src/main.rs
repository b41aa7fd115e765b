//! The `mcpx` command: sets up the executor threads and logging, parses the command line, and
//! hands it to the library ([`mcpx::commands`]).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // smol's executor runs one thread unless told otherwise; a gateway should use every core.
    if std::env::var_os("SMOL_THREADS").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::env::set_var("SMOL_THREADS", cores.to_string());
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCPX_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    mcpx::commands::run(mcpx::cli::Cli::parse())
}
