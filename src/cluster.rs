//! Several daemons behind one proxy (`[cluster] keyFile`): a legacy session's id carries the
//! session itself, sealed, so that any replica holding the same key can serve it.
//!
//! The id is `mcpxs1.` and the base64url of a random 24-byte nonce and the XChaCha20-Poly1305
//! sealing of what the session negotiated (revision, client capabilities, `clientInfo`, the
//! profile whose door minted it, when). A replica that meets an id it does not hold opens it and
//! rebuilds the session; a tampered id, one sealed under another key, or one older than
//! `sessionLifetime` is unknown (404). Keys are derived from the key file by HMAC-SHA256 with a
//! label per use, and `previousKeyFile` still opens ids during a rotation.

use crate::config::Cluster as ClusterConfig;
use crate::json::Member;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What every sealed session id starts with.
const PREFIX: &str = "mcpxs1.";

/// The fewest bytes a key file may hold.
const MIN_KEY_BYTES: usize = 32;

/// A `clientInfo` longer than this is left out of the id, which stays short.
const MAX_CLIENT_INFO: usize = 256;

/// Capabilities longer than this keep only those mcpx acts on ([`ACTED_ON`]): an `experimental`
/// block can be any size, and the id must stay well under a proxy's header limits (~1 KB).
const MAX_CAPABILITIES: usize = 384;

/// The client capabilities that decide what mcpx asks the client.
const ACTED_ON: [&str; 3] = ["roots", "sampling", "elicitation"];

/// A fresh key, as `mcpx keygen` prints it: 64 hexadecimal digits.
pub fn keygen() -> Result<String, String> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| format!("the system's random source failed: {e}"))?;
    Ok(hex::encode(key))
}

/// What a sealed id says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealedSession {
    /// The negotiated revision.
    pub revision: String,
    /// The client's capabilities from `initialize` (only those mcpx acts on, when long).
    pub capabilities: Value,
    /// Its `clientInfo`, unless long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Value>,
    /// The profile whose door minted it; `None` for `/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Milliseconds since the Unix epoch when it was minted.
    pub created_ms: u64,
    /// Whose it is ([`crate::access::Identity::owner_key`]): every replica answers it to that
    /// caller alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

impl SealedSession {
    /// A session minted now.
    pub fn new(
        revision: &str,
        capabilities: Value,
        client: Option<Value>,
        profile: Option<&str>,
    ) -> SealedSession {
        let capabilities = match capabilities.to_string().len() <= MAX_CAPABILITIES {
            true => capabilities,
            false => ACTED_ON
                .iter()
                .filter_map(|key| Some((key.to_string(), capabilities.member(key)?.clone())))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        };
        SealedSession {
            revision: revision.to_owned(),
            capabilities,
            client: client.filter(|c| c.to_string().len() <= MAX_CLIENT_INFO),
            profile: profile.map(str::to_owned),
            created_ms: now_ms(),
            owner: None,
        }
    }
}

/// The key files of `[cluster]`, read once; every key mcpx uses is derived from them.
pub struct ClusterKeys {
    current: Vec<u8>,
    previous: Option<Vec<u8>>,
    session_lifetime: Duration,
}

impl std::fmt::Debug for ClusterKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKeys { .. }")
    }
}

impl ClusterKeys {
    /// The keys `[cluster]` names; `None` without a key file.
    pub fn from_config(config: &ClusterConfig) -> Result<Option<ClusterKeys>, String> {
        let Some(path) = &config.key_file else {
            return Ok(None);
        };
        Ok(Some(ClusterKeys {
            current: read_key(path)?,
            previous: config
                .previous_key_file
                .as_deref()
                .map(read_key)
                .transpose()?,
            session_lifetime: config.session_lifetime,
        }))
    }

    /// The key of a daemon alone (what it signs, only it and its restarts verify): the key
    /// file at `path`, made with a fresh key (mode 0600) when there is none.
    pub fn own(path: &std::path::Path) -> Result<ClusterKeys, String> {
        if !path.exists() {
            let fail = |e: std::io::Error| format!("cannot make the key {}: {e}", path.display());
            if let Some(dir) = path.parent() {
                crate::private_file::create_dir(dir).map_err(fail)?;
            }
            let key = keygen()?;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(fail)?;
            std::io::Write::write_all(&mut file, key.as_bytes()).map_err(fail)?;
        }
        Ok(ClusterKeys {
            current: read_key(path)?,
            previous: None,
            session_lifetime: ClusterConfig::default().session_lifetime,
        })
    }

    /// The key for one use (`label`), and the one the previous key file gives it.
    pub fn derive(&self, label: &[u8]) -> ([u8; 32], Option<[u8; 32]>) {
        let derived = derive(&self.current, label);
        (derived, self.previous.as_deref().map(|p| derive(p, label)))
    }
}

/// An authenticated encryption under a current key and, during a rotation, the previous one:
/// what mcpx hands out sealed (sessions, task ids) can be read only by whoever holds the key,
/// and any change to it makes it unreadable.
pub struct SealingKeys {
    current: XChaCha20Poly1305,
    previous: Option<XChaCha20Poly1305>,
}

impl std::fmt::Debug for SealingKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKeys { .. }")
    }
}

impl SealingKeys {
    /// The cluster's keys for one use (`label`): every replica sealing with them opens the
    /// others'.
    pub fn derived(keys: &ClusterKeys, label: &[u8]) -> SealingKeys {
        let (current, previous) = keys.derive(label);
        SealingKeys::of(current, previous)
    }

    /// Sealing under `current`, opening under it or `previous`.
    pub fn of(current: [u8; 32], previous: Option<[u8; 32]>) -> SealingKeys {
        SealingKeys {
            current: XChaCha20Poly1305::new(&current.into()),
            previous: previous.map(|key| XChaCha20Poly1305::new(&key.into())),
        }
    }

    /// A key of this process alone, from the system's random source.
    pub fn random() -> Result<SealingKeys, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("no randomness: {e}"))?;
        Ok(SealingKeys {
            current: XChaCha20Poly1305::new(&key.into()),
            previous: None,
        })
    }

    /// `prefix` and the base64url of a random 24-byte nonce and `plain`, sealed.
    pub fn seal(&self, prefix: &str, plain: &[u8]) -> Result<String, String> {
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).map_err(|e| format!("no randomness: {e}"))?;
        let sealed = self
            .current
            .encrypt(XNonce::from_slice(&nonce), plain)
            .map_err(|_| "sealing failed".to_owned())?;
        let mut bytes = nonce.to_vec();
        bytes.extend(sealed);
        Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// What a [`SealingKeys::seal`] of this prefix holds, if the current or the previous key
    /// sealed it and nothing changed it since.
    pub fn open(&self, prefix: &str, sealed: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed.strip_prefix(prefix)?).ok()?;
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(24);
        let nonce = XNonce::from_slice(nonce);
        self.current
            .decrypt(nonce, sealed)
            .ok()
            .or_else(|| self.previous.as_ref()?.decrypt(nonce, sealed).ok())
    }
}

/// Seals and opens session ids.
#[derive(Debug)]
pub struct Sealer {
    keys: SealingKeys,
    lifetime: Duration,
}

impl Sealer {
    /// The sealer for these keys.
    pub fn new(keys: &ClusterKeys) -> Sealer {
        Sealer {
            keys: SealingKeys::derived(keys, b"mcpx session v1"),
            lifetime: keys.session_lifetime,
        }
    }

    /// How long an id is accepted after its `initialize`.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// The id that carries `session`.
    pub fn seal(&self, session: &SealedSession) -> Result<String, String> {
        let plain = serde_json::to_vec(session).map_err(|e| e.to_string())?;
        self.keys.seal(PREFIX, &plain)
    }

    /// What `id` carries, if it was sealed under the current or the previous key and is not
    /// older than the session lifetime.
    pub fn open(&self, id: &str) -> Option<SealedSession> {
        let plain = self.keys.open(PREFIX, id)?;
        let session: SealedSession = serde_json::from_slice(&plain).ok()?;
        (!self.remaining(&session).is_zero()).then_some(session)
    }

    /// How much of its lifetime a sealed session has left.
    pub fn remaining(&self, session: &SealedSession) -> Duration {
        let age = Duration::from_millis(now_ms().saturating_sub(session.created_ms));
        self.lifetime.saturating_sub(age)
    }
}

/// A key file: 64 hexadecimal digits (as `mcpx keygen` writes them), or 32 raw bytes or more.
fn read_key(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::MetadataExt;
    let file =
        std::fs::File::open(path).map_err(|e| format!("cluster key {}: {e}", path.display()))?;
    // Whoever reads the key can forge any session's id: it is the owner's alone.
    let mode = file
        .metadata()
        .map_err(|e| format!("cluster key {}: {e}", path.display()))?
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "cluster key {} can be read by group or others (mode {:o}): chmod 600 it",
            path.display(),
            mode & 0o777
        ));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut { file }, &mut bytes)
        .map_err(|e| format!("cluster key {}: {e}", path.display()))?;
    let key = match hex::decode(String::from_utf8_lossy(&bytes).trim()) {
        Ok(decoded) if decoded.len() >= MIN_KEY_BYTES => decoded,
        _ => bytes,
    };
    if key.len() < MIN_KEY_BYTES {
        return Err(format!(
            "cluster key {} holds {} bytes; it needs {MIN_KEY_BYTES} or more (`mcpx keygen` makes one)",
            path.display(),
            key.len()
        ));
    }
    Ok(key)
}

/// A key for one use, derived from the file's.
fn derive(key: &[u8], label: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(label);
    mac.finalize().into_bytes().into()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod every_revision {
    mod cluster {
        use crate::cluster::{keygen, ClusterKeys, SealedSession, Sealer};
        use crate::config::Cluster;
        use serde_json::json;
        use std::time::Duration;

        fn sealer(dir: &std::path::Path, key: &str, previous: Option<&str>) -> Sealer {
            let write = |name: &str, key: &str| private_file(dir, name, key);
            let keys = ClusterKeys::from_config(&Cluster {
                key_file: Some(write("key", key)),
                previous_key_file: previous.map(|p| write("previous", p)),
                session_lifetime: Duration::from_secs(3600),
                ..Cluster::default()
            });
            Sealer::new(&keys.unwrap().unwrap())
        }

        fn private_file(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            path
        }

        /// A key file group or others can read is refused at start, naming it: its reader
        /// could forge any session.
        #[test]
        fn a_key_file_others_can_read_is_refused() {
            use std::os::unix::fs::PermissionsExt;
            let dir = tempfile::tempdir().unwrap();
            let path = private_file(dir.path(), "key", &keygen().unwrap());
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            let config = Cluster {
                key_file: Some(path.clone()),
                ..Cluster::default()
            };
            let refused = ClusterKeys::from_config(&config).unwrap_err();
            assert!(refused.contains("mode 640"), "{refused}");
            assert!(refused.contains(&path.display().to_string()), "{refused}");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            assert!(ClusterKeys::from_config(&config).is_ok());
        }

        #[test]
        fn a_sealed_id_opens_under_its_key_or_as_previous_and_not_tampered() {
            let dir = tempfile::tempdir().unwrap();
            let (old, new) = (keygen().unwrap(), keygen().unwrap());
            let session = SealedSession::new(
                "2025-06-18",
                json!({"roots": {}}),
                Some(json!({"name": "editor", "version": "1"})),
                Some("coding"),
            );
            let id = sealer(dir.path(), &old, None).seal(&session).unwrap();
            assert!(id.len() < 1024, "{}", id.len());
            assert_eq!(
                sealer(dir.path(), &old, None).open(&id),
                Some(session.clone())
            );
            assert_eq!(
                sealer(dir.path(), &new, Some(&old)).open(&id),
                Some(session)
            );
            assert_eq!(sealer(dir.path(), &new, None).open(&id), None);
            let mut tampered = id.into_bytes();
            let last = tampered.len() - 2;
            tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8(tampered).unwrap();
            assert_eq!(sealer(dir.path(), &old, None).open(&tampered), None);
            let bulky = SealedSession::new(
                "2025-11-25",
                json!({"elicitation": {"form": {}}, "experimental": {"x": "y".repeat(4096)}}),
                None,
                None,
            );
            assert_eq!(bulky.capabilities, json!({"elicitation": {"form": {}}}));
            let id = sealer(dir.path(), &old, None).seal(&bulky).unwrap();
            assert!(id.len() < 1024, "{}", id.len());
            assert!(ClusterKeys::from_config(&Cluster {
                key_file: Some(private_file(dir.path(), "short", "abcd")),
                ..Cluster::default()
            })
            .is_err());
        }
    }
}
