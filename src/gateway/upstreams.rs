//! The gateway's upstreams: their lifecycle, kept in one place.
//!
//! Each configured server is an [`Upstream`] with a stable id (what the catalog routes to), its
//! live connection, its state and its last listing. A server that exits is revived by
//! supervision: restarted after an exponential, jittered backoff, its catalog re-listed and
//! diffed so clients hear `list_changed` only when something changed; one that keeps crashing is
//! damped to the longest backoff and its tools are withdrawn until it comes back. A reload swaps
//! the set of servers: added ones start, removed ones stop, changed ones restart.

use super::{catalog, Catalog, Gateway, Listing, Owner};
use crate::cancel::Cancel;
use crate::config::{Config, Server, UpstreamEra, BUILTIN_SERVER, DEFAULT_MAX_IN_FLIGHT};
use crate::jsonrpc::ErrorObject;
use crate::limit::Limit;
use crate::protocol::Era;
use crate::sync::{lock, read, write};
use crate::upstream::failure::Failure;
use crate::upstream::http::HttpUpstream;
use crate::upstream::stdio::StdioUpstream;
use crate::upstream::{Caller, Connection, Handshake};
use crate::upstream::{Event, ListKind};
use crate::view::UpstreamView;
use async_channel::Receiver;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The first restart's delay; each failure in a row doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest delay between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Exits within this window count towards a crash loop.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// This many exits within the window is a crash loop.
const CRASH_LOOP: usize = 5;
/// How long an upstream gets to exit once its stdin closes, at a restart or removal.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// Where an upstream stands.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamState {
    /// Starting or handshaking.
    Starting,
    /// Serving.
    Ready,
    /// Not serving; supervision starts it again at `next`.
    Down {
        /// Why it is down: its start failed, or its process exited.
        reason: String,
        /// When the next start is due.
        next: Instant,
        /// Whether it crashed so often that its catalog was withdrawn.
        crash_looping: bool,
    },
}

impl UpstreamState {
    fn describe(&self) -> String {
        match self {
            UpstreamState::Starting => "starting".into(),
            UpstreamState::Ready => "ready".into(),
            UpstreamState::Down {
                reason,
                next,
                crash_looping,
            } => {
                let wait = next.saturating_duration_since(Instant::now()).as_secs_f64();
                let looping = if *crash_looping {
                    " (crash loop: tools withdrawn)"
                } else {
                    ""
                };
                format!("failed: {reason}; next start in {wait:.1}s{looping}")
            }
        }
    }
}

/// Restart pacing for one upstream.
#[derive(Debug, Default)]
struct Backoff {
    failures_in_a_row: u32,
    recent_exits: VecDeque<Instant>,
}

impl Backoff {
    /// Records a failure; returns the delay before the next start and whether it is looping.
    fn failed(&mut self) -> (Duration, bool) {
        let now = Instant::now();
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        self.recent_exits.push_back(now);
        while self
            .recent_exits
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.recent_exits.pop_front();
        }
        let looping = self.recent_exits.len() >= CRASH_LOOP;
        let exponent = self.failures_in_a_row.saturating_sub(1).min(16);
        let delay = if looping {
            MAX_BACKOFF
        } else {
            (FIRST_BACKOFF * 2u32.pow(exponent)).min(MAX_BACKOFF)
        };
        // Jitter, so that servers that died together do not all come back at once.
        (delay.mul_f64(0.8 + fastrand::f64() * 0.4), looping)
    }

    fn succeeded(&mut self) {
        self.failures_in_a_row = 0;
    }
}

/// One configured upstream and what mcpx knows of it.
#[derive(Debug)]
pub(super) struct Upstream {
    /// Never reused, so a route to a removed server can never reach its replacement.
    pub(super) id: usize,
    pub(super) name: String,
    pub(super) config: Server,
    state: Mutex<UpstreamState>,
    pub(super) handshake: Mutex<Option<Handshake>>,
    connection: Mutex<Option<Connection>>,
    pub(super) listing: Mutex<Listing>,
    /// Counts starts; an event from an older start is about a process that is gone.
    generation: AtomicU64,
    /// Counts starts after the first (after a crash, or asked for), whether they served or not.
    restarts: AtomicU64,
    backoff: Mutex<Backoff>,
    /// Fired when the upstream is removed by a reload: supervision stops reviving it.
    removed: Cancel,
    /// Whether a supervision loop is already reviving it (there must be one at most).
    reviving: AtomicBool,
    /// Its requests in flight, against `maxInFlight`.
    pub(super) in_flight: Arc<Limit>,
}

/// Clears a flag when dropped, however the task holding it ends.
struct ClearOnDrop<'a>(&'a AtomicBool);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Upstream {
    /// Whether mcpx speaks 2026-07-28 to it.
    pub(super) fn is_modern(&self) -> bool {
        lock(&self.handshake)
            .as_ref()
            .is_some_and(|h| h.revision.era() == Era::Modern)
    }

    /// Whether it declared `resources.subscribe`.
    pub(super) fn supports_subscribe(&self) -> bool {
        lock(&self.handshake)
            .as_ref()
            .is_some_and(|h| h.capabilities["resources"]["subscribe"] == json!(true))
    }

    fn view(&self) -> UpstreamView {
        let handshake = lock(&self.handshake).clone();
        let listing = lock(&self.listing);
        UpstreamView {
            name: self.name.clone(),
            state: lock(&self.state).describe(),
            revision: handshake.as_ref().map(|h| h.revision.as_str().to_owned()),
            server_info: handshake.map(|h| h.server_info).unwrap_or(Value::Null),
            tools: listing.tools.len(),
            prompts: listing.prompts.len(),
            resources: listing.resources.len(),
            restarts: self.restarts.load(Ordering::Relaxed),
        }
    }
}

/// The configured upstreams, in configuration (name) order.
#[derive(Debug, Default)]
pub(super) struct Upstreams {
    list: RwLock<Vec<Arc<Upstream>>>,
    next_id: AtomicUsize,
}

impl Upstreams {
    pub(super) fn from_config(config: &Config) -> Self {
        let upstreams = Upstreams::default();
        let list = config
            .servers
            .iter()
            .map(|(name, server)| upstreams.make(name, server))
            .collect();
        *write(&upstreams.list) = list;
        upstreams
    }

    fn make(&self, name: &str, config: &Server) -> Arc<Upstream> {
        Arc::new(Upstream {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            name: name.to_owned(),
            config: config.clone(),
            state: Mutex::new(UpstreamState::Starting),
            handshake: Mutex::new(None),
            connection: Mutex::new(None),
            listing: Mutex::default(),
            generation: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            backoff: Mutex::default(),
            removed: Cancel::new(),
            reviving: AtomicBool::new(false),
            in_flight: Limit::new(
                format!("servers.{name}.maxInFlight"),
                config.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            ),
        })
    }

    pub(super) fn all(&self) -> Vec<Arc<Upstream>> {
        read(&self.list).clone()
    }

    pub(super) fn get(&self, id: usize) -> Option<Arc<Upstream>> {
        self.all().into_iter().find(|u| u.id == id)
    }

    fn by_name(&self, name: &str) -> Option<Arc<Upstream>> {
        self.all().into_iter().find(|u| u.name == name)
    }
}

impl Gateway {
    /// Starts every upstream concurrently and builds the merged catalog. A server that fails is
    /// logged, reported and revived by supervision while the others serve; only a name
    /// collision stops mcpx, because it would route calls to the wrong server.
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        let (events_tx, events_rx) = async_channel::unbounded();
        let _ = self.events.set(events_tx);
        let starts: Vec<_> = self
            .upstreams
            .all()
            .into_iter()
            .map(|upstream| {
                let gateway = Arc::clone(self);
                smol::spawn(async move {
                    if !gateway.start_upstream(&upstream).await {
                        gateway.revive(upstream);
                    }
                })
            })
            .collect();
        for start in starts {
            start.await;
        }
        let catalog = self.build_catalog()?;
        *write(&self.catalog) = Arc::new(catalog);
        let _ = self.ready.set(()).await;
        let gateway = Arc::clone(self);
        smol::spawn(async move { gateway.follow_events(events_rx).await }).detach();
        Ok(())
    }

    /// Starts (or starts again) one upstream: spawn, handshake, list. True if it serves.
    async fn start_upstream(&self, upstream: &Arc<Upstream>) -> bool {
        let Some(events) = self.events.get().cloned() else {
            return false;
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
        }
        let outcome = async {
            let connection = match config.launch() {
                crate::config::Launch::Stdio(_) => Connection::Stdio(StdioUpstream::spawn(
                    &upstream.name,
                    upstream.id,
                    generation,
                    &config,
                    self.launcher.as_deref(),
                    self.max_message_bytes,
                    events,
                )?),
                crate::config::Launch::Http(_) => Connection::Http(HttpUpstream::new(
                    &upstream.name,
                    upstream.id,
                    &config,
                    events,
                )?),
            };
            *lock(&upstream.connection) = Some(connection.clone());
            let handshake = connection.handshake().await?;
            let listing = list_everything(&connection, &handshake.capabilities).await?;
            Ok::<_, String>((handshake, listing))
        }
        .await;
        let serving = match outcome {
            Ok((handshake, listing)) => {
                tracing::info!(server = %upstream.name, revision = %handshake.revision, tools = listing.tools.len(), "upstream ready");
                *lock(&upstream.handshake) = Some(handshake);
                *lock(&upstream.listing) = listing;
                *lock(&upstream.state) = UpstreamState::Ready;
                lock(&upstream.backoff).succeeded();
                true
            }
            Err(reason) => {
                tracing::error!(server = %upstream.name, "upstream failed to start: {reason}");
                if let Some(connection) = lock(&upstream.connection).take() {
                    connection.stop();
                }
                *lock(&upstream.state) = UpstreamState::Down {
                    reason,
                    next: Instant::now(),
                    crash_looping: false,
                };
                false
            }
        };
        self.registry.notify_changed();
        serving
    }

    pub(super) fn build_catalog(&self) -> Result<Catalog, String> {
        let builtin = super::builtin::listing();
        let upstreams = self.upstreams.all();
        let listings: Vec<Listing> = upstreams.iter().map(|u| lock(&u.listing).clone()).collect();
        let mut sources = vec![catalog::Source {
            server: BUILTIN_SERVER,
            prefix: BUILTIN_SERVER,
            owner: Owner::Builtin,
            listing: &builtin,
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
                }),
        );
        Catalog::build(&sources)
    }

    /// Acts on what upstreams report, for as long as any upstream may report anything.
    async fn follow_events(self: Arc<Self>, events: Receiver<Event>) {
        while let Ok(event) = events.recv().await {
            match event {
                Event::ListChanged { upstream, kind } => {
                    if let Some(upstream) = self.upstreams.get(upstream) {
                        self.relist(&upstream, kind).await;
                    }
                }
                Event::ResourceUpdated { uri } => {
                    for client in self.clients() {
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

    async fn relist(&self, upstream: &Upstream, kind: ListKind) {
        let Some(connection) = lock(&upstream.connection).clone() else {
            return;
        };
        let cancel = Cancel::new();
        let mut fresh = lock(&upstream.listing).clone();
        let listed = match kind {
            ListKind::Tools => list_all(&connection, "tools/list", "tools", &cancel)
                .await
                .map(|t| fresh.tools = t),
            ListKind::Prompts => list_all(&connection, "prompts/list", "prompts", &cancel)
                .await
                .map(|p| fresh.prompts = p),
            ListKind::Resources => {
                match list_all(&connection, "resources/list", "resources", &cancel).await {
                    Ok(resources) => {
                        fresh.resources = resources;
                        fresh.templates = list_all(
                            &connection,
                            "resources/templates/list",
                            "resourceTemplates",
                            &cancel,
                        )
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
        let previous = std::mem::replace(&mut *lock(&upstream.listing), fresh);
        self.publish_catalog(upstream, previous, &[kind]);
    }

    /// Rebuilds the catalog after `upstream`'s listing changed, and tells clients about `kinds`.
    /// A change that would collide with another server's names is refused (logged) and the old
    /// listing kept.
    fn publish_catalog(&self, upstream: &Upstream, previous: Listing, kinds: &[ListKind]) {
        self.registry.notify_changed();
        match self.build_catalog() {
            Ok(catalog) => *write(&self.catalog) = Arc::new(catalog),
            Err(reason) => {
                tracing::error!(server = %upstream.name, "ignored a catalog change: {reason}");
                *lock(&upstream.listing) = previous;
                return;
            }
        }
        self.announce(kinds);
    }

    fn announce(&self, kinds: &[ListKind]) {
        for client in self.clients() {
            for kind in kinds {
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
        smol::spawn(async move {
            let _done = ClearOnDrop(&upstream.reviving);
            loop {
                let (delay, looping) = lock(&upstream.backoff).failed();
                if let UpstreamState::Down { next, crash_looping, .. } = &mut *lock(&upstream.state) {
                    *next = Instant::now() + delay;
                    *crash_looping = looping;
                }
                if looping {
                    let withdrawn = std::mem::take(&mut *lock(&upstream.listing));
                    let kinds = withdrawn.differences(&Listing::default());
                    if !kinds.is_empty() {
                        tracing::warn!(server = %upstream.name, "crash loop: its tools are withdrawn until it stays up");
                        self.publish_catalog(&upstream, withdrawn, &kinds);
                    }
                }
                self.registry.notify_changed();
                let removed = smol::future::or(
                    async {
                        upstream.removed.cancelled().await;
                        true
                    },
                    async {
                        smol::Timer::after(delay).await;
                        false
                    },
                )
                .await;
                if removed {
                    return;
                }
                let previous = lock(&upstream.listing).clone();
                upstream.restarts.fetch_add(1, Ordering::Relaxed);
                if self.start_upstream(&upstream).await {
                    let kinds = previous.differences(&lock(&upstream.listing));
                    self.publish_catalog(&upstream, previous, &kinds);
                    return;
                }
            }
        })
        .detach();
    }

    /// The live connection of an upstream, or the error its callers get.
    pub(super) fn connection(
        &self,
        owner: Owner,
    ) -> Result<(Arc<Upstream>, Connection), ErrorObject> {
        let Owner::Upstream(id) = owner else {
            return Err(Failure::Refused("the built-in server has no connection".into()).into());
        };
        let upstream = self.upstreams.get(id).ok_or_else(|| {
            Failure::Refused("that upstream was removed from the configuration".into())
        })?;
        // Installed before its handshake (so a stop can reach it), but nobody else's request
        // goes to a server before it has been initialized and listed.
        let ready = *lock(&upstream.state) == UpstreamState::Ready;
        let connection = lock(&upstream.connection)
            .clone()
            .filter(|c| ready && c.is_alive());
        match connection {
            Some(connection) => Ok((upstream, connection)),
            None => Err(Failure::Refused(format!(
                "upstream {:?} is not serving ({})",
                upstream.name,
                lock(&upstream.state).describe()
            ))
            .into()),
        }
    }

    /// Each configured upstream's name, state, revision and catalog size.
    pub fn summaries(&self) -> Vec<UpstreamView> {
        self.upstreams.all().iter().map(|u| u.view()).collect()
    }

    /// The configured name of who answers for `owner`.
    pub fn upstream_name(&self, owner: Owner) -> String {
        match owner {
            Owner::Builtin => BUILTIN_SERVER.to_owned(),
            Owner::Upstream(id) => self
                .upstreams
                .get(id)
                .map(|u| u.name.clone())
                .unwrap_or_default(),
        }
    }

    /// Stops an upstream and starts it again; clients hear `list_changed` for what changed.
    pub async fn restart_upstream(&self, name: &str) -> Result<String, String> {
        let upstream = self
            .upstreams
            .by_name(name)
            .ok_or_else(|| format!("no upstream is named {name:?}"))?;
        if self.events.get().is_none() {
            return Err("mcpx is still starting its upstreams".into());
        }
        let old = lock(&upstream.connection).take();
        if let Some(old) = old {
            old.shutdown(STOP_GRACE).await;
        }
        let previous = lock(&upstream.listing).clone();
        upstream.restarts.fetch_add(1, Ordering::Relaxed);
        self.start_upstream(&upstream).await;
        let kinds = previous.differences(&lock(&upstream.listing));
        self.publish_catalog(&upstream, previous, &kinds);
        Ok(format!(
            "{name} restarted: {}",
            lock(&upstream.state).describe()
        ))
    }

    /// Applies a new configuration's `[servers]`: removed servers stop (their calls in flight
    /// fail), added ones start, changed ones restart; unchanged ones keep running untouched.
    /// Clients hear `list_changed` for what changed. Other sections need a restart of mcpx.
    pub async fn reload(self: &Arc<Self>, config: &Config) -> Result<String, String> {
        if self.events.get().is_none() {
            return Err("mcpx is still starting its upstreams".into());
        }
        let current = self.upstreams.all();
        let keep: Vec<Arc<Upstream>> = current
            .iter()
            .filter(|u| config.servers.get(&u.name) == Some(&u.config))
            .cloned()
            .collect();
        let leaving: Vec<Arc<Upstream>> = current
            .iter()
            .filter(|u| !keep.iter().any(|k| k.id == u.id))
            .cloned()
            .collect();
        let arriving: Vec<Arc<Upstream>> = config
            .servers
            .iter()
            .filter(|(name, _)| !keep.iter().any(|k| &k.name == *name))
            .map(|(name, server)| self.upstreams.make(name, server))
            .collect();
        let mut next: Vec<Arc<Upstream>> = keep.iter().chain(&arriving).cloned().collect();
        next.sort_by(|a, b| a.name.cmp(&b.name));
        let before = self.catalog();
        *write(&self.upstreams.list) = next;
        for upstream in &leaving {
            upstream.removed.cancel();
            let connection = lock(&upstream.connection).take();
            if let Some(connection) = connection {
                connection.shutdown(STOP_GRACE).await;
            }
        }
        let starts: Vec<_> = arriving
            .iter()
            .map(|upstream| {
                let (gateway, upstream) = (Arc::clone(self), Arc::clone(upstream));
                smol::spawn(async move {
                    if !gateway.start_upstream(&upstream).await {
                        gateway.revive(upstream);
                    }
                })
            })
            .collect();
        for start in starts {
            start.await;
        }
        match self.build_catalog() {
            Ok(catalog) => {
                let kinds = before.differences(&catalog);
                *write(&self.catalog) = Arc::new(catalog);
                self.announce(&kinds);
            }
            Err(reason) => {
                tracing::error!("after the reload: {reason}; the colliding names are not served")
            }
        }
        self.registry.notify_changed();
        let names = |list: &[Arc<Upstream>]| {
            list.iter()
                .map(|u| u.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let message = format!(
            "reloaded: started [{}], stopped [{}], unchanged [{}]",
            names(&arriving),
            names(&leaving),
            names(&keep)
        );
        tracing::info!("{message}");
        Ok(message)
    }

    /// Re-reads the configuration file mcpx started with (or the default one) and applies it; a
    /// file with errors is refused with its file, line and key, and the running one stays.
    pub async fn reload_from_disk(self: &Arc<Self>) -> Result<String, String> {
        let path = self.config_path.as_deref().map(std::path::Path::new);
        let (config, _) = Config::load(path).map_err(|e| e.to_string())?;
        self.reload(&config).await
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
            .map(|c| smol::spawn(async move { c.shutdown(grace).await }))
            .collect();
        for stop in stopping {
            stop.await;
        }
    }
}

/// Lists everything a server declares, following its pagination.
async fn list_everything(connection: &Connection, capabilities: &Value) -> Result<Listing, String> {
    let cancel = Cancel::new();
    let declared = |key: &str| capabilities.get(key).is_some_and(|v| !v.is_null());
    let mut listing = Listing::default();
    if declared("tools") {
        listing.tools = list_all(connection, "tools/list", "tools", &cancel).await?;
    }
    if declared("prompts") {
        listing.prompts = list_all(connection, "prompts/list", "prompts", &cancel).await?;
    }
    if declared("resources") {
        listing.resources = list_all(connection, "resources/list", "resources", &cancel).await?;
        // Templates are optional even for a server with resources.
        listing.templates = list_all(
            connection,
            "resources/templates/list",
            "resourceTemplates",
            &cancel,
        )
        .await
        .unwrap_or_default();
    }
    Ok(listing)
}

/// The most pages mcpx follows, so that a server whose cursors loop cannot hang it.
const MAX_PAGES: usize = 1000;

async fn list_all(
    connection: &Connection,
    method: &str,
    key: &str,
    cancel: &Cancel,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.take().map(|c| json!({ "cursor": c }));
        let page = connection
            .request(method, params, cancel, Caller::default())
            .await
            .map_err(|e| format!("{method} failed: {}", e.message))?;
        items.extend(
            page.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .cloned(),
        );
        match page.get("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => return Ok(items),
        }
    }
    Err(format!("{method} returned more than {MAX_PAGES} pages"))
}

#[cfg(test)]
mod every_revision {
    mod supervision {
        use super::super::{Backoff, CRASH_LOOP, FIRST_BACKOFF, MAX_BACKOFF};

        #[test]
        fn backoff_doubles_with_jitter_and_is_capped() {
            let mut backoff = Backoff::default();
            let (first, _) = backoff.failed();
            assert!(
                first >= FIRST_BACKOFF.mul_f64(0.8) && first <= FIRST_BACKOFF.mul_f64(1.2),
                "{first:?}"
            );
            let (second, _) = backoff.failed();
            assert!(second >= FIRST_BACKOFF.mul_f64(1.6), "{second:?}");
            backoff.succeeded();
            let (again, _) = backoff.failed();
            assert!(
                again <= FIRST_BACKOFF.mul_f64(1.2 * 2.0),
                "a success did not reset the backoff: {again:?}"
            );
        }

        #[test]
        fn a_crash_loop_is_damped_to_the_longest_backoff() {
            let mut backoff = Backoff::default();
            let mut last = (Default::default(), false);
            for _ in 0..CRASH_LOOP {
                backoff.succeeded();
                last = backoff.failed();
            }
            assert!(last.1, "five exits within a minute are a crash loop");
            assert!(last.0 >= MAX_BACKOFF.mul_f64(0.8));
        }
    }
}
