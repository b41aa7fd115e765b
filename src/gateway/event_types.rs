//! Event types (the Events extension's `events/list`) in the merged catalog: named like tools,
//! `SERVER__name`, their dots kept ([`naming::exposed_event`]), and each shown with only the delivery modes mcpx carries for it, so a client
//! never subscribes in a way that would fail at mcpx.

use super::naming;
use crate::json::Member;
use serde_json::Value;

/// The delivery modes mcpx passes from an upstream to its clients: `events/poll` and
/// `events/stream` (push), with their cursors sealed. Where either is offered, mcpx also
/// delivers by webhook itself ([`super::event_subscriptions`]); where only the server's own
/// webhooks are, mcpx relays them ([`super::event_relay`]).
pub(super) const PASSED: [&str; 2] = ["poll", "push"];

/// The name `event` is exposed under: its server's `prefix` and its own name.
pub(super) fn exposed(event: &Value, prefix: &str) -> String {
    let own = event.member("name").and_then(Value::as_str);
    naming::exposed_event(prefix, own.unwrap_or_default())
}

/// `event` as clients are shown it, under `exposed`: its delivery modes cut to those mcpx
/// passes, and webhook, which mcpx bridges from them, or, where the server offers only its own
/// webhooks, relays when it can (`relays_webhooks`); `None` when mcpx carries no mode of it.
pub(super) fn shown(event: &Value, exposed: &str, relays_webhooks: bool) -> Option<Value> {
    let offered = event.member("delivery").and_then(Value::as_array)?;
    let offers = |mode: &str| offered.iter().any(|m| m.as_str() == Some(mode));
    let mut carried: Vec<Value> = PASSED
        .iter()
        .filter(|mode| offers(mode))
        .map(|mode| Value::String((*mode).to_owned()))
        .collect();
    if carried.is_empty() && !(relays_webhooks && offers("webhook")) {
        return None;
    }
    carried.push(Value::String("webhook".into()));
    let mut shown = event.clone();
    shown["name"] = Value::String(exposed.to_owned());
    shown["delivery"] = Value::Array(carried);
    Some(shown)
}
