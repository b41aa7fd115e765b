//! Resource limits: open files, core dumps, memory and processes.
//!
//! `RLIMIT_AS` is never set: Node and WebAssembly runtimes reserve gigabytes of address space
//! they never touch, and die under it. Memory is `RLIMIT_DATA` instead (since Linux 4.7 it
//! counts private mappings too). A process count has no per-tree rlimit (`RLIMIT_NPROC` counts
//! every process of the user), so `pids` needs a delegated cgroup, which mcpx does not manage
//! yet: asked for, it is reported missing.

use super::{Report, Spec};
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
    if spec.memory.is_some() {
        report
            .enforced
            .push("memory: RLIMIT_DATA (no delegated cgroup for memory.max)".into());
    }
    if let Some(pids) = spec.pids {
        report.missing.push(format!(
            "pids {pids}: needs a delegated cgroup, which mcpx does not manage yet"
        ));
    }
}
