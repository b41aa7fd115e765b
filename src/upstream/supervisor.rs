//! `mcpx exec-upstream -- PROGRAM ARGS`: the small process that stands between mcpx and a stdio
//! upstream, so that the upstream's whole process tree dies with mcpx, however mcpx dies.
//!
//! Real launchers are wrappers (`npx` runs node, `uvx` runs python, `sh -c` runs anything): the
//! kernel's parent-death signal reaches only the process that asked for it, and the server
//! proper lives on, a grandchild adopted by init. So this process stays: it asks for a signal
//! when mcpx dies, becomes a subreaper (descendants whose parents die are adopted by it, not by
//! init), runs the program as its child in its own process group (mcpx made it a group
//! leader), and hands the program its stdio. When mcpx dies, or the program exits, it kills
//! every process of the group and every descendant it adopted, then exits as the program did.
//! When mcpx stops a server it kills the group itself, this process with it.

use rustix::process::{Pid, Signal, WaitOptions};
use std::ffi::OsString;
use std::process::ExitCode;

/// At most this many sweeps of the process table: each kill of an adopted process can orphan
/// its own children, adopted in turn.
const SWEEPS: usize = 64;

/// Runs `command` under supervision; the exit code is the program's (128 + its signal).
pub fn run(command: &[OsString]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("mcpx exec-upstream: no program");
        return ExitCode::from(2);
    };
    let parent = rustix::process::getppid();
    // Caught rather than fatal, so that this process can take the tree down with it.
    let Ok(mut signals) = async_signal::Signals::new([async_signal::Signal::Term]) else {
        eprintln!("mcpx exec-upstream: cannot watch for signals");
        return ExitCode::FAILURE;
    };
    if rustix::process::set_parent_process_death_signal(Some(Signal::TERM)).is_err()
        || rustix::process::getppid() != parent
    {
        // mcpx died before the request took effect: nothing would ever stop this server.
        return ExitCode::FAILURE;
    }
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let mut child = match std::process::Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("mcpx: cannot start {}: {error}", program.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    // The pipes are the program's now: mcpx sees its stdout end when the program's ends.
    if let Ok(null) = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
    }
    let ended = smol::block_on(async {
        let exited = smol::unblock(move || child.wait());
        let terminated = async {
            smol::stream::StreamExt::next(&mut signals).await;
            None
        };
        smol::future::or(async { Some(exited.await) }, terminated).await
    });
    kill_the_tree();
    match ended {
        Some(Ok(status)) => exit_code(status),
        Some(Err(_)) => ExitCode::FAILURE,
        // mcpx is gone (or asked this process to end): as a shell reports SIGTERM.
        None => ExitCode::from(128 + 15),
    }
}

/// The program's exit status as this process's: its code, or 128 + the signal that killed it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Kills every other process of this process's group, and every descendant it adopted, until
/// none is left (or the sweeps run out), reaping each.
fn kill_the_tree() {
    let me = rustix::process::getpid();
    for _ in 0..SWEEPS {
        let left = tree_of(me);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// The live processes (zombies left out) in `me`'s group or whose parent is `me`, but for `me`.
fn tree_of(me: Pid) -> Vec<Pid> {
    let me = me.as_raw_nonzero().get();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            parse_stat(&stat)
                .is_some_and(|(state, parent, group)| (parent == me || group == me) && state != 'Z')
        })
        .filter_map(Pid::from_raw)
        .collect()
}

/// `/proc/PID/stat`'s state, ppid and pgrp: the fields after the command's closing parenthesis
/// (the command may itself hold spaces and parentheses).
fn parse_stat(stat: &str) -> Option<(char, i32, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, parent, group))
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod supervision {
            use crate::upstream::supervisor::parse_stat;

            /// A command name with spaces and parentheses does not shift the fields.
            #[test]
            fn a_process_status_line_is_read_after_the_command_name() {
                let stat = "4242 (node (worker) x) S 4200 4200 4200 0 -1 4194560 107";
                assert_eq!(parse_stat(stat), Some(('S', 4200, 4200)));
                assert_eq!(parse_stat("garbage"), None);
            }
        }
    }
}
