//! Files only their owner may read, written whole or not at all: credentials, approved
//! definitions. A reader never sees half a file, and a crash leaves the old one.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Writes `bytes` to `path` (0600, its directory made 0700 if missing) through a temporary
/// file renamed over it.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        });
    written
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            format!("cannot write {}: {e}", path.display())
        })
}

/// Makes `dir` and its missing parents, each 0700 (an existing one is left as it is).
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Makes `dir` 0700 if it is this user's and others may enter it: mcpx's state directory, made
/// 0755 by versions before it was private (its files were 0600, but their names showed).
pub fn make_private(dir: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(metadata) = std::fs::symlink_metadata(dir) else {
        return;
    };
    let ours = metadata.uid() == rustix::process::geteuid().as_raw();
    if metadata.is_dir() && ours && metadata.mode() & 0o077 != 0 {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
}
