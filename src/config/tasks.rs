//! `[tasks]`: the tasks mcpx runs itself, for a 2026-07-28 client that declared the Tasks
//! extension, around a call to a server that does not run tasks (`[servers.NAME] tasks`).

use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[tasks]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Tasks {
    /// A call still running this long after it began becomes a task; one that ends sooner is
    /// answered as it is ("sync, then promote").
    #[serde(with = "humantime_serde")]
    pub promote_after: Duration,
    /// How long a task and its outcome are kept from its creation; its call is cancelled if it
    /// runs longer.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// The most tasks mcpx holds for one client (a modern door's callers count as one) at once,
    /// finished ones included until they expire.
    pub max_per_client: usize,
    /// The most bytes of outcomes mcpx holds for all tasks together; a call whose outcome would
    /// pass it ends failed with an error saying so.
    pub max_result_bytes: usize,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            promote_after: Duration::from_secs(1),
            ttl: Duration::from_secs(60 * 60),
            max_per_client: 256,
            max_result_bytes: 64 * 1024 * 1024,
        }
    }
}

/// `[servers.NAME] tasks`: whether mcpx runs a call to the server as a task of its own, for a
/// client that declared the Tasks extension, when the server does not run tasks itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum TaskPolicy {
    /// A call that outlasts `[tasks] promoteAfter` becomes a task.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Every call of a client that declared the extension becomes a task at once; others are
    /// answered when the call ends.
    #[serde(rename = "always")]
    Always,
    /// Every call becomes a task at once, and a 2026-07-28 client that did not declare the
    /// extension is refused (-32021), as a server refuses a tool it runs only as a task.
    #[serde(rename = "required")]
    Required,
    /// Calls are answered when they end, never as tasks.
    #[serde(rename = "never")]
    Never,
}

impl TaskPolicy {
    pub(super) fn is_auto(&self) -> bool {
        *self == TaskPolicy::Auto
    }
}
