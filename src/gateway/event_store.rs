//! Where webhook subscriptions outlive the daemon ([`super::event_subscriptions`]): one JSON
//! file (`[events] store`, by default `$XDG_STATE_HOME/mcpx/event-subscriptions.json`), mode
//! 0600 (it holds each subscription's signing secret) and written whole, with each
//! subscription's position in its server's occurrences. A restart resumes each from there, so
//! nothing is lost that the server still holds: an occurrence whose delivery was under way when
//! the daemon stopped may be delivered again (the callback deduplicates by `webhook-id`, which
//! is the same).
//!
//! Only one process keeps the file: the first to lock it (the daemon, usually). An `mcpx serve`
//! started beside it keeps its clients' subscriptions in memory.

use crate::access::identity::Kind;
use crate::access::Identity;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};

/// One subscription as the file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Record {
    pub id: String,
    /// Who holds it: an issuer ("" for the local owner) and a subject.
    pub issuer: String,
    pub subject: String,
    pub server: String,
    pub own: String,
    pub exposed: String,
    pub arguments: Value,
    pub url: String,
    /// Its `whsec_` secret.
    pub secret: String,
    /// When it ends unless refreshed, in seconds since the epoch.
    pub ends_at: u64,
    /// How mcpx has its occurrences from the server.
    pub held: Held,
    /// Where mcpx relays the server's own webhooks: the `whsec_` secret the server signs them
    /// with for mcpx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_secret: Option<String>,
    /// The server's own cursor: where delivery resumes.
    pub cursor: Value,
    /// The view it was made in ([`super::profile::Profiles::key`]): without it, or with one
    /// the profiles no longer have, a subscription to mcpx's own events is not resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
}

/// How a subscription's occurrences are had from its server: mcpx polls it, holds its stream,
/// or is itself the callback of the server's own webhooks and relays what they bring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Held {
    Poll,
    Push,
    Relay,
}

impl Record {
    /// Its holder, as the gateway reaches servers for them: the person it names, without the
    /// token they last came with (a token exchange waits for their next call).
    pub fn holder(&self) -> Identity {
        match self.issuer.as_str() {
            "" => Identity::of_kind(Kind::LocalOwner),
            issuer => Identity {
                subject: Some(self.subject.clone()),
                issuer: Some(issuer.to_owned()),
                ..Identity::of_kind(Kind::Bearer)
            },
        }
    }
}

/// The file, held by this process.
#[derive(Debug)]
pub(super) struct Store {
    path: PathBuf,
    /// Locked while this process keeps the file.
    _lock: File,
}

impl Store {
    /// The file at `path`, if this process can keep it (no other holds its lock).
    pub fn open(path: &Path) -> Result<Option<Store>, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::private_file::create_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        let locked = rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive);
        Ok(locked.is_ok().then(|| Store {
            path: path.to_owned(),
            _lock: lock,
        }))
    }

    /// What the file keeps; none when there is no file.
    pub fn load(&self) -> Result<Vec<Record>, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} is not a subscriptions file: {e}", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(format!("cannot read {}: {e}", self.path.display())),
        }
    }

    /// Keeps `records`, replacing what was kept.
    pub fn save(&self, records: &[Record]) -> Result<(), String> {
        let bytes = serde_json::to_vec_pretty(records).map_err(|e| e.to_string())?;
        crate::private_file::write_whole(&self.path, &bytes)
    }
}

#[cfg(test)]
mod v2026_07_28 {
    mod events {
        use super::super::*;
        use std::os::unix::fs::PermissionsExt;

        fn record() -> Record {
            Record {
                id: "mcpxs_1".into(),
                issuer: "https://idp".into(),
                subject: "alice".into(),
                server: "a".into(),
                own: "ticks".into(),
                exposed: "a__ticks".into(),
                arguments: serde_json::json!({}),
                url: "https://agent.example/hook".into(),
                secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
                ends_at: 2_000_000_000,
                held: Held::Relay,
                relay_secret: Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()),
                cursor: serde_json::json!("c7"),
                view: Some("/work#deny:*delete*".into()),
            }
        }

        #[test]
        fn one_process_keeps_the_file_private_and_reads_back_what_it_kept() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("state/event-subscriptions.json");
            let store = Store::open(&path).unwrap().unwrap();
            assert!(Store::open(&path).unwrap().is_none(), "a second keeper");
            assert_eq!(store.load().unwrap(), []);
            store.save(&[record()]).unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            assert_eq!(store.load().unwrap(), [record()]);
            let holder = record().holder();
            assert_eq!(holder.person().subject(), "alice");
            drop(store);
            assert!(
                Store::open(&path).unwrap().is_some(),
                "the lock outlived its keeper"
            );
        }
    }
}
