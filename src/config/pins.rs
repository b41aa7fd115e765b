//! `[pins]` and `[servers.NAME.pin]`: which servers' definitions are pinned, and what mcpx does
//! when one changes or a new one appears after the first listing ([`crate::pins`]).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[pins]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Pins {
    /// Where the approved definitions are kept (default `$XDG_STATE_HOME/mcpx/pins.json`).
    pub file: PathBuf,
    /// Pins every server, as if each had `[servers.NAME.pin]` with its defaults.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub every_server: bool,
}

impl Default for Pins {
    fn default() -> Pins {
        Pins {
            file: super::auth::state_dir().join("pins.json"),
            every_server: false,
        }
    }
}

/// `[servers.NAME.pin]`: the server's tools, prompts and resources are served as first
/// listed (or last approved), whatever it lists later.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Pin {
    /// What a definition that appears after the first listing does.
    pub on_new: OnNew,
    /// What a definition that differs from the approved one does.
    pub on_change: OnChange,
}

/// `onNew`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OnNew {
    /// Unlisted and uncallable until approved.
    #[default]
    Hold,
    /// Approved as it comes (still recorded, and audited).
    Accept,
}

/// `onChange`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OnChange {
    /// The approved definition stays listed; calls are refused until the change is reviewed.
    #[default]
    ServePinned,
    /// Unlisted and uncallable until the change is approved.
    Hide,
    /// Approved as it comes (still recorded, and audited).
    Accept,
}
