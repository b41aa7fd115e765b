//! Supervision: upstreams started together at first, each started again after its backoff when
//! it goes down, the catalog rebuilt from what they list, and clients told of each change.

use super::profile::{ViewId, Views};
use super::upstreams::{Upstream, UpstreamState, STOP_GRACE};
use super::{catalog, Catalog, CommandError, Gateway, Listing, Owner};
use crate::cancel::Cancel;
use crate::config::{RemoteTransport, UpstreamEra, BUILTIN_SERVER};
use crate::json::Member;
use crate::metrics;
use crate::protocol::{Era, Extension, Extensions, Method};
use crate::sync::{lock, read, write};
use crate::upstream::{Caller, Connection, Event, ListKind, StartError};
use async_channel::Receiver;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The least time between two listings of one upstream's catalog after `list_changed`.
const RELIST_GAP: Duration = Duration::from_millis(250);

impl Gateway {
    /// Starts every upstream concurrently and builds the merged catalog. A server that fails is
    /// logged, reported and revived by supervision while the others serve; a name two servers
    /// expose is served by the first ([`Gateway::build_catalog`]).
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        self.observer.open_audit()?;
        let (events_tx, events_rx) = async_channel::unbounded();
        let _ = self.events.set(events_tx);
        self.start_all(self.upstreams.all()).await;
        let (catalog, _) = self.build_catalog();
        *write(&self.views) = self.views_of(catalog);
        let _ = self.ready.set(()).await;
        let gateway = Arc::clone(self);
        crate::runtime::spawn(async move { gateway.follow_events(events_rx).await }).detach();
        Ok(())
    }

    /// Starts `upstreams` together; each serves, or is handed to supervision unless its
    /// configuration cannot work.
    pub(super) async fn start_all(self: &Arc<Self>, upstreams: Vec<Arc<Upstream>>) {
        let starts: Vec<_> = upstreams
            .into_iter()
            .map(|upstream| {
                let gateway = Arc::clone(self);
                crate::runtime::spawn(async move {
                    if upstream.is_lazy() {
                        gateway.start_lazy(&upstream).await;
                    } else if let Err(error) = gateway.start_upstream(&upstream).await {
                        if error.is_retried() {
                            gateway.revive(upstream);
                        }
                    }
                })
            })
            .collect();
        for start in starts {
            start.await;
        }
    }

    /// Starts (or starts again) one upstream: spawn, handshake, list; its state says how that
    /// went, and the error what supervision is to do.
    pub(super) async fn start_upstream(&self, upstream: &Arc<Upstream>) -> Result<(), StartError> {
        let Some(events) = self.events.get().cloned() else {
            return Err(StartError::Failed("mcpx is still starting".into()));
        };
        let generation = upstream.generation.fetch_add(1, Ordering::AcqRel) + 1;
        *lock(&upstream.state) = UpstreamState::Starting;
        self.registry.notify_changed();
        // Probe once: a restart speaks the era the first handshake found, so a server that exits
        // on the wrong first request is not killed by every restart's probe.
        let mut config = upstream.config.clone();
        if config.era == UpstreamEra::Auto {
            config.era = lock(&upstream.handshake)
                .as_ref()
                .map_or(UpstreamEra::Auto, |h| match h.revision.era() {
                    Era::Modern => UpstreamEra::Modern,
                    Era::Legacy => UpstreamEra::Legacy,
                });
            // The connection asks `initialize` first of one that exits on the probe.
            self.recall_exit_on_discover(upstream);
        }
        config.transport = *lock(&upstream.transport);
        let outcome = async {
            let mut connection = self.upstreams.connect(upstream, &config, generation, events.clone())?;
            *lock(&upstream.connection) = Some(connection.clone());
            let mut handshake = connection.handshake().await;
            // The specification's backwards compatibility: a server that refuses the POSTs with
            // a 4xx may speak the 2024-11-05 HTTP+SSE transport.
            let refused_posts = matches!(&connection, Connection::Http(http) if http.refused_posts());
            if let (Err(reason), true) = (&handshake, refused_posts) {
                if config.transport == RemoteTransport::Auto {
                    tracing::info!(server = %upstream.name, "refuses Streamable HTTP ({reason}); trying HTTP+SSE");
                    connection.stop();
                    config.transport = RemoteTransport::Sse;
                    connection = self.upstreams.connect(upstream, &config, generation, events)?;
                    *lock(&upstream.connection) = Some(connection.clone());
                    handshake = connection.handshake().await;
                }
            }
            let refused = |reason: String| match connection.needs_login() {
                true => StartError::NeedsLogin,
                false => StartError::Failed(reason),
            };
            let handshake = handshake.map_err(refused)?;
            let listing = list_everything(&connection, &handshake.capabilities)
                .await
                .map_err(refused)?;
            *lock(&upstream.transport) = config.transport;
            Ok::<_, StartError>((handshake, listing))
        }
        .await;
        let started = match outcome {
            Ok((handshake, listing)) => {
                tracing::info!(server = %upstream.name, revision = %handshake.revision, tools = listing.tools.len(), "upstream ready");
                *lock(&upstream.handshake) = Some(handshake);
                *lock(&upstream.listing) = listing;
                *lock(&upstream.state) = UpstreamState::Ready;
                lock(&upstream.backoff).succeeded();
                self.remember_listing(upstream);
                Ok(())
            }
            Err(error) => {
                tracing::error!(server = %upstream.name, "upstream failed to start: {error}");
                let connection = lock(&upstream.connection).take();
                // A child that a `server/discover` probe ended is a legacy server that takes
                // nothing before `initialize`: it is started again with that first.
                let probed = config.era == UpstreamEra::Auto
                    && !upstream.exited_on_discover.load(Ordering::Relaxed)
                    && matches!(&connection, Some(Connection::Stdio(c)) if !c.is_alive());
                if probed {
                    tracing::warn!(server = %upstream.name, "exited on server/discover: started again with initialize");
                    self.note_exit_on_discover(upstream);
                }
                if let Some(connection) = connection {
                    connection.stop();
                }
                *lock(&upstream.state) = match &error {
                    StartError::NeedsLogin => UpstreamState::NeedsLogin {
                        how: format!("run `mcpx auth login {}`", upstream.name),
                    },
                    StartError::Misconfigured(reason) => UpstreamState::Misconfigured {
                        reason: reason.clone(),
                    },
                    StartError::Failed(reason) => UpstreamState::Down {
                        reason: reason.clone(),
                        next: Instant::now(),
                        crash_looping: false,
                    },
                };
                Err(error)
            }
        };
        self.registry.notify_changed();
        started
    }

    /// The merged catalog of the built-in server and every upstream's listing. A name two
    /// servers expose stays with the server that had it (the first in order, at start), and
    /// the newcomer's item is left out; each collision is logged as an error naming both when
    /// it first appears, and returned, for `mcpx reload` to report. The same rule holds at
    /// start, when an upstream's list changes, and at reload.
    pub(super) fn build_catalog(&self) -> (Catalog, Vec<catalog::Collision>) {
        let builtin = super::builtin::listing();
        let upstreams = self.upstreams.all();
        let listings: Vec<Listing> = upstreams.iter().map(|u| lock(&u.listing).clone()).collect();
        let mut sources = vec![catalog::Source {
            server: BUILTIN_SERVER,
            prefix: BUILTIN_SERVER,
            owner: Owner::Builtin,
            listing: &builtin,
            overrides: None,
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
                }),
        );
        let previous = read(&self.views).get(ViewId::EVERYTHING);
        let (catalog, collisions) = Catalog::build(&sources, &previous);
        let mut known = lock(&self.collisions);
        for collision in collisions.iter().filter(|c| !known.contains(c)) {
            tracing::error!("{collision}");
        }
        known.clone_from(&collisions);
        (catalog, collisions)
    }

    /// Acts on what upstreams report, for as long as any upstream may report anything.
    async fn follow_events(self: Arc<Self>, events: Receiver<Event>) {
        while let Ok(event) = events.recv().await {
            match event {
                Event::ListChanged { upstream, kind } => {
                    if let Some(upstream) = self.upstreams.get(upstream) {
                        Arc::clone(&self).list_changed(upstream, kind);
                    }
                }
                Event::Log { server, params } => self.broadcast_log(&server, &params),
                Event::ResourceUpdated { uri } => {
                    for client in self.clients.all() {
                        client.resource_updated(&uri);
                    }
                }
                Event::Exited {
                    upstream,
                    generation,
                    reason,
                } => {
                    let Some(upstream) = self.upstreams.get(upstream) else {
                        continue;
                    };
                    // Only a serving upstream's exit is news here: a failed start is revived by
                    // whoever started it, and an earlier start's process was replaced already.
                    let serving = *lock(&upstream.state) == UpstreamState::Ready;
                    if serving
                        && upstream.generation.load(Ordering::Acquire) == generation
                        && !upstream.removed.is_cancelled()
                    {
                        lock(&upstream.connection).take();
                        *lock(&upstream.state) = UpstreamState::Down {
                            reason: format!("exited: {reason}"),
                            next: Instant::now(),
                            crash_looping: false,
                        };
                        Arc::clone(&self).revive(upstream);
                    }
                }
            }
        }
    }

    /// An upstream's `list_changed`: the catalog is listed again at once, and a storm of them
    /// costs one listing per [`RELIST_GAP`] (the last after the storm, so the newest list is
    /// what clients see), not one per notification.
    fn list_changed(self: Arc<Self>, upstream: Arc<Upstream>, kind: ListKind) {
        {
            let mut relisting = lock(&upstream.relisting);
            if let Some(again) = relisting.get_mut(&kind) {
                *again = true;
                return;
            }
            relisting.insert(kind, false);
        }
        crate::runtime::spawn(async move {
            loop {
                self.relist(&upstream, kind).await;
                crate::deadline::sleep(RELIST_GAP).await;
                let mut relisting = lock(&upstream.relisting);
                match relisting.get_mut(&kind) {
                    Some(again) if *again => *again = false,
                    _ => {
                        relisting.remove(&kind);
                        return;
                    }
                }
            }
        })
        .detach();
    }

    async fn relist(&self, upstream: &Upstream, kind: ListKind) {
        let Some(connection) = lock(&upstream.connection).clone() else {
            return;
        };
        let cancel = Cancel::new();
        let mut fresh = lock(&upstream.listing).clone();
        let listed = match kind {
            ListKind::Tools => list_all(&connection, Method::ToolsList, &cancel)
                .await
                .map(|t| fresh.tools = t),
            ListKind::Prompts => list_all(&connection, Method::PromptsList, &cancel)
                .await
                .map(|p| fresh.prompts = p),
            ListKind::Resources => {
                match list_all(&connection, Method::ResourcesList, &cancel).await {
                    Ok(resources) => {
                        fresh.resources = resources;
                        fresh.templates =
                            list_all(&connection, Method::ResourcesTemplatesList, &cancel)
                                .await
                                .unwrap_or_default();
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        };
        if let Err(reason) = listed {
            return tracing::warn!(server = %upstream.name, "could not re-list after list_changed: {reason}");
        }
        *lock(&upstream.listing) = fresh;
        self.remember_listing(upstream);
        self.publish_catalog();
    }

    /// Rebuilds the catalog after an upstream's listing changed, and tells each client what
    /// changed in its own view. A name the change would take from another server stays that
    /// server's ([`Gateway::build_catalog`]).
    pub(super) fn publish_catalog(&self) {
        self.registry.notify_changed();
        let (catalog, _) = self.build_catalog();
        self.install(catalog);
    }

    /// The catalog as each view sees it.
    fn views_of(&self, catalog: Catalog) -> Arc<Views> {
        Arc::new(
            self.profiles
                .views(catalog, |owner| self.upstream_name(owner)),
        )
    }

    /// Puts a rebuilt catalog in service; each client hears `list_changed` for the kinds of list
    /// that changed in its own view, and for nothing else.
    pub(super) fn install(&self, catalog: Catalog) {
        let views = self.views_of(catalog);
        let before = std::mem::replace(&mut *write(&self.views), Arc::clone(&views));
        let changed: HashMap<ViewId, Vec<ListKind>> = views
            .iter()
            .map(|(view, now)| (view, before.get(view).differences(now)))
            .collect();
        for client in self.clients.all() {
            for kind in changed.get(&client.view).into_iter().flatten() {
                client.list_changed(*kind);
            }
        }
    }

    /// Supervision: starts a down upstream again after its backoff, until it serves or is
    /// removed. Its in-flight calls already failed when its process ended.
    fn revive(self: Arc<Self>, upstream: Arc<Upstream>) {
        if upstream.reviving.swap(true, Ordering::AcqRel) {
            return;
        }
        crate::runtime::spawn(async move {
            let _done = ClearOnDrop(&upstream.reviving);
            loop {
                let (delay, looping) = lock(&upstream.backoff).failed();
                if let UpstreamState::Down { next, crash_looping, .. } = &mut *lock(&upstream.state) {
                    *next = Instant::now() + delay;
                    *crash_looping = looping;
                }
                if looping {
                    let withdrawn = std::mem::take(&mut *lock(&upstream.listing));
                    if withdrawn != Listing::default() {
                        tracing::warn!(server = %upstream.name, "crash loop: its tools are withdrawn until it stays up");
                        self.publish_catalog();
                    }
                }
                self.registry.notify_changed();
                if upstream.removed_within(delay).await {
                    return;
                }
                upstream.restarts.fetch_add(1, Ordering::Relaxed);
                metrics::upstream_restarted(&upstream.name);
                match self.start_upstream(&upstream).await {
                    Ok(()) => {
                        self.publish_catalog();
                        return;
                    }
                    Err(error) if !error.is_retried() => return,
                    Err(_) => {}
                }
            }
        })
        .detach();
    }

    /// Stops an upstream and starts it again; clients hear `list_changed` for what changed.
    pub async fn restart_upstream(&self, name: &str) -> Result<String, CommandError> {
        let upstream = self
            .upstreams
            .by_name(name)
            .ok_or_else(|| CommandError::NoSuchUpstream(name.to_owned()))?;
        if self.events.get().is_none() {
            return Err(CommandError::NotReady);
        }
        let old = lock(&upstream.connection).take();
        if let Some(old) = old {
            old.shutdown(STOP_GRACE).await;
        }
        upstream.restarts.fetch_add(1, Ordering::Relaxed);
        metrics::upstream_restarted(&upstream.name);
        // Its state tells how the start went.
        let _ = self.start_upstream(&upstream).await;
        self.publish_catalog();
        Ok(format!(
            "{name} restarted: {}",
            lock(&upstream.state).describe()
        ))
    }

    /// Shuts every upstream down together: each gets `grace` to exit on its own once its stdin
    /// closes (so cancellations just sent still land), then is killed.
    pub async fn shutdown(&self, grace: Duration) {
        let upstreams = self.upstreams.all();
        for upstream in &upstreams {
            upstream.removed.cancel();
        }
        let stopping: Vec<_> = upstreams
            .iter()
            .filter_map(|u| lock(&u.connection).take())
            .map(|c| crate::runtime::spawn(async move { c.shutdown(grace).await }))
            .collect();
        for stop in stopping {
            stop.await;
        }
    }
}

/// Lists everything a server declares, following its pagination.
async fn list_everything(connection: &Connection, capabilities: &Value) -> Result<Listing, String> {
    let cancel = Cancel::new();
    let declared = |key: &str| capabilities.member(key).is_some_and(|v| !v.is_null());
    let mut listing = Listing::default();
    if declared("tools") {
        listing.tools = list_all(connection, Method::ToolsList, &cancel).await?;
    }
    if declared("prompts") {
        listing.prompts = list_all(connection, Method::PromptsList, &cancel).await?;
    }
    if declared("resources") {
        listing.resources = list_all(connection, Method::ResourcesList, &cancel).await?;
        // Templates are optional even for a server with resources.
        listing.templates = list_all(connection, Method::ResourcesTemplatesList, &cancel)
            .await
            .unwrap_or_default();
    }
    if Extensions::declared_in(Some(capabilities)).contains(Extension::Skills) {
        listing.skills = list_all(connection, Method::SkillsList, &cancel).await?;
    }
    Ok(listing)
}

/// The most pages mcpx follows, so that a server whose cursors loop cannot hang it.
const MAX_PAGES: usize = 1000;

async fn list_all(
    connection: &Connection,
    method: Method,
    cancel: &Cancel,
) -> Result<Vec<Value>, String> {
    let key = method.list_key().unwrap_or_default();
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.take().map(|c| json!({ "cursor": c }));
        let page = connection
            .request(method.as_str(), params, cancel, Caller::default())
            .await
            .map_err(|e| format!("{method} failed: {}", e.message))?;
        items.extend(
            page.member(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        );
        match page.member("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => return Ok(items),
        }
    }
    Err(format!("{method} returned more than {MAX_PAGES} pages"))
}

/// Clears a flag when dropped, however the task holding it ends.
struct ClearOnDrop<'a>(&'a AtomicBool);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
