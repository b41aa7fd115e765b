//! `[auth]`: where remote servers' tokens are kept.

use super::daemon::private_temp_dir;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[auth]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Auth {
    /// The credentials file: tokens from `mcpx auth login`, mode 0600.
    pub credentials: PathBuf,
}

impl Default for Auth {
    fn default() -> Self {
        Auth {
            credentials: state_dir().join("credentials.json"),
        }
    }
}

/// Where mcpx keeps what it must remember (`$XDG_STATE_HOME/mcpx`): credentials, keys.
pub(super) fn state_dir() -> PathBuf {
    let dirs = directories::ProjectDirs::from("", "", "mcpx");
    dirs.as_ref()
        .map(|d| {
            d.state_dir()
                .unwrap_or_else(|| d.data_local_dir())
                .to_path_buf()
        })
        .unwrap_or_else(private_temp_dir)
}
