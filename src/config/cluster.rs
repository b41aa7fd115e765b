//! `[cluster]`: several daemons behind one proxy.

use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// `[cluster]`: the key that lets every replica serve every legacy session.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Cluster {
    /// The shared key (`mcpx keygen`); without it, sessions live in one daemon's memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// The key being rotated out: ids sealed under it are still accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_key_file: Option<PathBuf>,
    /// How long a sealed session id is accepted after its `initialize`.
    #[serde(with = "humantime_serde")]
    pub session_lifetime: Duration,
    /// Where the other replicas reach this one (`host:port`, `${VAR}` from the environment): a
    /// 2026-07-28 retry that lands elsewhere is forwarded here to the call it resumes. Unset, the
    /// daemon's `address` unless that is a wildcard (`0.0.0.0`, `[::]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advertise: Option<String>,
    /// The other replicas (`host:port`, `${VAR}` from the environment; a name that resolves to
    /// several addresses, such as a Kubernetes headless Service, is each of them): a legacy
    /// session's `DELETE` is passed to them, so that every replica refuses its id at once.
    pub peers: Vec<String>,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            key_file: None,
            previous_key_file: None,
            session_lifetime: Duration::from_secs(24 * 60 * 60),
            advertise: None,
            peers: Vec::new(),
        }
    }
}
