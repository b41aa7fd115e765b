//! Memory and process limits through cgroup v2, where mcpx was delegated a cgroup of its own
//! (systemd's `Delegate=yes`, which the shipped unit sets). A server then gets `memory.max` and
//! `pids.max`, which count the server and everything it starts, where an rlimit counts one
//! process (`RLIMIT_DATA`) or every process of the user (`RLIMIT_NPROC`).
//!
//! cgroup v2 enables controllers only for the children of a cgroup without processes of its own,
//! so mcpx first moves itself into a leaf of its cgroup, `mcpx`, and each server start gets a
//! sibling, `server-NAME-N`, into which the sandbox helper moves itself before it becomes the
//! server. mcpx does this only in a cgroup that is its own: on cgroup v2 alone, marked delegated
//! by the service manager, offering both controllers, and holding no other process (an
//! editor's `mcpx serve` shares its terminal's cgroup, which is not mcpx's to rearrange).
//! Anywhere else nothing is written, and the helper falls back to rlimits and says so.

use super::Spec;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Where the cgroup v2 hierarchy is mounted.
const MOUNT: &str = "/sys/fs/cgroup";

/// The leaf mcpx moves itself into.
const OWN_LEAF: &str = "mcpx";

/// The prefix of the servers' cgroups.
const SERVER_PREFIX: &str = "server-";

/// What a server's cgroup needs.
const CONTROLLERS: [&str; 2] = ["memory", "pids"];

/// The cgroup servers' cgroups are made in, prepared by the first call, or why there is none.
pub fn delegated() -> Result<&'static Path, &'static str> {
    static PREPARED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let own = inspect()?;
            prepare(&own, std::process::id())?;
            Ok(own)
        })
        .as_deref()
        .map_err(String::as_str)
}

/// This process's cgroup, if it may hold servers' cgroups: cgroup v2 alone, delegated (as the
/// service manager marks it), offering both controllers, and holding no process but this one.
/// Nothing is changed (`mcpx doctor` asks this too).
pub fn inspect() -> Result<PathBuf, String> {
    let mount = Path::new(MOUNT);
    if !mount.join("cgroup.controllers").exists() {
        return Err("not cgroup v2 alone".into());
    }
    let listed = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let path = listed
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("no cgroup v2 entry in /proc/self/cgroup")?;
    let own = mount.join(path.trim_start_matches('/'));
    check_own(&own, &marked_delegated, std::process::id())?;
    Ok(own)
}

/// Whether `own` is this process's (`pid`) to rearrange; why not.
fn check_own(own: &Path, delegated: &dyn Fn(&Path) -> bool, pid: u32) -> Result<(), String> {
    let shown = own.display();
    if !delegated(own) {
        return Err(format!(
            "{shown} is not delegated to mcpx (a systemd unit needs Delegate=yes)"
        ));
    }
    let offered = read(&own.join("cgroup.controllers"))?;
    if let Some(lacking) = CONTROLLERS
        .iter()
        .find(|c| !offered.split_whitespace().any(|o| o == **c))
    {
        return Err(format!("{shown} offers no {lacking} controller"));
    }
    let pid = pid.to_string();
    let processes = read(&own.join("cgroup.procs"))?;
    if processes.lines().any(|p| p.trim() != pid) {
        return Err(format!("{shown} holds other processes than mcpx"));
    }
    Ok(())
}

/// Moves this process (`pid`) into the leaf of `own`, removes servers' cgroups a previous run
/// left, and enables the controllers for the servers' cgroups.
fn prepare(own: &Path, pid: u32) -> Result<(), String> {
    let leaf = own.join(OWN_LEAF);
    match std::fs::create_dir(&leaf) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(format!("{}: {e}", leaf.display()))
        }
        _ => {}
    }
    write(&leaf.join("cgroup.procs"), &pid.to_string())?;
    for stale in std::fs::read_dir(own).into_iter().flatten().flatten() {
        if stale
            .file_name()
            .to_string_lossy()
            .starts_with(SERVER_PREFIX)
        {
            let _ = std::fs::remove_dir(stale.path());
        }
    }
    let enable: Vec<String> = CONTROLLERS.iter().map(|c| format!("+{c}")).collect();
    write(&own.join("cgroup.subtree_control"), &enable.join(" "))
}

/// Whether the service manager marked `dir` delegated (systemd sets `trusted.delegate` in the
/// system manager and `user.delegate` in a user's).
fn marked_delegated(dir: &Path) -> bool {
    ["user.delegate", "trusted.delegate"].iter().any(|name| {
        let mut value = [0u8; 8];
        rustix::fs::getxattr(dir, *name, &mut value).is_ok_and(|n| &value[..n] == b"1")
    })
}

/// One start of a server's cgroup, its limits written: the sandbox helper moves itself in, and
/// the cgroup is removed once the server is gone.
#[derive(Debug)]
pub struct ServerCgroup {
    path: PathBuf,
}

impl ServerCgroup {
    /// `server-NAME-N` under `parent`, with `memory.max` and `pids.max` as given.
    fn create(
        parent: &Path,
        server: &str,
        memory: Option<u64>,
        pids: Option<u64>,
    ) -> Result<ServerCgroup, String> {
        static STARTS: AtomicU64 = AtomicU64::new(0);
        let safe: String = server
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let start = STARTS.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("{SERVER_PREFIX}{safe}-{start}"));
        std::fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cgroup = ServerCgroup { path };
        if let Some(memory) = memory {
            write(&cgroup.path.join("memory.max"), &memory.to_string())?;
        }
        if let Some(pids) = pids {
            write(&cgroup.path.join("pids.max"), &pids.to_string())?;
        }
        Ok(cgroup)
    }

    /// The cgroup of server `server`'s start that `spec`'s `memory` and `pids` ask for, if they
    /// ask and mcpx has one to give: `spec` names it for the helper to join, or says why there
    /// is none.
    pub fn for_spec(spec: &mut Spec, server: &str) -> Option<ServerCgroup> {
        if spec.memory.is_none() && spec.pids.is_none() {
            return None;
        }
        let made = delegated()
            .map_err(str::to_owned)
            .and_then(|parent| ServerCgroup::create(parent, server, spec.memory, spec.pids));
        spec.cgroup = Some(made.as_ref().map(|c| c.path.clone()).map_err(Clone::clone));
        made.ok()
    }
}

impl Drop for ServerCgroup {
    /// Kills what is left in it and removes it once empty (the kernel takes a moment to reap).
    fn drop(&mut self) {
        let _ = std::fs::write(self.path.join("cgroup.kill"), "1");
        let path = std::mem::take(&mut self.path);
        crate::runtime::spawn(async move {
            for _ in 0..50 {
                if std::fs::remove_dir(&path).is_ok() {
                    return;
                }
                smol::Timer::after(Duration::from_millis(100)).await;
            }
            tracing::warn!("cannot remove the cgroup {}", path.display());
        })
        .detach();
    }
}

/// In the sandbox helper: moves this process into the server's cgroup at `path`.
pub fn join(path: &Path) -> Result<(), String> {
    write(&path.join("cgroup.procs"), &std::process::id().to_string())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod sandbox {
            use crate::sandbox::cgroup::{check_own, prepare, ServerCgroup};
            use std::fs;
            use std::path::Path;

            /// A cgroup directory as cgroupfs shows one: controllers offered, processes in it.
            fn cgroup(dir: &Path, controllers: &str, processes: &str) {
                fs::create_dir_all(dir).unwrap();
                fs::write(dir.join("cgroup.controllers"), controllers).unwrap();
                fs::write(dir.join("cgroup.procs"), processes).unwrap();
                fs::write(dir.join("cgroup.subtree_control"), "").unwrap();
            }

            #[test]
            fn only_a_delegated_cgroup_of_mcpx_alone_with_both_controllers_is_used() {
                let dir = tempfile::tempdir().unwrap();
                let own = dir.path().join("mcpx.service");
                cgroup(&own, "cpu memory pids\n", "42\n");
                assert_eq!(check_own(&own, &|_| true, 42), Ok(()));
                let refusal = check_own(&own, &|_| false, 42).unwrap_err();
                assert!(refusal.contains("Delegate=yes"), "{refusal}");
                cgroup(&own, "cpu memory\n", "42\n");
                assert!(check_own(&own, &|_| true, 42)
                    .unwrap_err()
                    .contains("no pids controller"));
                cgroup(&own, "memory pids\n", "42\n7\n");
                assert!(check_own(&own, &|_| true, 42)
                    .unwrap_err()
                    .contains("other processes"));
            }

            #[test]
            fn mcpx_moves_to_its_leaf_and_each_server_start_gets_its_limits() {
                let dir = tempfile::tempdir().unwrap();
                let own = dir.path().join("mcpx.service");
                cgroup(&own, "memory pids\n", "42\n");
                fs::create_dir(own.join("server-left_over-3")).unwrap();
                prepare(&own, 42).unwrap();
                let read = |p: &Path| fs::read_to_string(p).unwrap();
                assert_eq!(read(&own.join("mcpx/cgroup.procs")), "42");
                assert_eq!(read(&own.join("cgroup.subtree_control")), "+memory +pids");
                assert!(!own.join("server-left_over-3").exists());
                let server = ServerCgroup::create(&own, "my files", Some(1 << 29), Some(64));
                let server = server.unwrap();
                let name = server.path.file_name().unwrap().to_string_lossy();
                assert!(name.starts_with("server-my_files-"), "{name}");
                assert_eq!(read(&server.path.join("memory.max")), "536870912");
                assert_eq!(read(&server.path.join("pids.max")), "64");
                std::mem::forget(server);
            }
        }
    }
}
