//! `[approvals]`: the tools whose calls a person approves, one call at a time, before they go
//! upstream. Nothing waits unless configured.

use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[approvals]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Approvals {
    /// Globs over exposed tool names (`github__create_*`, `*__delete_*`): a call of a tool one
    /// matches waits for a person's approval.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// How long a call waits; then it is refused, as a denial is.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals {
            tools: Vec::new(),
            timeout: Duration::from_secs(10 * 60),
        }
    }
}
