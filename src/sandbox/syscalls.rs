//! The seccomp filter: what Landlock cannot say by path or port.
//!
//! Always refused: `io_uring` (its requests bypass the socket checks below), `ptrace` and
//! `process_vm_*` (reading another process's memory). With `network = "none"` or `"loopback"`,
//! `socket()` of the Internet families, raw packets and VM sockets is refused too, which covers
//! UDP (Landlock does not), and for `none` Unix sockets as well: a pathname Unix socket is
//! reached by `connect`, which Landlock before ABI 9 does not check, and the user's D-Bus or
//! Docker socket is the way out of any sandbox. `socketpair` stays allowed: runtimes use it to
//! talk to their own children. Refused calls fail with `EPERM`, never kill: a runtime that
//! probes for a feature then goes on without it.

use super::{Report, Spec};
use crate::config::Network;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use std::collections::BTreeMap;

/// Installs the filter for `spec` on this process (inherited across `execve`).
pub fn apply(spec: &Spec, report: &mut Report) {
    if spec.assumes_missing("seccomp") {
        report
            .missing
            .push("syscalls: seccomp (assumed missing: MCPX_SANDBOX_ASSUME_MISSING)".into());
        return;
    }
    let applied = filter(spec)
        .and_then(|program| seccompiler::apply_filter(&program).map_err(|e| e.to_string()));
    match applied {
        Ok(()) => report
            .enforced
            .push(format!("syscalls: seccomp ({})", refused(spec))),
        Err(e) => report.missing.push(format!("syscalls: seccomp: {e}")),
    }
}

/// What the filter refuses, as the report says it.
fn refused(spec: &Spec) -> &'static str {
    match spec.network {
        Network::None => "no inet, unix, packet or vsock sockets; no io_uring, ptrace",
        Network::Loopback => "no packet or vsock sockets; no io_uring, ptrace",
        Network::Tcp | Network::Any => "no io_uring, ptrace",
    }
}

/// The socket families `socket()` may not create.
fn refused_families(network: Network) -> &'static [i32] {
    match network {
        Network::None => &[
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_PACKET,
            libc::AF_VSOCK,
            libc::AF_UNIX,
        ],
        Network::Loopback => &[libc::AF_PACKET, libc::AF_VSOCK],
        Network::Tcp | Network::Any => &[],
    }
}

fn filter(spec: &Spec) -> Result<BpfProgram, String> {
    let error = |e: seccompiler::BackendError| e.to_string();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
    ]
    .into_iter()
    .map(|call| (call, Vec::new()))
    .collect();
    let families = refused_families(spec.network)
        .iter()
        .map(|&family| {
            let domain =
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64)
                    .map_err(error)?;
            SeccompRule::new(vec![domain]).map_err(error)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !families.is_empty() {
        rules.insert(libc::SYS_socket, families);
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(error)?;
    BpfProgram::try_from(filter).map_err(error)
}
