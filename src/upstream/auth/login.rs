//! A login: the authorization code flow with PKCE, run once by a person (`mcpx auth login`).
//!
//! The server's challenge and metadata say where to go ([`super::discovery`]); mcpx identifies
//! itself as configured (`[servers.NAME.oauth] clientId`), else by its client metadata document
//! (`clientMetadataUrl`, where the authorization server takes one), else by registering itself
//! (RFC 7591). The browser opens the authorization URL (`$BROWSER`, else `xdg-open`; the URL is
//! printed too, for a session over SSH), the code comes back to a loopback redirect on a port
//! chosen for this login (RFC 8252), its `state` and `iss` (RFC 9207) are checked, and the code is
//! exchanged for tokens bound to the server by RFC 8707's `resource`.

use super::authorize::Flow;
use super::discovery::{self, parse_challenge, AuthServer, Challenge};
use super::store::{Credential, Registration};
use crate::config::ServerSettings;
use crate::json::Member;
use crate::mcpheaders;
use crate::net::client::fetch;
use http::{HeaderMap, Method};
use serde_json::{json, Value};
use smol::io::{AsyncWriteExt, BufReader};
use std::collections::BTreeMap;
use std::time::Duration;
use url::Url;

/// How long the person may take to log in.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// How long one connection to the redirect listener may take to send its request line, and
/// how long that line may be: another local process holding a connection open, or writing
/// without end, must not stall or bloat the login.
const REDIRECT_PATIENCE: Duration = Duration::from_secs(5);
const MAX_REDIRECT_LINE: usize = 16 * 1024;

/// What the server says when asked without a token: its challenge, if it refuses (`None` when
/// it lets mcpx in, or answers neither 401 nor a Bearer challenge). Asked as
/// mcpx's client asks, in both eras (a 2026-07-28 server refuses `initialize` as a bad request
/// before it looks for a token, a legacy one refuses `server/discover`), then as an HTTP+SSE
/// client opens its stream.
pub async fn probe(server_url: &str) -> Result<Option<Challenge>, String> {
    use crate::protocol::{envelope, Method as McpMethod, Revision};
    let modern = json!({"jsonrpc": "2.0", "id": 0, "method": McpMethod::ServerDiscover.as_str(),
        "params": envelope::wrap(None)});
    let legacy = json!({"jsonrpc": "2.0", "id": 0, "method": McpMethod::Initialize.as_str(),
        "params": crate::upstream::client::initialize_params()});
    for (message, version) in [
        (modern, Some(Revision::V2026_07_28.as_str())),
        (legacy, None),
    ] {
        let mut headers = HeaderMap::new();
        let accept = http::HeaderValue::from_static("application/json, text/event-stream");
        headers.insert(http::header::ACCEPT, accept);
        if let Some(version) = version {
            let version = http::HeaderValue::from_static(version);
            headers.insert(mcpheaders::PROTOCOL_VERSION_HEADER, version);
            let method = http::HeaderValue::from_static(McpMethod::ServerDiscover.as_str());
            headers.insert(mcpheaders::METHOD_HEADER, method);
        }
        let answer = fetch(
            Method::POST,
            server_url,
            headers,
            Some(("application/json", message.to_string())),
        )
        .await?;
        let header = answer
            .headers
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok());
        tracing::debug!(status = %answer.status, ?header, "the server's answer without a token");
        if let Some(found) = header.and_then(parse_challenge) {
            return Ok(Some(found));
        }
        if answer.status == http::StatusCode::UNAUTHORIZED {
            return Ok(Some(Challenge::default()));
        }
    }
    stream_challenge(server_url).await
}

/// What an HTTP+SSE server answers the GET of its event stream without a token: it may take
/// POSTs only at the endpoint the stream names. Only the head is read; a stream that opens is
/// closed at once.
async fn stream_challenge(server_url: &str) -> Result<Option<Challenge>, String> {
    let uri = server_url
        .parse()
        .map_err(|e| format!("{server_url:?} is not a URL: {e}"))?;
    let pool = crate::net::client::Pool::new(uri, HeaderMap::new());
    let mut headers = HeaderMap::new();
    let stream = http::HeaderValue::from_static("text/event-stream");
    headers.insert(http::header::ACCEPT, stream);
    let mut request = pool.build(Method::GET, String::new(), headers)?;
    request.headers_mut().remove(http::header::CONTENT_TYPE);
    let mut sender = pool.detached().await?;
    let answer = sender
        .send_request(request)
        .await
        .map_err(|e| format!("{server_url}: {e}"))?;
    let header = answer
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok());
    Ok(match (header.and_then(parse_challenge), answer.status()) {
        (Some(found), _) => Some(found),
        (None, http::StatusCode::UNAUTHORIZED) => Some(Challenge::default()),
        (None, _) => None,
    })
}

/// The start of one person's login to the server `name`, whose browser comes back to
/// `redirect_uri` (mcpx's public callback) rather than to a loopback listener: the URL to send
/// the person to, and the flow their redirect finishes. mcpx introduces itself as configured,
/// else by a registration for that redirect in `registered` (by issuer), else by registering
/// now: that registration is returned too, for the caller to keep for the next person.
pub async fn begin_elsewhere(
    name: &str,
    server: ServerSettings<'_>,
    previous: Option<&Credential>,
    redirect_uri: &str,
    registered: &BTreeMap<String, Registration>,
) -> Result<(Url, Flow, Option<(String, Registration)>), String> {
    let server_url = server.remote_url().ok_or("only a `url` server logs in")?;
    let challenge = probe(server_url).await?.unwrap_or_default();
    let discovered = discovery::discover(server_url, &challenge).await?;
    let auth = &discovered.auth;
    trustworthy(auth)?;
    let (client, made) = match Introduction::of(server).known_client(auth) {
        Some(client) => (client, None),
        None => match registered.get(&auth.issuer) {
            Some(registration) if registration.redirect_uri == redirect_uri => {
                (registration.as_client(), None)
            }
            _ => {
                let registration = register(name, auth, redirect_uri).await?;
                let client = registration.as_client();
                (client, Some((auth.issuer.clone(), registration)))
            }
        },
    };
    let redirect_uri = redirect_uri.to_owned();
    let (authorize, flow) = Flow::begin(
        server.config,
        &challenge,
        &discovered,
        previous,
        client,
        redirect_uri,
    )?;
    Ok((authorize, flow, made))
}

/// Logs in to the server `name`, opening `authorization URL`s with `open`; returns the tokens.
/// `challenge` is what the server answered (its scope decides what is asked for).
pub async fn login(
    name: &str,
    server: ServerSettings<'_>,
    challenge: &Challenge,
    previous: Option<&Credential>,
    open: impl Fn(&str),
) -> Result<Credential, String> {
    let server_url = server.remote_url().ok_or("only a `url` server logs in")?;
    let discovered = discovery::discover(server_url, challenge).await?;
    let auth = &discovered.auth;
    trustworthy(auth)?;
    let introduction = Introduction::of(server);
    let registered = previous.and_then(|p| p.registrations.get(&auth.issuer));
    let (listener, redirect_uri, client) = match introduction.known_client(auth) {
        Some(client) => {
            let (listener, redirect_uri) = redirect_listener(0).await?;
            (listener, redirect_uri, client)
        }
        None => match reusable(registered).await {
            Some((listener, registration)) => {
                let redirect_uri = registration.redirect_uri.clone();
                (listener, redirect_uri, registration.as_client())
            }
            None => {
                let (listener, redirect_uri) = redirect_listener(0).await?;
                let registration = register(name, auth, &redirect_uri).await?;
                (listener, redirect_uri, registration.as_client())
            }
        },
    };
    let (authorize, flow) = Flow::begin(
        server.config,
        challenge,
        &discovered,
        previous,
        client,
        redirect_uri,
    )?;
    open(authorize.as_str());
    let callback = smol::future::or(wait_for_callback(&listener), async {
        smol::Timer::after(LOGIN_TIMEOUT).await;
        Err(format!("no login within {LOGIN_TIMEOUT:?}"))
    })
    .await?;
    flow.finish(&callback).await
}

/// How mcpx introduces itself to authorization servers, as `[servers.NAME.oauth]` says.
#[derive(Clone, Default)]
pub struct Introduction {
    /// A client id registered beforehand, and its secret.
    client_id: Option<String>,
    client_secret: Option<String>,
    /// mcpx's client metadata document, for servers that take one as a client id.
    metadata_url: Option<String>,
}

impl std::fmt::Debug for Introduction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never printed.
        f.debug_struct("Introduction")
            .field("client_id", &self.client_id)
            .field("metadata_url", &self.metadata_url)
            .finish_non_exhaustive()
    }
}

impl Introduction {
    /// What the server's configuration says.
    pub fn of(server: ServerSettings<'_>) -> Introduction {
        let oauth = server.oauth.clone().unwrap_or_default();
        Introduction {
            client_id: oauth.client_id,
            client_secret: server.expanded.client_secret.clone(),
            metadata_url: oauth.client_metadata_url,
        }
    }

    /// The client mcpx is to `auth` without registering: pre-registered, or a metadata
    /// document's URL where `auth` takes one. `None` when it must register (RFC 7591).
    fn known_client(&self, auth: &AuthServer) -> Option<Credential> {
        if let Some(client_id) = &self.client_id {
            let method = match &self.client_secret {
                None => "none",
                // RFC 8414: basic is the default when the server lists nothing.
                Some(_)
                    if auth.token_auth_methods.is_empty()
                        || auth
                            .token_auth_methods
                            .iter()
                            .any(|m| m == "client_secret_basic") =>
                {
                    "client_secret_basic"
                }
                Some(_) => "client_secret_post",
            };
            return Some(Credential {
                client_id: client_id.clone(),
                client_secret: self.client_secret.clone(),
                token_auth_method: method.into(),
                ..Credential::default()
            });
        }
        match (&self.metadata_url, auth.client_id_metadata_documents) {
            (Some(url), true) => Some(Credential {
                client_id: url.clone(),
                token_auth_method: "none".into(),
                ..Credential::default()
            }),
            _ => None,
        }
    }
}

/// Registers mcpx at `auth` now for a login later, where that login would have to register:
/// what a server's move to another authorization server asks (SEP-2352) of a client that keeps
/// running without a person. The redirect registered is a loopback port free now, which the
/// login binds again. `None` when mcpx needs no registration there.
pub async fn register_ahead(
    name: &str,
    introduction: &Introduction,
    auth: &AuthServer,
) -> Result<Option<Registration>, String> {
    trustworthy(auth)?;
    if introduction.known_client(auth).is_some() {
        return Ok(None);
    }
    let (listener, redirect_uri) = redirect_listener(0).await?;
    drop(listener);
    register(name, auth, &redirect_uri).await.map(Some)
}

/// A listener for the login's redirect on loopback `port` (0: any), and its URI.
async fn redirect_listener(port: u16) -> Result<(smol::net::TcpListener, String), String> {
    let listener = smol::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen for the redirect: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    Ok((listener, format!("http://127.0.0.1:{port}/callback")))
}

/// A registration made ahead, with its redirect's port bound again; `None` when there is none,
/// or its port is taken now (a new registration is made then).
async fn reusable(
    registered: Option<&Registration>,
) -> Option<(smol::net::TcpListener, &Registration)> {
    let registration = registered?;
    let port = Url::parse(&registration.redirect_uri).ok()?.port()?;
    let (listener, uri) = redirect_listener(port).await.ok()?;
    (uri == registration.redirect_uri).then_some((listener, registration))
}

/// Registers mcpx at `auth` (RFC 7591) as a native client redirected to `redirect_uri`.
async fn register(
    name: &str,
    auth: &AuthServer,
    redirect_uri: &str,
) -> Result<Registration, String> {
    let Some(endpoint) = &auth.registration_endpoint else {
        return Err(format!(
            "the authorization server {} offers no client registration: set [servers.{name}.oauth] clientId",
            auth.issuer
        ));
    };
    // A loopback redirect is a native client's (RFC 8252); mcpx's public URL is a web one's.
    let loopback = redirect_uri.starts_with("http://127.0.0.1:");
    let request = json!({
        "client_name": "mcpx",
        "application_type": if loopback { "native" } else { "web" },
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let answer = fetch(
        Method::POST,
        endpoint,
        HeaderMap::new(),
        Some(("application/json", request.to_string())),
    )
    .await?;
    let registered: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if !answer.status.is_success() {
        return Err(format!(
            "registering at {endpoint} failed: {}",
            answer.status
        ));
    }
    let text = |key: &str| {
        registered
            .member(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(Registration {
        client_id: text("client_id").ok_or("the registration answer has no client_id")?,
        client_secret: text("client_secret"),
        token_auth_method: text("token_endpoint_auth_method").unwrap_or_else(|| "none".into()),
        redirect_uri: redirect_uri.to_owned(),
    })
}

/// The query of the first request to `/callback`, answered with a page for the person.
async fn wait_for_callback(listener: &smol::net::TcpListener) -> Result<Url, String> {
    let (found, callback) = async_channel::bounded(1);
    // Each connection is read in a task of its own, within its patience: none can hold up the
    // browser's.
    let accepting = async {
        loop {
            let (stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
            let found = found.clone();
            crate::runtime::spawn(async move {
                let read = smol::future::or(read_redirect(stream), async {
                    smol::Timer::after(REDIRECT_PATIENCE).await;
                    None
                });
                if let Some(url) = read.await {
                    let _ = found.try_send(url);
                }
            })
            .detach();
        }
    };
    smol::future::or(accepting, async {
        callback.recv().await.map_err(|e| e.to_string())
    })
    .await
}

/// One connection to the redirect listener: the callback URL it carries, if it is one.
async fn read_redirect(stream: smol::net::TcpStream) -> Option<Url> {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    match crate::lines::read_line(&mut reader, &mut line, MAX_REDIRECT_LINE, |_| {}).await {
        crate::lines::Read::Line => {}
        _ => return None,
    }
    let line = String::from_utf8_lossy(&line);
    let target = line.split_whitespace().nth(1).unwrap_or_default();
    let url = Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    let mut stream = reader.into_inner();
    if url.path() != "/callback" {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return None;
    }
    let page =
        "<!doctype html><title>mcpx</title><p>mcpx has the answer: you can close this tab.</p>";
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    Some(url)
}

/// Refuses an authorization server the specification says a client must not use: one whose
/// metadata does not say it offers PKCE with S256 (`code_challenge_methods_supported` is a MUST),
/// or whose endpoints are not HTTPS, unless on loopback (a code or a token would cross the
/// network in the clear).
fn trustworthy(auth: &AuthServer) -> Result<(), String> {
    match &auth.code_challenge_methods {
        Some(methods) if methods.iter().any(|m| m == "S256") => {}
        Some(_) => {
            return Err(format!(
                "the authorization server {} does not offer PKCE with S256: refusing to log in",
                auth.issuer
            ))
        }
        None => {
            return Err(format!(
                "the authorization server {}'s metadata lacks code_challenge_methods_supported, so it cannot be known to offer PKCE: refusing to log in",
                auth.issuer
            ))
        }
    }
    let endpoints = [
        ("authorization_endpoint", Some(&auth.authorization_endpoint)),
        ("token_endpoint", Some(&auth.token_endpoint)),
        ("registration_endpoint", auth.registration_endpoint.as_ref()),
        ("revocation_endpoint", auth.revocation_endpoint.as_ref()),
    ];
    for (name, endpoint) in endpoints {
        let Some(endpoint) = endpoint else { continue };
        let url = Url::parse(endpoint).map_err(|e| format!("{name} {endpoint:?}: {e}"))?;
        let loopback = match url.host() {
            Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        if url.scheme() != "https" && !loopback {
            return Err(format!(
                "the authorization server {}'s {name} {endpoint:?} is not HTTPS: refusing to log in",
                auth.issuer
            ));
        }
    }
    Ok(())
}

/// Opens `url` in the person's browser (`$BROWSER`, else `xdg-open`), and prints it to stderr
/// for when no browser can open here.
pub fn open_in_browser(url: &str) {
    eprintln!("Open this URL to log in:\n  {url}");
    let browser = std::env::var("BROWSER").unwrap_or_else(|_| "xdg-open".into());
    let opened = std::process::Command::new("sh")
        .args(["-c", &format!("{browser} \"$1\""), "mcpx-browser", url])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn();
    if let Err(e) = opened {
        eprintln!("(could not start a browser: {e})");
    }
}
