//! The policies every call passes, in one order, on the target it resolved to
//! ([`super::target`]), whatever route it came by:
//!
//! 1. **The caller's view.** Resolution looks the name up in the caller's catalog (its door's
//!    profile, narrowed by its `[[auth.rules]]` rule's `denyTools`): what lies outside it is
//!    unknown, by every route alike.
//! 2. **`stepUp`.** Judged at the HTTP door, where its answer is a 403 with a challenge the
//!    client can log in again with, on the targets [`Gateway::called_tools`] resolves here.
//! 3. **Pins** ([`super::pinning`]): a definition waiting for review is not used.
//! 4. *(Approvals and hooks of the guardrails go here: after what may be used, before what it
//!    costs.)*
//! 5. **`[limits]`** ([`super::call_limits`]): rates and the loop guard, per caller, counted on
//!    the target's exposed name and its arguments in canonical form.
//!
//! [`CHAIN`] is the order steps 3 to 5 run in; a step is a [`Step`], so that a new one is a
//! compile error until the chain says where it goes.

use super::catalog::Catalog;
use super::target::{resolve, Resolved};
use super::{call_limits, Gateway, RequestContext};
use crate::jsonrpc::{ErrorObject, Parsed};
use crate::protocol::Method;
use serde_json::Value;

/// A policy the gateway runs on a resolved call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Pinned definitions waiting for review.
    Pins,
    /// `[limits]`.
    Limits,
}

/// The steps, in the order they run.
const CHAIN: [Step; 2] = [Step::Pins, Step::Limits];

/// A call's answer when a policy refuses it: a result (a tool result with `isError`) or an
/// error, as the policy says.
pub(super) type Refused = Result<Value, ErrorObject>;

impl Gateway {
    /// Runs the chain on `resolved`, a request of `method` from `ctx.caller`.
    pub(super) fn admit(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<(), Refused> {
        for step in CHAIN {
            match step {
                Step::Pins => self.pins_allow(method, &resolved.target)?,
                Step::Limits => self.within_limits(method, resolved, ctx)?,
            }
        }
        Ok(())
    }

    /// Whether `[limits]` let this call of the caller's go upstream; if not, its answer.
    fn within_limits(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<(), Refused> {
        let name = resolved.target.exposed.as_str();
        let call = call_limits::Call {
            method,
            name,
            arguments: resolved.arguments(),
        };
        self.limits.admit(&ctx.caller, &call).map_err(|refusal| {
            crate::metrics::limited(&refusal.limit);
            tracing::info!(limit = %refusal.limit, name, "a call was refused by [limits]");
            let task_asked = resolved.params.get("task").is_some();
            refusal.answer(method, task_asked)
        })
    }

    /// The exposed names of the tools the `tools/call` requests of `body` reach in `client`'s
    /// view, by whatever route each names it: what the HTTP door judges `stepUp` on.
    pub async fn called_tools(&self, view: super::ViewId, body: &Parsed) -> Vec<String> {
        let calls = body.tool_calls();
        if calls.is_empty() {
            return Vec::new();
        }
        self.catalogs.ready().await;
        let catalog = self.catalogs.of(view);
        calls
            .into_iter()
            .filter_map(|params| called_tool(&catalog, params))
            .collect()
    }
}

/// The exposed name of the tool a `tools/call` with `params` reaches.
fn called_tool(catalog: &Catalog, params: Option<&Value>) -> Option<String> {
    let resolved = resolve(catalog, Method::ToolsCall, params).ok()??;
    Some(resolved.target.exposed)
}
