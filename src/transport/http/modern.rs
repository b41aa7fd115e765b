//! A 2026-07-28 POST: exactly one request or notification, its mirrored headers checked against
//! the body, answered with JSON or, when it produces notifications first, an event stream. There
//! are no sessions (an `Mcp-Session-Id` is ignored), no batches, and closing the stream cancels.

use super::exchange::Exchange;
use super::forward;
use super::{accepted, json_response, rpc_error, status, Body, FrontDoor};
use crate::access::Identity;
use crate::gateway::{Client, ViewId};
use crate::json::Member;
use crate::jsonrpc::{
    self, ErrorObject, Message, Notification, Parsed, Request, HEADER_MISMATCH, INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::mcpheaders::{self, METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use crate::metrics::{self, Refusal};
use crate::protocol::method::RoutedBy;
use crate::protocol::{envelope, Era, Extensions, Method, Revision};
use http::{HeaderMap, HeaderName, Response, StatusCode};
use serde_json::Value;
use std::sync::Arc;

pub(super) async fn post(
    door: &FrontDoor,
    view: ViewId,
    path: &str,
    headers: &HeaderMap,
    body: Parsed,
    caller: Arc<Identity>,
) -> Response<Body> {
    let client = door.modern(view);
    if matches!(body, Parsed::Batch(_)) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorObject::new(
                INVALID_REQUEST,
                "Invalid Request: MCP 2026-07-28 has no batches",
            ),
        );
    }
    let message = match body.into_message() {
        Ok(message) => message,
        Err(rejection) => return json_response(StatusCode::BAD_REQUEST, &rejection),
    };
    match message {
        Message::Request(request) => {
            if let Err(why) = check_request_headers(door, client, headers, &request).await {
                metrics::refused(Refusal::header_mismatch);
                let error = ErrorObject::new(HEADER_MISMATCH, format!("Header mismatch: {why}"));
                return json_response(StatusCode::BAD_REQUEST, &jsonrpc::Response::error(Some(request.id), error));
            }
            // The header made this request modern, so its body must carry the envelope: one
            // that does not is refused, never served as legacy. When the header names a
            // revision mcpx does not implement, that is said first (-32022 with the supported
            // list), since it tells a newer client what to fall back to.
            let unknown_revision = envelope::declared_version(request.params.as_ref())
                .is_none()
                .then(|| header_text(headers, &PROTOCOL_VERSION_HEADER))
                .flatten()
                .filter(|version| Revision::parse(version).is_none());
            if let Some(version) = unknown_revision {
                metrics::refused(Refusal::unsupported_version);
                let error = envelope::unsupported_version(&version, Revision::all_strings());
                let refusal = jsonrpc::Response::error(Some(request.id), error);
                return json_response(status::modern_status(&refusal), &refusal);
            }
            if let Err(error) = envelope::check(request.params.as_ref()) {
                if error.code == UNSUPPORTED_PROTOCOL_VERSION {
                    metrics::refused(Refusal::unsupported_version);
                }
                let refusal = jsonrpc::Response::error(Some(request.id), error);
                return json_response(status::modern_status(&refusal), &refusal);
            }
            let holder = (!headers.contains_key(forward::FORWARDED))
                .then(|| door.gateway.resumed_elsewhere(request.params.as_ref()))
                .flatten();
            match holder {
                Some(at) => forward::to_holder(&at, path, headers, &request, Era::Modern).await,
                None => run(door, client, request, caller).await,
            }
        }
        // No header is required on a notification, but any it sends must agree with it.
        Message::Notification(notification) => match check_notification_headers(headers, &notification) {
            Ok(()) => accepted(),
            Err(why) => {
                metrics::refused(Refusal::header_mismatch);
                rpc_error(StatusCode::BAD_REQUEST, ErrorObject::new(HEADER_MISMATCH, format!("Header mismatch: {why}")))
            }
        },
        Message::Response(_) => rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorObject::new(INVALID_REQUEST, "Invalid Request: MCP 2026-07-28 servers send no requests, so clients POST no responses"),
        ),
    }
}

/// The one value of a header (surrounding whitespace stripped), `None` if absent; a header sent
/// twice or with bytes a header may not carry is an error.
fn single<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h [u8]>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("{name} is sent more than once"));
    }
    let bytes = value.as_bytes().trim_ascii();
    if !mcpheaders::is_header_safe(bytes) {
        return Err(format!(
            "{name} carries bytes outside visible ASCII, space and tab"
        ));
    }
    Ok(Some(bytes))
}

/// A header's one value as text, if it has one that a header may carry.
fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    let bytes = single(headers, name).ok()??;
    Some(String::from_utf8_lossy(bytes).into_owned())
}

/// A header that must equal a body string, compared after decoding the Base64 form when
/// `decoded` is set.
fn agrees(
    headers: &HeaderMap,
    name: &HeaderName,
    body: Option<&str>,
    required: bool,
    decoded: bool,
) -> Result<(), String> {
    let Some(raw) = single(headers, name)? else {
        return if required {
            Err(format!("{name} is required"))
        } else {
            Ok(())
        };
    };
    let text = if decoded {
        mcpheaders::decode(raw).map_err(|e| format!("{name} is malformed ({e:?})"))?
    } else {
        String::from_utf8_lossy(raw)
    };
    if Some(&*text) != body {
        return Err(format!("{name} {text:?} differs from the body's {body:?}"));
    }
    Ok(())
}

async fn check_request_headers(
    door: &FrontDoor,
    client: &Client,
    headers: &HeaderMap,
    request: &Request,
) -> Result<(), String> {
    let params = request.params.as_ref();
    match envelope::declared_version(params) {
        // The header must agree with a version the body names...
        Some(version) => agrees(
            headers,
            &PROTOCOL_VERSION_HEADER,
            version.as_str(),
            true,
            false,
        )?,
        // ...but a body that names none is missing its envelope, which the core refuses with
        // -32602 (as the specification's conformance suite expects); the header is still
        // required, and must be readable.
        None => {
            single(headers, &PROTOCOL_VERSION_HEADER)?
                .ok_or(format!("{PROTOCOL_VERSION_HEADER} is required"))?;
        }
    }
    agrees(headers, &METHOD_HEADER, Some(&request.method), true, false)?;
    let method = Method::parse(&request.method).filter(|m| m.names_in_header());
    // A tasks/* request of a client that did not declare the extension is refused for that
    // first, by the core (-32021), whatever its headers say.
    let undeclared = |m: Method| {
        let extension = m.extension_in(Era::Modern);
        let declared = Extensions::declared_in(envelope::client_capabilities(params));
        extension.is_some_and(|e| !declared.contains(e))
    };
    if let Some(method) = method.filter(|m| !undeclared(*m)) {
        // A task is named by the id in the body, which is what routes it; the header is there
        // for intermediaries, and mcpx is the intermediary on this hop. FastMCP's task client
        // sends none on `tasks/*`: a missing one is taken (and counted), a mismatched one never.
        let by_task = method.routed_by() == RoutedBy::TaskId;
        if by_task && headers.get(&NAME_HEADER).is_none() {
            metrics::tolerated("mcp_name_missing", method.as_str());
        } else {
            agrees(headers, &NAME_HEADER, method.target(params), true, true)?;
        }
    }
    if method == Some(Method::ToolsCall) {
        let tool = Method::ToolsCall.target(params).unwrap_or_default();
        if let Some(header_params) = door.gateway.tool_header_params(client, tool).await {
            let arguments = params
                .and_then(|p| p.member("arguments"))
                .unwrap_or(&Value::Null);
            // Like every mirrored header, a parameter's is sent once: a second line would be
            // what an intermediary reads while mcpx checked the first.
            for param in &header_params {
                let name = param.header_name();
                if headers.get_all(name.as_str()).iter().nth(1).is_some() {
                    return Err(format!("{name} is sent more than once"));
                }
            }
            let lookup = |name: &str| headers.get(name).map(|v| v.as_bytes().trim_ascii());
            mcpheaders::check_params(&header_params, arguments, lookup)?;
        }
    }
    Ok(())
}

fn check_notification_headers(
    headers: &HeaderMap,
    notification: &Notification,
) -> Result<(), String> {
    let version = envelope::declared_version(notification.params.as_ref()).and_then(Value::as_str);
    if version.is_some() {
        agrees(headers, &PROTOCOL_VERSION_HEADER, version, false, false)?;
    } else {
        single(headers, &PROTOCOL_VERSION_HEADER)?;
    }
    agrees(
        headers,
        &METHOD_HEADER,
        Some(&notification.method),
        false,
        false,
    )
}

/// Runs a request under the lifetime of its HTTP exchange: closing the stream cancels it.
async fn run(
    door: &FrontDoor,
    client: &Arc<Client>,
    request: Request,
    caller: Arc<Identity>,
) -> Response<Body> {
    let mut exchange = Exchange::new(caller);
    exchange.answer_cancelled_at(client.closing.clone());
    let cancel = exchange.start(&door.gateway, client, request);
    exchange.cancel_on_disconnect(cancel);
    exchange
        .reply(false, status::modern_status, door.options.sse_keep_alive)
        .await
}
