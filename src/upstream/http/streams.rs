//! The server's event streams: a call's own stream read to its answer (and resumed with
//! `Last-Event-ID` when a legacy server closes it early), and the legacy session's GET stream
//! that carries the server's notifications.

use super::{HttpUpstream, Reply, MAX_UPSTREAM_MESSAGE};
use crate::jsonrpc;
use crate::sync::lock;
use crate::upstream::auth::bearer;
use crate::upstream::auth::Authorizer;
use crate::upstream::event_stream::EventStream;
use crate::upstream::Caller;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Duration;

impl HttpUpstream {
    /// Reads a call's event stream until the answer to `id`; `None` if it ended first.
    pub(super) async fn read_events(
        &self,
        body: &mut hyper::body::Incoming,
        events: &mut EventStream,
        id: i64,
        caller: &Caller,
    ) -> Result<Option<Reply>, String> {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("the event stream broke: {e}"))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            for event in events.push(&data).map_err(|e| e.to_string())? {
                for message in jsonrpc::parse_body(event.data.as_bytes()).unwrap_or_default() {
                    if let Some(reply) = self.receive(message, id, caller) {
                        return Ok(Some(reply));
                    }
                }
            }
        }
        Ok(None)
    }

    /// A legacy server closed a call's stream before the answer, after an event with an id: it
    /// expects the client back, after the `retry` it gave, with `GET` and `Last-Event-ID`
    /// (2025-11-25's SSE polling). Each resumed stream may end early again, up to a bound.
    pub(super) async fn resume(
        &self,
        mut events: EventStream,
        id: i64,
        caller: &Caller,
    ) -> Result<Reply, String> {
        for _ in 0..MAX_RESUMES {
            let Some(last) = events.last_event_id().map(str::to_owned) else {
                break;
            };
            smol::Timer::after(events.retry().unwrap_or(DEFAULT_RETRY)).await;
            let mut headers = HeaderMap::new();
            let last = HeaderValue::try_from(last).map_err(|e| e.to_string())?;
            headers.insert("last-event-id", last);
            let response = self.get_stream(headers).await?;
            if !response.status().is_success() {
                return Err(format!(
                    "resuming the event stream answered {}",
                    response.status()
                ));
            }
            let mut body = response.into_body();
            if let Some(reply) = self.read_events(&mut body, &mut events, id, caller).await? {
                return Ok(reply);
            }
        }
        Err(format!(
            "the event stream ended without the answer to request {id}"
        ))
    }

    /// Keeps the legacy session's GET stream open for the server's notifications, reopened
    /// while the upstream lives. (A modern server's notifications come on the
    /// `subscriptions/listen` the gateway keeps open to it, over any transport.)
    pub(super) fn follow_notifications(self: &Arc<Self>) {
        let this = Arc::clone(self);
        let task = async move {
            loop {
                if let Err(e) = this.listen_legacy().await {
                    tracing::debug!(server = %this.name, "notification stream ended: {e}");
                }
                smol::Timer::after(Duration::from_secs(1)).await;
            }
        };
        let closed = self.closed.clone();
        crate::runtime::spawn(async move { smol::future::or(task, closed.cancelled()).await })
            .detach();
    }

    /// A `GET` for an event stream, with the session, the token and `extra`, on a connection of
    /// its own (it may stay open for hours).
    async fn get_stream(
        &self,
        mut headers: HeaderMap,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        self.legacy_headers(&mut headers)?;
        let stream = HeaderValue::from_static("text/event-stream");
        headers.insert(http::header::ACCEPT, stream);
        let token = self.auth.as_ref().and_then(Authorizer::current_token);
        bearer(&mut headers, token.as_deref())?;
        let mut sender = self.pool.detached().await?;
        let mut request = self.pool.build(Method::GET, String::new(), headers)?;
        request.headers_mut().remove(http::header::CONTENT_TYPE);
        sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())
    }

    /// The legacy session's GET stream, read until it ends.
    async fn listen_legacy(&self) -> Result<(), String> {
        if lock(&self.session).is_none() {
            return Err("no session".into());
        }
        let response = self.get_stream(HeaderMap::new()).await?;
        // Open (or refused): what the server sends on it from now on is not missed.
        self.stream_opened.cancel();
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            // The server offers no stream: nothing to follow, and nothing to retry.
            smol::future::pending::<()>().await;
        }
        if response.status() == StatusCode::NOT_FOUND {
            // The server forgot the session: a new one, whose stream the caller opens next.
            return self.initialize_again().await.map(drop);
        }
        if !response.status().is_success() {
            return Err(format!("GET answered {}", response.status()));
        }
        let mut body = response.into_body();
        let mut events = EventStream::new(MAX_UPSTREAM_MESSAGE);
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(|e| e.to_string())?.into_data() else {
                continue;
            };
            for event in events.push(&data).map_err(|e| e.to_string())? {
                for message in jsonrpc::parse_body(event.data.as_bytes()).unwrap_or_default() {
                    self.receive(message, 0, &Caller::default());
                }
            }
        }
        Ok(())
    }
}

/// How many times a call's event stream is resumed before its call fails.
const MAX_RESUMES: usize = 10;

/// How long to wait before resuming a stream whose server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
