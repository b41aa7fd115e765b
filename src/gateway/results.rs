//! The one door every result leaves mcpx by, whatever produced it: a tool call's, a read's, a
//! prompt's, a skill's, an event poll's, a task's result passed through from its server
//! (`tasks/result`, or inline in `tasks/get`) or bridged from the server's task of the other
//! generation. Each is shown as the caller's catalog shows its server: the URIs mcpx renamed
//! for that server ([`super::shared_uris`]) renamed in it. Then the server's guardrails
//! ([`crate::guardrails`]) read what the client will see: credentials and personal data are
//! masked, withheld or counted, and what was found goes on the request's audit line. Last, a
//! tool's result whose text is over its budget (`maxResultChars`) is cut, and kept whole for
//! its caller as `mcpx://results/ID` ([`super::kept_results`]).

use super::{apps, skills, Catalog, Gateway, Owner, RequestContext, ViewId};
use crate::config::{GuardrailAction, HookPhase};
use crate::guardrails::{self, budget, Policy, Report, Scope};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::protocol::{Method, ResultKind};
use crate::upstream::Screen;
use serde_json::{json, Value};

/// A result on its way out: whose it is, in which catalog, and the request it answers.
pub(super) struct Leaving<'a> {
    /// The catalog of the client it goes to.
    pub(super) catalog: &'a Catalog,
    /// Its view: whose profile may set a budget.
    pub(super) view: ViewId,
    /// The server it came from.
    pub(super) owner: Owner,
    /// What it answers.
    pub(super) method: Method,
    /// The request it answers: its audit line hears what the guardrails found.
    pub(super) ctx: &'a RequestContext,
}

impl<'a> Leaving<'a> {
    /// The door of the answer to `incoming`, a request of `owner`'s, shown in `catalog`.
    pub(super) fn answering(
        catalog: &'a Catalog,
        incoming: &'a super::Incoming<'_>,
        owner: Owner,
    ) -> Leaving<'a> {
        Leaving {
            catalog,
            view: incoming.client.view,
            owner,
            method: incoming.method,
            ctx: incoming.ctx,
        }
    }
}

impl Gateway {
    /// `result` as it leaves by `door`; an error when the guardrails withhold a result that is
    /// not a tool's.
    pub(super) async fn leaving(
        &self,
        door: Leaving<'_>,
        mut result: Value,
    ) -> Result<Value, ErrorObject> {
        renamed(door.catalog, door.owner, &mut result);
        let Some(upstream) = self.supervisor.upstreams().of(door.owner) else {
            return Ok(result);
        };
        let policy = self.guardrails.policy(upstream.config.guardrails.as_ref());
        let mut result = self.guarded(&door, &policy, &upstream.name, result)?;
        // Boxed, and only when a hook is configured (see `catalog_method`).
        if self.guardrails.hooks.any(HookPhase::Response) {
            let hooked = self.hooked_response(&door, &upstream.name, result);
            result = Box::pin(hooked).await?;
        }
        self.budgeted(&door, &policy, &mut result);
        Ok(result)
    }

    /// `result`, `server`'s, under its `policy` for credentials and personal data.
    fn guarded(
        &self,
        door: &Leaving<'_>,
        policy: &Policy,
        server: &str,
        mut result: Value,
    ) -> Result<Value, ErrorObject> {
        if policy.scans_nothing() {
            return Ok(result);
        }
        let mut report = Report::default();
        guardrails::scan(policy, Scope::Result, &mut result, &mut report);
        if report.is_empty() {
            return Ok(result);
        }
        report.count();
        let _ = door.ctx.learnt.guardrails.set(report.to_json());
        let kinds = report.kinds();
        tracing::info!(server, method = %door.method, %kinds, "[guardrails] found credentials or personal data in a result");
        if !report.blocks() {
            return Ok(result);
        }
        let said = format!(
            "mcpx withheld this result from {server}: it holds {kinds} ([guardrails] {} = \"block\")",
            blocking_classes(policy),
        );
        match door.method.result_kind() {
            ResultKind::ToolResult | ResultKind::TaskResult => Ok(tool_error(said)),
            // A finished task's result, inline: the task's state still shows.
            ResultKind::TaskState if result.member("result").is_some() => {
                result["result"] = tool_error(said);
                Ok(result)
            }
            ResultKind::TaskState
            | ResultKind::Prompt
            | ResultKind::Resource
            | ResultKind::Other => Err(ErrorObject::new(INTERNAL_ERROR, said)),
        }
    }
}

impl Gateway {
    /// Cuts a tool's `result` to its budget: the least of its server's `policy` and its door's
    /// profile; the whole kept for the caller, named in the marker and in `_meta`.
    fn budgeted(&self, door: &Leaving<'_>, policy: &Policy, result: &mut Value) {
        let profile = self.catalogs.profiles().max_result_chars(door.view);
        let budgets = [policy.max_result_chars, profile];
        let Some(max) = budgets.into_iter().flatten().min() else {
            return;
        };
        let tool_result = match door.method.result_kind() {
            ResultKind::ToolResult | ResultKind::TaskResult => Some(result),
            ResultKind::TaskState => result.member_mut("result"),
            ResultKind::Prompt | ResultKind::Resource | ResultKind::Other => None,
        };
        // Not a tool's result, or a task's state without one yet.
        let Some(result) = tool_result.filter(|r| r.member("content").is_some()) else {
            return;
        };
        // Counted in place: only a result over its budget is copied to be kept.
        if budget::text_chars(result) <= max {
            return;
        }
        let whole = budget::whole_text(result);
        let ttl = self.guardrails.result_ttl();
        let person = door.ctx.caller.person();
        // Without an id to keep it by, the result goes whole rather than cut beyond reach.
        let Some(uri) = self.kept_results.keep(person, whole, ttl) else {
            return;
        };
        let kept_for = humantime::format_duration(ttl);
        let cut = budget::cut(result, max, |cut| {
            format!("\n[mcpx cut {cut} characters here: the whole result is {uri}, readable with resources/read for {kept_for}]\n")
        });
        // A `_meta` that is not an object (the server's mistake) is not indexed into.
        if let Some(fields) = result.as_object_mut() {
            let meta = fields.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("mcpx/wholeResult".into(), json!(uri));
                meta.insert("mcpx/cutChars".into(), json!(cut));
            }
        }
    }
}

impl Gateway {
    /// An error from `owner`'s server as it leaves: its message and data read by the server's
    /// guardrails as a result is (a server can put a credential in either), both withheld where
    /// what they hold blocks, and what was found on `ctx`'s audit line.
    pub(super) fn error_leaving(
        &self,
        owner: Owner,
        ctx: &RequestContext,
        error: ErrorObject,
    ) -> ErrorObject {
        let Some(upstream) = self.supervisor.upstreams().of(owner) else {
            return error;
        };
        let policy = self.guardrails.policy(upstream.config.guardrails.as_ref());
        if policy.scans_nothing() {
            return error;
        }
        let ErrorObject {
            code,
            message,
            data,
        } = error;
        let mut said = json!({"message": message, "data": data});
        let mut report = Report::default();
        guardrails::scan(&policy, Scope::Result, &mut said, &mut report);
        if !report.is_empty() {
            report.count();
            let _ = ctx.learnt.guardrails.set(report.to_json());
        }
        if report.blocks() {
            let server = &upstream.name;
            let message = format!(
                "mcpx withheld this error's words from {server}: they hold {} ([guardrails] {} = \"block\")",
                report.kinds(),
                blocking_classes(&policy),
            );
            return ErrorObject::new(code, message);
        }
        let message = said["message"].as_str().unwrap_or_default().to_owned();
        let data = Some(said["data"].take()).filter(|d| !d.is_null());
        ErrorObject {
            code,
            message,
            data,
        }
    }
}

impl Gateway {
    /// An occurrence of `owner`'s event type as it leaves for a webhook callback (bridged from
    /// a poll or a stream, or relayed) or on a client's `events/stream`: read by the server's
    /// guardrails as a polled one is, its `data` withheld where what it holds blocks.
    pub(super) fn occurrence_leaving(&self, owner: Owner, mut occurrence: Value) -> Value {
        let Some(upstream) = self.supervisor.upstreams().of(owner) else {
            return occurrence;
        };
        let policy = self.guardrails.policy(upstream.config.guardrails.as_ref());
        let mut report = Report::default();
        guardrails::scan(&policy, Scope::Result, &mut occurrence, &mut report);
        if report.is_empty() {
            return occurrence;
        }
        report.count();
        let (server, kinds) = (&upstream.name, report.kinds());
        tracing::info!(server, %kinds, "[guardrails] found credentials or personal data in an event occurrence");
        if report.blocks() {
            occurrence["data"] = json!(format!(
                "mcpx withheld this occurrence's data from {server}: it holds {kinds} ([guardrails] {} = \"block\")",
                blocking_classes(&policy)
            ));
        }
        occurrence
    }
}

/// What a server says outside a result (its log and progress messages) as its client may read
/// it, under its guardrails' `policy`; none when they look for nothing.
pub(super) fn screen(policy: Policy) -> Option<Screen> {
    if policy.scans_nothing() {
        return None;
    }
    Some(Screen(std::sync::Arc::new(move |message: &mut Value| {
        let mut report = Report::default();
        guardrails::scan(&policy, Scope::Result, message, &mut report);
        report.count();
    })))
}

/// Which settings block under `policy`, for the message that says so.
fn blocking_classes(policy: &Policy) -> &'static str {
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
