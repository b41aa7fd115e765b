//! The catalog methods: lists answered from the merged catalog, and calls, reads and completions
//! resolved to their target, passed through the policies and handed to [`super::carry`] for
//! the upstream that owns it.

use super::bridged_tasks::Bridge;
use super::forwarded::forwardable;
use super::incoming::Incoming;
use super::merged::List;
use super::own_tasks::Promotion;
use super::results::Leaving;
use super::supervision::NotStarted;
use super::target::{self, Kind as TargetKind, Resolved, Target, Unresolved};
use super::upstreams::Upstream;
use super::{builtin, events, not_found, search, Gateway, Owner, Route};
use crate::config::TaskPolicy;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND_LEGACY};
use crate::protocol::{task, Era, Extension, Method, Revision};
use serde_json::{json, Value};

impl Gateway {
    /// Answers a catalog method: a page of a list, or a request resolved to its target
    /// ([`super::target`]), passed through the policies ([`super::policies`]) and routed to its
    /// upstream, for a client that negotiated `extensions` for it.
    pub(super) async fn catalog_method(
        &self,
        incoming: &Incoming<'_>,
    ) -> Result<Value, ErrorObject> {
        let Incoming {
            client,
            method,
            params,
            revision,
            ctx,
            ..
        } = *incoming;
        if let Some(list) = List::of(method) {
            let _ = self.list_unlisted(incoming).await;
            let cursor = params.and_then(|p| p.member("cursor"));
            let apps = incoming.extensions.contains(Extension::Apps);
            return self.catalog_of(client).page(list, cursor, apps);
        }
        let mut catalog = self.catalog_of(client);
        // A name no catalog knows may be a per-identity server's nobody listed yet: it is
        // listed through this caller's own instance, and the name looked up again; if it is
        // still unknown, the caller is told why that server could not be listed for them.
        let mut unlisted_because = Vec::new();
        if target::resolve(&catalog, method, params).is_err() {
            let listed;
            (listed, unlisted_because) = self.list_unlisted(incoming).await;
            if listed {
                catalog = self.catalog_of(client);
            }
        }
        let resolved = match target::resolve(&catalog, method, params) {
            Ok(Some(resolved)) => resolved,
            Ok(None) => return Err(not_found(method.as_str())),
            Err(unresolved) => {
                let mut answer = self.unresolved(method, unresolved, revision);
                if let Err(error) = &mut answer {
                    for why in unlisted_because {
                        error.message = format!("{}; {why}", error.message);
                    }
                }
                return answer;
            }
        };
        // What it resolved to is what it is observed as, whatever name it was sent under.
        let _ = ctx.learnt.target.set(resolved.target.clone());
        let mut resolved = resolved;
        let approval = match self.admit(method, &mut resolved, ctx).await {
            Ok(approval) => approval,
            Err(refused) => return refused,
        };
        let (target, params) = (&resolved.target, resolved.params());
        match method {
            Method::ToolsCall => {
                self.handshake_first(target.owner, &ctx.caller).await;
                match self.promotes(incoming, &resolved)? {
                    // A call that is a task waits for its approval as one: its client is
                    // answered with the task at once, not held.
                    Some(promotion) => {
                        let promotion = promotion.approved_first(approval);
                        self.call_promoting(incoming, target, params, promotion)
                            .await
                    }
                    None => {
                        if approval {
                            let approved = self.approved_call(&resolved, ctx);
                            if let Err(refused) = Box::pin(approved).await {
                                return refused;
                            }
                        }
                        self.call_named(incoming, target, params).await
                    }
                }
            }
            Method::PromptsGet => self.call_named(incoming, target, params).await,
            Method::ResourcesRead | Method::SkillsGet | Method::ResourcesDirectoryRead => {
                self.read_resource(incoming, target).await
            }
            Method::ResourcesSubscribe => {
                self.subscribe(client, target.owner, &target.exposed).await
            }
            Method::CompletionComplete => self.complete(incoming, target).await,
            // Boxed: their state (a webhook's verification, a relay's subscribe) stays out of
            // every other request's future, which is moved whole into its task.
            Method::EventsPoll => Box::pin(self.poll_events(incoming, target)).await,
            Method::EventsStream => Box::pin(self.stream_events(incoming, target)).await,
            Method::EventsSubscribe => Box::pin(self.subscribe_events(incoming, target)).await,
            Method::EventsUnsubscribe => self.unsubscribe_events(incoming, target),
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
            | Method::TasksUpdate
            | Method::EventsList => Err(not_found(method.as_str())),
        }
    }

    /// A per-identity server no handshake has told mcpx of yet (its catalog came from the
    /// cache) is handshaken through the caller's own instance, which the call needs anyway,
    /// before the call is made: whether the server runs tasks itself decides how it is made.
    async fn handshake_first(&self, owner: Owner, caller: &crate::access::Identity) {
        let upstream = self.supervisor.upstreams().of(owner);
        let Some(upstream) = upstream.filter(|u| u.is_per_identity() && u.era().is_none()) else {
            return;
        };
        if let Err(NotStarted::Refused(refused)) =
            self.supervisor.instance_for(&upstream, caller).await
        {
            tracing::debug!(server = %upstream.name, "not handshaken through this caller: {}", refused.message);
        }
    }

    /// Lists each per-identity remote server in the caller's view that nobody has listed yet,
    /// through the caller's own instance: it takes only its callers' own tokens, so its first
    /// caller's list waits for it to be listed, once, for everyone. Whether one was listed, and
    /// why each that was not could not be, for this caller.
    async fn list_unlisted(&self, incoming: &Incoming<'_>) -> (bool, Vec<String>) {
        let profiles = self.catalogs.profiles();
        let unlisted = self.supervisor.upstreams().all().into_iter().filter(|u| {
            u.is_per_identity()
                && u.config.kind().is_remote()
                && *crate::sync::lock(&u.listing) == super::Listing::default()
                && profiles.sees_server(incoming.client.view, &u.name)
        });
        let (mut listed, mut unlisted_because) = (false, Vec::new());
        for upstream in unlisted {
            let caller = &incoming.ctx.caller;
            let why = match self.supervisor.instance_for(&upstream, caller).await {
                Ok(_) => {
                    listed |= *crate::sync::lock(&upstream.listing) != super::Listing::default();
                    continue;
                }
                Err(NotStarted::LoginNeeded) => format!(
                    "{} shows its tools only to someone signed in to it: sign in with mcpx__login {{\"server\": \"{}\"}}",
                    upstream.name, upstream.name
                ),
                Err(NotStarted::Refused(refused)) => refused.message,
            };
            tracing::debug!(server = %upstream.name, "not listed through this caller: {why}");
            unlisted_because.push(why);
        }
        (listed, unlisted_because)
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
            Unresolved::Event(name) => Err(events::unknown_event(&name)),
            Unresolved::Resource(uri) => Err(resource_not_found(&uri, revision)),
            Unresolved::Reference(uri) if method == Method::CompletionComplete => {
                invalid("resource reference", &uri)
            }
            Unresolved::Reference(uri) => Err(resource_not_found(&uri, revision)),
            Unresolved::Invalid(error) => Err(error),
        }
    }

    /// `tools/call` and `prompts/get` of `target` with `params` (unwrapped from
    /// `mcpx__call_tool`'s, if it came that way), under the name its server knows.
    pub(super) async fn call_named(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
        params: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        let Incoming {
            client,
            method,
            revision,
            ctx,
            ..
        } = *incoming;
        let catalog = self.catalog_of(client);
        let owner = target.owner;
        if owner == Owner::Builtin {
            let arguments = params.and_then(|p| p.member("arguments"));
            return match (target.own.as_str(), catalog.search_index()) {
                (builtin::LOGIN, _) => self.login_tool(incoming, params).await,
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
            .forward(incoming, owner, forwarded, &target.exposed)
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
            self.observer.task(&created.origin, "created", None);
        }
        let door = Leaving {
            catalog: &catalog,
            view: client.view,
            owner,
            method,
            ctx,
        };
        self.leaving(door, result).await
    }

    /// How long a `tools/call` may run before mcpx makes it a task of its own: for a 2026-07-28
    /// client that declared the Tasks extension, calling a server that runs no such tasks, as
    /// the tool's or its server's `tasks` says. A 2025-11-25 server's task tool is bridged: the
    /// task mcpx shows runs the server's. `None` when the call does not become one; an error for
    /// a client that did not declare the extension, calling a tool run only as a task.
    fn promotes(
        &self,
        incoming: &Incoming<'_>,
        resolved: &Resolved<'_>,
    ) -> Result<Option<Promotion>, ErrorObject> {
        let (client, revision) = (incoming.client, incoming.revision);
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
        let declared = incoming.extensions.contains(Extension::Tasks);
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
            approval: false,
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
                approval: false,
            })),
        }
    }

    /// `resources/read` and Skills' `skills/get` and `resources/directory/read` of `target`,
    /// under the URI its server knows.
    async fn read_resource(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        let (catalog, revision) = (self.catalog_of(incoming.client), incoming.revision);
        if target.owner == Owner::Builtin {
            let person = incoming.ctx.caller.person();
            let kept = self.kept_results.read(&person, &target.own);
            return kept.ok_or_else(|| resource_not_found(&target.exposed, revision));
        }
        let mut forwarded = forwardable(incoming.params);
        forwarded["uri"] = json!(target.own);
        let owner = target.owner;
        let door = Leaving::answering(&catalog, incoming, owner);
        let read = self
            .forward(incoming, owner, forwarded, &target.exposed)
            .await;
        let shown = match read {
            Ok(result) => self.leaving(door, result).await,
            Err(error) => Err(error),
        };
        shown.map_err(|e| match e.code {
            // The retired code never reaches a modern client.
            RESOURCE_NOT_FOUND_LEGACY if revision.era() == Era::Modern => {
                resource_not_found(&target.exposed, revision)
            }
            _ => e,
        })
    }

    /// `completion/complete` of what `target` its reference names, a prompt or a resource: its
    /// values leave as any result of the server's does.
    async fn complete(
        &self,
        incoming: &Incoming<'_>,
        target: &Target,
    ) -> Result<Value, ErrorObject> {
        if target.owner == Owner::Builtin {
            return Ok(json!({"completion": {"values": [], "hasMore": false}}));
        }
        let mut forwarded = forwardable(incoming.params);
        match target.kind {
            TargetKind::Prompt => forwarded["ref"]["name"] = json!(target.own),
            TargetKind::Tool | TargetKind::Resource | TargetKind::Skill | TargetKind::Event => {
                let own = target.template.as_ref().unwrap_or(&target.own);
                forwarded["ref"]["uri"] = json!(own);
            }
        }
        let answer = (self.forward(incoming, target.owner, forwarded, &target.exposed)).await?;
        // What a client offers a person to pick from leaves by the one door results do.
        let catalog = self.catalog_of(incoming.client);
        let door = Leaving::answering(&catalog, incoming, target.owner);
        self.leaving(door, answer).await
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
