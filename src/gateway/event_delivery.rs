//! Holding a webhook subscription's delivery ([`super::event_subscriptions`]): for as long as
//! it lives, mcpx polls the server (at the pace the server asks, from the cursor it last gave),
//! holds the server's stream (opened again from its last cursor when it drops), or keeps the
//! server's own webhook subscription to mcpx refreshed ([`super::event_relay`]), and POSTs each
//! occurrence to the subscription's callback. The server is reached as the subscription's
//! holder reaches it (their own instance of a per-identity server), declaring the extension.
//! Where the server ends the subscription for good, the callback is told (`terminated`).

use super::event_store::Held;
use super::event_subscriptions::{next_poll, Subscription};
use super::{Gateway, Owner};
use crate::config::BUILTIN_SERVER;
use crate::jsonrpc::{ErrorObject, NOT_FOUND};
use crate::metrics::{self, EventDelivery, EventOutcome};
use crate::protocol::notification::StreamFrame;
use crate::protocol::{envelope, Extension, Method};
use crate::upstream::{Caller, Connection};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The first wait after the server failed a poll or its stream dropped; each next one doubles
/// it, up to the last.
pub(super) const BACKOFF: (Duration, Duration) =
    (Duration::from_millis(250), Duration::from_secs(30));

impl Gateway {
    /// The request that asks `subscription`'s server for its event type from `cursor`.
    pub(super) fn asking(subscription: &Subscription, cursor: &Value) -> Value {
        let mut params = json!({"name": subscription.own, "arguments": subscription.arguments,
            "cursor": cursor});
        params["_meta"][envelope::CLIENT_CAPABILITIES] =
            json!({"extensions": {Extension::Events.id(): {}}});
        params
    }

    /// A connection to `subscription`'s server, as its holder reaches it.
    pub(super) async fn reach(&self, subscription: &Subscription) -> Result<Connection, String> {
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
        if subscription.owner == Owner::Builtin {
            return self.poll_own_for(subscription, cursor).await;
        }
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
    /// Where it has `[auth] publicUrl`, it relays servers' own webhooks too, so their
    /// webhook-only event types are carried.
    pub fn keep_event_subscriptions(&self) {
        if self.event_subscriptions.become_keeper() {
            self.catalogs.relay_webhooks();
        }
    }

    /// Takes back the webhook subscriptions the store kept (the daemon's last run's), each
    /// delivered again from where it was.
    pub(super) fn resume_event_subscriptions(&self) {
        let upstreams = self.supervisor.upstreams();
        let owner_of = |server: &str| match server {
            BUILTIN_SERVER => Some(Owner::Builtin),
            server => upstreams.by_name(server).map(|u| Owner::Upstream(u.id)),
        };
        let profiles = self.catalogs.profiles();
        let view_of = |key: &str| profiles.by_key(key);
        let resumed = self.event_subscriptions.resume(owner_of, view_of);
        let Some(gateway) = self.me.upgrade() else {
            return;
        };
        for subscription in resumed {
            tracing::info!(subscription = %subscription.id, event = %subscription.exposed, "an event subscription resumed");
            let cursor = subscription.cursor();
            gateway.hold(subscription, cursor);
        }
    }

    /// Holds `subscription`'s delivery, from the server's own `cursor`, until it ends; then
    /// forgets it.
    pub(super) fn hold(self: &Arc<Self>, subscription: Arc<Subscription>, cursor: Value) {
        let gateway = Arc::clone(self);
        crate::runtime::spawn(async move {
            let lifetime = watch_lifetime(&subscription);
            let delivering = async {
                match subscription.held {
                    Held::Poll => gateway.keep_polling(&subscription, cursor).await,
                    Held::Push => gateway.keep_streaming(&subscription, cursor).await,
                    Held::Relay => gateway.keep_relaying(&subscription).await,
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
                Err(error) if error.code == NOT_FOUND => {
                    return self.terminated(subscription, &error).await;
                }
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
            match subscription.owner {
                // mcpx's own: read again as soon as the log has more.
                Owner::Builtin => {
                    let wait = next_poll(&answer);
                    let _ = subscription.ended.run(self.own_event_or(wait)).await;
                }
                Owner::Upstream(_) => pause(subscription, next_poll(&answer)).await,
            }
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
            let mut terminated = None;
            let passing = async {
                while let Ok((notice, mut params)) = frames.recv().await {
                    let at = params
                        .get("cursor")
                        .filter(|c| !c.is_null() && **c != cursor);
                    if let Some(at) = at {
                        cursor = at.clone();
                        self.event_subscriptions.moved(subscription, cursor.clone());
                    }
                    match notice.stream_frame() {
                        Some(StreamFrame::Event) => {
                            if let Some(meta) = params.as_object_mut() {
                                meta.remove("_meta");
                            }
                            backoff = BACKOFF.0;
                            self.deliver(subscription, params).await;
                        }
                        // A fresh confirmation after a gap: occurrences were skipped.
                        Some(StreamFrame::Active) if params["truncated"] == json!(true) => {
                            self.gap(subscription, &params["cursor"]).await;
                        }
                        Some(StreamFrame::Terminated) => {
                            terminated = Some(ended_by(&params));
                            return;
                        }
                        Some(StreamFrame::Active | StreamFrame::Heartbeat | StreamFrame::Error)
                        | None => {}
                    }
                }
            };
            let ended = smol::future::or(async { stream.await.err() }, async {
                passing.await;
                None
            })
            .await;
            match (terminated, ended) {
                (Some(error), _) => return self.terminated(subscription, &error).await,
                (None, Some(error)) if error.code == NOT_FOUND => {
                    return self.terminated(subscription, &error).await;
                }
                _ => {}
            }
            pause(subscription, backoff).await;
            backoff = (backoff * 2).min(BACKOFF.1);
        }
    }

    /// Tells the callback its server ended the subscription for good (`error`), unless it
    /// ended first (unsubscribed, or its lifetime passed).
    pub(super) async fn terminated(&self, subscription: &Subscription, error: &ErrorObject) {
        if subscription.live() {
            let loopback_ok = self.event_subscriptions.loopback_ok();
            subscription.deliver_terminated(error, loopback_ok).await;
        }
    }

    /// Tells the callback occurrences were skipped before `cursor` (a server's `truncated`); a
    /// server without replay (`null` cursor) has no gap to tell.
    pub(super) async fn gap(&self, subscription: &Subscription, cursor: &Value) {
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

    /// Delivers one occurrence, saying so when the callback will not take it (its value never):
    /// whether it took it.
    pub(super) async fn deliver(&self, subscription: &Subscription, occurrence: Value) -> bool {
        let occurrence = self.occurrence_leaving(subscription.owner, occurrence);
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
        let taken = delivered.is_ok();
        subscription.delivered(delivered);
        metrics::events(&subscription.server, EventDelivery::webhook, outcome, 1);
        taken
    }
}

/// Why a server's `notifications/events/terminated` (`params`) says it ended a stream.
pub(super) fn ended_by(params: &Value) -> ErrorObject {
    let error = &params["error"];
    let code = error["code"].as_i64().unwrap_or(NOT_FOUND);
    let message = error["message"].as_str();
    ErrorObject::new(code, message.unwrap_or("the server ended the subscription"))
}

/// Waits `wait`, or less if the subscription ends first.
pub(super) async fn pause(subscription: &Subscription, wait: Duration) {
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
