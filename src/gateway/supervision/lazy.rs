//! Upstreams started when needed (`start = "lazy"`): a user with twenty configured servers does
//! not pay twenty idle processes.
//!
//! A lazy server is not spawned at mcpx's start. Its catalog comes from its last run, kept in the
//! XDG cache directory under a key made from its configuration (so a changed command or URL is
//! never listed from a stale catalog) and written again whenever it runs; clients list its tools
//! with no process behind them. Every server's catalog is kept so: one that starts at mcpx's
//! start is listed from it until it has started. The first call, read, completion or subscription that needs it
//! starts it, and the caller waits. With `idleTimeout` it is stopped again once nothing has needed
//! it for that long, never while it has a request in flight or a subscription. A lazy server with
//! no cached catalog is started once at mcpx's start to learn it, then stopped. Beside the
//! catalogs is kept which servers exit on the `server/discover` probe ([`super`]).

use super::Supervisor;
use crate::config::{Server, Start};
use crate::failure::Failure;
use crate::gateway::link::UpstreamState;
use crate::gateway::link::STOP_GRACE;
use crate::gateway::upstreams::Upstream;
use crate::gateway::{Listing, Owner};
use crate::jsonrpc::ErrorObject;
use crate::sync::lock;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Upstream {
    pub(in crate::gateway) fn is_lazy(&self) -> bool {
        self.config.start == Start::Lazy
    }

    /// Whether its catalog is listed once (or read from the cache) and its link then stopped:
    /// a lazy server, started by the first call that needs it, or a per-identity one, whose
    /// calls each go to their caller's own instance.
    pub(super) fn listed_then_stopped(&self) -> bool {
        self.is_lazy() || self.is_per_identity()
    }
}

impl Supervisor {
    /// Brings a lazy server up at mcpx's start (or a reload's): listed from its cached catalog
    /// and left stopped, or started once to learn its catalog and then stopped. Its idle watch
    /// begins.
    pub(super) async fn start_lazy(self: &Arc<Self>, upstream: &Arc<Upstream>) {
        if let Some(timeout) = upstream.config.idle_timeout {
            self.watch_idle(upstream, timeout);
        }
        let cached = self.catalog_cache.as_deref().and_then(|dir| {
            let listing = read_cached(dir, &upstream.name, &upstream.config)?;
            Some(listing)
        });
        if let Some(listing) = cached {
            tracing::info!(server = %upstream.name, tools = listing.tools.len(), "lazy: listed from its last run");
            *lock(&upstream.listing) = listing;
            upstream.link.set_state(UpstreamState::Idle);
            return;
        }
        // A per-identity remote server takes only its callers' own tokens: its first caller's
        // instance lists it ([`super::instances`]).
        if upstream.is_per_identity() && upstream.config.kind().is_remote() {
            upstream.link.set_state(UpstreamState::Idle);
            return;
        }
        if self.start_upstream(upstream).await.is_ok() {
            tracing::info!(server = %upstream.name, "lazy: started once to learn its catalog");
            self.stop_idle(upstream).await;
        }
    }

    /// Lists a server about to start from its last run's catalog, if one is cached and nothing
    /// is listed of it yet: a slow start (an `npx -y` download, a container pulled) keeps no
    /// agent from its tools, whose calls wait for the start. What it lists once it runs
    /// replaces this, and clients hear of any difference.
    pub(super) fn list_from_cache(&self, upstream: &Upstream) {
        let cached = (self.catalog_cache.as_deref())
            .and_then(|dir| read_cached(dir, &upstream.name, &upstream.config));
        let mut listing = lock(&upstream.listing);
        if let Some(cached) = cached.filter(|_| *listing == Listing::default()) {
            tracing::info!(server = %upstream.name, tools = cached.tools.len(), "listed from its last run while it starts");
            *listing = cached;
        }
    }

    /// Whether a catalog of `upstream` from an earlier run is cached.
    pub(super) fn has_cached_catalog(&self, upstream: &Upstream) -> bool {
        let dir = self.catalog_cache.as_deref();
        dir.is_some_and(|dir| read_cached(dir, &upstream.name, &upstream.config).is_some())
    }

    /// Starts the lazy server behind `owner` if it is not running; the caller waits. A server
    /// that is not lazy, or runs already, is left as it is.
    pub(in crate::gateway) async fn wake(&self, owner: Owner) -> Result<(), ErrorObject> {
        let Some(upstream) = self.lazy_upstream(owner) else {
            return Ok(());
        };
        let _one_at_a_time = upstream.waking.lock().await;
        *lock(&upstream.last_needed) = Instant::now();
        if upstream.link.is_ready() {
            return Ok(());
        }
        tracing::info!(server = %upstream.name, "lazy: started for a request");
        // Boxed: a start is a large future, and every request that may wake a server (a listen
        // stream among them, which holds its task for long) would otherwise carry its size.
        let started = Box::pin(self.start_upstream(&upstream)).await;
        // What it lists now replaces what the cache said; clients hear of any difference.
        self.publish_catalog();
        started.map_err(|_| {
            Failure::Refused(format!(
                "upstream {:?} could not be started: {}",
                upstream.name,
                upstream.link.state().describe()
            ))
            .into()
        })
    }

    fn lazy_upstream(&self, owner: Owner) -> Option<Arc<Upstream>> {
        let Owner::Upstream(id) = owner else {
            return None;
        };
        self.upstreams.get(id).filter(|u| u.is_lazy())
    }

    /// Writes a server's catalog to the cache, for its next start to list it from.
    pub(super) fn remember_listing(&self, upstream: &Upstream) {
        let Some(dir) = self.catalog_cache.clone() else {
            return;
        };
        let path = cache_file(&dir, &upstream.name, &upstream.config);
        let listing = lock(&upstream.listing).clone();
        crate::runtime::spawn(smol::unblock(move || {
            if let Err(e) = write_cached(&path, &listing) {
                tracing::warn!(
                    "cannot keep a lazy server's catalog at {}: {e}",
                    path.display()
                );
            }
        }))
        .detach();
    }

    /// Stops a lazy server that nothing needs (its catalog stays listed).
    async fn stop_idle(&self, upstream: &Upstream) {
        let connection = upstream.link.stop(UpstreamState::Idle);
        if let Some(connection) = connection {
            connection.shutdown(STOP_GRACE).await;
        }
        self.ledger.notify_changed();
    }

    /// Stops `upstream` whenever nothing has needed it for `timeout`, until it is removed.
    fn watch_idle(self: &Arc<Self>, upstream: &Arc<Upstream>, timeout: Duration) {
        let (supervisor, upstream) = (Arc::downgrade(self), Arc::clone(upstream));
        let every = (timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        crate::runtime::spawn(async move {
            loop {
                let removed = upstream.removed_within(every).await;
                let Some(supervisor) = supervisor.upgrade().filter(|_| !removed) else {
                    return;
                };
                if supervisor.is_busy(&upstream) {
                    *lock(&upstream.last_needed) = Instant::now();
                    continue;
                }
                let _one_at_a_time = upstream.waking.lock().await;
                let idle_for = lock(&upstream.last_needed).elapsed();
                let running = upstream.link.is_ready();
                if running && idle_for >= timeout && !supervisor.is_busy(&upstream) {
                    tracing::info!(server = %upstream.name, "lazy: stopped after {timeout:?} idle");
                    supervisor.stop_idle(&upstream).await;
                }
            }
        })
        .detach();
    }

    /// Whether `upstream` has requests in flight or subscriptions held.
    fn is_busy(&self, upstream: &Upstream) -> bool {
        if upstream.in_flight.held() > 0 {
            return true;
        }
        let catalog = self.catalogs.everything();
        let owner = Owner::Upstream(upstream.id);
        self.subscriptions
            .any(|uri| catalog.resource_owner(uri) == Some(owner))
    }
}

impl Supervisor {
    /// Recalls whether an earlier run found that `upstream` exits on mcpx's `server/discover`
    /// probe (noted beside the catalogs), so that the probe is paid once.
    pub(super) fn recall_exit_on_discover(&self, upstream: &Upstream) {
        use std::sync::atomic::Ordering;
        if upstream.exited_on_discover.load(Ordering::Relaxed) {
            return;
        }
        let dir = self.catalog_cache.as_deref();
        if dir.is_some_and(|dir| legacy_mark(dir, &upstream.name, &upstream.config).exists()) {
            upstream.exited_on_discover.store(true, Ordering::Relaxed);
        }
    }

    /// Notes that `upstream` exits on the `server/discover` probe, for this run and the next.
    pub(super) fn note_exit_on_discover(&self, upstream: &Upstream) {
        upstream
            .exited_on_discover
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(dir) = &self.catalog_cache {
            let mark = legacy_mark(dir, &upstream.name, &upstream.config);
            let written =
                crate::private_file::create_dir(dir).and_then(|()| std::fs::write(&mark, b""));
            if let Err(e) = written {
                tracing::warn!(server = %upstream.name, "cannot note it in {}: {e}", mark.display());
            }
        }
    }
}

/// `$XDG_CACHE_HOME/mcpx/catalogs`, where lazy servers' catalogs are kept.
pub(super) fn default_cache_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "mcpx").map(|d| d.cache_dir().join("catalogs"))
}

/// A server's cache file: its name for people, and a hash of its whole configuration so that a
/// changed server is never listed from what another configuration listed.
fn cache_file(dir: &Path, name: &str, server: &Server) -> PathBuf {
    let configuration = serde_json::to_vec(&(name, server)).unwrap_or_default();
    let digest = Sha256::digest(&configuration);
    let key = hex::encode(&digest[..8]);
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    dir.join(format!("{safe}-{key}.json"))
}

/// A file whose being there says that the server exits on `server/discover` (keyed as its
/// catalog is: a changed server is probed afresh).
fn legacy_mark(dir: &Path, name: &str, server: &Server) -> PathBuf {
    cache_file(dir, name, server).with_extension("legacy")
}

fn read_cached(dir: &Path, name: &str, server: &Server) -> Option<Listing> {
    let text = std::fs::read(cache_file(dir, name, server)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Writes the file whole or not at all (a temporary file renamed over it).
fn write_cached(path: &Path, listing: &Listing) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::private_file::create_dir(dir)?;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, serde_json::to_vec(listing)?)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod every_revision {
    mod lazy {
        use crate::config::Server;
        use crate::gateway::supervision::lazy::{cache_file, read_cached, write_cached};
        use crate::gateway::Listing;
        use serde_json::json;

        #[test]
        fn a_cached_catalog_is_found_only_under_the_same_configuration() {
            let dir = tempfile::tempdir().unwrap();
            let server = Server {
                command: Some("a".into()),
                ..Server::default()
            };
            let listing = Listing {
                tools: vec![json!({"name": "t", "inputSchema": {"type": "object"}})],
                ..Listing::default()
            };
            write_cached(&cache_file(dir.path(), "s", &server), &listing).unwrap();
            assert_eq!(read_cached(dir.path(), "s", &server), Some(listing));
            let changed = Server {
                args: vec!["--other".into()],
                ..server.clone()
            };
            assert_eq!(read_cached(dir.path(), "s", &changed), None);
            assert_eq!(read_cached(dir.path(), "t", &server), None);
        }
    }
}
