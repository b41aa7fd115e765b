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
use crate::gateway::upstreams::Upstream;
use crate::protocol::Method;
use crate::upstream::Caller;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The first wait before a listen that ended is opened again; each end in a row doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The longest wait between two listens.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A listen in flight: cancelling it ends it (stdio: `notifications/cancelled`; HTTP: its
/// stream closed); `ended` fires when its request returned, with why.
struct OpenListen {
    cancel: Cancel,
    ended: Cancel,
    /// Whether the server refused the method: no listen is opened to it again.
    unsupported: Arc<std::sync::atomic::AtomicBool>,
}

/// The list kinds a listen may ask for: the capability that declares each, and its filter key.
const LISTS: [(&str, &str); 3] = [
    ("tools", "toolsListChanged"),
    ("prompts", "promptsListChanged"),
    ("resources", "resourcesListChanged"),
];

/// Whether a server with `capabilities` can announce anything on a listen: a list change, or a
/// subscribed resource's update. Only to such a server is one kept open.
pub(super) fn announces_anything(capabilities: &Value) -> bool {
    LISTS
        .iter()
        .any(|(kind, _)| capabilities[kind]["listChanged"] == json!(true))
        || capabilities["resources"]["subscribe"] == json!(true)
}

impl Supervisor {
    /// Keeps a listen open to `upstream`, started as `generation`, while that start serves: a
    /// new one when what to ask for changes (the clients' subscriptions to its resources), or
    /// after the last one ended; never one for a change that leaves its filter as it was.
    pub(super) async fn keep_listening(self: Arc<Self>, upstream: Arc<Upstream>, generation: u64) {
        let serving = || upstream.link.serves(generation) && !upstream.removed.is_cancelled();
        let mut acks_wanted = upstream.listening.acks();
        // The listen open, and what it asked for.
        let mut current: Option<(OpenListen, Value)> = None;
        let mut backoff = FIRST_BACKOFF;
        while serving() {
            // Listened for before the set is read: a change after the read is not missed.
            let held_changed = self.subscriptions.changed();
            let filter = self.listen_filter(&upstream);
            let open_for = |filter: &Value| {
                current
                    .as_ref()
                    .is_some_and(|(listen, asked)| asked == filter && !listen.ended.is_cancelled())
            };
            match filter {
                Some(filter) if open_for(&filter) => {}
                Some(filter) => {
                    let Some(connection) = upstream.link.connection() else {
                        break;
                    };
                    tracing::debug!(server = %upstream.name, "subscriptions/listen for {filter}");
                    let opened = open(connection, filter.clone());
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
                    match acknowledged {
                        true => upstream.listening.cover(covered_uris(&filter)),
                        // The count of acknowledgements can no longer say which listen is whose.
                        false => acks_wanted = upstream.listening.acks(),
                    }
                    if let Some((old, _)) = current.replace((opened, filter)) {
                        old.cancel.cancel();
                    }
                }
                None => {
                    if let Some((old, _)) = current.take() {
                        old.cancel.cancel();
                    }
                    upstream.listening.cover(Vec::new());
                }
            }
            // Until the set changes or the listen ends; with none open, looked at again now and
            // then, so that the keeper of a start since replaced ends.
            let ended = current.as_ref().map(|(listen, _)| listen.ended.clone());
            let changed = smol::future::or(
                async {
                    held_changed.await;
                    true
                },
                async {
                    match ended {
                        Some(ended) => ended.cancelled().await,
                        None => drop(smol::Timer::after(MAX_BACKOFF).await),
                    }
                    false
                },
            )
            .await;
            let Some((listen, _)) = current.as_ref().filter(|_| !changed) else {
                backoff = FIRST_BACKOFF;
                continue;
            };
            if listen.unsupported.load(Ordering::Acquire) {
                tracing::info!(server = %upstream.name, "refuses subscriptions/listen: its notifications are not followed");
                return;
            }
            smol::Timer::after(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        if let Some((old, _)) = current {
            old.cancel.cancel();
        }
    }

    /// What to ask `upstream` for: the list kinds it declares, and the URIs of its that clients
    /// hold where it declares `subscribe`; `None` when that is nothing.
    fn listen_filter(&self, upstream: &Upstream) -> Option<Value> {
        let capabilities = upstream.link.handshake()?.capabilities;
        let mut filter = serde_json::Map::new();
        for (kind, key) in LISTS {
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

/// The resource URIs a listen's `filter` asked for.
fn covered_uris(filter: &Value) -> Vec<String> {
    let uris = &filter["notifications"]["resourceSubscriptions"];
    serde_json::from_value(uris.clone()).unwrap_or_default()
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
            timeout: Some(crate::deadline::FOREVER),
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
