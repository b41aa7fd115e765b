//! The one door every result leaves mcpx by, whatever produced it: a tool call's, a read's, a
//! prompt's, a skill's, a task's result passed through from its server (`tasks/result`, or
//! inline in `tasks/get`) or bridged from the server's task of the other generation. Each is
//! shown as the caller's catalog shows its server: the URIs mcpx renamed for that server
//! ([`super::shared_uris`]) renamed in it.
//!
//! Result hooks (the guardrails' redaction) go in [`leaving`], after the renames: they see
//! what the client will see.

use super::{apps, skills, Catalog, Owner};
use crate::json::Member;
use serde_json::Value;

/// `result`, a result of `owner`'s, as it leaves for a client whose catalog is `catalog`.
pub(super) fn leaving(catalog: &Catalog, owner: Owner, mut result: Value) -> Value {
    if let Some(renames) = catalog.shared_uris().of(owner) {
        let rename = |result: &mut Value| {
            renames.in_items(result, "contents");
            renames.in_items(result, "content");
            apps::rename_in_tool(renames, result);
            if let Some(skill) = result.member_mut("skill") {
                *skill = skills::renamed(renames, skill);
            }
        };
        rename(&mut result);
        // A finished task's result, inline in `tasks/get`.
        if let Some(inline) = result.member_mut("result") {
            rename(inline);
        }
    }
    result
}
