//! Promotion: a `tools/call` that may become a task of mcpx's runs as a call until it ends,
//! asks, or outlives `promoteAfter`; then it is a task, whose call runs on in the background,
//! round after round of questions, until its outcome or its TTL.

use super::first_round::{report, FirstRound, Unpromoted};
use super::{legacy, Admitted, OwnTask};
use crate::gateway::bridged_tasks::Bridge;
use crate::gateway::incoming::Incoming;
use crate::gateway::target::Target;
use crate::gateway::{Client, Gateway, RequestContext};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::outbox;
use crate::protocol::{Era, Method, Revision};
use crate::sync::lock;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a call becomes a task of mcpx's, the server it goes to, and the server's own task it
/// runs, if bridged.
pub(in crate::gateway) struct Promotion {
    pub after: Duration,
    pub server: String,
    pub bridged: Option<Bridge>,
    /// Whether its call waits for a person's approval first (`[approvals]`): as the task's, so
    /// the task is made at once and shows what it waits for.
    pub approval: bool,
}

impl Promotion {
    /// This promotion, its call waiting for approval first where `approval` says so.
    pub(in crate::gateway) fn approved_first(self, approval: bool) -> Promotion {
        match approval {
            true => Promotion {
                after: Duration::ZERO,
                approval,
                ..self
            },
            false => self,
        }
    }
}

/// Whether a call's result is a round of questions rather than its end.
fn asks(result: &Result<Value, ErrorObject>) -> bool {
    let kind = result.as_ref().ok().and_then(|r| r.member("resultType"));
    kind.and_then(Value::as_str) == Some("input_required")
}

impl Gateway {
    /// A `tools/call` that may become a task of mcpx's: answered as it is if it ends (or asks)
    /// within `promote_after`, else a created task whose call runs on in the background.
    pub(in crate::gateway) async fn call_promoting(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
        params: Option<&Value>,
        promotion: Promotion,
    ) -> Result<Value, ErrorObject> {
        let Incoming {
            client,
            revision,
            ctx,
            ..
        } = *incoming;
        let Promotion {
            after: promote_after,
            server,
            bridged,
            approval,
        } = promotion;
        let Some(gateway) = self.me.upgrade() else {
            return Err(ErrorObject::new(INTERNAL_ERROR, "mcpx is stopping"));
        };
        // A 2025-11-25 client asked for this task, and may ask it to end sooner than mcpx would.
        let legacy = revision.era() == Era::Legacy;
        let ttl = self.own_tasks.settings.ttl;
        let ttl = match legacy {
            true => legacy::requested_ttl(params).map_or(ttl, |asked| asked.min(ttl)),
            false => ttl,
        };
        let Admitted {
            number,
            task,
            answers,
        } = self
            .own_tasks
            .admit((client, &ctx.caller), target, &server, bridged, ttl)?;
        let (params, revision) = match legacy {
            true => (
                legacy::as_modern_call(client, params),
                Revision::V2026_07_28,
            ),
            false => (params.cloned().unwrap_or_else(|| json!({})), revision),
        };
        // Its call reports to this request until it is a task, then where the task's reports go.
        let (reports, reported) = outbox::bounded(outbox::CAPACITY);
        let session = legacy.then(|| client.session_stream());
        let relayed = report(
            reported,
            Arc::downgrade(&task),
            ctx.outbound.clone(),
            session,
        );
        crate::runtime::spawn(relayed).detach();
        let ctx = &ctx.part(ctx.cancel.clone(), reports.clone(), ctx.timeout);
        // In a task of its own, so that it can outlive this request; until it is promoted, this
        // request's end (a cancellation) ends it, and its progress goes to this request.
        let round = Arc::clone(&gateway).round(
            client,
            target,
            &task,
            (params.clone(), approval),
            revision,
            ctx,
        );
        let mut first = Unpromoted {
            gateway: Arc::clone(&gateway),
            number,
            task: Arc::clone(&task),
            round: Some(crate::runtime::spawn(round)),
            promoted: false,
        };
        // A 2025-11-25 client that asked for a task gets one, however soon the call ends.
        let mut asked = None;
        if !legacy {
            let promoted = async {
                crate::deadline::sleep(promote_after).await;
                None
            };
            let finished = async { Some(first.ended().await) };
            match smol::future::or(finished, promoted).await {
                // A bridged server's question is its task's already: a retry could not resume it.
                Some(outcome) if task.bridge.is_some() && asks(&outcome) => asked = Some(outcome),
                // Never shown: the client gets the call's own answer.
                Some(outcome) => return outcome,
                None => {}
            }
        }
        let id = self.task_ids.seal_own(number, client, &ctx.caller, ttl)?;
        let first = first.promote(asked);
        let _ = task.id.set(id.clone());
        self.observer.task(&task.origin, "created", None);
        if legacy {
            legacy::tell_changes(client, &task, &id);
        }
        let created = match legacy {
            true => json!({"task": task.legacy(&id)}),
            false => {
                let mut created = task.detailed(&id);
                created["resultType"] = json!("task");
                created
            }
        };
        let (client, driven) = (Arc::clone(client), Arc::clone(&gateway));
        // Its later rounds run when this request has ended; what they find is the task's end.
        let background = ctx.part(task.cancel.clone(), reports, None);
        let target = target.clone();
        crate::runtime::spawn(async move {
            let expiry = async {
                smol::Timer::at(task.expires).await;
                Err(ErrorObject::new(
                    INTERNAL_ERROR,
                    "the task outlived its TTL (tasks.ttl)",
                ))
            };
            let drive = driven.drive(
                (&client, &target),
                &task,
                (first, answers),
                (params, &background),
                revision,
            );
            let outcome = smol::future::or(drive, expiry).await;
            task.cancel.cancel();
            gateway.own_tasks.finish(&task, outcome);
            let ended = lock(&task.state).status;
            if let Some(bridge) = task.bridge.as_ref().filter(|_| ended == "cancelled") {
                gateway.cancel_bridged(bridge, &task.origin.caller).await;
            }
            let id = task.id.get().map_or("", String::as_str);
            gateway.task_ended(&task.origin, id, ended, background.learnt.guardrails.get());
        })
        .detach();
        Ok(created)
    }

    /// One round of a task's call, under the task's cancellation; the first waits for a
    /// person's approval before it calls, where `approval` says so, the task saying so
    /// meanwhile (its `statusMessage`).
    fn round(
        self: Arc<Self>,
        client: &Arc<Client>,
        target: &Target,
        task: &Arc<OwnTask>,
        (params, approval): (Value, bool),
        revision: Revision,
        ctx: &RequestContext,
    ) -> impl std::future::Future<Output = Result<Value, ErrorObject>> + Send + 'static {
        let told = Arc::clone(task);
        let client = Arc::clone(client);
        let target = target.clone();
        let bridge = task.bridge.clone();
        let lives = task.expires.saturating_duration_since(Instant::now());
        // The call may take as long as the task lives, not the server's `timeout`.
        let context = ctx.part(task.cancel.clone(), ctx.outbound.clone(), Some(lives));
        async move {
            if approval {
                let tell = |said: &str| told.says(said);
                let approved = self.approved(&target, &params, &context, &tell);
                if let Err(refused) = Box::pin(approved).await {
                    return refused;
                }
            }
            if let Some(bridge) = &bridge {
                // Minds the task's cancellation itself: the server's task must be made to be
                // cancelled.
                let round = self.bridged_round(&client, bridge, &params, revision, lives, &context);
                return Box::pin(round).await;
            }
            let method = Method::ToolsCall;
            let incoming = Incoming::new(&client, method, Some(&params), revision, &context);
            let call = self.call_named(&incoming, &target, Some(&params));
            let cancelled = || ErrorObject::new(INTERNAL_ERROR, "the task was cancelled");
            context
                .cancel
                .run(Box::pin(call))
                .await
                .unwrap_or_else(|| Err(cancelled()))
        }
    }

    /// A promoted task's call to its end: each round of questions it asks becomes the task's
    /// `input_required`, and the call is retried with the answers `tasks/update` gives.
    async fn drive(
        self: &Arc<Self>,
        (client, target): (&Arc<Client>, &Target),
        task: &Arc<OwnTask>,
        (first, answers): (FirstRound, async_channel::Receiver<Map<String, Value>>),
        (params, background): (Value, &RequestContext),
        revision: Revision,
    ) -> Result<Value, ErrorObject> {
        let mut outcome = first.await;
        while asks(&outcome) {
            let questions = outcome.unwrap_or_default();
            task.ask(&questions);
            let answered = smol::future::or(async { answers.recv().await.ok() }, async {
                task.cancel.cancelled().await;
                None
            })
            .await;
            let Some(answered) = answered else {
                return Err(ErrorObject::new(INTERNAL_ERROR, "the task was cancelled"));
            };
            let mut retry = params.clone();
            retry["inputResponses"] = Value::Object(answered);
            if let Some(state) = questions.member("requestState") {
                retry["requestState"] = state.clone();
            }
            let round =
                Arc::clone(self).round(client, target, task, (retry, false), revision, background);
            outcome = round.await;
        }
        outcome
    }
}
