//! `mcpx __sandbox-exec --spec JSON -- PROGRAM ARGS`: applies a [`Spec`] to this process, then
//! becomes the program.
//!
//! It runs as a fresh process of the mcpx binary, before any thread is started, which is what
//! Landlock (before ABI 8, per thread), `unshare` of a user namespace (single-threaded callers
//! only) and a seccomp filter without `TSYNC` need. It writes its [`Report`] as its first stderr
//! line, then `execve`s; with `onUnavailable = "fail"` and a layer missing it writes why and
//! exits instead, and the server never runs.

use super::{
    capabilities, filesystem, limits, namespaces, syscalls, unix_sockets, Report, Spec,
    REPORT_PREFIX,
};
use crate::config::Network;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

/// The exit code when the sandbox cannot be applied as asked (as a shell's "cannot execute").
const REFUSED: u8 = 126;

/// Applies `spec` (JSON) and runs `command`; returns only if it cannot.
pub fn run(spec: &str, command: &[OsString]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("mcpx __sandbox-exec: no program");
        return ExitCode::from(2);
    };
    let spec: Spec = match serde_json::from_str(spec) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("mcpx __sandbox-exec: a spec that does not parse: {e}");
            return ExitCode::from(2);
        }
    };
    let report = confine(&spec);
    let mut stderr = std::io::stderr().lock();
    let line = serde_json::to_string(&report).unwrap_or_default();
    let _ = writeln!(stderr, "{REPORT_PREFIX}{line}");
    if report.is_degraded() && spec.fail_when_unavailable {
        let _ = writeln!(
            stderr,
            "mcpx: sandbox: not started, because onUnavailable = \"fail\" and this kernel lacks: {}",
            report.missing.join("; ")
        );
        return ExitCode::from(REFUSED);
    }
    drop(stderr);
    let error = std::process::Command::new(program).args(args).exec();
    eprintln!("mcpx: cannot start {}: {error}", program.to_string_lossy());
    ExitCode::from(127)
}

/// Applies every layer of `spec` to this process, in the order each needs: the limits (and the
/// move into its cgroup) while this process is still in mcpx's user namespace, the namespaces
/// while netlink sockets and mounts are still allowed, the capabilities dropped once nothing
/// needs them, Landlock before seccomp (its own syscalls would be filtered otherwise).
pub fn confine(spec: &Spec) -> Report {
    let mut report = Report::default();
    limits::apply(spec, &mut report);
    let hidden = namespaces::apply(spec, unix_sockets::wants_hiding(spec), &mut report);
    capabilities::drop_all(&mut report);
    let landlock = filesystem::apply(spec, &mut report);
    let seccomp = syscalls::apply(spec, &mut report);
    match unix_sockets::verdict(spec, seccomp, landlock.abi, hidden) {
        Ok(line) => report.enforced.push(line),
        Err(line) => report.missing.push(line),
    }
    match spec.network {
        Network::None if landlock.tcp() => report
            .enforced
            .push("network: none (no sockets; TCP also refused by landlock)".into()),
        Network::None => report.enforced.push("network: none (no sockets)".into()),
        Network::Tcp if landlock.tcp() => report.enforced.push(format!(
            "network: tcp connect {:?}, bind {:?} (landlock); udp open",
            spec.tcp_connect, spec.tcp_bind
        )),
        Network::Tcp => report
            .missing
            .push("network: tcp ports need landlock v4 (Linux 6.7)".into()),
        Network::Loopback => {}
        Network::Any => report
            .enforced
            .push("network: any Internet address (not restricted)".into()),
    }
    report
}
