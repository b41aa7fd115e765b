//! Prometheus metrics: what mcpx is doing, for dashboards and alerts.
//!
//! Names follow the OpenTelemetry MCP semantic conventions where they name one
//! (`mcp.server.operation.duration` is `mcp_server_operation_duration_seconds` here), the rest are
//! `mcpx_*`. The numbers live in one process-wide registry, as tracing's subscriber does: the
//! places that count (the gateway, the transports, the upstream wires) are many and far apart,
//! and a disabled registry (`[daemon] metrics = false`) costs them one atomic load. Label values
//! stay bounded: a name a client tried that no server lists is `unknown`, never itself.

mod labels;

use crate::protocol::Method;
use labels::{
    AuthFailureLabel, AuthorizationLabel, ClientOperationLabels, DoorLabel, EventLabel,
    FindingLabel, KindLabel, Known, LimitLabel, PassedOnLabel, PinEventLabel, PinStateLabel,
    RefusalLabel, ServerOperationLabels, TaskLabel, ToleratedLabel, TransportLabel, UpstreamLabel,
};
pub use labels::{ClientOperation, ServerOperation};
use prometheus_client::encoding::EncodeLabelValue;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use std::hash::Hash;
use std::sync::OnceLock;
use std::time::Duration;

/// The registry, once [`install`]ed with metrics on.
static METRICS: OnceLock<Metrics> = OnceLock::new();

/// What one replica of a cluster passed to another.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum PassedOn {
    /// A 2026-07-28 retry, to the replica holding the call it resumes.
    retry,
    /// A legacy session's `DELETE`, to a peer.
    end,
}

/// How an event type's occurrence reached a client (the Events extension).
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum EventDelivery {
    /// In an `events/poll` answer.
    poll,
    /// On an `events/stream`.
    push,
    /// POSTed to a webhook by mcpx.
    webhook,
}

/// What became of an occurrence mcpx carried.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum EventOutcome {
    /// Passed to its client (a poll's answer, a stream).
    passed,
    /// Taken by its webhook.
    delivered,
    /// Not taken by its webhook after every try, or too large to send.
    failed,
}

/// Why mcpx refused a request before serving it.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Refusal {
    /// A browser `Origin` that is not allowed (403).
    origin,
    /// No or a wrong bearer token (401).
    token,
    /// Another local user's connection to a daemon without a token (403).
    other_user,
    /// A `Host` that names neither loopback nor the daemon (421): DNS rebinding.
    host,
    /// Mirrored headers that disagree with the body (-32020).
    header_mismatch,
    /// A protocol revision mcpx does not implement (-32022).
    unsupported_version,
    /// A body or line past `maxMessageBytes`.
    too_large,
    /// A request head past `maxHeaderBytes` (431).
    head_too_large,
    /// A connection past `maxConnections`.
    max_connections,
    /// A legacy session past `maxSessions`.
    max_sessions,
    /// A client's request past `maxInFlightPerClient`.
    client_in_flight,
    /// A request to an upstream past its `maxInFlight`.
    upstream_in_flight,
}

/// Where bytes went in or out.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Door {
    /// The daemon's HTTP.
    http,
    /// A stdio session (an editor's pipes, or an attached editor's socket).
    stdio,
}

/// What is live now, read from the registry of sessions at each scrape.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Client sessions.
    pub sessions: i64,
    /// Open legacy GET streams.
    pub get_streams: i64,
    /// Open modern listen streams.
    pub listen_streams: i64,
    /// Requests in flight.
    pub in_flight: i64,
    /// The tasks mcpx holds an id for, by kind (`own`, `bridged`, `passed`) and state as last seen.
    pub tasks: Vec<((String, String), i64)>,
    /// Each sandboxed upstream, and whether its sandbox lacks a layer asked for.
    pub sandboxes: Vec<(String, bool)>,
    /// Pinned definitions, by state (`pinned`, `changed`, `new`, `rejected`).
    pub pins: Vec<(String, i64)>,
    /// Each per-identity upstream, and how many people's instances of it run (by server only:
    /// people are not a label's values).
    pub instances: Vec<(String, i64)>,
}

struct Metrics {
    registry: Registry,
    server_operations: Known<ServerOperationLabels, Histogram>,
    client_operations: Known<ClientOperationLabels, Histogram>,
    session_duration: Family<TransportLabel, Histogram, fn() -> Histogram>,
    sessions: Gauge,
    streams: Family<KindLabel, Gauge>,
    tasks: Family<TaskLabel, Gauge>,
    in_flight: Gauge,
    sandbox_degraded: Family<UpstreamLabel, Gauge>,
    instances: Family<UpstreamLabel, Gauge>,
    restarts: Family<UpstreamLabel, Counter>,
    refused: Family<RefusalLabel, Counter>,
    /// By [`Door`], resolved once: bytes are counted on every message.
    received: [Counter; 2],
    sent: [Counter; 2],
    passed_on: Family<PassedOnLabel, Counter>,
    events: Family<EventLabel, Counter>,
    auth_failures: Family<AuthFailureLabel, Counter>,
    limited: Family<LimitLabel, Counter>,
    guardrail_findings: Family<FindingLabel, Counter>,
    tolerated: Family<ToleratedLabel, Counter>,
    pins: Family<PinStateLabel, Gauge>,
    pin_events: Family<PinEventLabel, Counter>,
    authorizations: Family<AuthorizationLabel, Counter>,
}

/// Operation latencies: half a millisecond (a built-in tool) to five minutes (an upstream's
/// default timeout).
fn latency() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
        60.0, 300.0,
    ])
}

/// A counter per [`Door`], by its index, and the family that names them.
fn by_door() -> ([Counter; 2], Family<DoorLabel, Counter>) {
    let family = Family::<DoorLabel, Counter>::default();
    let counters =
        [Door::http, Door::stdio].map(|door| family.get_or_create_owned(&DoorLabel { door }));
    (counters, family)
}

/// Session lifetimes: a second (a stateless call) to a day (an editor left open).
fn lifetime() -> Histogram {
    Histogram::new([1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0])
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let server_operations = Known::new(latency);
        let client_operations = Known::new(latency);
        let session_duration = Family::new_with_constructor(lifetime as fn() -> Histogram);
        let (received, received_family) = by_door();
        let (sent, sent_family) = by_door();
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "Requests clients sent to mcpx, by method, tool or prompt, upstream, outcome and era",
            Unit::Seconds,
            server_operations.family.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "Requests mcpx sent to its upstreams, by method, upstream and outcome",
            Unit::Seconds,
            client_operations.family.clone(),
        );
        registry.register_with_unit(
            "mcp_server_session_duration",
            "How long client sessions lasted, by transport",
            Unit::Seconds,
            session_duration.clone(),
        );
        let metrics = Metrics {
            server_operations,
            client_operations,
            session_duration,
            sessions: Gauge::default(),
            streams: Family::default(),
            tasks: Family::default(),
            in_flight: Gauge::default(),
            sandbox_degraded: Family::default(),
            instances: Family::default(),
            restarts: Family::default(),
            refused: Family::default(),
            received,
            sent,
            passed_on: Family::default(),
            events: Family::default(),
            auth_failures: Family::default(),
            limited: Family::default(),
            guardrail_findings: Family::default(),
            tolerated: Family::default(),
            pins: Family::default(),
            pin_events: Family::default(),
            authorizations: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "mcpx_sessions",
            "Client sessions open now",
            metrics.sessions.clone(),
        );
        registry.register(
            "mcpx_streams",
            "Legacy GET streams and modern listen streams open now",
            metrics.streams.clone(),
        );
        registry.register(
            "mcpx_tasks",
            "Tasks mcpx holds an id for, by kind (own: mcpx runs it; bridged: mcpx runs it through its server's task of the other generation; passed: its server does) and state as last seen",
            metrics.tasks.clone(),
        );
        registry.register(
            "mcpx_requests_in_flight",
            "Client requests being served now",
            metrics.in_flight.clone(),
        );
        registry.register(
            "mcpx_sandbox_degraded",
            "1 for a sandboxed upstream started without a layer its sandbox asks for (onUnavailable = \"warn\"), else 0",
            metrics.sandbox_degraded.clone(),
        );
        registry.register(
            "mcpx_upstream_instances",
            "People's instances running of a per-identity upstream ([servers.NAME] credentials)",
            metrics.instances.clone(),
        );
        registry.register(
            "mcpx_upstream_restarts",
            "Upstream starts after the first, by upstream",
            metrics.restarts.clone(),
        );
        registry.register(
            "mcpx_refused_requests",
            "Requests refused before they were served, by reason",
            metrics.refused.clone(),
        );
        registry.register_with_unit(
            "mcpx_received",
            "Bytes of MCP messages received from clients, by door",
            Unit::Bytes,
            received_family,
        );
        registry.register_with_unit(
            "mcpx_sent",
            "Bytes of MCP messages sent to clients, by door",
            Unit::Bytes,
            sent_family,
        );
        registry.register(
            "mcpx_cluster_passed_on",
            "Requests passed to another replica, by kind (retry, end) and outcome (ok, unreachable)",
            metrics.passed_on.clone(),
        );
        registry.register(
            "mcpx_auth_failures",
            "Requests the HTTP door refused for their credentials, by reason (missing, expired, audience, scope, policy, ...)",
            metrics.auth_failures.clone(),
        );
        registry.register(
            "mcpx_calls_limited",
            "Calls refused by [limits] and never sent upstream, by limit (calls, tools.\"GLOB\", loopGuard)",
            metrics.limited.clone(),
        );
        registry.register(
            "mcpx_guardrail_findings",
            "Credentials and personal data [guardrails] found in what a model would read, by kind (github-token, email, ...) and action (redact, block, log)",
            metrics.guardrail_findings.clone(),
        );
        registry.register(
            "mcpx_requests_tolerated",
            "Requests taken though they lack what a strict reading wants, by what and method (mcp_name_missing: a tasks/* request without Mcp-Name, as FastMCP's task client sends)",
            metrics.tolerated.clone(),
        );
        registry.register(
            "mcpx_pinned_definitions",
            "Definitions of pinned servers, by state (pinned, changed, new, rejected)",
            metrics.pins.clone(),
        );
        registry.register(
            "mcpx_events",
            "Occurrences of event types mcpx carried, by server, delivery (poll, push, webhook) and outcome (passed, delivered, failed)",
            metrics.events.clone(),
        );
        registry.register(
            "mcpx_pin_events",
            "What happened to pinned definitions, by event (baseline, changed, new, accepted, approved, rejected)",
            metrics.pin_events.clone(),
        );
        registry.register(
            "mcpx_authorizations",
            "What the built-in authorization server did, by event (registered, consented, denied, secret_refused, locked, waiting_room_full, token, refreshed, refresh_repeated, refused, code_reused, refresh_reused)",
            metrics.authorizations.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }
}

/// Turns counting on (once per process); with `enabled` false nothing is counted.
pub fn install(enabled: bool) {
    if enabled {
        METRICS.get_or_init(Metrics::new);
    }
}

/// Whether anything is counted: callers skip the work of labelling when not.
pub fn enabled() -> bool {
    METRICS.get().is_some()
}

/// Counts a finished client request.
pub fn server_operation(labels: &ServerOperation<'_>, took: Duration) {
    if let Some(m) = METRICS.get() {
        let labels = ServerOperation {
            outcome: labels.outcome.bounded(),
            ..*labels
        };
        m.server_operations
            .update(&labels, |h| h.observe(took.as_secs_f64()));
    }
}

/// Counts a finished request to an upstream.
pub fn client_operation(labels: &ClientOperation<'_>, took: Duration) {
    if let Some(m) = METRICS.get() {
        let labels = ClientOperation {
            outcome: labels.outcome.bounded(),
            ..*labels
        };
        m.client_operations
            .update(&labels, |h| h.observe(took.as_secs_f64()));
    }
}

/// Counts a session that ended after `lasted`.
pub fn session_ended(transport: &str, lasted: Duration) {
    if let Some(m) = METRICS.get() {
        let label = TransportLabel {
            transport: transport.to_owned(),
        };
        m.session_duration
            .get_or_create(&label)
            .observe(lasted.as_secs_f64());
    }
}

/// Counts a refusal.
pub fn refused(reason: Refusal) {
    if let Some(m) = METRICS.get() {
        m.refused.get_or_create(&RefusalLabel { reason }).inc();
    }
}

/// Counts one event of the built-in authorization server.
pub fn authorization(event: &'static str) {
    if let Some(m) = METRICS.get() {
        m.authorizations
            .get_or_create(&AuthorizationLabel { event })
            .inc();
    }
}

/// Counts a request refused for its credentials, by the gate's `reason`.
pub fn auth_failed(reason: &'static str) {
    if let Some(m) = METRICS.get() {
        m.auth_failures
            .get_or_create(&AuthFailureLabel { reason })
            .inc();
    }
}

/// Counts a call `limit` refused (`calls`, `tools."GLOB"` or `loopGuard`).
pub fn limited(limit: &str) {
    if let Some(m) = METRICS.get() {
        m.limited
            .get_or_create(&LimitLabel {
                limit: limit.to_owned(),
            })
            .inc();
    }
}

/// Counts `count` findings of `kind` the guardrails dealt with by `action`.
pub fn guardrail_findings(kind: &'static str, action: &'static str, count: u32) {
    if let Some(m) = METRICS.get() {
        let label = FindingLabel { kind, action };
        m.guardrail_findings
            .get_or_create(&label)
            .inc_by(u64::from(count));
    }
}

/// Counts a request taken though it lacks `what` (`mcp_name_missing`), by its method.
pub fn tolerated(what: &'static str, method: &'static str) {
    if let Some(m) = METRICS.get() {
        m.tolerated
            .get_or_create(&ToleratedLabel { what, method })
            .inc();
    }
}

/// Counts an event of a pinned definition (`baseline`, `changed`, `approved`, ...).
pub fn pin_event(event: &str) {
    if let Some(m) = METRICS.get() {
        m.pin_events
            .get_or_create(&PinEventLabel {
                event: event.to_owned(),
            })
            .inc();
    }
}

/// Counts `count` occurrences of `server`'s event types carried by `delivery` to `outcome`.
pub fn events(server: &str, delivery: EventDelivery, outcome: EventOutcome, count: u64) {
    if let Some(m) = METRICS.get() {
        let label = EventLabel {
            server: server.to_owned(),
            delivery,
            outcome,
        };
        m.events.get_or_create(&label).inc_by(count);
    }
}

/// Counts a request passed to another replica; `reached` whether it got there.
pub fn passed_on(kind: PassedOn, reached: bool) {
    if let Some(m) = METRICS.get() {
        let outcome = if reached { "ok" } else { "unreachable" };
        m.passed_on
            .get_or_create(&PassedOnLabel { kind, outcome })
            .inc();
    }
}

/// Counts an upstream's restart.
pub fn upstream_restarted(upstream: &str) {
    if let Some(m) = METRICS.get() {
        let label = UpstreamLabel {
            upstream: upstream.to_owned(),
        };
        m.restarts.get_or_create(&label).inc();
    }
}

/// Counts bytes received at `door`.
pub fn received(door: Door, bytes: usize) {
    if let Some(m) = METRICS.get() {
        m.received[door as usize].inc_by(bytes as u64);
    }
}

/// Counts bytes sent at `door`.
pub fn sent(door: Door, bytes: usize) {
    if let Some(m) = METRICS.get() {
        m.sent[door as usize].inc_by(bytes as u64);
    }
}

/// Everything, in the Prometheus text format, with the gauges set from `live`; `None` when
/// metrics are off.
pub fn render(live: Live) -> Option<String> {
    let m = METRICS.get()?;
    m.sessions.set(live.sessions);
    m.streams
        .get_or_create(&KindLabel { kind: "get" })
        .set(live.get_streams);
    m.streams
        .get_or_create(&KindLabel { kind: "listen" })
        .set(live.listen_streams);
    m.in_flight.set(live.in_flight);
    // Set afresh: a state no task is in any more is no sample at all.
    m.tasks.clear();
    for ((kind, state), count) in live.tasks {
        m.tasks.get_or_create(&TaskLabel { kind, state }).set(count);
    }
    m.sandbox_degraded.clear();
    for (upstream, degraded) in live.sandboxes {
        let label = UpstreamLabel { upstream };
        m.sandbox_degraded
            .get_or_create(&label)
            .set(degraded.into());
    }
    m.instances.clear();
    for (upstream, count) in live.instances {
        m.instances
            .get_or_create(&UpstreamLabel { upstream })
            .set(count);
    }
    m.pins.clear();
    for (state, count) in live.pins {
        m.pins.get_or_create(&PinStateLabel { state }).set(count);
    }
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &m.registry).ok()?;
    Some(text)
}

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A method as a label: one of MCP's, else `other` (a client can send any string).
pub fn method_label(method: Option<Method>) -> &'static str {
    method.map_or("other", Method::as_str)
}

#[cfg(test)]
mod every_revision {
    mod metrics {
        use crate::failure::Outcome;

        #[test]
        fn an_outcome_reads_as_the_label_it_was() {
            let labels = [
                Outcome::Ok,
                Outcome::ToolError,
                Outcome::Limited,
                Outcome::Cancelled,
                Outcome::Timeout,
                Outcome::Error(-32602),
            ]
            .map(|o| o.to_string());
            assert_eq!(
                labels,
                [
                    "ok",
                    "tool_error",
                    "limited",
                    "cancelled",
                    "timeout",
                    "-32602"
                ]
            );
        }

        #[test]
        fn an_error_code_outside_json_rpcs_reserved_range_is_one_label_value() {
            let labels = [
                -32700,
                -32602,
                -32042,
                -32000,
                -31999,
                -32769,
                0,
                42,
                i64::MIN,
            ]
            .map(|code| Outcome::Error(code).bounded().to_string());
            assert_eq!(
                labels,
                [
                    "-32700", "-32602", "-32042", "-32000", "error", "error", "error", "error",
                    "error"
                ]
            );
        }
    }
}
