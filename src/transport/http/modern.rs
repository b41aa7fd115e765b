//! A 2026-07-28 POST: exactly one request or notification, its mirrored headers checked against
//! the body, answered with JSON or, when it produces notifications first, an event stream. There
//! are no sessions (an `Mcp-Session-Id` is ignored), no batches, and closing the stream cancels.

use super::{
    accepted, json_response, rpc_error, sse, status, watch_disconnect, Body, FrontDoor,
    PROTOCOL_VERSION_HEADER,
};
use crate::cancel::Cancel;
use crate::gateway::RequestContext;
use crate::jsonrpc::{
    self, ErrorObject, Message, Notification, Request, HEADER_MISMATCH, INVALID_REQUEST,
};
use crate::mcpheaders;
use crate::protocol::envelope;
use crate::registry::Outcome;
use http::{HeaderMap, Response, StatusCode};
use serde_json::Value;
use smol::net::TcpStream;

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

pub(super) async fn post(
    door: &FrontDoor,
    headers: &HeaderMap,
    body: Value,
    socket: TcpStream,
) -> Response<Body> {
    if body.is_array() {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorObject::new(
                INVALID_REQUEST,
                "Invalid Request: MCP 2026-07-28 has no batches",
            ),
        );
    }
    let message = match jsonrpc::parse_message(body) {
        Ok(message) => message,
        Err(rejection) => return json_response(StatusCode::BAD_REQUEST, &rejection.to_value()),
    };
    match message {
        Message::Request(request) => {
            if let Err(why) = check_request_headers(door, headers, &request).await {
                let error = ErrorObject::new(HEADER_MISMATCH, format!("Header mismatch: {why}"));
                return json_response(StatusCode::BAD_REQUEST, &jsonrpc::Response::error(Some(request.id), error).to_value());
            }
            run(door, request, socket).await
        }
        // No header is required on a notification, but any it sends must agree with it.
        Message::Notification(notification) => match check_notification_headers(headers, &notification) {
            Ok(()) => accepted(),
            Err(why) => rpc_error(StatusCode::BAD_REQUEST, ErrorObject::new(HEADER_MISMATCH, format!("Header mismatch: {why}"))),
        },
        Message::Response(_) => rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorObject::new(INVALID_REQUEST, "Invalid Request: MCP 2026-07-28 servers send no requests, so clients POST no responses"),
        ),
    }
}

/// The one value of a header (surrounding whitespace stripped), `None` if absent; a header sent
/// twice or with bytes a header may not carry is an error.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h [u8]>, String> {
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

/// A header that must equal a body string, compared after decoding the Base64 form when
/// `decoded` is set.
fn agrees(
    headers: &HeaderMap,
    name: &str,
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
        String::from_utf8_lossy(raw).into_owned()
    };
    if Some(text.as_str()) != body {
        return Err(format!("{name} {text:?} differs from the body's {body:?}"));
    }
    Ok(())
}

async fn check_request_headers(
    door: &FrontDoor,
    headers: &HeaderMap,
    request: &Request,
) -> Result<(), String> {
    let params = request.params.as_ref();
    let version = envelope::declared_version(params).and_then(Value::as_str);
    agrees(headers, PROTOCOL_VERSION_HEADER, version, true, false)?;
    agrees(headers, METHOD_HEADER, Some(&request.method), true, false)?;
    let field = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let name = match request.method.as_str() {
        "tools/call" | "prompts/get" => Some(field("name")),
        "resources/read" => Some(field("uri")),
        _ => None,
    };
    if let Some(name) = name {
        agrees(headers, NAME_HEADER, name, true, true)?;
    }
    if request.method == "tools/call" {
        if let Some(header_params) = door
            .gateway
            .tool_header_params(field("name").unwrap_or_default())
            .await
        {
            let arguments = params
                .and_then(|p| p.get("arguments"))
                .cloned()
                .unwrap_or(Value::Null);
            let lookup = |name: &str| headers.get(name).map(|v| v.as_bytes().trim_ascii());
            mcpheaders::check_params(&header_params, &arguments, lookup)?;
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
        agrees(headers, PROTOCOL_VERSION_HEADER, version, false, false)?;
    } else {
        single(headers, PROTOCOL_VERSION_HEADER)?;
    }
    agrees(
        headers,
        METHOD_HEADER,
        Some(&notification.method),
        false,
        false,
    )
}

/// Runs a request under the lifetime of its HTTP exchange: JSON if the response comes first, an
/// event stream if a notification does.
async fn run(door: &FrontDoor, request: Request, socket: TcpStream) -> Response<Body> {
    let cancel = Cancel::new();
    // hyper drops this future when the client goes away mid-request; that is the cancellation.
    let cancel_on_drop = cancel.on_drop();
    let guard = door.gateway.registry.begin(
        door.modern.session,
        request.id.clone(),
        &request.method,
        cancel.clone(),
    );
    let watcher = smol::spawn(watch_disconnect(socket, cancel.clone()));
    let (notifications, notifications_rx) = async_channel::unbounded::<Notification>();
    let (done, done_rx) = async_channel::bounded::<Option<jsonrpc::Response>>(1);
    let context = RequestContext {
        cancel: cancel.clone(),
        notifications,
    };
    let (gateway, client) = (door.gateway.clone(), door.modern.clone());
    let cancel_on_close = cancel.clone();
    smol::spawn(async move {
        let response = cancel
            .run(gateway.handle(&client, request, &context))
            .await
            .filter(|_| !cancel.is_cancelled());
        guard.finish(if response.is_some() {
            Outcome::Answered
        } else {
            Outcome::Cancelled
        });
        let _ = done.send(response).await;
    })
    .detach();
    // Notifications are polled first: one queued before the response must precede it.
    let first = smol::future::or(
        async { Some(Ok(next_notification(&notifications_rx).await)) },
        async { done_rx.recv().await.ok().flatten().map(Err) },
    )
    .await;
    let first_notification = match first {
        // The client vanished and the request was cancelled: nothing may be written for it.
        None => return json_response(StatusCode::OK, &Value::Null),
        Some(Err(response)) => {
            return json_response(status::modern_status(&response), &response.to_value())
        }
        Some(Ok(notification)) => notification,
    };
    let (response, events) = sse::stream();
    let keep_alive = door.options.sse_keep_alive;
    smol::spawn(async move {
        let (_watcher, _cancel_on_drop) = (watcher, cancel_on_drop);
        let mut next: Option<Result<Notification, Option<jsonrpc::Response>>> =
            Some(Ok(first_notification));
        loop {
            let delivered = match next.take() {
                Some(Ok(notification)) => events.message(&notification.to_value()).await,
                Some(Err(Some(response))) => {
                    let _ = events.message(&response.to_value()).await;
                    break;
                }
                // Cancelled: the stream ends with nothing more on it.
                Some(Err(None)) => break,
                None => events.keep_alive().await,
            };
            if !delivered {
                // The client is gone: that is the cancellation.
                cancel_on_close.cancel();
                break;
            }
            next = smol::future::or(
                async { Some(Ok(next_notification(&notifications_rx).await)) },
                smol::future::or(
                    async { Some(Err(done_rx.recv().await.ok().flatten())) },
                    async {
                        smol::Timer::after(keep_alive).await;
                        None
                    },
                ),
            )
            .await;
        }
    })
    .detach();
    response
}

/// The request's next notification; a closed channel has nothing more to say, so this then
/// waits forever and the response (or the keep-alive timer) wins.
async fn next_notification(notifications: &async_channel::Receiver<Notification>) -> Notification {
    match notifications.recv().await {
        Ok(notification) => notification,
        Err(_) => smol::future::pending().await,
    }
}
