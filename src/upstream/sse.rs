//! A remote upstream on the 2024-11-05 HTTP+SSE transport, which many older remote servers still
//! speak: mcpx GETs the server's URL and keeps the event stream open; its first event,
//! `endpoint`, says where to POST; every message of mcpx's is POSTed there, one after another so
//! that they arrive in order, and every message of the server's comes on the stream.
//!
//! That is one channel each way, as on stdio, so the conversation is a [`Peer`]'s. The stream
//! ending is the server going away: pending requests fail at once and supervision starts it
//! again. The server's token goes on the GET and on every POST, and a refusal asks for a login
//! as over Streamable HTTP.

use super::auth::discovery::{challenge_of, Challenge};
use super::auth::store::Slot;
use super::auth::{bearer, Authorizer, NeedsLogin};
use super::client::{self, FirstTry};
use super::event_stream::EventStream;
use super::http::MAX_UPSTREAM_MESSAGE;
use super::peer::Peer;
use super::{Event, Handshake, LinkId};
use crate::cancel::Cancel;
use crate::config::{ServerSettings, UpstreamEra};
use crate::failure::Failure;
use crate::jsonrpc::{self, Frame, Message};
use crate::net::client::Pool;
use crate::sync::lock;
use async_channel::{Receiver, Sender};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use http_body_util::{BodyExt, Limited};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The most of a POST's answer read: the messages' answers come on the stream, so it is a
/// status line's worth ("Accepted").
const MAX_POST_ANSWER: usize = 64 * 1024;

/// A remote upstream on HTTP+SSE.
pub struct SseUpstream {
    peer: Peer,
    /// Which link this is, for the exit it reports.
    link: LinkId,
    /// The server's URL, where the stream is opened, with the configured headers.
    pool: Pool,
    /// The server's tokens, unless the configured headers carry an `Authorization` of their own.
    auth: Option<Authorizer>,
    era_choice: UpstreamEra,
    /// The server's last refusal asked for a login.
    needs_login: AtomicBool,
    /// The messages to POST, taken by the poster once the endpoint is known.
    to_send: Mutex<Option<Receiver<String>>>,
    events: Sender<Event>,
    /// Fired when mcpx stops following the server.
    closed: Cancel,
}

impl std::fmt::Debug for SseUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold secrets: never printed.
        f.debug_struct("SseUpstream")
            .field("name", &self.peer.name())
            .field("uri", self.pool.uri())
            .finish_non_exhaustive()
    }
}

impl SseUpstream {
    /// Prepares the upstream (nothing is sent until [`SseUpstream::handshake`]).
    pub fn new(
        name: &str,
        link: LinkId,
        server: ServerSettings<'_>,
        credentials: Slot,
        events: Sender<Event>,
    ) -> Result<Arc<Self>, String> {
        let (pool, auth) = Authorizer::reach(name, server, credentials)?;
        let (peer, to_send) = Peer::new(name, link, server.timeout(), events.clone());
        Ok(Arc::new(SseUpstream {
            peer,
            link,
            pool,
            auth,
            era_choice: server.era,
            needs_login: AtomicBool::new(false),
            to_send: Mutex::new(Some(to_send)),
            events,
            closed: Cancel::new(),
        }))
    }

    /// Opens the stream, waits for its endpoint, then handshakes in the configured era,
    /// `initialize` first in `auto` (an HTTP+SSE server is a legacy one, whatever it answers),
    /// all `within` its start timeout.
    pub async fn handshake(self: &Arc<Self>, within: Duration) -> Result<Handshake, String> {
        let started = std::time::Instant::now();
        let opened = smol::future::or(self.open(), async {
            smol::Timer::after(within).await;
            Err(format!("no endpoint event within {within:?}"))
        });
        let endpoint = opened.await?;
        tracing::debug!(server = %self.peer.name(), "posting to {endpoint}");
        self.start_posting(self.pool.at(endpoint));
        let left = within.saturating_sub(started.elapsed());
        client::handshake(&self.peer, self.era_choice, FirstTry::Initialize, left).await
    }

    /// The conversation with the server.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// GETs the event stream, with one retry after a refused token, and follows it in a task of
    /// its own; returns the endpoint its first event names.
    async fn open(self: &Arc<Self>) -> Result<Uri, String> {
        for attempt in 0..2 {
            let token = self.token().await;
            let mut headers = HeaderMap::new();
            let stream = HeaderValue::from_static("text/event-stream");
            headers.insert(http::header::ACCEPT, stream);
            bearer(&mut headers, token.as_deref())?;
            let mut request = self.pool.build(Method::GET, String::new(), headers)?;
            request.headers_mut().remove(http::header::CONTENT_TYPE);
            let mut sender = self.pool.detached().await?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| format!("GET failed: {e}"))?;
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED && self.auth.is_some() {
                let challenge = challenge_of(&response);
                let refused = self
                    .authorize_again(token.as_deref(), attempt, &challenge)
                    .await;
                refused.map_err(|failure| failure.to_string())?;
                continue;
            }
            if !status.is_success() {
                return Err(format!("GET answered {status}, not an event stream"));
            }
            self.let_in();
            let (found, endpoint) = async_channel::bounded(1);
            let this = Arc::clone(self);
            let follow = async move {
                let reason = this.follow(response.into_body(), found).await;
                let reason = format!("disconnected: {reason}");
                this.peer.end(reason.clone());
                tracing::warn!(server = %this.peer.name(), "upstream {reason}");
                let exited = Event::Exited {
                    link: this.link,
                    reason,
                };
                let _ = this.events.send(exited).await;
            };
            let closed = self.closed.clone();
            crate::runtime::spawn(
                async move { smol::future::or(follow, closed.cancelled()).await },
            )
            .detach();
            return endpoint
                .recv()
                .await
                .map_err(|_| "the event stream ended before its endpoint event".to_owned());
        }
        Err(self.needs_login_failure().to_string())
    }

    /// Reads the stream until it ends (returning why): the endpoint goes to `found`, messages
    /// to the peer.
    async fn follow(&self, mut body: hyper::body::Incoming, found: Sender<Uri>) -> String {
        let mut stream = EventStream::new(MAX_UPSTREAM_MESSAGE);
        while let Some(frame) = body.frame().await {
            let data = match frame.map(hyper::body::Frame::into_data) {
                Ok(Ok(data)) => data,
                Ok(Err(_)) => continue,
                Err(e) => return format!("its event stream broke: {e}"),
            };
            let events = match stream.push(&data) {
                Ok(events) => events,
                Err(e) => return format!("its event stream broke: {e}"),
            };
            for event in events {
                match event.kind.as_str() {
                    "endpoint" => match endpoint_of(self.pool.uri(), &event.data) {
                        Ok(endpoint) => {
                            let _ = found.try_send(endpoint);
                        }
                        Err(why) => return why,
                    },
                    "message" => self.take(event.data.as_bytes()).await,
                    other => {
                        tracing::debug!(server = %self.peer.name(), "ignored an event of type {other:?}")
                    }
                }
            }
        }
        "its event stream ended".into()
    }

    /// One `message` event: a JSON-RPC message (or batch) for the peer.
    async fn take(&self, data: &[u8]) {
        match jsonrpc::parse_frame(data) {
            Ok(Frame::Single(message)) => self.peer.receive(message).await,
            Ok(Frame::Batch(messages)) => {
                for message in messages.into_iter().flatten() {
                    self.peer.receive(message).await;
                }
            }
            Err(_) => {
                tracing::warn!(server = %self.peer.name(), "ignored an event of {} bytes that is not JSON-RPC", data.len())
            }
        }
    }

    /// POSTs the peer's messages to `endpoint`, one after another, until the peer closes or the
    /// upstream stops.
    fn start_posting(self: &Arc<Self>, endpoint: Pool) {
        let Some(to_send) = lock(&self.to_send).take() else {
            return;
        };
        let this = Arc::clone(self);
        let posting = async move {
            while let Ok(message) = to_send.recv().await {
                if let Err(failure) = this.post(&endpoint, &message).await {
                    this.refuse(&message, failure);
                }
            }
        };
        let closed = self.closed.clone();
        crate::runtime::spawn(async move { smol::future::or(posting, closed.cancelled()).await })
            .detach();
    }

    /// POSTs one message, with one retry after a refused token.
    async fn post(&self, endpoint: &Pool, message: &str) -> Result<(), Failure> {
        let gone = |why: String| Failure::gone(self.peer.name(), why);
        for attempt in 0..2 {
            let token = self.token().await;
            let mut headers = HeaderMap::new();
            bearer(&mut headers, token.as_deref()).map_err(gone)?;
            let request = endpoint
                .build(Method::POST, message.to_owned(), headers)
                .map_err(gone)?;
            let (mut link, response) = endpoint.send(request).await.map_err(gone)?;
            let status = response.status();
            let challenge = challenge_of(&response);
            let body = response.into_body();
            let drained = link
                .drive(async |_| Limited::new(body, MAX_POST_ANSWER).collect().await)
                .await;
            if drained.is_ok() {
                endpoint.recycle(link);
            }
            if status == StatusCode::UNAUTHORIZED && self.auth.is_some() {
                self.authorize_again(token.as_deref(), attempt, &challenge)
                    .await?;
                continue;
            }
            if !status.is_success() {
                return Err(gone(format!("refused a message with HTTP {status}")));
            }
            self.let_in();
            return Ok(());
        }
        Err(self.needs_login_failure())
    }

    /// A message that could not be POSTed: logged, and if it was a request, it fails at once.
    fn refuse(&self, message: &str, failure: Failure) {
        tracing::warn!(server = %self.peer.name(), "a message was not delivered: {failure}");
        let value = serde_json::from_str(message).unwrap_or_default();
        if let Ok(Message::Request(request)) = jsonrpc::parse_message(value) {
            self.peer.fail(&request.id, failure);
        }
    }

    /// The token to send now, if the server has one.
    async fn token(&self) -> Option<String> {
        match &self.auth {
            Some(auth) => auth.token().await,
            None => None,
        }
    }

    /// After the server refused `used`: a fresh token to try once more, or the login needed.
    async fn authorize_again(
        &self,
        used: Option<&str>,
        attempt: u32,
        challenge: &Challenge,
    ) -> Result<(), Failure> {
        let Some(auth) = &self.auth else {
            return Err(Failure::gone(self.peer.name(), "refused mcpx (401)"));
        };
        auth.after_refusal(used, attempt, challenge)
            .await
            .map_err(|_| self.needs_login_failure())
    }

    /// The server refuses mcpx until a person logs in: remembered for supervision to show.
    fn needs_login_failure(&self) -> Failure {
        self.needs_login.store(true, Ordering::Relaxed);
        Failure::Refused(NeedsLogin::Login(self.peer.name().to_owned()).to_string())
    }

    /// Let in: whatever refusal came before is over.
    fn let_in(&self) {
        self.needs_login.store(false, Ordering::Relaxed);
    }

    /// Whether the server's last refusal asked for a login.
    pub fn needs_login(&self) -> bool {
        self.needs_login.load(Ordering::Relaxed)
    }

    /// Stops following the server: the stream closes, and what is pending fails.
    pub fn stop(&self) {
        self.closed.cancel();
        self.peer.close();
        self.peer.end("stopped".into());
    }

    /// Whether the stream is still open.
    pub fn is_alive(&self) -> bool {
        self.peer.is_open()
    }

    /// How long a polite stop may take: nothing to say to an HTTP+SSE server, which ends the
    /// session when its stream closes.
    pub async fn shutdown(&self, _grace: Duration) {
        self.stop();
    }
}

/// Where the `endpoint` event says to POST: a URL, relative to the stream's, at the same origin;
/// another origin is refused, since mcpx would send it the server's token.
fn endpoint_of(stream: &Uri, data: &str) -> Result<Uri, String> {
    let base = url::Url::parse(&stream.to_string()).map_err(|e| e.to_string())?;
    let endpoint = base
        .join(data.trim())
        .map_err(|e| format!("its endpoint event is not a URL ({data:?}): {e}"))?;
    if endpoint.origin() != base.origin() {
        return Err(format!(
            "its endpoint event names another origin ({}); mcpx posts only to the server's own",
            endpoint.origin().ascii_serialization()
        ));
    }
    endpoint
        .as_str()
        .parse()
        .map_err(|e| format!("its endpoint event is not a URL ({data:?}): {e}"))
}

#[cfg(test)]
mod v2024_11_05 {
    mod sse_upstream {
        use super::super::endpoint_of;

        #[test]
        fn the_endpoint_is_resolved_against_the_stream_url() {
            let stream = "http://127.0.0.1:3001/sse".parse().unwrap();
            let endpoint = endpoint_of(&stream, "/message?sessionId=abc").unwrap();
            assert_eq!(
                endpoint.to_string(),
                "http://127.0.0.1:3001/message?sessionId=abc"
            );
            let relative = endpoint_of(&"https://h/mcp/sse".parse().unwrap(), "messages?s=1");
            assert_eq!(relative.unwrap().to_string(), "https://h/mcp/messages?s=1");
        }

        #[test]
        fn an_endpoint_at_another_origin_is_refused() {
            let stream = "http://127.0.0.1:3001/sse".parse().unwrap();
            for elsewhere in [
                "http://evil.example/message",
                "https://127.0.0.1:3001/m",
                "//127.0.0.1:3002/m",
            ] {
                let refused = endpoint_of(&stream, elsewhere).unwrap_err();
                assert!(refused.contains("another origin"), "{refused}");
            }
        }
    }
}
