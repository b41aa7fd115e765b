//! What the live state looks like from outside: the views the ledger and the gateway fill in
//! and the admin socket sends (its protocol module re-exports them). A leaf: it imports nothing
//! of mcpx, so the core and the console both depend on it and not on each other.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The live state of one mcpx process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The process id.
    pub pid: u32,
    /// The mcpx version.
    pub version: String,
    /// Each configured upstream.
    pub upstreams: Vec<UpstreamView>,
    /// Client sessions: each stdio process, each legacy HTTP session, modern HTTP as one.
    pub sessions: Vec<SessionView>,
    /// Open legacy GET streams and modern listen streams.
    pub streams: Vec<StreamView>,
    /// Requests in flight.
    pub requests: Vec<RequestView>,
    /// How requests ended since start.
    pub totals: Totals,
    /// 2026-07-28 calls parked until their client retries with the input an upstream asked for.
    #[serde(default)]
    pub awaiting_input: usize,
    /// The configuration file the process runs with, if any: where `mcpx auth login`, started
    /// from the console, finds the server.
    #[serde(default)]
    pub config: Option<String>,
    /// The configured profiles.
    #[serde(default)]
    pub profiles: Vec<ProfileView>,
    /// The tasks mcpx holds an id for: its own, and those it passed to their upstreams.
    #[serde(default)]
    pub tasks: Vec<TaskView>,
    /// What `GET /metrics` serves (Prometheus text), when metrics are on: how `mcpx serve`,
    /// which has no HTTP, shows them (`mcpx status --json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    /// Clients waiting on the built-in authorization server's consent page for the owner's
    /// approval (`mcpx auth approve CODE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consents: Vec<ConsentView>,
    /// Clients that name themselves by a metadata document mcpx could not fetch (in the last
    /// ten minutes): their authorization was refused before any consent page, and pinning a
    /// copy of the document (`[auth.builtin.pinned]`) lets them in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfetched_clients: Vec<UnfetchedClient>,
    /// Pinned definitions that wait for review, or were rejected (`mcpx pins`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<crate::pins::Review>,
    /// The webhook subscriptions to event types mcpx delivers itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_subscriptions: Vec<EventSubscriptionView>,
    /// Calls waiting for a person's approval (`[approvals]`, `mcpx approvals`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<ApprovalView>,
}

/// A call waiting for a person's approval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    /// What `mcpx approvals approve|deny` names it by.
    pub id: String,
    /// Who called (their subject, or how they reached mcpx).
    pub caller: String,
    /// The tool, as exposed.
    pub tool: String,
    /// Its arguments, as JSON (the start of them, when long).
    pub arguments: String,
    /// The SHA-256 of the arguments' canonical JSON: what the approval is bound to.
    pub arguments_sha256: String,
    /// How long it has waited, in milliseconds.
    pub age_ms: u64,
    /// How long until it is refused unless decided, in milliseconds.
    pub ends_in_ms: u64,
}

/// A webhook subscription mcpx delivers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSubscriptionView {
    /// Its id.
    pub id: String,
    /// Who holds it.
    pub person: String,
    /// The event type, as exposed.
    pub event: String,
    /// Where it is delivered: the callback's origin (its path and query may hold a secret).
    pub callback: String,
    /// How long until it ends unless refreshed, in milliseconds.
    pub ends_in_ms: u64,
    /// Occurrences its callback took.
    pub delivered: u64,
    /// Occurrences its callback did not take, after every try.
    pub failed: u64,
    /// Why the last one was not taken, if one was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A client whose metadata document could not be fetched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnfetchedClient {
    /// Its client id: the document's URL.
    pub client_id: String,
    /// Why the fetch failed.
    pub why: String,
    /// How long ago, in milliseconds.
    pub age_ms: u64,
}

/// A client waiting for the owner's consent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsentView {
    /// The code its page shows, which approves it.
    pub code: String,
    /// The client's name.
    pub client: String,
    /// Its client id.
    pub client_id: String,
    /// Whether its name is vouched for by its metadata document's domain (else self-registered).
    pub verified: bool,
    /// The host its code goes back to.
    pub redirect_host: String,
    /// The door it will reach.
    pub door: String,
    /// The scopes it asks.
    pub scopes: Vec<String>,
    /// Whether the owner approved it (its page has yet to continue).
    pub approved: bool,
    /// How long it has waited.
    pub age_ms: u64,
}

/// One task, as mcpx last saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// Its id as its client knows it (mcpx's).
    pub id: String,
    /// `"own"` for a task mcpx runs itself, `"bridged"` for one it runs through a 2025-11-25
    /// server's task, `"passed"` for one its upstream runs.
    pub kind: String,
    /// The tool called, as exposed.
    pub tool: String,
    /// The upstream that runs the call.
    pub server: String,
    /// The client session it belongs to.
    pub session: u64,
    /// Its status, as last seen (a passed task's, when its client last polled it).
    pub status: String,
    /// Since it was created.
    pub age_ms: u64,
}

/// One profile: a view of the catalog chosen by a client's door.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileView {
    /// Its name (`mcpx serve --profile NAME`, `/mcp/NAME`).
    pub name: String,
    /// How many tools its clients can call.
    pub tools: usize,
    /// How many tools its clients' `tools/list` shows (two, behind search).
    pub listed_tools: usize,
    /// How many prompts it sees.
    pub prompts: usize,
    /// How many sessions see the catalog through it.
    pub sessions: usize,
}

/// One upstream server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamView {
    /// Its configured name.
    pub name: String,
    /// starting, ready, failed: …, exited: …
    pub state: String,
    /// The revision mcpx speaks to it.
    pub revision: Option<String>,
    /// Its `serverInfo`.
    pub server_info: Value,
    /// Catalog sizes.
    pub tools: usize,
    /// Catalog sizes.
    pub prompts: usize,
    /// Catalog sizes.
    pub resources: usize,
    /// How often mcpx started it again (after a crash, or when asked), served or not.
    pub restarts: u64,
    /// What its sandbox enforced at its last start; `None` when it is not sandboxed (or has
    /// not started yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Report>,
    /// A per-identity server's running instances: whose each is, and where it stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceView>,
}

/// The merged catalog's tools by the server that serves them (`mcpx tools`, the admin
/// socket's `tools`): mcpx's own first, then each configured server with its state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTools {
    /// Its configured name; `None` for mcpx's own tools.
    pub server: Option<String>,
    /// Where it stands (`ready`, `starting`, `failed: …`); mcpx's own are always there.
    pub state: String,
    /// The revision mcpx speaks to it.
    pub revision: Option<String>,
    /// Its tools, by exposed name, each with its description's first line.
    pub tools: Vec<(String, String)>,
}

/// One person's instance of a per-identity server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceView {
    /// Whose: the subject, and its issuer.
    pub person: String,
    /// Where it stands.
    pub state: String,
    /// Milliseconds since it was made.
    #[serde(default)]
    pub age_ms: u64,
    /// Milliseconds since its last call began.
    #[serde(default)]
    pub idle_ms: u64,
    /// The requests carried to it (calls, reads, prompts).
    #[serde(default)]
    pub requests: u64,
}

/// One client session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// Its ledger key.
    pub key: u64,
    /// stdio, attached (an editor's `mcpx serve --attach`), http (modern), http-session (legacy), cli.
    pub transport: String,
    /// A legacy HTTP session's `Mcp-Session-Id`.
    pub id: Option<String>,
    /// The process id of the editor's `mcpx serve`, for an attached session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editor_pid: Option<u32>,
    /// The profile it sees the catalog through, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The `clientInfo` it sent at `initialize`.
    pub client: Option<Value>,
    /// The revision negotiated at `initialize`.
    pub revision: Option<String>,
    /// Milliseconds since it opened.
    pub age_ms: u64,
    /// Milliseconds since its last request.
    pub idle_ms: u64,
    /// Resource URIs it is subscribed to.
    pub subscriptions: Vec<String>,
    /// Who opened it: `local owner`, `attached editor`, a token's subject and client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The 2026-07-28 HTTP clients that called through it (they open no session of their own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<HeardClient>,
}

/// A 2026-07-28 HTTP client, by the `clientInfo` its requests carry and who called.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeardClient {
    /// Its `clientInfo.name`.
    pub name: String,
    /// Its `clientInfo.version`.
    pub version: String,
    /// Who called.
    pub caller: String,
    /// How many requests it made.
    pub requests: u64,
    /// Milliseconds since its last.
    pub idle_ms: u64,
}

/// One open event stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamView {
    /// The session it belongs to.
    pub session: u64,
    /// get (legacy) or listen (2026-07-28).
    pub kind: String,
    /// A listen stream's subscription id.
    pub subscription: Option<Value>,
    /// What it opted into (a listen's list kinds and URIs).
    pub filter: Vec<String>,
    /// Milliseconds since it opened.
    pub age_ms: u64,
    /// Events sent on it.
    pub events: u64,
}

/// One request in flight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestView {
    /// Its ledger key: what `cancel` takes.
    pub key: u64,
    /// The session it came on.
    pub session: u64,
    /// The front door: stdio, http, http-session.
    pub transport: String,
    /// Its JSON-RPC id.
    pub id: Value,
    /// Its method.
    pub method: String,
    /// The tool, prompt or resource it names.
    pub target: Option<String>,
    /// The upstream that answers it.
    pub upstream: Option<String>,
    /// Milliseconds since it started.
    pub age_ms: u64,
    /// Progress notifications passed back so far.
    pub progress: u64,
    /// Who sent it.
    #[serde(default)]
    pub caller: String,
}

/// How requests ended since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// A result or an error was sent.
    pub answered: u64,
    /// Cancelled by the client, the transport or the admin.
    pub cancelled: u64,
    /// Could not be answered.
    pub failed: u64,
}

/// A task id as a person tells them apart: the start of its sealed part (ids are long).
pub fn short_task_id(id: &str) -> String {
    short_session_id(id.strip_prefix("mcpxt1.").unwrap_or(id))
}

/// A legacy session id as logs and consoles show it: its first 8 characters. The id is a bearer
/// credential (whoever sends it speaks in that session), so the whole of it is only ever sent to
/// its client; the first 8 characters still tell sessions apart.
pub fn short_session_id(id: &str) -> String {
    match id.char_indices().nth(8) {
        Some((end, _)) => format!("{}…", &id[..end]),
        None => id.to_owned(),
    }
}

/// `text` as it may be shown on a terminal: control characters (C0, DEL, C1) and the
/// bidirectional overrides and isolates written as `\u{…}`. Names and ids in a snapshot come
/// from clients and upstreams, and a raw escape sequence in one would retitle the terminal,
/// clear it or forge lines of `mcpx status`; a bidi override would reorder what is read.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    };
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let escaped = text
        .chars()
        .map(|c| match hidden(c) {
            true => format!("\\u{{{:x}}}", c as u32),
            false => c.to_string(),
        })
        .collect();
    std::borrow::Cow::Owned(escaped)
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod admin {
            use crate::view::printable;

            /// A session id is shown by its first 8 characters only.
            #[test]
            fn a_session_id_is_shown_shortened() {
                use crate::view::short_session_id;
                assert_eq!(short_session_id("0123456789abcdef"), "01234567…");
                assert_eq!(short_session_id("short"), "short");
            }

            /// Escapes, bells, a C1 CSI and a right-to-left override are shown, not obeyed.
            #[test]
            fn control_and_bidi_characters_are_escaped_for_a_terminal() {
                assert_eq!(printable("claude-code 1.2"), "claude-code 1.2");
                assert_eq!(
                    printable("a\u{1b}]0;owned\u{7}b\u{9b}2J\u{202e}c\nd"),
                    "a\\u{1b}]0;owned\\u{7}b\\u{9b}2J\\u{202e}c\\u{a}d"
                );
            }
        }
    }
}
