//! What a client's messages mean, whichever transport carried them. Transports move bytes and
//! sessions; the rules of the protocol about the messages themselves live here, once: which
//! revisions take batches, where `initialize` may stand, what `notifications/cancelled` does, and
//! what becomes of a response that answers no question of mcpx's.

use super::{Client, Gateway};
use crate::json::Member;
use crate::jsonrpc::INVALID_REQUEST;
use crate::jsonrpc::{ErrorObject, Frame, Id, Message, Notification, Request, Response};
use crate::protocol::{envelope, Era, Method, Notice, Revision};

/// What the transport is to do with one message a client sent.
#[derive(Debug)]
pub enum Inbound {
    /// Run this request under its own cancellation ([`Gateway::begin_request`]).
    Run(Request),
    /// A legacy `initialize`, answered in line by [`Gateway::initialize`] (over HTTP it also
    /// mints the session).
    Initialize(Request),
    /// Answer this at once; nothing runs.
    Answer(Response),
    /// Nothing to answer: a notification (a cancellation it names is done), or a response handed
    /// to the question of mcpx's it answers.
    Done,
    /// A response to no question of mcpx's (an unknown id, or answered already). It was
    /// logged; where the transport can refuse a message alone (an HTTP POST), it does.
    Stray,
}

/// A frame, sorted: one message alone, or a batch's elements in order.
#[derive(Debug)]
pub enum Received {
    /// A message alone.
    One(Inbound),
    /// A batch's elements, to run concurrently and answer together.
    Batch(Vec<Inbound>),
}

/// Whether `request` is the legacy handshake. A modern request naming `initialize` is for a
/// method 2026-07-28 removed, and is run (to be answered as not found).
pub fn is_legacy_initialize(request: &Request) -> bool {
    request.method == Method::Initialize.as_str()
        && envelope::era_of(request.params.as_ref()) == Era::Legacy
}

impl Gateway {
    /// Sorts a frame (one message, or a batch) that `client` sent at `revision`: the revision
    /// its session negotiated or its header names, or `None` before any. `client` is the one
    /// whose requests a cancellation may name and whose questions a response may answer (none
    /// for a sessionless HTTP request). A batch is refused whole, or sorted element by element.
    pub fn receive(
        &self,
        client: Option<&Client>,
        revision: Option<Revision>,
        frame: Frame,
    ) -> Result<Received, ErrorObject> {
        match frame {
            Frame::Single(message) => Ok(Received::One(self.receive_one(client, message, false))),
            Frame::Batch(elements) => {
                // Batches exist only in 2025-03-26, which is also what a client that has not
                // negotiated yet is taken to speak.
                let revision = revision.unwrap_or(Revision::ASSUMED_WITHOUT_NEGOTIATION);
                if !revision.allows_batches() {
                    return Err(ErrorObject::new(
                        INVALID_REQUEST,
                        format!("Invalid Request: MCP {revision} has no JSON-RPC batches"),
                    ));
                }
                Ok(Received::Batch(
                    elements
                        .into_iter()
                        .map(|element| match element {
                            Ok(message) => self.receive_one(client, message, true),
                            Err(rejection) => Inbound::Answer(*rejection),
                        })
                        .collect(),
                ))
            }
        }
    }

    fn receive_one(&self, client: Option<&Client>, message: Message, in_batch: bool) -> Inbound {
        match message {
            Message::Request(request)
                if in_batch && request.method == Method::Initialize.as_str() =>
            {
                let error = ErrorObject::new(
                    INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch",
                );
                Inbound::Answer(Response::error(Some(request.id), error))
            }
            Message::Request(request) if is_legacy_initialize(&request) => {
                Inbound::Initialize(request)
            }
            Message::Request(request) => Inbound::Run(request),
            Message::Notification(notification) => {
                self.on_notification(client, &notification);
                Inbound::Done
            }
            Message::Response(response) => {
                let id = response.id.clone();
                if client.is_some_and(|client| client.answer(response)) {
                    return Inbound::Done;
                }
                tracing::info!("ignored a response to no question of mcpx's: id {id:?}");
                Inbound::Stray
            }
        }
    }

    /// Notifications are never answered, not even an unknown one; `notifications/cancelled`
    /// cancels the request it names (and so the upstream call), whose reply is then withheld.
    fn on_notification(&self, client: Option<&Client>, notification: &Notification) {
        if notification.method != Notice::Cancelled {
            return;
        }
        let id = notification
            .params
            .as_ref()
            .and_then(|p| p.member("requestId"))
            .and_then(Id::from_value);
        if let (Some(client), Some(id)) = (client, id) {
            self.live.ledger().cancel(client.session, &id);
        }
    }
}
