//! A legacy POST, GET or DELETE (2024-11-05 … 2025-11-25 over Streamable HTTP).
//!
//! `initialize` mints a session; a request naming an unknown, expired or ended session is 404,
//! which tells the client to initialize again; a request with no session is served statelessly.
//! In a session the revision negotiated at `initialize` governs, a dropped connection is not a
//! cancellation (the legacy revisions say it SHOULD NOT be read as one) and
//! `notifications/cancelled` is; without a session the disconnect remains the only signal.

use super::exchange::Exchange;
use super::forward;
use super::sessions::{Refused, Session};
use super::{accepted, json_response, rpc_error, sse, Body, FrontDoor};
use crate::access::Identity;
use crate::cluster::SealedSession;
use crate::gateway::{Client, Gateway, Inbound, Received, ViewId};
use crate::json::Member;
use crate::jsonrpc::{self, ErrorObject, Parsed, Request, INTERNAL_ERROR, INVALID_REQUEST};
use crate::mcpheaders::{PROTOCOL_VERSION_HEADER, SESSION_HEADER};
use crate::metrics::{self, Refusal};
use crate::outbox;
use crate::protocol::{envelope, Era, Revision};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use std::sync::Arc;

/// What the session header names.
enum Named {
    /// No session header: stateless.
    Nothing,
    /// A live session.
    Live(Arc<Session>),
    /// An answer already decided (unknown session: 404).
    Refusal(Response<Body>),
}

fn named_session(door: &FrontDoor, view: ViewId, headers: &HeaderMap) -> Named {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Named::Nothing;
    };
    let live = value
        .to_str()
        .ok()
        .and_then(|id| door.sessions.get(id.trim(), view));
    match live {
        Some(session) => Named::Live(session),
        None => Named::Refusal(session_not_found()),
    }
}

/// The answer to a session id that names no session of this caller's at this door.
fn session_not_found() -> Response<Body> {
    rpc_error(
        StatusCode::NOT_FOUND,
        ErrorObject::new(
            INVALID_REQUEST,
            "Session not found: it ended or expired; send initialize again",
        ),
    )
}

/// The revision a legacy request is served under: the session's, else the header's, else
/// 2025-03-26. A header naming no legacy revision mcpx implements is -32022 with the list.
fn revision_of(
    headers: &HeaderMap,
    session: Option<&Session>,
) -> Result<Revision, Box<Response<Body>>> {
    let header = match headers.get(PROTOCOL_VERSION_HEADER) {
        None => None,
        Some(value) => {
            let text = String::from_utf8_lossy(value.as_bytes()).trim().to_owned();
            match Revision::parse(&text).filter(|r| r.era() == Era::Legacy) {
                Some(revision) => Some(revision),
                None => {
                    metrics::refused(Refusal::unsupported_version);
                    let error = envelope::unsupported_version(&text, Revision::legacy_strings());
                    return Err(Box::new(rpc_error(StatusCode::BAD_REQUEST, error)));
                }
            }
        }
    };
    // In a session, the negotiated revision governs even if the header names another.
    let negotiated = session.and_then(|s| s.client.revision());
    Ok(negotiated
        .or(header)
        .unwrap_or(Revision::ASSUMED_WITHOUT_NEGOTIATION))
}

pub(super) async fn post(
    door: &FrontDoor,
    view: ViewId,
    path: &str,
    headers: &HeaderMap,
    body: Parsed,
    caller: Arc<Identity>,
) -> Response<Body> {
    let session = match named_session(door, view, headers) {
        Named::Refusal(response) => return response,
        Named::Live(session) if !session.belongs_to(&caller) => return session_not_found(),
        Named::Live(session) => Some(session),
        Named::Nothing => None,
    };
    let revision = match revision_of(headers, session.as_deref()) {
        Ok(revision) => revision,
        Err(response) => return *response,
    };
    let frame = match body.into_frame() {
        Ok(frame) => frame,
        Err(rejection) => return json_response(StatusCode::BAD_REQUEST, &rejection),
    };
    let client = session.as_deref().map(|session| &*session.client);
    let inbound = match door.gateway.receive(client, Some(revision), frame) {
        Ok(Received::One(inbound)) => inbound,
        Ok(Received::Batch(elements)) => {
            return batch(door, view, session, revision, elements, caller).await
        }
        Err(refusal) => return rpc_error(StatusCode::BAD_REQUEST, refusal),
    };
    match inbound {
        Inbound::Initialize(request) => {
            initialize(door, view, session.is_some(), request, &caller)
        }
        Inbound::Run(request) => {
            // A task of this session that another replica holds (its id says which) is served
            // there: any replica serves the session.
            let holder = (session.is_some() && !headers.contains_key(forward::FORWARDED))
                .then(|| door.gateway.resumed_elsewhere(request.params.as_ref()))
                .flatten();
            if let Some(at) = holder {
                return forward::to_holder(&at, path, headers, &request, Era::Legacy).await;
            }
            let mut exchange = Exchange::new(caller);
            let client = serving_client(door, view, session.as_ref(), revision, &mut exchange);
            let cancel = exchange.start(&door.gateway, &client, request);
            if session.is_none() {
                exchange.cancel_on_disconnect(cancel);
            }
            exchange
                .reply(false, |_| StatusCode::OK, door.options.sse_keep_alive)
                .await
        }
        Inbound::Answer(response) => json_response(StatusCode::BAD_REQUEST, &response),
        Inbound::Stray => rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorObject::new(
                INVALID_REQUEST,
                "Invalid Request: no request of mcpx's in this session awaits this response (unknown id, or answered already)",
            ),
        ),
        Inbound::Done => accepted(),
    }
}

/// The client a request is served as: its session's, or, without one, a client of its own for
/// this exchange alone, closed when the exchange ends.
fn serving_client(
    door: &FrontDoor,
    view: ViewId,
    session: Option<&Arc<Session>>,
    revision: Revision,
    exchange: &mut Exchange,
) -> Arc<Client> {
    if let Some(session) = session {
        return Arc::clone(&session.client);
    }
    let client = door
        .gateway
        .open_client("http", view, outbox::Sender::nowhere());
    client.set_revision(revision);
    exchange.hold(ClosesOnDrop {
        gateway: Arc::clone(&door.gateway),
        client: Arc::clone(&client),
    });
    client
}

/// Closes a sessionless request's client when its exchange is over.
struct ClosesOnDrop {
    gateway: Arc<Gateway>,
    client: Arc<Client>,
}

impl Drop for ClosesOnDrop {
    fn drop(&mut self) {
        self.gateway.close_client(&self.client);
    }
}

/// `initialize` mints a session (never inside one, and never in a batch).
fn initialize(
    door: &FrontDoor,
    view: ViewId,
    in_session: bool,
    request: Request,
    caller: &Arc<Identity>,
) -> Response<Body> {
    if in_session {
        let error = ErrorObject::new(
            INVALID_REQUEST,
            "Invalid Request: this session is initialized already",
        );
        return json_response(
            StatusCode::BAD_REQUEST,
            &jsonrpc::Response::error(Some(request.id), error),
        );
    }
    let (client, outbound) = match door.sessions.prepare(view) {
        Ok(prepared) => prepared,
        Err(refused) => return refused_session(refused),
    };
    let answer = door.gateway.initialize(&client, &request);
    if answer.outcome.is_err() {
        door.gateway.close_client(&client);
        return json_response(StatusCode::OK, &answer);
    }
    let mut negotiated = SealedSession::new(
        client
            .revision()
            .unwrap_or(Revision::LATEST_LEGACY)
            .as_str(),
        client.capabilities(),
        request
            .params
            .as_ref()
            .and_then(|p| p.member("clientInfo"))
            .cloned(),
        door.gateway.profile_name(view),
    );
    negotiated.owner = Some(caller.owner_key());
    let session = match door.sessions.insert(client, outbound, &negotiated) {
        Ok(session) => session,
        Err(refused) => return refused_session(refused),
    };
    door.gateway.live().note_caller(&session.client, caller);
    let mut response = json_response(StatusCode::OK, &answer);
    if let Ok(id) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, id);
    }
    response
}

fn refused_session(refused: Refused) -> Response<Body> {
    if let Refused::Full(_) = refused {
        metrics::refused(Refusal::max_sessions);
    }
    let message = match refused {
        Refused::Full(max) => format!("the daemon holds its maximum of {max} sessions (transport.maxSessions); end one with DELETE or try later"),
        Refused::NoRandomness => "the system's random source failed, so no unguessable session id can be minted".to_owned(),
    };
    rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorObject::new(INTERNAL_ERROR, message),
    )
}

/// A 2025-03-26 batch: elements run concurrently; notifications and responses need no answer,
/// so a batch of only those is 202; `initialize` is refused as its element and mints nothing.
async fn batch(
    door: &FrontDoor,
    view: ViewId,
    session: Option<Arc<Session>>,
    revision: Revision,
    elements: Vec<Inbound>,
    caller: Arc<Identity>,
) -> Response<Body> {
    let mut exchange = Exchange::new(caller);
    let client = serving_client(door, view, session.as_ref(), revision, &mut exchange);
    for element in elements {
        match element {
            Inbound::Answer(response) => exchange.answer_now(response),
            // The core never puts `initialize` in a batch: it refuses it there.
            Inbound::Run(request) | Inbound::Initialize(request) => {
                let cancel = exchange.start(&door.gateway, &client, request);
                if session.is_none() {
                    exchange.cancel_on_disconnect(cancel);
                }
            }
            Inbound::Done | Inbound::Stray => {}
        }
    }
    if exchange.expected() == 0 {
        return accepted();
    }
    exchange
        .reply(true, |_| StatusCode::OK, door.options.sse_keep_alive)
        .await
}

/// GET opens a session's notification stream: one per session, closed by DELETE.
pub(super) async fn get(
    door: &FrontDoor,
    view: ViewId,
    headers: &HeaderMap,
    caller: &Arc<Identity>,
) -> Response<Body> {
    let modern_header = headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| Revision::date_is_modern(v.trim()));
    if modern_header || headers.get(SESSION_HEADER).is_none() {
        return method_not_allowed("GET opens a legacy session's notification stream; 2026-07-28 uses subscriptions/listen");
    }
    let session = match named_session(door, view, headers) {
        Named::Live(session) if !session.belongs_to(caller) => return session_not_found(),
        Named::Live(session) => session,
        Named::Refusal(response) => return response,
        Named::Nothing => unreachable!("the header was checked above"),
    };
    if !session.open_stream() {
        // Each message goes on exactly one stream; a second would silently take half of them.
        return rpc_error(
            StatusCode::CONFLICT,
            ErrorObject::new(INVALID_REQUEST, "this session's GET stream is open already"),
        );
    }
    // Nothing is redelivered: what arrived while no stream was open is dropped.
    while session.outbound.try_recv().is_some() {}
    let (response, events) = sse::stream();
    let keep_alive = door.options.sse_keep_alive;
    let registered = door.gateway.live().open_get_stream(&session.client);
    crate::runtime::spawn(async move {
        loop {
            let next = smol::future::or(
                async { Some(session.outbound.recv().await.ok()) },
                smol::future::or(
                    async {
                        // The session ended, or the client closed the stream: noticed as it
                        // happens, so the session can open a new one at once.
                        smol::future::or(session.ended.cancelled(), events.gone()).await;
                        Some(None)
                    },
                    async {
                        smol::Timer::after(keep_alive).await;
                        None
                    },
                ),
            )
            .await;
            let delivered = match next {
                Some(Some(notification)) => {
                    registered.sent();
                    events.try_message(&notification)
                }
                Some(None) => break,
                None => events.keep_alive().await,
            };
            if !delivered {
                break;
            }
        }
        session.close_stream();
    })
    .detach();
    response
}

/// DELETE ends a session: 204; no session header is 400 (mcpx does allow termination, so 405
/// would be wrong); an unknown session is 404.
pub(super) fn delete(
    door: &FrontDoor,
    view: ViewId,
    path: &str,
    headers: &HeaderMap,
    caller: &Arc<Identity>,
) -> Response<Body> {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorObject::new(
                INVALID_REQUEST,
                "DELETE needs the Mcp-Session-Id of the session to end",
            ),
        );
    };
    let id = value.to_str().unwrap_or_default().trim();
    let ended = if headers.contains_key(forward::FORWARDED) {
        // A peer ended it: refused here too, whether or not this replica holds it.
        door.sessions.end_sealed(id)
    } else {
        let owned = door
            .sessions
            .get(id, view)
            .is_some_and(|s| s.belongs_to(caller));
        let ended = owned && door.sessions.end(id).is_some();
        if ended && door.sessions.sealed() {
            forward::tell_peers(&door.options.peers, path, headers);
        }
        ended
    };
    match ended {
        true => {
            let mut response = accepted();
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        }
        false => rpc_error(
            StatusCode::NOT_FOUND,
            ErrorObject::new(INVALID_REQUEST, "Session not found"),
        ),
    }
}

pub(super) fn method_not_allowed(why: &str) -> Response<Body> {
    let mut response = rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorObject::new(INVALID_REQUEST, format!("Method Not Allowed: {why}")),
    );
    response.headers_mut().insert(
        http::header::ALLOW,
        HeaderValue::from_static("POST, GET, DELETE"),
    );
    response
}
