//! What a model reads of a result, for the scanner ([`super::Scope::Result`]): every string and
//! every member's name, wherever it is, but binary payloads and the protocol's opaque tokens at
//! their place in the protocol, and a result's text items read as a client joins them, so that a
//! secret split over two items is found whole.

use super::{findings, mask, scan_text, Policy, Report};
use crate::guardrails::scan::Finding;
use serde_json::{Map, Value};

/// Where in a result a value is: what the protocol puts there decides what is a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The result itself: its `nextCursor`, `cursor`, `requestState` and `taskId` are tokens.
    Top,
    /// A task (a result's `task`, an item of `tasks`): its `taskId` is one.
    Task,
    /// An occurrence of an events poll: its `cursor` is one.
    Occurrence,
    /// A `_meta`: mcpx's own keys (`mcpx/…`) and the protocol's (`io.modelcontextprotocol/…`,
    /// `progressToken`) are not read; the rest is a server's, and is.
    Meta,
    /// A server's own data: everything is read.
    Data,
}

/// Scans `result` as a model reads it.
pub(super) fn result(policy: &Policy, result: &mut Value, report: &mut Report) {
    walk(policy, result, Place::Top, report);
}

fn walk(policy: &Policy, value: &mut Value, place: Place, report: &mut Report) {
    match value {
        Value::String(text) => {
            if let Some(masked) = scan_text(policy, text, report) {
                *text = masked;
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(policy, item, place, report);
            }
        }
        Value::Object(fields) => object(policy, fields, place, report),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn object(policy: &Policy, fields: &mut Map<String, Value>, place: Place, report: &mut Report) {
    let binary = fields.get("mimeType").is_some_and(Value::is_string);
    let mut renamed = false;
    for (key, field) in fields.iter_mut() {
        let token = match (place, key.as_str()) {
            (Place::Top, "nextCursor" | "cursor" | "requestState" | "taskId") => true,
            (Place::Task, "taskId") | (Place::Occurrence, "cursor") => true,
            (Place::Meta, key) => is_protocols(key),
            (_, "blob") => true,
            (_, "data") => binary,
            _ => false,
        };
        if token {
            continue;
        }
        let inner = match (place, key.as_str()) {
            (_, "_meta") => Place::Meta,
            (Place::Top, "task" | "tasks") => Place::Task,
            (Place::Top, "events") => Place::Occurrence,
            // A task's result, inline in `tasks/get`, is a result of its own.
            (Place::Top, "result") => Place::Top,
            (Place::Top | Place::Task | Place::Occurrence, "content") => {
                if let Value::Array(items) = field {
                    content(policy, items, report);
                    continue;
                }
                Place::Data
            }
            _ => Place::Data,
        };
        walk(policy, field, inner, report);
        // The protocol's own member names are its words, not a server's.
        renamed |= matches!(place, Place::Data | Place::Meta) && !findings(policy, key).is_empty();
    }
    if renamed {
        let entries = std::mem::take(fields);
        for (key, value) in entries {
            let key = scan_text(policy, &key, report).unwrap_or(key);
            fields.insert(key, value);
        }
    }
}

/// Whether a `_meta` key is mcpx's or the protocol's own, holding tokens no model reads.
fn is_protocols(key: &str) -> bool {
    key.starts_with("mcpx/")
        || key.starts_with("io.modelcontextprotocol/")
        || key == "progressToken"
}

/// A result's content items: the text items read joined, as a client shows them, each masked
/// where a finding reaches into it; the other items read as data.
fn content(policy: &Policy, items: &mut [Value], report: &mut Report) {
    let mut joined = String::new();
    let mut spans = Vec::new();
    for (index, item) in items.iter().enumerate() {
        if let Some(text) = text_of(item) {
            spans.push((index, joined.len()..joined.len() + text.len()));
            joined.push_str(text);
        }
    }
    let found = findings(policy, &joined);
    for (index, span) in spans {
        let local: Vec<Finding> = (found.iter())
            .filter(|f| f.span.start < span.end && f.span.end > span.start)
            .map(|f| Finding {
                kind: f.kind,
                span: f.span.start.max(span.start) - span.start
                    ..f.span.end.min(span.end) - span.start,
            })
            .collect();
        let item = &mut items[index];
        let masked = text_of(item).and_then(|text| mask(policy, text, &local, report));
        if let Some(masked) = masked {
            item["text"] = Value::String(masked);
        }
        // Its other members (annotations, `_meta`) as any item's.
        let others = item.as_object_mut().into_iter().flatten();
        for (key, field) in others.filter(|(key, _)| *key != "text") {
            let place = match key.as_str() {
                "_meta" => Place::Meta,
                _ => Place::Data,
            };
            walk(policy, field, place, report);
        }
    }
    for item in items.iter_mut().filter(|item| text_of(item).is_none()) {
        walk(policy, item, Place::Data, report);
    }
}

/// A text content item's text.
fn text_of(item: &Value) -> Option<&str> {
    (item["type"] == "text")
        .then(|| item["text"].as_str())
        .flatten()
}
