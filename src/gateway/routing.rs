//! The catalog methods: lists answered from the merged catalog, and calls, reads and completions
//! routed to the upstream that owns the name or URI they carry, with the caller's progress and
//! the upstream's questions carried between them.

use super::bridged_tasks::Bridge;
use super::forwarded::forwardable;
use super::own_tasks::Promotion;
use super::rounds::{Reach, UpstreamCall};
use super::target::{self, Kind as TargetKind, Resolved, Target, Unresolved};
use super::tasks::ShownTasks;
use super::upstreams::Upstream;
use super::{
    builtin, not_found, relay, results, search, Client, Gateway, Owner, RequestContext, Route,
};
use crate::audit::Questions;
use crate::config::TaskPolicy;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND_LEGACY};
use crate::limit::Unfair;
use crate::metrics::{self, Refusal};
use crate::protocol::{envelope, extension, task, Era, Extension, Extensions, Method, Revision};
use crate::telemetry;
use crate::upstream::{ProgressSink, ShowsTasks};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;

impl Gateway {
    /// Answers a catalog method: a page of a list, or a request resolved to its target
    /// ([`super::target`]), passed through the policies ([`super::policies`]) and routed to its
    /// upstream, for a client that negotiated `extensions` for it.
    pub(super) async fn catalog_method(
        &self,
        client: &Arc<Client>,
        method: Method,
        params: Option<&Value>,
        revision: Revision,
        extensions: Extensions,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let catalog = self.catalog_of(client);
        if method.list_key().is_some() {
            let cursor = params.and_then(|p| p.member("cursor"));
            let apps = extensions.contains(Extension::Apps);
            return catalog.page(method, cursor, apps);
        }
        let resolved = match target::resolve(&catalog, method, params) {
            Ok(Some(resolved)) => resolved,
            Ok(None) => return Err(not_found(method.as_str())),
            Err(unresolved) => return self.unresolved(method, unresolved, revision),
        };
        if let Err(refused) = self.admit(method, &resolved, ctx) {
            return refused;
        }
        let (target, params) = (&resolved.target, resolved.params());
        match method {
            Method::ToolsCall => match self.promotes(client, &resolved, revision, extensions)? {
                Some(promotion) => {
                    self.call_promoting(client, target, params, revision, promotion, ctx)
                        .await
                }
                None => {
                    self.call_named(client, target, method, params, revision, ctx)
                        .await
                }
            },
            Method::PromptsGet => {
                self.call_named(client, target, method, params, revision, ctx)
                    .await
            }
            Method::ResourcesRead | Method::SkillsGet | Method::ResourcesDirectoryRead => {
                self.read_resource(client, target, method, params, revision, ctx)
                    .await
            }
            Method::ResourcesSubscribe => {
                self.subscribe(client, target.owner, &target.exposed).await
            }
            Method::CompletionComplete => {
                self.complete(client, target, params, revision, ctx).await
            }
            // Nothing else names a target ([`target::resolve`] resolved it to none).
            Method::Initialize
            | Method::Ping
            | Method::ServerDiscover
            | Method::SubscriptionsListen
            | Method::ToolsList
            | Method::PromptsList
            | Method::ResourcesList
            | Method::ResourcesTemplatesList
            | Method::ResourcesUnsubscribe
            | Method::LoggingSetLevel
            | Method::SamplingCreateMessage
            | Method::ElicitationCreate
            | Method::RootsList
            | Method::SkillsList
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate => Err(not_found(method.as_str())),
        }
    }

    /// The answer to a request that names nothing the caller reaches.
    fn unresolved(
        &self,
        method: Method,
        unresolved: Unresolved,
        revision: Revision,
    ) -> Result<Value, ErrorObject> {
        let invalid = |what: &str, name: &str| {
            Err(ErrorObject::new(
                INVALID_PARAMS,
                format!("Unknown {what}: {name}"),
            ))
        };
        match unresolved {
            // A tool a pinned server lists and mcpx withholds says what to review.
            Unresolved::Tool(name) => match self.withheld(&name) {
                Some(withheld) => Ok(withheld),
                None => invalid("tool", &name),
            },
            Unresolved::Prompt(name) => invalid("prompt", &name),
            Unresolved::Resource(uri) => Err(resource_not_found(&uri, revision)),
            Unresolved::Reference(uri) if method == Method::CompletionComplete => {
                invalid("resource reference", &uri)
            }
            Unresolved::Reference(uri) => Err(resource_not_found(&uri, revision)),
            Unresolved::Invalid(error) => Err(error),
        }
    }

    /// `tools/call` and `prompts/get` of `target`, under the name its server knows.
    pub(super) async fn call_named(
        &self,
        client: &Arc<Client>,
        target: &Target,
        method: Method,
        params: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let catalog = self.catalog_of(client);
        let owner = target.owner;
        if owner == Owner::Builtin {
            let arguments = params.and_then(|p| p.member("arguments"));
            return match (target.own.as_str(), catalog.search_index()) {
                (builtin::LOGIN, _) => self.login_tool(client, params, revision, ctx).await,
                (search::SEARCH_TOOLS, Some(index)) => Ok(search::answer(index, arguments)),
                (tool, _) => Ok(builtin::call(
                    tool,
                    arguments,
                    || self.seen_by(client.view),
                    self.config_path.as_deref(),
                )),
            };
        }
        let mut forwarded = forwardable(params);
        forwarded["name"] = json!(target.own);
        if let Value::Object(fields) = &mut forwarded {
            // Asks a 2025-11-25 server for a task: no other server is asked for one.
            let upstreams = self.supervisor.upstreams();
            let runs_them =
                || upstreams.of(owner).and_then(|u| u.runs_tasks()) == Some(Era::Legacy);
            if fields.contains_key("task") && !runs_them() {
                fields.remove("task");
            }
        }
        let mut result = self
            .forward(client, owner, method, forwarded, params, revision, ctx)
            .await?;
        let era = revision.era();
        if method == Method::ToolsCall
            && task::has_tasks(revision)
            && task::is_created(&result, era)
        {
            // A task outlives this call: its id is mcpx's, and names the upstream running it
            // and the caller it belongs to.
            let upstream = self.supervisor.upstreams().of(owner);
            let upstream =
                upstream.ok_or_else(|| Failure::Refused("its upstream was removed".into()))?;
            let created = self.task_ids.seal_created(
                &mut result,
                era,
                &upstream,
                client,
                &ctx.caller,
                &target.exposed,
            )?;
            self.observer.task(&created.origin, "created");
        }
        Ok(results::leaving(&catalog, owner, result))
    }

    /// How long a `tools/call` may run before mcpx makes it a task of its own: for a 2026-07-28
    /// client that declared the Tasks extension, calling a server that runs no such tasks, as
    /// the tool's or its server's `tasks` says. A 2025-11-25 server's task tool is bridged: the
    /// task mcpx shows runs the server's. `None` when the call does not become one; an error for
    /// a client that did not declare the extension, calling a tool run only as a task.
    fn promotes(
        &self,
        client: &Client,
        resolved: &Resolved<'_>,
        revision: Revision,
        extensions: Extensions,
    ) -> Result<Option<Promotion>, ErrorObject> {
        let legacy = revision.era() == Era::Legacy;
        if legacy && !task::has_tasks(revision) {
            return Ok(None);
        }
        let target = &resolved.target;
        let Some(upstream) = self.supervisor.upstreams().of(target.owner) else {
            return Ok(None);
        };
        let (called, params) = (target.exposed.as_str(), resolved.params());
        let route = &Route {
            owner: target.owner,
            name: target.own.clone(),
        };
        let tool = upstream.config.tools.get(&route.name);
        let policy = tool.and_then(|t| t.tasks).unwrap_or(upstream.config.tasks);
        if legacy {
            return self.promotes_for_legacy(called, route, params, &upstream, policy);
        }
        let bridged = match upstream.runs_tasks() {
            Some(Era::Modern) => return Ok(None),
            Some(Era::Legacy) => match self.catalog_of(client).task_support(called) {
                "required" => Some((route, true)),
                "optional" => Some((route, false)),
                _ => None,
            },
            None => None,
        };
        let required = policy == TaskPolicy::Required || bridged.as_ref().is_some_and(|b| b.1);
        let declared = extensions.contains(Extension::Tasks);
        let after = match policy {
            _ if required && !declared => return Err(super::tasks::undeclared(called)),
            _ if !declared => None,
            // A tool run only as a task is one even where mcpx would make none of its own.
            TaskPolicy::Never if !required => None,
            TaskPolicy::Auto => Some(self.own_tasks.promote_after()),
            _ => Some(std::time::Duration::ZERO),
        };
        Ok(after.map(|after| Promotion {
            after,
            server: upstream.name.clone(),
            bridged: bridged.map(|(route, _)| Bridge::new(route.clone(), Era::Legacy)),
        }))
    }

    /// For a 2025-11-25 client: a task of mcpx's when the client asked for one (`params.task`)
    /// of a server that runs no 2025-11-25 tasks itself (one that does passes the request on),
    /// unless its `tasks` says never; -32601 for a plain call of a tool run only as a task.
    fn promotes_for_legacy(
        &self,
        called: &str,
        route: &Route,
        params: Option<&Value>,
        upstream: &Upstream,
        policy: TaskPolicy,
    ) -> Result<Option<Promotion>, ErrorObject> {
        let runs = upstream.runs_tasks();
        if runs == Some(Era::Legacy) {
            return Ok(None);
        }
        let asked = params
            .and_then(|p| p.member("task"))
            .is_some_and(Value::is_object);
        match (asked, policy) {
            (false, TaskPolicy::Required) => Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("Tool {called} runs only as a task: call it with params.task (its execution.taskSupport is required)"),
            )),
            (false, _) | (true, TaskPolicy::Never) => Ok(None),
            (true, _) => Ok(Some(Promotion {
                after: std::time::Duration::ZERO,
                server: upstream.name.clone(),
                // An extension server's own task, where it makes one.
                bridged: runs.map(|era| Bridge::new(route.clone(), era)),
            })),
        }
    }

    /// `resources/read` and Skills' `skills/get` and `resources/directory/read` of `target`,
    /// under the URI its server knows.
    async fn read_resource(
        &self,
        client: &Arc<Client>,
        target: &Target,
        method: Method,
        params: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let catalog = self.catalog_of(client);
        let mut forwarded = forwardable(params);
        forwarded["uri"] = json!(target.own);
        let owner = target.owner;
        self.forward(client, owner, method, forwarded, params, revision, ctx)
            .await
            .map(|result| results::leaving(&catalog, owner, result))
            .map_err(|e| match e.code {
                // The retired code never reaches a modern client.
                RESOURCE_NOT_FOUND_LEGACY if revision.era() == Era::Modern => {
                    resource_not_found(&target.exposed, revision)
                }
                _ => e,
            })
    }

    /// `completion/complete` of what `target` its reference names, a prompt or a resource.
    async fn complete(
        &self,
        client: &Arc<Client>,
        target: &Target,
        params: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        if target.owner == Owner::Builtin {
            return Ok(json!({"completion": {"values": [], "hasMore": false}}));
        }
        let mut forwarded = forwardable(params);
        match target.kind {
            TargetKind::Prompt => forwarded["ref"]["name"] = json!(target.own),
            TargetKind::Tool | TargetKind::Resource | TargetKind::Skill => {
                let own = target.template.as_ref().unwrap_or(&target.own);
                forwarded["ref"]["uri"] = json!(own);
            }
        }
        let method = Method::CompletionComplete;
        self.forward(
            client,
            target.owner,
            method,
            forwarded,
            params,
            revision,
            ctx,
        )
        .await
    }

    /// Sends a request to the upstream that owns it: a modern client's retry to the call it
    /// resumes, a call to a server waiting for a login by that login first ([`super::login`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn forward(
        &self,
        client: &Arc<Client>,
        owner: Owner,
        method: Method,
        mut forwarded: Value,
        original: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        if let Some(resumed) = self.resume(client, method, original, revision, ctx) {
            return resumed.await;
        }
        // A server waiting for a login is logged in to on the way, when the client can open the
        // sign-in page; so is one that refuses mcpx's token during the call.
        // (The client's capabilities are looked at only for a `url` server: a call to a stdio
        // one, the common case, needs none of this.)
        let woken = self.supervisor.wake(owner).await;
        let capabilities = || declared_capabilities(client, original, revision);
        let login = self
            .login_first(owner, method, capabilities, revision, ctx)
            .map(Arc::new);
        let (upstream, reach) = match (self.supervisor.upstreams().connection(owner), login) {
            (Ok((upstream, _)), Some(login)) if upstream.waits_for_login() => {
                (upstream, Reach::AfterLogin(login))
            }
            (Ok((upstream, connection)), login) => (upstream, Reach::Ready(connection, login)),
            (Err(_), Some(login)) if login.upstream().waits_for_login() => {
                (login.upstream(), Reach::AfterLogin(login))
            }
            (Err(error), _) => return Err(woken.err().unwrap_or(error)),
        };
        let span = telemetry::carry(method, target(method, original), original, &mut forwarded);
        let call = Call {
            method,
            forwarded,
            original,
            revision,
        };
        let outcome = self.carry_out(client, &upstream, reach, call, ctx).await;
        if let Some(span) = span {
            span.end(&outcome);
        }
        outcome
    }

    /// `mcpx__login`: logs in to the server named, asking the client to open the authorization
    /// URL, when the server is waiting for a login and the client can open one.
    pub(super) async fn login_tool(
        &self,
        client: &Arc<Client>,
        params: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let arguments = params.and_then(|p| p.member("arguments"));
        let name = arguments
            .and_then(|a| a.member("server"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        // A server outside the caller's view is, to it, no server at all.
        let upstream = self
            .supervisor
            .upstreams()
            .by_name(name)
            .filter(|u| self.catalogs.profiles().sees_server(client.view, &u.name))
            .ok_or_else(|| {
                ErrorObject::new(INVALID_PARAMS, format!("no server is named {name:?}"))
            })?;
        if let Some(resumed) = self.resume(client, Method::ToolsCall, params, revision, ctx) {
            return resumed.await;
        }
        let capabilities = declared_capabilities(client, params, revision);
        let owner = Owner::Upstream(upstream.id);
        let login = self.login_first(
            owner,
            Method::ToolsCall,
            || capabilities.clone(),
            revision,
            ctx,
        );
        let waits = upstream.waits_for_login();
        let Some(login) = login.filter(|_| waits) else {
            return Ok(builtin::login_refused(
                name,
                waits,
                &upstream.describe_state(),
                &capabilities,
            ));
        };
        let call = Call {
            method: Method::ToolsCall,
            forwarded: json!({}),
            original: params,
            revision,
        };
        let reach = Reach::LoginOnly(Arc::new(login));
        self.carry_out(client, &upstream, reach, call, ctx).await
    }

    /// A modern client's retry carrying mcpx's `requestState` goes to the call it resumes.
    fn resume<'a>(
        &'a self,
        client: &Client,
        method: Method,
        original: Option<&'a Value>,
        revision: Revision,
        ctx: &'a RequestContext,
    ) -> Option<impl std::future::Future<Output = Result<Value, ErrorObject>> + 'a> {
        if revision.era() != Era::Modern || !self.rounds.carries_own_state(original) {
            return None;
        }
        let capabilities = declared_capabilities(client, original, revision);
        Some(async move {
            self.rounds
                .resume(
                    method,
                    target(method, original),
                    original,
                    &capabilities,
                    ctx,
                )
                .await
        })
    }

    /// Runs a call on the upstream it reaches, with the caller's progress routed back and the
    /// upstream's questions carried to the client in the client's era ([`relay`] for legacy
    /// clients, [`rounds`](super::rounds) for modern ones).
    async fn carry_out(
        &self,
        client: &Arc<Client>,
        upstream: &Upstream,
        reach: Reach,
        call: Call<'_>,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let Call {
            method,
            mut forwarded,
            original,
            revision,
        } = call;
        let foreign_state = original.and_then(|p| p.member("requestState")).is_some();
        if foreign_state && revision.era() == Era::Modern && !upstream.is_modern() {
            // Not this mcpx's (a retry carrying one was resumed before this), and a legacy
            // upstream mints none: no call can be resumed with it.
            return Err(super::request_state::failed_integrity());
        }
        let place = upstream.in_flight.take(client.session).map_err(|refused| {
            metrics::refused(Refusal::upstream_in_flight);
            Failure::Refused(match refused {
                Unfair::Full => format!(
                    "upstream {:?} already has its {} requests in flight; retry shortly",
                    upstream.name,
                    upstream.in_flight.describe()
                ),
                Unfair::OverShare(held) => format!(
                    "this client already holds {held} of upstream {:?}'s {} places, its fair share beside other clients; retry when some finish",
                    upstream.name,
                    upstream.in_flight.describe()
                ),
            })
        })?;
        let capabilities = declared_capabilities(client, original, revision);
        if upstream.is_modern() {
            // A modern upstream asks only for what the client can give, and is told only of
            // the extensions mcpx carries (it would cut another's results on the way back).
            forwarded["_meta"][envelope::CLIENT_CAPABILITIES] =
                extension::carried_only(&capabilities);
        }
        // Only a call to a server that runs 2025-11-25 tasks still carries `task` here.
        let asks_for_task = revision.era() == Era::Legacy && forwarded.member("task").is_some();
        let tasks = (revision.era() == Era::Legacy && task::has_tasks(revision)).then(|| {
            let shown: Arc<dyn ShowsTasks> = Arc::new(ShownTasks {
                upstream: upstream.id,
                ids: Arc::clone(&self.task_ids),
            });
            shown
        });
        let progress = original
            .and_then(|p| p.member("_meta"))
            .and_then(|m| m.member("progressToken"))
            .map(|token| ProgressSink {
                token: token.clone(),
                revision,
                tx: ctx.outbound.clone(),
                seen: Arc::clone(&ctx.progress_seen),
                // A 2025-11-25 task the call makes reports progress after the call has ended.
                after: asks_for_task.then(|| client.session_stream()),
                tasks: tasks.clone(),
            });
        let call = UpstreamCall {
            reach,
            method,
            params: forwarded,
            progress,
            log: client.log_sink(Some(&ctx.outbound)),
            place,
            questions: self
                .observer
                .audit()
                .map(|log| Questions::new(log, client.session, &upstream.name)),
            timeout: ctx.timeout,
            tasks,
        };
        match revision.era() {
            Era::Legacy => relay::for_legacy_client(client, call, ctx).await,
            Era::Modern => {
                self.rounds
                    .start(
                        call,
                        method,
                        target(method, original).to_owned(),
                        &capabilities,
                        ctx,
                    )
                    .await
            }
        }
    }
}

/// A client's request on its way to an upstream.
struct Call<'a> {
    /// The method, as the upstream sees it.
    method: Method,
    /// The params, as the upstream sees them.
    forwarded: Value,
    /// The params as the client sent them.
    original: Option<&'a Value>,
    /// The client's revision for this request.
    revision: Revision,
}

/// What a call names (a tool, a prompt, a resource), for the parked calls' bookkeeping and the
/// trace; "" for none.
fn target(method: Method, original: Option<&Value>) -> &str {
    method.target(original).unwrap_or_default()
}

/// What the client can answer: declared per request in the modern era (borrowed from the
/// request), at `initialize` in the legacy one.
fn declared_capabilities<'a>(
    client: &Client,
    original: Option<&'a Value>,
    revision: Revision,
) -> Cow<'a, Value> {
    match revision.era() {
        Era::Modern => {
            let declared = envelope::client_capabilities(original);
            declared.map_or_else(|| Cow::Owned(json!({})), Cow::Borrowed)
        }
        Era::Legacy => Cow::Owned(client.capabilities()),
    }
}

/// The extensions mcpx carries that the client negotiated for this request: declared in it
/// (modern), or at `initialize` (legacy).
pub(super) fn negotiated_extensions(
    client: &Client,
    params: Option<&Value>,
    revision: Revision,
) -> Extensions {
    match revision.era() {
        Era::Modern => Extensions::declared_in(envelope::client_capabilities(params)),
        Era::Legacy => client.extensions(),
    }
}

/// Resource not found: -32002 in the legacy revisions, -32602 in the modern one.
fn resource_not_found(uri: &str, revision: Revision) -> ErrorObject {
    let code = if revision.era() == Era::Modern {
        INVALID_PARAMS
    } else {
        RESOURCE_NOT_FOUND_LEGACY
    };
    ErrorObject::new(code, format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
}
