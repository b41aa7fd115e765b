//! The 2026-07-28 mirrored headers mcpx puts on its requests to a modern server: the protocol
//! version, the method and the name, and `Mcp-Param-*` from the `x-mcp-header` annotations the
//! server's tools declare, learnt from each `tools/list`; and, in every era, the W3C trace
//! context a request's `_meta` carries.

use super::HttpUpstream;
use crate::json::Member;
use crate::mcpheaders::{self, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use crate::protocol::{Method, Revision};
use crate::sync::lock;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

impl HttpUpstream {
    /// The 2026-07-28 mirrored headers for a request.
    pub(super) fn mirror_headers(
        &self,
        method: &str,
        params: Option<&Value>,
        headers: &mut HeaderMap,
    ) {
        let version = HeaderValue::from_static(Revision::V2026_07_28.as_str());
        headers.insert(PROTOCOL_VERSION_HEADER, version);
        let mut put = |name: HeaderName, value: String| {
            if let Ok(value) = HeaderValue::try_from(value) {
                headers.insert(name, value);
            }
        };
        put(METHOD_HEADER, method.to_owned());
        let known = Method::parse(method).filter(|m| m.names_in_header());
        let name = known.and_then(|m| m.target(params));
        if let Some(name) = name {
            put(NAME_HEADER, mcpheaders::encode(name));
        }
        let params = params.unwrap_or(&Value::Null);
        if known == Some(Method::ToolsCall) {
            let tool = name.unwrap_or_default();
            let annotated = lock(&self.header_params)
                .get(tool)
                .cloned()
                .unwrap_or_default();
            for param in annotated {
                if let Some(text) = param
                    .value_in(params.member("arguments").unwrap_or(&Value::Null))
                    .and_then(mcpheaders::param_text)
                {
                    if let (Ok(name), Ok(value)) = (
                        HeaderName::try_from(param.header_name()),
                        HeaderValue::try_from(mcpheaders::encode(&text)),
                    ) {
                        headers.insert(name, value);
                    }
                }
            }
        }
    }

    /// Records the `x-mcp-header` annotations of the tools a `tools/list` page listed.
    pub(super) fn learn_header_params(&self, result: &Value) {
        let mut known = lock(&self.header_params);
        for tool in result["tools"].as_array().into_iter().flatten() {
            if let (Some(name), Ok(params)) = (
                tool["name"].as_str(),
                mcpheaders::header_params(&tool["inputSchema"]),
            ) {
                known.insert(name.to_owned(), params);
            }
        }
    }
}

/// The W3C trace context a request's `_meta` carries, as the `traceparent` and `tracestate`
/// headers HTTP servers (and the proxies before them) read it from.
pub(super) fn trace_headers(params: Option<&Value>, headers: &mut HeaderMap) {
    let Some(meta) = params.and_then(|p| p.member("_meta")) else {
        return;
    };
    for key in &crate::telemetry::TRACE_KEYS {
        let value = meta.member(key.as_str()).and_then(Value::as_str);
        if let Some(Ok(value)) = value.map(HeaderValue::try_from) {
            headers.insert(key.clone(), value);
        }
    }
}
