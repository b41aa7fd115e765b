//! The merged catalog in service: built from the built-in server and every upstream's listing,
//! restricted into each profile's view, and swapped in whole so that a request reads one
//! consistent catalog. Each client hears `list_changed` for what changed in its own view only.

use super::catalog::{self, Catalog, Listing};
use super::clients::Clients;
use super::collisions::Collision;
use super::guarded_listings::GuardedListings;
use super::pinning::Pinning;
use super::profile::{Profiles, ViewId, Views};
use super::upstreams::Upstream;
use super::Owner;
use crate::config::BUILTIN_SERVER;
use crate::protocol::Era;
use crate::sync::{lock, read, write};
use crate::upstream::ListKind;
use smol::lock::OnceCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The views in service, the profiles that make them, and whether the first build is done.
#[derive(Debug)]
pub(super) struct Catalogs {
    views: RwLock<Arc<Views>>,
    profiles: Profiles,
    /// The names two servers expose, as the last build left them: logged when they first
    /// appear, not at every rebuild.
    collisions: Mutex<Vec<Collision>>,
    /// Set with the first catalog (once every upstream started, or `listWait` passed).
    listed: OnceCell<()>,
    /// Set once every upstream's first start ended (it serves, or failed).
    ready: OnceCell<()>,
    /// What pinned servers may show of their listings.
    pinning: Arc<Pinning>,
    /// What servers' guardrails let their listings show.
    guarded: GuardedListings,
    /// Whether mcpx relays servers' own webhooks (the daemon, with a public URL), so that
    /// their webhook-only event types are carried.
    relays_webhooks: AtomicBool,
}

impl Catalogs {
    /// The servers' guardrails, which their listings pass.
    pub(super) fn guardrails(&self) -> &crate::guardrails::Guardrails {
        self.guarded.guardrails()
    }

    pub(super) fn new(
        profiles: Profiles,
        pinning: Arc<Pinning>,
        guardrails: Arc<crate::guardrails::Guardrails>,
    ) -> Catalogs {
        Catalogs {
            pinning,
            guarded: GuardedListings::new(guardrails),
            views: RwLock::default(),
            profiles,
            collisions: Mutex::default(),
            listed: OnceCell::new(),
            ready: OnceCell::new(),
            relays_webhooks: AtomicBool::new(false),
        }
    }

    /// Audits what the guardrails find in listings to `audit`.
    pub(super) fn audit_to(&self, audit: &Arc<crate::audit::AuditLog>) {
        self.guarded.audit_to(audit);
    }

    /// Carries servers' webhook-only event types from the next build on: mcpx relays them.
    pub(super) fn relay_webhooks(&self) {
        self.relays_webhooks.store(true, Ordering::Release);
    }

    /// The configured profiles.
    pub(super) fn profiles(&self) -> &Profiles {
        &self.profiles
    }

    /// Waits until every upstream's first start ended: a request that names something (a
    /// call, a read) comes before its server has started is answered by it, not refused as
    /// unknown.
    pub(super) async fn ready(&self) {
        self.ready.wait().await;
    }

    /// Waits for the first catalog: a list asked before then is answered from it, not from an
    /// empty one, and never waits past `[daemon] listWait` for a slow server.
    pub(super) async fn listed(&self) {
        self.listed.wait().await;
    }

    /// Every upstream's first start ended ([`Catalogs::ready`]).
    pub(super) async fn settle(&self) {
        let _ = self.ready.set(()).await;
    }

    /// The catalog as `view` sees it.
    pub(super) fn of(&self, view: ViewId) -> Arc<Catalog> {
        read(&self.views).get(view)
    }

    /// The whole merged catalog.
    pub(super) fn everything(&self) -> Arc<Catalog> {
        self.of(ViewId::EVERYTHING)
    }

    /// Every view in service.
    pub(super) fn views(&self) -> Arc<Views> {
        read(&self.views).clone()
    }

    /// The merged catalog of the built-in server and every upstream's listing (a pinned
    /// server's as its pins allow, [`Pinning::served`]; as its guardrails let it show,
    /// [`GuardedListings::served`]). A name two
    /// servers expose stays with the server that had it (the first in order, at start), and
    /// the newcomer's item is left out; each collision is logged as an error naming both when
    /// it first appears, and returned, for `mcpx reload` to report. The same rule holds at
    /// start, when an upstream's list changes, and at reload.
    pub(super) fn build(&self, upstreams: &[Arc<Upstream>]) -> (Catalog, Vec<Collision>) {
        let builtin = super::builtin::listing();
        let relays_webhooks = self.relays_webhooks.load(Ordering::Acquire);
        let listings: Vec<Listing> = upstreams
            .iter()
            .map(|u| {
                let pinned = self.pinning.served(u, lock(&u.listing).clone());
                self.guarded.served(u, pinned)
            })
            .collect();
        let mut sources = vec![catalog::Source {
            server: BUILTIN_SERVER,
            prefix: BUILTIN_SERVER,
            owner: Owner::Builtin,
            listing: &builtin,
            overrides: None,
            own_tasks: None,
            relays_webhooks,
        }];
        sources.extend(
            upstreams
                .iter()
                .zip(&listings)
                .map(|(u, listing)| catalog::Source {
                    server: &u.name,
                    prefix: u.config.prefix(&u.name),
                    owner: Owner::Upstream(u.id),
                    listing,
                    overrides: Some(&u.config.tools),
                    own_tasks: (u.runs_tasks() != Some(Era::Legacy)).then_some(u.config.tasks),
                    relays_webhooks,
                }),
        );
        let (catalog, collisions) = Catalog::build(&sources, &self.everything());
        let mut known = lock(&self.collisions);
        for collision in collisions.iter().filter(|c| !known.contains(c)) {
            tracing::error!("{collision}");
        }
        known.clone_from(&collisions);
        (catalog, collisions)
    }

    /// Puts the start's catalog in service (`server_name` names an owner for the profiles'
    /// server filters) and lets the requests waiting for it go: nobody has listed anything yet,
    /// so nobody hears of a change.
    pub(super) async fn first(&self, catalog: Catalog, server_name: impl Fn(Owner) -> String) {
        *write(&self.views) = Arc::new(self.profiles.views(catalog, server_name));
        let _ = self.listed.set(()).await;
    }

    /// Puts a rebuilt catalog in service, restricted into each view; each of `clients` hears
    /// `list_changed` for the kinds of list that changed in its own view, and for nothing else,
    /// and mcpx's own events keep each view's change.
    pub(super) fn install(
        &self,
        catalog: Catalog,
        server_name: impl Fn(Owner) -> String,
        clients: &Clients,
    ) {
        let views = Arc::new(self.profiles.views(catalog, server_name));
        let before = std::mem::replace(&mut *write(&self.views), Arc::clone(&views));
        let changed: HashMap<ViewId, Vec<ListKind>> = views
            .iter()
            .map(|(view, now)| (view, before.get(view).differences(now)))
            .collect();
        for client in clients.all() {
            for kind in changed.get(&client.view).into_iter().flatten() {
                client.list_changed(*kind);
            }
        }
        for (view, kinds) in changed.iter().filter(|(_, kinds)| !kinds.is_empty()) {
            clients.own_events().lists_changed(*view, kinds);
        }
    }
}
