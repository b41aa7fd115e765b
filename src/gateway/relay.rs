//! Questions for legacy clients: an upstream's sampling, elicitation and roots requests, carried
//! to the client as requests of mcpx's own, and the answers carried back.
//!
//! A legacy upstream asks mid-call, and the question goes out on the stream of the client request
//! it belongs to (the POST's event stream over HTTP, stdout over stdio), under an id of mcpx's.
//! A modern upstream answers with an `InputRequiredResult` instead; each of its input requests is
//! asked the same way, and the call is retried with the answers and the upstream's
//! `requestState`. A client that did not declare what a question needs is not asked: the
//! upstream gets an error at once.

use super::rounds::UpstreamCall;
use super::{Client, RequestContext};
use crate::audit::Questions;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, METHOD_NOT_FOUND};
use crate::outbox;
use crate::protocol::method::{Method, Side};
use crate::upstream::asks::Ask;
use serde_json::{json, Map, Value};
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
                if let Some(tasks) = &call.tasks {
                    tasks.in_related(&mut ask.params);
                }
                carried.push(crate::runtime::spawn(carry(
                    Arc::clone(client),
                    ask,
                    ctx.outbound.clone(),
                    call.questions.clone(),
                )))
            }
            // Only the finished call closes the channel.
            Err(Err(_)) => return running.await,
        }
    }
}

/// Asks the client one question and hands its answer to the upstream; `questions` records it.
async fn carry(
    client: Arc<Client>,
    ask: Ask,
    outbound: outbox::Sender,
    questions: Option<Questions>,
) {
    let started = std::time::Instant::now();
    let outcome = if ask.allowed_by(&client.capabilities()) {
        client
            .request(ask.method.as_str(), ask.params.clone(), &outbound)
            .await
    } else {
        Err(ErrorObject::new(
            METHOD_NOT_FOUND,
            format!(
                "the client did not declare the capability {} needs",
                ask.method
            ),
        )
        .with_data(json!({ "requiredCapabilities": ask.required_capability() })))
    };
    if let Some(questions) = questions {
        let ended = crate::failure::Outcome::of(Some(&outcome));
        questions.record(ask.method.as_str(), &ended.to_string(), started.elapsed());
    }
    ask.answer(outcome);
}

/// Asks the client every input request of a modern upstream's `InputRequiredResult` at once;
/// the answers by key, or the first error.
pub(super) async fn ask_each(
    client: &Arc<Client>,
    result: &Value,
    ctx: &RequestContext,
    questions: Option<&Questions>,
) -> Result<Value, ErrorObject> {
    let requests = result
        .member("inputRequests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut waiting = Vec::new();
    for (key, request) in requests {
        let name = request["method"].as_str().unwrap_or_default();
        let Some(method) = Method::parse(name).filter(|m| m.sender() == Side::Server) else {
            return Err(ErrorObject::new(
                INTERNAL_ERROR,
                format!("the upstream asked for input by {name:?}, which is no client method"),
            ));
        };
        let params = request
            .member("params")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let (ask, answer) = Ask::new(method, params);
        let task = crate::runtime::spawn(carry(
            Arc::clone(client),
            ask,
            ctx.outbound.clone(),
            questions.cloned(),
        ));
        waiting.push((key, answer, task));
    }
    let mut responses = Map::new();
    for (key, answer, _task) in waiting {
        let response = answer
            .recv()
            .await
            .map_err(|_| ErrorObject::new(INTERNAL_ERROR, "the question was withdrawn"))??;
        responses.insert(key, response);
    }
    Ok(Value::Object(responses))
}
