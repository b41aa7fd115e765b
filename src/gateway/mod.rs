//! The gateway core: era-agnostic MCP, knowing nothing of pipes or sockets.
//!
//! A transport hands the core one [`Request`] at a time with a [`RequestContext`] (its cancellation
//! and its notification channel) and writes back the [`Response`] it gets. The core decides the
//! request's era (modern when `_meta` names a protocol version, else legacy under the client's
//! negotiated revision), checks the modern envelope, routes through the merged [`Catalog`] to an
//! upstream or the built-in server, and shapes the result for the client's revision.

mod builtin;
mod catalog;
mod client;
pub mod naming;
mod relay;
mod request_state;
mod rounds;
mod upstreams;

pub use catalog::{Catalog, Listing, Owner, Route};
pub use client::{Client, Listen};

use crate::cancel::Cancel;
use crate::config::Config;
use crate::jsonrpc::{
    ErrorObject, Id, Outbound, Request, Response, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND_LEGACY,
};
use crate::limit::Limit;
use crate::protocol::envelope::{self, SUBSCRIPTION_ID};
use crate::protocol::{shape, Era, Revision};
use crate::registry::{Outcome, Registry};
use crate::sync::{lock, read};
use crate::upstream::{Caller, Event, ListKind, ProgressSink};
use crate::view::Snapshot;
use async_channel::Sender;
use rounds::{Rounds, UpstreamCall};
use serde_json::{json, Map, Value};
use smol::lock::OnceCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};

/// What a transport gives the core along with each request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Fires when the client cancels the request (or disconnects, where that is cancellation).
    pub cancel: Cancel,
    /// Messages that belong to this request: progress, a listen stream's notifications, and
    /// requests carried to a legacy client on an upstream's behalf.
    pub outbound: Sender<Outbound>,
    /// Counts the progress notifications passed back (the registry shows it).
    pub progress_seen: Arc<AtomicU64>,
}

/// The gateway: the upstreams, the merged catalog, the connected clients.
#[derive(Debug)]
pub struct Gateway {
    upstreams: upstreams::Upstreams,
    catalog: RwLock<Arc<Catalog>>,
    ready: OnceCell<()>,
    clients: Mutex<HashMap<u64, Arc<Client>>>,
    upstream_subscriptions: Mutex<HashMap<String, usize>>,
    /// Live sessions and requests in flight.
    pub registry: Arc<Registry>,
    server_info: Value,
    config_path: Option<String>,
    /// Where upstreams report, once started.
    events: std::sync::OnceLock<Sender<Event>>,
    /// The program that starts upstream processes so that they die with mcpx (see
    /// [`crate::upstream::stdio`]); `None` starts them directly.
    launcher: Option<std::path::PathBuf>,
    /// `transport.maxInFlightPerClient`.
    max_in_flight_per_client: usize,
    /// `transport.maxMessageBytes`, which bounds what upstreams send as well as what clients do.
    max_message_bytes: usize,
    /// Modern clients' calls waiting for their input.
    rounds: Arc<Rounds>,
}

/// The methods every era answers from the merged catalog.
const CATALOG_METHODS: [&str; 9] = [
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "completion/complete",
    "resources/subscribe",
];

impl Gateway {
    /// A gateway for this configuration; nothing runs until [`Gateway::start`]. `launcher`, when
    /// given, is the mcpx binary, which starts each upstream so that it dies with mcpx.
    pub fn new(
        config: &Config,
        config_path: Option<String>,
        launcher: Option<std::path::PathBuf>,
    ) -> Arc<Gateway> {
        Arc::new(Gateway {
            upstreams: upstreams::Upstreams::from_config(config),
            catalog: RwLock::default(),
            ready: OnceCell::new(),
            clients: Mutex::default(),
            upstream_subscriptions: Mutex::default(),
            registry: Registry::new(),
            server_info: json!({"name": "mcpx", "version": env!("CARGO_PKG_VERSION")}),
            config_path,
            events: std::sync::OnceLock::new(),
            launcher,
            max_in_flight_per_client: config.transport.max_in_flight_per_client,
            max_message_bytes: config.transport.max_message_bytes,
            rounds: Rounds::new(config.transport.input_timeout),
        })
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&read(&self.catalog))
    }

    fn clients(&self) -> Vec<Arc<Client>> {
        lock(&self.clients).values().cloned().collect()
    }

    /// Opens a client (a stdio process, an HTTP session), capped at
    /// `transport.maxInFlightPerClient` requests in flight; its unsolicited notifications go to
    /// `outbound`.
    pub fn open_client(&self, transport: &'static str, outbound: Sender<Outbound>) -> Arc<Client> {
        let cap = Limit::new("maxInFlightPerClient", self.max_in_flight_per_client);
        self.register_client(transport, outbound, Some(cap))
    }

    /// Opens the one client that stands for every modern HTTP caller: stateless callers share
    /// nothing, and each is bounded by its own connection, so no shared cap applies.
    pub fn open_shared_client(
        &self,
        transport: &'static str,
        outbound: Sender<Outbound>,
    ) -> Arc<Client> {
        self.register_client(transport, outbound, None)
    }

    fn register_client(
        &self,
        transport: &'static str,
        outbound: Sender<Outbound>,
        in_flight: Option<Arc<Limit>>,
    ) -> Arc<Client> {
        let session = self.registry.open_session(transport);
        let client = Client::new(session, outbound, in_flight);
        lock(&self.clients).insert(session, Arc::clone(&client));
        client
    }

    /// Closes a client: its listens complete, its requests are cancelled, its subscriptions end.
    pub fn close_client(&self, client: &Client) {
        client.closing.cancel();
        lock(&self.clients).remove(&client.session);
        for uri in client.subscribed_uris() {
            self.release_upstream_subscription(&uri);
        }
        self.registry.close_session(client.session);
    }

    /// The legacy handshake. A supported revision is echoed; anything else gets the newest legacy
    /// revision, which the client may refuse by disconnecting.
    pub fn initialize(&self, client: &Client, request: &Request) -> Response {
        let requested = request
            .params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let Some(requested) = requested else {
            return Response::error(
                Some(request.id.clone()),
                ErrorObject::new(
                    INVALID_PARAMS,
                    "Invalid params: initialize needs a string protocolVersion",
                ),
            );
        };
        let revision = Revision::parse(requested)
            .filter(|r| r.era() == Era::Legacy)
            .unwrap_or(Revision::LATEST_LEGACY);
        client.set_revision(revision);
        let declared = request.params.as_ref().and_then(|p| p.get("capabilities"));
        client.set_capabilities(declared.cloned().unwrap_or(Value::Null));
        let client_info = request
            .params
            .as_ref()
            .and_then(|p| p.get("clientInfo"))
            .cloned();
        self.registry
            .set_initialized(client.session, revision, client_info);
        let mut capabilities = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
        });
        if revision >= Revision::V2025_03_26 {
            capabilities["completions"] = json!({});
        }
        let result = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "serverInfo": self.server_info,
            "instructions": "mcpx merges the tools, prompts and resources of several MCP servers; tool and prompt names carry their server's prefix (server__name).",
        });
        Response::result(request.id.clone(), result)
    }

    /// Begins a request under its own cancellation, entered in the registry at once (so that a
    /// cancellation can name it before it runs); the caller runs the returned future, in a task
    /// of its own, which yields the response, or `None` once it was cancelled (then nothing may
    /// be written for it). Its request-scoped messages go to `outbound`.
    pub fn begin_request(
        self: &Arc<Self>,
        client: &Arc<Client>,
        request: Request,
        outbound: Sender<Outbound>,
    ) -> (
        Cancel,
        impl Future<Output = Option<Response>> + Send + 'static,
    ) {
        let cancel = Cancel::new();
        let admitted = client.admit().map(|place| {
            let target = request
                .params
                .as_ref()
                .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let guard = self.registry.begin(
                client.session,
                request.id.clone(),
                &request.method,
                target,
                cancel.clone(),
            );
            (place, guard)
        });
        let (gateway, client) = (Arc::clone(self), Arc::clone(client));
        let context_cancel = cancel.clone();
        let run = async move {
            let (_place, guard) = match admitted {
                Ok(admitted) => admitted,
                Err(refusal) => return Some(Response::error(Some(request.id), refusal)),
            };
            let context = RequestContext {
                cancel: context_cancel,
                outbound,
                progress_seen: guard.progress_counter(),
            };
            let cancel = &context.cancel;
            let response = cancel
                .run(gateway.handle(&client, request, &context))
                .await
                .filter(|_| !cancel.is_cancelled());
            guard.finish(if response.is_some() {
                Outcome::Answered
            } else {
                Outcome::Cancelled
            });
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
        if request.method == "initialize"
            && envelope::era_of(request.params.as_ref()) == Era::Legacy
        {
            return self.initialize(client, &request);
        }
        let outcome = self.dispatch(client, request, ctx).await;
        Response {
            id: Some(id),
            outcome,
        }
    }

    async fn dispatch(
        self: &Arc<Self>,
        client: &Arc<Client>,
        request: Request,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let method = request.method.as_str();
        let params = request.params.as_ref();
        let revision = match envelope::era_of(params) {
            Era::Modern => {
                envelope::check(params)?;
                Revision::V2026_07_28
            }
            // The two modern-only methods without a modern envelope are missing their `_meta`.
            Era::Legacy if matches!(method, "server/discover" | "subscriptions/listen") => {
                return Err(envelope::check(params)
                    .err()
                    .unwrap_or_else(|| not_found(method)))
            }
            Era::Legacy => client.revision().unwrap_or(Revision::OLDEST),
        };
        let result = match (revision.era(), method) {
            (Era::Legacy, "ping") => Ok(json!({})),
            (Era::Modern, "server/discover") => Ok(self.discover()),
            (Era::Modern, "subscriptions/listen") => self.listen(client, &request, ctx).await,
            (Era::Legacy, "resources/unsubscribe") => self.unsubscribe(client, params),
            (Era::Modern, "resources/subscribe") => Err(not_found(method)),
            (_, m) if CATALOG_METHODS.contains(&m) => {
                self.ready.wait().await;
                // Boxed so that the request task stays small for what waits long in it (a
                // listen stream holds its task for as long as it is open).
                Box::pin(self.catalog_method(client, method, params, revision, ctx)).await
            }
            _ => Err(not_found(method)),
        }?;
        Ok(shape::result(method, revision, result, &self.server_info))
    }

    fn discover(&self) -> Value {
        json!({
            "supportedVersions": Revision::all_strings(),
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "completions": {},
            },
            "instructions": "mcpx merges the tools, prompts and resources of several MCP servers; tool and prompt names carry their server's prefix (server__name).",
        })
    }

    async fn catalog_method(
        &self,
        client: &Arc<Client>,
        method: &str,
        params: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let catalog = self.catalog();
        let field = |key: &str| params.and_then(|p| p.get(key));
        match method {
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
                catalog.page(method, field("cursor"))
            }
            "tools/call" | "prompts/get" => {
                let name = field("name").and_then(Value::as_str).unwrap_or_default();
                let route = if method == "tools/call" {
                    catalog.tool(name)
                } else {
                    catalog.prompt(name)
                };
                let what = if method == "tools/call" {
                    "tool"
                } else {
                    "prompt"
                };
                let route = route.ok_or_else(|| {
                    ErrorObject::new(INVALID_PARAMS, format!("Unknown {what}: {name}"))
                })?;
                if route.owner == Owner::Builtin {
                    return Ok(builtin::call(
                        &route.name,
                        field("arguments"),
                        || self.summaries(),
                        self.config_path.as_deref(),
                    ));
                }
                let mut forwarded = forwardable(params);
                forwarded["name"] = json!(route.name);
                self.forward(
                    client,
                    route.owner,
                    method,
                    forwarded,
                    params,
                    revision,
                    ctx,
                )
                .await
            }
            "resources/read" | "resources/subscribe" => {
                let uri = field("uri").and_then(Value::as_str).unwrap_or_default();
                let owner = catalog
                    .resource_owner(uri)
                    .ok_or_else(|| resource_not_found(uri, revision))?;
                if method == "resources/subscribe" {
                    return self.subscribe(client, owner, uri).await;
                }
                self.forward(
                    client,
                    owner,
                    method,
                    forwardable(params),
                    params,
                    revision,
                    ctx,
                )
                .await
                .map_err(|e| match e.code {
                    // The retired code never reaches a modern client.
                    RESOURCE_NOT_FOUND_LEGACY if revision.era() == Era::Modern => {
                        resource_not_found(uri, revision)
                    }
                    _ => e,
                })
            }
            _ => {
                // completion/complete: route by what the reference names.
                let reference = field("ref").cloned().unwrap_or(Value::Null);
                let mut forwarded = forwardable(params);
                let owner = match reference.get("type").and_then(Value::as_str) {
                    Some("ref/prompt") => {
                        let name = reference
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let route = catalog.prompt(name).ok_or_else(|| {
                            ErrorObject::new(INVALID_PARAMS, format!("Unknown prompt: {name}"))
                        })?;
                        forwarded["ref"]["name"] = json!(route.name);
                        route.owner
                    }
                    Some("ref/resource") => {
                        let uri = reference
                            .get("uri")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        catalog
                            .template_owner(uri)
                            .or_else(|| catalog.resource_owner(uri))
                            .ok_or_else(|| {
                                ErrorObject::new(
                                    INVALID_PARAMS,
                                    format!("Unknown resource reference: {uri}"),
                                )
                            })?
                    }
                    _ => {
                        return Err(ErrorObject::new(
                            INVALID_PARAMS,
                            "Invalid params: ref must be ref/prompt or ref/resource",
                        ))
                    }
                };
                if owner == Owner::Builtin {
                    return Ok(json!({"completion": {"values": [], "hasMore": false}}));
                }
                self.forward(client, owner, method, forwarded, params, revision, ctx)
                    .await
            }
        }
    }

    /// Sends a request to the upstream that owns it, with the caller's progress routed back and
    /// the upstream's questions carried to the client in the client's era ([`relay`] for legacy
    /// clients, [`rounds`] for modern ones).
    #[allow(clippy::too_many_arguments)]
    async fn forward(
        &self,
        client: &Arc<Client>,
        owner: Owner,
        method: &str,
        mut forwarded: Value,
        original: Option<&Value>,
        revision: Revision,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        // Only what a call needs is worked out: a legacy call to a legacy upstream needs neither.
        let target = || {
            original
                .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        // What the client can answer: declared per request in the modern era, at `initialize`
        // in the legacy one.
        let capabilities = || match revision.era() {
            Era::Modern => original
                .and_then(|p| p["_meta"].get(envelope::CLIENT_CAPABILITIES))
                .cloned()
                .unwrap_or_else(|| json!({})),
            Era::Legacy => client.capabilities(),
        };
        if revision.era() == Era::Modern && rounds::carries_own_state(original) {
            return self
                .rounds
                .resume(method, &target(), original, &capabilities(), ctx)
                .await;
        }
        let (upstream, connection) = self.connection(owner)?;
        let place = upstream.in_flight.take().ok_or_else(|| {
            ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "upstream {:?} already has its {} requests in flight; retry shortly",
                    upstream.name,
                    upstream.in_flight.describe()
                ),
            )
        })?;
        if upstream.is_modern() {
            // A modern upstream asks only for what the client can give.
            forwarded["_meta"][envelope::CLIENT_CAPABILITIES] = capabilities();
        }
        let progress = original
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .map(|token| ProgressSink {
                token: token.clone(),
                revision,
                tx: ctx.outbound.clone(),
                seen: Arc::clone(&ctx.progress_seen),
            });
        let call = UpstreamCall {
            connection,
            method: method.to_owned(),
            params: forwarded,
            progress,
            place,
        };
        match revision.era() {
            Era::Legacy => relay::for_legacy_client(client, call, ctx).await,
            Era::Modern => {
                self.rounds
                    .start(call, method, target(), &capabilities(), ctx)
                    .await
            }
        }
    }

    async fn subscribe(
        &self,
        client: &Client,
        owner: Owner,
        uri: &str,
    ) -> Result<Value, ErrorObject> {
        if client.subscribe(uri) {
            self.hold_upstream_subscription(owner, uri).await;
        }
        Ok(json!({}))
    }

    fn unsubscribe(&self, client: &Client, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let uri = params
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if client.unsubscribe(uri) {
            self.release_upstream_subscription(uri);
        }
        Ok(json!({}))
    }

    /// Subscribes the owning upstream to `uri` when the first client asks for it (a modern
    /// upstream has no `resources/subscribe`).
    async fn hold_upstream_subscription(&self, owner: Owner, uri: &str) {
        let first = {
            let mut held = lock(&self.upstream_subscriptions);
            let count = held.entry(uri.to_owned()).or_insert(0);
            *count += 1;
            *count == 1
        };
        let Ok((upstream, connection)) = self.connection(owner) else {
            return;
        };
        if first && upstream.supports_subscribe() && !upstream.is_modern() {
            let params = Some(json!({"uri": uri}));
            if let Err(e) = connection
                .request(
                    "resources/subscribe",
                    params,
                    &Cancel::new(),
                    Caller::default(),
                )
                .await
            {
                tracing::warn!(server = %upstream.name, "resources/subscribe {uri} failed: {}", e.message);
            }
        }
    }

    /// Unsubscribes the owning upstream from `uri` when its last client lets go.
    fn release_upstream_subscription(&self, uri: &str) {
        let mut held = lock(&self.upstream_subscriptions);
        let Some(count) = held.get_mut(uri) else {
            return;
        };
        *count -= 1;
        if *count > 0 {
            return;
        }
        held.remove(uri);
        let Some(owner) = self.catalog().resource_owner(uri) else {
            return;
        };
        let Ok((upstream, connection)) = self.connection(owner) else {
            return;
        };
        if upstream.supports_subscribe() && !upstream.is_modern() {
            let params = Some(json!({"uri": uri}));
            smol::spawn(async move {
                connection
                    .request(
                        "resources/unsubscribe",
                        params,
                        &Cancel::new(),
                        Caller::default(),
                    )
                    .await
            })
            .detach();
        }
    }

    /// A modern listen: acknowledged first, then tagged notifications until the client cancels
    /// it (no reply then) or the transport ends (then the completing result).
    async fn listen(
        &self,
        client: &Arc<Client>,
        request: &Request,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let filter = request
            .params
            .as_ref()
            .and_then(|p| p.get("notifications"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                ErrorObject::new(
                    INVALID_PARAMS,
                    "Invalid params: subscriptions/listen needs a notifications object",
                )
            })?;
        let mut honoured = Map::new();
        let mut lists = Vec::new();
        for (key, kind) in [
            ("toolsListChanged", ListKind::Tools),
            ("promptsListChanged", ListKind::Prompts),
            ("resourcesListChanged", ListKind::Resources),
        ] {
            if filter.get(key) == Some(&json!(true)) {
                honoured.insert(key.into(), json!(true));
                lists.push(kind);
            }
        }
        self.ready.wait().await;
        let catalog = self.catalog();
        let mut resources = Vec::new();
        for uri in filter
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Some(owner) = catalog.resource_owner(uri) {
                self.hold_upstream_subscription(owner, uri).await;
                resources.push(uri.to_owned());
            }
        }
        if !resources.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(resources));
        }
        let ack = client::tagged(
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": honoured }),
            &request.id,
        );
        let _ = ctx.outbound.send(ack.into()).await;
        let filter = lists
            .iter()
            .map(|k| k.notification().to_owned())
            .chain(resources.iter().cloned())
            .collect();
        let registered = self.registry.open_stream(
            client.session,
            "listen",
            Some(request.id.to_value()),
            filter,
        );
        registered.sent();
        let _open = OpenListen::new(
            self,
            client,
            Listen {
                id: request.id.clone(),
                lists,
                resources,
                tx: ctx.outbound.clone(),
                sent: registered.counter(),
            },
        );
        // Whichever comes first: the client cancels (the transport withholds any reply) or the
        // transport closes (the listen completes on purpose, with the result that says so).
        smol::future::or(ctx.cancel.cancelled(), client.closing.cancelled()).await;
        Ok(json!({"resultType": "complete", "_meta": { SUBSCRIPTION_ID: request.id.to_value() }}))
    }

    /// The whole live state, for the admin socket.
    pub fn snapshot(&self) -> Snapshot {
        let catalog = self.catalog();
        let clients = lock(&self.clients).clone();
        let subscriptions = |session: u64| {
            clients
                .get(&session)
                .map(|c| c.subscribed_uris())
                .unwrap_or_default()
        };
        let upstream = |method: &str, target: &str| {
            let owner = match method {
                "tools/call" => catalog.tool(target).map(|r| r.owner),
                "prompts/get" => catalog.prompt(target).map(|r| r.owner),
                _ => catalog.resource_owner(target),
            };
            owner.map(|o| self.upstream_name(o))
        };
        let (sessions, streams, requests, totals) = self.registry.views(subscriptions, upstream);
        Snapshot {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            upstreams: self.summaries(),
            sessions,
            streams,
            requests,
            totals,
            awaiting_input: self.rounds.waiting(),
        }
    }

    /// The merged tools, exposed names and all (for `mcpx tools`).
    pub async fn tools(&self) -> Vec<(Owner, Value)> {
        self.ready.wait().await;
        let catalog = self.catalog();
        let mut all = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let Ok(page) = catalog.page("tools/list", cursor.as_ref()) else {
                break;
            };
            for tool in page["tools"].as_array().into_iter().flatten() {
                let name = tool["name"].as_str().unwrap_or_default();
                if let Some(route) = catalog.tool(name) {
                    all.push((route.owner, tool.clone()));
                }
            }
            match page.get("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
        }
        all
    }

    /// The `Mcp-Param-*` headers a call of this exposed tool must carry; `None` for an unknown
    /// tool (whose call the core refuses anyway).
    pub async fn tool_header_params(
        &self,
        exposed: &str,
    ) -> Option<Vec<crate::mcpheaders::HeaderParam>> {
        self.ready.wait().await;
        self.catalog()
            .tool_header_params(exposed)
            .map(<[_]>::to_vec)
    }
}

/// Keeps a listen registered on its client while the listen request runs, and undoes its
/// subscriptions however it ends (completed, or dropped by a cancelling transport).
struct OpenListen<'a> {
    gateway: &'a Gateway,
    client: &'a Client,
    id: Id,
    resources: Vec<String>,
}

impl<'a> OpenListen<'a> {
    fn new(gateway: &'a Gateway, client: &'a Client, listen: Listen) -> Self {
        let (id, resources) = (listen.id.clone(), listen.resources.clone());
        client.add_listen(listen);
        OpenListen {
            gateway,
            client,
            id,
            resources,
        }
    }
}

impl Drop for OpenListen<'_> {
    fn drop(&mut self) {
        self.client.remove_listen(&self.id);
        for uri in &self.resources {
            self.gateway.release_upstream_subscription(uri);
        }
    }
}

fn not_found(method: &str) -> ErrorObject {
    ErrorObject::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
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

/// The client's params as an upstream should see them: the modern envelope and the progress
/// token are the upstream connection's own business, so they are removed here, and a `_meta`
/// that is not an object (no schema allows one) is dropped rather than passed on.
fn forwardable(params: Option<&Value>) -> Value {
    let mut params = params
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let keep_meta = match params.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            meta.retain(|key, _| {
                key != "progressToken" && !key.starts_with("io.modelcontextprotocol/")
            });
            !meta.is_empty()
        }
        Some(_) => false,
        None => true,
    };
    if !keep_meta {
        params.as_object_mut().map(|p| p.remove("_meta"));
    }
    params
}

#[cfg(test)]
mod every_revision {
    mod gateway {
        use crate::gateway::forwardable;
        use serde_json::json;

        /// The gateway writes into a forwarded `_meta` (the client's capabilities, for a modern
        /// upstream), so whatever a client sent there must leave an object or nothing.
        #[test]
        fn forwarded_params_carry_an_object_meta_or_none() {
            for meta in [json!(5), json!("x"), json!([]), json!(null), json!({})] {
                let forwarded = forwardable(Some(&json!({"name": "t", "_meta": meta})));
                assert!(forwarded.get("_meta").is_none(), "{forwarded}");
            }
            let kept = forwardable(Some(&json!({"_meta": {"progressToken": 1, "trace": "t",
                "io.modelcontextprotocol/protocolVersion": "2026-07-28"}})));
            assert_eq!(kept["_meta"], json!({"trace": "t"}));
        }
    }
}
