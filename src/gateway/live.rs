//! The live state as the ledger holds it: what the transports note in it (editors, sessions,
//! GET streams) and what the admin socket reads and acts on (the snapshot, cancelling a request,
//! ending a session). The gateway reaches the ledger through [`Live`] only.

use super::{Client, Gateway, ViewId};
use crate::cancel::Cancel;
use crate::ledger::{Ledger, StreamGuard};
use crate::protocol::Method;
use crate::view::{ProfileView, Snapshot, UpstreamView};
use event_listener::EventListener;
use std::sync::Arc;

/// The ledger as the transports and the admin socket see it: by client, not by session number.
#[derive(Debug)]
pub struct Live {
    ledger: Arc<Ledger>,
}

impl Live {
    pub(super) fn new(ledger: Arc<Ledger>) -> Live {
        Live { ledger }
    }

    /// The ledger itself, for the gateway's own bookkeeping of requests and sessions.
    pub(super) fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// How many of `client`'s requests are still in flight.
    pub fn in_flight(&self, client: &Client) -> usize {
        self.ledger.in_flight_count(client.session)
    }

    /// Cancels every request `client` has in flight (its transport is closing).
    pub fn cancel_all(&self, client: &Client) {
        self.ledger.cancel_all(client.session);
    }

    /// Notes that `client` is the attached session of the editor whose `mcpx serve` is `pid`.
    pub fn note_editor(&self, client: &Client, pid: u32) {
        self.ledger.note_editor(client.session, pid)
    }

    /// Notes who `client`'s session is for.
    pub fn note_caller(&self, client: &Client, caller: &Arc<crate::access::Identity>) {
        self.ledger.note_caller(client.session, caller)
    }

    /// Names `client`'s legacy HTTP session `id`; returns the signal that ends it, which the
    /// admin socket can fire too.
    pub fn name_session(&self, client: &Client, id: &str) -> Cancel {
        self.ledger.name_session(client.session, id)
    }

    /// Enters `client`'s GET stream in the live state; it leaves when the guard drops.
    pub fn open_get_stream(&self, client: &Client) -> StreamGuard {
        self.ledger
            .open_stream(client.session, "get", None, Vec::new())
    }

    /// Admin: cancels the request the snapshot lists under `key`, as its transport would.
    pub fn cancel_request(&self, key: u64) -> bool {
        self.ledger.cancel_key(key)
    }

    /// Admin: ends the legacy session `id`. False if there is none.
    pub fn end_session(&self, id: &str) -> bool {
        self.ledger.end_session(id)
    }

    /// The consents waiting for the owner (the built-in authorization server's).
    pub fn consents(&self) -> Arc<crate::access::builtin::consent::Consents> {
        self.ledger.consents()
    }

    /// Fires at the next change to the live state.
    pub fn changed(&self) -> EventListener {
        self.ledger.changed()
    }
}

impl Gateway {
    /// The whole live state, for the admin socket.
    pub fn snapshot(&self) -> Snapshot {
        let catalog = self.catalog();
        let subscriptions = |session: u64| {
            self.clients
                .get(session)
                .map(|c| c.subscribed_uris())
                .unwrap_or_default()
        };
        let upstream = |method: &str, named: &str| {
            let owner = super::target::owner_of_named(&catalog, Method::parse(method)?, named);
            owner.map(|o| self.supervisor.upstreams().name_of(o))
        };
        let ledger = self.live.ledger();
        let (sessions, streams, requests, totals) = ledger.views(subscriptions, upstream);
        let profiles = self.profile_views(&sessions);
        Snapshot {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            upstreams: self.summaries(),
            sessions,
            streams,
            requests,
            totals,
            awaiting_input: self.rounds.waiting(),
            config: self.config_path.clone(),
            profiles,
            tasks: self.tasks(),
            metrics: self.metrics(),
            consents: ledger.consents().views(),
            unfetched_clients: ledger.consents().unfetched(),
            pins: self.pin_reviews(),
            event_subscriptions: self.event_subscriptions.views(),
            approvals: self.approvals.views(),
        }
    }

    /// What `mcpx__upstreams` tells a client at `view`: the servers it sees, and its own
    /// profile only (every profile, to a client that sees everything).
    pub(super) fn seen_by(&self, view: ViewId) -> (Vec<UpstreamView>, Vec<ProfileView>) {
        let snapshot = self.snapshot();
        let own = self.catalogs.profiles().name(view);
        let upstreams = snapshot
            .upstreams
            .into_iter()
            .filter(|u| self.catalogs.profiles().sees_server(view, &u.name))
            .collect();
        let profiles = snapshot
            .profiles
            .into_iter()
            .filter(|p| own.is_none_or(|own| own == p.name))
            .collect();
        (upstreams, profiles)
    }

    /// Each profile with what it sees and how many of `sessions` see through it.
    fn profile_views(&self, sessions: &[crate::view::SessionView]) -> Vec<ProfileView> {
        let views = self.catalogs.views();
        self.profile_names()
            .into_iter()
            .filter_map(|name| {
                let catalog = views.get(self.profile(&name).ok()?);
                let (tools, listed_tools, prompts) = catalog.sizes();
                let sessions = sessions
                    .iter()
                    .filter(|s| s.profile.as_deref() == Some(name.as_str()))
                    .count();
                Some(ProfileView {
                    name,
                    tools,
                    listed_tools,
                    prompts,
                    sessions,
                })
            })
            .collect()
    }
}
