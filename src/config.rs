//! The one configuration file: `$XDG_CONFIG_HOME/mcpx/config.toml` unless `--config` names another.
//!
//! Every key has a default, so mcpx runs with no file at all. A file that does not parse or names
//! an impossible upstream is an error that names the file, the line and the key, and mcpx does not
//! start: a gateway that silently drops half its servers is worse than one that refuses.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name of the built-in server, which no configured server may take.
pub const BUILTIN_SERVER: &str = "mcpx";

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The HTTP daemon.
    pub daemon: Daemon,
    /// Transport behaviour shared by stdio and HTTP.
    pub transport: Transport,
    /// The admin socket that `mcpx-tui` attaches to.
    pub admin: Admin,
    /// Logins to remote servers.
    pub auth: Auth,
    /// Upstream servers by name, in name order (so the merged catalog's order is stable).
    pub servers: BTreeMap<String, Server>,
    /// Views of the catalog that a client chooses by its door (`mcpx serve --profile NAME`,
    /// `/mcp/NAME`).
    pub profiles: BTreeMap<String, Profile>,
    /// The audit log.
    pub audit: Audit,
    /// Traces.
    pub telemetry: Telemetry,
    /// Several daemons behind one proxy.
    pub cluster: Cluster,
}

/// `[cluster]`: the key that lets every replica serve every legacy session.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Cluster {
    /// The shared key (`mcpx keygen`); without it, sessions live in one daemon's memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// The key being rotated out: ids sealed under it are still accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_key_file: Option<PathBuf>,
    /// How long a sealed session id is accepted after its `initialize`.
    #[serde(with = "humantime_serde")]
    pub session_lifetime: Duration,
    /// Where the other replicas reach this one (`host:port`, `${VAR}` from the environment): a
    /// 2026-07-28 retry that lands elsewhere is forwarded here to the call it resumes. Unset, the
    /// daemon's `address` unless that is a wildcard (`0.0.0.0`, `[::]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advertise: Option<String>,
    /// The other replicas (`host:port`, `${VAR}` from the environment; a name that resolves to
    /// several addresses, such as a Kubernetes headless Service, is each of them): a legacy
    /// session's `DELETE` is passed to them, so that every replica refuses its id at once.
    pub peers: Vec<String>,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            key_file: None,
            previous_key_file: None,
            session_lifetime: Duration::from_secs(24 * 60 * 60),
            advertise: None,
            peers: Vec::new(),
        }
    }
}

/// `[telemetry]`: mcpx's own spans, exported over OTLP/HTTP (off unless `otlpEndpoint` is set).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Telemetry {
    /// The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`); spans go to `/v1/traces`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// The `service.name` the spans carry.
    pub service_name: String,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            otlp_endpoint: None,
            service_name: "mcpx".into(),
        }
    }
}

/// `[audit]`: a JSON line per call, read and question (off unless `path` is set).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Audit {
    /// Where the lines go; no audit log when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Whether lines carry the arguments' values, not only their hash.
    pub arguments: bool,
    /// The file is rotated when it reaches this size.
    pub max_bytes: u64,
    /// How many rotated files are kept (`FILE.1` … `FILE.keep`).
    pub keep: usize,
    /// The installation's secret key that the arguments' digest is an HMAC under (created,
    /// 0600, when missing): a plain hash of small arguments is a dictionary lookup away.
    pub key_file: PathBuf,
}

impl Default for Audit {
    fn default() -> Self {
        Audit {
            path: None,
            arguments: false,
            max_bytes: 100 * 1024 * 1024,
            keep: 5,
            key_file: state_dir().join("audit.key"),
        }
    }
}

/// `[profiles.NAME]`: which servers and which exposed names a client of this profile sees and
/// may use.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    /// The servers it sees (every one when unset); mcpx's own `mcpx` server is named like any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// Glob patterns over exposed tool, prompt and resource-template names: only what matches
    /// one is seen (everything when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Glob patterns over the same names, applied after `include`: what matches one is not seen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Lists two tools, `mcpx__search_tools` and `mcpx__call_tool`, in place of the catalog's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub search: bool,
}

/// `[servers.NAME.tools.TOOL]`: how one of a server's tools is exposed. Its input schema is
/// always passed on verbatim.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct ToolOverride {
    /// Exposed under this name (after the server's prefix) instead of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Replaces its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Replaces its title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Not exposed at all, to any client.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Replaces `annotations.readOnlyHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// Replaces `annotations.destructiveHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Replaces `annotations.idempotentHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// Replaces `annotations.openWorldHint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolOverride {
    /// The annotation hints it sets, by their key in `annotations`.
    pub fn hints(&self) -> [(&'static str, Option<bool>); 4] {
        [
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        ]
    }
}

/// `[servers.NAME] start`: at mcpx's start, or at the first request that needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum Start {
    /// Started with mcpx and kept running.
    #[default]
    #[serde(rename = "eager")]
    Eager,
    /// Listed from the catalog its last run left; started by the first request that needs it.
    #[serde(rename = "lazy")]
    Lazy,
}

impl Start {
    fn is_eager(&self) -> bool {
        *self == Start::Eager
    }
}

/// `[daemon]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Daemon {
    /// Where `mcpx daemon` listens; loopback by default.
    pub address: SocketAddr,
    /// At SIGTERM or SIGINT, how long requests in flight may take before they are cancelled.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// How long a client may take to send a request's head, and then its body, before the
    /// connection is dropped: a slow or silent client cannot hold the daemon's resources.
    #[serde(with = "humantime_serde")]
    pub read_timeout: Duration,
    /// The bearer token every HTTP request must carry (`Authorization: Bearer TOKEN`);
    /// `${VAR}` is taken from the environment. Required when `address` is not loopback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The most HTTP connections open at once; a connection past it is answered 503 and closed.
    /// Each legacy GET stream holds one, so this stays above `transport.maxSessions`.
    pub max_connections: usize,
    /// The most header fields a request may carry; more is answered 431.
    pub max_headers: usize,
    /// The most bytes a request's head (request line and headers) may take; more is answered
    /// 431. At least 8192, hyper's smallest read buffer.
    pub max_header_bytes: usize,
    /// Where editors' `mcpx serve --attach` connect; `serve.sock` beside the admin socket when
    /// unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_socket: Option<PathBuf>,
    /// Whether mcpx counts what it does and serves it at `GET /metrics` (Prometheus text).
    pub metrics: bool,
    /// The executor threads of `mcpx daemon` and `mcpx serve`; 0 for half the machine's cores
    /// (at least one). Each thread more lets a task be woken on one thread and run on another,
    /// which costs more than it gains on a machine mcpx shares with its upstreams.
    pub threads: usize,
}

impl Daemon {
    /// Whether the daemon would be reachable from other machines.
    pub fn exposed(&self) -> bool {
        !self.address.ip().is_loopback()
    }
}

impl Default for Daemon {
    fn default() -> Self {
        Daemon {
            address: SocketAddr::from(([127, 0, 0, 1], 7777)),
            shutdown_grace: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            token: None,
            max_connections: 16_384,
            max_headers: 100,
            max_header_bytes: 64 * 1024,
            local_socket: None,
            metrics: true,
            threads: 0,
        }
    }
}

/// `[transport]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Transport {
    /// Browser origins allowed besides loopback and the daemon's own address.
    pub allowed_origins: Vec<String>,
    /// Host names a request's `Host` may carry on a loopback daemon, besides loopback's, the
    /// daemon's address and `allowedOrigins`' hosts: a reverse proxy's public name. Any other
    /// is answered 421, so that a DNS-rebound page cannot read the daemon.
    pub allowed_hosts: Vec<String>,
    /// How often an idle SSE stream gets a `:` comment.
    #[serde(with = "humantime_serde")]
    pub sse_keep_alive: Duration,
    /// How long requests in flight at stdin's EOF may take to answer before they are cancelled.
    #[serde(with = "humantime_serde")]
    pub stdio_drain: Duration,
    /// The largest message (stdio line or HTTP body) accepted, in bytes.
    pub max_message_bytes: usize,
    /// A legacy HTTP session with no request and no GET stream for this long ends.
    #[serde(with = "humantime_serde")]
    pub session_idle_timeout: Duration,
    /// The most legacy HTTP sessions held at once; `initialize` beyond it gets 503.
    pub max_sessions: usize,
    /// The most requests one client (a stdio process, a legacy HTTP session, one POST's batch)
    /// may have in flight at once, open listens included; one past it is answered with an error
    /// at once. Modern HTTP clients are bounded by `daemon.maxConnections` instead.
    pub max_in_flight_per_client: usize,
    /// How long a 2026-07-28 client's call that an upstream asked a question in may wait for the
    /// retry that answers it; then the upstream call is cancelled.
    #[serde(with = "humantime_serde")]
    pub input_timeout: Duration,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            sse_keep_alive: Duration::from_secs(15),
            stdio_drain: Duration::from_secs(5),
            max_message_bytes: 4 * 1024 * 1024,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 10_000,
            max_in_flight_per_client: 1024,
            input_timeout: Duration::from_secs(10 * 60),
        }
    }
}

/// `[admin]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Admin {
    /// The admin socket's path.
    pub socket: PathBuf,
}

impl Default for Admin {
    fn default() -> Self {
        Admin {
            socket: default_admin_socket(),
        }
    }
}

/// `$XDG_RUNTIME_DIR/mcpx/admin.sock`, or `mcpx-UID/admin.sock` under the temporary directory
/// when there is no runtime directory (`su`, cron, containers and minimal VMs often have none).
/// The uid, not `$USER`, names it: the name is a claim anyone can make, and the directory is
/// refused unless it is the effective user's own ([`crate::net::private_socket`]).
fn default_admin_socket() -> PathBuf {
    let dirs = directories::ProjectDirs::from("", "", "mcpx");
    match dirs.as_ref().and_then(|d| d.runtime_dir()) {
        Some(dir) => dir.join("admin.sock"),
        None => private_temp_dir().join("admin.sock"),
    }
}

/// `mcpx-UID` under the temporary directory: mcpx's own where the platform names no better.
fn private_temp_dir() -> PathBuf {
    std::env::temp_dir().join(format!("mcpx-{}", rustix::process::geteuid().as_raw()))
}

/// `[servers.NAME]`: one upstream, either a child process (`command`) or a remote server (`url`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Server {
    /// The program to spawn (stdio upstream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables for it (`${VAR}` is taken from mcpx's environment).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Whether it gets all of mcpx's environment rather than only the safe set (see
    /// [`crate::environment`]).
    #[serde(rename = "inheritEnv", skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// Its working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The Streamable HTTP endpoint (remote upstream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Extra HTTP headers sent to it (for example `Authorization`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// What exposed names start with: `NAME__` by default, `PREFIX__` if set, bare names if `""`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How long a request to it may go unanswered before it is cancelled and fails
    /// (default [`DEFAULT_UPSTREAM_TIMEOUT`]).
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub timeout: Option<Duration>,
    /// The most requests in flight to it at once (default [`DEFAULT_MAX_IN_FLIGHT`]); one past
    /// it is answered with an error at once rather than queued without bound.
    #[serde(rename = "maxInFlight", skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    /// Which era to speak to it: found out by probing, or fixed.
    #[serde(skip_serializing_if = "UpstreamEra::is_auto")]
    pub era: UpstreamEra,
    /// Who mcpx is to its authorization server, when it needs a login (`url` servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuth>,
    /// Which HTTP transport a `url` server speaks.
    #[serde(skip_serializing_if = "RemoteTransport::is_auto")]
    pub transport: RemoteTransport,
    /// When it is started.
    #[serde(skip_serializing_if = "Start::is_eager")]
    pub start: Start,
    /// Stopped after this long with nothing in flight and no subscription (lazy servers only).
    #[serde(
        rename = "idleTimeout",
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub idle_timeout: Option<Duration>,
    /// How its tools are exposed, by their own names.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolOverride>,
}

/// `[servers.NAME] transport`: Streamable HTTP, the 2024-11-05 HTTP+SSE transport, or whichever
/// the server answers to (the specification's backwards-compatibility procedure).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum RemoteTransport {
    /// Streamable HTTP; HTTP+SSE if the server refuses mcpx's POSTs with a 4xx.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Streamable HTTP only.
    #[serde(rename = "streamable-http")]
    StreamableHttp,
    /// HTTP+SSE only: a GET stream whose `endpoint` event says where to POST.
    #[serde(rename = "sse")]
    Sse,
}

impl RemoteTransport {
    fn is_auto(&self) -> bool {
        *self == RemoteTransport::Auto
    }
}

/// `[servers.NAME.oauth]`: how mcpx identifies itself when the server needs a login. Without
/// it, mcpx registers itself (RFC 7591) where the authorization server allows.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct OAuth {
    /// A client id registered beforehand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (`${VAR}` expands; never logged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The URL of mcpx's client metadata document, used as its client id where the
    /// authorization server accepts one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for, instead of what the server's challenge or metadata say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

/// How many requests may be in flight to one upstream, unless `maxInFlight` says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// How long a request to an upstream may go unanswered, unless `timeout` says otherwise.
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(300);

/// `[servers.NAME] era`: some servers exit on any request before `initialize`, so probing can be
/// turned off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum UpstreamEra {
    /// `initialize` first; a modern error switches to 2026-07-28.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// `initialize` only.
    #[serde(rename = "legacy")]
    Legacy,
    /// 2026-07-28 only: `server/discover`, never `initialize`.
    #[serde(rename = "2026-07-28")]
    Modern,
}

impl UpstreamEra {
    fn is_auto(&self) -> bool {
        *self == UpstreamEra::Auto
    }
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Launch<'a> {
    /// Spawn `command` and speak over its stdin and stdout.
    Stdio(&'a str),
    /// POST to a Streamable HTTP endpoint.
    Http(&'a str),
}

impl Server {
    /// How this upstream is reached; validation guarantees exactly one way.
    pub fn launch(&self) -> Launch<'_> {
        match (&self.command, &self.url) {
            (Some(command), _) => Launch::Stdio(command),
            (None, Some(url)) => Launch::Http(url),
            (None, None) => unreachable!("validated: a server has a command or a url"),
        }
    }

    /// How long a request to it may go unanswered.
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_UPSTREAM_TIMEOUT)
    }

    /// The prefix exposed names carry (without the `__` separator).
    pub fn prefix<'a>(&'a self, name: &'a str) -> &'a str {
        self.prefix.as_deref().unwrap_or(name)
    }
}

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a wrong key or value.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the problem.
        line: usize,
        /// What is wrong and which key.
        message: String,
    },
}

/// `[auth]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Auth {
    /// The credentials file: tokens from `mcpx auth login`, mode 0600.
    pub credentials: PathBuf,
}

impl Default for Auth {
    fn default() -> Self {
        Auth {
            credentials: state_dir().join("credentials.json"),
        }
    }
}

/// Where mcpx keeps what it must remember (`$XDG_STATE_HOME/mcpx`): credentials, keys.
fn state_dir() -> PathBuf {
    let dirs = directories::ProjectDirs::from("", "", "mcpx");
    dirs.as_ref()
        .map(|d| {
            d.state_dir()
                .unwrap_or_else(|| d.data_local_dir())
                .to_path_buf()
        })
        .unwrap_or_else(private_temp_dir)
}

/// The default configuration path, if the platform has a configuration directory.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "mcpx").map(|d| d.config_dir().join("config.toml"))
}

impl Config {
    /// Where the daemon takes editors' `mcpx serve`: `[daemon] localSocket`, else beside the
    /// admin socket: `serve.sock` for the usual `admin.sock`, `NAME.serve.sock` for an admin
    /// socket `NAME.sock`, so that daemons whose admin sockets share a directory do not share it.
    pub fn local_socket(&self) -> PathBuf {
        if let Some(path) = &self.daemon.local_socket {
            return path.clone();
        }
        let admin = &self.admin.socket;
        let stem = admin
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("admin");
        match stem {
            "admin" => admin.with_file_name("serve.sock"),
            other => admin.with_file_name(format!("{other}.serve.sock")),
        }
    }

    /// Where the other replicas reach this daemon, listening on `bound`: `[cluster] advertise`
    /// (its `${VAR}`s expanded), else `bound` unless that is a wildcard, which names no one host.
    pub fn advertised(&self, bound: SocketAddr) -> Result<Option<String>, String> {
        match &self.cluster.advertise {
            Some(address) => crate::environment::expand(address)
                .map(Some)
                .map_err(|e| format!("cluster.advertise: {e}")),
            None => Ok((!bound.ip().is_unspecified()).then(|| bound.to_string())),
        }
    }
}

impl Config {
    /// Loads `explicit` if given (it must exist), else the default file if it exists, else the
    /// defaults.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let path = match explicit {
            Some(path) => path.to_owned(),
            None => match default_path().filter(|p| p.exists()) {
                Some(path) => path,
                None => return Ok((Config::default(), None)),
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let config = Config::parse(&text).map_err(|(line, message)| ConfigError::Invalid {
            path: path.clone(),
            line,
            message,
        })?;
        Ok((config, Some(path)))
    }

    /// Parses and validates TOML text; an error is the 1-based line and a message naming the key.
    pub fn parse(text: &str) -> Result<Config, (usize, String)> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |span| line_of(text, span.start));
            (line, e.message().to_owned())
        })?;
        if config.daemon.exposed() && config.daemon.token.as_deref().is_none_or(str::is_empty) {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with("address"))
                .map_or(1, |i| i + 1);
            return Err((
                line,
                format!(
                    "daemon.address {} is reachable from other machines: set daemon.token (clients then send `Authorization: Bearer TOKEN`), or listen on a loopback address",
                    config.daemon.address
                ),
            ));
        }
        config.refuse_zero_caps(text)?;
        for (name, server) in &config.servers {
            let line = text
                .lines()
                .position(|l| {
                    l.trim_start().starts_with(&format!("[servers.{name}]"))
                        || l.contains(&format!("[servers.\"{name}\"]"))
                })
                .map_or(1, |i| i + 1);
            let fail = |message: String| Err((line, format!("servers.{name}: {message}")));
            if name == BUILTIN_SERVER {
                return fail(format!("the name {BUILTIN_SERVER:?} is reserved for the built-in server; choose another"));
            }
            // `__` separates a prefix from a tool's own name: `a__b`'s `c` and `a`'s `b__c`
            // would both be exposed as `a__b__c`.
            if server.prefix(name).contains("__") {
                return fail(format!(
                    "{:?} holds `__`, which separates the prefix from the tool's own name; use another name or `prefix`",
                    server.prefix(name)
                ));
            }
            match (&server.command, &server.url) {
                (Some(_), Some(_)) => {
                    return fail("give either `command` or `url`, not both".into())
                }
                (None, None) => {
                    return fail(
                        "needs `command` (a program to spawn) or `url` (a remote server)".into(),
                    )
                }
                (Some(command), None) if command.trim().is_empty() => {
                    return fail("`command` is empty".into())
                }
                (None, Some(url))
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    return fail(format!(
                        "`url` must start with http:// or https://, not {url:?}"
                    ))
                }
                (None, Some(_))
                    if !server.args.is_empty()
                        || !server.env.is_empty()
                        || server.inherit_env
                        || server.cwd.is_some() =>
                {
                    return fail(
                        "`args`, `env`, `inheritEnv` and `cwd` belong to a `command` server, not a `url` one"
                            .into(),
                    )
                }
                (Some(_), None)
                    if !server.headers.is_empty()
                        || server.oauth.is_some()
                        || !server.transport.is_auto() =>
                {
                    return fail(
                        "`headers`, `oauth` and `transport` belong to a `url` server, not a `command` one"
                            .into(),
                    )
                }
                _ => {}
            }
            if server.idle_timeout.is_some() && server.start != Start::Lazy {
                return fail("`idleTimeout` stops a `start = \"lazy\"` server; this one is started with mcpx and kept running".into());
            }
            if let Some(tool) = server.tools.iter().find_map(|(tool, o)| {
                o.name
                    .as_deref()
                    .filter(|n| n.trim().is_empty())
                    .map(|_| tool)
            }) {
                return fail(format!("tools.{tool}.name is empty"));
            }
        }
        config.check_profiles(text)?;
        Ok(config)
    }

    /// Each profile's name is a URL path segment (`/mcp/NAME`), names servers that exist, and
    /// has patterns that are globs.
    fn check_profiles(&self, text: &str) -> Result<(), (usize, String)> {
        for (name, profile) in &self.profiles {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("[profiles.{name}")))
                .map_or(1, |i| i + 1);
            let fail = |message: String| Err((line, format!("profiles.{name}: {message}")));
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return fail(
                    "a profile's name is a URL path segment: letters, digits, `-` and `_`".into(),
                );
            }
            let unknown = profile.servers.iter().flatten().find(|server| {
                server.as_str() != BUILTIN_SERVER && !self.servers.contains_key(*server)
            });
            if let Some(server) = unknown {
                return fail(format!("names server {server:?}, which is not configured"));
            }
            for pattern in profile.include.iter().chain(&profile.exclude) {
                if let Err(e) = globset::Glob::new(pattern) {
                    return fail(format!("{pattern:?} is not a glob pattern: {e}"));
                }
            }
        }
        Ok(())
    }
}

impl Config {
    /// A cap or an interval of zero would refuse everything or spin (a keep-alive every 0 s), so
    /// it is a mistake, not a setting.
    fn refuse_zero_caps(&self, text: &str) -> Result<(), (usize, String)> {
        let (d, t) = (&self.daemon, &self.transport);
        let mut checks = vec![
            ("daemon", "maxConnections", d.max_connections == 0),
            ("daemon", "maxHeaders", d.max_headers == 0),
            ("daemon", "maxHeaderBytes", d.max_header_bytes == 0),
            ("daemon", "readTimeout", d.read_timeout.is_zero()),
            ("transport", "maxMessageBytes", t.max_message_bytes == 0),
            ("transport", "maxSessions", t.max_sessions == 0),
            (
                "transport",
                "maxInFlightPerClient",
                t.max_in_flight_per_client == 0,
            ),
            ("transport", "sseKeepAlive", t.sse_keep_alive.is_zero()),
            ("audit", "maxBytes", self.audit.max_bytes == 0),
            (
                "cluster",
                "sessionLifetime",
                self.cluster.session_lifetime.is_zero(),
            ),
            (
                "transport",
                "sessionIdleTimeout",
                t.session_idle_timeout.is_zero(),
            ),
        ];
        let servers: Vec<(String, &Server)> = self
            .servers
            .iter()
            .map(|(name, server)| (format!("servers.{name}"), server))
            .collect();
        for (table, server) in &servers {
            checks.push((table, "maxInFlight", server.max_in_flight == Some(0)));
            checks.push((
                table,
                "idleTimeout",
                server.idle_timeout.is_some_and(|t| t.is_zero()),
            ));
            checks.push((
                table,
                "timeout",
                server.timeout.is_some_and(|t| t.is_zero()),
            ));
        }
        match checks.into_iter().find(|(_, _, zero)| *zero) {
            None => Ok(()),
            Some((table, key, _)) => Err((
                line_of_key(text, key),
                format!("{table}.{key} must be more than zero (leave it out for the default)"),
            )),
        }
    }
}

/// The 1-based line where `key` is set, or 1.
fn line_of_key(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(1, |i| i + 1)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Durations written the way people write them: "15s", "500ms", "2m".
mod humantime_serde {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(duration: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*duration).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "{text:?} is not a duration like \"15s\" or \"500ms\": {e}"
            ))
        })
    }

    /// The same for an optional key.
    pub mod option {
        use serde::{Deserializer, Serializer};
        use std::time::Duration;

        pub fn serialize<S: Serializer>(
            duration: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match duration {
                Some(duration) => super::serialize(duration, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod config {
        use crate::config::{Config, Launch};
        use std::time::Duration;

        #[test]
        fn no_file_means_every_default() {
            let c = Config::parse("").unwrap();
            assert_eq!(c.daemon.address.to_string(), "127.0.0.1:7777");
            assert_eq!(c.transport.stdio_drain, Duration::from_secs(5));
            assert_eq!(c.transport.sse_keep_alive, Duration::from_secs(15));
            assert_eq!(
                c.local_socket(),
                c.admin.socket.with_file_name("serve.sock")
            );
            // Daemons whose admin sockets share a directory get a local socket each.
            let named = Config::parse("[admin]\nsocket = \"/run/m/old.sock\"\n").unwrap();
            let expected = std::path::PathBuf::from("/run/m/old.serve.sock");
            assert_eq!(named.local_socket(), expected);
            assert!(c.servers.is_empty());
        }

        #[test]
        fn keys_use_their_documented_spellings() {
            let c = Config::parse(
                r#"
[daemon]
address = "127.0.0.1:9000"
[transport]
allowedOrigins = ["https://app.example"]
sseKeepAlive = "2s"
stdioDrain = "250ms"
[admin]
socket = "/tmp/x.sock"
[servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }
prefix = ""
[servers.remote]
url = "https://example.test/mcp"
headers = { Authorization = "Bearer x" }
"#,
            )
            .unwrap();
            assert_eq!(c.transport.allowed_origins, vec!["https://app.example"]);
            assert_eq!(c.transport.stdio_drain, Duration::from_millis(250));
            assert_eq!(c.servers["time"].launch(), Launch::Stdio("mcp-server-time"));
            assert_eq!(c.servers["time"].prefix("time"), "");
            assert_eq!(
                c.servers["remote"].launch(),
                Launch::Http("https://example.test/mcp")
            );
        }

        #[test]
        fn an_unknown_key_names_its_line_and_key() {
            let (line, message) =
                Config::parse("[transport]\n\nstdioDrian = \"1s\"\n").unwrap_err();
            assert_eq!(line, 3);
            assert!(message.contains("stdioDrian"), "{message}");
        }

        #[test]
        fn a_bad_duration_names_its_line() {
            let (line, message) =
                Config::parse("[transport]\nsseKeepAlive = \"soon\"\n").unwrap_err();
            assert_eq!(line, 2);
            assert!(message.contains("soon"), "{message}");
        }

        #[test]
        fn a_server_needs_exactly_one_of_command_and_url() {
            let (line, message) = Config::parse("\n[servers.x]\nargs = []\n").unwrap_err();
            assert_eq!(line, 2);
            assert!(message.contains("servers.x"), "{message}");
            assert!(Config::parse("[servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n").is_err());
        }

        /// Every key mcpx reads is documented in mcpx.toml(5).
        #[test]
        fn every_key_is_in_the_man_page() {
            let mut config = Config::parse(concat!(
                "[servers.a]\ncommand = \"x\"\nprefix = \"p\"\ncwd = \"/\"\nargs = [\"1\"]\n",
                "env = { K = \"v\" }\ninheritEnv = true\ntimeout = \"1s\"\nmaxInFlight = 8\n",
                "era = \"legacy\"\nstart = \"lazy\"\nidleTimeout = \"10m\"\n",
                "[servers.a.tools.t]\nname = \"n\"\ndescription = \"d\"\ntitle = \"t\"\n",
                "disabled = true\nreadOnlyHint = true\ndestructiveHint = false\n",
                "idempotentHint = true\nopenWorldHint = false\n",
                "[servers.b]\nurl = \"http://h\"\nheaders = { H = \"v\" }\n",
                "oauth = { clientId = \"c\" }\ntransport = \"sse\"\n",
                "[profiles.p]\nservers = [\"a\"]\ninclude = [\"a__*\"]\nexclude = [\"x\"]\n",
                "search = true\n",
                "[audit]\npath = \"/a\"\n",
                "[telemetry]\notlpEndpoint = \"http://c:4318\"\n",
                "[cluster]\nkeyFile = \"/k\"\npreviousKeyFile = \"/p\"\n",
            ))
            .unwrap();
            config.admin.socket = "/s".into();
            config.daemon.token = Some("t".into());
            let page =
                std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/mcpx.toml.5"))
                    .unwrap();
            let tables = toml::Value::try_from(&config).unwrap();
            let mut keys = Vec::new();
            for (table, value) in tables.as_table().unwrap() {
                for (key, value) in value.as_table().unwrap() {
                    match table.as_str() {
                        // Keys of each `[servers.NAME]`, `[servers.NAME.tools.TOOL]` and
                        // `[profiles.NAME]`.
                        "servers" | "profiles" => {
                            for (key, value) in value.as_table().unwrap() {
                                keys.push(key.clone());
                                if key == "tools" {
                                    for tool in value.as_table().unwrap().values() {
                                        keys.extend(tool.as_table().unwrap().keys().cloned());
                                    }
                                }
                            }
                        }
                        _ => keys.push(key.clone()),
                    }
                }
            }
            for key in keys {
                assert!(
                    page.contains(&format!("\\fB{key}\\fR")),
                    "mcpx.toml(5) does not document {key}"
                );
            }
        }

        #[test]
        fn a_non_loopback_address_needs_a_token() {
            let (line, message) =
                Config::parse("[daemon]\naddress = \"0.0.0.0:7777\"\n").unwrap_err();
            assert_eq!(line, 2);
            assert!(message.contains("daemon.token"), "{message}");
            assert!(Config::parse("[daemon]\naddress = \"0.0.0.0:7777\"\ntoken = \"t\"\n").is_ok());
            assert!(Config::parse("[daemon]\naddress = \"[::1]:7777\"\n").is_ok());
        }

        #[test]
        fn a_cap_or_interval_of_zero_is_refused_naming_its_key_and_line() {
            for (text, key, line) in [
                ("[daemon]\nmaxConnections = 0\n", "daemon.maxConnections", 2),
                (
                    "[transport]\n\nsseKeepAlive = \"0s\"\n",
                    "transport.sseKeepAlive",
                    3,
                ),
                (
                    "[transport]\nmaxInFlightPerClient = 0\n",
                    "transport.maxInFlightPerClient",
                    2,
                ),
                (
                    "[servers.a]\ncommand = \"x\"\nmaxInFlight = 0\n",
                    "servers.a.maxInFlight",
                    3,
                ),
                (
                    "[servers.a]\ncommand = \"x\"\ntimeout = \"0ms\"\n",
                    "servers.a.timeout",
                    3,
                ),
            ] {
                let (at, message) = Config::parse(text).unwrap_err();
                assert!(message.contains(key), "{message}");
                assert_eq!(at, line, "{text}");
            }
            assert!(Config::parse("[transport]\nstdioDrain = \"0s\"\n").is_ok());
        }

        #[test]
        fn the_builtin_name_is_reserved() {
            assert!(Config::parse("[servers.mcpx]\ncommand = \"a\"\n").is_err());
        }

        /// `__` is the prefix's separator: a server name or prefix that holds it is refused.
        #[test]
        fn a_server_name_or_prefix_with_the_separator_is_refused() {
            for text in [
                "[servers.a__b]\ncommand = \"x\"\n",
                "[servers.a]\ncommand = \"x\"\nprefix = \"p__q\"\n",
            ] {
                let (_, message) = Config::parse(text).unwrap_err();
                assert!(message.contains("`__`"), "{message}");
            }
            assert!(Config::parse("[servers.a__b]\ncommand = \"x\"\nprefix = \"ab\"\n").is_ok());
        }
    }
}
