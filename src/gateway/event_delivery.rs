//! Holding a webhook subscription's delivery ([`super::event_subscriptions`]): for as long as
//! it lives, mcpx polls the server (at the pace the server asks, from the cursor it last gave)
//! or holds the server's stream (opened again from its last cursor when it drops), and POSTs
//! each occurrence to the subscription's callback. The server is reached as the subscription's
//! holder reaches it (their own instance of a per-identity server), declaring the extension.

use super::event_subscriptions::{next_poll, Subscription};
use super::{Gateway, Owner};
use crate::jsonrpc::NOT_FOUND;
use crate::metrics::{self, EventDelivery, EventOutcome};
use crate::protocol::{envelope, Extension, Method, Notice};
use crate::upstream::{Caller, Connection};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The first wait after the server failed a poll or its stream dropped; each next one doubles
/// it, up to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(30));

/// How a subscription's occurrences are had from its server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Held {
    Poll,
    Push,
}

impl Gateway {
    /// The request that asks `subscription`'s server for its event type from `cursor`.
    fn asking(subscription: &Subscription, cursor: &Value) -> Value {
        let mut params = json!({"name": subscription.own, "arguments": subscription.arguments,
            "cursor": cursor});
        params["_meta"][envelope::CLIENT_CAPABILITIES] =
            json!({"extensions": {Extension::Events.id(): {}}});
        params
    }

    /// A connection to `subscription`'s server, as its holder reaches it.
    async fn reach(&self, subscription: &Subscription) -> Result<Connection, String> {
        let upstreams = self.supervisor.upstreams();
        let upstream = upstreams
            .of(subscription.owner)
            .ok_or("its server was removed")?;
        if upstream.is_per_identity() {
            let started = self
                .supervisor
                .instance_for(&upstream, &subscription.holder)
                .await;
            return match started {
                Ok((connection, _, _)) => Ok(connection),
                Err(super::supervision::NotStarted::LoginNeeded) => {
                    Err("its holder has not signed in to its server".into())
                }
                Err(super::supervision::NotStarted::Refused(refused)) => Err(refused.message),
            };
        }
        self.supervisor
            .wake(subscription.owner)
            .await
            .map_err(|e| e.message)?;
        upstreams
            .connection(subscription.owner)
            .map(|(_, connection)| connection)
            .map_err(|e| e.message)
    }

    /// One poll of `subscription`'s server from `cursor`.
    pub(super) async fn poll_for(
        &self,
        subscription: &Subscription,
        cursor: &Value,
    ) -> Result<Value, crate::jsonrpc::ErrorObject> {
        let connection =
            (self.reach(subscription).await).map_err(crate::failure::Failure::Refused)?;
        let params = Self::asking(subscription, cursor);
        let method = Method::EventsPoll.as_str();
        connection
            .request(method, Some(params), &subscription.ended, Caller::default())
            .await
    }

    /// Makes this process the keeper of webhook subscriptions (the daemon): they are kept in
    /// `[events] store`, and those its last run kept are taken back, each delivered again from
    /// where it was, once it starts.
    pub fn keep_event_subscriptions(&self) {
        self.event_subscriptions.become_keeper();
    }

    /// Takes back the webhook subscriptions the store kept (the daemon's last run's), each
    /// delivered again from where it was.
    pub(super) fn resume_event_subscriptions(&self) {
        let upstreams = self.supervisor.upstreams();
        let owner_of = |server: &str| upstreams.by_name(server).map(|u| Owner::Upstream(u.id));
        let resumed = self.event_subscriptions.resume(owner_of);
        let Some(gateway) = self.me.upgrade() else {
            return;
        };
        for subscription in resumed {
            tracing::info!(subscription = %subscription.id, event = %subscription.exposed, "an event subscription resumed");
            let held = if subscription.polls {
                Held::Poll
            } else {
                Held::Push
            };
            let cursor = subscription.cursor();
            gateway.hold(subscription, held, cursor);
        }
    }

    /// Holds `subscription`'s delivery by `held`, from the server's own `cursor`, until it
    /// ends; then forgets it.
    pub(super) fn hold(
        self: &Arc<Self>,
        subscription: Arc<Subscription>,
        held: Held,
        cursor: Value,
    ) {
        let gateway = Arc::clone(self);
        crate::runtime::spawn(async move {
            let lifetime = watch_lifetime(&subscription);
            let delivering = async {
                match held {
                    Held::Poll => gateway.keep_polling(&subscription, cursor).await,
                    Held::Push => gateway.keep_streaming(&subscription, cursor).await,
                }
            };
            smol::future::or(delivering, lifetime).await;
            tracing::info!(subscription = %subscription.id, event = %subscription.exposed, "an event subscription ended");
            gateway.event_subscriptions.forget(&subscription.id);
        })
        .detach();
    }

    async fn keep_polling(&self, subscription: &Subscription, mut cursor: Value) {
        let mut backoff = BACKOFF.0;
        while subscription.live() {
            let answer = match self.poll_for(subscription, &cursor).await {
                Ok(answer) => answer,
                Err(error) if error.code == NOT_FOUND => return,
                Err(error) => {
                    tracing::warn!(subscription = %subscription.id, "polling for an event subscription failed: {}", error.message);
                    pause(subscription, backoff).await;
                    backoff = (backoff * 2).min(BACKOFF.1);
                    continue;
                }
            };
            backoff = BACKOFF.0;
            if answer["truncated"] == json!(true) {
                self.gap(subscription, &answer["cursor"]).await;
            }
            let occurrences = answer["events"].as_array().cloned().unwrap_or_default();
            for occurrence in occurrences {
                self.deliver(subscription, occurrence).await;
            }
            if let Some(next) = answer
                .get("cursor")
                .filter(|c| !c.is_null() && **c != cursor)
            {
                cursor = next.clone();
                self.event_subscriptions.moved(subscription, cursor.clone());
            }
            pause(subscription, next_poll(&answer)).await;
        }
    }

    async fn keep_streaming(&self, subscription: &Subscription, mut cursor: Value) {
        let mut backoff = BACKOFF.0;
        while subscription.live() {
            let connection = match self.reach(subscription).await {
                Ok(connection) => connection,
                Err(why) => {
                    tracing::warn!(subscription = %subscription.id, "an event subscription's server cannot be reached: {why}");
                    pause(subscription, backoff).await;
                    backoff = (backoff * 2).min(BACKOFF.1);
                    continue;
                }
            };
            let (sink, frames) = async_channel::bounded(1024);
            let caller = Caller {
                frames: Some(sink),
                timeout: Some(crate::deadline::FOREVER),
                ..Caller::default()
            };
            let params = Self::asking(subscription, &cursor);
            let method = Method::EventsStream.as_str();
            let stream = connection.request(method, Some(params), &subscription.ended, caller);
            let mut terminated = false;
            let passing = async {
                while let Ok((notice, mut params)) = frames.recv().await {
                    let at = params
                        .get("cursor")
                        .filter(|c| !c.is_null() && **c != cursor);
                    if let Some(at) = at {
                        cursor = at.clone();
                        self.event_subscriptions.moved(subscription, cursor.clone());
                    }
                    match notice {
                        Notice::EventsEvent => {
                            if let Some(meta) = params.as_object_mut() {
                                meta.remove("_meta");
                            }
                            backoff = BACKOFF.0;
                            self.deliver(subscription, params).await;
                        }
                        // A fresh confirmation after a gap: occurrences were skipped.
                        Notice::EventsActive if params["truncated"] == json!(true) => {
                            self.gap(subscription, &params["cursor"]).await;
                        }
                        Notice::EventsTerminated => {
                            terminated = true;
                            return;
                        }
                        _ => {}
                    }
                }
            };
            let ended = smol::future::or(async { stream.await.err() }, async {
                passing.await;
                None
            })
            .await;
            if terminated || ended.is_some_and(|e| e.code == NOT_FOUND) {
                return;
            }
            pause(subscription, backoff).await;
            backoff = (backoff * 2).min(BACKOFF.1);
        }
    }

    /// Tells the callback occurrences were skipped before `cursor` (a server's `truncated`); a
    /// server without replay (`null` cursor) has no gap to tell.
    async fn gap(&self, subscription: &Subscription, cursor: &Value) {
        if cursor.is_null() {
            return;
        }
        let loopback_ok = self.event_subscriptions.loopback_ok();
        let told = subscription
            .deliver_gap(cursor, &self.event_cursors, loopback_ok)
            .await;
        if let Err(why) = told {
            tracing::warn!(subscription = %subscription.id, "a gap was not told: {why}");
        }
    }

    /// Delivers one occurrence, saying so when the callback will not take it (its value never).
    async fn deliver(&self, subscription: &Subscription, occurrence: Value) {
        let loopback_ok = self.event_subscriptions.loopback_ok();
        let cursors = &self.event_cursors;
        let delivered = subscription.deliver(occurrence, cursors, loopback_ok).await;
        let outcome = match &delivered {
            Ok(()) => EventOutcome::delivered,
            Err(why) => {
                tracing::warn!(subscription = %subscription.id, "an event was not delivered: {why}");
                EventOutcome::failed
            }
        };
        subscription.delivered(delivered);
        metrics::events(&subscription.server, EventDelivery::webhook, outcome, 1);
    }
}

/// Waits `wait`, or less if the subscription ends first.
async fn pause(subscription: &Subscription, wait: Duration) {
    let _ = subscription.ended.run(crate::deadline::sleep(wait)).await;
}

/// Ends `subscription` when its lifetime passes unrefreshed (a refresh moves it on).
async fn watch_lifetime(subscription: &Subscription) {
    loop {
        let left = subscription
            .ends_at()
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        if left.is_zero() || subscription.ended.is_cancelled() {
            subscription.ended.cancel();
            return;
        }
        pause(subscription, left).await;
    }
}
