//! Landlock: the filesystem allowlists, the TCP ports of `network = "none" | "tcp"`, the Unix
//! sockets a server may connect to, and scoped IPC (abstract Unix sockets and signals stay
//! inside the sandbox).
//!
//! Each right is asked for best effort: the kernel applies what its Landlock ABI knows, and the
//! ABI it reports tells which are in force (filesystem from 1, TCP from 4, IPC scoping from 6,
//! Unix socket paths from 9). Paths that do not exist are skipped (a rule needs an open file).
//! Whatever the rights, a Landlocked process cannot trace, or read the `/proc` entries of, a
//! process outside its sandbox.

use super::{Report, Spec};
use crate::config::Network;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

/// The newest ABI whose rights mcpx asks for; newer kernels are held to these.
const VETTED: ABI = ABI::V9;

/// What the filesystem layer enforced, by what the kernel supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enforced {
    /// The Landlock ABI in force, `None` without Landlock.
    pub abi: Option<i32>,
}

impl Enforced {
    /// Whether TCP ports are restricted (ABI 4).
    pub fn tcp(&self) -> bool {
        self.abi.is_some_and(|abi| abi >= 4)
    }
}

/// Restricts this process (and what it runs) to `spec`'s paths and, for `none` and `tcp`, ports.
pub fn apply(spec: &Spec, report: &mut Report) -> Enforced {
    if spec.assumes_missing("landlock") {
        report
            .missing
            .push("filesystem: Landlock (assumed missing: MCPX_SANDBOX_ASSUME_MISSING)".into());
        return Enforced { abi: None };
    }
    match restrict(spec) {
        Ok(LandlockStatus::Available { effective_abi, .. }) => {
            let abi = effective_abi as i32;
            report.enforced.push(format!("filesystem: landlock v{abi}"));
            if abi >= 6 {
                report
                    .enforced
                    .push("ipc: abstract unix sockets and signals scoped (landlock)".into());
            }
            Enforced { abi: Some(abi) }
        }
        Ok(_) => {
            report
                .missing
                .push("filesystem: the kernel has no Landlock (5.13+, enabled at boot)".into());
            Enforced { abi: None }
        }
        Err(e) => {
            report.missing.push(format!("filesystem: landlock: {e}"));
            Enforced { abi: None }
        }
    }
}

fn restrict(spec: &Spec) -> Result<LandlockStatus, landlock::RulesetError> {
    let all = AccessFs::from_all(VETTED);
    let read = AccessFs::from_read(VETTED) & !AccessFs::Execute;
    let exec = AccessFs::from_read(VETTED);
    let mut ruleset = Ruleset::default().handle_access(all)?;
    let ports = matches!(spec.network, Network::None | Network::Tcp);
    if ports {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut created = ruleset.scope(Scope::from_all(VETTED))?.create()?;
    let rules: [(&[std::path::PathBuf], BitFlags<AccessFs>); 3] =
        [(&spec.read, read), (&spec.exec, exec), (&spec.write, all)];
    for (paths, access) in rules {
        for path in paths {
            let Ok(fd) = PathFd::new(path) else {
                continue;
            };
            // A file takes only the rights that apply to files (no listing, no creating in it).
            let access = match std::fs::metadata(path).map(|m| m.is_dir()) {
                Ok(false) => access & AccessFs::from_file(VETTED),
                _ => access,
            };
            created = created.add_rule(PathBeneath::new(fd, access))?;
        }
    }
    // Before ABI 9 the kernel cannot check this right, and a best-effort ruleset skips the rule.
    for socket in &spec.unix_sockets {
        if let Ok(fd) = PathFd::new(socket) {
            created = created.add_rule(PathBeneath::new(fd, AccessFs::ResolveUnix))?;
        }
    }
    if spec.network == Network::Tcp {
        for &port in &spec.tcp_connect {
            created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
        }
        for &port in &spec.tcp_bind {
            created = created.add_rule(NetPort::new(port, AccessNet::BindTcp))?;
        }
    }
    Ok(created.restrict_self()?.landlock)
}
