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
//! 5. **Request hooks** of `[[guardrails.hooks]]` ([`super::hooked`]), asked last and apart
//!    (they wait on an outside policy): a call mcpx refuses itself never reaches them, so a
//!    looping agent does not flood the policy server, and they are asked about the server's
//!    own name for what the call resolved to, whatever route it came by.
//!
//! [`CHAIN`] is the order steps 3 and 4 run in; a step is a [`Step`], so that a new one is a
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
}

/// Runs [`CHAIN`] on `resolved`, a request of `method`: the first refusal is the answer.
fn run_chain(
    steps: &impl Steps,
    method: Method,
    resolved: &Resolved<'_>,
    ctx: &RequestContext,
) -> Result<(), Refused> {
    for step in CHAIN {
        match step {
            Step::Pins => steps.pins(method, resolved)?,
            Step::Limits => steps.limits(method, resolved, ctx)?,
        }
    }
    Ok(())
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
}

impl Gateway {
    /// Runs the chain on `resolved`, a request of `method` from `ctx.caller`.
    pub(super) fn admit(
        &self,
        method: Method,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<(), Refused> {
        run_chain(self, method, resolved, ctx)
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
        /// target itself (the server's own name: what it resolved to, not what was sent).
        #[test]
        fn every_step_runs_for_every_kind_of_target_in_order() {
            for (method, resolved) in targets() {
                let steps = Recorded::default();
                assert!(run_chain(&steps, method, &resolved, &context()).is_ok());
                let asked = steps.asked.into_inner().unwrap();
                let expected: Vec<_> = CHAIN
                    .iter()
                    .map(|&step| (step, resolved.target.kind, resolved.target.own.clone()))
                    .collect();
                assert_eq!(asked, expected, "{method}");
            }
        }

        /// A refusal is the answer: no later step runs (a call a pin refuses spends no rate).
        #[test]
        fn a_refusing_step_ends_the_chain() {
            for refusing in CHAIN {
                for (method, resolved) in targets() {
                    let steps = Recorded {
                        refuse: Some(refusing),
                        ..Recorded::default()
                    };
                    let refused = run_chain(&steps, method, &resolved, &context());
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
