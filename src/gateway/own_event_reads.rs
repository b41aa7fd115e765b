//! mcpx's own event types (`mcpx__…`, [`super::own_events`]) as clients have them, in every
//! delivery mode: `events/poll` answered from the log, `events/stream` held on it (each
//! occurrence sent as it is kept, a heartbeat between), and a webhook subscription's loop,
//! which reads the log as its poll would ([`super::event_delivery`]). Each is read as its
//! caller: their person, their view. A resource's updates are heard while someone listens for
//! them: each read leases the server's subscription to the URI for [`LEASE`] more, and the
//! last lease to lapse releases it.

use super::catalog::Catalog;
use super::event_subscriptions::Subscription;
use super::events::unknown_event;
use super::incoming::Incoming;
use super::own_events::{OwnEvent, Read, Reader, NEXT_POLL_MS};
use super::profile::ViewId;
use super::target::Target;
use super::{Gateway, Owner};
use crate::access::identity::Person;
use crate::config::BUILTIN_SERVER;
use crate::failure::Failure;
use crate::jsonrpc::{ErrorObject, Id, Notification, INVALID_PARAMS};
use crate::metrics::{self, EventDelivery, EventOutcome};
use crate::protocol::Notice;
use crate::upstream::SUBSCRIPTION_ID;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long a read of a resource's updates keeps the server's subscription to it.
pub(super) const LEASE: Duration = Duration::from_secs(5 * 60);

/// How long a stream of mcpx's own events stays silent before a heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(15);

impl Gateway {
    /// `events/poll` of one of mcpx's own event types, answered from the log.
    pub(super) async fn poll_own_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        let (event, arguments, cursor) = self.own_asked(incoming, target)?;
        let person = incoming.ctx.caller.person();
        let max = incoming.params.and_then(|p| p["maxEvents"].as_u64());
        let read = self
            .read_own(
                &person,
                incoming.client.view,
                event,
                &arguments,
                &cursor,
                max,
            )
            .await?;
        let count = read.events.len() as u64;
        metrics::events(
            BUILTIN_SERVER,
            EventDelivery::poll,
            EventOutcome::passed,
            count,
        );
        let sealed = self.sealed(read, &target.exposed)?;
        Ok(
            json!({"events": sealed.events, "cursor": sealed.cursor, "hasMore": sealed.has_more,
            "truncated": sealed.truncated, "nextPollMs": NEXT_POLL_MS}),
        )
    }

    /// `events/stream` of one of mcpx's own event types: confirmed (`active`), then each
    /// occurrence as the log keeps it, a heartbeat when there has been none for a while, until
    /// the client cancels it or goes.
    pub(super) async fn stream_own_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        let (event, arguments, mut cursor) = self.own_asked(incoming, target)?;
        let person = incoming.ctx.caller.person();
        let view = incoming.client.view;
        let request = incoming.id.map_or(Value::Null, Id::to_value);
        let send = |notice: Notice, mut params: Value| {
            params["_meta"] = json!({SUBSCRIPTION_ID: request});
            let _ = (incoming.ctx.outbound).try_send(Notification::new(notice, params));
        };
        let own_events = self.clients.own_events();
        let streaming = async {
            let mut confirmed = false;
            loop {
                let arrived = own_events.arrived();
                let read = self
                    .read_own(&person, view, event, &arguments, &cursor, None)
                    .await?;
                cursor = read.cursor.clone();
                let (more, count) = (read.has_more, read.events.len() as u64);
                let sealed = self.sealed(read, &target.exposed)?;
                if !confirmed {
                    let active = json!({"cursor": sealed.cursor, "truncated": sealed.truncated});
                    send(Notice::EventsActive, active);
                    confirmed = true;
                }
                for occurrence in sealed.events {
                    send(Notice::EventsEvent, occurrence);
                }
                metrics::events(
                    BUILTIN_SERVER,
                    EventDelivery::push,
                    EventOutcome::passed,
                    count,
                );
                if more {
                    continue;
                }
                let heard = smol::future::or(
                    async {
                        arrived.await;
                        true
                    },
                    async {
                        crate::deadline::sleep(HEARTBEAT).await;
                        false
                    },
                )
                .await;
                if !heard {
                    send(Notice::EventsHeartbeat, json!({"cursor": sealed.cursor}));
                }
            }
        };
        // Cancelled, nothing is answered: the client ended it.
        let streamed = incoming.ctx.cancel.run(streaming).await;
        streamed.unwrap_or_else(|| Ok(json!({})))
    }

    /// One read of the log for a webhook `subscription` of one of mcpx's own event types, as
    /// its server's poll would answer (its own names, its cursor unsealed).
    pub(super) async fn poll_own_for(
        &self,
        subscription: &Subscription,
        cursor: &Value,
    ) -> Result<Value, ErrorObject> {
        let event = OwnEvent::parse(&subscription.own)
            .ok_or_else(|| unknown_event(&subscription.exposed))?;
        let person = subscription.holder.person();
        let read = self
            .read_own(
                &person,
                subscription.view,
                event,
                &subscription.arguments,
                cursor,
                None,
            )
            .await?;
        Ok(
            json!({"events": read.events, "cursor": read.cursor, "hasMore": read.has_more,
            "truncated": read.truncated, "nextPollMs": NEXT_POLL_MS}),
        )
    }

    /// Waits for the next of mcpx's own occurrences, or `wait`, whichever is first.
    pub(super) async fn own_event_or(&self, wait: Duration) {
        let arrived = self.clients.own_events().arrived();
        smol::future::or(arrived, crate::deadline::sleep(wait)).await;
    }

    /// What a request for one of mcpx's own event types asks: the event type, its arguments
    /// (checked), and the log's cursor the client's sealed one holds.
    fn own_asked(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<(OwnEvent, Value, Value), ErrorObject> {
        let params = incoming.params.cloned().unwrap_or_default();
        let event = OwnEvent::parse(&target.own).ok_or_else(|| unknown_event(&target.exposed))?;
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        let catalog = self.catalog_of(incoming.client);
        check_arguments(event, &arguments, |uri| self.unwatchable(&catalog, uri))?;
        let cursor = (self.event_cursors)
            .open(BUILTIN_SERVER, &target.exposed, params.get("cursor"))
            .map_err(|why| ErrorObject::new(INVALID_PARAMS, why))?;
        Ok((event, arguments, cursor))
    }

    /// Checks the arguments of a subscription to one of mcpx's own event types, `own`, made in
    /// `view`.
    pub(super) fn check_own_arguments(
        &self,
        view: ViewId,
        own: &str,
        arguments: &Value,
    ) -> Result<(), ErrorObject> {
        let event = OwnEvent::parse(own).ok_or_else(|| unknown_event(own))?;
        let catalog = self.catalogs.of(view);
        check_arguments(event, arguments, |uri| self.unwatchable(&catalog, uri))
    }

    /// Why `uri` can't be watched in `catalog`, if it can't: not served there, or served by a
    /// per-identity server, whose instances would each need their own subscription, heard by
    /// their person alone (`resources/subscribe` refuses them too).
    fn unwatchable(&self, catalog: &Catalog, uri: &str) -> Option<String> {
        let Some((owner, _)) = catalog.resource_route(uri) else {
            return Some(format!("no resource {uri} is served here"));
        };
        let upstream = self.supervisor.upstreams().of(owner)?;
        upstream.is_per_identity().then(|| {
            format!(
                "{uri} is served by {}, which runs an instance for each person (credentials = \"per-identity\"): updates to its resources are not carried yet",
                upstream.name
            )
        })
    }

    /// What `person`, in `view`, hears of `event` with `arguments` after `cursor`; a resource's
    /// updates are leased for [`LEASE`] more.
    async fn read_own(
        &self,
        person: &Person,
        view: ViewId,
        event: OwnEvent,
        arguments: &Value,
        cursor: &Value,
        max: Option<u64>,
    ) -> Result<Read, ErrorObject> {
        let catalog = self.catalogs.of(view);
        if event == OwnEvent::ResourceUpdated {
            let uri = arguments["uri"].as_str().unwrap_or_default();
            if let Some((owner, _)) = catalog.resource_route(uri) {
                (self.lease_resource(person, owner, uri).await)
                    .map_err(|why| ErrorObject::new(super::events::RESOURCE_EXHAUSTED, why))?;
            }
        }
        let reader = Reader {
            person,
            view,
            catalog: &catalog,
            profiles: self.catalogs.profiles(),
        };
        let own_events = self.clients.own_events();
        (own_events.read(&reader, event, arguments, cursor, max))
            .map_err(|why| ErrorObject::new(INVALID_PARAMS, why))
    }

    /// Keeps the server's subscription to `uri` for [`LEASE`] more, for `person`, unless they
    /// hold as many leases as they may: the first lease holds it, and a watch releases it once
    /// every lease lapsed.
    async fn lease_resource(&self, person: &Person, owner: Owner, uri: &str) -> Result<(), String> {
        let own_events = self.clients.own_events();
        if !own_events.lease_for(person, uri, Instant::now() + LEASE)? {
            return Ok(());
        }
        self.hold_upstream_subscription(owner, uri).await;
        let Some(gateway) = self.me.upgrade() else {
            return Ok(());
        };
        let uri = uri.to_owned();
        crate::runtime::spawn(async move {
            let own_events = gateway.clients.own_events();
            while let Some(until) = own_events.lease_ends(&uri) {
                crate::deadline::sleep_until(until).await;
            }
            gateway.release_upstream_subscription(&uri);
        })
        .detach();
        Ok(())
    }

    /// `read` as the client is shown it: under `exposed`, every cursor sealed.
    fn sealed(&self, mut read: Read, exposed: &str) -> Result<Read, ErrorObject> {
        let seal = |cursor: &Value| {
            let sealed = self.event_cursors.seal(BUILTIN_SERVER, exposed, cursor);
            sealed.map_err(Failure::Refused)
        };
        for occurrence in &mut read.events {
            occurrence["name"] = json!(exposed);
            occurrence["cursor"] = seal(&occurrence["cursor"])?;
        }
        read.cursor = seal(&read.cursor)?;
        Ok(read)
    }
}

/// Checks `arguments` of `event`: an object, and for a resource's updates a `uri` that
/// `unwatchable` finds no fault with.
fn check_arguments(
    event: OwnEvent,
    arguments: &Value,
    unwatchable: impl Fn(&str) -> Option<String>,
) -> Result<(), ErrorObject> {
    let invalid = |why: String| ErrorObject::new(INVALID_PARAMS, format!("Invalid params: {why}"));
    if !arguments.is_object() {
        return Err(invalid("arguments must be an object".into()));
    }
    match event {
        OwnEvent::ResourceUpdated => match arguments["uri"].as_str() {
            Some(uri) => unwatchable(uri).map_or(Ok(()), |why| Err(invalid(why))),
            None => Err(invalid("arguments.uri is required".into())),
        },
        OwnEvent::ListChanged | OwnEvent::TaskEnded | OwnEvent::PinHeld => Ok(()),
    }
}
