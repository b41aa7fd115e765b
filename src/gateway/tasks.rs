//! Tasks passed through to the upstream that runs them, in the generation both sides speak:
//! 2025-11-25's tasks to a legacy client of a 2025-11-25 server, the Tasks extension to a
//! 2026-07-28 client of a server that has it ([`crate::protocol::task`]).
//!
//! A task's id as the client knows it is mcpx's own, sealed ([`super::task_ids`]); it is shown
//! where the client meets it again: in `tasks/*` results, and in the `related-task` `_meta` of
//! the upstream's questions and of `tasks/result`.
//!
//! A task outlives the request that created it: a client that disconnects or cancels that
//! request afterwards leaves it running; `tasks/cancel` is how it is cancelled, and is passed on.

use super::incoming::Incoming;
use super::observe::TaskOrigin;
use super::results::Leaving;
use super::task_ids::{Opened, TaskIds};
use super::{Client, CommandError, Gateway, Owner, RequestContext};
use crate::access::Identity;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::MISSING_CLIENT_CAPABILITY;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::protocol::method::TaskRequest;
use crate::protocol::{
    envelope, shape, task, Era, Extension, Extensions, Method, Notice, Revision,
};
use crate::upstream::Caller;
use crate::view::TaskView;
use serde_json::{json, Value};
use std::sync::Arc;

impl Gateway {
    /// `tasks/get`, `tasks/result`, `tasks/update` and `tasks/cancel`: checked in the order the
    /// Tasks extension gives (the extension declared on this request, then the id), sent to the
    /// upstream running the task under its own id, and answered with mcpx's.
    pub(super) async fn task_method(
        &self,
        incoming: &Incoming<'_>,
        asked: TaskRequest,
    ) -> Result<Value, ErrorObject> {
        let Incoming {
            client,
            method,
            params,
            revision,
            extensions,
            ctx,
            ..
        } = *incoming;
        if revision.era() == Era::Modern && !extensions.contains(Extension::Tasks) {
            return Err(undeclared(method.as_str()));
        }
        if !task::has_tasks(revision) {
            return Err(super::not_found(method.as_str()));
        }
        if asked == TaskRequest::List {
            // Listing would show one client the tasks of every other behind a shared upstream
            // session: mcpx does not declare `tasks.list`.
            return Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                "Method not found: tasks/list (mcpx does not declare tasks.list; poll each task by its id)",
            ));
        }
        let id = method.target(params).unwrap_or_default();
        let unknown = || ErrorObject::new(INVALID_PARAMS, format!("Unknown task: {id:?}"));
        let opened = self
            .task_ids
            .open(id, (client, &ctx.caller), revision.era(), self);
        let (upstream, own_id) = match opened.ok_or_else(unknown)? {
            Opened::Upstream { upstream, own_id } => (upstream, own_id),
            Opened::Own(number) => {
                let task = self.own_tasks.get(number, client).ok_or_else(unknown)?;
                return match revision.era() {
                    Era::Legacy => {
                        self.legacy_own_task_method(client, &task, asked, id, revision, ctx)
                            .await
                    }
                    Era::Modern => {
                        Ok(self.own_task_method(&task, asked, id, params, revision, extensions))
                    }
                };
            }
        };
        let mut forwarded = super::forwarded::forwardable(params);
        forwarded["taskId"] = json!(own_id);
        let owner = Owner::Upstream(upstream.id);
        let outcome = self.forward(incoming, owner, forwarded, id).await;
        match outcome {
            Ok(mut result) => {
                self.task_seen(upstream.id, &own_id, &mut result);
                show_id(&mut result, &own_id, id);
                // Its result (inline in `tasks/get`, or `tasks/result`'s) leaves as every
                // result of its server does.
                let door = Leaving {
                    catalog: &self.catalog_of(client),
                    view: client.view,
                    owner,
                    method,
                    ctx,
                };
                self.leaving(door, result).await
            }
            // The upstream's word for an id it does not know names its own id: the client hears
            // of the one it sent.
            Err(error) if error.code == INVALID_PARAMS => Err(ErrorObject {
                message: error.message.replace(&own_id, id),
                ..error
            }),
            Err(error) => Err(error),
        }
    }
}

impl Gateway {
    /// Every task mcpx holds an id for, its own and those passed to upstreams, oldest first.
    pub(super) fn tasks(&self) -> Vec<TaskView> {
        let mut all = self.own_tasks.views();
        all.extend(self.task_ids.passed());
        all.sort_by_key(|t| std::cmp::Reverse(t.age_ms));
        all
    }

    /// An upstream's `notifications/tasks/status`: to the client whose task it is, under the id
    /// that client knows (a task mcpx does not know of is nobody's to hear about).
    pub(super) fn task_status(&self, upstream: usize, mut params: Value) {
        let own_id = params
            .member("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(own_id) = own_id else { return };
        let Some((id, session)) = self.task_ids.owner_of(upstream, &own_id) else {
            return;
        };
        self.task_seen(upstream, &own_id, &mut params);
        params["taskId"] = json!(id);
        if let Some(client) = self.clients.get(session) {
            client.notify(crate::jsonrpc::Notification::new(
                Notice::TasksStatus,
                params,
            ));
        }
    }

    /// What `task` (a result or notification about `upstream`'s task `own_id`) says of its
    /// status, noted (and the owner's word put in it); its end audited and told.
    fn task_seen(&self, upstream: usize, own_id: &str, task: &mut Value) {
        if let Some(ended) = self.task_ids.saw(upstream, own_id, task) {
            let status = task.member("status").and_then(Value::as_str);
            self.task_ended(&ended.origin, &ended.id, status.unwrap_or_default(), None);
        }
    }

    /// Task `id` (as its client knows it) ended `status`: audited, and told to its caller as
    /// mcpx's own event.
    pub(super) fn task_ended(
        &self,
        origin: &TaskOrigin,
        id: &str,
        status: &str,
        guardrails: Option<&Value>,
    ) {
        self.observer.task(origin, status, guardrails);
        let person = origin.caller.person();
        (self.clients.own_events()).task_ended(person, id, &origin.tool, status);
    }

    /// Admin: cancels task `id` as its client's `tasks/cancel` would: mcpx's own at once, a
    /// passed one by `tasks/cancel` to its upstream.
    pub async fn cancel_task(&self, id: &str) -> Result<String, CommandError> {
        let unknown = || CommandError::NoSuchTask(id.to_owned());
        let own = self.task_ids.own_number(id);
        if let Some(number) = own {
            self.own_tasks
                .any(number)
                .ok_or_else(unknown)?
                .cancel_by_owner();
            return Ok(format!("task {} cancelled", crate::view::short_task_id(id)));
        }
        let (upstream, own_id, caller) = self.task_ids.passed_by_id(id).ok_or_else(unknown)?;
        let owner = Owner::Upstream(upstream);
        self.task_ids.cancelling_by_owner(upstream, &own_id);
        let (server, mut answer) = self
            .cancel_upstream_task(owner, &own_id, &caller)
            .await
            .map_err(|e| CommandError::Upstream(e.message))?;
        // 2025-11-25 answers the cancelled task; the extension's cancel is an ack, and the
        // task's end is seen when its client next asks, or its server tells.
        self.task_seen(upstream, &own_id, &mut answer);
        Ok(format!(
            "task {} cancelled by {server}",
            crate::view::short_task_id(id),
        ))
    }

    /// `tasks/cancel` of `owner`'s task `own_id`, made for `caller`, sent as mcpx's own request
    /// (over the caller's own instance of a per-identity server, which runs it): the server's
    /// name and its answer.
    pub(super) async fn cancel_upstream_task(
        &self,
        owner: Owner,
        own_id: &str,
        caller: &Identity,
    ) -> Result<(String, Value), ErrorObject> {
        let upstreams = self.supervisor.upstreams();
        let (server, connection) = match upstreams.of(owner).filter(|u| u.is_per_identity()) {
            Some(server) => {
                let person = caller.person();
                let Some((_, connection)) = server.instances.serving(&person) else {
                    let gone = format!(
                        "{}'s instance for {person} has stopped, and the task with it",
                        server.name
                    );
                    return Err(Failure::Refused(gone).into());
                };
                (server, connection)
            }
            None => upstreams.connection(owner)?,
        };
        let mut params = json!({"taskId": own_id});
        if server.is_modern() {
            params["_meta"][envelope::CLIENT_CAPABILITIES] =
                json!({"extensions": {Extension::Tasks.id(): {}}});
        }
        let cancel = crate::cancel::Cancel::new();
        let method = Method::TasksCancel.as_str();
        let answer = connection.request(method, Some(params), &cancel, Caller::default());
        Ok((server.name.clone(), answer.await?))
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel` of a task mcpx runs itself.
    fn own_task_method(
        &self,
        task: &super::own_tasks::OwnTask,
        asked: TaskRequest,
        id: &str,
        params: Option<&Value>,
        revision: Revision,
        extensions: Extensions,
    ) -> Value {
        match asked {
            TaskRequest::Get => shown_own(task, id, revision, extensions),
            TaskRequest::Update => {
                task.update(params.and_then(|p| p.member("inputResponses")));
                json!({})
            }
            TaskRequest::Cancel => {
                task.cancel();
                json!({})
            }
            // 2025-11-25's own, answered by `legacy_own_task_method` (and `tasks/list` above).
            TaskRequest::Result | TaskRequest::List => shown_own(task, id, revision, extensions),
        }
    }
}

impl Gateway {
    /// A listen's `taskIds`: those of mcpx's own tasks that `client` holds, each watched for a
    /// change of state, reported as `notifications/tasks` (the task as `tasks/get` shows it) on
    /// the listen's stream until it ends. A passed task's server reports its own, which mcpx
    /// does not relay: its id is left out of the acknowledgement, as the extension allows. The
    /// ids honoured, and the watchers, which end with the listen.
    pub(super) fn watch_tasks(
        &self,
        client: &Client,
        ids: &[Value],
        listen: &crate::jsonrpc::Id,
        extensions: Extensions,
        ctx: &RequestContext,
    ) -> (Vec<String>, Vec<smol::Task<()>>) {
        let mut honoured = Vec::new();
        let mut watchers = Vec::new();
        for id in ids.iter().filter_map(Value::as_str) {
            let opened = self
                .task_ids
                .open(id, (client, &ctx.caller), Era::Modern, self);
            let Some(Opened::Own(number)) = opened else {
                continue;
            };
            let Some(task) = self.own_tasks.get(number, client) else {
                continue;
            };
            honoured.push(id.to_owned());
            let (tx, listen, id) = (ctx.outbound.clone(), listen.clone(), id.to_owned());
            let revision = Revision::V2026_07_28;
            let tell = move |task: &super::own_tasks::OwnTask| {
                let shown = shown_own(task, &id, revision, extensions);
                let notification = super::client::tagged(Notice::Tasks, shown, &listen);
                let _ = tx.try_send(notification);
            };
            watchers.push(crate::runtime::spawn(task.report_changes(tell)));
        }
        (honoured, watchers)
    }
}

/// Task `id` of mcpx's as `tasks/get` shows it, its result shaped as the call's own answer
/// would have been.
fn shown_own(
    task: &super::own_tasks::OwnTask,
    id: &str,
    revision: Revision,
    extensions: Extensions,
) -> Value {
    let mut detailed = task.detailed(id);
    if let Some(result) = detailed.member_mut("result") {
        *result = shape::result(Method::ToolsCall, revision, extensions, result.take());
    }
    detailed
}

/// -32021 for a client that did not declare the Tasks extension, which `what` (a `tasks/*`
/// method, a tool run only as a task) needs.
pub(super) fn undeclared(what: &str) -> ErrorObject {
    ErrorObject::new(
        MISSING_CLIENT_CAPABILITY,
        format!(
            "{what} needs the Tasks extension: declare {} in this request's clientCapabilities",
            Extension::Tasks.id()
        ),
    )
    .with_data(json!({"requiredCapabilities": {
        "extensions": {Extension::Tasks.id(): {}}
    }}))
}

/// How one upstream's task ids are shown to a legacy client, for the questions its tasks ask
/// (which name the task in their `related-task` `_meta`).
#[derive(Debug, Clone)]
pub(super) struct ShownTasks {
    pub upstream: usize,
    pub ids: Arc<TaskIds>,
}

impl crate::upstream::ShowsTasks for ShownTasks {
    fn to_client(&self, message: &mut Value) {
        let Some(related) = task::related_task_id_mut(message) else {
            return;
        };
        let shown = related
            .as_str()
            .and_then(|own| self.ids.shown(self.upstream, own));
        if let Some(shown) = shown {
            *related = json!(shown);
        }
    }

    fn to_server(&self, message: &mut Value, own: &str) {
        if let Some(related) = task::related_task_id_mut(message) {
            *related = json!(own);
        }
    }
}

/// Shows mcpx's `id` where a `tasks/*` result names the upstream's `own_id`: the task's own
/// `taskId`, and 2025-11-25's `related-task` `_meta` on `tasks/result`.
fn show_id(result: &mut Value, own_id: &str, id: &str) {
    if let Some(task_id) = result.member_mut("taskId") {
        *task_id = json!(id);
    }
    if let Some(related) = task::related_task_id_mut(result) {
        if related.as_str() == Some(own_id) {
            *related = json!(id);
        }
    }
}
