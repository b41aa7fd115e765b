//! The Events extension (SEP-3415) through mcpx, for 2026-07-28 clients. `events/list` merges
//! every upstream's event types under their exposed names ([`super::event_types`]);
//! `events/poll` goes to the upstream whose event type it names, under its own name, with the
//! client's sealed cursor opened for it, and comes back with the event types renamed and every
//! cursor sealed again ([`super::event_cursors`]). Profiles, `[[auth.rules]]` (`denyTools`
//! globs match event types' exposed names too), pins and `[limits]` apply as to a tool, by the
//! one gate. Delivery mcpx does not carry (yet) is refused saying so, never passed on: a
//! server must not learn a client's webhook callback or secret.

use super::forwarded::forwardable;
use super::incoming::Incoming;
use super::target::Target;
use super::{results, Gateway};
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS, NOT_FOUND, UNSUPPORTED};
use serde_json::{json, Value};

impl Gateway {
    /// `events/poll` of `target`: passed to its server under its own name, its cursor the
    /// server's own; the answer's event types under their exposed name, its cursors sealed.
    pub(super) async fn poll_events(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        let server = self.server_name(target)?;
        let cursors = &self.event_cursors;
        let sent = incoming.params.and_then(|p| p.member("cursor"));
        let own = cursors
            .open(&server, &target.exposed, sent)
            .map_err(|why| ErrorObject::new(INVALID_PARAMS, why))?;
        let mut forwarded = forwardable(incoming.params);
        forwarded["name"] = json!(target.own);
        forwarded["cursor"] = own;
        let answer = self
            .forward(incoming, target.owner, forwarded, &target.exposed)
            .await?;
        let catalog = self.catalog_of(incoming.client);
        let mut answer = results::leaving(&catalog, target.owner, answer);
        let seal = |cursor: &mut Value| -> Result<(), ErrorObject> {
            let sealed = cursors.seal(&server, &target.exposed, cursor);
            *cursor = sealed.map_err(Failure::Refused)?;
            Ok(())
        };
        if let Some(cursor) = answer.member_mut("cursor") {
            seal(cursor)?;
        }
        let occurrences = answer.member_mut("events").and_then(Value::as_array_mut);
        for occurrence in occurrences.into_iter().flatten() {
            occurrence["name"] = json!(target.exposed);
            if let Some(cursor) = occurrence.member_mut("cursor") {
                seal(cursor)?;
            }
        }
        Ok(answer)
    }

    /// The configured name of the server `target` is of.
    fn server_name(&self, target: &Target) -> Result<String, ErrorObject> {
        let upstream = self.supervisor.upstreams().of(target.owner);
        let upstream = upstream.ok_or_else(|| Failure::Refused("its server was removed".into()))?;
        Ok(upstream.name.clone())
    }
}

/// The answer to a request for a delivery mcpx does not carry yet: `events/stream` and the
/// webhook methods. `events/list` shows no event type with such a mode, so only a client that
/// ignored it meets this.
pub(super) fn not_carried(mode: &str) -> ErrorObject {
    ErrorObject::new(
        UNSUPPORTED,
        format!("Unsupported: mcpx does not carry {mode} delivery of events yet; poll them (events/poll)"),
    )
    .with_data(json!({"feature": "deliveryMode", "value": mode}))
}

/// The answer to a request naming an event type the caller's catalog does not have.
pub(super) fn unknown_event(name: &str) -> ErrorObject {
    ErrorObject::new(NOT_FOUND, format!("Event type not found: {name}"))
}
