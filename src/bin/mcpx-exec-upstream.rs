//! `mcpx-exec-upstream -- PROGRAM ARGS`: the supervisor each stdio server runs under
//! ([`mcpx::upstream::supervisor`]), a binary of its own so that each costs only what it holds:
//! the system's allocator, and none of mcpx's code to relocate.

use std::process::ExitCode;

fn main() -> ExitCode {
    let invocation = mcpx::upstream::supervisor::Invocation::parse(std::env::args_os().skip(1));
    mcpx::upstream::supervisor::run(&invocation)
}
