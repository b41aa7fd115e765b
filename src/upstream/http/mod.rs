//! A remote upstream: an MCP server reached over Streamable HTTP, in its own era.
//!
//! Requests go out as POSTs on a small pool of kept-alive HTTP/1.1 connections (`connection`:
//! hyper's client on smol, TLS by rustls with the Mozilla roots), with the server's token
//! (`authorization`); the handshake and what the server's notifications mean are
//! [`super::client`]'s. A response may be JSON or an event stream that carries the request's
//! progress first (`streams` reads it, and resumes it when a legacy server closes it early).
//! Legacy servers get `initialize`, their `Mcp-Session-Id` on every request (an expired session
//! is re-initialized once, transparently), a GET stream for their notifications, and
//! `notifications/cancelled` for cancellation. Modern servers get the `_meta` envelope and the
//! mirrored headers on every request (`headers`), including `Mcp-Param-*` from the tools'
//! `x-mcp-header` annotations; closing the request's stream cancels it, and the
//! `subscriptions/listen` the gateway keeps open to them carries their notifications.

mod authorization;
mod detached;
mod headers;
mod streams;

use detached::Detached;
use headers::trace_headers;

use super::asks::{self, Askers};
use super::auth::bearer;
use super::auth::discovery::{challenge_of, Challenge};
use super::auth::store::Slot;
use super::auth::Authorizer;
use super::chatter::Chatter;
use super::client::{self, FirstTry, Wire};
use super::event_stream::EventStream;
use super::task_progress::{self, KeptProgress};
use super::{Caller, Event, Handshake, LinkId};
use crate::cancel::Cancel;
use crate::config::{ServerSettings, UpstreamEra};
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{self, ErrorObject, Id, Message, Outgoing, Response};
use crate::mcpheaders::{HeaderParam, SESSION_HEADER};
use crate::net::client::Pool;
use crate::protocol::envelope;
use crate::protocol::{self, Era, Notice, Revision};
use crate::sync::lock;
use async_channel::Sender;
use hashbrown::HashMap;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(super) type Reply = Result<Value, ErrorObject>;

/// How long the handshake waits for a legacy server's GET stream to open.
const STREAM_OPEN_PATIENCE: Duration = Duration::from_secs(5);

/// The largest message (a JSON body, or one event) taken from a remote server: room for big
/// results such as images, but a bound, so a broken or hostile server cannot exhaust memory.
pub(crate) const MAX_UPSTREAM_MESSAGE: usize = 64 * 1024 * 1024;

/// A remote upstream.
pub struct HttpUpstream {
    name: String,
    /// Which link this is, for the events it reports.
    link: LinkId,
    era: Mutex<Era>,
    era_choice: UpstreamEra,
    session: Mutex<Option<String>>,
    /// Connections to the endpoint, with the configured headers.
    pool: Arc<Pool>,
    next_id: AtomicI64,
    timeout: Duration,
    events: Sender<Event>,
    closed: Cancel,
    /// The `x-mcp-header` annotations of the server's tools, by its own tool name.
    header_params: Mutex<HashMap<String, Vec<HeaderParam>>>,
    /// The calls in flight whose clients can take the server's own requests.
    askers: Askers,
    /// Caps what the server says besides its answers.
    chatter: Chatter,
    /// The progress of the tasks that report it past the requests that made them.
    task_progress: KeptProgress,
    /// The server's tokens, unless the configured headers carry an `Authorization` of their own.
    auth: Option<Authorizer>,
    /// The server's last refusal asked for a login.
    needs_login: AtomicBool,
    /// Fired when the legacy GET stream's answer arrived.
    stream_opened: Cancel,
    /// A POST was refused with a 4xx that is not JSON-RPC: the server may speak HTTP+SSE.
    posts_refused: AtomicBool,
    /// The legacy revision its `initialize` chose: sent as `MCP-Protocol-Version` on every
    /// request after it, as 2025-06-18 and later ask of a client.
    legacy_version: Mutex<Option<Revision>>,
}

impl std::fmt::Debug for HttpUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold secrets: never printed.
        f.debug_struct("HttpUpstream")
            .field("name", &self.name)
            .field("uri", self.pool.uri())
            .finish_non_exhaustive()
    }
}

/// What one POST brought back.
enum Answer {
    /// 202: nothing to read.
    Accepted,
    /// The response to the request.
    Reply(Reply),
    /// The server no longer knows the session (404): initialize again.
    SessionGone,
    /// The server refused the token sent (401), or asked for one, with this challenge.
    Unauthorized(Option<String>, Challenge),
    /// The token lacks a scope the request needs (403 `insufficient_scope`): a login for more.
    InsufficientScope(Option<String>),
}

impl Wire for HttpUpstream {
    fn set_era(&self, era: Era) {
        *lock(&self.era) = era;
        // A new handshake, in either era, chooses its revision anew.
        *lock(&self.legacy_version) = None;
        if era == Era::Legacy {
            // A new legacy handshake starts a new session.
            *lock(&self.session) = None;
        }
    }

    async fn send(&self, method: &str, params: Option<Value>) -> Reply {
        self.call(method, params, &Cancel::new(), Caller::default())
            .await
    }

    async fn deliver(&self, method: &str, params: Option<Value>) {
        self.detached().notify(method, params).await
    }

    fn needs_login(&self) -> bool {
        Self::needs_login(self)
    }
}

impl HttpUpstream {
    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Prepares the upstream (nothing is sent until [`HttpUpstream::handshake`]).
    pub fn new(
        name: &str,
        link: LinkId,
        server: ServerSettings<'_>,
        credentials: Slot,
        events: Sender<Event>,
    ) -> Result<Arc<Self>, String> {
        let (pool, auth) = Authorizer::reach(name, server, credentials)?;
        Ok(Arc::new(HttpUpstream {
            name: name.to_owned(),
            link,
            era: Mutex::new(Era::Legacy),
            era_choice: server.era,
            session: Mutex::default(),
            pool: Arc::new(pool),
            next_id: AtomicI64::new(1),
            timeout: server.timeout(),
            events,
            closed: Cancel::new(),
            header_params: Mutex::default(),
            askers: Askers::default(),
            chatter: Chatter::new(name, "log messages or notifications"),
            task_progress: KeptProgress::default(),
            auth,
            needs_login: AtomicBool::new(false),
            stream_opened: Cancel::new(),
            posts_refused: AtomicBool::new(false),
            legacy_version: Mutex::default(),
        }))
    }

    /// A legacy request's headers: its session, if the server issued one, and the revision
    /// its `initialize` chose, once it did.
    pub(super) fn legacy_headers(&self, headers: &mut HeaderMap) -> Result<(), String> {
        if let Some(session) = lock(&self.session).clone() {
            let session = HeaderValue::try_from(session).map_err(|e| e.to_string())?;
            headers.insert(SESSION_HEADER, session);
        }
        if let Some(version) = *lock(&self.legacy_version) {
            let version = HeaderValue::from_static(version.as_str());
            headers.insert(crate::mcpheaders::PROTOCOL_VERSION_HEADER, version);
        }
        Ok(())
    }

    fn is_modern(&self) -> bool {
        *lock(&self.era) == Era::Modern
    }

    /// Handshakes in the configured era, `server/discover` first in `auto` (see
    /// [`super::client`] for why), then follows a legacy server's notifications on its session's
    /// GET stream (a modern server's come on the listens the gateway keeps open).
    pub async fn handshake(self: &Arc<Self>, within: Duration) -> Result<Handshake, String> {
        let handshake =
            client::handshake(&**self, self.era_choice, FirstTry::Discover, within).await?;
        // A legacy server that issued a session may send a call's question on its GET stream:
        // it is ready once that stream is open (or refused), so that no question is lost. One
        // that issued none is served sessionless at once, as the transport allows: there is no
        // session stream to open.
        if !self.is_modern() && lock(&self.session).is_some() {
            self.follow_notifications();
            smol::future::or(self.stream_opened.cancelled(), async {
                smol::Timer::after(STREAM_OPEN_PATIENCE).await;
            })
            .await;
        }
        Ok(handshake)
    }

    /// Whether the server's last refusal asked for a login.
    pub fn needs_login(&self) -> bool {
        self.needs_login.load(Ordering::Relaxed)
    }

    /// Whether the server refused a POST with a 4xx that is not JSON-RPC: where the
    /// specification's backwards-compatibility procedure tries the HTTP+SSE transport.
    pub fn refused_posts(&self) -> bool {
        self.posts_refused.load(Ordering::Relaxed)
    }

    /// A new legacy session, once the server forgot the old one. A trait object, since the
    /// handshake sends through [`HttpUpstream::call`], which calls this.
    fn initialize_again(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Handshake, String>> + Send + '_>> {
        Box::pin(client::initialize(self))
    }

    /// Sends a request and waits for its answer, unless `cancel` fires or the timeout passes
    /// first; then the server is told (legacy) or the request's stream is closed (modern).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: &Cancel,
        caller: Caller,
    ) -> Reply {
        let reply = self.call(method, params, cancel, caller).await;
        if method == protocol::Method::ToolsList.as_str() {
            if let Ok(result) = &reply {
                self.learn_header_params(result);
            }
        }
        reply
    }

    async fn call(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: &Cancel,
        caller: Caller,
    ) -> Reply {
        let mut params = params;
        for attempt in 0..2 {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if caller.progress.is_some() {
                // The server reports progress on this request's own stream, under a token of
                // mcpx's; the sink puts the caller's back.
                client::put_progress_token(&mut params, &client::progress_token(id));
            }
            if let Some(asks) = &caller.asks {
                self.askers.enter(id, asks.clone());
            }
            let exchange = self.exchange(id, method, params.as_ref(), &caller);
            let timed_out = Cancel::new();
            let timeout = caller.timeout.unwrap_or(self.timeout);
            let answer = smol::future::or(cancel.run(exchange), async {
                crate::deadline::sleep(timeout).await;
                timed_out.cancel();
                None
            })
            .await;
            self.askers.leave(id);
            match answer {
                Some(Ok(Answer::Reply(reply))) => {
                    if method == "initialize" {
                        let chosen = reply
                            .as_ref()
                            .ok()
                            .and_then(|r| r.member("protocolVersion"));
                        let chosen = chosen.and_then(Value::as_str).and_then(Revision::parse);
                        *lock(&self.legacy_version) = chosen;
                    }
                    // Only a sink that outlives its request is kept, so only that one is copied.
                    let sink = caller.progress.as_ref().filter(|sink| sink.after.is_some());
                    let sink = sink.map(|sink| (client::progress_token(id), sink.clone()));
                    let about = task_progress::named_by(method, params.as_ref());
                    let answered = reply.as_ref().ok();
                    self.task_progress
                        .request_ended(method, about, sink, answered);
                    return reply;
                }
                Some(Ok(Answer::Accepted)) => {
                    return Err(Failure::gone(
                        &self.name,
                        "accepted a request without answering it",
                    )
                    .into())
                }
                Some(Ok(Answer::SessionGone))
                    if attempt == 0 && method != protocol::Method::Initialize.as_str() =>
                {
                    tracing::info!(server = %self.name, "the upstream forgot its session; initializing again");
                    if let Err(e) = self.initialize_again().await {
                        return Err(Failure::gone(&self.name, format!("failed: {e}")).into());
                    }
                }
                Some(Ok(Answer::SessionGone)) => break,
                Some(Ok(Answer::InsufficientScope(scope))) => {
                    return Err(self.step_up(scope.as_deref()).into())
                }
                Some(Ok(Answer::Unauthorized(used, challenge))) => {
                    match self
                        .authorize_again(used.as_deref(), attempt, &challenge)
                        .await
                    {
                        Ok(()) => continue,
                        Err(failure) => return Err(failure.into()),
                    }
                }
                Some(Err(e)) => {
                    return Err(Failure::gone(&self.name, format!("failed: {e}")).into())
                }
                None => {
                    let failure = if timed_out.is_cancelled() {
                        Failure::Timeout {
                            server: self.name.clone(),
                            after: timeout,
                        }
                    } else {
                        Failure::Cancelled
                    };
                    // A modern request's stream was closed by dropping it; a legacy one is told.
                    if !self.is_modern() {
                        let reason = failure.reason_for_upstream();
                        self.notify(
                            Notice::Cancelled.as_str(),
                            Some(json!({"requestId": id, "reason": reason})),
                        );
                    }
                    return Err(failure.into());
                }
            }
        }
        Err(Failure::gone(&self.name, "lost its session").into())
    }

    /// The request's body, with the modern envelope when the server is modern.
    fn body(&self, id: i64, method: &str, params: Option<&Value>) -> Vec<u8> {
        let id = Id::Number(id);
        match self.is_modern() {
            true => jsonrpc::to_body(&Outgoing {
                id: &id,
                method,
                params: Some(&envelope::Wrapped(params)),
            }),
            false => jsonrpc::to_body(&Outgoing {
                id: &id,
                method,
                params,
            }),
        }
    }

    /// Sends a notification (legacy servers only; modern ones take none over HTTP).
    pub fn notify(&self, method: &str, params: Option<Value>) {
        if self.is_modern() {
            return;
        }
        let this = self.detached();
        let method = method.to_owned();
        crate::runtime::spawn(async move { this.notify(&method, params).await }).detach();
    }

    /// A handle on the same server for a background task (shares the pool and the session).
    fn detached(&self) -> Detached {
        let mut legacy = HeaderMap::new();
        if !self.is_modern() {
            // A session id is a header value: it came as one.
            let _ = self.legacy_headers(&mut legacy);
        }
        Detached {
            name: self.name.clone(),
            pool: Arc::clone(&self.pool),
            legacy,
            token: self.auth.as_ref().and_then(Authorizer::current_token),
        }
    }

    /// POSTs the request `id` and reads what comes back until its answer.
    async fn exchange(
        &self,
        id: i64,
        method: &str,
        params: Option<&Value>,
        caller: &Caller,
    ) -> Result<Answer, String> {
        // Room for the mirrored, trace and auth headers and the pool's defaults, grown once.
        let mut headers = HeaderMap::with_capacity(12);
        match self.is_modern() {
            true => self.mirror_headers(method, params, &mut headers),
            false => self.legacy_headers(&mut headers)?,
        }
        trace_headers(params, &mut headers);
        let token = match &self.auth {
            Some(auth) => auth.token().await,
            None => None,
        };
        bearer(&mut headers, token.as_deref())?;
        let request = self
            .pool
            .build(Method::POST, self.body(id, method, params), headers)?;
        let (mut link, response) = self.pool.send(request).await?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED && self.auth.is_some() {
            return Ok(Answer::Unauthorized(token, challenge_of(&response)));
        }
        if status == StatusCode::FORBIDDEN && self.auth.is_some() {
            let challenge = challenge_of(&response);
            if challenge.error.as_deref() == Some("insufficient_scope") {
                return Ok(Answer::InsufficientScope(challenge.scope));
            }
        }
        // Let in: whatever refusal came before is over.
        self.needs_login.store(false, Ordering::Relaxed);
        if let Some(session) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            *lock(&self.session) = Some(session.to_owned());
        }
        let is_stream = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut body = response.into_body();
        if status == StatusCode::ACCEPTED {
            self.pool.recycle(link);
            return Ok(Answer::Accepted);
        }
        if status == StatusCode::NOT_FOUND && !self.is_modern() && lock(&self.session).is_some() {
            return Ok(Answer::SessionGone);
        }
        if !is_stream {
            let bytes = link
                .drive(async |_| Limited::new(body, MAX_UPSTREAM_MESSAGE).collect().await)
                .await
                .map_err(|e| format!("reading the response failed: {e}"))?
                .to_bytes();
            self.pool.recycle(link);
            let Some(messages) = jsonrpc::parse_body(&bytes) else {
                if status.is_client_error() {
                    self.posts_refused.store(true, Ordering::Relaxed);
                }
                return Err(format!("HTTP {status} with a body that is not JSON-RPC"));
            };
            for message in messages {
                if let Some(reply) = self.receive(message, id, caller) {
                    return Ok(Answer::Reply(reply));
                }
            }
            return Err(format!("HTTP {status} without the answer to request {id}"));
        }
        let mut events = EventStream::new(MAX_UPSTREAM_MESSAGE);
        let answered = link
            .drive(async |_| self.read_events(&mut body, &mut events, id, caller).await)
            .await?;
        // The stream ends with the answer, and the connection may serve again; one whose server
        // kept the stream open is closed by dropping the body, before anyone else can take it.
        drop(body);
        self.pool.recycle(link);
        match answered {
            Some(reply) => Ok(Answer::Reply(reply)),
            None => self.resume(events, id, caller).await.map(Answer::Reply),
        }
    }

    /// Handles one message from the server on the stream of the call `id` (0 for the session's
    /// GET stream); returns the reply if it answers `id`.
    fn receive(
        &self,
        message: Result<Message, Box<Response>>,
        id: i64,
        caller: &Caller,
    ) -> Option<Reply> {
        match message {
            Ok(Message::Response(Response {
                id: Some(Id::Number(n)),
                outcome,
                ..
            })) if n == id => Some(outcome),
            Ok(Message::Response(Response {
                id: None,
                outcome: Err(error),
                ..
            })) => Some(Err(error)),
            Ok(Message::Notification(n)) => {
                let params = n.params.unwrap_or(Value::Null);
                self.task_progress.heard(&n.method, &params);
                let frame = super::frame_of(&n.method, &params);
                if let (Some((notice, _)), Some(sink)) = (frame, &caller.frames) {
                    // On the stream's own request: its frames, in order.
                    if sink.try_send((notice, params)).is_err() {
                        tracing::warn!(server = %self.name, "a stream's reader fell behind: a frame was dropped");
                    }
                } else if n.method == Notice::Progress {
                    match &caller.progress {
                        Some(sink) => sink.forward(params),
                        // On the session's GET stream: a task's, made by a request now answered.
                        None => {
                            let token = params.member("progressToken").and_then(Value::as_str);
                            let token = token.unwrap_or_default().to_owned();
                            self.task_progress.forward(&token, params);
                        }
                    }
                } else if !self.chatter.admit() {
                    // Said too much: dropped, and counted.
                } else if n.method == Notice::Message
                    && client::log_to_caller(&self.name, caller.log.as_ref(), &params)
                {
                    // On the call's own stream: the caller's.
                } else if let Some(event) =
                    client::event_of(&self.name, self.link, &n.method, &params)
                {
                    let _ = self.events.try_send(event);
                }
                None
            }
            Ok(Message::Request(request)) => {
                // On a call's stream the ask is that call's; on the GET stream, nothing says.
                let asker = (caller.asks.as_ref())
                    .and_then(|sink| self.askers.of(sink))
                    .or_else(|| self.askers.newest());
                let this = self.detached();
                let answer = asks::answer(request, asker, &self.name);
                crate::runtime::spawn(async move {
                    let response = match answer {
                        asks::Answer::Now(response) => response,
                        asks::Answer::Later(waiting) => waiting.response().await,
                    };
                    if let Err(e) = this.post(&response.to_value(), HeaderMap::new()).await {
                        tracing::warn!(server = %this.name, "could not deliver an answer to the server: {e}");
                    }
                })
                .detach();
                None
            }
            _ => None,
        }
    }

    /// Ends a legacy session politely, then stops.
    pub async fn shutdown(&self, grace: Duration) {
        let session = lock(&self.session).clone();
        if let (false, Some(_)) = (self.is_modern(), session) {
            let mut headers = HeaderMap::new();
            let _ = self.legacy_headers(&mut headers);
            let delete = async {
                let mut sender = self.pool.detached().await?;
                let request = self.pool.build(Method::DELETE, String::new(), headers)?;
                sender
                    .send_request(request)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            };
            let _ = smol::future::or(delete, async {
                smol::Timer::after(grace).await;
                Ok(())
            })
            .await;
        }
        self.stop();
    }

    /// Stops following the server; requests in flight end with their connections.
    pub fn stop(&self) {
        self.closed.cancel();
        self.pool.clear();
    }

    /// Whether it has not been stopped (a remote server's health shows in its answers).
    pub fn is_alive(&self) -> bool {
        !self.closed.is_cancelled()
    }
}
