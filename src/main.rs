//! The `mcpx` command: sets up logging, parses the command line, and hands it to the library
//! ([`mcpx::commands`], which sizes the executor from the configuration).

use clap::Parser;
use std::process::ExitCode;

/// mimalloc: a gateway allocates many small, short-lived objects on several threads (JSON values,
/// channels, tasks), where it is markedly faster than the system allocator (1.7x the requests per
/// second in bench/run). Its memory is read at load, before `main`: the service unit sets
/// `MIMALLOC_ARENA_EAGER_COMMIT=0`, which keeps a daemon holding thousands of idle streams at the
/// system allocator's footprint.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // A stdio server's supervisor, one per server: before anything else, so that it holds no
    // logging, no executor and no thread (the `exec-upstream` subcommand, read by hand).
    if let Some(invocation) = mcpx::upstream::supervisor::invoked() {
        return mcpx::upstream::supervisor::run(&invocation);
    }
    let colours = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_writer(mcpx::log_writer::LogWriter { colours })
        .with_ansi(colours)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCPX_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    mcpx::commands::run(mcpx::cli::Cli::parse())
}
