//! One JSON-RPC conversation with a server over a single ordered channel each way: a child's
//! stdin and stdout ([`super::stdio`]), or an HTTP+SSE session's POSTs and event stream
//! ([`super::sse`]).
//!
//! The wire only moves text. The peer numbers mcpx's requests and settles them by id, carries
//! each request's progress back to its caller and the server's own requests to the call that can
//! answer them, and when the wire ends fails everything pending at once with an error naming the
//! server, so no caller waits on a dead upstream.

use super::asks::{self, Answer, Askers};
use super::chatter::Chatter;
use super::client::{self, Wire};
use super::task_progress::{self, KeptProgress};
use super::{Caller, Event, FrameSink, LinkId, LogSink, ProgressSink};
use crate::cancel::Cancel;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Id, Message, Notification, Outgoing, Request, Response};
use crate::protocol::Era;
use crate::protocol::{envelope, Notice};
use crate::sync::lock;
use async_channel::{Receiver, Sender};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

type Reply = Result<Value, ErrorObject>;

/// mcpx's side of the conversation with one server.
#[derive(Debug)]
pub struct Peer {
    name: String,
    /// The link it is, for the events it reports.
    link: LinkId,
    /// Serialized messages for the wire to send, in order.
    outgoing: Sender<String>,
    pending: Mutex<HashMap<i64, Sender<Reply>>>,
    progress: Mutex<HashMap<String, ProgressSink>>,
    /// The progress of the tasks that report it past the requests that made them.
    task_progress: KeptProgress,
    /// The calls in flight whose clients can take the server's own requests.
    askers: Askers,
    /// The calls in flight whose clients take the server's log messages, oldest first.
    loggers: Mutex<Vec<(i64, LogSink)>>,
    /// The requests in flight whose answer is a stream of frames, by id ([`super::frame_of`]).
    streams: Mutex<HashMap<i64, FrameSink>>,
    next_id: AtomicI64,
    era: Mutex<Era>,
    /// How long a request may go unanswered.
    timeout: Duration,
    events: Sender<Event>,
    /// Fired when the wire ended; [`Peer::end`] gave why.
    ended: Cancel,
    why_ended: OnceLock<String>,
    /// Caps what the server says besides its answers.
    chatter: Chatter,
}

impl Wire for Peer {
    fn set_era(&self, era: Era) {
        *lock(&self.era) = era;
    }

    async fn send(&self, method: &str, params: Option<Value>) -> Reply {
        self.request(method, params, &Cancel::new(), Caller::default())
            .await
    }

    async fn deliver(&self, method: &str, params: Option<Value>) {
        // Messages go out in order: what is sent next reaches the server after it.
        self.notify(method, params)
    }
}

/// How many messages wait for a server that does not read its input before more are refused:
/// far more than its calls in flight (`maxInFlight`) ever need.
const OUTGOING: usize = 4096;

impl Peer {
    /// A conversation with the server `name` (the gateway's upstream `index`), whose events go
    /// to `events`; the receiver gives the messages for the wire to send.
    pub fn new(
        name: &str,
        link: LinkId,
        timeout: Duration,
        events: Sender<Event>,
    ) -> (Peer, Receiver<String>) {
        let (outgoing, to_send) = async_channel::bounded(OUTGOING);
        let peer = Peer {
            name: name.to_owned(),
            link,
            outgoing,
            pending: Mutex::default(),
            progress: Mutex::default(),
            task_progress: KeptProgress::default(),
            askers: Askers::default(),
            loggers: Mutex::default(),
            streams: Mutex::default(),
            next_id: AtomicI64::new(1),
            era: Mutex::new(Era::Legacy),
            timeout,
            events,
            ended: Cancel::new(),
            why_ended: OnceLock::new(),
            chatter: Chatter::new(name, "log messages or notifications"),
        };
        (peer, to_send)
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends a request in the server's era and waits for its answer, unless `cancel` fires or
    /// the timeout passes first (then the server is told, and the answer is an error).
    pub async fn request(
        &self,
        method: &str,
        mut params: Option<Value>,
        cancel: &Cancel,
        caller: Caller,
    ) -> Reply {
        if self.ended.is_cancelled() {
            return Err(self.gone());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let token = caller.progress.map(|sink| {
            let token = client::progress_token(id);
            client::put_progress_token(&mut params, &token);
            lock(&self.progress).insert(token.clone(), sink);
            token
        });
        let about_task = task_progress::named_by(method, params.as_ref()).map(str::to_owned);
        if let Some(asks) = caller.asks {
            self.askers.enter(id, asks);
        }
        let timeout = caller.timeout.unwrap_or(self.timeout);
        let logs = caller.log.is_some();
        if let Some(log) = caller.log {
            lock(&self.loggers).push((id, log));
        }
        let streams = caller.frames.is_some();
        if let Some(frames) = caller.frames {
            lock(&self.streams).insert(id, frames);
        }
        let (tx, rx) = async_channel::bounded(1);
        lock(&self.pending).insert(id, tx);
        // The envelope is written with the params, not built into a copy of them first.
        let wire_id = Id::Number(id);
        let sent = match *lock(&self.era) {
            Era::Modern => self.send(&Outgoing {
                id: &wire_id,
                method,
                params: Some(&envelope::Wrapped(params.as_ref())),
            }),
            Era::Legacy => self.send(&Outgoing {
                id: &wire_id,
                method,
                params: params.as_ref(),
            }),
        };
        if !sent {
            let why = format!(
                "upstream {:?} is not reading what mcpx sends it ({OUTGOING} messages wait)",
                self.name
            );
            self.fail(&Id::Number(id), Failure::Refused(why));
        }
        // Whichever first: the answer, the caller's cancellation, or the upstream's timeout.
        let timed_out = Cancel::new();
        let reply = smol::future::or(cancel.run(rx.recv()), async {
            crate::deadline::sleep(timeout).await;
            timed_out.cancel();
            None
        })
        .await;
        let answered = match &reply {
            Some(Ok(Ok(result))) => Some(result),
            _ => None,
        };
        let sink = token.and_then(|token| {
            let sink = lock(&self.progress).remove(&token);
            sink.map(|sink| (token, sink))
        });
        self.task_progress
            .request_ended(method, about_task.as_deref(), sink, answered);
        self.askers.leave(id);
        if logs {
            lock(&self.loggers).retain(|(call, _)| *call != id);
        }
        if streams {
            lock(&self.streams).remove(&id);
        }
        match reply {
            Some(Ok(reply)) => reply,
            Some(Err(_)) => Err(self.gone()),
            None => {
                lock(&self.pending).remove(&id);
                let failure = if timed_out.is_cancelled() {
                    Failure::Timeout {
                        server: self.name.clone(),
                        after: timeout,
                    }
                } else {
                    Failure::Cancelled
                };
                let reason = failure.reason_for_upstream();
                self.notify(
                    Notice::Cancelled.as_str(),
                    Some(json!({"requestId": id, "reason": reason})),
                );
                Err(failure.into())
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        let notification = Notification {
            method: method.to_owned(),
            params,
        };
        // A server that does not read cannot be told anything anyway.
        self.send(&notification);
    }

    /// Queues a message for the wire; false when the server has stopped reading and
    /// [`OUTGOING`] messages wait already (or the wire is closed).
    fn send(&self, message: &impl serde::Serialize) -> bool {
        // Serializing a message with string keys cannot fail.
        let text = serde_json::to_string(message).unwrap_or_default();
        self.outgoing.try_send(text).is_ok()
    }

    /// Stops sending: the wire's receiver ends once it has sent what was queued.
    pub fn close(&self) {
        self.outgoing.close();
    }

    /// Whether mcpx closed its side (a stop it asked for), so the wire's end is expected.
    pub fn closed_by_us(&self) -> bool {
        self.outgoing.is_closed()
    }

    /// Fails mcpx's request `id` at once: it could not be sent, or its answer not taken.
    pub fn fail(&self, id: &Id, failure: Failure) {
        let Id::Number(id) = id else { return };
        let waiter = lock(&self.pending).remove(id);
        if let Some(waiter) = waiter {
            let _ = waiter.try_send(Err(failure.into()));
        }
    }

    /// Takes one message from the server.
    pub async fn receive(&self, message: Message) {
        match message {
            Message::Response(Response {
                id: Some(Id::Number(id)),
                outcome,
                ..
            }) => {
                let waiter = lock(&self.pending).remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.try_send(outcome);
                }
            }
            Message::Response(response) => {
                tracing::debug!(server = %self.name, "response to no request: {:?}", response.id)
            }
            Message::Notification(n) => self.on_notification(n).await,
            Message::Request(request) => self.on_request(request).await,
        }
    }

    async fn on_notification(&self, n: Notification) {
        let params = n.params.unwrap_or(Value::Null);
        // A stream's frame goes to the request it names, in order, whatever its pace: the
        // stream is what that request asked for.
        if let Some((notice, Some(request))) = super::frame_of(&n.method, &params) {
            let sink = lock(&self.streams).get(&request).cloned();
            if let Some(sink) = sink {
                let _ = sink.send((notice, params)).await;
            }
            return;
        }
        self.task_progress.heard(&n.method, &params);
        if n.method == Notice::Progress {
            let token = params
                .member("progressToken")
                .map(token_key)
                .unwrap_or_default();
            let sink = lock(&self.progress).get(&token).cloned();
            match sink {
                Some(sink) => sink.forward(params),
                None => {
                    self.task_progress.forward(&token, params);
                }
            }
            return;
        }
        if !self.chatter.admit() {
            return;
        }
        // Nothing on such a wire says which call a log message belongs to: the newest call
        // whose client takes them has it, else every client whose level admits it.
        let newest = lock(&self.loggers).last().map(|(_, sink)| sink.clone());
        if n.method == Notice::Message
            && client::log_to_caller(&self.name, newest.as_ref(), &params)
        {
            return;
        }
        if let Some(event) = client::event_of(&self.name, self.link, &n.method, &params) {
            let _ = self.events.send(event).await;
        }
    }

    /// A request from the server. An ask waits on a person or a model while the server's other
    /// messages keep arriving, so its answer is written by a task of its own; an answer known at
    /// once is written before the server's next message is read. Nothing on such a wire says
    /// which call an ask belongs to, so it goes to the newest one in flight.
    async fn on_request(&self, request: Request) {
        let written = |response: &Response| serde_json::to_string(response).unwrap_or_default();
        match asks::answer(request, self.askers.newest(), &self.name) {
            Answer::Now(response) => {
                let _ = self.outgoing.send(written(&response)).await;
            }
            Answer::Later(waiting) => {
                let outgoing = self.outgoing.clone();
                crate::runtime::spawn(async move {
                    let _ = outgoing.send(written(&waiting.response().await)).await;
                })
                .detach();
            }
        }
    }

    /// The wire ended, for the reason `why` (a clause after the server's name, "exited with
    /// status 1: …"): every request pending fails at once, and later ones at once too.
    pub fn end(&self, why: String) {
        let _ = self.why_ended.set(why);
        self.ended.cancel();
        let error = self.gone();
        for (_, waiter) in lock(&self.pending).drain() {
            let _ = waiter.try_send(Err(error.clone()));
        }
    }

    /// Fired when the wire has ended.
    pub fn ended(&self) -> &Cancel {
        &self.ended
    }

    /// Whether the wire still carries the conversation.
    pub fn is_open(&self) -> bool {
        !self.ended.is_cancelled()
    }

    fn gone(&self) -> ErrorObject {
        let why = self
            .why_ended
            .get()
            .map_or("ended before answering", String::as_str);
        Failure::gone(&self.name, why).into()
    }
}

/// A progress token as the key its sink is kept under.
fn token_key(token: &Value) -> String {
    token
        .as_str()
        .map_or_else(|| token.to_string(), str::to_owned)
}
