//! Upstreams: mcpx as a client of each real server it fronts.
//!
//! An upstream starts its server, learns its era by handshaking ([`stdio::StdioUpstream`]), sends
//! requests and cancellations, passes each request's progress back to the caller through a
//! [`ProgressSink`], and reports the server's own notifications to the gateway as [`Event`]s.

pub mod asks;
pub mod auth;
pub mod chatter;
pub mod child_environment;
pub mod client;
pub mod event_stream;
pub mod http;
mod last_words;
pub mod orphans;
pub mod peer;
pub mod sse;
pub mod start_error;
pub mod stdio;
pub mod supervisor;
pub mod task_progress;

pub use start_error::StartError;

use crate::jsonrpc::Notification;
use crate::protocol::{shape, Notice, Revision};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What mcpx tells servers it can do as their client: everything a client of its own may take,
/// since it carries sampling, elicitation and roots to the client whose call needs them (and
/// answers an error at once when that client cannot take one), and the extensions it carries.
pub static CLIENT_CAPABILITIES: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    serde_json::json!({
        "sampling": {},
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": false},
        "extensions": crate::protocol::extension::declared_by_mcpx(),
    })
});

/// What the handshake learned about a server.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// The revision mcpx speaks to it.
    pub revision: crate::protocol::Revision,
    /// Its declared capabilities.
    pub capabilities: Value,
    /// Its `Implementation` (name, version, ...).
    pub server_info: Value,
}

impl Handshake {
    /// What an `initialize` result says, if it chose a legacy revision mcpx speaks.
    pub fn from_initialize(result: &Value) -> Result<Handshake, String> {
        let version = result["protocolVersion"].as_str().unwrap_or_default();
        let revision = crate::protocol::Revision::parse(version)
            .filter(|r| r.era() == crate::protocol::Era::Legacy)
            .ok_or_else(|| {
                format!("the server chose protocol version {version:?}, which mcpx does not speak")
            })?;
        Ok(Handshake {
            revision,
            capabilities: result["capabilities"].clone(),
            server_info: result["serverInfo"].clone(),
        })
    }

    /// What a `server/discover` result says (mcpx speaks 2026-07-28 to the server).
    pub fn from_discover(result: &Value) -> Handshake {
        Handshake {
            revision: crate::protocol::Revision::V2026_07_28,
            capabilities: result["capabilities"].clone(),
            server_info: result["_meta"][crate::protocol::shape::SERVER_INFO_KEY].clone(),
        }
    }
}

/// A live connection to an upstream server, however it is reached.
#[derive(Debug, Clone)]
pub enum Connection {
    /// A child process on stdio.
    Stdio(Arc<stdio::StdioUpstream>),
    /// A remote server over Streamable HTTP.
    Http(Arc<http::HttpUpstream>),
    /// A remote server over the 2024-11-05 HTTP+SSE transport.
    Sse(Arc<sse::SseUpstream>),
}

impl Connection {
    /// Learns the server's era, revision and capabilities, `within` its start timeout.
    pub async fn handshake(&self, within: std::time::Duration) -> Result<Handshake, String> {
        match self {
            Connection::Stdio(c) => c.handshake(within).await,
            Connection::Http(c) => c.handshake(within).await,
            Connection::Sse(c) => c.handshake(within).await,
        }
    }

    /// Sends a request and waits for its answer, unless `cancel` fires first.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: &crate::cancel::Cancel,
        caller: Caller,
    ) -> Result<Value, crate::jsonrpc::ErrorObject> {
        let started = std::time::Instant::now();
        // Boxed: an HTTP exchange's state is kilobytes, and every future that awaits a request
        // (a listen stream's, held for hours) would otherwise carry that much inline.
        let (server, answer) = match self {
            Connection::Stdio(c) => (
                c.peer().name(),
                Box::pin(c.peer().request(method, params, cancel, caller)).await,
            ),
            Connection::Http(c) => (
                c.name(),
                Box::pin(c.request(method, params, cancel, caller)).await,
            ),
            Connection::Sse(c) => (
                c.peer().name(),
                Box::pin(c.peer().request(method, params, cancel, caller)).await,
            ),
        };
        if crate::metrics::enabled() {
            let cancelled = cancel.is_cancelled() && answer.is_err();
            let labels = crate::metrics::ClientOperation {
                method: crate::metrics::method_label(crate::protocol::Method::parse(method)),
                upstream: server,
                outcome: crate::failure::Outcome::of((!cancelled).then_some(&answer)),
            };
            crate::metrics::client_operation(&labels, started.elapsed());
        }
        answer
    }

    /// Stops the server politely, within `grace`.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        match self {
            Connection::Stdio(c) => c.shutdown(grace).await,
            Connection::Http(c) => c.shutdown(grace).await,
            Connection::Sse(c) => c.shutdown(grace).await,
        }
    }

    /// Stops the server at once.
    pub fn stop(&self) {
        match self {
            Connection::Stdio(c) => c.stop(),
            Connection::Http(c) => c.stop(),
            Connection::Sse(c) => c.stop(),
        }
    }

    /// Whether its last refusal was the server asking for a login.
    pub fn needs_login(&self) -> bool {
        match self {
            Connection::Stdio(_) => false,
            Connection::Http(c) => c.needs_login(),
            Connection::Sse(c) => c.needs_login(),
        }
    }

    /// Whether it can still answer.
    pub fn is_alive(&self) -> bool {
        match self {
            Connection::Stdio(c) => c.is_alive(),
            Connection::Http(c) => c.is_alive(),
            Connection::Sse(c) => c.is_alive(),
        }
    }
}

/// The three catalogs an upstream can announce changes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list` and `resources/templates/list`.
    Resources,
    /// `events/list` (Events).
    Events,
}

impl ListKind {
    /// The notification announcing a change.
    pub fn notification(self) -> Notice {
        match self {
            ListKind::Tools => Notice::ToolsListChanged,
            ListKind::Prompts => Notice::PromptsListChanged,
            ListKind::Resources => Notice::ResourcesListChanged,
            ListKind::Events => Notice::EventsListChanged,
        }
    }

    /// The kind a `list_changed` notification names.
    pub fn from_notification(notice: Notice) -> Option<ListKind> {
        [
            ListKind::Tools,
            ListKind::Prompts,
            ListKind::Resources,
            ListKind::Events,
        ]
        .into_iter()
        .find(|k| k.notification() == notice)
    }
}

/// Which live link to an upstream something is about: the upstream's id in the gateway, and
/// the start that opened the link (what an older start reports is about a process that is
/// gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkId {
    /// The upstream's id in the gateway.
    pub upstream: usize,
    /// Which start of it.
    pub start: u64,
}

/// Something an upstream server said that the gateway must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The server's catalog of this kind changed.
    ListChanged {
        /// The link it came over.
        link: LinkId,
        /// Which catalog.
        kind: ListKind,
    },
    /// The server logged something outside any call that takes its log: for the clients whose
    /// level admits it.
    Log {
        /// The link it came over.
        link: LinkId,
        /// The server's configured name.
        server: String,
        /// The `notifications/message` params.
        params: Value,
    },
    /// A 2025-11-25 task of the server's changed status (`notifications/tasks/status`): for the
    /// client the task belongs to.
    TaskStatus {
        /// The link it came over.
        link: LinkId,
        /// The notification's params: the task, under the server's own id.
        params: Value,
    },
    /// The server acknowledged a `subscriptions/listen` (2026-07-28).
    ListenAcknowledged {
        /// The link it came over.
        link: LinkId,
    },
    /// A resource the server was subscribed to changed.
    ResourceUpdated {
        /// The resource (or a sub-resource of the one subscribed).
        uri: String,
    },
    /// The server's process ended.
    Exited {
        /// The link that ended: a restart's old process must not clear the new one.
        link: LinkId,
        /// Why, as a clause after the server's name ("exited with status 1: …", "disconnected:
        /// …"), for the log, `mcpx status` and the `mcpx` tools.
        reason: String,
    },
}

/// What a request's caller takes back besides the answer: the server's progress, and the
/// server's own requests made during the call. The default takes neither.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// Where progress goes, if the caller asked for it.
    pub progress: Option<ProgressSink>,
    /// Where sampling, elicitation and roots requests go, if the caller can carry them.
    pub asks: Option<async_channel::Sender<asks::Ask>>,
    /// Where the server's log messages during the call go, if the caller takes them.
    pub log: Option<LogSink>,
    /// How long the call may go unanswered, when not the server's `timeout`: a task's call
    /// waits as long as the task lives.
    pub timeout: Option<std::time::Duration>,
    /// Where the frames of its stream go, for a request whose answer is a stream of
    /// notifications of its own (Events' `events/stream`).
    pub frames: Option<FrameSink>,
}

/// Where a stream's frames go: each notification (its method and params) that names the
/// request it belongs to (`_meta["io.modelcontextprotocol/subscriptionId"]`), in order.
pub type FrameSink = async_channel::Sender<(Notice, Value)>;

/// The `_meta` key of a stream's frames that names the request they belong to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The frame `method` with `params` is, if it is one of a stream's (Events).
pub fn frame_of(method: &str, params: &Value) -> Option<(Notice, Option<i64>)> {
    let notice = Notice::parse(method)?;
    let framed = matches!(
        notice,
        Notice::EventsActive
            | Notice::EventsEvent
            | Notice::EventsHeartbeat
            | Notice::EventsError
            | Notice::EventsTerminated
    );
    let request = params["_meta"][SUBSCRIPTION_ID].as_i64();
    framed.then_some((notice, request))
}

/// The levels of `notifications/message`, least severe first.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A log level's rank in [`LOG_LEVELS`].
pub fn log_severity(level: &str) -> Option<u8> {
    LOG_LEVELS.iter().position(|l| *l == level).map(|p| p as u8)
}

/// What is done to what a server says before its client reads it (a log message, a progress
/// message): the server's guardrails, set by the gateway, run where the message is passed on.
#[derive(Clone)]
pub struct Screen(pub Arc<dyn Fn(&mut Value) + Send + Sync>);

impl Screen {
    /// `message` as the client may read it.
    pub fn apply(&self, message: &mut Value) {
        (self.0)(message)
    }
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Screen")
    }
}

/// Where one legacy client's log messages go: its channel for the request (stdout, the POST's
/// stream) or for the session (its GET stream), and the least severe level it asked for.
#[derive(Debug, Clone)]
pub struct LogSink {
    /// The channel.
    pub tx: crate::outbox::Sender,
    /// The client's level, as a rank in [`LOG_LEVELS`] (`logging/setLevel` changes it).
    pub level: Arc<std::sync::atomic::AtomicU8>,
    /// The calling server's guardrails, over each message.
    pub screen: Option<Screen>,
}

impl LogSink {
    /// Delivers the server `server`'s log message if its level admits it, tagged with the
    /// server as its `logger` (`server/logger` when it named one).
    pub fn forward(&self, server: &str, params: &Value) {
        let severity = params["level"].as_str().and_then(log_severity);
        if severity.unwrap_or(0) < self.level.load(Ordering::Relaxed) {
            return;
        }
        let mut params = params.clone();
        let logger = match params["logger"].as_str() {
            Some(logger) => format!("{server}/{logger}"),
            None => server.to_owned(),
        };
        params["logger"] = Value::String(logger);
        if let Some(screen) = &self.screen {
            screen.apply(&mut params);
        }
        let _ = self.tx.try_send(Notification::new(Notice::Message, params));
    }
}

/// How a server's 2025-11-25 task ids are shown to the client: the `related-task` `_meta` of
/// what the server sends about a task names it by the client's id, and what the client sends
/// back by the server's.
pub trait ShowsTasks: std::fmt::Debug + Send + Sync {
    /// Shows the client's id in the `related-task` of `message` (from the server).
    fn to_client(&self, message: &mut Value);
    /// Shows the server's id `own` in the `related-task` of `message` (from the client).
    fn to_server(&self, message: &mut Value, own: &str);
}

/// Where one request's `notifications/progress` go: the caller's token, its revision (to shape
/// them) and its notification channel.
#[derive(Debug, Clone)]
pub struct ProgressSink {
    /// The `progressToken` the client chose; upstream tokens are mcpx's own.
    pub token: Value,
    /// The client's revision for this request.
    pub revision: Revision,
    /// The channel of notifications for this request.
    pub tx: crate::outbox::Sender,
    /// Counts what was passed back.
    pub seen: Arc<AtomicU64>,
    /// Where its progress goes once the request has made a 2025-11-25 task, which reports
    /// progress under the request's token until it ends: the client's session stream.
    pub after: Option<crate::outbox::Sender>,
    /// How the server's task ids are shown in it (a legacy client's).
    pub tasks: Option<Arc<dyn ShowsTasks>>,
    /// The server's guardrails, over each progress message.
    pub screen: Option<Screen>,
}

impl ProgressSink {
    /// Forwards an upstream's progress params under the client's token.
    pub fn forward(&self, mut params: Value) {
        if let Some(map) = params.as_object_mut() {
            map.insert("progressToken".into(), self.token.clone());
        }
        if let Some(tasks) = &self.tasks {
            tasks.to_client(&mut params);
        }
        shape::progress_params(self.revision, &mut params);
        if let Some(screen) = &self.screen {
            screen.apply(&mut params);
        }
        // A closed channel means the request already ended; late progress has nowhere to go.
        if self
            .tx
            .try_send(Notification::new(Notice::Progress, params))
            .is_ok()
        {
            self.seen.fetch_add(1, Ordering::Relaxed);
        }
    }
}
