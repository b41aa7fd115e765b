//! Questions for legacy clients: an upstream's sampling, elicitation and roots requests, carried
//! to the client as requests of mcpx's own, and the answers carried back.
//!
//! A legacy upstream asks mid-call, and the question goes out on the stream of the client request
//! it belongs to (the POST's event stream over HTTP, stdout over stdio), under an id of mcpx's.
//! A modern upstream answers with an `InputRequiredResult` instead; each of its input requests is
//! asked the same way, and the call is retried with the answers and the upstream's
//! `requestState`. How each question is put to the client is [`super::asking`]'s.

use super::asking::{ask_each, carry};
use super::rounds::UpstreamCall;
use super::{Client, RequestContext};
use crate::guardrails::{self, Policy, Report, Scope};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::protocol::task;
use serde_json::Value;
use std::sync::Arc;

/// The most rounds of input one call may take: a bound on an upstream that never stops asking.
const MAX_ROUNDS: usize = 16;

/// Runs `call` for a legacy client, carrying the upstream's questions to it.
pub(super) async fn for_legacy_client(
    client: &Arc<Client>,
    mut call: UpstreamCall,
    ctx: &RequestContext,
) -> Result<Value, ErrorObject> {
    for _ in 0..MAX_ROUNDS {
        let result = run_carrying_asks(client, &call, ctx).await?;
        if result.member("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(result);
        }
        let responses = ask_each(client, &result, ctx, call.questions.as_ref()).await?;
        let params = call.params.as_object_mut();
        if let Some(params) = params {
            params.insert("inputResponses".into(), responses);
            match result.member("requestState") {
                Some(state) => params.insert("requestState".into(), state.clone()),
                None => params.remove("requestState"),
            };
        }
    }
    Err(ErrorObject::new(
        INTERNAL_ERROR,
        format!("the upstream asked for input more than {MAX_ROUNDS} times in one call"),
    ))
}

/// A server's question as the client is to read it: what its guardrails redact masked, what
/// they find on the call's audit line; withheld (the error the server is answered) where they
/// block.
fn screened(policy: &Policy, params: &mut Value, ctx: &RequestContext) -> Result<(), ErrorObject> {
    let mut report = Report::default();
    guardrails::scan(policy, Scope::Result, params, &mut report);
    if report.is_empty() {
        return Ok(());
    }
    report.count();
    let _ = ctx.learnt.guardrails.set(report.to_json());
    match report.blocks() {
        true => Err(ErrorObject::new(
            INTERNAL_ERROR,
            format!(
                "mcpx withheld this question from its client: it holds {}",
                report.kinds()
            ),
        )),
        false => Ok(()),
    }
}

/// One upstream call, its questions carried to the client while it runs.
async fn run_carrying_asks(
    client: &Arc<Client>,
    call: &UpstreamCall,
    ctx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let (asks_tx, asks) = async_channel::unbounded();
    // A copy: a modern upstream's next round goes with these params and its answers added.
    let params = call.params.clone();
    let mut running = std::pin::pin!(call.run(params, ctx.cancel.clone(), asks_tx));
    // Dropping a task cancels it: questions still open when the call ends are withdrawn.
    let mut carried = Vec::new();
    loop {
        let next = smol::future::or(async { Ok(running.as_mut().await) }, async {
            Err(asks.recv().await)
        })
        .await;
        match next {
            Ok(reply) => return reply,
            Err(Ok(mut ask)) => {
                // A question tied to a task names it by the client's id, and its answer by the
                // server's again.
                let tied = task::related_task_id_mut(&mut ask.params)
                    .and_then(|id| id.as_str().map(str::to_owned));
                let tasks = call.tasks.clone().zip(tied);
                if let Some((tasks, _)) = &tasks {
                    tasks.to_client(&mut ask.params);
                }
                if let Err(withheld) = screened(&call.guardrails, &mut ask.params, ctx) {
                    ask.answer(Err(withheld));
                    continue;
                }
                carried.push(crate::runtime::spawn(carry(
                    Arc::clone(client),
                    ask,
                    ctx.outbound.clone(),
                    call.questions.clone(),
                    tasks,
                )))
            }
            // Only the finished call closes the channel.
            Err(Err(_)) => return running.await,
        }
    }
}
