//! The admin socket's messages: newline-delimited JSON, one [`Command`] per line from the
//! console, [`Reply`] lines back. `mcpx-tui` and `mcpx status` use these same types, so the
//! console and the daemon cannot disagree about a field.

use serde::{Deserialize, Serialize};

/// The state the console reads, defined beside the registry that fills it; re-exported here so
/// that the console keeps one import path for the whole protocol.
pub use crate::view::{RequestView, SessionView, Snapshot, StreamView, Totals, UpstreamView};

/// What a console asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case")]
pub enum Command {
    /// One [`Snapshot`] of the live state.
    Snapshot,
    /// A snapshot now, then a new one whenever the state changes (at most ten a second).
    Watch,
    /// Cancels a request in flight, exactly as its transport would.
    Cancel {
        /// The request's `key` in the snapshot.
        request: u64,
    },
    /// Ends a legacy HTTP session (its GET stream closes, its requests are cancelled).
    EndSession {
        /// The session's `Mcp-Session-Id`.
        id: String,
    },
    /// Stops an upstream server and starts it again.
    RestartUpstream {
        /// The server's configured name.
        name: String,
    },
    /// Re-reads the configuration file and applies its `[servers]`.
    Reload,
}

/// What the daemon answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Reply {
    /// The live state.
    Snapshot(Box<Snapshot>),
    /// A command was carried out.
    Done {
        /// What happened.
        message: String,
    },
    /// A command could not be carried out, or a line was not a command.
    Error {
        /// Why.
        message: String,
    },
}
