//! Which Unix sockets a sandboxed server may connect to: none, unless `unixSockets` names some,
//! in every network mode.
//!
//! A pathname Unix socket is the way out of any sandbox: mcpx's own admin socket approves what
//! only a person should, its serve socket runs every other server's tools, the session bus
//! starts programs and holds the keyring, Docker's socket is root. The helper keeps them away
//! with the strongest layer the kernel has ([`verdict`]):
//!
//! - none allowed: seccomp refuses `socket(AF_UNIX)` outright (`socketpair` stays: runtimes
//!   talk to their own children over it). Every kernel with seccomp.
//! - some allowed, Landlock ABI 9 or newer: connecting to a socket is a Landlock right, given
//!   for the allowed paths alone (and under what the server may write: its own sockets).
//! - some allowed, an older Landlock: a private mount namespace in which empty file systems
//!   cover the directories where sockets live ([`HIDDEN`] and the runtime directory), with the
//!   allowed sockets and the server's own paths there bound back ([`hide`]). A socket kept
//!   elsewhere (under the home directory) stays reachable, and the report says so. Landlock
//!   must be there all the same: it is what stops the server from walking into another
//!   process's view through `/proc/PID/root`.

use super::Spec;
use crate::config::Network;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use std::path::{Path, PathBuf};

/// The Landlock ABI whose `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` checks a connect by path.
pub const LANDLOCK_ABI: i32 = 9;

/// Directories a mount namespace covers: where system and user daemons put their sockets
/// (`/run` holds `/run/user/UID`, the usual `XDG_RUNTIME_DIR`).
const HIDDEN: &[&str] = &["/run", "/var/run", "/tmp", "/var/tmp"];

/// Whether [`hide`] is wanted: some sockets are allowed, so seccomp cannot refuse them all.
/// It is applied even where Landlock will name them (the helper cannot ask the kernel's ABI
/// before applying it), which costs a namespace and nothing else.
pub fn wants_hiding(spec: &Spec) -> bool {
    !spec.unix_sockets.is_empty()
}

/// What the layers in force make of `spec`'s Unix sockets: the report's line, as enforced
/// (`Ok`) or missing (`Err`). `seccomp`: the filter is in force; `landlock_abi`: the ABI
/// Landlock enforced; `hidden`: [`hide`] succeeded.
pub fn verdict(
    spec: &Spec,
    seccomp: bool,
    landlock_abi: Option<i32>,
    hidden: bool,
) -> Result<String, String> {
    let allowed = || {
        let paths: Vec<String> = spec
            .unix_sockets
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        paths.join(", ")
    };
    let landlock = landlock_abi.unwrap_or(0);
    // Abstract sockets have no path: Landlock scopes them from v6, a network namespace of the
    // server's own holds its own.
    let abstract_scoped = landlock >= 6 || spec.network == Network::Loopback;
    match (spec.unix_sockets.is_empty(), seccomp) {
        (true, true) => Ok("unix sockets: none (seccomp)".into()),
        (true, false) => Err("unix sockets: refusing them needs seccomp".into()),
        (false, _) if landlock >= LANDLOCK_ABI => Ok(format!(
            "unix sockets: only {} (landlock v{landlock})",
            allowed()
        )),
        // Landlock also keeps `/proc/PID/root` of processes outside the namespace closed.
        (false, _) if hidden && landlock > 0 && abstract_scoped => Ok(format!(
            "unix sockets: only {} where sockets live ({} and the runtime directory hidden by a \
             mount namespace); one kept elsewhere stays reachable before landlock v{LANDLOCK_ABI}",
            allowed(),
            HIDDEN.join(", ")
        )),
        (false, _) => Err(format!(
            "unix sockets: allowing {} needs landlock v{LANDLOCK_ABI}, or a private mount \
             namespace and landlock v6",
            allowed()
        )),
    }
}

/// In a fresh mount namespace: covers each socket directory with an empty tmpfs, then binds
/// back the allowed sockets and every path of the server's own (its private temporary
/// directory, what it may read, write or run) that lay under one.
pub fn hide(spec: &Spec) -> Result<(), String> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| format!("making mounts private: {e}"))?;
    let hidden = hidden_directories();
    let under_hidden = |path: &Path| hidden.iter().any(|dir| path.starts_with(dir));
    let kept: Vec<(PathBuf, OwnedFd, bool)> = spec
        .unix_sockets
        .iter()
        .chain(&spec.read)
        .chain(&spec.write)
        .chain(&spec.exec)
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .filter(|path| under_hidden(path))
        .filter_map(|path| {
            let fd = rustix::fs::open(&path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
            let is_dir = rustix::fs::fstat(&fd).ok()?.st_mode & libc::S_IFMT == libc::S_IFDIR;
            Some((path, fd, is_dir))
        })
        .collect();
    for dir in &hidden {
        rustix::mount::mount(
            "tmpfs",
            dir,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            c"mode=0755,size=64k",
        )
        .map_err(|e| format!("covering {}: {e}", dir.display()))?;
    }
    for (path, fd, is_dir) in &kept {
        bind_back(path, fd.as_fd(), *is_dir)
            .map_err(|e| format!("keeping {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The directories to cover that exist, after links, none inside another.
fn hidden_directories() -> Vec<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = HIDDEN
        .iter()
        .map(PathBuf::from)
        .chain(runtime)
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .filter(|dir| dir.is_dir() && dir.parent().is_some())
        .collect();
    dirs.sort();
    dirs.dedup();
    let outer = dirs.clone();
    dirs.retain(|dir| !outer.iter().any(|o| o != dir && dir.starts_with(o)));
    dirs
}

/// Makes `path`'s mount point in the tmpfs over it and binds what `fd` opened there.
fn bind_back(path: &Path, fd: rustix::fd::BorrowedFd<'_>, is_dir: bool) -> std::io::Result<()> {
    use rustix::fd::AsRawFd;
    match is_dir {
        true => std::fs::create_dir_all(path)?,
        false => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map(drop)?;
        }
    }
    let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
    rustix::mount::mount_bind_recursive(source.as_str(), path).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod sandbox {
            use crate::sandbox::unix_sockets::verdict;
            use crate::sandbox::Spec;

            #[test]
            fn the_strongest_layer_the_kernel_has_keeps_unix_sockets_away_or_says_it_cannot() {
                let none = Spec::default();
                assert_eq!(
                    verdict(&none, true, None, false),
                    Ok("unix sockets: none (seccomp)".into())
                );
                assert!(verdict(&none, false, Some(9), false).is_err());
                let some = Spec {
                    unix_sockets: vec!["/run/user/1000/docker.sock".into()],
                    ..Spec::default()
                };
                let landlock = verdict(&some, true, Some(9), false).unwrap();
                assert!(landlock.ends_with("(landlock v9)"), "{landlock}");
                let hidden = verdict(&some, true, Some(7), true).unwrap();
                assert!(hidden.contains("hidden by a mount namespace"), "{hidden}");
                // A namespace without Landlock, or Landlock without the namespace, is not enough.
                assert!(verdict(&some, true, None, true).is_err());
                assert!(verdict(&some, true, Some(7), false).is_err());
                assert!(verdict(&some, true, Some(5), true).is_err());
            }
        }
    }
}
