//! HTTP/1.1 connections to one remote server, knowing nothing of MCP: TCP or TLS (rustls with
//! the Mozilla roots), hyper's client on smol, requests built with the server's configured
//! headers, and a pool of kept-alive connections that the request using one drives itself.

use crate::net::hyper_io::HyperIo;
use crate::net::tcp::Stream as TcpStream;
use crate::sync::lock;
use bytes::Bytes;
use http::{HeaderMap, Method, Uri};
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

/// The sending half of a connection.
pub type Sender = SendRequest<Full<Bytes>>;
type Driver = hyper::client::conn::http1::Connection<HyperIo<Io>, Full<Bytes>>;

/// How long connecting and the handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes [`fetch`] reads of a body: metadata and token responses are small.
const MAX_FETCHED: usize = 1024 * 1024;

/// What [`fetch`] brought back.
#[derive(Debug)]
pub struct Fetched {
    /// The status.
    pub status: http::StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

/// One request to `url` on a connection of its own, its body read whole: the authorization
/// flow's metadata, registration and token requests, to servers other than the endpoint.
/// Redirects are not followed.
pub async fn fetch(
    method: Method,
    url: &str,
    headers: HeaderMap,
    body: Option<(&'static str, String)>,
) -> Result<Fetched, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    fetch_at(Pool::new(uri, headers), method, body, None, MAX_FETCHED).await
}

/// A `GET` of a document a stranger names by its URL (a client's metadata, its keys): over
/// HTTPS on port 443 only, to a host whose every address is public (a private, loopback or
/// link-local one is refused, so that the name cannot aim mcpx at the network behind it), on
/// the address checked (resolved once), redirects not followed, at most `max_bytes` read.
pub async fn fetch_public(url: &str, max_bytes: usize) -> Result<Fetched, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("https") || uri.port_u16().is_some_and(|p| p != 443) {
        return Err(format!("{url} is not an https:// URL on port 443"));
    }
    let host = uri.host().unwrap_or_default();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let (address, _) = resolve_checked(&host, 443, false).await?;
    let pool = Pool::new(uri, HeaderMap::new());
    fetch_at(pool, Method::GET, None, Some(address), max_bytes).await
}

/// A `POST` of `body` (JSON) with `headers` to a callback a stranger names by its URL (an
/// event subscription's webhook): over HTTPS to a host whose every address is public, on the
/// address checked, redirects not followed, at most `max_bytes` of the answer read. With
/// `loopback_ok`, an `http://` URL on loopback is taken too (tests, agents on this machine).
pub async fn post_to_callback(
    url: &str,
    headers: HeaderMap,
    body: String,
    loopback_ok: bool,
    max_bytes: usize,
) -> Result<Fetched, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let host = uri.host().unwrap_or_default();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let https = uri.scheme_str() == Some("https");
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let (address, loopback) = resolve_checked(&host, port, loopback_ok).await?;
    let plain_loopback = loopback && loopback_ok;
    if !(https || plain_loopback) {
        return Err(format!("{url} is not an https:// URL"));
    }
    let pool = Pool::new(uri, headers);
    let body = Some(("application/json", body));
    fetch_at(pool, Method::POST, body, Some(address), max_bytes).await
}

/// The address of `host` at `port` to connect to, and whether it is loopback's: every address
/// it resolves to must be public (so that a name cannot aim mcpx at the network behind it),
/// unless `loopback_ok` and every one is loopback's.
async fn resolve_checked(
    host: &str,
    port: u16,
    loopback_ok: bool,
) -> Result<(std::net::SocketAddr, bool), String> {
    let addresses: Vec<std::net::SocketAddr> = smol::net::resolve((host, port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let loopback = !addresses.is_empty() && addresses.iter().all(|a| a.ip().is_loopback());
    if !(loopback && loopback_ok) {
        if let Some(private) = addresses.iter().find(|a| !super::public::is_public(a.ip())) {
            return Err(format!(
                "{host} resolves to {}, which is not a public address",
                private.ip()
            ));
        }
    }
    let address = *addresses
        .first()
        .ok_or_else(|| format!("{host} has no address"))?;
    Ok((address, loopback))
}

/// One request on a connection of its own (to `address` when given, else to the URL's host).
async fn fetch_at(
    pool: Pool,
    method: Method,
    body: Option<(&'static str, String)>,
    address: Option<std::net::SocketAddr>,
    max_bytes: usize,
) -> Result<Fetched, String> {
    use http_body_util::{BodyExt, Limited};
    let url = pool.uri.to_string();
    let (content_type, body) = body.unwrap_or(("application/json", String::new()));
    let mut request = pool.build(method, body, HeaderMap::new())?;
    let value = http::HeaderValue::from_static(content_type);
    request
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, value);
    if !pool.headers.contains_key(http::header::ACCEPT) {
        let json = http::HeaderValue::from_static("application/json");
        request.headers_mut().insert(http::header::ACCEPT, json);
    }
    let mut sender = Box::pin(open(&pool.uri, address)).await?.detach();
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, max_bytes)
        .collect()
        .await
        .map_err(|e| format!("{url}: reading the answer failed: {e}"))?
        .to_bytes();
    Ok(Fetched {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// Kept-alive connections to one server's endpoint, and the requests built for it.
pub struct Pool {
    uri: Uri,
    /// What every request names: the endpoint's path and query, and its `Host`, parsed once.
    target: Result<(Uri, http::HeaderValue), String>,
    /// The configured headers (secrets among them: never printed).
    headers: HeaderMap,
    idle: Mutex<Vec<KeptConnection>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The headers may hold secrets: never printed.
        f.debug_struct("Pool")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool for the endpoint `uri`, whose requests carry `headers`.
    pub fn new(uri: Uri, headers: HeaderMap) -> Pool {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let host = uri.authority().map_or("", |a| a.as_str());
        let target = match (path.parse(), http::HeaderValue::try_from(host)) {
            (Ok(path), Ok(host)) => Ok((path, host)),
            _ => Err(format!(
                "{} cannot be requested over HTTP/1.1",
                crate::redact::url_shown(&uri.to_string())
            )),
        };
        Pool {
            uri,
            target,
            headers,
            idle: Mutex::default(),
        }
    }

    /// A pool for another endpoint of the same server, with the same headers.
    pub fn at(&self, uri: Uri) -> Pool {
        Pool::new(uri, self.headers.clone())
    }

    /// Whether the configured headers carry an `Authorization` of their own.
    pub fn carries_authorization(&self) -> bool {
        self.headers.contains_key(http::header::AUTHORIZATION)
    }

    /// The endpoint.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// A request to the endpoint with `extra`, then the configured headers, then the defaults,
    /// each only where the one before named none (a TOML table names each header once). `extra`
    /// becomes the request's own map: no second map is built and merged per request.
    pub fn build(
        &self,
        method: Method,
        body: impl Into<Bytes>,
        extra: HeaderMap,
    ) -> Result<http::Request<Full<Bytes>>, String> {
        use http::header::{ACCEPT, CONTENT_TYPE, HOST};
        use http::HeaderValue;
        let (path, host) = self.target.clone()?;
        let mut request = http::Request::new(Full::new(body.into()));
        *request.method_mut() = method;
        *request.uri_mut() = path;
        *request.headers_mut() = extra;
        let headers = request.headers_mut();
        for (name, value) in &self.headers {
            headers.entry(name).or_insert_with(|| value.clone());
        }
        headers.entry(HOST).or_insert(host);
        let json = HeaderValue::from_static("application/json");
        headers.entry(CONTENT_TYPE).or_insert(json);
        let accept = HeaderValue::from_static("application/json, text/event-stream");
        headers.entry(ACCEPT).or_insert(accept);
        Ok(request)
    }

    /// Sends `request` on a ready connection. One the server closed while it idled in the pool
    /// gives the request back unsent, and it goes again on a new connection. The link comes
    /// back with the response: its body is read by driving it, then it is recycled.
    pub async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<(KeptConnection, http::Response<hyper::body::Incoming>), String> {
        let mut link = self.link().await?;
        let mut sending = link
            .drive(async |sender| sender.try_send_request(request).await)
            .await;
        if let Err(returned) = &mut sending {
            if let Some(request) = returned.take_message() {
                link = connect(&self.uri).await?;
                sending = link
                    .drive(async |sender| sender.try_send_request(request).await)
                    .await;
            }
        }
        match sending {
            Ok(response) => Ok((link, response)),
            Err(e) => Err(format!("the request failed: {}", e.into_error())),
        }
    }

    /// A connection of its own, driven in a task of its own: for a long stream, or a one-off
    /// request from a background task.
    pub async fn detached(&self) -> Result<Sender, String> {
        Ok(connect(&self.uri).await?.detach())
    }

    /// A ready connection from the pool, or a new one.
    async fn link(&self) -> Result<KeptConnection, String> {
        loop {
            let pooled = lock(&self.idle).pop();
            match pooled {
                Some(mut link) => {
                    if link.ready().await {
                        return Ok(link);
                    }
                }
                None => return connect(&self.uri).await,
            }
        }
    }

    /// Puts a connection whose exchange is over back in the pool, if it is still open.
    pub fn recycle(&self, link: KeptConnection) {
        if link.is_open() {
            lock(&self.idle).push(link);
        }
    }

    /// Closes every idle connection.
    pub fn clear(&self) {
        lock(&self.idle).clear();
    }
}

/// A connection to the server: plain TCP or TLS.
enum Io {
    Plain(TcpStream),
    Tls(Box<futures_rustls::client::TlsStream<TcpStream>>),
}

impl smol::io::AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl smol::io::AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_close(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}

fn tls_config() -> Arc<futures_rustls::rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<futures_rustls::rustls::ClientConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let roots = futures_rustls::rustls::RootCertStore::from_iter(
            webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
        );
        let provider = Arc::new(futures_rustls::rustls::crypto::ring::default_provider());
        let config = futures_rustls::rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| b.with_root_certificates(roots).with_no_client_auth());
        // The ring provider supports the default versions; a failure here is a build defect.
        Arc::new(config.unwrap_or_else(|e| panic!("rustls configuration: {e}")))
    }))
}

/// One kept-alive HTTP/1.1 connection, driven by the task whose request it carries and unpolled
/// while it idles in the pool. hyper's usual design drives each connection in a task of its own,
/// which hands every request, response and body frame across tasks (and, on a busy machine,
/// threads): that cost most of the remote hop's latency.
pub struct KeptConnection {
    sender: Sender,
    /// `None` once the connection ended.
    driver: Option<Driver>,
    /// Makes the socket's next read ask the kernel: see [`KeptConnection::ready`].
    recheck: crate::net::tcp::Recheck,
}

impl KeptConnection {
    /// Runs `work` (given the link's sender) while driving the connection in this same task.
    pub async fn drive<T>(&mut self, work: impl AsyncFnOnce(&mut Sender) -> T) -> T {
        let KeptConnection { sender, driver, .. } = self;
        let mut work = pin!(work(sender));
        poll_fn(move |cx| loop {
            if let Poll::Ready(out) = work.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            match driver.as_mut().map(|d| Pin::new(d).poll(cx)) {
                // The connection ended: the work hears of it when polled again.
                Some(Poll::Ready(_)) => *driver = None,
                _ => return Poll::Pending,
            }
        })
        .await
    }

    /// Whether it can carry a request (the server may have closed it while it idled). The
    /// close shows when the driver next reads, which it does before writing a request: that
    /// read must ask the kernel, since the reactor reported the close (if it has yet) to the
    /// task that last used the link, and a request written to a closed connection is lost
    /// where one still queued is given back to go on another.
    async fn ready(&mut self) -> bool {
        self.recheck.request();
        self.is_open()
            && self
                .drive(async |sender| sender.ready().await.is_ok())
                .await
    }

    fn is_open(&self) -> bool {
        self.driver.is_some() && !self.sender.is_closed()
    }

    /// Hands the connection to a task of its own: for a long stream, or a one-off request.
    fn detach(self) -> Sender {
        if let Some(driver) = self.driver {
            crate::runtime::spawn(async move {
                let _ = driver.await;
            })
            .detach();
        }
        self.sender
    }
}

/// Opens an HTTP/1.1 connection (TLS for https). Boxed: a TLS handshake's state is kilobytes,
/// and every request's future, which rarely connects, would otherwise carry (and copy) it.
fn connect(uri: &Uri) -> Pin<Box<dyn Future<Output = Result<KeptConnection, String>> + Send + '_>> {
    Box::pin(open(uri, None))
}

/// Opens a connection to `uri`'s host, at `address` when it was resolved and checked already.
async fn open(uri: &Uri, address: Option<std::net::SocketAddr>) -> Result<KeptConnection, String> {
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let tls = uri.scheme_str() == Some("https");
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let connecting = async {
        let tcp = match address {
            Some(address) => TcpStream::connect(address).await,
            None => TcpStream::connect((host.as_str(), port)).await,
        }
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
        let recheck = tcp.recheck();
        let io = if tls {
            let name = futures_rustls::rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| format!("{host}: {e}"))?;
            let stream = futures_rustls::TlsConnector::from(tls_config())
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {host}: {e}"))?;
            Io::Tls(Box::new(stream))
        } else {
            Io::Plain(tcp)
        };
        let (sender, driver) = hyper::client::conn::http1::handshake(HyperIo(io))
            .await
            .map_err(|e| format!("HTTP with {host}: {e}"))?;
        Ok(KeptConnection {
            sender,
            driver: Some(driver),
            recheck,
        })
    };
    smol::future::or(connecting, async {
        smol::Timer::after(CONNECT_TIMEOUT).await;
        Err(format!(
            "connecting to {host}:{port} took longer than {CONNECT_TIMEOUT:?}"
        ))
    })
    .await
}
