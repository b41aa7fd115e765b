//! Prometheus metrics: what mcpx is doing, for dashboards and alerts.
//!
//! Names follow the OpenTelemetry MCP semantic conventions where they name one
//! (`mcp.server.operation.duration` is `mcp_server_operation_duration_seconds` here), the rest are
//! `mcpx_*`. The numbers live in one process-wide registry, as tracing's subscriber does: the
//! places that count (the gateway, the transports, the upstream wires) are many and far apart,
//! and a disabled registry (`[daemon] metrics = false`) costs them one atomic load. Label values
//! stay bounded: a name a client tried that no server lists is `unknown`, never itself.

use crate::json::Member;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use std::sync::OnceLock;
use std::time::Duration;

/// The registry, once [`install`]ed with metrics on.
static METRICS: OnceLock<Metrics> = OnceLock::new();

/// One finished operation of mcpx's own server: a request a client sent.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerOperation {
    /// The JSON-RPC method (one of MCP's, else `other`).
    pub method: &'static str,
    /// The tool or prompt named, as exposed; `unknown` for a name no server lists; empty for
    /// other methods.
    pub name: String,
    /// The server that answered (`mcpx` for the built-in one); empty when none did.
    pub upstream: String,
    /// `ok`, `tool_error`, `cancelled`, `timeout`, or the JSON-RPC error code.
    pub outcome: String,
    /// `legacy` or `modern`.
    pub era: &'static str,
}

/// One finished request of mcpx's to an upstream.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClientOperation {
    /// The JSON-RPC method.
    pub method: &'static str,
    /// The upstream's configured name.
    pub upstream: String,
    /// As for [`ServerOperation::outcome`].
    pub outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabel {
    transport: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabel {
    upstream: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabel {
    reason: Refusal,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DoorLabel {
    door: Door,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PassedOnLabel {
    kind: PassedOn,
    outcome: &'static str,
}

/// What one replica of a cluster passed to another.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum PassedOn {
    /// A 2026-07-28 retry, to the replica holding the call it resumes.
    retry,
    /// A legacy session's `DELETE`, to a peer.
    end,
}

/// Why mcpx refused a request before serving it.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Refusal {
    /// A browser `Origin` that is not allowed (403).
    origin,
    /// No or a wrong bearer token (401).
    token,
    /// Mirrored headers that disagree with the body (-32020).
    header_mismatch,
    /// A protocol revision mcpx does not implement (-32022).
    unsupported_version,
    /// A body or line past `maxMessageBytes`.
    too_large,
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
#[derive(Debug, Clone, Copy, Default)]
pub struct Live {
    /// Client sessions.
    pub sessions: i64,
    /// Open legacy GET streams.
    pub get_streams: i64,
    /// Open modern listen streams.
    pub listen_streams: i64,
    /// Requests in flight.
    pub in_flight: i64,
}

struct Metrics {
    registry: Registry,
    server_operations: Family<ServerOperation, Histogram, fn() -> Histogram>,
    client_operations: Family<ClientOperation, Histogram, fn() -> Histogram>,
    session_duration: Family<TransportLabel, Histogram, fn() -> Histogram>,
    sessions: Gauge,
    streams: Family<KindLabel, Gauge>,
    in_flight: Gauge,
    restarts: Family<UpstreamLabel, Counter>,
    refused: Family<RefusalLabel, Counter>,
    received: Family<DoorLabel, Counter>,
    sent: Family<DoorLabel, Counter>,
    passed_on: Family<PassedOnLabel, Counter>,
}

/// Operation latencies: half a millisecond (a built-in tool) to five minutes (an upstream's
/// default timeout).
fn latency() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
        60.0, 300.0,
    ])
}

/// Session lifetimes: a second (a stateless call) to a day (an editor left open).
fn lifetime() -> Histogram {
    Histogram::new([1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0])
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let server_operations = Family::new_with_constructor(latency as fn() -> Histogram);
        let client_operations = Family::new_with_constructor(latency as fn() -> Histogram);
        let session_duration = Family::new_with_constructor(lifetime as fn() -> Histogram);
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "Requests clients sent to mcpx, by method, tool or prompt, upstream, outcome and era",
            Unit::Seconds,
            server_operations.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "Requests mcpx sent to its upstreams, by method, upstream and outcome",
            Unit::Seconds,
            client_operations.clone(),
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
            in_flight: Gauge::default(),
            restarts: Family::default(),
            refused: Family::default(),
            received: Family::default(),
            sent: Family::default(),
            passed_on: Family::default(),
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
            "mcpx_requests_in_flight",
            "Client requests being served now",
            metrics.in_flight.clone(),
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
            metrics.received.clone(),
        );
        registry.register_with_unit(
            "mcpx_sent",
            "Bytes of MCP messages sent to clients, by door",
            Unit::Bytes,
            metrics.sent.clone(),
        );
        registry.register(
            "mcpx_cluster_passed_on",
            "Requests passed to another replica, by kind (retry, end) and outcome (ok, unreachable)",
            metrics.passed_on.clone(),
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
pub fn server_operation(labels: &ServerOperation, took: Duration) {
    if let Some(m) = METRICS.get() {
        m.server_operations
            .get_or_create(labels)
            .observe(took.as_secs_f64());
    }
}

/// Counts a finished request to an upstream.
pub fn client_operation(labels: &ClientOperation, took: Duration) {
    if let Some(m) = METRICS.get() {
        m.client_operations
            .get_or_create(labels)
            .observe(took.as_secs_f64());
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
        m.received
            .get_or_create(&DoorLabel { door })
            .inc_by(bytes as u64);
    }
}

/// Counts bytes sent at `door`.
pub fn sent(door: Door, bytes: usize) {
    if let Some(m) = METRICS.get() {
        m.sent
            .get_or_create(&DoorLabel { door })
            .inc_by(bytes as u64);
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
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &m.registry).ok()?;
    Some(text)
}

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A method as a label: one of MCP's, else `other` (a client can send any string).
pub fn method_label(method: &str) -> &'static str {
    const METHODS: [&str; 16] = [
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "logging/setLevel",
        "server/discover",
        "subscriptions/listen",
        "notifications/cancelled",
    ];
    METHODS
        .into_iter()
        .find(|m| *m == method)
        .unwrap_or("other")
}

/// An operation's outcome as a label, from what it answered: `None` when it was cancelled.
pub fn outcome_label(
    answer: Option<&Result<serde_json::Value, crate::jsonrpc::ErrorObject>>,
) -> String {
    match answer {
        None => "cancelled".into(),
        Some(Ok(result)) if result.member("isError") == Some(&serde_json::Value::Bool(true)) => {
            "tool_error".into()
        }
        Some(Ok(_)) => "ok".into(),
        Some(Err(e)) if crate::upstream::failure::is_timeout(e) => "timeout".into(),
        Some(Err(e)) => e.code.to_string(),
    }
}
