//! `[daemon]`, `[transport]` and `[admin]`: the doors mcpx serves at and their limits.

use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// The bearer token that reads `GET /metrics` (placeholders such as `${file:PATH}` or
    /// `${cred:NAME}` are expanded); when set, only it does. Unset, a daemon that admits a team
    /// (`[auth] mode = "external"` or `"builtin"`) refuses `/metrics`, and one that only admits
    /// its owner lets in whom `/mcp` does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_token: Option<String>,
    /// How long a first list (`tools/list` and the like) waits for servers still starting when
    /// mcpx starts: past it, it answers with those ready, and the others join later, announced
    /// by `list_changed` (an agent that lists once at its start gets its tools at once).
    #[serde(with = "humantime_serde")]
    pub list_wait: Duration,
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
            metrics_token: None,
            max_connections: 16_384,
            max_headers: 100,
            max_header_bytes: 64 * 1024,
            local_socket: None,
            metrics: true,
            list_wait: Duration::from_secs(1),
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
    runtime_dir().join("admin.sock")
}

/// `$XDG_RUNTIME_DIR/mcpx`, or [`private_temp_dir`] when there is no runtime directory.
pub(super) fn runtime_dir() -> PathBuf {
    let dirs = directories::ProjectDirs::from("", "", "mcpx");
    match dirs.as_ref().and_then(|d| d.runtime_dir()) {
        Some(dir) => dir.to_path_buf(),
        None => private_temp_dir(),
    }
}

/// `mcpx-UID` under the temporary directory: mcpx's own where the platform names no better.
pub(super) fn private_temp_dir() -> PathBuf {
    std::env::temp_dir().join(format!("mcpx-{}", rustix::process::geteuid().as_raw()))
}
