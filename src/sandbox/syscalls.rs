//! The seccomp filter: what Landlock cannot say by path or port.
//!
//! Always refused: `io_uring` (its requests bypass the socket checks below), `ptrace` and
//! `process_vm_*` (reading another process's memory). `socket()` may create only the families
//! the network mode needs, an allowlist so that a family the kernel adds later is refused too:
//! none for `none`; IPv4, IPv6 and netlink (address lookups read the interfaces) otherwise; and
//! Unix sockets only where `unixSockets` names some ([`super::unix_sockets`]), since a pathname
//! Unix socket is reached by `connect`, which Landlock before ABI 9 does not check, and mcpx's
//! own admin socket, the session bus or Docker's socket is the way out of any sandbox.
//! `socketpair` stays allowed: runtimes use it to talk to their own children. Refused calls
//! fail with `EPERM`, never kill: a runtime that probes for a feature then goes on without it.

use super::{Report, Spec};
use crate::config::Network;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use std::collections::BTreeMap;

/// Installs the filter for `spec` on this process (inherited across `execve`); whether it is
/// in force.
pub fn apply(spec: &Spec, report: &mut Report) -> bool {
    if spec.assumes_missing("seccomp") {
        report
            .missing
            .push("syscalls: seccomp (assumed missing: MCPX_SANDBOX_ASSUME_MISSING)".into());
        return false;
    }
    let applied = filter(spec)
        .and_then(|program| seccompiler::apply_filter(&program).map_err(|e| e.to_string()));
    match applied {
        Ok(()) => {
            report
                .enforced
                .push(format!("syscalls: seccomp ({})", allowed(spec)));
            true
        }
        Err(e) => {
            report.missing.push(format!("syscalls: seccomp: {e}"));
            false
        }
    }
}

/// What the filter allows, as the report says it.
fn allowed(spec: &Spec) -> String {
    let names: Vec<&str> = allowed_families(spec)
        .iter()
        .map(|&family| match family {
            libc::AF_INET => "inet",
            libc::AF_INET6 => "inet6",
            libc::AF_NETLINK => "netlink",
            _ => "unix",
        })
        .collect();
    match names.is_empty() {
        true => "no sockets; no io_uring, ptrace".into(),
        false => format!("sockets only {}; no io_uring, ptrace", names.join(", ")),
    }
}

/// The socket families `socket()` may create.
fn allowed_families(spec: &Spec) -> Vec<i32> {
    let mut families = match spec.network {
        Network::None => Vec::new(),
        Network::Loopback | Network::Tcp | Network::Any => {
            vec![libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK]
        }
    };
    if !spec.unix_sockets.is_empty() {
        families.push(libc::AF_UNIX);
    }
    families
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
    // One rule whose conditions all hold (the family is none of those allowed) refuses; with
    // none allowed, no rule at all: every `socket()` is refused.
    let other_family = allowed_families(spec)
        .into_iter()
        .map(|family| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
                .map_err(error)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let socket_rules = match other_family.is_empty() {
        true => Vec::new(),
        false => vec![SeccompRule::new(other_family).map_err(error)?],
    };
    rules.insert(libc::SYS_socket, socket_rules);
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
