//! The cursors of event types (the Events extension) as clients hold them: sealed by mcpx, so
//! that each names the upstream and the event type it is a position of, and a forged one, or one
//! of another server's or another event type's, is refused rather than passed to a server that
//! would read it as its own. What the server wrote passes inside intact; `null` (start from now)
//! stays `null`.
//!
//! The key is the cluster's where there is one (every replica opens every other's cursors),
//! else one of this daemon's own, kept in `$XDG_STATE_HOME/mcpx/events.key` and made on first
//! use: a client's cursor outlives a restart, so polling resumes where it was.

use crate::cluster::{ClusterKeys, SealingKeys};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What every sealed cursor starts with.
const PREFIX: &str = "mcpxc1.";

/// The label the sealing key is derived under.
const LABEL: &[u8] = b"mcpx event cursor v1";

/// What a sealed cursor holds.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// The upstream's configured name.
    server: String,
    /// The event type's exposed name.
    event: String,
    /// The upstream's own cursor.
    cursor: Value,
}

/// Seals and opens event cursors.
#[derive(Debug)]
pub(super) struct EventCursors {
    /// The cluster's keys, or none: then this daemon's own, from `own_key`, on first use.
    cluster: Option<SealingKeys>,
    own_key: PathBuf,
    own: OnceLock<Result<SealingKeys, String>>,
}

impl EventCursors {
    /// Cursors sealed with the cluster's key, if there is one, else this daemon's own.
    pub(super) fn new(cluster: Option<&ClusterKeys>) -> EventCursors {
        EventCursors {
            cluster: cluster.map(|keys| SealingKeys::derived(keys, LABEL)),
            own_key: crate::config::state_dir().join("events.key"),
            own: OnceLock::new(),
        }
    }

    fn keys(&self) -> Result<&SealingKeys, String> {
        if let Some(keys) = &self.cluster {
            return Ok(keys);
        }
        let own = self.own.get_or_init(|| {
            let keys = ClusterKeys::own(&self.own_key)?;
            Ok(SealingKeys::derived(&keys, LABEL))
        });
        own.as_ref().map_err(Clone::clone)
    }

    /// `cursor`, `server`'s for `event`, as a client holds it: sealed; `null` as it is.
    pub(super) fn seal(&self, server: &str, event: &str, cursor: &Value) -> Result<Value, String> {
        if cursor.is_null() {
            return Ok(Value::Null);
        }
        let sealed = Sealed {
            server: server.to_owned(),
            event: event.to_owned(),
            cursor: cursor.clone(),
        };
        let plain = serde_json::to_vec(&sealed).map_err(|e| e.to_string())?;
        self.keys()?.seal(PREFIX, &plain).map(Value::String)
    }

    /// The server's own cursor a client's `cursor` holds, if mcpx sealed it for `server`'s
    /// `event`; `null` (and an absent cursor) as it is. An error for anything else.
    pub(super) fn open(
        &self,
        server: &str,
        event: &str,
        cursor: Option<&Value>,
    ) -> Result<Value, String> {
        let cursor = match cursor {
            None | Some(Value::Null) => return Ok(Value::Null),
            Some(cursor) => cursor,
        };
        let invalid = || format!("Invalid params: cursor is not one of {event}'s");
        let text = cursor.as_str().ok_or_else(invalid)?;
        let plain = self.keys()?.open(PREFIX, text).ok_or_else(invalid)?;
        let sealed: Sealed = serde_json::from_slice(&plain).map_err(|_| invalid())?;
        match sealed.server == server && sealed.event == event {
            true => Ok(sealed.cursor),
            false => Err(invalid()),
        }
    }
}

#[cfg(test)]
mod v2026_07_28 {
    mod events {
        use super::super::*;
        use serde_json::json;

        fn keyed() -> EventCursors {
            let dir = tempfile::tempdir().unwrap();
            let keys = ClusterKeys::own(&dir.path().join("k")).unwrap();
            EventCursors::new(Some(&keys))
        }

        #[test]
        fn a_sealed_cursor_opens_only_for_its_server_and_event_type() {
            let cursors = keyed();
            let sealed = cursors.seal("gh", "gh__push", &json!("row-41")).unwrap();
            assert!(!sealed.to_string().contains("row-41"));
            assert_eq!(
                cursors.open("gh", "gh__push", Some(&sealed)),
                Ok(json!("row-41"))
            );
            assert!(cursors.open("gh", "gh__issue", Some(&sealed)).is_err());
            assert!(cursors.open("slack", "gh__push", Some(&sealed)).is_err());
            assert!(cursors
                .open("gh", "gh__push", Some(&json!("row-41")))
                .is_err());
            assert!(cursors.open("gh", "gh__push", Some(&json!(41))).is_err());
            // Another daemon's key opens none of them.
            assert!(keyed().open("gh", "gh__push", Some(&sealed)).is_err());
        }

        #[test]
        fn start_from_now_stays_null_both_ways() {
            let cursors = keyed();
            assert_eq!(
                cursors.seal("gh", "gh__push", &json!(null)),
                Ok(json!(null))
            );
            assert_eq!(cursors.open("gh", "gh__push", None), Ok(json!(null)));
            assert_eq!(
                cursors.open("gh", "gh__push", Some(&json!(null))),
                Ok(json!(null))
            );
        }
    }
}
