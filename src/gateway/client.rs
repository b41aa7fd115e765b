//! A client of the gateway: one stdio process or one HTTP session, with what it negotiated and
//! what it asked to hear about.

use super::profile::ViewId;
use crate::cancel::Cancel;
use crate::jsonrpc::{
    ErrorObject, Id, Notification, Outbound, Request, Response, INTERNAL_ERROR, METHOD_NOT_FOUND,
};
use crate::ledger::SessionKey;
use crate::limit::{Held, Limit};
use crate::outbox;
use crate::protocol::envelope::SUBSCRIPTION_ID;
use crate::protocol::{Era, Extensions, Notice, Revision};
use crate::sync::lock;
use crate::upstream::{ListKind, LogSink};
use async_channel::Sender;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One client connection's state in the gateway.
#[derive(Debug)]
pub struct Client {
    /// Its key in the ledger.
    pub session: SessionKey,
    /// Which view of the catalog it sees (its door's profile).
    pub view: ViewId,
    /// Where notifications that belong to no request go (legacy `list_changed`, `updated`).
    outbound: outbox::Sender,
    /// Fired when the transport is ending; open listen streams then complete.
    pub closing: Cancel,
    /// Caps its requests in flight; `None` for the client that stands for every modern HTTP
    /// caller, who are each bounded by their connection.
    in_flight: Option<Arc<Limit>>,
    /// The least severe log level it takes (a rank in [`crate::upstream::LOG_LEVELS`]; all,
    /// until it says).
    log_level: Arc<AtomicU8>,
    /// Whether a 2026-07-28 request named it in the ledger yet (its `clientInfo`).
    named: std::sync::atomic::AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    revision: Option<Revision>,
    /// What `initialize` declared.
    capabilities: Value,
    /// The extensions mcpx carries among those `initialize` declared.
    extensions: Extensions,
    /// mcpx's own requests to the client, waiting for its responses, by id.
    awaiting: HashMap<Id, Sender<Result<Value, ErrorObject>>>,
    next_request: u64,
    resource_subscriptions: BTreeSet<String>,
    listens: Vec<Listen>,
}

/// An open modern `subscriptions/listen`: its id and what it opted into.
#[derive(Debug, Clone)]
pub struct Listen {
    /// The listen request's id, which tags every notification on it.
    pub id: Id,
    /// Which `list_changed` kinds it wants.
    pub lists: Vec<ListKind>,
    /// Which resource URIs it wants `updated` for.
    pub resources: Vec<String>,
    /// The listen request's own notification channel.
    pub tx: outbox::Sender,
    /// Counts what was sent on it (the ledger shows it).
    pub sent: Arc<AtomicU64>,
}

impl Listen {
    /// Sends a notification on this listen, tagged with its subscription id.
    fn send(&self, notice: Notice, params: Value) {
        if self.tx.try_send(tagged(notice, params, &self.id)).is_ok() {
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Client {
    /// A client whose unsolicited notifications go to `outbound`, with at most `in_flight`
    /// requests running at once.
    pub fn new(
        session: SessionKey,
        view: ViewId,
        outbound: outbox::Sender,
        in_flight: Option<Arc<Limit>>,
    ) -> Arc<Client> {
        Arc::new(Client {
            session,
            view,
            outbound,
            closing: Cancel::new(),
            in_flight,
            log_level: Arc::default(),
            named: Default::default(),
            state: Mutex::default(),
        })
    }

    /// Whether it stands for every modern HTTP caller, each request naming its own client.
    pub fn is_shared(&self) -> bool {
        self.in_flight.is_none()
    }

    /// Whether this is the first 2026-07-28 request to name a client of its own (the client
    /// that stands for every modern HTTP caller has none: each request names its own).
    pub fn first_to_name(&self) -> bool {
        !self.is_shared() && !self.named.swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// A place for one more request in flight, or the error that refuses it.
    pub fn admit(&self) -> Result<Option<Held>, ErrorObject> {
        let Some(limit) = &self.in_flight else {
            return Ok(None);
        };
        limit.take().map(Some).ok_or_else(|| {
            ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "this client already has transport.{} requests in flight; retry when some finish",
                    limit.describe()
                ),
            )
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The revision negotiated by `initialize`, if any.
    pub fn revision(&self) -> Option<Revision> {
        self.lock().revision
    }

    /// Records the negotiated revision.
    pub fn set_revision(&self, revision: Revision) {
        self.lock().revision = Some(revision);
    }

    /// What the client declared at `initialize` (`{}` before it, or when it declared nothing).
    pub fn capabilities(&self) -> Value {
        let capabilities = &self.lock().capabilities;
        match capabilities.is_object() {
            true => capabilities.clone(),
            false => json!({}),
        }
    }

    /// Records what the client declared at `initialize`, for its legacy session.
    pub fn set_capabilities(&self, capabilities: Value) {
        let capabilities = crate::protocol::extension::for_legacy_session(capabilities);
        let mut state = self.lock();
        state.extensions = Extensions::declared_in(Some(&capabilities));
        state.capabilities = capabilities;
    }

    /// The extensions mcpx carries that the client declared at `initialize`.
    pub fn extensions(&self) -> Extensions {
        self.lock().extensions
    }

    /// Sends the client a request of mcpx's own on `outbound` (the stream of the client request it
    /// serves) and waits for the response. The ids are mcpx's, `mcpx-N`, never an upstream's.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        outbound: &outbox::Sender,
    ) -> Result<Value, ErrorObject> {
        let (tx, rx) = async_channel::bounded(1);
        let id = {
            let mut state = self.lock();
            state.next_request += 1;
            let id = Id::String(format!("mcpx-{}", state.next_request));
            state.awaiting.insert(id.clone(), tx);
            id
        };
        let _forget = Forget {
            client: self,
            id: &id,
        };
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(params),
        };
        let gone = || {
            ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("the client went away before answering {method}"),
            )
        };
        outbound
            .send(Outbound::Request(request))
            .await
            .map_err(|_| gone())?;
        rx.recv().await.map_err(|_| gone())?
    }

    /// Hands a response from the client to the request of mcpx's that waits for it; false when
    /// none does (an unknown id, or one already answered).
    pub fn answer(&self, response: Response) -> bool {
        let Some(id) = response.id else {
            return false;
        };
        let waiting = self.lock().awaiting.remove(&id);
        match waiting {
            Some(waiting) => waiting.try_send(response.outcome).is_ok(),
            None => false,
        }
    }

    /// Adds a legacy resource subscription; false if it was already there.
    pub fn subscribe(&self, uri: &str) -> bool {
        self.lock().resource_subscriptions.insert(uri.to_owned())
    }

    /// Removes a legacy resource subscription; false if there was none.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        self.lock().resource_subscriptions.remove(uri)
    }

    /// Every URI this client is subscribed to, by either era's mechanism.
    pub fn subscribed_uris(&self) -> Vec<String> {
        let state = self.lock();
        let listens = state
            .listens
            .iter()
            .flat_map(|l| l.resources.iter().cloned());
        state
            .resource_subscriptions
            .iter()
            .cloned()
            .chain(listens)
            .collect()
    }

    /// Opens a listen.
    pub fn add_listen(&self, listen: Listen) {
        self.lock().listens.push(listen);
    }

    /// Closes a listen.
    pub fn remove_listen(&self, id: &Id) {
        self.lock().listens.retain(|l| &l.id != id);
    }

    /// Sets the least severe log level it takes (`logging/setLevel`).
    pub fn set_log_level(&self, severity: u8) {
        self.log_level.store(severity, Ordering::Relaxed);
    }

    /// The least severe log level it takes.
    pub fn log_level(&self) -> u8 {
        self.log_level.load(Ordering::Relaxed)
    }

    /// Where its log messages go when they belong to a request (`tx`, the request's channel),
    /// or to the session (`None`): legacy clients only, since 2026-07-28 has no protocol
    /// logging.
    pub fn log_sink(&self, tx: Option<&outbox::Sender>) -> Option<LogSink> {
        self.revision().filter(|r| r.era() == Era::Legacy)?;
        Some(LogSink {
            tx: tx.unwrap_or(&self.outbound).clone(),
            level: Arc::clone(&self.log_level),
            screen: None,
        })
    }

    /// Delivers a catalog change: to a legacy client that initialized (mcpx declared
    /// `listChanged`, so it must deliver), and to every listen that opted into this kind.
    pub fn list_changed(&self, kind: ListKind) {
        let state = self.lock();
        // A legacy session hears the changes its revision can name (not an extension's of the
        // modern era: event types).
        if state.revision.is_some() && kind.notification().in_era(crate::protocol::Era::Legacy) {
            let _ = self
                .outbound
                .try_send(Notification::new(kind.notification(), json!({})));
        }
        for listen in state.listens.iter().filter(|l| l.lists.contains(&kind)) {
            listen.send(kind.notification(), json!({}));
        }
    }

    /// Sends a notification of its own, outside any request (a task's status change).
    /// Where its unsolicited notifications go (over HTTP, the session's GET stream).
    pub(super) fn session_stream(&self) -> outbox::Sender {
        self.outbound.clone()
    }

    pub(super) fn notify(&self, notification: Notification) {
        let _ = self.outbound.try_send(notification);
    }

    /// Delivers `resources/updated` to a subscription that covers `uri` (the same URI, or one it
    /// is a sub-resource of).
    pub fn resource_updated(&self, uri: &str) {
        let state = self.lock();
        let covers = |subscribed: &String| super::own_events::covers(subscribed, uri);
        if state.resource_subscriptions.iter().any(covers) {
            let updated = Notification::new(Notice::ResourcesUpdated, json!({ "uri": uri }));
            let _ = self.outbound.try_send(updated);
        }
        for listen in state
            .listens
            .iter()
            .filter(|l| l.resources.iter().any(covers))
        {
            listen.send(Notice::ResourcesUpdated, json!({ "uri": uri }));
        }
    }
}

/// Forgets a request of mcpx's to the client however its wait ends.
struct Forget<'a> {
    client: &'a Client,
    id: &'a Id,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.client.lock().awaiting.remove(self.id);
    }
}

/// A notification for a listen stream, tagged with its subscription id.
pub fn tagged(notice: Notice, mut params: Value, id: &Id) -> Notification {
    params["_meta"] = json!({ SUBSCRIPTION_ID: id.to_value() });
    Notification::new(notice, params)
}
