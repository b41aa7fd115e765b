//! One POST's requests and what goes back: JSON when every answer is ready before any other
//! message, an event stream otherwise (notifications, and requests mcpx carries to a legacy client
//! for an upstream, then each answer as its own event).
//!
//! Both eras use it. What differs is passed in: how an answer maps to a status, and what ties
//! the requests' lives to the HTTP exchange (for a modern or sessionless request, the client
//! going away cancels; in a legacy session it does not).

use super::{json_response, sse, Body};
use crate::access::Identity;
use crate::cancel::Cancel;
use crate::gateway::{Client, Gateway};
use crate::jsonrpc::{Outbound, Request, Response};
use crate::outbox;
use async_channel::{Receiver, Sender};
use http::StatusCode;
use smol::future::FutureExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Answer = (usize, Option<Response>);
type Run = Pin<Box<dyn Future<Output = Option<Response>> + Send>>;

/// What a POST's answers need while they are being produced.
pub(super) struct Exchange {
    outbound_tx: outbox::Sender,
    outbound: outbox::Receiver,
    /// The POST's first request, run in the POST's own task: most POSTs carry one request, and
    /// its answer then needs no task or channel of its own.
    inline: Inline,
    /// The other answers, each with its request's place in the POST (so a JSON array keeps the
    /// batch's order); made when a POST first has more than one.
    others: Option<(Sender<Answer>, Receiver<Answer>)>,
    expected: usize,
    /// Held until the last byte is written or the client is gone, then dropped: disconnect
    /// watchers, cancel-on-drop guards, a sessionless request's client.
    lifetime: Vec<Box<dyn Send>>,
    /// Set for requests whose every cancellation has no one to tell but this exchange: once it
    /// fires (the daemon is shutting down), a request that ends cancelled is answered with an
    /// error instead of nothing.
    closing: Option<Cancel>,
    /// Whether such an error was given: before the head is sent, it is a 503.
    shut_down: Arc<AtomicBool>,
    /// Who sent the POST: its requests go through the core as this caller's.
    caller: Arc<Identity>,
}

impl Exchange {
    pub(super) fn new(caller: Arc<Identity>) -> Self {
        let (outbound_tx, outbound) = outbox::bounded(outbox::CAPACITY);
        Exchange {
            outbound_tx,
            outbound,
            inline: Inline::default(),
            others: None,
            expected: 0,
            lifetime: Vec::new(),
            closing: None,
            shut_down: Arc::default(),
            caller,
        }
    }

    /// Answers the requests started hereafter with -32603 "mcpx is shutting down" if `closing`
    /// has fired when they end cancelled: every request gets exactly one answer, and the client
    /// that cancels one by closing its stream is not there to read it anyway.
    pub(super) fn answer_cancelled_at(&mut self, closing: Cancel) {
        self.closing = Some(closing);
    }

    /// Starts a request on `client`; returns its cancellation.
    pub(super) fn start(
        &mut self,
        gateway: &Arc<Gateway>,
        client: &Arc<Client>,
        request: Request,
    ) -> Cancel {
        let place = self.next_place();
        let id = request.id.clone();
        let caller = Arc::clone(&self.caller);
        let (cancel, run) =
            gateway.begin_request(client, request, self.outbound_tx.clone(), caller);
        let run: Run = match self.closing.clone() {
            None => Box::pin(run),
            Some(closing) => {
                let shut_down = Arc::clone(&self.shut_down);
                Box::pin(async move {
                    let answer = run.await;
                    if answer.is_some() || !closing.is_cancelled() {
                        return answer;
                    }
                    shut_down.store(true, Ordering::Relaxed);
                    Some(crate::transport::shutting_down(id))
                })
            }
        };
        if self.inline.run.is_none() && self.others.is_none() {
            self.inline = Inline {
                place,
                run: Some(run),
            };
        } else {
            let answers = self.others_tx();
            crate::runtime::spawn(async move {
                let _ = answers.send((place, run.await)).await;
            })
            .detach();
        }
        cancel
    }

    /// Adds an answer known at once (an element refused while parsing a batch).
    pub(super) fn answer_now(&mut self, response: Response) {
        let place = self.next_place();
        let _ = self.others_tx().try_send((place, Some(response)));
    }

    /// Where answers other than the inline request's go.
    fn others_tx(&mut self) -> Sender<Answer> {
        self.others
            .get_or_insert_with(async_channel::unbounded)
            .0
            .clone()
    }

    /// The place of the next request in the POST.
    fn next_place(&mut self) -> usize {
        self.expected += 1;
        self.expected - 1
    }

    /// Makes the client's disconnect cancel the request: the rule for modern and sessionless
    /// requests, where no `notifications/cancelled` could ever reach it. hyper reads on while a
    /// request is answered (and while its event stream is written), so a client that closes is
    /// noticed at once: hyper drops the exchange, and the guard held here fires.
    pub(super) fn cancel_on_disconnect(&mut self, cancel: Cancel) {
        self.hold(cancel.on_drop());
    }

    /// Keeps `value` alive for as long as the exchange.
    pub(super) fn hold(&mut self, value: impl Send + 'static) {
        self.lifetime.push(Box::new(value));
    }

    /// How many answers are expected.
    pub(super) fn expected(&self) -> usize {
        self.expected
    }

    /// Waits for what goes back first and shapes the HTTP response. `batch` answers as a JSON
    /// array; `status` maps a single answer to its status.
    pub(super) async fn reply(
        self,
        batch: bool,
        status: fn(&Response) -> StatusCode,
        keep_alive: Duration,
    ) -> http::Response<Body> {
        let Exchange {
            outbound_tx,
            outbound,
            mut inline,
            others,
            expected,
            lifetime,
            closing: _,
            shut_down,
            caller: _,
        } = self;
        // Only the running requests may keep these channels open now.
        drop(outbound_tx);
        let answers = others.map(|(_, answers)| answers);
        let mut ready = Vec::new();
        let first_message = loop {
            if ready.len() == expected {
                // The inline request may queue a message (an upstream's progress read with its
                // answer) in the very poll that finishes it: that message still goes first.
                break outbound.try_recv();
            }
            // Other messages are polled first: one queued before an answer must precede it.
            let next = smol::future::or(async { Err(next_message(&outbound).await) }, async {
                Ok(next_answer(&mut inline, answers.as_ref()).await)
            })
            .await;
            match next {
                Err(message) => break Some(message),
                Ok(answer) => ready.push(answer),
            }
        };
        let Some(first_message) = first_message else {
            // Answers arrive as they finish; the array follows the batch's order, as clients
            // that read it positionally expect.
            ready.sort_by_key(|(place, _)| *place);
            let answered: Vec<Response> = ready.into_iter().filter_map(|(_, a)| a).collect();
            return match (batch, answered.as_slice()) {
                (true, []) | (false, []) => {
                    // Every request was cancelled: an event stream with nothing on it is the only
                    // shape that carries no response.
                    sse::stream().0
                }
                (false, [_]) if shut_down.load(Ordering::Relaxed) => {
                    let mut refusal = json_response(StatusCode::SERVICE_UNAVAILABLE, &answered[0]);
                    refusal.headers_mut().insert(
                        http::header::RETRY_AFTER,
                        http::HeaderValue::from_static("1"),
                    );
                    refusal
                }
                (false, [single]) => json_response(status(single), single),
                _ => json_response(StatusCode::OK, &answered),
            };
        };
        let (response, events) = sse::stream();
        let overflowed = outbound.overflowed().clone();
        crate::runtime::spawn(async move {
            let _lifetime = lifetime;
            let events = Writer {
                events: &events,
                overflowed: &overflowed,
            };
            // Every way out below ends the stream; this one is worth a line in the log.
            let _said = SayWhenOverflowed(&overflowed);
            let mut delivered = ready.len();
            let mut pending_answers: Vec<Response> =
                ready.into_iter().filter_map(|(_, a)| a).collect();
            if !events.message(&first_message).await {
                return;
            }
            // Whatever else was queued before those answers were taken goes before them too.
            while let Some(message) = outbound.try_recv() {
                if !events.message(&message).await {
                    return;
                }
            }
            for answer in pending_answers.drain(..) {
                if !events.message(&answer).await {
                    return;
                }
            }
            while delivered < expected {
                // In this order of precedence: a request's messages go before its answer.
                let next = async { Next::Message(next_message(&outbound).await) }
                    .or(async { Next::Answer(next_answer(&mut inline, answers.as_ref()).await.1) })
                    .or(async {
                        crate::deadline::sleep(keep_alive).await;
                        Next::KeepAlive
                    })
                    .or(async {
                        events.gone().await;
                        Next::ClientGone
                    })
                    .or(async {
                        overflowed.cancelled().await;
                        Next::Overflowed
                    })
                    .await;
                let written = match next {
                    Next::Message(message) => events.message(&message).await,
                    Next::Answer(answer) => {
                        delivered += 1;
                        // A message the request queued in the very poll that finished it (an
                        // upstream's last progress, read with its answer) still goes first.
                        let mut written = true;
                        while written {
                            let Some(message) = outbound.try_recv() else {
                                break;
                            };
                            written = events.message(&message).await;
                        }
                        match answer {
                            Some(answer) if written => events.message(&answer).await,
                            _ => written,
                        }
                    }
                    Next::KeepAlive => events.keep_alive().await,
                    Next::ClientGone | Next::Overflowed => false,
                };
                // A client that is gone cannot be written to; dropping the lifetime cancels
                // whatever its requests still do, where that is the rule (at once: the stream's
                // end is noticed as it happens, not at the next write).
                if !written {
                    return;
                }
            }
        })
        .detach();
        response
    }
}

/// An exchange's event stream as its task writes it: a write stops waiting, and fails, once the
/// exchange's queue has overflowed (the client stopped reading, and nothing could give way).
struct Writer<'a> {
    events: &'a sse::EventSender,
    overflowed: &'a Cancel,
}

impl Writer<'_> {
    async fn message(&self, message: &impl serde::Serialize) -> bool {
        self.events
            .message(message)
            .or(async {
                self.overflowed.cancelled().await;
                false
            })
            .await
    }

    async fn keep_alive(&self) -> bool {
        self.events.keep_alive().await
    }

    async fn gone(&self) {
        self.events.gone().await
    }
}

/// Logs, as the stream's task ends, that it ended because its client stopped reading.
struct SayWhenOverflowed<'a>(&'a Cancel);

impl Drop for SayWhenOverflowed<'_> {
    fn drop(&mut self) {
        if self.0.is_cancelled() {
            tracing::warn!(
                "ended an event stream whose client stopped reading: {} messages waited for it",
                outbox::CAPACITY
            );
        }
    }
}

/// What an event stream does next.
enum Next {
    /// Writes a message that is not an answer.
    Message(Outbound),
    /// Writes a request's answer (`None`: it was cancelled, nothing to write).
    Answer(Option<Response>),
    /// Writes a keep-alive comment.
    KeepAlive,
    /// Stops: the client closed the stream.
    ClientGone,
    /// Stops: the client fell so far behind that a message could not be queued.
    Overflowed,
}

/// The next message other than an answer; a closed channel has nothing more to say, so this then
/// waits forever and something else wins.
async fn next_message(outbound: &outbox::Receiver) -> Outbound {
    match outbound.recv().await {
        Ok(message) => message,
        Err(_) => smol::future::pending().await,
    }
}

/// The next finished request's answer (`None` when it was cancelled): the inline request's, run
/// here meanwhile, or another's from the channel.
async fn next_answer(inline: &mut Inline, others: Option<&Receiver<Answer>>) -> Answer {
    let inline_runs = inline.run.is_some();
    let from_others = async {
        match others.map(Receiver::recv) {
            Some(received) => match received.await {
                Ok(answer) => answer,
                Err(_) if inline_runs => smol::future::pending().await,
                // Every sender gone with an answer still expected (its task died): counted
                // as one with nothing to say, so the exchange still ends.
                Err(_) => (usize::MAX, None),
            },
            None if inline_runs => smol::future::pending().await,
            None => (usize::MAX, None),
        }
    };
    let Some(run) = inline.run.as_mut() else {
        return from_others.await;
    };
    let first = smol::future::or(async { Ok(run.await) }, async { Err(from_others.await) }).await;
    match first {
        Ok(answer) => {
            // Finished: nothing is left for its drop to carry on.
            inline.run = None;
            (inline.place, answer)
        }
        Err(other) => other,
    }
}

/// The request run in the POST's own task. Should the POST stop waiting for it (the client is
/// gone), it finishes in a task of its own, unread: a request in a legacy session outlives its
/// client's disconnect, and one that must not is cancelled by the exchange's lifetime.
#[derive(Default)]
struct Inline {
    place: usize,
    run: Option<Run>,
}

impl Drop for Inline {
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            crate::runtime::spawn(run).detach();
        }
    }
}
