//! The Events extension (SEP-3415) through mcpx, for 2026-07-28 clients. `events/list` merges
//! every upstream's event types under their exposed names ([`super::event_types`]);
//! `events/poll` goes to the upstream whose event type it names, under its own name, with the
//! client's sealed cursor opened for it, and comes back with the event types renamed and every
//! cursor sealed again ([`super::event_cursors`]). `events/stream` is opened upstream the same
//! way and held for as long as the client holds its own: each frame the server sends on it
//! (`notifications/events/*`) is passed on, renamed, its cursor sealed, naming the client's
//! request; the client's cancellation (or its closed stream) cancels the server's, and the
//! server's end (its empty result, or an error) ends the client's. Profiles, `[[auth.rules]]` (`denyTools`
//! globs match event types' exposed names too), pins and `[limits]` apply as to a tool, by the
//! one gate. Delivery mcpx does not carry (yet) is refused saying so, never passed on: a
//! server must not learn a client's webhook callback or secret.

use super::event_store::Held;
use super::event_subscriptions::{Asked, EventSubscriptions, Subscribed};
use super::forwarded::forwardable;
use super::incoming::Incoming;
use super::results::Leaving;
use super::target::Target;
use super::webhooks::{Callback, Secret};
use super::{Gateway, Owner};
use crate::config::BUILTIN_SERVER;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Id, Notification, INVALID_PARAMS, NOT_FOUND, UNSUPPORTED};
use crate::metrics::{self, EventDelivery, EventOutcome};
use crate::protocol::notification::StreamFrame;
use crate::protocol::Notice;
use crate::upstream::SUBSCRIPTION_ID;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Events: a per-caller cap was reached; the message names it.
pub(super) const RESOURCE_EXHAUSTED: i64 = -32013;
/// Events: the webhook callback failed its verification or cannot be used.
const CALLBACK_ENDPOINT_ERROR: i64 = -32015;

/// How many of a stream's frames may wait between the server's and the client's streams.
const FRAMES_IN_FLIGHT: usize = 1024;

impl Gateway {
    /// `events/poll` of `target`: passed to its server under its own name, its cursor the
    /// server's own; the answer's event types under their exposed name, its cursors sealed.
    pub(super) async fn poll_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        if target.owner == Owner::Builtin {
            return self.poll_own_events(incoming, target).await;
        }
        let (server, forwarded) = self.delivered_by(incoming, target, "poll")?;
        let cursors = &self.event_cursors;
        let answer = self
            .forward(incoming, target.owner, forwarded, &target.exposed)
            .await?;
        let catalog = self.catalog_of(incoming.client);
        let door = Leaving::answering(&catalog, incoming, target.owner);
        let mut answer = self.leaving(door, answer).await?;
        let seal = |cursor: &mut Value| -> Result<(), ErrorObject> {
            let sealed = cursors.seal(&server, &target.exposed, cursor);
            *cursor = sealed.map_err(Failure::Refused)?;
            Ok(())
        };
        if let Some(cursor) = answer.member_mut("cursor") {
            seal(cursor)?;
        }
        let occurrences = answer.member_mut("events").and_then(Value::as_array_mut);
        let count = occurrences.as_ref().map_or(0, |o| o.len() as u64);
        metrics::events(&server, EventDelivery::poll, EventOutcome::passed, count);
        // What is not an occurrence (not an object) passes as the server wrote it.
        let fields = occurrences
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut);
        for occurrence in fields {
            occurrence.insert("name".into(), json!(target.exposed));
            if let Some(cursor) = occurrence.get_mut("cursor") {
                seal(cursor)?;
            }
        }
        Ok(answer)
    }

    /// `events/stream` of `target`: opened on its server under its own name, each of the
    /// server's frames passed on as the client's own stream's, until either side ends it.
    pub(super) async fn stream_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        if target.owner == Owner::Builtin {
            return self.stream_own_events(incoming, target).await;
        }
        let (server, forwarded) = self.delivered_by(incoming, target, "push")?;
        let cursors = &self.event_cursors;
        let (sink, frames) = async_channel::bounded(FRAMES_IN_FLIGHT);
        let streaming = Incoming {
            frames: Some(&sink),
            ..*incoming
        };
        let subscription = incoming.id.map_or(Value::Null, Id::to_value);
        let pass_on = |(notice, params): (Notice, Value)| {
            // An occurrence leaves as a polled or a delivered one does, through its guardrails.
            let frame = notice.stream_frame();
            let mut params = match frame {
                Some(StreamFrame::Event) => self.occurrence_leaving(target.owner, params),
                Some(
                    StreamFrame::Active
                    | StreamFrame::Heartbeat
                    | StreamFrame::Error
                    | StreamFrame::Terminated,
                )
                | None => params,
            };
            // A frame that is not an object is no frame: dropped, never written into.
            let Some(fields) = params.as_object_mut() else {
                return;
            };
            let meta = fields.entry("_meta").or_insert_with(|| json!({}));
            if !meta.is_object() {
                *meta = json!({});
            }
            meta[SUBSCRIPTION_ID] = subscription.clone();
            if frame == Some(StreamFrame::Event) {
                fields.insert("name".into(), json!(target.exposed));
                metrics::events(&server, EventDelivery::push, EventOutcome::passed, 1);
            }
            if let Some(cursor) = fields.get_mut("cursor") {
                match cursors.seal(&server, &target.exposed, cursor) {
                    Ok(sealed) => *cursor = sealed,
                    // Unsealed, no cursor is shown: the client resumes from its last one.
                    Err(_) => *cursor = Value::Null,
                }
            }
            let _ = incoming
                .ctx
                .outbound
                .try_send(Notification::new(notice, params));
        };
        let passing = async {
            while let Ok(frame) = frames.recv().await {
                pass_on(frame);
            }
            std::future::pending().await
        };
        let stream = self.forward(&streaming, target.owner, forwarded, &target.exposed);
        let ended = smol::future::or(stream, passing).await;
        // The frames the server sent before it ended the stream go before its end.
        while let Ok(frame) = frames.try_recv() {
            pass_on(frame);
        }
        ended
    }

    /// `events/subscribe` of `target`: webhook delivery, held by mcpx from the server's poll or
    /// stream ([`super::event_subscriptions`]). Asked again, it refreshes the subscription.
    pub(super) async fn subscribe_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        let catalog = self.catalog_of(incoming.client);
        let offers = |mode| catalog.event_offers(&target.exposed, mode);
        // A server's own webhooks are relayed only where it offers nothing mcpx can hold.
        let held = match (offers("poll"), offers("push"), offers("webhook")) {
            (true, _, _) => Held::Poll,
            (false, true, _) => Held::Push,
            (false, false, true) => Held::Relay,
            (false, false, false) => return Err(not_carried(&target.exposed, "webhook")),
        };
        let relay_secret = match held {
            Held::Relay => Some(Secret::generate().map_err(Failure::Refused)?),
            Held::Poll | Held::Push => None,
        };
        let invalid =
            |why: &str| ErrorObject::new(INVALID_PARAMS, format!("Invalid params: {why}"));
        let params = incoming.params.cloned().unwrap_or_default();
        let delivery = &params["delivery"];
        if delivery["mode"] != "webhook" {
            return Err(invalid("delivery.mode must be \"webhook\""));
        }
        let url = delivery["url"]
            .as_str()
            .ok_or_else(|| invalid("delivery.url is missing"))?;
        let secret = delivery["secret"].as_str().unwrap_or_default();
        let secret = Secret::parse(secret).map_err(|why| invalid(&why))?;
        let ttl = params["ttlMs"].as_u64().map(Duration::from_millis);
        let server = self.server_name(target)?;
        let cursors = &self.event_cursors;
        let start = (cursors.open(&server, &target.exposed, params.get("cursor")))
            .map_err(|why| ErrorObject::new(INVALID_PARAMS, why))?;
        let holder = &incoming.ctx.caller;
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        if target.owner == Owner::Builtin {
            self.check_own_arguments(incoming.client.view, &target.own, &arguments)?;
        }
        let subscriptions = &self.event_subscriptions;
        let id = EventSubscriptions::id_of(holder, &target.exposed, &arguments, url);
        if !subscriptions.holds(&id) {
            // One past the limit sends the callback nothing: mcpx is nobody's prober.
            (subscriptions.room_for(holder))
                .map_err(|why| ErrorObject::new(RESOURCE_EXHAUSTED, why))?;
            let callback = Callback {
                url,
                subscription: &id,
                secret: &secret,
                loopback_ok: subscriptions.loopback_ok(),
            };
            callback.verify().await.map_err(|why| {
                ErrorObject::new(
                    CALLBACK_ENDPOINT_ERROR,
                    format!("the callback {url} cannot be used: {why}"),
                )
                .with_data(json!({"reason": why}))
            })?;
        }
        let view = incoming.client.view;
        let asked = Asked {
            holder,
            view,
            view_key: self.catalogs.profiles().key(view),
            owner: target.owner,
            own: &target.own,
            exposed: &target.exposed,
            server: &server,
            arguments: &arguments,
            url,
            secret,
            ttl,
            held,
            cursor: start.clone(),
            relay_secret,
        };
        let subscribed = subscriptions
            .subscribe(asked)
            .map_err(|why| ErrorObject::new(RESOURCE_EXHAUSTED, why))?;
        let (subscription, cursor, truncated) = match subscribed {
            Subscribed::Refreshed(subscription) => (subscription, start, false),
            Subscribed::New(subscription) => {
                // Where "from now" is, so that the answer's cursor is a real position.
                let (start, truncated) = match (held, start.is_null()) {
                    (Held::Poll, true) => {
                        let now = self.poll_for(&subscription, &Value::Null).await;
                        let at = now.map(|answer| answer["cursor"].clone());
                        (at.unwrap_or(Value::Null), false)
                    }
                    // The server's own subscription is made before the client's is answered:
                    // what the server refuses, the client is told.
                    (Held::Relay, _) => match self.relay_subscribe(&subscription).await {
                        Ok(answer) => {
                            let at = answer.get("cursor").cloned().unwrap_or(start);
                            (at, answer["truncated"] == json!(true))
                        }
                        Err(refused) => {
                            subscriptions.forget(&subscription.id);
                            return Err(refused);
                        }
                    },
                    (Held::Poll | Held::Push, false) | (Held::Push, true) => (start, false),
                };
                subscriptions.moved(&subscription, start.clone());
                let gateway = self
                    .me
                    .upgrade()
                    .ok_or_else(|| Failure::Refused("mcpx is stopping".into()))?;
                gateway.hold(Arc::clone(&subscription), start.clone());
                tracing::info!(subscription = %subscription.id, event = %target.exposed, "an event subscription began");
                (subscription, start, truncated)
            }
        };
        let refresh_before = humantime::format_rfc3339_seconds(subscription.ends_at()).to_string();
        let cursor = cursors
            .seal(&server, &target.exposed, &cursor)
            .map_err(Failure::Refused)?;
        Ok(
            json!({"id": subscription.id, "refreshBefore": refresh_before, "cursor": cursor,
            "truncated": truncated}),
        )
    }

    /// `events/unsubscribe` of `target`: the caller's webhook subscription at the callback named
    /// ends.
    pub(super) fn unsubscribe_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        let params = incoming.params.cloned().unwrap_or_default();
        let url = params["delivery"]["url"].as_str().unwrap_or_default();
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        let holder = &incoming.ctx.caller;
        let id = EventSubscriptions::id_of(holder, &target.exposed, &arguments, url);
        match self.event_subscriptions.unsubscribe(&id, holder) {
            true => Ok(json!({})),
            false => Err(ErrorObject::new(
                NOT_FOUND,
                format!("No subscription to {} at {url}", target.exposed),
            )),
        }
    }

    /// The server of `target`, delivered by `mode`, and the request it is sent: under its own
    /// name, the client's cursor opened for it. Refused when the event type is not shown with
    /// `mode`, or the cursor is not one mcpx sealed for it.
    fn delivered_by(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
        mode: &str,
    ) -> Result<(String, Value), ErrorObject> {
        if !self
            .catalog_of(incoming.client)
            .event_offers(&target.exposed, mode)
        {
            return Err(not_carried(&target.exposed, mode));
        }
        let server = self.server_name(target)?;
        let sent = incoming.params.and_then(|p| p.member("cursor"));
        let own = self
            .event_cursors
            .open(&server, &target.exposed, sent)
            .map_err(|why| ErrorObject::new(INVALID_PARAMS, why))?;
        let mut forwarded = forwardable(incoming.params);
        forwarded["name"] = json!(target.own);
        forwarded["cursor"] = own;
        Ok((server, forwarded))
    }

    /// The configured name of the server `target` is of.
    fn server_name(&self, target: &Target) -> Result<String, ErrorObject> {
        if target.owner == Owner::Builtin {
            return Ok(BUILTIN_SERVER.to_owned());
        }
        let upstream = self.supervisor.upstreams().of(target.owner);
        let upstream = upstream.ok_or_else(|| Failure::Refused("its server was removed".into()))?;
        Ok(upstream.name.clone())
    }
}

/// The answer to a request for a delivery of `event` that mcpx does not carry for it (the
/// webhook methods, for now, and a mode its server does not offer): `events/list` shows no
/// event type with such a mode, so only a client that ignored it meets this.
pub(super) fn not_carried(event: &str, mode: &str) -> ErrorObject {
    ErrorObject::new(
        UNSUPPORTED,
        format!(
            "Unsupported: mcpx does not deliver {event} by {mode}; see its delivery in events/list"
        ),
    )
    .with_data(json!({"feature": "deliveryMode", "value": mode}))
}

/// The answer to a request naming an event type the caller's catalog does not have.
pub(super) fn unknown_event(name: &str) -> ErrorObject {
    ErrorObject::new(NOT_FOUND, format!("Event type not found: {name}"))
}
