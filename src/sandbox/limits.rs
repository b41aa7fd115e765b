//! Resource limits: open files, core dumps, memory and processes.
//!
//! Memory and processes are limited by the server's cgroup where mcpx has one to give
//! ([`super::cgroup`]): it counts the whole tree the server starts. Memory is also
//! `RLIMIT_DATA`, per process (since Linux 4.7 it counts private mappings too), and never
//! `RLIMIT_AS`: Node and WebAssembly runtimes reserve gigabytes of address space they never
//! touch, and die under it. A process count has no per-tree rlimit (`RLIMIT_NPROC` counts every
//! process of the user), so without a cgroup `pids` is reported missing.

use super::{cgroup, Report, Spec};
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Sets the limits `spec` asks for on this process (inherited by the program it becomes).
pub fn apply(spec: &Spec, report: &mut Report) {
    let mut set = Vec::new();
    let mut limit = |resource: Resource, name: &str, value: u64| {
        // Lowering is always allowed; raising past the hard limit is not, so never ask more.
        let hard = getrlimit(resource).maximum.unwrap_or(u64::MAX);
        let value = value.min(hard);
        match setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        ) {
            Ok(()) => set.push(format!("{name} {value}")),
            Err(e) => report.missing.push(format!("rlimit {name}: {e}")),
        }
    };
    limit(Resource::Nofile, "nofile", spec.nofile);
    limit(Resource::Core, "core", 0);
    if let Some(memory) = spec.memory {
        limit(Resource::Data, "data", memory);
    }
    report.enforced.push(format!("rlimits: {}", set.join(", ")));
    if spec.memory.is_none() && spec.pids.is_none() {
        return;
    }
    let joined = match &spec.cgroup {
        Some(Ok(path)) => cgroup::join(path)
            .map(|()| path)
            .map_err(|e| format!("joining it failed: {e}")),
        Some(Err(reason)) => Err(reason.clone()),
        None => Err("none was made".into()),
    };
    match joined {
        Ok(path) => {
            let limits = [("memory.max", spec.memory), ("pids.max", spec.pids)];
            let limits: Vec<String> = limits
                .iter()
                .filter_map(|(name, value)| Some(format!("{name} {}", (*value)?)))
                .collect();
            report.enforced.push(format!(
                "cgroup: {} ({})",
                path.display(),
                limits.join(", ")
            ));
        }
        Err(reason) => {
            if spec.memory.is_some() {
                report.enforced.push(format!(
                    "memory: RLIMIT_DATA per process (no cgroup: {reason})"
                ));
            }
            if let Some(pids) = spec.pids {
                report
                    .missing
                    .push(format!("pids {pids}: no cgroup ({reason})"));
            }
        }
    }
}
