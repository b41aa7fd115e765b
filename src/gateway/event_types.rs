//! Event types (the Events extension's `events/list`) in the merged catalog: named like tools,
//! `SERVER__name`, and each shown with only the delivery modes mcpx carries for it, so a client
//! never subscribes in a way that would fail at mcpx.

use super::naming;
use crate::json::Member;
use serde_json::Value;

/// The delivery modes mcpx passes from an upstream to its clients: `events/poll` and
/// `events/stream` (push), with their cursors sealed. Where either is offered, mcpx also
/// delivers by webhook itself ([`super::event_subscriptions`]).
pub(super) const PASSED: [&str; 2] = ["poll", "push"];

/// The name `event` is exposed under: its server's `prefix` and its own name.
pub(super) fn exposed(event: &Value, prefix: &str) -> String {
    let own = event.member("name").and_then(Value::as_str);
    naming::exposed(prefix, own.unwrap_or_default())
}

/// `event` as clients are shown it, under `exposed`: its delivery modes cut to those mcpx
/// passes, and webhook, which mcpx bridges from them; `None` when it offers neither poll nor
/// push (a webhook-only type: relaying a server's own webhooks is not built).
pub(super) fn shown(event: &Value, exposed: &str) -> Option<Value> {
    let offered = event.member("delivery").and_then(Value::as_array)?;
    let mut carried: Vec<Value> = offered
        .iter()
        .filter(|mode| mode.as_str().is_some_and(|m| PASSED.contains(&m)))
        .cloned()
        .collect();
    if carried.is_empty() {
        return None;
    }
    carried.push(Value::String("webhook".into()));
    let mut shown = event.clone();
    shown["name"] = Value::String(exposed.to_owned());
    shown["delivery"] = Value::Array(carried);
    Some(shown)
}
