//! The connected clients: each opened as a session of the ledger, listed for what reaches
//! every client (a catalog change, a log level), closed with its requests and subscriptions.
//! What they would hear is also kept for those who hold no connection: mcpx's own events
//! ([`super::own_events`]).

use super::own_events::OwnEvents;
use super::{Client, Gateway, ViewId};
use crate::limit::Limit;
use crate::outbox;
use crate::protocol::Revision;
use crate::sync::lock;
use hashbrown::HashMap;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The clients by session number, and the cap each one opened with a cap gets.
#[derive(Debug)]
pub(super) struct Clients {
    by_session: Mutex<HashMap<u64, Arc<Client>>>,
    /// `transport.maxInFlightPerClient`.
    max_in_flight_per_client: usize,
    /// What clients hear, kept as mcpx's own events.
    own_events: Arc<OwnEvents>,
}

impl Clients {
    pub(super) fn new(max_in_flight_per_client: usize) -> Clients {
        Clients {
            by_session: Mutex::default(),
            max_in_flight_per_client,
            own_events: Arc::default(),
        }
    }

    /// What clients hear, kept as mcpx's own events.
    pub(super) fn own_events(&self) -> &Arc<OwnEvents> {
        &self.own_events
    }

    /// Every client connected now.
    pub(super) fn all(&self) -> Vec<Arc<Client>> {
        lock(&self.by_session).values().cloned().collect()
    }

    /// The client of `session`, if it is connected.
    pub(super) fn get(&self, session: u64) -> Option<Arc<Client>> {
        lock(&self.by_session).get(&session).cloned()
    }

    /// A new client's cap on requests in flight.
    fn cap(&self) -> Arc<Limit> {
        Limit::new("maxInFlightPerClient", self.max_in_flight_per_client)
    }

    fn insert(&self, client: &Arc<Client>) {
        lock(&self.by_session).insert(client.session, Arc::clone(client));
    }

    fn remove(&self, session: u64) {
        lock(&self.by_session).remove(&session);
    }

    /// An upstream's log message outside any call that takes it: to every legacy client whose
    /// level admits it ([`super::logging`]).
    pub(super) fn broadcast_log(&self, server: &str, params: &Value) {
        for client in self.all() {
            if let Some(sink) = client.log_sink(None) {
                sink.forward(server, params);
            }
        }
    }

    /// A subscribed resource changed: every client that holds it hears so, and so does whoever
    /// reads mcpx's own events.
    pub(super) fn resource_updated(&self, uri: &str) {
        for client in self.all() {
            client.resource_updated(uri);
        }
        self.own_events.resource_updated(uri);
    }
}

impl Gateway {
    /// A legacy session minted elsewhere (a sealed id), resumed here with what its
    /// `initialize` negotiated.
    pub fn resume_session(
        &self,
        client: &Client,
        revision: Revision,
        capabilities: Value,
        client_info: Option<Value>,
    ) {
        client.set_revision(revision);
        client.set_capabilities(capabilities);
        self.live
            .ledger()
            .set_initialized(client.session, revision, client_info);
    }

    /// Opens a client (a stdio process, an HTTP session), capped at
    /// `transport.maxInFlightPerClient` requests in flight; its unsolicited notifications go to
    /// `outbound`.
    pub fn open_client(
        &self,
        transport: &'static str,
        view: ViewId,
        outbound: outbox::Sender,
    ) -> Arc<Client> {
        let cap = self.clients.cap();
        self.register_client(transport, view, outbound, Some(cap))
    }

    /// Opens the one client that stands for every modern HTTP caller: stateless callers share
    /// nothing, and each is bounded by its own connection, so no shared cap applies.
    pub fn open_shared_client(
        &self,
        transport: &'static str,
        view: ViewId,
        outbound: outbox::Sender,
    ) -> Arc<Client> {
        self.register_client(transport, view, outbound, None)
    }

    fn register_client(
        &self,
        transport: &'static str,
        view: ViewId,
        outbound: outbox::Sender,
        in_flight: Option<Arc<Limit>>,
    ) -> Arc<Client> {
        let profile = self.catalogs.profiles().name(view);
        let session = self.live.ledger().open_session(transport, profile);
        let client = Client::new(session, view, outbound, in_flight);
        self.clients.insert(&client);
        client
    }

    /// Closes a client: its listens complete, its requests are cancelled, its subscriptions end.
    pub fn close_client(&self, client: &Client) {
        client.closing.cancel();
        self.clients.remove(client.session);
        for uri in client.subscribed_uris() {
            self.release_upstream_subscription(&uri);
        }
        if let Some((transport, lasted)) = self.live.ledger().close_session(client.session) {
            crate::metrics::session_ended(transport, lasted);
        }
    }
}
