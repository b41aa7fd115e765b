//! The guardrails' hooks ([`crate::guardrails::hooks`]) as the gateway asks them: a call's,
//! in the chain after mcpx's own policies ([`super::policies`]), about the params its server
//! will get; a result's, at the one door ([`super::results`]), about what the client would
//! get. A hook may let it pass, replace it, or refuse it with a reason the caller is told.
//! What a hook replaces is still routed by what the call resolved to: the server's own name
//! (or URI) is put back, so a hook rewrites arguments, never the tool they go to.

use super::results::{tool_error, Leaving};
use super::target::Resolved;
use super::{policies::Refused, Gateway, RequestContext};
use crate::config::HookPhase;
use crate::guardrails::hooks::{Asked, Verdict};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, INVALID_PARAMS};
use crate::protocol::method::RoutedBy;
use crate::protocol::{Method, ResultKind};
use serde_json::Value;

impl Gateway {
    /// Asks the request hooks about `resolved`, a call of `method` by `ctx.caller`: the params
    /// to forward in place of its own, when a hook replaced them; its answer, when one refused.
    pub(super) async fn hooked_request(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<Option<Value>, Refused> {
        let hooks = &self.guardrails.hooks;
        if !hooks.any(HookPhase::Request) {
            return Ok(None);
        }
        let Some(upstream) = self.supervisor.upstreams().of(resolved.target.owner) else {
            return Ok(None);
        };
        let target = &resolved.target;
        let asked = Asked {
            phase: HookPhase::Request,
            server: &upstream.name,
            method: method.as_str(),
            name: Some(&target.exposed),
            caller: ctx.caller.audited(),
        };
        // As the server will see them: under its own name for what is called.
        let key = match method.routed_by() {
            RoutedBy::Uri => "uri",
            RoutedBy::Name | RoutedBy::Ref | RoutedBy::TaskId | RoutedBy::Nothing => "name",
        };
        let mut params = resolved.params.clone().into_owned();
        if let Some(fields) = params.as_object_mut() {
            fields.insert(key.to_owned(), Value::String(target.own.clone()));
        }
        let as_tool_error = method == Method::ToolsCall && !resolved.asks_for_task();
        match hooks.ask(&asked, params).await {
            Verdict::Pass => Ok(None),
            Verdict::Replace(mut with) => {
                with[key] = Value::String(resolved.params[key].as_str().unwrap_or_default().into());
                Ok(Some(with))
            }
            Verdict::Deny { reason, error } => {
                tracing::info!(server = %upstream.name, name = %target.exposed, "[guardrails] a request hook refused a call");
                Err(denied(as_tool_error, reason, error))
            }
        }
    }

    /// Asks the response hooks about `result`, `server`'s, leaving by `door`: what leaves.
    pub(super) async fn hooked_response(
        &self,
        door: &Leaving<'_>,
        server: &str,
        mut result: Value,
    ) -> Result<Value, ErrorObject> {
        let hooks = &self.guardrails.hooks;
        if !hooks.any(HookPhase::Response) {
            return Ok(result);
        }
        // A task's result is its tool call's; a read by the task's id names no tool, and every
        // hook of `tools/call` is asked about it.
        let answer = door.method.result_kind();
        let (method, inline) = match answer {
            ResultKind::ToolResult | ResultKind::TaskResult => ("tools/call", false),
            ResultKind::TaskState if result.member("result").is_some() => ("tools/call", true),
            ResultKind::Prompt => ("prompts/get", false),
            ResultKind::Resource => ("resources/read", false),
            ResultKind::TaskState | ResultKind::Other => return Ok(result),
        };
        let name = match answer {
            ResultKind::TaskResult | ResultKind::TaskState => None,
            ResultKind::ToolResult
            | ResultKind::Prompt
            | ResultKind::Resource
            | ResultKind::Other => door.ctx.learnt.target.get().map(|t| t.exposed.as_str()),
        };
        let asked = Asked {
            phase: HookPhase::Response,
            server,
            method,
            name,
            caller: door.ctx.caller.audited(),
        };
        let judged = match inline {
            true => result["result"].take(),
            false => std::mem::take(&mut result),
        };
        let answer = match hooks.ask(&asked, judged.clone()).await {
            Verdict::Pass => judged,
            Verdict::Replace(with) => with,
            Verdict::Deny { reason, error } => {
                tracing::info!(
                    server,
                    method,
                    "[guardrails] a response hook withheld a result"
                );
                match denied(method == "tools/call", reason, error) {
                    Ok(refusal) => refusal,
                    Err(error) => return Err(error),
                }
            }
        };
        match inline {
            true => result["result"] = answer,
            false => result = answer,
        }
        Ok(result)
    }
}

/// What the caller gets of a hook's refusal: the hook's own JSON-RPC error where it gave one;
/// else a tool error saying `reason` where a tool result is expected, or an error.
fn denied(as_tool_error: bool, reason: String, error: Option<Value>) -> Refused {
    if let Some(error) = error {
        let code = error["code"].as_i64().unwrap_or(INTERNAL_ERROR);
        let message = error["message"].as_str().unwrap_or_default().to_owned();
        let mut refusal = ErrorObject::new(code, message);
        if let Some(data) = error.get("data") {
            refusal = refusal.with_data(data.clone());
        }
        return Err(refusal);
    }
    let said = format!("Refused by policy: {reason}");
    match as_tool_error {
        true => Ok(tool_error(said)),
        false => Err(ErrorObject::new(INVALID_PARAMS, said)),
    }
}
