//! The policies every call passes, in one order, on the target it resolved to
//! ([`super::target`]), whatever route it came by:
//!
//! 1. **The caller's view.** Resolution looks the name up in the caller's catalog (its door's
//!    profile, narrowed by its `[[auth.rules]]` rule's `denyTools`): what lies outside it is
//!    unknown, by every route alike.
//! 2. **`stepUp`.** Judged at the HTTP door, where its answer is a 403 with a challenge the
//!    client can log in again with, on the targets [`Gateway::called_tools`] resolves here.
//! 3. **Pins** ([`super::pinning`]): a definition waiting for review is not used.
//! 4. **`[limits]`** ([`super::call_limits`]): rates and the loop guard, per caller, counted on
//!    the target's exposed name and its arguments in canonical form.
//! 5. **Request hooks** of `[[guardrails.hooks]]` ([`super::hooked`]), after mcpx's own
//!    policies (they wait on an outside policy): a call mcpx refuses itself never reaches them,
//!    so a looping agent does not flood the policy server, and they are asked about the
//!    server's own name for what the call resolved to, whatever route it came by.
//! 6. **Approval** (`[approvals]`, [`super::approvals`]): whether a person approves a tool's
//!    call, as the hooks left it, before it runs. The chain decides; the call waits where it
//!    runs (as a task, where it is one, so that its client is answered with the task at once).
//!
//! [`CHAIN`] is the order steps 3 to 6 run in; a step is a [`Step`], so that a new one is a
//! compile error until the chain says where it goes.

use super::catalog::Catalog;
use super::target::{resolve, Resolved};
use super::{call_limits, Gateway, RequestContext};
use crate::config::HookPhase;
use crate::jsonrpc::{ErrorObject, Parsed};
use crate::protocol::Method;
use serde_json::Value;
use std::borrow::Cow;

/// A policy the gateway runs on a resolved call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Pinned definitions waiting for review.
    Pins,
    /// `[limits]`.
    Limits,
    /// The request hooks of `[[guardrails.hooks]]`.
    Hooks,
    /// `[approvals]`.
    Approval,
}

/// The steps, in the order they run.
const CHAIN: [Step; 4] = [Step::Pins, Step::Limits, Step::Hooks, Step::Approval];

/// A call's answer when a policy refuses it: a result (a tool result with `isError`) or an
/// error, as the policy says.
pub(super) type Refused = Result<Value, ErrorObject>;

/// What each step asks of the gateway: one method a step, so that the chain's order and reach
/// are the chain's alone (and are tested without a gateway).
trait Steps {
    /// [`Step::Pins`].
    fn pins(&self, method: Method, resolved: &Resolved<'_>) -> Result<(), Refused>;
    /// [`Step::Limits`].
    fn limits(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<(), Refused>;
    /// [`Step::Hooks`]: the params to forward in place of the call's own, where a hook
    /// replaced them.
    async fn hooks(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<Option<Value>, Refused>;
    /// [`Step::Approval`]: whether a person approves it before it runs.
    fn approval(&self, method: Method, resolved: &Resolved<'_>) -> bool;
}

/// Runs [`CHAIN`] on `resolved`, a request of `method`: the first refusal is the answer; else
/// whether a person approves it first. A hook's replaced params are `resolved`'s from then on.
async fn run_chain(
    steps: &impl Steps,
    method: Method,
    resolved: &mut Resolved<'_>,
    ctx: &RequestContext,
) -> Result<bool, Refused> {
    let mut approval = false;
    for step in CHAIN {
        match step {
            Step::Pins => steps.pins(method, resolved)?,
            Step::Limits => steps.limits(method, resolved, ctx)?,
            Step::Hooks => {
                if let Some(params) = steps.hooks(method, resolved, ctx).await? {
                    resolved.params = Cow::Owned(params);
                }
            }
            Step::Approval => approval = steps.approval(method, resolved),
        }
    }
    Ok(approval)
}

impl Steps for Gateway {
    fn pins(&self, method: Method, resolved: &Resolved<'_>) -> Result<(), Refused> {
        let as_tool_error = method == Method::ToolsCall && !resolved.asks_for_task();
        self.pins_allow(&resolved.target, as_tool_error)
    }

    fn limits(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<(), Refused> {
        self.within_limits(method, resolved, ctx)
    }

    async fn hooks(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<Option<Value>, Refused> {
        // Boxed, and only when a hook is configured: a hook's HTTP exchange stays out of every
        // other request's future.
        if !self.guardrails.hooks.any(HookPhase::Request) {
            return Ok(None);
        }
        Box::pin(self.hooked_request(method, resolved, ctx)).await
    }

    fn approval(&self, method: Method, resolved: &Resolved<'_>) -> bool {
        method == Method::ToolsCall && self.approvals.asks_about(&resolved.target.exposed)
    }
}

impl Gateway {
    /// Runs the chain on `resolved`, a request of `method` from `ctx.caller`: whether a person
    /// approves it before it runs, unless a step refused it.
    pub(super) async fn admit(
        &self,
        method: Method,
        resolved: &mut Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<bool, Refused> {
        run_chain(self, method, resolved, ctx).await
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
            refusal.answer(method, resolved.asks_for_task())
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

#[cfg(test)]
mod every_revision {
    mod policies {
        use super::super::*;
        use crate::gateway::route::Owner;
        use crate::gateway::target::{Kind, Target};
        use serde_json::json;
        use std::borrow::Cow;
        use std::sync::{Arc, Mutex};

        /// Steps that record what they were asked, and refuse where told.
        #[derive(Default)]
        struct Recorded {
            asked: Mutex<Vec<(Step, Kind, String)>>,
            refuse: Option<Step>,
        }

        impl Recorded {
            fn judge(&self, step: Step, resolved: &Resolved<'_>) -> Result<(), Refused> {
                let target = &resolved.target;
                let asked = (step, target.kind, target.own.clone());
                self.asked.lock().unwrap().push(asked);
                match self.refuse == Some(step) {
                    true => Err(Err(ErrorObject::new(-1, format!("{step:?}")))),
                    false => Ok(()),
                }
            }
        }

        impl Steps for Recorded {
            fn pins(&self, _: Method, resolved: &Resolved<'_>) -> Result<(), Refused> {
                self.judge(Step::Pins, resolved)
            }

            fn limits(
                &self,
                _: Method,
                resolved: &Resolved<'_>,
                _: &RequestContext,
            ) -> Result<(), Refused> {
                self.judge(Step::Limits, resolved)
            }

            async fn hooks(
                &self,
                _: Method,
                resolved: &Resolved<'_>,
                _: &RequestContext,
            ) -> Result<Option<Value>, Refused> {
                self.judge(Step::Hooks, resolved)?;
                Ok(Some(json!({"replaced": resolved.target.own})))
            }

            /// Asked, it says a person approves: the chain cannot be refused here (a person's
            /// refusal comes when they answer, where the call waits).
            fn approval(&self, _: Method, resolved: &Resolved<'_>) -> bool {
                self.judge(Step::Approval, resolved).is_ok()
            }
        }

        fn chain(
            steps: &Recorded,
            method: Method,
            resolved: &mut Resolved<'_>,
        ) -> Result<bool, Refused> {
            smol::block_on(run_chain(steps, method, resolved, &context()))
        }

        fn context() -> RequestContext {
            let (outbound, _) = crate::outbox::bounded(1);
            let caller = crate::access::Identity::of_kind(crate::access::Kind::LocalOwner);
            RequestContext::new(crate::cancel::Cancel::new(), outbound, Arc::new(caller))
        }

        /// One call of each kind a target can be, as resolution makes it.
        fn targets() -> Vec<(Method, Resolved<'static>)> {
            let target = |kind: Kind, own: &str| Target {
                kind,
                owner: Owner::Upstream(3),
                own: own.to_owned(),
                exposed: format!("s__{own}"),
                template: None,
            };
            let resolved = |kind, own| Resolved {
                target: target(kind, own),
                params: Cow::Owned(json!({})),
            };
            vec![
                (Method::ToolsCall, resolved(Kind::Tool, "echo")),
                (Method::PromptsGet, resolved(Kind::Prompt, "greet")),
                (Method::ResourcesRead, resolved(Kind::Resource, "file:///a")),
                (
                    Method::SkillsGet,
                    resolved(Kind::Skill, "skill://s/SKILL.md"),
                ),
                (Method::CompletionComplete, resolved(Kind::Prompt, "greet")),
                (
                    Method::ResourcesSubscribe,
                    resolved(Kind::Resource, "file:///b"),
                ),
            ]
        }

        /// Every step of the chain judges every kind of target, in the chain's order, on the
        /// target itself (the server's own name: what it resolved to, not what was sent); what
        /// a hook replaced is what goes on, and a person's approval is the chain's answer.
        #[test]
        fn every_step_runs_for_every_kind_of_target_in_order() {
            for (method, mut resolved) in targets() {
                let steps = Recorded::default();
                assert_eq!(chain(&steps, method, &mut resolved), Ok(true), "{method}");
                let replaced = json!({"replaced": resolved.target.own});
                assert_eq!(*resolved.params, replaced, "{method}");
                let asked = steps.asked.into_inner().unwrap();
                let expected: Vec<_> = CHAIN
                    .iter()
                    .map(|&step| (step, resolved.target.kind, resolved.target.own.clone()))
                    .collect();
                assert_eq!(asked, expected, "{method}");
            }
        }

        /// A refusal is the answer: no later step runs (a call a pin refuses spends no rate, one
        /// `[limits]` refuses never reaches a hook).
        #[test]
        fn a_refusing_step_ends_the_chain() {
            for refusing in [Step::Pins, Step::Limits, Step::Hooks] {
                for (method, mut resolved) in targets() {
                    let steps = Recorded {
                        refuse: Some(refusing),
                        ..Recorded::default()
                    };
                    let refused = chain(&steps, method, &mut resolved);
                    let said = refused.unwrap_err().unwrap_err().message;
                    assert_eq!(said, format!("{refusing:?}"), "{method}");
                    let ran: Vec<Step> = steps
                        .asked
                        .into_inner()
                        .unwrap()
                        .iter()
                        .map(|a| a.0)
                        .collect();
                    let upto = CHAIN.iter().position(|&s| s == refusing).unwrap();
                    assert_eq!(ran, CHAIN[..=upto].to_vec(), "{method}");
                }
            }
        }
    }
}
