//! Questions put to a legacy client, as requests of mcpx's own on the stream of the client
//! request they belong to: an upstream's one at a time, as it asks them, or a round of them at
//! once (a modern upstream's `InputRequiredResult`, a task's round). A question the client did
//! not declare the capability for is not asked: the answer is an error at once.

use super::{Client, RequestContext};
use crate::audit::Questions;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, METHOD_NOT_FOUND};
use crate::outbox;
use crate::protocol::method::Method;
use crate::upstream::asks::Ask;
use crate::upstream::ShowsTasks;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Asks the client one question and hands its answer to the upstream; `questions` records it.
/// A question `tied` to a server's task has its answer tied to it by the server's own id.
pub(super) async fn carry(
    client: Arc<Client>,
    ask: Ask,
    outbound: outbox::Sender,
    questions: Option<Questions>,
    tied: Option<(Arc<dyn ShowsTasks>, String)>,
) {
    let started = std::time::Instant::now();
    let outcome = if ask.allowed_by(&client.capabilities()) {
        client
            .request(ask.question.as_str(), ask.params.clone(), &outbound)
            .await
    } else {
        Err(ErrorObject::new(
            METHOD_NOT_FOUND,
            format!(
                "the client did not declare the capability {} needs",
                ask.question
            ),
        )
        .with_data(json!({ "requiredCapabilities": ask.required_capability() })))
    };
    if let Some(questions) = questions {
        let ended = crate::failure::Outcome::of(Some(&outcome));
        questions.record(ask.question.as_str(), &ended.to_string(), started.elapsed());
    }
    let mut outcome = outcome;
    if let (Ok(answer), Some((tasks, own))) = (&mut outcome, &tied) {
        tasks.to_server(answer, own);
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
        let Some(question) = Method::parse(name).and_then(Method::question) else {
            return Err(ErrorObject::new(
                INTERNAL_ERROR,
                format!("the upstream asked for input by {name:?}, which is no client method"),
            ));
        };
        let params = request
            .member("params")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let (ask, answer) = Ask::new(question, params);
        let task = crate::runtime::spawn(carry(
            Arc::clone(client),
            ask,
            ctx.outbound.clone(),
            questions.cloned(),
            None,
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
