//! `[events]`: how mcpx delivers event types (the Events extension) by webhook to a client
//! that asked for that delivery of a server that offers only poll or push.

use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// `[events]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Events {
    /// Whether a webhook callback may be an `http://` URL on loopback (for tests and agents on
    /// this machine); otherwise only `https://` to a public address.
    pub allow_loopback_callbacks: bool,
    /// How long a webhook subscription lives when its client asks for no `ttlMs`; it ends unless
    /// refreshed (asked for again) before then.
    #[serde(with = "humantime_serde")]
    pub default_ttl: Duration,
    /// The longest a subscription may live between refreshes.
    #[serde(with = "humantime_serde")]
    pub max_ttl: Duration,
    /// The most webhook subscriptions one caller may hold.
    pub max_per_caller: usize,
    /// Where the daemon keeps its webhook subscriptions (and their signing secrets: mode 0600)
    /// between runs, so that a restart resumes each where it was.
    pub store: PathBuf,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            allow_loopback_callbacks: false,
            default_ttl: Duration::from_secs(60 * 60),
            max_ttl: Duration::from_secs(24 * 60 * 60),
            max_per_caller: 100,
            store: super::state_dir().join("event-subscriptions.json"),
        }
    }
}
