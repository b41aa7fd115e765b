//! Supervision: upstreams started together at first, each started again after its backoff when
//! it goes down, the catalog rebuilt from what they list, and clients told of each change.
//!
//! The [`Supervisor`] owns the upstreams' lifecycle (start, revival, restart, relisting after
//! `list_changed`, lazy wake and idle stop, reload, shutdown); the gateway asks it for a serving
//! connection and otherwise only dispatches. What it publishes goes through [`Catalogs`], and
//! what reaches every client through [`Clients`].

mod instances;
pub(super) use instances::NotStarted;
mod lazy;
mod listening;
mod reload;

use super::catalogs::Catalogs;
use super::clients::Clients;
use super::link::UpstreamState;
use super::link::STOP_GRACE;
use super::subscriptions::HeldSubscriptions;
use super::upstreams::{Upstream, Upstreams};
use super::{CommandError, Listing};
use crate::cancel::Cancel;
use crate::config::{RemoteTransport, UpstreamEra};
use crate::json::Member;
use crate::ledger::Ledger;
use crate::metrics;
use crate::protocol::{task, Era, Extension, Extensions, Method};
use crate::sync::lock;
use crate::upstream::{Caller, Connection, Event, LinkId, ListKind, StartError};
use async_channel::{Receiver, Sender};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What one listing after `list_changed` found: one kind of the server's catalog.
enum Relisted {
    Tools(Vec<Value>),
    Prompts(Vec<Value>),
    Resources(Vec<Value>, Vec<Value>),
    Events(Vec<Value>),
}

/// The least time between two listings of one upstream's catalog after `list_changed`.
const RELIST_GAP: Duration = Duration::from_millis(250);

/// The upstreams' keeper, and what it tells of them.
#[derive(Debug)]
pub(super) struct Supervisor {
    upstreams: Upstreams,
    /// `[daemon] listWait`: how long the first lists wait for servers starting.
    list_wait: Duration,
    /// Where upstreams report, once started.
    events: OnceLock<Sender<Event>>,
    /// Where lazy servers' catalogs are kept between runs ([`lazy`]).
    catalog_cache: Option<PathBuf>,
    catalogs: Arc<Catalogs>,
    clients: Arc<Clients>,
    /// What clients hold subscribed: a lazy server holding one is busy.
    subscriptions: Arc<HeldSubscriptions>,
    ledger: Arc<Ledger>,
    /// Who hears of a task's status change, which only the gateway can route to its client.
    task_status: OnceLock<TaskStatusHeard>,
    /// Itself, for the tasks a start leaves running ([`Supervisor::keep_listening`]).
    me: std::sync::Weak<Supervisor>,
}

/// Hears an upstream's `notifications/tasks/status`: the upstream, and the notification's params.
pub(super) struct TaskStatusHeard(pub Box<dyn Fn(usize, Value) + Send + Sync>);

impl std::fmt::Debug for TaskStatusHeard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskStatusHeard")
    }
}

impl Supervisor {
    pub(super) fn new(
        upstreams: Upstreams,
        catalogs: Arc<Catalogs>,
        clients: Arc<Clients>,
        subscriptions: Arc<HeldSubscriptions>,
        ledger: Arc<Ledger>,
        list_wait: Duration,
    ) -> Arc<Supervisor> {
        Arc::new_cyclic(|me| Supervisor {
            list_wait,
            upstreams,
            events: OnceLock::new(),
            catalog_cache: lazy::default_cache_dir(),
            catalogs,
            clients,
            subscriptions,
            ledger,
            task_status: OnceLock::new(),
            me: me.clone(),
        })
    }

    /// Where upstreams' task status changes go from now on.
    pub(super) fn on_task_status(&self, heard: TaskStatusHeard) {
        let _ = self.task_status.set(heard);
    }

    /// The configured upstreams.
    pub(super) fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// Whether [`Supervisor::start`] has run: before it, nothing can be restarted or reloaded.
    pub(super) fn started(&self) -> Result<(), CommandError> {
        match self.events.get() {
            Some(_) => Ok(()),
            None => Err(CommandError::NotReady),
        }
    }

    /// Starts every upstream concurrently and puts the merged catalog in service. A server that
    /// fails is logged, reported and revived while the others serve; a name two servers expose
    /// is served by the first ([`Catalogs::build`]).
    pub(super) async fn start(self: &Arc<Self>) {
        let (events_tx, events_rx) = async_channel::unbounded();
        let _ = self.events.set(events_tx);
        let supervisor = Arc::clone(self);
        crate::runtime::spawn(async move { supervisor.follow_events(events_rx).await }).detach();
        // The first lists wait `[daemon] listWait` for the servers starting, not for the
        // slowest: those not ready by then join when they are, announced by `list_changed`.
        let supervisor = Arc::clone(self);
        let mut starting =
            crate::runtime::spawn(
                async move { supervisor.start_all(supervisor.upstreams.all()).await },
            );
        let all_started = smol::future::or(
            async {
                (&mut starting).await;
                true
            },
            async {
                crate::deadline::sleep(self.list_wait).await;
                false
            },
        )
        .await;
        let (catalog, _) = self.catalogs.build(&self.upstreams.all());
        self.catalogs
            .first(catalog, |owner| self.upstreams.name_of(owner))
            .await;
        if all_started {
            self.catalogs.settle().await;
            return;
        }
        tracing::info!("listing the servers ready after {:?} ([daemon] listWait); the others join as they start", self.list_wait);
        let supervisor = Arc::clone(self);
        crate::runtime::spawn(async move {
            starting.await;
            supervisor.publish_catalog();
            supervisor.catalogs.settle().await;
        })
        .detach();
    }

    /// Starts `upstreams` together; each serves, or is handed to supervision unless its
    /// configuration cannot work.
    pub(super) async fn start_all(self: &Arc<Self>, upstreams: Vec<Arc<Upstream>>) {
        let starts: Vec<_> = upstreams
            .into_iter()
            .map(|upstream| {
                let supervisor = Arc::clone(self);
                crate::runtime::spawn(async move {
                    if upstream.is_per_identity() {
                        supervisor.reap_idle_instances(&upstream);
                    }
                    if upstream.listed_then_stopped() {
                        supervisor.start_lazy(&upstream).await;
                        return;
                    }
                    supervisor.list_from_cache(&upstream);
                    if let Err(error) = supervisor.start_upstream(&upstream).await {
                        if error.is_retried() {
                            supervisor.revive(upstream);
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
        // A server that never started, and of which no catalog is cached, is downloading
        // itself, maybe: its first start gets the longer bound.
        let first = upstream.link.era().is_none() && !self.has_cached_catalog(upstream);
        let generation = upstream.next_start();
        upstream.link.begin_start(generation, first);
        self.ledger.notify_changed();
        // Probe once: a restart speaks the era the first handshake found, so a server that exits
        // on the wrong first request is not killed by every restart's probe.
        let mut config = upstream.config.clone();
        if config.era == UpstreamEra::Auto {
            config.era = match upstream.link.era() {
                Some(Era::Modern) => UpstreamEra::Modern,
                Some(Era::Legacy) => UpstreamEra::Legacy,
                None => UpstreamEra::Auto,
            };
            // The connection asks `initialize` first of one that exits on the probe.
            self.recall_exit_on_discover(upstream);
        }
        config.transport = *lock(&upstream.transport);
        let within = upstream.config.start_within(first);
        let outcome = async {
            let mut connection = self.upstreams.connect(upstream, &config, generation, events.clone())?;
            upstream.link.connecting(connection.clone());
            let mut handshake = connection.handshake(within).await;
            // The specification's backwards compatibility: a server that refuses the POSTs with
            // a 4xx may speak the 2024-11-05 HTTP+SSE transport.
            let refused_posts = matches!(&connection, Connection::Http(http) if http.refused_posts());
            if let (Err(reason), true) = (&handshake, refused_posts) {
                if config.transport == RemoteTransport::Auto {
                    tracing::info!(server = %upstream.name, "refuses Streamable HTTP ({reason}); trying HTTP+SSE");
                    connection.stop();
                    config.transport = RemoteTransport::Sse;
                    connection = self.upstreams.connect(upstream, &config, generation, events)?;
                    upstream.link.connecting(connection.clone());
                    handshake = connection.handshake(within).await;
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
                // A 2026-07-28 server announces changes only on a listen: one is kept open to it
                // if it declares any it can announce.
                let listened = handshake.revision.era() == Era::Modern
                    && listening::announces_anything(&handshake.capabilities);
                *lock(&upstream.listing) = listing;
                upstream.link.serve(handshake);
                if let Some(me) = self.me.upgrade().filter(|_| listened) {
                    let listening = me.keep_listening(Arc::clone(upstream), generation);
                    crate::runtime::spawn(listening).detach();
                }
                self.remember_listing(upstream);
                Ok(())
            }
            Err(error) => {
                tracing::error!(server = %upstream.name, "upstream failed to start: {error}");
                let connection = upstream.link.stop(UpstreamState::starting());
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
                upstream.link.set_state(match &error {
                    StartError::NeedsLogin => UpstreamState::NeedsLogin {
                        how: format!("run `mcpx auth login {}`", upstream.name),
                    },
                    StartError::Misconfigured(reason) => UpstreamState::Misconfigured {
                        reason: reason.clone(),
                    },
                    StartError::Failed(reason) => UpstreamState::down(reason.clone()),
                });
                Err(error)
            }
        };
        self.ledger.notify_changed();
        started
    }

    /// Acts on what upstreams report, for as long as any upstream may report anything.
    async fn follow_events(self: Arc<Self>, events: Receiver<Event>) {
        while let Ok(event) = events.recv().await {
            match event {
                // A link a later start replaced speaks of a catalog that is gone.
                Event::ListChanged { link, kind } => {
                    if let Some(upstream) = self.current(link) {
                        Arc::clone(&self).list_changed(upstream, kind);
                    }
                }
                // What an instance logs outside a call is its person's: nobody else hears it.
                Event::Log {
                    link,
                    server,
                    mut params,
                } => {
                    if let Some(upstream) = self.current(link) {
                        let guardrails = self.catalogs.guardrails();
                        let policy = guardrails.policy(upstream.config.guardrails.as_ref());
                        if let Some(screen) = super::results::screen(policy) {
                            screen.apply(&mut params);
                        }
                        self.clients.broadcast_log(&server, &params);
                    }
                }
                Event::ResourceUpdated { uri } => self.clients.resource_updated(&uri),
                Event::ListenAcknowledged { link } => {
                    if let Some(upstream) = self.current(link) {
                        upstream.listening.heard();
                    }
                }
                Event::TaskStatus { link, params } => {
                    if let Some(heard) = self.task_status.get() {
                        (heard.0)(link.upstream, params);
                    }
                }
                Event::Exited { link, reason } => {
                    let Some(upstream) = self.upstreams.get(link.upstream) else {
                        continue;
                    };
                    // A person's instance that exited is started again by their next call.
                    if let Some(instance) = upstream.instances.by_start(link.start) {
                        tracing::warn!(server = %upstream.name, person = %instance.person, "a per-identity instance ended: {reason}");
                        instance.link.exited(link.start, &reason);
                        self.ledger.notify_changed();
                        continue;
                    }
                    // Only a serving link's exit is news here: a failed start is revived by
                    // whoever started it, and an earlier start's process was replaced already.
                    if !upstream.removed.is_cancelled() && upstream.link.exited(link.start, &reason)
                    {
                        Arc::clone(&self).revive(upstream);
                    }
                }
            }
        }
    }

    /// The upstream `link` is the current link of.
    fn current(&self, link: LinkId) -> Option<Arc<Upstream>> {
        let upstream = self.upstreams.get(link.upstream)?;
        (upstream.link.generation() == link.start).then_some(upstream)
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

    /// Lists `kind` again and applies the answer to that kind alone: listings of other kinds may
    /// be in flight at the same time (a late `resources/list` answer must not put back the tools
    /// a newer `tools/list` replaced), and one of a start that has since been replaced is
    /// dropped. Listings of one kind never overlap ([`Supervisor::list_changed`]).
    async fn relist(&self, upstream: &Upstream, kind: ListKind) {
        let Some(connection) = upstream.link.connection() else {
            return;
        };
        let generation = upstream.link.generation();
        let cancel = Cancel::new();
        let listed = match kind {
            ListKind::Tools => {
                list_all(&connection, Method::ToolsList, &cancel)
                    .await
                    .map(|mut tools| {
                        upstream.link.with_handshake(|handshake| {
                            if let Some(handshake) = handshake {
                                let capabilities = &handshake.capabilities;
                                task::drop_unbacked_task_support(&mut tools, capabilities);
                            }
                        });
                        Relisted::Tools(tools)
                    })
            }
            ListKind::Prompts => list_all(&connection, Method::PromptsList, &cancel)
                .await
                .map(Relisted::Prompts),
            ListKind::Events => list_all(&connection, Method::EventsList, &cancel)
                .await
                .map(Relisted::Events),
            ListKind::Resources => {
                match list_all(&connection, Method::ResourcesList, &cancel).await {
                    Ok(resources) => Ok(Relisted::Resources(
                        resources,
                        list_all(&connection, Method::ResourcesTemplatesList, &cancel)
                            .await
                            .unwrap_or_default(),
                    )),
                    Err(e) => Err(e),
                }
            }
        };
        let relisted = match listed {
            Ok(relisted) => relisted,
            Err(reason) => {
                return tracing::warn!(server = %upstream.name, "could not re-list after list_changed: {reason}")
            }
        };
        {
            let mut listing = lock(&upstream.listing);
            if upstream.link.generation() != generation {
                return;
            }
            match relisted {
                Relisted::Tools(tools) => listing.tools = tools,
                Relisted::Prompts(prompts) => listing.prompts = prompts,
                Relisted::Events(events) => listing.events = events,
                Relisted::Resources(resources, templates) => {
                    listing.resources = resources;
                    listing.templates = templates;
                }
            }
        }
        self.remember_listing(upstream);
        self.publish_catalog();
    }

    /// Rebuilds the catalog after an upstream's listing changed, and tells each client what
    /// changed in its own view. A name the change would take from another server stays that
    /// server's ([`Catalogs::build`]).
    pub(super) fn publish_catalog(&self) -> Vec<super::collisions::Collision> {
        let (catalog, collisions) = self.catalogs.build(&self.upstreams.all());
        self.catalogs.install(
            catalog,
            |owner| self.upstreams.name_of(owner),
            &self.clients,
        );
        self.ledger.notify_changed();
        collisions
    }

    /// Supervision: starts a down upstream again after its backoff, until it serves or is
    /// removed. Its in-flight calls already failed when its process ended.
    fn revive(self: Arc<Self>, upstream: Arc<Upstream>) {
        crate::runtime::spawn(async move {
            let Some(_one_revival) = upstream.link.revival() else {
                return;
            };
            loop {
                let (delay, looping) = upstream.link.paced_after_failure();
                if looping {
                    let withdrawn = std::mem::take(&mut *lock(&upstream.listing));
                    if withdrawn != Listing::default() {
                        tracing::warn!(server = %upstream.name, "crash loop: its tools are withdrawn until it stays up");
                        self.publish_catalog();
                    }
                }
                self.ledger.notify_changed();
                if upstream.removed_within(delay).await {
                    return;
                }
                upstream.link.restarted();
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
    /// One whose start fails is revived as after a crash (unless its configuration cannot
    /// work), so that a restart never leaves a server down for good.
    pub(super) async fn restart_upstream(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<String, CommandError> {
        let upstream = self
            .upstreams
            .by_name(name)
            .ok_or_else(|| CommandError::NoSuchUpstream(name.to_owned()))?;
        self.started()?;
        // No longer serving before it is stopped: its exit is then no crash, which supervision
        // would answer with a second start racing this one.
        let old = upstream.link.stop(UpstreamState::starting());
        if let Some(old) = old {
            old.shutdown(STOP_GRACE).await;
        }
        upstream.link.restarted();
        metrics::upstream_restarted(&upstream.name);
        // Its state tells how the start went.
        if let Err(error) = self.start_upstream(&upstream).await {
            if error.is_retried() {
                Arc::clone(self).revive(Arc::clone(&upstream));
            }
        }
        self.publish_catalog();
        Ok(format!(
            "{name} restarted: {}",
            upstream.link.state().describe()
        ))
    }

    /// Shuts every upstream down together: each gets `grace` to exit on its own once its stdin
    /// closes (so cancellations just sent still land), then is killed.
    pub(super) async fn shutdown(&self, grace: Duration) {
        let upstreams = self.upstreams.all();
        for upstream in &upstreams {
            upstream.removed.cancel();
        }
        let stopping: Vec<_> = upstreams
            .iter()
            .filter_map(|u| u.link.stop(UpstreamState::down("mcpx is stopping".into())))
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
        task::drop_unbacked_task_support(&mut listing.tools, capabilities);
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
    let extensions = Extensions::declared_in(Some(capabilities));
    if extensions.contains(Extension::Skills) {
        listing.skills = list_all(connection, Method::SkillsList, &cancel).await?;
    }
    if extensions.contains(Extension::Events) {
        listing.events = list_all(connection, Method::EventsList, &cancel).await?;
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
