//! The control API's messages: on the admin socket, newline-delimited JSON, one [`Command`] per
//! line from the console, [`Reply`] lines back. `mcpx-tui` and `mcpx status` use these same
//! types, so the console and the daemon cannot disagree about a field.

use serde::{Deserialize, Serialize};

/// The state the console reads, defined beside the ledger that fills it; re-exported here so
/// that the console keeps one import path for the whole protocol.
pub use crate::view::{
    ConsentView, RequestView, SessionView, Snapshot, StreamView, Totals, UpstreamView,
};

/// What a console asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case")]
pub enum Command {
    /// One [`Snapshot`] of the live state.
    Snapshot,
    /// A snapshot now, then a new one whenever the state changes (at most ten a second).
    Watch,
    /// The merged catalog's tools by server (`mcpx tools` against a running daemon).
    Tools,
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
    /// Cancels a task, as its client's `tasks/cancel` would.
    CancelTask {
        /// The task's `id` in the snapshot.
        id: String,
    },
    /// Approves the client waiting on the consent page that shows `code`
    /// (`mcpx auth approve CODE`).
    ApproveConsent {
        /// The code its page shows.
        code: String,
    },
    /// Approves or rejects what waits for review of a pinned server (`mcpx pins approve`,
    /// `reject`, the console's Pins view).
    DecidePins {
        /// The server's configured name.
        server: String,
        /// One item (`tool:NAME`, or a bare name); every one waiting when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        item: Option<String>,
        /// The digest of the definition reviewed: refused if the server changed it since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
        /// Approve or reject.
        decision: crate::pins::Decision,
    },
    /// Reads the pinned definitions again (another process decided) and serves them.
    RefreshPins,
    /// Approves or denies a call waiting for approval (`mcpx approvals approve|deny ID`, the
    /// console's Approvals view).
    DecideApproval {
        /// The call's id, as `mcpx status` shows it.
        id: String,
        /// Whether it may go on.
        approve: bool,
        /// Where the person decided (`mcpx approvals`, the console), for the audit log.
        #[serde(default)]
        via: String,
    },
}

/// What the daemon answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Reply {
    /// The live state.
    Snapshot(Box<Snapshot>),
    /// The merged catalog's tools by server.
    Tools(Vec<crate::view::ServerTools>),
    /// A command was carried out.
    Done {
        /// What happened.
        message: String,
    },
    /// A command could not be carried out, or a line was not a command.
    Error {
        /// Why.
        message: String,
        /// What kind of refusal, for a caller that acts on it (absent from an older daemon).
        #[serde(default)]
        kind: Refusal,
    },
}

/// What kind of refusal a [`Reply::Error`] is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    /// The line was not a command.
    NotACommand,
    /// The socket belongs to another user.
    NotYours,
    /// What the command names (a request, a session, an upstream) is not there.
    NotFound,
    /// mcpx is still starting; the same command may work in a moment.
    NotReady,
    /// The configuration file cannot be used; the running configuration stays.
    InvalidConfig,
    /// An approval sent by one of mcpx's own upstream servers (or what they started): what a
    /// person approves is not taken from the server it is about.
    FromAnUpstream,
    /// Any other.
    #[default]
    Failed,
}

impl From<&crate::gateway::CommandError> for Refusal {
    fn from(error: &crate::gateway::CommandError) -> Refusal {
        use crate::gateway::CommandError;
        match error {
            CommandError::NoSuchUpstream(_)
            | CommandError::NoSuchTask(_)
            | CommandError::NoSuchApproval(_) => Refusal::NotFound,
            CommandError::Upstream(_) => Refusal::Failed,
            CommandError::NotReady => Refusal::NotReady,
            CommandError::InvalidConfig(_) => Refusal::InvalidConfig,
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod admin {
        use crate::control::protocol::{Refusal, Reply};
        use crate::gateway::CommandError;

        #[test]
        fn a_refusal_says_its_kind_and_an_older_daemons_reads_as_failed() {
            let kind = Refusal::from(&CommandError::InvalidConfig("x.toml:3: bogus".into()));
            let reply = Reply::Error {
                message: "x.toml:3: bogus".into(),
                kind,
            };
            let line = serde_json::to_string(&reply).unwrap();
            assert_eq!(
                line,
                r#"{"type":"error","message":"x.toml:3: bogus","kind":"invalid-config"}"#
            );
            let older: Reply = serde_json::from_str(r#"{"type":"error","message":"m"}"#).unwrap();
            assert_eq!(
                older,
                Reply::Error {
                    message: "m".into(),
                    kind: Refusal::Failed
                }
            );
            assert_eq!(Refusal::from(&CommandError::NotReady), Refusal::NotReady);
            let missing = CommandError::NoSuchUpstream("x".into());
            assert_eq!(Refusal::from(&missing), Refusal::NotFound);
        }
    }
}
