//! The one door every result leaves mcpx by, whatever produced it: a tool call's, a read's, a
//! prompt's, a skill's, an event poll's, a task's result passed through from its server
//! (`tasks/result`, or inline in `tasks/get`) or bridged from the server's task of the other
//! generation. Each is shown as the caller's catalog shows its server: the URIs mcpx renamed
//! for that server ([`super::shared_uris`]) renamed in it. Then the server's guardrails
//! ([`crate::guardrails`]) read what the client will see: credentials and personal data are
//! masked, withheld or counted, and what was found goes on the request's audit line.

use super::{apps, skills, Catalog, Gateway, Owner, RequestContext};
use crate::config::GuardrailAction;
use crate::guardrails::{self, Reach, Report};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::protocol::Method;
use serde_json::{json, Value};

/// A result on its way out: whose it is, in which catalog, and the request it answers.
pub(super) struct Leaving<'a> {
    /// The catalog of the client it goes to.
    pub(super) catalog: &'a Catalog,
    /// The server it came from.
    pub(super) owner: Owner,
    /// What it answers.
    pub(super) method: Method,
    /// The request it answers: its audit line hears what the guardrails found.
    pub(super) ctx: &'a RequestContext,
}

impl Gateway {
    /// `result` as it leaves by `door`; an error when the guardrails withhold a result that is
    /// not a tool's.
    pub(super) fn leaving(
        &self,
        door: Leaving<'_>,
        mut result: Value,
    ) -> Result<Value, ErrorObject> {
        renamed(door.catalog, door.owner, &mut result);
        self.guarded(&door, result)
    }

    /// `result` under its server's guardrails.
    fn guarded(&self, door: &Leaving<'_>, mut result: Value) -> Result<Value, ErrorObject> {
        let Some(upstream) = self.supervisor.upstreams().of(door.owner) else {
            return Ok(result);
        };
        let policy = self.guardrails.policy(upstream.config.guardrails.as_ref());
        if policy.scans_nothing() {
            return Ok(result);
        }
        let mut report = Report::default();
        guardrails::scan(&policy, Reach::Result, &mut result, &mut report);
        if report.is_empty() {
            return Ok(result);
        }
        report.count();
        let _ = door.ctx.guardrails.set(report.to_json());
        let kinds = report.kinds();
        tracing::info!(server = %upstream.name, method = %door.method, %kinds, "[guardrails] found credentials or personal data in a result");
        if !report.blocks() {
            return Ok(result);
        }
        let said = format!(
            "mcpx withheld this result from {}: it holds {kinds} ([guardrails] {} = \"block\")",
            upstream.name,
            blocking_classes(&policy),
        );
        match door.method {
            Method::ToolsCall | Method::TasksResult => Ok(tool_error(said)),
            // A finished task's result, inline: the task's state still shows.
            Method::TasksGet if result.member("result").is_some() => {
                result["result"] = tool_error(said);
                Ok(result)
            }
            _ => Err(ErrorObject::new(INTERNAL_ERROR, said)),
        }
    }
}

/// Which settings block under `policy`, for the message that says so.
fn blocking_classes(policy: &guardrails::Policy) -> &'static str {
    match (policy.secrets, policy.pii) {
        (GuardrailAction::Block, GuardrailAction::Block) => "secrets and pii",
        (GuardrailAction::Block, _) => "secrets",
        _ => "pii",
    }
}

/// A tool result with `isError` saying `message`: what the model reads of a refused call.
pub(super) fn tool_error(message: String) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// `result`, a result of `owner`'s, with the URIs `catalog` renamed for that server renamed.
fn renamed(catalog: &Catalog, owner: Owner, result: &mut Value) {
    let Some(renames) = catalog.shared_uris().of(owner) else {
        return;
    };
    let rename = |result: &mut Value| {
        renames.in_items(result, "contents");
        renames.in_items(result, "content");
        apps::rename_in_tool(renames, result);
        if let Some(skill) = result.member_mut("skill") {
            *skill = skills::renamed(renames, skill);
        }
    };
    rename(result);
    // A finished task's result, inline in `tasks/get`.
    if let Some(inline) = result.member_mut("result") {
        rename(inline);
    }
}
