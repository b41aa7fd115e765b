//! A 2025-11-25 server's tasks for a 2026-07-28 client. The two generations do not interoperate,
//! so a task tool of such a server (its `execution.taskSupport`), called by a client that
//! declared the Tasks extension, runs as the server's task behind one of mcpx's own
//! ([`super::own_tasks`]), with mcpx speaking 2025-11-25 to the server for the client.
//!
//! `tools/call` with `task` makes the server's task; `tasks/result`, held open, brings the
//! server's questions (its requests tied to the task, which become rounds as any legacy server's
//! questions do for a modern client, [`super::rounds`]) and then the call's outcome. The client
//! polls mcpx's task with `tasks/get`, answers its `inputRequests` with `tasks/update`, and its
//! `tasks/cancel` cancels the server's task too. Outcomes keep their meaning: a tool error
//! (`isError`, which 2025-11-25 calls `failed`) is the extension's `completed` with that result.

use super::forwarded::forwardable;
use super::{Client, Gateway, RequestContext, Route};
use crate::cancel::Cancel;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::ErrorObject;
use crate::protocol::{task, Method, Revision};
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A 2025-11-25 server's task that one of mcpx's runs.
#[derive(Debug)]
pub(super) struct Bridge {
    /// The tool, as its server knows it.
    route: Route,
    /// The server's id of the task, once it made one.
    upstream_task: OnceLock<String>,
}

impl Bridge {
    pub(super) fn new(route: Route) -> Bridge {
        Bridge {
            route,
            upstream_task: OnceLock::new(),
        }
    }
}

impl Gateway {
    /// One round of a bridged task's call, `params` as the client's `tools/call` (with a round's
    /// answers, on a retry): the server's task is made on the first, and `tasks/result` waited on
    /// for its next question or its outcome, until `ctx` is cancelled. The server's task lives
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
        let owner = bridge.route.owner;
        // A round's answers are the server's `tasks/result`'s once it has a task; before, they
        // answer questions it asked while making one.
        let resuming = bridge.upstream_task.get().is_some();
        if !resuming {
            // Made even if the task is cancelled meanwhile: then its id is what cancels it.
            let making = RequestContext {
                cancel: Cancel::new(),
                outbound: ctx.outbound.clone(),
                progress_seen: Arc::clone(&ctx.progress_seen),
                timeout: ctx.timeout,
            };
            let mut forwarded = forwardable(Some(params));
            forwarded["name"] = json!(bridge.route.name);
            forwarded["task"] = json!({"ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)});
            let created = self
                .forward(
                    client,
                    owner,
                    Method::ToolsCall,
                    forwarded,
                    Some(params),
                    revision,
                    &making,
                )
                .await?;
            let id = created.member("task").and_then(|t| t.member("taskId"));
            // A round of questions before the task was made, or the server's answer without one.
            let Some(id) = id.and_then(Value::as_str) else {
                return Ok(created);
            };
            let _ = bridge.upstream_task.set(id.to_owned());
            if ctx.cancel.is_cancelled() {
                return Err(Failure::Cancelled.into());
            }
        }
        let id = bridge.upstream_task.get().cloned().unwrap_or_default();
        let mut awaited = json!({"taskId": id});
        // The client's `_meta` says what it can answer; its answers go with a resumed round.
        let carried: &[&str] = match resuming {
            true => &["_meta", "inputResponses", "requestState"],
            false => &["_meta"],
        };
        for key in carried {
            if let Some(value) = params.member(key) {
                awaited[*key] = value.clone();
            }
        }
        let forwarded = forwardable(Some(&awaited));
        let method = Method::TasksResult;
        let mut outcome = self
            .forward(
                client,
                owner,
                method,
                forwarded,
                Some(&awaited),
                revision,
                ctx,
            )
            .await?;
        task::drop_related_task(&mut outcome);
        Ok(outcome)
    }

    /// A bridged task that ended cancelled: the server's task is cancelled too. Its word that
    /// the task has ended already is no failure, and nobody waits on the answer.
    pub(super) async fn cancel_bridged(&self, bridge: &Bridge) {
        let Some(id) = bridge.upstream_task.get() else {
            return;
        };
        if let Err(error) = self.cancel_upstream_task(bridge.route.owner, id).await {
            tracing::debug!("cancelling a bridged task upstream: {}", error.message);
        }
    }
}
