//! The Streamable HTTP front door (`mcpx daemon`): hyper 1 serving HTTP/1.1 on the smol executor,
//! with a door per view (`/mcp`, and `/mcp/NAME` for each profile) and, beside them, health,
//! metrics and the built-in authorization server's endpoints.
//!
//! The connection machinery here knows nothing of MCP: it checks the `Origin` ([`origin`]) and
//! answers browsers' CORS preflights ([`cors`]),
//! bounds and reads the body, decides which era wrote it, and hands it to the era's handler
//! ([`modern`]); statuses come from [`status`]. For a modern request closing the stream *is* the
//! cancellation: hyper keeps reading while it answers, notices the client closing, and drops the
//! request's exchange, whose guard cancels it ([`exchange`]).

mod approval_page;
mod cors;
mod endpoints;
mod exchange;
mod forward;
mod legacy;
mod metrics_door;
mod modern;
mod options;
pub mod origin;
mod reply;
mod routes;
mod sessions;
mod sse;
pub mod status;

use crate::access::{self, Admitted, Knock};
use crate::cancel::Cancel;
use crate::gateway::{Client, Gateway, ViewId};
use crate::jsonrpc::{self, ErrorObject, Parsed, INTERNAL_ERROR, INVALID_REQUEST};
use crate::limit::{Held, Limit};
use crate::mcpheaders::PROTOCOL_VERSION_HEADER;
use crate::metrics::{self, Refusal};
use crate::outbox;
use crate::protocol::envelope;
use crate::protocol::Revision;
use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use metrics_door::Entry;
pub use metrics_door::{Entry as MetricsEntry, MetricsAccess};
pub use options::HttpOptions;
use origin::OriginPolicy;
pub use reply::Body;
use reply::{accepted, empty, json_response, plain, rpc_error, too_large};
use routes::Endpoint;
use smol::net::{TcpListener, TcpStream};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The answer to a path that is not MCP's.
const NOT_MCP: &str = "mcpx serves MCP at /mcp, and at /mcp/PROFILE for each profile\n";

/// hyper's smallest read buffer: a smaller `maxHeaderBytes` would make it panic.
const MIN_HEAD_BUFFER: usize = 8192;

/// What every connection shares.
struct FrontDoor {
    gateway: Arc<Gateway>,
    options: HttpOptions,
    origins: OriginPolicy,
    /// The gateway's view of modern HTTP clients: stateless, so one client stands for all that
    /// enter by one door (`/mcp`, `/mcp/PROFILE`).
    modern: Vec<Arc<Client>>,
    /// Legacy sessions.
    sessions: sessions::Sessions,
    connections: Arc<Limit>,
    /// The other users already logged as refused, so that each is logged once.
    strangers: std::sync::Mutex<std::collections::BTreeSet<Option<u32>>>,
}

/// Who holds the other end of a connection, as far as the door needs to know.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Caller {
    /// The daemon's own user, or anyone when the daemon has a token (the token then decides).
    Trusted,
    /// Another user of this machine (its uid), or a peer whose user the kernel could not name.
    Stranger(Option<u32>),
}

/// Serves `/mcp` on `listener` (bound with [`TcpListener::bind`]) until `shutdown` fires; then stops accepting, completes listen streams, gives
/// other requests `grace` to finish, cancels the rest and returns.
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    options: HttpOptions,
    shutdown: Cancel,
) -> std::io::Result<()> {
    tracing::info!("serving MCP at http://{}/mcp", listener.local_addr()?);
    // Modern requests carry their own notifications; nothing unsolicited goes to this sink.
    let unsolicited = outbox::Sender::nowhere();
    let door = Arc::new(FrontDoor {
        origins: OriginPolicy::new(
            &options.allowed_origins,
            &options.allowed_hosts,
            options.address,
        ),
        modern: (gateway.views().into_iter())
            .map(|view| {
                gateway.open_shared_client(crate::ledger::SHARED, view, unsolicited.clone())
            })
            .collect(),
        sessions: sessions::Sessions::new(
            Arc::clone(&gateway),
            options.max_sessions,
            options.session_idle_timeout,
            options.sealer.clone(),
        ),
        connections: Limit::new("maxConnections", options.max_connections),
        strangers: Default::default(),
        gateway,
        options,
    });
    let sweeper = {
        let door = Arc::clone(&door);
        crate::runtime::spawn(async move {
            loop {
                smol::Timer::after(door.sessions.sweep_interval()).await;
                door.sessions.sweep();
            }
        })
    };
    let (alive, all_done) = async_channel::bounded::<()>(1);
    loop {
        let accepted = smol::future::or(async { Some(listener.accept().await) }, async {
            shutdown.cancelled().await;
            None
        })
        .await;
        let (stream, peer) = match accepted {
            None => break,
            Some(Ok(accepted)) => accepted,
            Some(Err(e)) => {
                // Out of descriptors, typically: back off rather than spin.
                tracing::warn!("accept failed: {e}");
                smol::Timer::after(Duration::from_millis(50)).await;
                continue;
            }
        };
        let admitted = door.connections.take();
        let (door, alive, shutdown) = (Arc::clone(&door), alive.clone(), shutdown.clone());
        crate::runtime::spawn(async move {
            let _alive = alive;
            let caller = door.caller(&stream, peer);
            serve_connection(door, stream, caller, shutdown, admitted).await;
        })
        .detach();
    }
    tracing::info!(
        "shutting down: listen streams complete, other requests get {:?}",
        door.options.grace
    );
    for modern in &door.modern {
        modern.closing.cancel();
    }
    drop((alive, sweeper));
    let finished = smol::future::or(async { all_done.recv().await.is_err() }, async {
        smol::Timer::after(door.options.grace).await;
        false
    })
    .await;
    if !finished {
        for modern in &door.modern {
            door.gateway.live().cancel_all(modern);
        }
        let cancelled_finish = async {
            let _ = all_done.recv().await;
        };
        smol::future::or(cancelled_finish, async {
            smol::Timer::after(Duration::from_secs(1)).await;
        })
        .await;
    }
    door.sessions.end_all();
    for modern in &door.modern {
        door.gateway.close_client(modern);
    }
    Ok(())
}

/// Serves one connection; one that was not `admitted` gets its request answered 503, then is
/// closed.
async fn serve_connection(
    door: Arc<FrontDoor>,
    stream: TcpStream,
    caller: Caller,
    shutdown: Cancel,
    admitted: Option<Held>,
) {
    let HttpOptions {
        read_timeout,
        max_headers,
        max_header_bytes,
        ..
    } = door.options;
    let over_capacity = admitted.is_none();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let door = Arc::clone(&door);
        async move {
            Ok::<_, Infallible>(if over_capacity {
                door.too_many_connections()
            } else {
                door.respond(caller, request).await
            })
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(crate::deadline::HyperTimer)
        .header_read_timeout(read_timeout)
        .max_headers(max_headers)
        .max_buf_size(max_header_bytes.max(MIN_HEAD_BUFFER))
        .keep_alive(!over_capacity)
        .serve_connection(
            crate::net::hyper_io::HyperIo(crate::net::tcp::Stream::from(stream)),
            service,
        );
    let mut connection = std::pin::pin!(connection);
    let finished = smol::future::or(async { Some(connection.as_mut().await) }, async {
        shutdown.cancelled().await;
        None
    })
    .await;
    match finished {
        None => {
            // Finish the request in progress, then close instead of waiting for another.
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
        Some(Err(e)) => log_connection_error(&e),
        Some(Ok(())) => {}
    }
}

/// hyper answers what it refuses itself (431, 408, 400 for a malformed head); the log says which
/// limit was hit, as it does for the limits mcpx enforces.
fn log_connection_error(error: &hyper::Error) {
    if error.is_parse_too_large() {
        tracing::warn!("refused a request head past maxHeaders or maxHeaderBytes (431)");
    } else if error.is_timeout() {
        tracing::info!("dropped a connection slower than readTimeout");
    } else {
        tracing::debug!("connection ended: {error}");
    }
}

impl FrontDoor {
    /// Whether the connection from `peer` may be served without a token: with no token, only
    /// the daemon's own user's may (loopback is shared by every user of the machine).
    fn caller(&self, stream: &TcpStream, peer: SocketAddr) -> Caller {
        if self.options.gate.authenticates() {
            return Caller::Trusted;
        }
        let uid = stream
            .local_addr()
            .ok()
            .and_then(|local| crate::net::peer_user::uid_of(peer, local));
        match uid == Some(rustix::process::geteuid().as_raw()) {
            true => Caller::Trusted,
            false => Caller::Stranger(uid),
        }
    }

    /// The answer to another user's connection on a daemon without a token.
    fn stranger(&self, uid: Option<u32>) -> Response<Body> {
        metrics::refused(Refusal::other_user);
        let first = self
            .strangers
            .lock()
            .map(|mut seen| seen.insert(uid))
            .unwrap_or(false);
        if first {
            let who = uid.map_or("a peer whose user is unknown".into(), |u| {
                format!("uid {u}")
            });
            tracing::warn!(
                "refused {who} on the HTTP door: only this daemon's own user may call it without daemon.token (logged once per user)"
            );
        }
        rpc_error(
            StatusCode::FORBIDDEN,
            ErrorObject::new(
                INVALID_REQUEST,
                "Forbidden: this daemon serves only its own user; others need daemon.token",
            ),
        )
    }

    /// The answer on a connection past `maxConnections`.
    fn too_many_connections(&self) -> Response<Body> {
        metrics::refused(Refusal::max_connections);
        let mut refusal = rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "Service Unavailable: mcpx already holds its {} connections; retry shortly",
                    self.connections.describe()
                ),
            ),
        );
        refusal
            .headers_mut()
            .insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
        refusal
    }

    /// The modern client that stands for every modern caller at `view`'s door.
    fn modern(&self, view: ViewId) -> &Arc<Client> {
        let found = self.modern.iter().find(|c| c.view == view);
        found.unwrap_or(&self.modern[0])
    }

    /// The view a request's path enters, and its profile's name: `/mcp` sees everything,
    /// `/mcp/NAME` profile NAME; any other path is not MCP's.
    fn door<'p>(&self, path: &'p str) -> Result<(ViewId, Option<&'p str>), Box<Response<Body>>> {
        match path.strip_prefix("/mcp") {
            Some("") => Ok((ViewId::EVERYTHING, None)),
            Some(profile) if profile.starts_with('/') => {
                let name = &profile[1..];
                let view = self.gateway.profile(name).map_err(|why| {
                    Box::new(rpc_error(
                        StatusCode::NOT_FOUND,
                        ErrorObject::new(INVALID_REQUEST, format!("Not Found: {why}")),
                    ))
                })?;
                Ok((view, Some(name)))
            }
            _ => Err(Box::new(plain(StatusCode::NOT_FOUND, NOT_MCP))),
        }
    }

    /// Answers one request; an allowed browser origin may read the answer, whatever it is.
    async fn respond(&self, caller: Caller, request: Request<Incoming>) -> Response<Body> {
        let origin = (request.headers().get(header::ORIGIN))
            .filter(|origin| self.origins.allows(Some(origin.as_bytes())))
            .cloned();
        let preflight = cors::is_preflight(request.method(), request.headers());
        let mut response = self.answer(caller, request).await;
        if let (Some(origin), false) = (&origin, preflight) {
            cors::allow(&mut response, origin);
        }
        response
    }

    async fn answer(&self, caller: Caller, request: Request<Incoming>) -> Response<Body> {
        // hyper caps the buffer it reads a head into, but a head that arrives in one read is
        // parsed whole however long: this is the cap on what was parsed.
        if head_bytes(&request) > self.options.max_header_bytes {
            metrics::refused(Refusal::head_too_large);
            tracing::warn!("refused a request head past maxHeaderBytes (431)");
            return plain(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "the request's head is longer than transport.maxHeaderBytes\n",
            );
        }
        let path = request.uri().path();
        let host = request.headers().get(header::HOST).map(|v| v.as_bytes());
        if !self.origins.allows_host(host) {
            metrics::refused(Refusal::host);
            return plain(
                StatusCode::MISDIRECTED_REQUEST,
                "this daemon answers only to loopback and the hosts in transport.allowedHosts\n",
            );
        }
        let Some(endpoint) = routes::endpoint(path) else {
            return plain(StatusCode::NOT_FOUND, NOT_MCP);
        };
        // Boxed where its state is large (a client document's fetch, a webhook's
        // verification): it stays out of every other request's future.
        match endpoint {
            Endpoint::Health => self.health(caller, request.headers()),
            Endpoint::ResourceMetadata => self.resource_metadata(path, request.method()),
            Endpoint::AuthorizationServer => match self.options.gate.authorization_server() {
                Some(server) => Box::pin(self.authorization(server, request)).await,
                None => plain(StatusCode::NOT_FOUND, NOT_MCP),
            },
            Endpoint::PersonLogin => Box::pin(self.person_login(request)).await,
            Endpoint::RelayedWebhook => Box::pin(self.relayed_webhook(request)).await,
            Endpoint::ApprovalPage => {
                let server = self.options.gate.authorization_server();
                match server.filter(|s| s.has_owner_secret()) {
                    Some(server) => Box::pin(self.approval_page(server, request)).await,
                    None => plain(StatusCode::NOT_FOUND, NOT_MCP),
                }
            }
            Endpoint::Metrics if !self.options.metrics => plain(StatusCode::NOT_FOUND, NOT_MCP),
            Endpoint::Metrics => {
                let authorization = request.headers().get(header::AUTHORIZATION);
                match self.options.metrics_access.entry(authorization.map(|v| v.as_bytes())) {
                    Entry::Open => self.metrics(request.method()),
                    Entry::AsMcp => self.mcp_door(caller, request, Endpoint::Metrics).await,
                    Entry::Unauthorized => {
                        let mut refusal = plain(StatusCode::UNAUTHORIZED, "/metrics needs [daemon] metricsToken as its bearer token\n");
                        let bearer = http::HeaderValue::from_static("Bearer realm=\"metrics\"");
                        refusal.headers_mut().insert(header::WWW_AUTHENTICATE, bearer);
                        refusal
                    }
                    Entry::Closed => plain(StatusCode::FORBIDDEN, "/metrics is closed on a daemon that admits a team: set [daemon] metricsToken and scrape with it\n"),
                }
            }
            Endpoint::Mcp => self.mcp_door(caller, request, Endpoint::Mcp).await,
        }
    }

    /// `request` through the MCP door's admission: the caller's proof, the Origin rules and
    /// its profile's door; then `endpoint` answers it (`/mcp`, or `/metrics` where it is
    /// admitted as the MCP door is).
    async fn mcp_door(
        &self,
        caller: Caller,
        request: Request<Incoming>,
        endpoint: Endpoint,
    ) -> Response<Body> {
        let path = request.uri().path();
        let metrics = endpoint == Endpoint::Metrics;
        if let Caller::Stranger(uid) = caller {
            return self.stranger(uid);
        }
        // A browser sends its preflight without credentials: it is answered before the token.
        if cors::is_preflight(request.method(), request.headers()) {
            let origin = (request.headers().get(header::ORIGIN))
                .filter(|origin| self.origins.allows(Some(origin.as_bytes())));
            return cors::preflight(origin, request.headers());
        }
        let origin = request.headers().get(header::ORIGIN).map(|v| v.as_bytes());
        if !self.origins.allows(origin) {
            metrics::refused(Refusal::origin);
            return rpc_error(
                StatusCode::FORBIDDEN,
                ErrorObject::new(INVALID_REQUEST, "Forbidden: this Origin is not allowed"),
            );
        }
        // Known profiles are named only to who passed the credentials and Origin checks.
        let (view, profile) = match self.door(path) {
            Ok(door) => door,
            Err(_) if metrics => (ViewId::EVERYTHING, None),
            Err(not_found) => return *not_found,
        };
        let knock = Knock {
            door: if metrics { "/mcp" } else { path },
            profile,
            authorization: request
                .headers()
                .get(header::AUTHORIZATION)
                .map(|v| v.as_bytes()),
            query: request.uri().query(),
        };
        let admitted = match self.options.gate.admit(knock).await {
            Ok(admitted) => admitted,
            Err(refusal) => return refused(refusal),
        };
        if metrics {
            return self.metrics(request.method());
        }
        let view = self.gateway.narrowed(view, admitted.rule);
        match *request.method() {
            Method::POST => self.post(view, request, &admitted).await,
            Method::GET => legacy::get(self, view, request.headers(), &admitted.identity).await,
            Method::DELETE => {
                let (path, headers) = (request.uri().path(), request.headers());
                legacy::delete(self, view, path, headers, &admitted.identity)
            }
            _ => legacy::method_not_allowed(
                "/mcp takes POST, and GET and DELETE for legacy sessions",
            ),
        }
    }

    async fn post(
        &self,
        view: ViewId,
        request: Request<Incoming>,
        admitted: &Admitted,
    ) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let limit = self.options.max_message_bytes;
        let bytes = match self.read_body(&parts.headers, body, limit).await {
            Ok(bytes) => bytes,
            Err(refusal) => return *refusal,
        };
        metrics::received(metrics::Door::http, bytes.len());
        let mut body = match jsonrpc::read(&bytes) {
            Ok(body) => body,
            Err(e) => return json_response(StatusCode::BAD_REQUEST, &jsonrpc::parse_error(e)),
        };
        crate::telemetry::adopt_headers(&parts.headers, &mut body);
        // Judged on the tool each call reaches, by whatever name or route it was sent.
        if self.options.gate.has_step_up() {
            for tool in self.gateway.called_tools(view, &body).await {
                if let Some(refusal) = self.options.gate.step_up(admitted, parts.uri.path(), &tool)
                {
                    return refused(refusal);
                }
            }
        }
        let caller = Arc::clone(&admitted.identity);
        if is_modern(&parts.headers, &body) {
            modern::post(self, view, parts.uri.path(), &parts.headers, body, caller).await
        } else {
            legacy::post(self, view, parts.uri.path(), &parts.headers, body, caller).await
        }
    }
}

impl FrontDoor {
    /// A request's body, whole: at most `limit` bytes, within the read timeout. Inlined: it is
    /// on every call's path (as it was, written out in `post`, before the authorization server
    /// needed it too).
    #[inline]
    async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Incoming,
        limit: usize,
    ) -> Result<Bytes, Box<Response<Body>>> {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|length| length > limit as u64) {
            // Refused before a byte of the body is read; hyper then closes the connection.
            return Err(Box::new(too_large(limit)));
        }
        let collected = smol::future::or(
            async { Some(Limited::new(body, limit).collect().await) },
            async {
                crate::deadline::sleep(self.options.read_timeout).await;
                None
            },
        )
        .await;
        match collected {
            None => Err(Box::new(plain(
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive in time\n",
            ))),
            Some(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                Err(Box::new(too_large(limit)))
            }
            Some(Err(_)) => Err(Box::new(plain(
                StatusCode::BAD_REQUEST,
                "the request body could not be read\n",
            ))),
            Some(Ok(collected)) => Ok(collected.to_bytes()),
        }
    }
}

/// The answer to a request the gate refused, counted by its reason.
fn refused(refusal: access::Refusal) -> Response<Body> {
    metrics::auth_failed(refusal.reason);
    let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::UNAUTHORIZED);
    if status == StatusCode::UNAUTHORIZED {
        metrics::refused(Refusal::token);
    }
    let mut response = rpc_error(status, ErrorObject::new(INVALID_REQUEST, refusal.message));
    let challenge = refusal
        .challenge
        .and_then(|c| http::HeaderValue::try_from(c).ok());
    if let Some(challenge) = challenge {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        let retry = http::HeaderValue::from_static("5");
        response.headers_mut().insert(header::RETRY_AFTER, retry);
    }
    response
}

/// A POST is modern if its body names a protocol version in `_meta`, or its header names a
/// revision at or after 2026-07-28 (a later one mcpx does not know still counts: it gets
/// -32022 rather than being mistaken for legacy).
fn is_modern(headers: &HeaderMap, body: &Parsed) -> bool {
    let body_says = envelope::declared_version(body.params()).is_some();
    let header_says = headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| Revision::date_is_modern(v.trim()));
    body_says || header_says
}

/// How long a request's head was on the wire, near enough: its request line and each field
/// with its `: ` and CRLF.
fn head_bytes(request: &Request<Incoming>) -> usize {
    let target = request
        .uri()
        .path_and_query()
        .map_or(1, |p| p.as_str().len());
    let line = request.method().as_str().len() + target + 11;
    let fields: usize = (request.headers().iter())
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    line + fields
}
