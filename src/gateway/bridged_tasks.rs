//! Tasks bridged between the generations, which do not interoperate: a server's task runs behind
//! one of mcpx's own ([`super::own_tasks`]), with mcpx speaking the server's generation for the
//! client.
//!
//! - A 2026-07-28 client that declared the Tasks extension, calling a task tool of a 2025-11-25
//!   server (its `execution.taskSupport`): `tools/call` with `task` makes the server's task, and
//!   `tasks/result`, held open, brings the server's questions (its requests tied to the task,
//!   which become rounds as any legacy server's questions do for a modern client,
//!   [`super::rounds`]) and then the call's outcome.
//! - A 2025-11-25 client that asked for a task of a server of the extension: mcpx's call declares
//!   the extension, and when the server makes a task, mcpx polls it with `tasks/get`; its
//!   `inputRequests` become the task's rounds, whose answers go back by `tasks/update`.
//!
//! Either way the client polls or waits on mcpx's task, and its `tasks/cancel` cancels the
//! server's task too; mcpx's stays cancelled whatever the server's ends as. Outcomes keep their
//! meaning in the client's generation: a tool error (`isError`) is the extension's `completed`
//! and 2025-11-25's `failed`.

use super::forwarded::forwardable;
use super::incoming::Incoming;
use super::results::Leaving;
use super::{Client, Gateway, RequestContext, Route};
use crate::access::Identity;
use crate::cancel::Cancel;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::protocol::{envelope, task, Era, Extension, Method, Revision};
use crate::sync::lock;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The shortest and longest waits between polls of an extension server's task, whatever its
/// `pollIntervalMs` says.
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(5));

/// A server's task that one of mcpx's runs.
#[derive(Debug)]
pub(super) struct Bridge {
    /// The tool, as its server knows it.
    route: Route,
    /// The generation of tasks the server runs.
    generation: Era,
    /// The server's id of the task, once it made one.
    upstream_task: OnceLock<String>,
    /// The keys of the extension server's input requests answered, until it moves on: its
    /// `tasks/get` may still show them for a while.
    answered: Mutex<BTreeSet<String>>,
}

impl Bridge {
    pub(super) fn new(route: Route, generation: Era) -> Bridge {
        Bridge {
            route,
            generation,
            upstream_task: OnceLock::new(),
            answered: Mutex::default(),
        }
    }
}

/// One round of a bridged task, as the steps of it see it: whose, which, the client's call (with
/// the round's answers), in which revision, under which request.
struct Turn<'a> {
    client: &'a Arc<Client>,
    bridge: &'a Bridge,
    params: &'a Value,
    revision: Revision,
    ctx: &'a RequestContext,
}

impl Gateway {
    /// One round of a bridged task's call, `params` as mcpx's `tools/call` for the client (with
    /// a round's answers, on a retry), until `ctx` is cancelled: the server's task is made on
    /// the first, and followed to its next question or its outcome. The server's task lives
    /// `ttl`.
    pub(super) async fn bridged_round(
        &self,
        client: &Arc<Client>,
        bridge: &Bridge,
        params: &Value,
        revision: Revision,
        ttl: Duration,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        // A round's answers are the server's task's once it has one; before, they answer
        // questions it asked while making one.
        let resuming = bridge.upstream_task.get().is_some();
        let turn = Turn {
            client,
            bridge,
            params,
            revision,
            ctx,
        };
        // The door its answer leaves by, in the catalog as it is when it leaves.
        let door = |catalog| Leaving {
            catalog,
            view: client.view,
            owner: bridge.route.owner,
            method: Method::ToolsCall,
            ctx,
        };
        if !resuming {
            let created = self.make_task(&turn, ttl).await?;
            // A round of questions before the task was made, or the server's answer without
            // one: either leaves by the door its task's result would.
            let Some(id) = task::created_id(&created, bridge.generation) else {
                return self.leaving(door(&self.catalog_of(client)), created).await;
            };
            let _ = bridge.upstream_task.set(id.to_owned());
            if ctx.cancel.is_cancelled() {
                return Err(Failure::Cancelled.into());
            }
        }
        let id = bridge.upstream_task.get().cloned().unwrap_or_default();
        let mut outcome = match bridge.generation {
            Era::Legacy => Box::pin(self.await_result(&turn, &id, resuming)).await?,
            Era::Modern => {
                let answers = params.member("inputResponses").filter(|_| resuming);
                Box::pin(self.follow(&turn, &id, answers)).await?
            }
        };
        task::drop_related_task(&mut outcome);
        self.leaving(door(&self.catalog_of(client)), outcome).await
    }

    /// `method` sent to the bridged tool's server: `forwarded` as the server sees it, `original`
    /// as what the client asked and declared, under `ctx`.
    async fn send(
        &self,
        turn: &Turn<'_>,
        method: Method,
        forwarded: Value,
        original: &Value,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let owner = turn.bridge.route.owner;
        let incoming = Incoming::new(turn.client, method, Some(original), turn.revision, ctx);
        let names = method.target(Some(original)).unwrap_or_default();
        let sent = self.forward(&incoming, owner, forwarded, names);
        Box::pin(sent).await
    }

    /// The `tools/call` that makes the server's task, in its generation's terms. It is made
    /// even if the task is cancelled meanwhile: then its id is what cancels it.
    async fn make_task(&self, turn: &Turn<'_>, ttl: Duration) -> Result<Value, ErrorObject> {
        let making = (turn.ctx).part(Cancel::new(), turn.ctx.outbound.clone(), turn.ctx.timeout);
        let mut original = turn.params.clone();
        let mut forwarded = forwardable(Some(turn.params));
        forwarded["name"] = json!(turn.bridge.route.name);
        match turn.bridge.generation {
            Era::Legacy => {
                let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
                forwarded["task"] = json!({ "ttl": ttl });
            }
            // The server decides whether the call becomes a task.
            Era::Modern => original["_meta"] = declaring_tasks(turn.params),
        }
        let method = Method::ToolsCall;
        self.send(turn, method, forwarded, &original, &making).await
    }

    /// A 2025-11-25 server's `tasks/result` for task `id`, with a round's answers when
    /// `resuming`: its next question, or the call's outcome.
    async fn await_result(
        &self,
        turn: &Turn<'_>,
        id: &str,
        resuming: bool,
    ) -> Result<Value, ErrorObject> {
        let mut awaited = json!({"taskId": id});
        // The client's `_meta` says what it can answer; its answers go with a resumed round.
        let carried: &[&str] = match resuming {
            true => &["_meta", "inputResponses", "requestState"],
            false => &["_meta"],
        };
        for key in carried {
            if let Some(value) = turn.params.member(key) {
                awaited[*key] = value.clone();
            }
        }
        let forwarded = forwardable(Some(&awaited));
        let method = Method::TasksResult;
        self.send(turn, method, forwarded, &awaited, turn.ctx).await
    }

    /// An extension server's task `id`, polled until it ends (its inlined result or error) or
    /// asks something not yet answered (a round of its `inputRequests`); `answers` to the last
    /// round go first, by `tasks/update`.
    async fn follow(
        &self,
        turn: &Turn<'_>,
        id: &str,
        answers: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        let (bridge, ctx) = (turn.bridge, turn.ctx);
        // Each request about the task declares what the call did.
        let about = |extra: Option<(&str, &Value)>| {
            let mut request = json!({"taskId": id, "_meta": declaring_tasks(turn.params)});
            if let Some((key, value)) = extra {
                request[key] = value.clone();
            }
            request
        };
        let ask = |method: Method, request: Value| async move {
            let forwarded = forwardable(Some(&request));
            self.send(turn, method, forwarded, &request, ctx).await
        };
        if let Some(answers) = answers {
            let keys = answers.as_object().into_iter().flat_map(Map::keys);
            lock(&bridge.answered).extend(keys.cloned());
            let update = about(Some(("inputResponses", answers)));
            ask(Method::TasksUpdate, update).await?;
        }
        loop {
            let got = ask(Method::TasksGet, about(None)).await?;
            let status = got
                .member("status")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match status {
                "completed" => {
                    let result = got.member("result").cloned();
                    return result.ok_or_else(|| {
                        ErrorObject::new(
                            INTERNAL_ERROR,
                            "the server's task completed without a result",
                        )
                    });
                }
                "failed" => return Err(failure_of(&got)),
                "cancelled" => {
                    return Err(ErrorObject::new(
                        INTERNAL_ERROR,
                        "the server cancelled the task",
                    ))
                }
                "input_required" => {
                    let requests = got.member("inputRequests").and_then(Value::as_object);
                    let answered = lock(&bridge.answered);
                    let open: Map<String, Value> = requests
                        .into_iter()
                        .flatten()
                        .filter(|(key, _)| !answered.contains(*key))
                        .map(|(key, request)| (key.clone(), request.clone()))
                        .collect();
                    drop(answered);
                    if !open.is_empty() {
                        return Ok(json!({"resultType": "input_required", "inputRequests": open}));
                    }
                }
                // It moved on from the questions answered: keys may be asked again.
                _ => lock(&bridge.answered).clear(),
            }
            let interval = got.member("pollIntervalMs").and_then(Value::as_u64);
            let interval = Duration::from_millis(interval.unwrap_or(1000));
            let pause = interval.clamp(POLL_BOUNDS.0, POLL_BOUNDS.1);
            let paused = async {
                crate::deadline::sleep(pause).await;
                false
            };
            let cancelled = async {
                ctx.cancel.cancelled().await;
                true
            };
            if smol::future::or(paused, cancelled).await {
                return Err(Failure::Cancelled.into());
            }
        }
    }

    /// A bridged task that ended cancelled: the server's task is cancelled too. Its word that
    /// the task has ended already is no failure, and nobody waits on the answer.
    pub(super) async fn cancel_bridged(&self, bridge: &Bridge, caller: &Identity) {
        let Some(id) = bridge.upstream_task.get() else {
            return;
        };
        let cancelled = self.cancel_upstream_task(bridge.route.owner, id, caller);
        if let Err(error) = cancelled.await {
            tracing::debug!("cancelling a bridged task upstream: {}", error.message);
        }
    }
}

/// The `_meta` of `params` declaring the Tasks extension besides what they declare.
fn declaring_tasks(params: &Value) -> Value {
    let mut meta = params.member("_meta").cloned().unwrap_or_else(|| json!({}));
    meta[envelope::CLIENT_CAPABILITIES]["extensions"][Extension::Tasks.id()] = json!({});
    meta
}

/// The error a failed extension task reports (`error`, else its `statusMessage`).
fn failure_of(got: &Value) -> ErrorObject {
    let error = got.member("error");
    let code = error.and_then(|e| e.member("code")).and_then(Value::as_i64);
    let message = error
        .and_then(|e| e.member("message"))
        .or_else(|| got.member("statusMessage"))
        .and_then(Value::as_str)
        .unwrap_or("the server's task failed");
    let mut failure = ErrorObject::new(code.unwrap_or(INTERNAL_ERROR), message);
    if let Some(data) = error.and_then(|e| e.member("data")) {
        failure = failure.with_data(data.clone());
    }
    failure
}
