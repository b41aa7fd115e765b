//! A 2026-07-28 upstream's notifications: such a server sends `list_changed` and
//! `resources/updated` only on a `subscriptions/listen` that asked for them, so mcpx keeps one
//! open to every modern upstream that declares `listChanged` or `subscribe`, over stdio and HTTP
//! alike. It asks for the list kinds the server declares, and `resourceSubscriptions` for every
//! URI of the server's that some client of mcpx holds ([`crate::gateway::subscriptions::HeldSubscriptions`]: a legacy
//! `resources/subscribe` or a modern listen's). When that set changes a new listen is opened
//! with the new set, and the old one is cancelled only once the new one is acknowledged, so no
//! change falls between them. A listen that ends (the server closed it, or failed it) is opened
//! again after a backoff. What arrives on it is an ordinary notification of the server's
//! ([`crate::upstream::Event`]), so every rule on `list_changed` and `resources/updated` holds
//! whatever era the upstream speaks.

use super::Supervisor;
use crate::cancel::Cancel;
use crate::gateway::listens_held::ACK_PATIENCE;
use crate::gateway::route::Owner;
use crate::gateway::upstreams::{Upstream, UpstreamState};
use crate::protocol::Method;
use crate::sync::lock;
use crate::upstream::Caller;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The first wait before a listen that ended is opened again; each end in a row doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The longest wait between two listens.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long a listen may stay open: as long as the server lives.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A listen in flight: cancelling it ends it (stdio: `notifications/cancelled`; HTTP: its
/// stream closed); `ended` fires when its request returned, with why.
struct OpenListen {
    cancel: Cancel,
    ended: Cancel,
    /// Whether the server refused the method: no listen is opened to it again.
    unsupported: Arc<std::sync::atomic::AtomicBool>,
}

impl Supervisor {
    /// Keeps a listen open to `upstream`, started as `generation`, while that start serves.
    pub(super) async fn keep_listening(self: Arc<Self>, upstream: Arc<Upstream>, generation: u64) {
        let serving = || {
            upstream.generation.load(Ordering::Acquire) == generation
                && *lock(&upstream.state) == UpstreamState::Ready
                && !upstream.removed.is_cancelled()
        };
        let mut acks_wanted = upstream.listening.acks();
        let mut current: Option<OpenListen> = None;
        let mut backoff = FIRST_BACKOFF;
        while serving() {
            // Listened for before the set is read: a change after the read is not missed.
            let held_changed = self.subscriptions.changed();
            let Some(filter) = self.listen_filter(&upstream) else {
                if let Some(old) = current.take() {
                    old.cancel.cancel();
                }
                upstream.listening.cover(Vec::new());
                // Nothing to listen for until a client holds one of its URIs; looked at again
                // now and then, so that a keeper of a start since replaced ends.
                smol::future::or(held_changed, async {
                    smol::Timer::after(MAX_BACKOFF).await;
                })
                .await;
                continue;
            };
            let uris = filter["notifications"]["resourceSubscriptions"].clone();
            let Some(connection) = lock(&upstream.connection).clone() else {
                break;
            };
            tracing::debug!(server = %upstream.name, "subscriptions/listen for {filter}");
            let opened = open(connection, filter);
            acks_wanted += 1;
            let acknowledged = smol::future::or(
                async {
                    upstream.listening.reach(acks_wanted).await;
                    true
                },
                async {
                    smol::future::or(opened.ended.cancelled(), async {
                        smol::Timer::after(ACK_PATIENCE).await;
                    })
                    .await;
                    false
                },
            )
            .await;
            if let Some(old) = current.replace(opened) {
                old.cancel.cancel();
            }
            match acknowledged {
                true => upstream
                    .listening
                    .cover(serde_json::from_value(uris).unwrap_or_default()),
                // The count of acknowledgements can no longer say which listen is whose.
                false => acks_wanted = upstream.listening.acks(),
            }
            let ended = current
                .as_ref()
                .map(|c| c.ended.clone())
                .unwrap_or_default();
            let changed = smol::future::or(
                async {
                    held_changed.await;
                    true
                },
                async {
                    ended.cancelled().await;
                    false
                },
            )
            .await;
            if changed {
                backoff = FIRST_BACKOFF;
                continue;
            }
            if current
                .as_ref()
                .is_some_and(|c| c.unsupported.load(Ordering::Acquire))
            {
                tracing::info!(server = %upstream.name, "refuses subscriptions/listen: its notifications are not followed");
                return;
            }
            smol::Timer::after(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        if let Some(old) = current {
            old.cancel.cancel();
        }
    }

    /// What to ask `upstream` for: the list kinds it declares, and the URIs of its that clients
    /// hold where it declares `subscribe`; `None` when that is nothing.
    fn listen_filter(&self, upstream: &Upstream) -> Option<Value> {
        let capabilities = lock(&upstream.handshake)
            .as_ref()
            .map(|h| h.capabilities.clone())?;
        let mut filter = serde_json::Map::new();
        for (kind, key) in [
            ("tools", "toolsListChanged"),
            ("prompts", "promptsListChanged"),
            ("resources", "resourcesListChanged"),
        ] {
            if capabilities[kind]["listChanged"] == json!(true) {
                filter.insert(key.into(), json!(true));
            }
        }
        if capabilities["resources"]["subscribe"] == json!(true) {
            let catalog = self.catalogs.everything();
            let ours =
                |uri: &str| catalog.resource_owner(uri) == Some(Owner::Upstream(upstream.id));
            let uris = self.subscriptions.held(ours);
            if !uris.is_empty() {
                filter.insert("resourceSubscriptions".into(), json!(uris));
            }
        }
        (!filter.is_empty()).then(|| json!({ "notifications": filter }))
    }
}

/// Opens a listen with `params` on `connection`, running until cancelled or ended.
fn open(connection: crate::upstream::Connection, params: Value) -> OpenListen {
    let listen = OpenListen {
        cancel: Cancel::new(),
        ended: Cancel::new(),
        unsupported: Arc::default(),
    };
    let (cancel, ended, unsupported) = (
        listen.cancel.clone(),
        listen.ended.clone(),
        Arc::clone(&listen.unsupported),
    );
    crate::runtime::spawn(async move {
        let caller = Caller {
            timeout: Some(FOREVER),
            ..Caller::default()
        };
        let answer = connection
            .request(
                Method::SubscriptionsListen.as_str(),
                Some(params),
                &cancel,
                caller,
            )
            .await;
        if let Err(e) = &answer {
            unsupported.store(
                e.code == crate::jsonrpc::METHOD_NOT_FOUND,
                Ordering::Release,
            );
        }
        ended.cancel();
    })
    .detach();
    listen
}
