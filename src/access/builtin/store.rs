//! What the built-in authorization server must remember across restarts
//! (`[auth.builtin] stateFile`): registered clients, which clients the owner consented to, and
//! each login's refresh-token family, its tokens kept only as SHA-256 digests. Written whole by
//! rename (mode 0600) after each change, so a crash leaves the old file or the new one; a file
//! that cannot be read stops the daemon rather than forgetting every login silently.

use crate::sync::lock;
use crate::upstream::auth::store::now_secs;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Saved {
    /// Clients that registered themselves (RFC 7591), by client id.
    #[serde(default)]
    pub clients: BTreeMap<String, Registration>,
    /// Clients the owner consented to, by client id: when (Unix seconds).
    #[serde(default)]
    pub consented: BTreeMap<String, u64>,
    /// Refresh-token families, by family id.
    #[serde(default)]
    pub families: BTreeMap<String, Family>,
}

/// A registered client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    /// Its metadata as registered, with what mcpx assigned.
    pub metadata: Value,
    /// When (Unix seconds).
    pub registered: u64,
}

/// One login's refresh tokens: each refresh replaces the current one, and presenting a
/// replaced one again (a stolen copy, or the thief's) revokes the whole family (RFC 9700
/// §4.14.2).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Family {
    /// The client it was issued to.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The door its access tokens are for.
    pub resource: String,
    /// The SHA-256 (hex) of the current refresh token.
    pub current: String,
    /// Those of the tokens it replaced (the most recent few).
    pub replaced: Vec<String>,
    /// When the login ends (Unix seconds), however often it is refreshed.
    pub expires: u64,
    /// Revoked: by reuse of a replaced token, by the client's revocation, or a code used twice.
    pub revoked: bool,
}

/// The state file and what it holds.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    saved: Mutex<Saved>,
}

impl Store {
    /// The state at `path` (empty when there is no file yet).
    pub fn load(path: &Path) -> Result<Store, String> {
        let saved = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{} cannot be read ({e}): move it away to start without the logins it holds",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved::default(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Store {
            path: path.to_owned(),
            saved: Mutex::new(saved),
        })
    }

    /// Reads the state.
    pub fn read<T>(&self, read: impl FnOnce(&Saved) -> T) -> T {
        read(&lock(&self.saved))
    }

    /// Changes the state and writes it; a failed write is logged (the change holds in memory).
    pub fn change<T>(&self, change: impl FnOnce(&mut Saved) -> T) -> T {
        let mut saved = lock(&self.saved);
        let result = change(&mut saved);
        prune(&mut saved);
        if let Err(e) = self.write(&saved) {
            tracing::warn!("cannot write {}: {e}", self.path.display());
        }
        result
    }

    fn write(&self, saved: &Saved) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            crate::private_file::create_dir(dir)?;
        }
        let temporary = self.path.with_extension("json.new");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(&serde_json::to_vec_pretty(saved)?)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &self.path)
    }
}

/// Forgets the families whose login has ended.
fn prune(saved: &mut Saved) {
    let now = now_secs();
    saved.families.retain(|_, family| family.expires > now);
}
