//! mcpx's own tasks for a 2025-11-25 client that asked for one (`params.task`), in that
//! generation's terms: its `Task` (a tool error is `failed`, as 2025-11-25 has it), `tasks/result`,
//! which waits for the task's end and meanwhile asks the client the task's questions on its own
//! stream, tied to the task by `related-task` `_meta` (2025-11-25 sends them where the client
//! waits for the result), `tasks/cancel`, which answers with the cancelled task and refuses one
//! that ended already, and `notifications/tasks/status` on each change.

use super::{OwnTask, POLL_INTERVAL_MS};
use crate::failure::Failure;
use crate::gateway::{asking, Client, Gateway, RequestContext};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Notification, INTERNAL_ERROR, INVALID_PARAMS};
use crate::protocol::method::TaskRequest;
use crate::protocol::{envelope, shape, task, Extensions, Method, Notice, Revision};
use crate::sync::lock;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long the client asked its task to be kept (`params.task.ttl`, in milliseconds).
pub(super) fn requested_ttl(params: Option<&Value>) -> Option<Duration> {
    let ttl = params?.member("task")?.member("ttl")?.as_u64()?;
    Some(Duration::from_millis(ttl))
}

/// A 2025-11-25 client's `tools/call` as mcpx makes it for the client's task: without `task`
/// (the server runs none), and declaring what the client declared at `initialize`, so that the
/// server's questions become rounds of the task, asked on `tasks/result`.
pub(super) fn as_modern_call(client: &Client, params: Option<&Value>) -> Value {
    let mut call = params.cloned().unwrap_or_else(|| json!({}));
    if let Value::Object(call) = &mut call {
        call.remove("task");
    }
    call["_meta"][envelope::CLIENT_CAPABILITIES] = client.capabilities();
    call
}

/// Tells `client` of each change of its task `id` (`notifications/tasks/status`, which 2025-11-25
/// lets a receiver send), on its session stream, until the task ends or the client goes.
pub(super) fn tell_changes(client: &Arc<Client>, task: &Arc<OwnTask>, id: &str) {
    let (client, id) = (Arc::downgrade(client), id.to_owned());
    let tell = move |task: &OwnTask| {
        if let Some(client) = client.upgrade() {
            let status = Notification::new(Notice::TasksStatus, task.legacy(&id));
            client.notify(status);
        }
    };
    crate::runtime::spawn(Arc::clone(task).report_changes(tell)).detach();
}

impl OwnTask {
    /// The task as 2025-11-25 writes it (`Task`).
    pub(super) fn legacy(&self, id: &str) -> Value {
        let state = lock(&self.state);
        let tool_failed = matches!(&state.outcome, Some(Ok(result)) if result["isError"] == true);
        let status = if tool_failed { "failed" } else { state.status };
        let mut shown = json!({
            "taskId": id,
            "status": status,
            "createdAt": self.created_at,
            "lastUpdatedAt": state.updated_at,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        });
        if let Some(progress) = &state.progress {
            shown["statusMessage"] = json!(progress);
        }
        if let Some(Err(error)) = &state.outcome {
            shown["statusMessage"] = json!(error.message);
        }
        shown
    }

    /// Whether it has ended.
    fn ended(&self) -> bool {
        task::is_terminal(lock(&self.state).status)
    }
}

impl Gateway {
    /// `tasks/get`, `tasks/result` and `tasks/cancel` of a task of mcpx's that a 2025-11-25
    /// client asked for.
    pub(in crate::gateway) async fn legacy_own_task_method(
        &self,
        client: &Arc<Client>,
        task: &Arc<OwnTask>,
        asked: TaskRequest,
        id: &str,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        match asked {
            TaskRequest::Result => {
                self.legacy_task_result(client, task, id, revision, ctx)
                    .await
            }
            TaskRequest::Cancel if task.ended() => Err(ErrorObject::new(
                INVALID_PARAMS,
                format!(
                    "Cannot cancel task in terminal status: {}",
                    task.legacy(id)["status"].as_str().unwrap_or_default()
                ),
            )),
            TaskRequest::Cancel => {
                task.cancel();
                Ok(task.legacy(id))
            }
            // `tasks/update` is the extension's (a legacy client has none); `tasks/list` is
            // refused before a task is looked up.
            TaskRequest::Get | TaskRequest::List | TaskRequest::Update => Ok(task.legacy(id)),
        }
    }

    /// `tasks/result`: the task's outcome once it ends (the call's result, tied to the task),
    /// asking the client each round of questions the task waits on meanwhile.
    async fn legacy_task_result(
        &self,
        client: &Arc<Client>,
        task: &Arc<OwnTask>,
        id: &str,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        loop {
            let changed = task.changed.listen();
            let asking = task.asking.lock().await;
            let (status, outcome, questions) = {
                let state = lock(&task.state);
                let questions = state.round.as_ref().map(super::Round::unanswered);
                (state.status, state.outcome.clone(), questions)
            };
            match outcome {
                Some(Ok(result)) => {
                    let extensions = Extensions::default();
                    let mut result = shape::result(Method::ToolsCall, revision, extensions, result);
                    result["_meta"][task::RELATED_TASK] = json!({"taskId": id});
                    return Ok(result);
                }
                Some(Err(error)) => return Err(error),
                None if status == "cancelled" => {
                    return Err(ErrorObject::new(INTERNAL_ERROR, "the task was cancelled"));
                }
                None => {}
            }
            if let Some(questions) = questions.filter(|q| !q.is_empty()) {
                let answers = self.ask_for_task(client, task, id, questions, ctx).await?;
                task.update(Some(&answers));
                continue;
            }
            drop(asking);
            let cancelled = async {
                ctx.cancel.cancelled().await;
                true
            };
            let changed = async {
                changed.await;
                false
            };
            if smol::future::or(changed, cancelled).await {
                return Err(Failure::Cancelled.into());
            }
        }
    }

    /// Asks the client a round's questions on its `tasks/result` stream, each tied to task `id`;
    /// the answers by the keys the task shows.
    async fn ask_for_task(
        &self,
        client: &Arc<Client>,
        task: &OwnTask,
        id: &str,
        questions: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let tied = questions.into_iter().map(|(key, mut question)| {
            question["params"]["_meta"][task::RELATED_TASK] = json!({"taskId": id});
            (key, question)
        });
        let round = json!({"inputRequests": Value::Object(tied.collect())});
        let recorded = self.observer.audit().map(|log| {
            let origin = &task.origin;
            crate::audit::Questions::new(log, client.session, &origin.caller, &origin.server)
        });
        let mut answers = asking::ask_each(client, &round, ctx, recorded.as_ref()).await?;
        // Tied to mcpx's task, which the server does not know.
        let each = answers
            .as_object_mut()
            .into_iter()
            .flat_map(|a| a.values_mut());
        each.for_each(task::drop_related_task);
        Ok(answers)
    }
}
