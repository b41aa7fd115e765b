//! Tasks passed through to the upstream that runs them, in the generation both sides speak:
//! 2025-11-25's tasks to a legacy client of a 2025-11-25 server, the Tasks extension to a
//! 2026-07-28 client of a server that has it ([`crate::protocol::task`]).
//!
//! A task's id as the client knows it is mcpx's own, sealed ([`TaskIds`]): it names the upstream
//! and that upstream's id, the start of a stdio server (a restarted child knows none of its
//! predecessor's tasks), the legacy client it belongs to, and when it expires. Ids of two
//! upstreams never collide, an upstream's own id never reaches the client, and a forged, foreign
//! or expired id is unknown (-32602) exactly as an id nobody made. The id is shown where the
//! client meets it again: in `tasks/*` results, and in the `related-task` `_meta` of the
//! upstream's questions and of `tasks/result`.
//!
//! A task outlives the request that created it: a client that disconnects or cancels that
//! request afterwards leaves it running; `tasks/cancel` is how it is cancelled, and is passed on.

use super::incoming::Incoming;
use super::observe::TaskOrigin;
use super::upstreams::Upstream;
use super::{Client, CommandError, Gateway, Owner, RequestContext};
use crate::access::Identity;
use crate::cluster::{now_ms, ClusterKeys, SealingKeys};
use crate::json::Member;
use crate::jsonrpc::MISSING_CLIENT_CAPABILITY;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::protocol::method::TaskRequest;
use crate::protocol::{
    envelope, shape, task, Era, Extension, Extensions, Method, Notice, Revision,
};
use crate::sync::lock;
use crate::upstream::Caller;
use crate::view::TaskView;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What every id of mcpx's tasks starts with.
const PREFIX: &str = "mcpxt1.";

/// How long an id is honoured when its upstream set no TTL (unlimited, to it).
const LONGEST_MS: u64 = 24 * 60 * 60 * 1000;

/// Past its TTL, how long an id is still passed on: the upstream decides when it forgets.
const GRACE_MS: u64 = 60 * 1000;

/// The most ids shown again (in `related-task` `_meta`) that are remembered; the oldest go
/// first when it is reached.
const MOST_REMEMBERED: usize = 10_000;

/// What a task id of mcpx's holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sealed {
    /// The upstream, by its configured name (the same on every replica).
    s: String,
    /// The upstream's own id of the task.
    t: String,
    /// The start of the stdio server that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    g: Option<u64>,
    /// The legacy client it belongs to (a session of this process); a modern client has none,
    /// unless the task is mcpx's own (then its door's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<u64>,
    /// A task mcpx runs itself ([`super::own_tasks`]), by number: no upstream holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<u64>,
    /// Whose it is ([`Identity::owner_key`]): another caller presenting it gets what an unknown
    /// id gets.
    #[serde(default)]
    o: String,
    /// When it expires, in milliseconds since the Unix epoch.
    e: u64,
    /// The replica that holds it, when only that one can serve it (mcpx's own tasks, a stdio
    /// server's, a legacy server's, bound to mcpx's session with it), and where it is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    h: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<String>,
}

/// A task id, opened: the upstream running it and that upstream's own id, or a task of mcpx's.
pub(super) enum Opened {
    Upstream {
        upstream: Arc<Upstream>,
        own_id: String,
    },
    Own(u64),
}

/// A task passed to its upstream, as mcpx last saw it: for the `related-task` `_meta` of its
/// questions, and for the live state.
#[derive(Debug, Clone)]
pub(super) struct Passed {
    id: String,
    expires_ms: u64,
    pub origin: TaskOrigin,
    status: String,
}

/// Seals task ids and remembers, while they live, how each upstream's id is shown.
#[derive(Debug)]
pub(super) struct TaskIds {
    /// `None` only when the system's random source failed at start: tasks are then refused.
    keys: Option<SealingKeys>,
    /// By upstream and its own id.
    shown: Mutex<HashMap<(usize, String), Passed>>,
    /// This replica, as the ids it seals name it.
    holder: String,
    /// Where the other replicas reach it (`[cluster]`).
    at: std::sync::OnceLock<String>,
}

impl TaskIds {
    /// Ids every replica opens when `cluster` is given (the cluster key), else this process's.
    pub(super) fn new(cluster: Option<&ClusterKeys>) -> TaskIds {
        let keys = match cluster {
            Some(keys) => Some(SealingKeys::derived(keys, b"mcpx task v1")),
            None => SealingKeys::random()
                .inspect_err(|e| tracing::error!("task ids cannot be sealed: {e}"))
                .ok(),
        };
        let mut holder = [0u8; 8];
        let _ = getrandom::fill(&mut holder);
        TaskIds {
            keys,
            shown: Mutex::default(),
            holder: hex::encode(holder),
            at: std::sync::OnceLock::new(),
        }
    }

    /// Where the other replicas reach this one: the ids it seals for tasks only it can serve
    /// say so, and a request for one that lands elsewhere is forwarded here.
    pub(super) fn reached_at(&self, address: String) {
        let _ = self.at.set(address);
    }

    /// This replica as a task's home.
    fn home(&self) -> (Option<String>, Option<String>) {
        (Some(self.holder.clone()), self.at.get().cloned())
    }

    /// The replica a request about a task goes to (`params.taskId` names one that another
    /// replica holds), if not this one.
    pub(super) fn held_elsewhere(&self, params: Option<&Value>) -> Option<String> {
        let id = params?.member("taskId")?.as_str()?;
        let sealed = self.unseal(id)?;
        (sealed.h.as_deref().is_some_and(|h| h != self.holder)).then_some(sealed.a)?
    }

    fn unseal(&self, id: &str) -> Option<Sealed> {
        let plain = self.keys.as_ref()?.open(PREFIX, id)?;
        serde_json::from_slice(&plain).ok()
    }

    /// Puts mcpx's id in place of the upstream's in a created task's result of `era`; the task,
    /// as mcpx now knows it.
    pub(super) fn seal_created(
        &self,
        result: &mut Value,
        era: Era,
        upstream: &Upstream,
        client: &Client,
        caller: &Identity,
        tool: &str,
    ) -> Result<Passed, ErrorObject> {
        let Some(task) = task::created_task_mut(result, era) else {
            return Err(ErrorObject::new(
                INTERNAL_ERROR,
                "the upstream's task has no task",
            ));
        };
        let own_id = task.member("taskId").and_then(Value::as_str);
        let own_id = own_id.ok_or_else(|| {
            ErrorObject::new(INTERNAL_ERROR, "the upstream created a task with no taskId")
        })?;
        let ttl = task::ttl_ms(task, era)
            .unwrap_or(LONGEST_MS)
            .min(LONGEST_MS);
        let stdio = upstream.config.url.is_none();
        // Only this replica's child, or its session with a legacy server, knows the task.
        let (h, a) = match stdio || era == Era::Legacy {
            true => self.home(),
            false => (None, None),
        };
        let sealed = Sealed {
            h,
            a,
            s: upstream.name.clone(),
            t: own_id.to_owned(),
            g: stdio.then(|| upstream.link.generation()),
            c: (era == Era::Legacy).then_some(client.session),
            l: None,
            o: caller.owner_key(),
            e: now_ms().saturating_add(ttl).saturating_add(GRACE_MS),
        };
        let id = self.seal(&sealed)?;
        let status = task.member("status").and_then(Value::as_str);
        let passed = Passed {
            id: id.clone(),
            expires_ms: sealed.e,
            origin: TaskOrigin::new(client.session, tool, &upstream.name),
            status: status.unwrap_or("working").to_owned(),
        };
        let created = passed.clone();
        self.remember((upstream.id, sealed.t), passed);
        task["taskId"] = json!(id);
        Ok(created)
    }

    /// The id of mcpx's own task `number`, which `caller` holds through `client` for `ttl`.
    pub(super) fn seal_own(
        &self,
        number: u64,
        client: &Client,
        caller: &Identity,
        ttl: std::time::Duration,
    ) -> Result<String, ErrorObject> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let (h, a) = self.home();
        self.seal(&Sealed {
            h,
            a,
            s: String::new(),
            t: String::new(),
            g: None,
            c: Some(client.session),
            l: Some(number),
            o: caller.owner_key(),
            e: now_ms().saturating_add(ttl),
        })
    }

    fn seal(&self, sealed: &Sealed) -> Result<String, ErrorObject> {
        let keys = self.keys.as_ref().ok_or_else(|| {
            ErrorObject::new(INTERNAL_ERROR, "mcpx cannot seal task ids on this system")
        })?;
        let plain = serde_json::to_vec(sealed).unwrap_or_default();
        keys.seal(PREFIX, &plain)
            .map_err(|e| ErrorObject::new(INTERNAL_ERROR, format!("sealing a task id: {e}")))
    }

    fn remember(&self, key: (usize, String), passed: Passed) {
        let mut shown = lock(&self.shown);
        let now = now_ms();
        shown.retain(|_, p| p.expires_ms > now);
        if shown.len() >= MOST_REMEMBERED {
            let oldest = shown
                .iter()
                .min_by_key(|(_, p)| p.expires_ms)
                .map(|(k, _)| k.clone());
            oldest.map(|key| shown.remove(&key));
        }
        shown.insert(key, passed);
    }

    /// The id `client` knows for the task `own_id` of `upstream`, while it lives.
    pub(super) fn shown(&self, upstream: usize, own_id: &str) -> Option<String> {
        let shown = lock(&self.shown);
        let passed = shown.get(&(upstream, own_id.to_owned()))?;
        (passed.expires_ms > now_ms()).then(|| passed.id.clone())
    }

    /// Notes a passed task's status, as a result about it says; the task, when that status is
    /// its end, seen for the first time.
    fn saw(&self, upstream: usize, own_id: &str, status: &str) -> Option<Passed> {
        let mut shown = lock(&self.shown);
        let passed = shown.get_mut(&(upstream, own_id.to_owned()))?;
        let was = std::mem::replace(&mut passed.status, status.to_owned());
        (was != status && task::is_terminal(status)).then(|| passed.clone())
    }

    /// The passed tasks that live, for the live state.
    pub(super) fn passed(&self) -> Vec<TaskView> {
        let now = now_ms();
        let shown = lock(&self.shown);
        let live = shown.values().filter(|p| p.expires_ms > now);
        live.map(|p| p.origin.view(&p.id, "passed", &p.status))
            .collect()
    }

    /// The id and the session of a live passed task of `upstream`.
    fn owner_of(&self, upstream: usize, own_id: &str) -> Option<(String, u64)> {
        let shown = lock(&self.shown);
        let passed = shown.get(&(upstream, own_id.to_owned()))?;
        (passed.expires_ms > now_ms()).then(|| (passed.id.clone(), passed.origin.session))
    }

    /// A passed task by the id its client knows: its upstream and that upstream's own id.
    fn passed_by_id(&self, id: &str) -> Option<(usize, String)> {
        let shown = lock(&self.shown);
        shown
            .iter()
            .find(|(_, p)| p.id == id)
            .map(|(k, _)| k.clone())
    }

    /// What `id` names, if mcpx sealed it for `caller` through `client`, it has not expired,
    /// and the upstream that runs it still serves the start it was created in.
    fn open(
        &self,
        id: &str,
        (client, caller): (&Client, &Identity),
        era: Era,
        gateway: &Gateway,
    ) -> Option<Opened> {
        let sealed = self.unseal(id)?;
        let elsewhere = sealed.h.as_deref().is_some_and(|h| h != self.holder);
        if sealed.e <= now_ms() || elsewhere || sealed.o != caller.owner_key() {
            return None;
        }
        if let Some(number) = sealed.l {
            return (sealed.c == Some(client.session)).then_some(Opened::Own(number));
        }
        let owner = (era == Era::Legacy).then_some(client.session);
        if sealed.c != owner {
            return None;
        }
        let upstream = gateway.supervisor.upstreams().by_name(&sealed.s)?;
        let profiles = gateway.catalogs.profiles();
        let same_start = sealed.g.is_none_or(|g| upstream.link.generation() == g);
        (same_start && profiles.sees_server(client.view, &upstream.name)).then(|| {
            Opened::Upstream {
                upstream,
                own_id: sealed.t,
            }
        })
    }
}

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
                if let Some(status) = result.member("status").and_then(Value::as_str) {
                    if let Some(ended) = self.task_ids.saw(upstream.id, &own_id, status) {
                        self.observer.task(&ended.origin, status);
                    }
                }
                show_id(&mut result, &own_id, id);
                // Its result (inline in `tasks/get`, or `tasks/result`'s) leaves as every
                // result of its server does.
                Ok(super::results::leaving(
                    &self.catalog_of(client),
                    owner,
                    result,
                ))
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
        if let Some(status) = params.member("status").and_then(Value::as_str) {
            if let Some(ended) = self.task_ids.saw(upstream, &own_id, status) {
                self.observer.task(&ended.origin, status);
            }
        }
        params["taskId"] = json!(id);
        if let Some(client) = self.clients.get(session) {
            client.notify(crate::jsonrpc::Notification::new(
                Notice::TasksStatus,
                params,
            ));
        }
    }

    /// Admin: cancels task `id` as its client's `tasks/cancel` would: mcpx's own at once, a
    /// passed one by `tasks/cancel` to its upstream.
    pub async fn cancel_task(&self, id: &str) -> Result<String, CommandError> {
        let unknown = || CommandError::NoSuchTask(id.to_owned());
        let own = self.task_ids.unseal(id).and_then(|sealed| sealed.l);
        if let Some(number) = own {
            self.own_tasks.any(number).ok_or_else(unknown)?.cancel();
            return Ok(format!("task {} cancelled", crate::view::short_task_id(id)));
        }
        let (upstream, own_id) = self.task_ids.passed_by_id(id).ok_or_else(unknown)?;
        let owner = Owner::Upstream(upstream);
        let (server, answer) = self
            .cancel_upstream_task(owner, &own_id)
            .await
            .map_err(|e| CommandError::Upstream(e.message))?;
        // 2025-11-25 answers the cancelled task; the extension's cancel is an ack.
        let status = answer.member("status").and_then(Value::as_str);
        let status = status.unwrap_or("cancel asked");
        if let Some(ended) = self.task_ids.saw(upstream, &own_id, status) {
            self.observer.task(&ended.origin, status);
        }
        Ok(format!(
            "task {} cancelled by {server}",
            crate::view::short_task_id(id),
        ))
    }

    /// `tasks/cancel` of `owner`'s task `own_id`, sent as mcpx's own request: the server's name
    /// and its answer.
    pub(super) async fn cancel_upstream_task(
        &self,
        owner: Owner,
        own_id: &str,
    ) -> Result<(String, Value), ErrorObject> {
        let (server, connection) = self.supervisor.upstreams().connection(owner)?;
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
