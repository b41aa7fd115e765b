//! Subscriptions: a client's `resources/subscribe` (legacy) held against the upstream that owns
//! the resource, counted across clients so the upstream is asked once and released by the last,
//! and a modern client's `subscriptions/listen` stream, open until its client goes.

use super::{client, Client, Gateway, Listen, Owner, RequestContext};
use crate::cancel::Cancel;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Id, Request, INVALID_PARAMS};
use crate::protocol::envelope::SUBSCRIPTION_ID;
use crate::protocol::{Extension, Extensions, Method, Notice};
use crate::sync::lock;
use crate::upstream::{Caller, ListKind};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many clients hold each resource subscription, by URI: the upstream is subscribed at the
/// first and unsubscribed at the last. The URIs are the clients' own, so the map keeps std's
/// SipHash (the gateway's other maps have no key a client chooses).
#[derive(Debug, Default)]
pub(super) struct HeldSubscriptions {
    by_uri: Mutex<HashMap<String, usize>>,
    /// Notified when a URI is first held or last released: what a 2026-07-28 upstream is asked
    /// to listen for changes.
    changed: event_listener::Event,
}

impl HeldSubscriptions {
    /// One more client holds `uri`; true if it is the first.
    fn hold(&self, uri: &str) -> bool {
        let mut held = lock(&self.by_uri);
        let count = held.entry(uri.to_owned()).or_insert(0);
        *count += 1;
        let first = *count == 1;
        drop(held);
        if first {
            self.changed.notify(usize::MAX);
        }
        first
    }

    /// Fires at the next change of which URIs are held.
    pub(super) fn changed(&self) -> event_listener::EventListener {
        self.changed.listen()
    }

    /// The URIs held that `owns` says yes to, in order.
    pub(super) fn held(&self, owns: impl Fn(&str) -> bool) -> Vec<String> {
        let mut uris: Vec<String> = lock(&self.by_uri)
            .keys()
            .filter(|uri| owns(uri))
            .cloned()
            .collect();
        uris.sort();
        uris
    }

    /// One client lets go of `uri`; true if it was the last (a URI no one held is not).
    fn release(&self, uri: &str) -> bool {
        let mut held = lock(&self.by_uri);
        let Some(count) = held.get_mut(uri) else {
            return false;
        };
        *count -= 1;
        if *count > 0 {
            return false;
        }
        held.remove(uri);
        drop(held);
        self.changed.notify(usize::MAX);
        true
    }

    /// Whether any URI held is one `owns` says yes to.
    pub(super) fn any(&self, owns: impl Fn(&str) -> bool) -> bool {
        lock(&self.by_uri).keys().any(|uri| owns(uri))
    }
}

impl Gateway {
    pub(super) async fn subscribe(
        &self,
        client: &Client,
        owner: Owner,
        uri: &str,
    ) -> Result<Value, ErrorObject> {
        // Each person's instance would need its own subscription, heard by that person alone:
        // refused, rather than accepted and never delivered (a listen does not honour it).
        let upstream = self.supervisor.upstreams().of(owner);
        if let Some(upstream) = upstream.filter(|u| u.is_per_identity()) {
            return Err(ErrorObject::new(
                INVALID_PARAMS,
                format!(
                    "resources/subscribe: {} runs an instance for each person (credentials = \"per-identity\"), and subscriptions to its resources are not carried yet",
                    upstream.name
                ),
            ));
        }
        if client.subscribe(uri) {
            self.hold_upstream_subscription(owner, uri).await;
        }
        Ok(json!({}))
    }

    pub(super) fn unsubscribe(
        &self,
        client: &Client,
        params: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        let uri = params
            .and_then(|p| p.member("uri"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if client.unsubscribe(uri) {
            self.release_upstream_subscription(uri);
        }
        Ok(json!({}))
    }

    /// Subscribes the owning upstream to `uri` when the first client asks for it (a modern
    /// upstream has no `resources/subscribe`: its listen asks for the URIs held,
    /// [`super::supervision`]).
    pub(super) async fn hold_upstream_subscription(&self, owner: Owner, uri: &str) {
        let first = self.subscriptions.hold(uri);
        // A lazy server is started for it; held, the subscription then keeps it running.
        let _ = self.supervisor.wake(owner).await;
        let Ok((upstream, connection)) = self.supervisor.upstreams().connection(owner) else {
            return;
        };
        if upstream.link.supports_subscribe() && upstream.is_modern() {
            // Answered once the upstream's listen covers it: a change the client causes next
            // is then heard.
            if !upstream
                .listening
                .covers(uri, super::listens_held::ACK_PATIENCE)
                .await
            {
                tracing::warn!(server = %upstream.name, "no subscriptions/listen covers {uri} yet");
            }
            return;
        }
        if first && upstream.link.supports_subscribe() {
            let params = Some(json!({"uri": uri}));
            if let Err(e) = connection
                .request(
                    Method::ResourcesSubscribe.as_str(),
                    params,
                    &Cancel::new(),
                    Caller::default(),
                )
                .await
            {
                tracing::warn!(server = %upstream.name, "resources/subscribe {uri} failed: {}", e.message);
            }
        }
    }

    /// Unsubscribes the owning upstream from `uri` when its last client lets go.
    pub(super) fn release_upstream_subscription(&self, uri: &str) {
        if !self.subscriptions.release(uri) {
            return;
        }
        let Some(owner) = self.catalog().resource_owner(uri) else {
            return;
        };
        let Ok((upstream, connection)) = self.supervisor.upstreams().connection(owner) else {
            return;
        };
        if upstream.link.supports_subscribe() && !upstream.is_modern() {
            let params = Some(json!({"uri": uri}));
            crate::runtime::spawn(async move {
                connection
                    .request(
                        Method::ResourcesUnsubscribe.as_str(),
                        params,
                        &Cancel::new(),
                        Caller::default(),
                    )
                    .await
            })
            .detach();
        }
    }

    /// A modern listen: acknowledged first, then tagged notifications until the client cancels
    /// it (no reply then) or the transport ends (then the completing result).
    pub(super) async fn listen(
        &self,
        client: &Arc<Client>,
        request: &Request,
        extensions: Extensions,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let filter = request
            .params
            .as_ref()
            .and_then(|p| p.member("notifications"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                ErrorObject::new(
                    INVALID_PARAMS,
                    "Invalid params: subscriptions/listen needs a notifications object",
                )
            })?;
        if filter.contains_key("taskIds") && !extensions.contains(Extension::Tasks) {
            return Err(super::tasks::undeclared("taskIds on subscriptions/listen"));
        }
        let mut honoured = Map::new();
        let mut lists = Vec::new();
        for (key, kind) in [
            ("toolsListChanged", ListKind::Tools),
            ("promptsListChanged", ListKind::Prompts),
            ("resourcesListChanged", ListKind::Resources),
            ("eventsListChanged", ListKind::Events),
        ] {
            let declared = kind != ListKind::Events || extensions.contains(Extension::Events);
            if declared && filter.member(key) == Some(&json!(true)) {
                honoured.insert(key.into(), json!(true));
                lists.push(kind);
            }
        }
        self.catalogs.ready().await;
        let catalog = self.catalog_of(client);
        let mut resources = Vec::new();
        for uri in filter
            .member("resourceSubscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            // Not honoured (absent from the acknowledgement) for a per-identity server's
            // resource, as `resources/subscribe` refuses it.
            let owner = catalog.resource_owner(uri).filter(|&owner| {
                let upstream = self.supervisor.upstreams().of(owner);
                !upstream.is_some_and(|u| u.is_per_identity())
            });
            if let Some(owner) = owner {
                self.hold_upstream_subscription(owner, uri).await;
                resources.push(uri.to_owned());
            }
        }
        if !resources.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(resources));
        }
        // Watched from before the acknowledgement, so that no change after it is missed.
        let asked_tasks = filter.member("taskIds").and_then(Value::as_array);
        let (watched, _watchers) = match asked_tasks {
            Some(ids) => self.watch_tasks(client, ids, &request.id, extensions, ctx),
            None => (Vec::new(), Vec::new()),
        };
        if !watched.is_empty() {
            honoured.insert("taskIds".into(), json!(watched));
        }
        let ack = client::tagged(
            Notice::SubscriptionsAcknowledged,
            json!({ "notifications": honoured }),
            &request.id,
        );
        let _ = ctx.outbound.send(ack).await;
        let filter = lists
            .iter()
            .map(|k| k.notification().into())
            .chain(resources.iter().cloned())
            .collect();
        let registered = self.live.ledger().open_stream(
            client.session,
            "listen",
            Some(request.id.to_value()),
            filter,
        );
        registered.sent();
        let _open = OpenListen::new(
            self,
            client,
            Listen {
                id: request.id.clone(),
                lists,
                resources,
                tx: ctx.outbound.clone(),
                sent: registered.counter(),
            },
        );
        // Whichever comes first: the client cancels (the transport withholds any reply) or the
        // transport closes (the listen completes on purpose, with the result that says so).
        smol::future::or(ctx.cancel.cancelled(), client.closing.cancelled()).await;
        Ok(json!({"resultType": "complete", "_meta": { SUBSCRIPTION_ID: request.id.to_value() }}))
    }
}

/// Keeps a listen registered on its client while the listen request runs, and undoes its
/// subscriptions however it ends (completed, or dropped by a cancelling transport).
struct OpenListen<'a> {
    gateway: &'a Gateway,
    client: &'a Client,
    id: Id,
    resources: Vec<String>,
}

impl<'a> OpenListen<'a> {
    fn new(gateway: &'a Gateway, client: &'a Client, listen: Listen) -> Self {
        let (id, resources) = (listen.id.clone(), listen.resources.clone());
        client.add_listen(listen);
        OpenListen {
            gateway,
            client,
            id,
            resources,
        }
    }
}

impl Drop for OpenListen<'_> {
    fn drop(&mut self) {
        self.client.remove_listen(&self.id);
        for uri in &self.resources {
            self.gateway.release_upstream_subscription(uri);
        }
    }
}

#[cfg(test)]
mod v2025_11_25 {
    mod subscriptions {
        use crate::gateway::subscriptions::HeldSubscriptions;

        #[test]
        fn the_upstream_is_held_from_the_first_client_to_the_last() {
            let held = HeldSubscriptions::default();
            assert!(held.hold("file:///a"));
            assert!(!held.hold("file:///a"));
            assert!(held.any(|uri| uri == "file:///a"));
            assert!(!held.release("file:///a"));
            assert!(held.release("file:///a"));
            assert!(!held.any(|_| true));
            // A URI no one held is not released again.
            assert!(!held.release("file:///a"));
        }
    }
}
