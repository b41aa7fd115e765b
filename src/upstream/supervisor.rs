//! `mcpx-exec-upstream -- PROGRAM ARGS`: the small process that stands between mcpx and a stdio
//! upstream, so that the upstream's whole process tree dies with mcpx, however mcpx dies.
//!
//! It is a binary of its own, installed beside mcpx: one runs per stdio server, and mcpx's
//! binary as a supervisor held about 0.7 MiB more per server (its relocated data, made private by
//! the loader, and its allocator's first arena). Where that binary is missing, `mcpx
//! exec-upstream` does the same work.
//!
//! Real launchers are wrappers (`npx` runs node, `uvx` runs python, `sh -c` runs anything): the
//! kernel's parent-death signal reaches only the process that asked for it, and the server
//! proper lives on, a grandchild adopted by init. So this process stays: it asks for a signal
//! when mcpx dies, becomes a subreaper (descendants whose parents die are adopted by it, not by
//! init), runs the program as its child in its own process group (mcpx made it a group
//! leader), and hands the program its stdio. When mcpx dies, or the program exits, it kills
//! every process of the group and every descendant it adopted, then exits as the program did.
//! When mcpx stops a server it kills the group itself, this process with it.

use nix::sys::signal::{SigSet, Signal as Caught};
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// At most this many sweeps of the process table: each kill of an adopted process can orphan
/// its own children, adopted in turn.
const SWEEPS: usize = 64;

/// The supervisor's own binary, beside mcpx's.
pub const BINARY: &str = "mcpx-exec-upstream";

/// Which binary supervises a server.
#[derive(Debug)]
pub enum Binary {
    /// `mcpx-exec-upstream`, small and with the system's allocator.
    Own(PathBuf),
    /// mcpx itself, as `mcpx exec-upstream`.
    Mcpx(PathBuf),
}

impl Binary {
    /// The supervisor beside `mcpx` (the running binary), or mcpx itself where there is none.
    pub fn beside(mcpx: &Path) -> Binary {
        let own = mcpx.with_file_name(BINARY);
        match own.is_file() {
            true => Binary::Own(own),
            false => Binary::Mcpx(mcpx.to_owned()),
        }
    }

    /// The command that starts it, up to the arguments [`Invocation::parse`] reads.
    pub fn command(&self) -> std::process::Command {
        match self {
            Binary::Own(path) => std::process::Command::new(path),
            Binary::Mcpx(path) => {
                let mut command = std::process::Command::new(path);
                command.arg("exec-upstream");
                command
            }
        }
    }
}

/// The variable mcpx sets for itself as a supervisor ([`Binary::Mcpx`]) alone: mimalloc then
/// commits its first arena as it is used, not whole (about 4 MiB per supervisor).
pub const ALLOCATOR_QUIET: (&str, &str) = ("MIMALLOC_ARENA_EAGER_COMMIT", "0");

/// What `mcpx exec-upstream [--unset NAME]... -- PROGRAM ARGS` asks: the program, and the
/// variables of the supervisor's own environment it must not pass on.
#[derive(Debug, Default, PartialEq)]
pub struct Invocation {
    /// Removed from the program's environment.
    pub unset: Vec<OsString>,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

impl Invocation {
    /// Reads the arguments after `exec-upstream`.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Invocation {
        let mut args = args.into_iter();
        let mut invocation = Invocation::default();
        while let Some(arg) = args.next() {
            match arg.to_str() {
                Some("--unset") => invocation.unset.extend(args.next()),
                Some("--") => break,
                _ => {
                    invocation.command.push(arg);
                    break;
                }
            }
        }
        invocation.command.extend(args);
        invocation
    }
}

/// What to supervise, when this process was started as `mcpx exec-upstream …`: read straight
/// from the arguments, so that `main` runs the supervisor before anything else (no logging, no
/// executor, no thread; one runs per stdio server, and each costs what it holds).
pub fn invoked() -> Option<Invocation> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != "exec-upstream" {
        return None;
    }
    Some(Invocation::parse(args))
}

/// Runs `command` under supervision; the exit code is the program's (128 + its signal).
///
/// One thread, blocking: the signals that matter (the program's end, mcpx's death as SIGTERM,
/// an interrupt) are blocked and taken one at a time with `sigwait`, so nothing runs between
/// them.
pub fn run(invocation: &Invocation) -> ExitCode {
    let Some((program, args)) = invocation.command.split_first() else {
        eprintln!("mcpx exec-upstream: no program");
        return ExitCode::from(2);
    };
    // Not dumpable: its environment is the server's, secrets included.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let parent = rustix::process::getppid();
    let mut awaited = SigSet::empty();
    for signal in [
        Caught::SIGCHLD,
        Caught::SIGTERM,
        Caught::SIGINT,
        Caught::SIGHUP,
    ] {
        awaited.add(signal);
    }
    // Blocked before mcpx's death can be signalled, so the signal waits for `sigwait`.
    if awaited.thread_block().is_err() {
        eprintln!("mcpx exec-upstream: cannot watch for signals");
        return ExitCode::FAILURE;
    }
    if rustix::process::set_parent_process_death_signal(Some(Signal::TERM)).is_err()
        || rustix::process::getppid() != parent
    {
        // mcpx died before the request took effect: nothing would ever stop this server.
        return ExitCode::FAILURE;
    }
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    // The program starts with no signal blocked (std resets the mask in the child).
    let mut command = std::process::Command::new(program);
    command.args(args);
    for name in &invocation.unset {
        command.env_remove(name);
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("mcpx: cannot start {}: {error}", program.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    let child = Pid::from_child(&child);
    // The pipes are the program's now: mcpx sees its stdout end when the program's ends.
    if let Ok(null) = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
    }
    let ended = loop {
        match awaited.wait() {
            Ok(Caught::SIGCHLD) => {
                if let Some(status) = reap(child) {
                    break Some(status);
                }
            }
            // mcpx is gone (or asked this process to end).
            Ok(_) => break None,
            Err(_) => {}
        }
    };
    kill_the_tree();
    match ended {
        Some(status) => exit_code(status),
        // As a shell reports SIGTERM.
        None => ExitCode::from(128 + 15),
    }
}

/// Reaps every child that ended (the program, and descendants adopted since their parent
/// ended); the program's status if it was among them.
fn reap(program: Pid) -> Option<WaitStatus> {
    let mut status_of_program = None;
    while let Ok(Some((pid, status))) = rustix::process::wait(WaitOptions::NOHANG) {
        if pid == program {
            status_of_program = Some(status);
        }
    }
    status_of_program
}

/// The program's exit status as this process's: its code, or 128 + the signal that killed it.
fn exit_code(status: WaitStatus) -> ExitCode {
    let code = status
        .exit_status()
        .or_else(|| status.terminating_signal().map(|s| 128 + s))
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

            #[test]
            fn the_supervisors_arguments_name_what_to_unset_then_the_program() {
                use crate::upstream::supervisor::Invocation;
                let words = |w: &[&str]| {
                    w.iter()
                        .map(Into::into)
                        .collect::<Vec<std::ffi::OsString>>()
                };
                let parsed =
                    Invocation::parse(words(&["--unset", "A", "--", "prog", "--unset", "x"]));
                assert_eq!(parsed.unset, words(&["A"]));
                assert_eq!(parsed.command, words(&["prog", "--unset", "x"]));
                assert_eq!(
                    Invocation::parse(words(&["prog", "a"])).command,
                    words(&["prog", "a"])
                );
                assert!(Invocation::parse(words(&[])).command.is_empty());
            }

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
