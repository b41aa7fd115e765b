//! The gateway core: era-agnostic MCP, knowing nothing of pipes or sockets.
//!
//! A transport hands the core one [`Request`] at a time with a [`RequestContext`] (its cancellation
//! and its notification channel) and writes back the [`Response`] it gets. The core decides the
//! request's era (modern when `_meta` names a protocol version, else legacy under the client's
//! negotiated revision), checks the modern envelope, routes through the merged [`Catalog`] to an
//! upstream or the built-in server, and shapes the result for the client's revision.

mod approvals;
mod apps;
mod asking;
mod bridged_tasks;
mod builtin;
mod call_limits;
mod carry;
mod catalog;
mod catalogs;
mod client;
mod clients;
mod collisions;
mod command_error;
mod cursor;
mod event_cursors;
mod event_delivery;
pub mod event_relay;
mod event_store;
mod event_subscriptions;
mod event_types;
mod events;
mod forwarded;
mod guarded_listings;
mod handshake;
mod hooked;
mod inbound;
mod incoming;
mod instances;
mod kept_results;
mod link;
mod listens_held;
mod live;
mod logging;
mod login;
mod merged;
pub mod naming;
mod observe;
mod own_event_reads;
mod own_events;
mod own_tasks;
mod owner_cancel;
pub mod person_login;
mod pinning;
mod policies;
mod profile;
mod relay;
mod request_context;
mod request_state;
mod results;
mod rounds;
mod route;
mod routing;
mod search;
mod shared_uris;
mod skills;
mod subscriptions;
mod supervision;
mod target;
mod task_ids;
mod tasks;
mod upstreams;
mod uri_template;
mod webhooks;

pub use approvals::{Approval, APPROVAL_PAGE};
pub use catalog::{Catalog, Listing};
pub use client::{Client, Listen};
pub use command_error::CommandError;
pub use inbound::{is_legacy_initialize, Inbound, Received};
pub use live::Live;
pub use profile::ViewId;
pub use request_context::RequestContext;
pub use route::{Owner, Route};

use crate::cancel::Cancel;
use crate::config::Settings;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Request, Response, METHOD_NOT_FOUND};
use crate::ledger::{Ledger, Outcome};
use crate::outbox;
use crate::protocol::envelope;
use crate::protocol::method::{Eras, Side};
use crate::protocol::{shape, Era, Method, ResultKind, Revision};
use crate::view::UpstreamView;
use catalogs::Catalogs;
use clients::Clients;
use incoming::Incoming;
use profile::Profiles;
use rounds::Rounds;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use subscriptions::HeldSubscriptions;
use supervision::Supervisor;

/// The gateway: the upstreams, the merged catalog, the connected clients. It dispatches each
/// request to the component that answers it.
#[derive(Debug)]
pub struct Gateway {
    /// The upstreams and their lifecycle ([`supervision`]).
    supervisor: Arc<Supervisor>,
    /// The merged catalog in service, as each view sees it ([`catalogs`]).
    catalogs: Arc<Catalogs>,
    /// The connected clients ([`clients`]).
    clients: Arc<Clients>,
    /// The resource subscriptions held upstream ([`subscriptions`]).
    subscriptions: Arc<HeldSubscriptions>,
    /// Live sessions and requests in flight, as the transports note them and the admin socket
    /// reads them ([`live`]).
    live: Live,
    config_path: Option<String>,
    /// Modern clients' calls waiting for their input.
    rounds: Arc<Rounds>,
    /// The gateway itself, for work that outlives the request that started it (a login).
    me: std::sync::Weak<Gateway>,
    /// The metrics and the audit log.
    observer: observe::Observer,
    /// The ids of the tasks upstreams run for clients ([`tasks`]).
    task_ids: Arc<task_ids::TaskIds>,
    /// The tasks mcpx runs itself ([`own_tasks`]).
    own_tasks: own_tasks::OwnTasks,
    /// `[limits]`, with what each caller has used of them ([`call_limits`]).
    limits: call_limits::CallLimits,
    /// Pinned definitions ([`pinning`]), which the catalogs vet listings with.
    pinning: Arc<pinning::Pinning>,
    /// People's own logins to per-identity servers, under way ([`person_login`]).
    person_logins: person_login::PersonLogins,
    /// Seals the event types' cursors clients hold ([`event_cursors`]).
    event_cursors: event_cursors::EventCursors,
    /// The webhook subscriptions mcpx delivers itself ([`event_subscriptions`]).
    event_subscriptions: event_subscriptions::EventSubscriptions,
    /// The servers' webhooks the relay passed on, so that a replayed one is passed on once.
    relayed: event_relay::PassedOn,
    /// `[guardrails]`, which results ([`results`]) and listings ([`catalogs`]) pass.
    guardrails: Arc<crate::guardrails::Guardrails>,
    /// Results cut to their budget, kept whole for their callers ([`kept_results`]).
    kept_results: kept_results::KeptResults,
    /// Calls waiting for a person's approval ([`approvals`]).
    approvals: approvals::Approvals,
}

impl Gateway {
    /// A gateway for this configuration; nothing runs until [`Gateway::start`]. `launcher`, when
    /// given, is the mcpx binary, which starts each upstream so that it dies with mcpx; `cluster`,
    /// when given, signs `requestState`s that every replica sharing the key trusts.
    pub fn new(
        settings: &Settings,
        config_path: Option<String>,
        launcher: Option<std::path::PathBuf>,
        cluster: Option<&crate::cluster::ClusterKeys>,
    ) -> Arc<Gateway> {
        let (config, ledger) = (&settings.config, Ledger::new());
        let profiles = Profiles::new(&config.profiles, &config.auth.rules);
        let pinning = Arc::new(pinning::Pinning::new(&config.pins));
        let guardrails = Arc::new(crate::guardrails::Guardrails::new(&config.guardrails));
        let catalogs = Arc::new(Catalogs::new(
            profiles,
            Arc::clone(&pinning),
            Arc::clone(&guardrails),
        ));
        let clients = Arc::new(Clients::new(config.transport.max_in_flight_per_client));
        pinning.tell(clients.own_events());
        let subscriptions = Arc::new(HeldSubscriptions::default());
        let supervisor = Supervisor::new(
            upstreams::Upstreams::from_settings(settings, launcher),
            Arc::clone(&catalogs),
            Arc::clone(&clients),
            Arc::clone(&subscriptions),
            Arc::clone(&ledger),
            config.daemon.list_wait,
        );
        Arc::new_cyclic(|me| Gateway {
            supervisor,
            catalogs,
            clients,
            subscriptions,
            live: Live::new(Arc::clone(&ledger)),
            config_path,
            rounds: Rounds::new(
                config.transport.input_timeout,
                cluster.map(|keys| {
                    let (key, previous) = keys.derive(b"mcpx requestState v1");
                    request_state::Signer::shared(key, previous)
                }),
            ),
            me: me.clone(),
            observer: observe::Observer::new(&config.audit, ledger),
            task_ids: Arc::new(task_ids::TaskIds::new(cluster)),
            own_tasks: own_tasks::OwnTasks::new(&config.tasks),
            limits: call_limits::CallLimits::new(&config.limits),
            pinning,
            person_logins: person_login::PersonLogins::new(config.auth.public_url.clone()),
            event_cursors: event_cursors::EventCursors::new(cluster),
            event_subscriptions: event_subscriptions::EventSubscriptions::new(
                &config.events,
                config.auth.public_url.as_deref(),
            ),
            relayed: Default::default(),
            guardrails,
            kept_results: Default::default(),
            approvals: approvals::Approvals::new(&config.approvals, approvals::page_of(config)),
        })
    }

    /// Opens the audit log, then starts every upstream and puts the merged catalog in service
    /// ([`Supervisor::start`]).
    pub async fn start(&self) -> Result<(), String> {
        self.observer.open_audit()?;
        if let Some(audit) = self.observer.audit() {
            self.pinning.audit_to(audit);
            self.catalogs.audit_to(audit);
        }
        let me = self.me.clone();
        let heard = move |upstream, params| {
            if let Some(gateway) = me.upgrade() {
                gateway.task_status(upstream, params);
            }
        };
        let heard = supervision::TaskStatusHeard(Box::new(heard));
        self.supervisor.on_task_status(heard);
        self.supervisor.start().await;
        self.resume_event_subscriptions();
        Ok(())
    }

    /// Shuts every upstream down together: each gets `grace` to exit on its own once its stdin
    /// closes (so cancellations just sent still land), then is killed.
    pub async fn shutdown(&self, grace: Duration) {
        self.supervisor.shutdown(grace).await;
    }

    /// Stops an upstream and starts it again; clients hear `list_changed` for what changed.
    pub async fn restart_upstream(&self, name: &str) -> Result<String, CommandError> {
        self.supervisor.restart_upstream(name).await
    }

    /// Re-reads the configuration file mcpx started with (or the default one) and applies its
    /// `[servers]`: unchanged servers keep running, removed ones stop, new ones start. A file
    /// with errors is refused with its file, line and key, and the running one stays.
    pub async fn reload_from_disk(&self) -> Result<String, CommandError> {
        let path = self.config_path.clone().map(std::path::PathBuf::from);
        // Off the executor: a `${keyring:…}` waits on the keyring's answer.
        let (settings, _) = smol::unblock(move || Settings::load(path.as_deref()))
            .await
            .map_err(|e| CommandError::InvalidConfig(e.to_string()))?;
        self.limits.reconfigure(&settings.config.limits);
        self.guardrails.reconfigure(&settings.config.guardrails);
        self.approvals.reconfigure(&settings.config.approvals);
        self.supervisor.reload(&settings).await
    }

    /// Each configured upstream's name, state, revision and catalog size.
    pub fn summaries(&self) -> Vec<UpstreamView> {
        self.supervisor.upstreams().summaries()
    }

    /// The live state: what the transports note in it and the admin socket reads.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// Where the other replicas of a cluster reach this daemon: the states it signs say so.
    pub fn reached_at(&self, address: String) {
        self.task_ids.reached_at(address.clone());
        self.rounds.reached_at(address);
    }

    /// The replica to forward a request to, when that is not this one: the one holding the call
    /// a modern retry's `requestState` resumes, or the task a `tasks/*` request names.
    pub fn resumed_elsewhere(&self, params: Option<&Value>) -> Option<String> {
        let task = || self.task_ids.held_elsewhere(params);
        self.rounds.held_elsewhere(params).or_else(task)
    }

    /// The whole merged catalog.
    fn catalog(&self) -> Arc<Catalog> {
        self.catalogs.everything()
    }

    /// The catalog as `client` sees it.
    fn catalog_of(&self, client: &Client) -> Arc<Catalog> {
        self.catalogs.of(client.view)
    }

    /// The view a door's profile name chooses; an unknown name is an error naming the known
    /// ones.
    pub fn profile(&self, name: &str) -> Result<ViewId, String> {
        self.catalogs.profiles().find(name)
    }

    /// What the callers `rule` (of `[[auth.rules]]`) decides for see at `view`'s door.
    pub fn narrowed(&self, view: ViewId, rule: Option<usize>) -> ViewId {
        self.catalogs.profiles().narrowed(view, rule)
    }

    /// Every view: each door's, and those `[[auth.rules]]` narrow them to.
    pub fn views(&self) -> Vec<ViewId> {
        self.catalogs.profiles().all().collect()
    }

    /// The configured profiles' names.
    pub fn profile_names(&self) -> Vec<String> {
        self.catalogs.profiles().names()
    }

    /// The profile a view is, by name; `None` for everything.
    pub fn profile_name(&self, view: ViewId) -> Option<&str> {
        self.catalogs.profiles().name(view)
    }

    /// Begins a request under its own cancellation, entered in the ledger at once (so that a
    /// cancellation can name it before it runs); the caller runs the returned future, in a task
    /// of its own, which yields the response, or `None` once it was cancelled (then nothing may
    /// be written for it). Its request-scoped messages go to `outbound`.
    // Inlined into its two callers, so that the request's future (kilobytes) is built where it is
    // kept rather than returned and copied: without it, a built-in call cost 22.1 µs of CPU
    // instead of 19.7 (perf stat task-clock per request, bench/ab builtin 0.88).
    #[inline]
    pub fn begin_request(
        self: &Arc<Self>,
        client: &Arc<Client>,
        request: Request,
        outbound: outbox::Sender,
        caller: Arc<crate::access::Identity>,
    ) -> (
        Cancel,
        impl Future<Output = Option<Response>> + Send + 'static,
    ) {
        let cancel = Cancel::new();
        let admitted = client.admit().map(|place| {
            let target = Method::parse(&request.method)
                .and_then(|m| m.target(request.params.as_ref()))
                .map(str::to_owned);
            // Callers that share a client (2026-07-28 HTTP) are told apart by what they say.
            let named = client.is_shared().then(|| {
                let info = crate::protocol::envelope::client_info(request.params.as_ref());
                info.unwrap_or(&Value::Null)
            });
            let guard = self.live.ledger().begin(
                client.session,
                (request.id.clone(), &request.method, target),
                cancel.clone(),
                Arc::clone(&caller),
                named,
            );
            (place, guard)
        });
        let (gateway, client) = (Arc::clone(self), Arc::clone(client));
        let context_cancel = cancel.clone();
        let observation = self.observer.observation(&request, Arc::clone(&caller));
        let run = async move {
            let (_place, guard) = match admitted {
                Ok(admitted) => admitted,
                Err(refusal) => {
                    crate::metrics::refused(crate::metrics::Refusal::client_in_flight);
                    return Some(Response::error(Some(request.id), refusal));
                }
            };
            let context = RequestContext {
                progress_seen: guard.progress_counter(),
                ..RequestContext::new(context_cancel, outbound, caller)
            };
            let cancel = &context.cancel;
            let answered = cancel.run(gateway.handle(&client, request, &context)).await;
            let response = gateway.answer_after(&context, answered, || guard.noted());
            guard.finish(
                match response.as_ref().is_none_or(owner_cancel::is_owners) {
                    true => Outcome::Cancelled,
                    false => Outcome::Answered,
                },
            );
            if let Some(observation) = observation {
                gateway.observed(&client, observation, &context, response.as_ref());
            }
            response
        };
        (cancel, run)
    }

    /// Answers one request (not `initialize`, which transports run in line through
    /// [`Gateway::initialize`]).
    pub async fn handle(
        self: &Arc<Self>,
        client: &Arc<Client>,
        request: Request,
        ctx: &RequestContext,
    ) -> Response {
        let id = request.id.clone();
        // A modern request for `initialize` is for a method 2026-07-28 removed: not found.
        if is_legacy_initialize(&request) {
            return self.initialize(client, &request);
        }
        // Every result of a modern request is a modern result, which names its server.
        let modern = envelope::era_of(request.params.as_ref()) == Era::Modern;
        let outcome = self.dispatch(client, request, ctx).await;
        Response {
            id: Some(id),
            outcome,
            meta_entry: modern.then(shape::server_info),
        }
    }

    async fn dispatch(
        self: &Arc<Self>,
        client: &Arc<Client>,
        request: Request,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let name = request.method.as_str();
        let method = Method::parse(name);
        let params = request.params.as_ref();
        let revision = match envelope::era_of(params) {
            Era::Modern => {
                envelope::check(params).inspect_err(|e| {
                    if e.code == crate::jsonrpc::UNSUPPORTED_PROTOCOL_VERSION {
                        crate::metrics::refused(crate::metrics::Refusal::unsupported_version);
                    }
                })?;
                // A modern client names itself on every request: its session (stdio, an
                // attached editor) is named by the first, as `initialize` names a legacy one.
                if client.first_to_name() {
                    let info = envelope::client_info(params).cloned();
                    let ledger = self.live.ledger();
                    ledger.set_initialized(client.session, Revision::V2026_07_28, info);
                }
                Revision::V2026_07_28
            }
            // The modern-only methods without a modern envelope are missing their `_meta`.
            Era::Legacy if method.is_some_and(|m| m.eras() == Eras::Modern) => {
                return Err(envelope::check(params)
                    .err()
                    .unwrap_or_else(|| not_found(name)))
            }
            Era::Legacy => client.revision().unwrap_or(Revision::OLDEST),
        };
        // A method of the other era, or one a server sends, is not found here.
        let Some(method) =
            method.filter(|m| m.in_era(revision.era()) && m.sender() != Side::Server)
        else {
            return Err(not_found(name));
        };
        let incoming = Incoming::new(client, method, params, revision, ctx).with_id(&request.id);
        let extensions = incoming.extensions;
        let result = match method {
            Method::Ping => Ok(json!({})),
            Method::ServerDiscover => Ok(self.discover()),
            Method::SubscriptionsListen => self.listen(client, &request, extensions, ctx).await,
            Method::ResourcesUnsubscribe => self.unsubscribe(client, params),
            Method::LoggingSetLevel => self.set_log_level(client, params),
            Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate => {
                self.catalogs.ready().await;
                let asked = method.task_request().ok_or_else(|| not_found(name))?;
                let task = self.task_method(&incoming, asked);
                Box::pin(task).await
            }
            // A list never waits on a slow server ([`Catalogs::listed`]); what names something
            // waits for its server's first start.
            Method::ToolsList
            | Method::PromptsList
            | Method::ResourcesList
            | Method::ResourcesTemplatesList
            | Method::SkillsList
            | Method::EventsList => {
                self.catalogs.listed().await;
                Box::pin(self.catalog_method(&incoming)).await
            }
            Method::ToolsCall
            | Method::PromptsGet
            | Method::ResourcesRead
            | Method::ResourcesSubscribe
            | Method::CompletionComplete
            | Method::SkillsGet
            | Method::ResourcesDirectoryRead
            | Method::EventsPoll
            | Method::EventsStream
            | Method::EventsSubscribe
            | Method::EventsUnsubscribe => {
                self.ready_for(&incoming).await;
                // Boxed so that the request task stays small for what waits long in it (a
                // listen stream holds its task for as long as it is open).
                let catalog = self.catalog_method(&incoming);
                Box::pin(catalog).await
            }
            // `initialize` is answered before this, by `handle`; a server's questions are
            // never a client's to send (filtered above).
            Method::Initialize
            | Method::SamplingCreateMessage
            | Method::ElicitationCreate
            | Method::RootsList => Err(not_found(name)),
        }?;
        Ok(shape::result(method, revision, extensions, result))
    }

    /// Reopens the audit log at its path (SIGHUP: logrotate moved it away).
    pub fn reopen_audit(&self) {
        self.observer.reopen_audit();
    }

    /// The metrics in the Prometheus text format; `None` when they are off.
    pub fn metrics(&self) -> Option<String> {
        let summaries = self.summaries();
        self.observer.metrics(&self.tasks(), |live| {
            live.sandboxes = summaries
                .iter()
                .filter_map(|u| Some((u.name.clone(), u.sandbox.as_ref()?.is_degraded())))
                .collect();
            live.instances = self
                .supervisor
                .upstreams()
                .all()
                .iter()
                .filter(|u| u.is_per_identity())
                .map(|u| (u.name.clone(), u.instances.all().len() as i64))
                .collect();
            live.pins = self.pinning.counts();
        })
    }

    /// The configuration file it runs with, if any.
    pub fn config_path(&self) -> Option<&str> {
        self.config_path.as_deref()
    }

    /// The merged tools by the server that serves them, as listed now (`mcpx tools`):
    /// [`Gateway::start`] first, or [`Gateway::listed`], decides how long that waits.
    pub fn tools_by_server(&self) -> Vec<crate::view::ServerTools> {
        let catalog = self.catalog();
        let mut by_owner: Vec<(Owner, Vec<(String, String)>)> = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let Ok(page) = catalog.page(merged::List::Tools, cursor.as_ref(), true) else {
                break;
            };
            for tool in page["tools"].as_array().into_iter().flatten() {
                let name = tool["name"].as_str().unwrap_or_default();
                let Some(route) = catalog.tool(name) else {
                    continue;
                };
                let description = tool["description"].as_str().unwrap_or_default();
                let line = description.lines().next().unwrap_or_default().to_owned();
                match by_owner.iter_mut().find(|(o, _)| *o == route.owner) {
                    Some((_, tools)) => tools.push((name.to_owned(), line)),
                    None => by_owner.push((route.owner, vec![(name.to_owned(), line)])),
                }
            }
            match page.member("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
        }
        let mut tools_of = |owner: Owner| {
            let at = by_owner.iter().position(|(o, _)| *o == owner);
            at.map(|at| by_owner.swap_remove(at).1).unwrap_or_default()
        };
        let own = crate::view::ServerTools {
            server: None,
            state: "ready".into(),
            revision: None,
            tools: tools_of(Owner::Builtin),
        };
        let upstreams = self.supervisor.upstreams().all();
        let servers = upstreams.iter().map(|upstream| {
            let view = upstream.view();
            crate::view::ServerTools {
                server: Some(view.name),
                state: view.state,
                revision: view.revision,
                tools: tools_of(Owner::Upstream(upstream.id)),
            }
        });
        std::iter::once(own).chain(servers).collect()
    }

    /// Waits for the first catalog, as a client's list does (never past `[daemon] listWait`
    /// for a slow server).
    pub async fn listed(&self) {
        self.catalogs.listed().await;
    }

    /// Waits until what a request names can be answered: a tool or prompt listed now, of mcpx
    /// or of a server that serves, at once (a slow server's start holds up no call to
    /// another); anything else (a name not listed yet, a server still starting) until every
    /// upstream's first start ended.
    async fn ready_for(&self, incoming: &Incoming<'_>) {
        self.catalogs.listed().await;
        let catalog = self.catalog_of(incoming.client);
        let target = incoming.method.target(incoming.params);
        let route = target.and_then(|name| match incoming.method.result_kind() {
            ResultKind::ToolResult => catalog.tool(name),
            ResultKind::Prompt => catalog.prompt(name),
            ResultKind::TaskResult
            | ResultKind::TaskState
            | ResultKind::Resource
            | ResultKind::Other => None,
        });
        let serving = |owner: Owner| match owner {
            Owner::Builtin => true,
            Owner::Upstream(id) => {
                (self.supervisor.upstreams().get(id)).is_some_and(|u| u.link.is_ready())
            }
        };
        if !route.is_some_and(|route| serving(route.owner)) {
            self.catalogs.ready().await;
        }
    }

    /// Waits until every upstream's first start ended, however long each takes.
    pub async fn settle(&self) {
        self.catalogs.ready().await;
    }

    /// The `Mcp-Param-*` headers a call of this exposed tool must carry from `client`; `None`
    /// for a tool unknown to it (whose call the core refuses anyway).
    pub async fn tool_header_params(
        &self,
        client: &Client,
        exposed: &str,
    ) -> Option<Vec<crate::mcpheaders::HeaderParam>> {
        self.catalogs.ready().await;
        self.catalog_of(client)
            .tool_header_params(exposed)
            .map(<[_]>::to_vec)
    }
}

fn not_found(method: &str) -> ErrorObject {
    ErrorObject::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
}
