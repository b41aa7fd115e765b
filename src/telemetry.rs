//! Trace context: a client's W3C `traceparent` and `tracestate` (in the request's `_meta`, as
//! the MCP trace-context convention carries them, or as HTTP headers) go on to the upstream call,
//! in its `_meta` and, toward an HTTP upstream, as headers. With `[telemetry] otlpEndpoint` set,
//! mcpx puts a span of its own in between (the upstream's parent is then mcpx's span) and exports
//! its spans over OTLP/HTTP (JSON) with its own HTTP client: the OpenTelemetry SDK's batch
//! processor runs on a thread of its own, so no second async runtime is involved.

use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Parsed};
use crate::protocol::Method;
use async_trait::async_trait;
use bytes::Bytes;
use http::HeaderName;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The `_meta` keys (and HTTP header names) of the W3C trace context.
pub static TRACE_KEYS: [HeaderName; 2] = [
    HeaderName::from_static("traceparent"),
    HeaderName::from_static("tracestate"),
];

/// The exporter, once [`install`]ed with an endpoint.
static TRACING: OnceLock<Tracing> = OnceLock::new();

struct Tracing {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

/// Starts exporting mcpx's spans to the OTLP/HTTP collector at `endpoint` (its base URL; spans
/// go to `/v1/traces` under it).
pub fn install(endpoint: &str, service: &str) -> Result<(), String> {
    let url = match endpoint.trim_end_matches('/') {
        base if base.ends_with("/v1/traces") => base.to_owned(),
        base => format!("{base}/v1/traces"),
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(OwnClient)
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(url)
        .build()
        .map_err(|e| format!("telemetry.otlpEndpoint: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_owned())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("mcpx");
    let _ = TRACING.set(Tracing { provider, tracer });
    Ok(())
}

/// Sends the spans not exported yet (at exit).
pub fn flush() {
    if let Some(tracing) = TRACING.get() {
        let _ = tracing.provider.force_flush();
    }
}

/// mcpx's span around one call to an upstream.
pub struct CallSpan {
    context: Context,
}

/// Carries the client's trace context into `forwarded` (the upstream's params): as it came when
/// tracing is off, else under a span of mcpx's own, which is returned to be ended with the
/// call's outcome. `original` is the client's params.
pub fn carry(
    method: Method,
    target: &str,
    original: Option<&Value>,
    forwarded: &mut Value,
) -> Option<CallSpan> {
    let tracing = TRACING.get()?;
    let incoming: HashMap<String, String> = TRACE_KEYS
        .iter()
        .filter_map(|key| {
            let value = original?.member("_meta")?.member(key.as_str())?.as_str()?;
            Some((key.to_string(), value.to_owned()))
        })
        .collect();
    let propagator = TraceContextPropagator::new();
    let parent = propagator.extract(&incoming);
    let name = match target {
        "" => method.as_str().to_owned(),
        target => format!("{method} {target}"),
    };
    let mut attributes = vec![KeyValue::new("mcp.method.name", method.as_str())];
    if let Some(key) = method.span_attribute() {
        attributes.push(KeyValue::new(key, target.to_owned()));
    }
    let span = tracing
        .tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_attributes(attributes)
        .start_with_context(&tracing.tracer, &parent);
    let context = parent.with_span(span);
    let mut outgoing = HashMap::new();
    propagator.inject_context(&context, &mut outgoing);
    if !forwarded["_meta"].is_object() {
        forwarded["_meta"] = serde_json::json!({});
    }
    for (key, value) in outgoing {
        forwarded["_meta"][key] = Value::String(value);
    }
    Some(CallSpan { context })
}

impl CallSpan {
    /// Ends the span with the call's outcome.
    pub fn end(self, outcome: &Result<Value, ErrorObject>) {
        let span = self.context.span();
        match outcome {
            Ok(result) if result.member("isError") == Some(&Value::Bool(true)) => {
                span.set_status(Status::error("tool error"))
            }
            Ok(_) => span.set_status(Status::Ok),
            Err(e) => {
                span.set_attribute(KeyValue::new("rpc.jsonrpc.error_code", e.code));
                span.set_status(Status::error(e.message.clone()));
            }
        }
        span.end();
    }
}

/// The client's trace context from HTTP headers, put into a request's `_meta` where the body
/// carries none of its own (into each request of a batch).
pub fn adopt_headers(headers: &http::HeaderMap, body: &mut Parsed) {
    let found = TRACE_KEYS.each_ref().map(|key| {
        let value = headers.get(key).and_then(|v| v.to_str().ok());
        value.map(|value| (key.as_str(), value))
    });
    if found.iter().all(Option::is_none) {
        return;
    }
    match body {
        Parsed::Batch(items) => {
            for item in items {
                if let Some(request) = item
                    .as_object_mut()
                    .filter(|m| m.member("method").is_some())
                {
                    put_trace_context(&found, request.entry("params").or_insert_with(empty_object));
                }
            }
        }
        Parsed::One(members) if members.names_method() => {
            put_trace_context(
                &found,
                members.params_mut().get_or_insert_with(empty_object),
            );
        }
        _ => {}
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

fn put_trace_context(found: &[Option<(&str, &str)>], params: &mut Value) {
    let Some(params) = params.as_object_mut() else {
        return;
    };
    let meta = params.entry("_meta").or_insert_with(empty_object);
    if let Some(meta) = meta.as_object_mut() {
        for (key, value) in found.iter().flatten() {
            meta.entry(*key)
                .or_insert_with(|| Value::String((*value).to_owned()));
        }
    }
}

/// mcpx's own HTTP client (hyper on smol) as the OTLP exporter's.
#[derive(Debug)]
struct OwnClient;

#[async_trait]
impl opentelemetry_http::HttpClient for OwnClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let body = String::from_utf8(body.to_vec())?;
        let url = parts.uri.to_string();
        let fetched = crate::net::client::fetch(
            parts.method,
            &url,
            parts.headers,
            Some(("application/json", body)),
        )
        .await?;
        let mut response = http::Response::new(fetched.body);
        *response.status_mut() = fetched.status;
        *response.headers_mut() = fetched.headers;
        Ok(response)
    }
}
