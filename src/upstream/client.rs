//! What mcpx does as the MCP client of an upstream, whatever the wire (a child's pipes in
//! [`super::stdio`], HTTP in [`super::http`]): the handshake and the order its eras are tried in,
//! the `initialize` it sends, the progress tokens it puts on requests, and what it makes of the
//! server's own notifications.
//!
//! ## The handshake order, and why it differs by wire
//!
//! With `era = "auto"` mcpx must learn which era a server speaks without breaking it, and speak
//! the newest both sides know: a server that speaks both eras is spoken to in 2026-07-28 (what
//! only that era carries, an extension among it, then reaches clients).
//! - **stdio and HTTP: `server/discover` first**, then `initialize` if that is refused. A legacy
//!   server refuses `server/discover` (-32601, or 404 over HTTP) and serves on, on the same pipe
//!   or with the next POST. A legacy server that exits on an unknown first request instead ends
//!   the start; the gateway's supervision notes that (for later runs too) and starts it again
//!   with `initialize` first, the HTTP+SSE order below, so the probe is paid once.
//! - **HTTP+SSE: `initialize` first**, then `server/discover` if the answer says the server is
//!   modern (-32022, or a `supported` list naming a modern revision): a 2024-11-05 transport
//!   carries legacy servers.
//!
//! `era = "legacy"` and `era = "modern"` try their one handshake only.

use super::{Event, Handshake, LinkId, ListKind, CLIENT_CAPABILITIES};
use crate::config::UpstreamEra;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, UNSUPPORTED_PROTOCOL_VERSION};
use crate::protocol::{Era, Method, Notice, Revision};
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;

type Reply = Result<Value, ErrorObject>;

/// Which handshake a wire tries first in `era = "auto"` (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstTry {
    /// `initialize`, then `server/discover` if the server turns out modern: HTTP+SSE, and a
    /// stdio server known to exit on `server/discover`.
    Initialize,
    /// `server/discover`, then `initialize` if it is refused: stdio and Streamable HTTP.
    Discover,
}

/// What the handshake needs of a wire.
pub trait Wire {
    /// Speaks `era` from now on: a modern request carries the `_meta` envelope, and entering the
    /// legacy era forgets any session the server gave before.
    fn set_era(&self, era: Era);
    /// Sends a request in the current era and waits for its answer.
    fn send(&self, method: &str, params: Option<Value>) -> impl Future<Output = Reply> + Send;
    /// Sends a notification, returning once the server has it (over HTTP, once its POST is
    /// answered): what mcpx sends next must not overtake it.
    fn deliver(&self, method: &str, params: Option<Value>) -> impl Future<Output = ()> + Send;
    /// Whether the server's last refusal was of mcpx itself (it needs a login), not of a method.
    fn needs_login(&self) -> bool {
        false
    }
}

/// Handshakes with the server in the era `choice` allows, in the order `first` gives, within
/// `within` (the server's start timeout).
pub async fn handshake(
    wire: &impl Wire,
    choice: UpstreamEra,
    first: FirstTry,
    within: Duration,
) -> Result<Handshake, String> {
    let work = async {
        match (choice, first) {
            (UpstreamEra::Modern, _) => discover(wire).await,
            (UpstreamEra::Legacy, _) => initialize(wire).await,
            (UpstreamEra::Auto, FirstTry::Initialize) => match try_initialize(wire).await {
                Err(Refusal::Answered(error)) if speaks_modern(&error) => discover(wire).await,
                outcome => outcome.map_err(Refusal::into_reason),
            },
            (UpstreamEra::Auto, FirstTry::Discover) => match try_discover(wire).await {
                Ok(handshake) => Ok(handshake),
                // A refusal of mcpx itself (a login is needed) says nothing of the era.
                Err(error) if wire.needs_login() => Err(discover_failed(&error)),
                // The server offers 2026-07-28 among its versions: asked again, once.
                Err(error) if offers_modern(&error) => discover(wire).await,
                Err(_) => initialize(wire).await,
            },
        }
    };
    crate::deadline::within(within, work).await
}

/// Why `initialize` did not give a handshake.
enum Refusal {
    /// The server answered with an error.
    Answered(ErrorObject),
    /// Its answer was not one mcpx can use.
    Unusable(String),
}

impl Refusal {
    fn into_reason(self) -> String {
        match self {
            Refusal::Answered(error) => {
                format!("initialize failed: {} ({})", error.message, error.code)
            }
            Refusal::Unusable(why) => why,
        }
    }
}

/// What mcpx's `initialize` says: the newest legacy revision, all it can carry as a client, and
/// who it is.
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": Revision::LATEST_LEGACY.as_str(),
        "capabilities": CLIENT_CAPABILITIES.clone(),
        "clientInfo": {"name": "mcpx", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The legacy handshake: `initialize` at the newest legacy revision, then `initialized`.
pub async fn initialize(wire: &impl Wire) -> Result<Handshake, String> {
    try_initialize(wire).await.map_err(Refusal::into_reason)
}

async fn try_initialize(wire: &impl Wire) -> Result<Handshake, Refusal> {
    wire.set_era(Era::Legacy);
    let result = wire
        .send(Method::Initialize.as_str(), Some(initialize_params()))
        .await
        .map_err(Refusal::Answered)?;
    let handshake = Handshake::from_initialize(&result).map_err(Refusal::Unusable)?;
    wire.deliver(Notice::Initialized.as_str(), None).await;
    Ok(handshake)
}

/// The modern handshake: `server/discover` at 2026-07-28.
async fn discover(wire: &impl Wire) -> Result<Handshake, String> {
    try_discover(wire).await.map_err(|e| discover_failed(&e))
}

/// A discover answer counts only if it names 2026-07-28 among its `supportedVersions`: a legacy
/// server may answer any method with an empty result.
async fn try_discover(wire: &impl Wire) -> Result<Handshake, ErrorObject> {
    wire.set_era(Era::Modern);
    let discovered = wire.send(Method::ServerDiscover.as_str(), None).await?;
    let modern = Revision::V2026_07_28.as_str();
    let offered = discovered["supportedVersions"]
        .as_array()
        .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(modern)));
    if !offered {
        let why = format!("its server/discover answer does not offer {modern}");
        return Err(ErrorObject::new(crate::jsonrpc::INVALID_REQUEST, why));
    }
    Ok(Handshake::from_discover(&discovered))
}

fn discover_failed(error: &ErrorObject) -> String {
    format!("server/discover failed: {}", error.message)
}

/// Whether a refusal is -32022 listing 2026-07-28, the modern revision mcpx speaks.
fn offers_modern(error: &ErrorObject) -> bool {
    let supported = error
        .data
        .as_ref()
        .and_then(|d| d.member("supported"))
        .and_then(Value::as_array);
    error.code == UNSUPPORTED_PROTOCOL_VERSION
        && supported.is_some_and(|list| {
            list.iter()
                .any(|v| v.as_str() == Some(Revision::V2026_07_28.as_str()))
        })
}

/// Whether a refused `initialize` says the server speaks the modern era.
fn speaks_modern(error: &ErrorObject) -> bool {
    let supported = error
        .data
        .as_ref()
        .and_then(|d| d.member("supported"))
        .and_then(Value::as_array);
    let lists_modern = supported.is_some_and(|list| {
        list.iter()
            .filter_map(Value::as_str)
            .any(Revision::date_is_modern)
    });
    error.code == UNSUPPORTED_PROTOCOL_VERSION || lists_modern
}

/// The progress token the server sees for mcpx's request `id`: mcpx's own, unique across every
/// caller of the upstream; the caller's own token goes back on what the server reports.
pub fn progress_token(id: i64) -> String {
    format!("mcpx-{id}")
}

/// Puts `token` in a request's `params._meta.progressToken`, making room for it.
pub fn put_progress_token(params: &mut Option<Value>, token: &str) {
    let params = params.get_or_insert_with(|| json!({}));
    if let Some(map) = params.as_object_mut() {
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        meta["progressToken"] = json!(token);
    }
}

/// An upstream's log message (masked: [`masked_log`]) in mcpx's own log, tagged with the
/// server's name.
fn log_in_mcpx(server: &str, params: &Value) {
    tracing::info!(target: "upstream", server = %server, "log: {params}");
}

/// A server's log message with every secret a server was given masked in each string: it goes
/// to mcpx's log and to clients, and JSON's escaping would hide a secret from the log's own mask.
fn masked_log(params: &Value) -> Value {
    let mut params = params.clone();
    crate::redact::mask_value(&mut params);
    params
}

/// Where a server's log message goes when it came during a call whose client takes it: to that
/// client (and mcpx's log); true if it went.
pub fn log_to_caller(server: &str, sink: Option<&super::LogSink>, params: &Value) -> bool {
    let Some(sink) = sink else { return false };
    let params = masked_log(params);
    log_in_mcpx(server, &params);
    sink.forward(server, &params);
    true
}

/// What the gateway makes of one of the server's own notifications (progress aside, which goes
/// to the request it belongs to): catalogs that changed and resources that were updated become
/// events, and so do tasks' status changes; a log message is logged, tagged with the server's name; the rest are dropped.
pub fn event_of(server: &str, link: LinkId, method: &str, params: &Value) -> Option<Event> {
    let notice = Notice::parse(method)?;
    match notice {
        Notice::ToolsListChanged
        | Notice::PromptsListChanged
        | Notice::ResourcesListChanged
        | Notice::EventsListChanged => {
            let kind = ListKind::from_notification(notice)?;
            Some(Event::ListChanged { link, kind })
        }
        Notice::ResourcesUpdated => {
            let uri = params.member("uri").and_then(Value::as_str)?;
            Some(Event::ResourceUpdated {
                uri: uri.to_owned(),
            })
        }
        Notice::SubscriptionsAcknowledged => Some(Event::ListenAcknowledged { link }),
        Notice::TasksStatus => Some(Event::TaskStatus {
            link,
            params: params.clone(),
        }),
        Notice::Message => {
            let params = masked_log(params);
            log_in_mcpx(server, &params);
            Some(Event::Log {
                link,
                server: server.to_owned(),
                params,
            })
        }
        // Acted on where they arrive (the request they belong to), or a client's to send.
        Notice::Progress | Notice::Cancelled | Notice::Initialized | Notice::RootsListChanged => {
            None
        }
        // A URL elicitation's end and a modern task's state are the request's own business,
        // carried by the call that asked (mcpx polls a modern upstream's tasks).
        Notice::ElicitationComplete | Notice::Tasks => None,
        // A stream's own frames, for the `events/stream` request they name.
        Notice::EventsActive
        | Notice::EventsEvent
        | Notice::EventsHeartbeat
        | Notice::EventsError
        | Notice::EventsTerminated => None,
    }
}

#[cfg(test)]
mod every_revision {
    mod upstream {
        use super::super::*;

        #[test]
        fn a_progress_token_replaces_any_meta_that_is_not_an_object() {
            for mut params in [None, Some(json!({})), Some(json!({"_meta": 3}))] {
                put_progress_token(&mut params, "mcpx-1");
                assert_eq!(params.unwrap()["_meta"]["progressToken"], "mcpx-1");
            }
            let mut kept = Some(json!({"_meta": {"k": 1}, "name": "t"}));
            put_progress_token(&mut kept, "mcpx-2");
            assert_eq!(
                kept.unwrap(),
                json!({"_meta": {"k": 1, "progressToken": "mcpx-2"}, "name": "t"})
            );
        }

        #[test]
        fn list_changes_updates_and_log_messages_are_events() {
            let link = LinkId {
                upstream: 2,
                start: 7,
            };
            assert_eq!(
                event_of("s", link, "notifications/tools/list_changed", &json!({})),
                Some(Event::ListChanged {
                    link,
                    kind: ListKind::Tools
                })
            );
            assert_eq!(
                event_of(
                    "s",
                    link,
                    "notifications/resources/updated",
                    &json!({"uri": "u"})
                ),
                Some(Event::ResourceUpdated { uri: "u".into() })
            );
            let task = json!({"taskId": "t", "status": "completed"});
            assert_eq!(
                event_of("s", link, "notifications/tasks/status", &task),
                Some(Event::TaskStatus {
                    link,
                    params: task.clone()
                })
            );
            assert_eq!(
                event_of("s", link, "notifications/message", &json!({"data": 1})),
                Some(Event::Log {
                    link,
                    server: "s".into(),
                    params: json!({"data": 1})
                })
            );
        }

        #[test]
        fn a_refused_initialize_is_modern_when_it_says_so() {
            let unsupported = ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "no");
            assert!(speaks_modern(&unsupported));
            let listing =
                ErrorObject::new(-32602, "no").with_data(json!({"supported": ["2026-07-28"]}));
            assert!(speaks_modern(&listing));
            assert!(!speaks_modern(&ErrorObject::new(-32601, "no")));
        }
    }
}
