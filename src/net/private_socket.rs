//! mcpx's Unix sockets (the admin socket, the editors' door) are for one user, checked both ways.
//!
//! The daemon binds them in a directory that only its user can write to: one that another user
//! created first (`/tmp` is everyone's) would let that user swap the socket for its own. So the
//! directory must be the effective user's own, not a symlink, and writable by nobody else, as
//! tmux and ssh-agent require (mcpx makes its own 0700; a configured path in an existing 0755
//! directory of the user's is as safe, since only the write bit lets another user replace the
//! socket); the socket is born 0600 (under a umask, since a `chmod` after `bind` follows a
//! symlink planted in its place). Each side then asks the kernel who the other
//! is (`SO_PEERCRED`): the daemon refuses another user's console, and a console or editor sends
//! nothing to a socket whose server is another user.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// Binds the socket at `path`: its directory made 0700 or checked to be private, a stale socket
/// file replaced, a live one (another mcpx answering on it) refused.
pub fn bind(path: &Path) -> std::io::Result<smol::net::unix::UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
            })?;
        check_private(dir)?;
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("another mcpx answers on {}", path.display()),
        ));
    }
    let _ = std::fs::remove_file(path);
    let private = rustix::fs::Mode::from_raw_mode(0o177);
    let before = rustix::process::umask(private);
    let bound = smol::net::unix::UnixListener::bind(path);
    rustix::process::umask(before);
    bound
}

/// Refuses a directory that another user could put a socket into, with the reason.
pub fn check_private(dir: &Path) -> std::io::Result<()> {
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("refusing {} for mcpx's sockets: {why}", dir.display()),
        ))
    };
    let meta = std::fs::symlink_metadata(dir)?;
    let me = rustix::process::geteuid().as_raw();
    if meta.file_type().is_symlink() {
        return refuse("it is a symbolic link".into());
    }
    if !meta.is_dir() {
        return refuse("it is not a directory".into());
    }
    if meta.uid() != me {
        return refuse(format!("it belongs to uid {}, not to uid {me}", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!(
            "its mode is {:o}, writable by others; it must be 700 (chmod 700 it, or remove it)",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// Whether the peer on `stream` runs as the same user as this process.
pub fn same_user(stream: &impl std::os::fd::AsFd) -> bool {
    peer_uid(stream) == Some(rustix::process::geteuid().as_raw())
}

/// The uid of the process on the other end of `stream`, as the kernel saw it connect or listen.
pub fn peer_uid(stream: &impl std::os::fd::AsFd) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(stream)
        .ok()
        .map(|peer| peer.uid.as_raw())
}

/// Connects to the socket at `path`, refusing (before a byte is sent) one whose server runs as
/// another user.
pub fn connect(path: &Path) -> std::io::Result<std::os::unix::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::connect(path)?;
    let owner = peer_uid(&stream);
    if owner != Some(rustix::process::geteuid().as_raw()) {
        let owner = owner.map_or("unknown".into(), |uid| uid.to_string());
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is served by another user (uid {owner}); nothing was sent",
                path.display()
            ),
        ));
    }
    Ok(stream)
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod admin {
            use crate::net::private_socket::*;
            use std::os::unix::fs::PermissionsExt;

            /// A directory open to others (as one another user pre-created in /tmp would be)
            /// is refused, with its name and why; a symlink to a private one is too.
            #[test]
            fn a_socket_directory_open_to_others_or_a_symlink_is_refused() {
                let dir = tempfile::tempdir().unwrap();
                let open = dir.path().join("open");
                std::fs::create_dir(&open).unwrap();
                std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
                let refused = bind(&open.join("admin.sock")).unwrap_err().to_string();
                assert!(refused.contains("mode is 777"), "{refused}");
                assert!(refused.contains(&open.display().to_string()), "{refused}");
                let private = dir.path().join("private");
                std::fs::create_dir(&private).unwrap();
                std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
                let link = dir.path().join("link");
                std::os::unix::fs::symlink(&private, &link).unwrap();
                let refused = bind(&link.join("admin.sock")).unwrap_err().to_string();
                assert!(refused.contains("symbolic link"), "{refused}");
            }

            /// The socket is born 0600 whatever the process's umask, and its directory 0700.
            #[test]
            fn a_socket_is_born_0600_in_a_0700_directory() {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("made").join("admin.sock");
                smol::block_on(async {
                    let _listener = bind(&path).unwrap();
                    let mode =
                        |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
                    assert_eq!(mode(&path), 0o600);
                    assert_eq!(mode(path.parent().unwrap()), 0o700);
                    assert!(connect(&path).is_ok());
                });
            }
        }
    }
}
