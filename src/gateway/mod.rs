//! The gateway core: era-agnostic MCP, knowing nothing of pipes or sockets.
//!
//! A transport hands the core one [`Request`] at a time with a [`RequestContext`] (its cancellation
//! and its notification channel) and writes back the [`Response`] it gets. The core decides the
//! request's era (modern when `_meta` names a protocol version, else legacy under the client's
//! negotiated revision), checks the modern envelope, routes through the merged [`Catalog`] to an
//! upstream or the built-in server, and shapes the result for the client's revision.

mod apps;
mod builtin;
mod catalog;
mod client;
mod clients;
mod command_error;
mod cursor;
mod inbound;
mod lazy;
mod live;
mod logging;
mod login;
pub mod naming;
mod observe;
mod profile;
mod relay;
mod reload;
mod request_state;
mod rounds;
mod route;
mod routing;
mod search;
mod shared_uris;
mod skills;
mod subscriptions;
mod supervision;
mod upstreams;
mod uri_template;

pub use catalog::{Catalog, Listing};
pub use client::{Client, Listen};
pub use command_error::CommandError;
pub use inbound::{is_legacy_initialize, Inbound, Received};
pub use profile::ViewId;
pub use route::{Owner, Route};

use crate::cancel::Cancel;
use crate::config::Settings;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Request, Response, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::outbox;
use crate::protocol::method::{Eras, Side};
use crate::protocol::{envelope, extension};
use crate::protocol::{shape, Era, Method, Revision};
use crate::registry::{Outcome, Registry};
use crate::sync::read;
use crate::upstream::Event;
use async_channel::Sender;
use profile::{Profiles, Views};
use rounds::Rounds;
use serde_json::{json, Value};
use smol::lock::OnceCell;
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
    pub outbound: outbox::Sender,
    /// Counts the progress notifications passed back (the registry shows it).
    pub progress_seen: Arc<AtomicU64>,
}

/// The gateway: the upstreams, the merged catalog, the connected clients.
#[derive(Debug)]
pub struct Gateway {
    upstreams: upstreams::Upstreams,
    /// The merged catalog as each view sees it.
    views: RwLock<Arc<Views>>,
    /// `[profiles]`, which make the views.
    profiles: Profiles,
    /// The names two servers expose, as the last catalog built left them: logged when they
    /// first appear, not at every rebuild.
    collisions: Mutex<Vec<catalog::Collision>>,
    ready: OnceCell<()>,
    /// The connected clients ([`clients`]).
    clients: clients::Clients,
    /// The resource subscriptions held upstream ([`subscriptions`]).
    subscriptions: subscriptions::HeldSubscriptions,
    /// Live sessions and requests in flight: reached from outside only through the gateway.
    registry: Arc<Registry>,
    config_path: Option<String>,
    /// Where upstreams report, once started.
    events: std::sync::OnceLock<Sender<Event>>,
    /// Where lazy servers' catalogs are kept between runs ([`lazy`]).
    catalog_cache: Option<std::path::PathBuf>,
    /// Modern clients' calls waiting for their input.
    rounds: Arc<Rounds>,
    /// The gateway itself, for work that outlives the request that started it (a login).
    me: std::sync::Weak<Gateway>,
    /// The metrics and the audit log.
    observer: observe::Observer,
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
        let (config, registry) = (&settings.config, Registry::new());
        Arc::new_cyclic(|me| Gateway {
            upstreams: upstreams::Upstreams::from_settings(settings, launcher),
            views: RwLock::default(),
            profiles: Profiles::new(&config.profiles),
            collisions: Mutex::default(),
            ready: OnceCell::new(),
            clients: clients::Clients::new(config.transport.max_in_flight_per_client),
            subscriptions: subscriptions::HeldSubscriptions::default(),
            registry: Arc::clone(&registry),
            config_path,
            events: std::sync::OnceLock::new(),
            catalog_cache: lazy::default_cache_dir(),
            rounds: Rounds::new(
                config.transport.input_timeout,
                cluster.map(|keys| {
                    let (key, previous) = keys.derive(b"mcpx requestState v1");
                    request_state::Signer::shared(key, previous)
                }),
            ),
            me: me.clone(),
            observer: observe::Observer::new(&config.audit, registry),
        })
    }

    /// Where the other replicas of a cluster reach this daemon: the states it signs say so.
    pub fn reached_at(&self, address: String) {
        self.rounds.reached_at(address);
    }

    /// The replica to forward a modern retry to: the one holding the call its `requestState`
    /// resumes, when that is not this one.
    pub fn resumed_elsewhere(&self, params: Option<&Value>) -> Option<String> {
        self.rounds.held_elsewhere(params)
    }

    /// The whole merged catalog.
    fn catalog(&self) -> Arc<Catalog> {
        read(&self.views).get(ViewId::EVERYTHING)
    }

    /// The catalog as `client` sees it.
    fn catalog_of(&self, client: &Client) -> Arc<Catalog> {
        read(&self.views).get(client.view)
    }

    /// The view a door's profile name chooses; an unknown name is an error naming the known
    /// ones.
    pub fn profile(&self, name: &str) -> Result<ViewId, String> {
        self.profiles.find(name)
    }

    /// The configured profiles' names.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.names()
    }

    /// The profile a view is, by name; `None` for everything.
    pub fn profile_name(&self, view: ViewId) -> Option<&str> {
        self.profiles.name(view)
    }

    /// The legacy handshake. A supported revision is echoed; anything else gets the newest legacy
    /// revision, which the client may refuse by disconnecting.
    pub fn initialize(&self, client: &Client, request: &Request) -> Response {
        let requested = request
            .params
            .as_ref()
            .and_then(|p| p.member("protocolVersion"))
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
        let declared = request
            .params
            .as_ref()
            .and_then(|p| p.member("capabilities"));
        client.set_capabilities(declared.cloned().unwrap_or(Value::Null));
        let client_info = request
            .params
            .as_ref()
            .and_then(|p| p.member("clientInfo"))
            .cloned();
        self.registry
            .set_initialized(client.session, revision, client_info);
        let mut capabilities = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
        });
        if revision >= Revision::V2025_03_26 {
            capabilities["completions"] = json!({});
        }
        capabilities["extensions"] = extension::advertised_by_mcpx();
        let result = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "serverInfo": envelope::MCPX,
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
        outbound: outbox::Sender,
    ) -> (
        Cancel,
        impl Future<Output = Option<Response>> + Send + 'static,
    ) {
        let cancel = Cancel::new();
        let admitted = client.admit().map(|place| {
            let target = Method::parse(&request.method)
                .and_then(|m| m.target(request.params.as_ref()))
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
        let observation = self.observer.observation(&request);
        let run = async move {
            let (_place, guard) = match admitted {
                Ok(admitted) => admitted,
                Err(refusal) => {
                    crate::metrics::refused(crate::metrics::Refusal::client_in_flight);
                    return Some(Response::error(Some(request.id), refusal));
                }
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
            if let Some(observation) = observation {
                gateway.observed(&client, observation, response.as_ref());
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
        let extensions = routing::negotiated_extensions(client, params, revision);
        let result = match method {
            Method::Ping => Ok(json!({})),
            Method::ServerDiscover => Ok(self.discover()),
            Method::SubscriptionsListen => self.listen(client, &request, ctx).await,
            Method::ResourcesUnsubscribe => self.unsubscribe(client, params),
            Method::LoggingSetLevel => self.set_log_level(client, params),
            method if method.is_catalog() => {
                self.ready.wait().await;
                // Boxed so that the request task stays small for what waits long in it (a
                // listen stream holds its task for as long as it is open).
                let catalog =
                    self.catalog_method(client, method, params, revision, extensions, ctx);
                Box::pin(catalog).await
            }
            // `initialize` is answered before this, by `handle`.
            _ => Err(not_found(name)),
        }?;
        Ok(shape::result(method, revision, extensions, result))
    }

    fn discover(&self) -> Value {
        json!({
            "supportedVersions": Revision::all_strings(),
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "completions": {},
                "extensions": extension::advertised_by_mcpx(),
            },
            "instructions": "mcpx merges the tools, prompts and resources of several MCP servers; tool and prompt names carry their server's prefix (server__name).",
        })
    }

    /// Reopens the audit log at its path (SIGHUP: logrotate moved it away).
    pub fn reopen_audit(&self) {
        self.observer.reopen_audit();
    }

    /// The metrics in the Prometheus text format; `None` when they are off.
    pub fn metrics(&self) -> Option<String> {
        self.observer.metrics()
    }

    /// The configuration file it runs with, if any.
    pub fn config_path(&self) -> Option<&str> {
        self.config_path.as_deref()
    }

    /// The merged tools, exposed names and all (for `mcpx tools`).
    pub async fn tools(&self) -> Vec<(Owner, Value)> {
        self.ready.wait().await;
        let catalog = self.catalog();
        let mut all = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let Ok(page) = catalog.page(Method::ToolsList, cursor.as_ref(), true) else {
                break;
            };
            for tool in page["tools"].as_array().into_iter().flatten() {
                let name = tool["name"].as_str().unwrap_or_default();
                if let Some(route) = catalog.tool(name) {
                    all.push((route.owner, tool.clone()));
                }
            }
            match page.member("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
        }
        all
    }

    /// The `Mcp-Param-*` headers a call of this exposed tool must carry from `client`; `None`
    /// for a tool unknown to it (whose call the core refuses anyway).
    pub async fn tool_header_params(
        &self,
        client: &Client,
        exposed: &str,
    ) -> Option<Vec<crate::mcpheaders::HeaderParam>> {
        self.ready.wait().await;
        self.catalog_of(client)
            .tool_header_params(exposed)
            .map(<[_]>::to_vec)
    }
}

fn not_found(method: &str) -> ErrorObject {
    ErrorObject::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
}
