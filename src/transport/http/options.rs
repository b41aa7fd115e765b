//! What the HTTP front door takes from the settings, each key where the door reads it.

use crate::config::Settings;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How the daemon behaves at its edges.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub address: SocketAddr,
    /// Browser origins allowed besides loopback and the daemon's own address.
    pub allowed_origins: Vec<String>,
    /// Host names a request may carry besides loopback's (`transport.allowedHosts`).
    pub allowed_hosts: Vec<String>,
    /// The comment interval on idle event streams.
    pub sse_keep_alive: Duration,
    /// The largest body accepted.
    pub max_message_bytes: usize,
    /// How long requests in flight at shutdown may take before they are cancelled.
    pub grace: Duration,
    /// How long a client may take to send a request's head, and then its body.
    pub read_timeout: Duration,
    /// A legacy session idle this long ends.
    pub session_idle_timeout: Duration,
    /// The most legacy sessions held at once.
    pub max_sessions: usize,
    /// Who may come in, as whom (`[auth]`, `daemon.token`).
    pub gate: Arc<crate::access::Gate>,
    /// The most connections open at once; more are answered 503.
    pub max_connections: usize,
    /// The most header fields in a request; more are answered 431.
    pub max_headers: usize,
    /// The most bytes in a request's head; more are answered 431.
    pub max_header_bytes: usize,
    /// Whether `GET /metrics` serves the Prometheus metrics.
    pub metrics: bool,
    /// Who reads them.
    pub metrics_access: super::metrics_door::MetricsAccess,
    /// Seals legacy session ids, so that any replica with the same key serves them.
    pub sealer: Option<Arc<crate::cluster::Sealer>>,
    /// The other replicas, told of each legacy session's `DELETE`.
    pub peers: Vec<String>,
}

impl HttpOptions {
    /// The options `settings` give, with the `cluster`'s keys when the daemon runs in one (legacy
    /// session ids are sealed with them), and the ledger's `consents` for the built-in
    /// authorization server. An error names the key whose `${VAR}` is unset, the empty token,
    /// or an unusable key or state file.
    pub fn from_settings(
        settings: &Settings,
        cluster: Option<&crate::cluster::ClusterKeys>,
        consents: Arc<crate::access::builtin::consent::Consents>,
    ) -> Result<HttpOptions, String> {
        let (daemon, transport) = (&settings.config.daemon, &settings.config.transport);
        let peers = settings.cluster_peers.clone()?;
        let sealer = cluster.map(|keys| Arc::new(crate::cluster::Sealer::new(keys)));
        let gate = crate::access::Gate::from_settings(settings, cluster, consents)?;
        // The public URL is the daemon's own: its host and origin are answered like loopback's.
        let mut allowed_origins = transport.allowed_origins.clone();
        let mut allowed_hosts = transport.allowed_hosts.clone();
        if let Some(public) = gate.public_url().and_then(|u| url::Url::parse(u).ok()) {
            allowed_origins.push(public.origin().ascii_serialization());
            allowed_hosts.extend(public.host_str().map(str::to_owned));
        }
        Ok(HttpOptions {
            address: daemon.address,
            allowed_origins,
            allowed_hosts,
            sse_keep_alive: transport.sse_keep_alive,
            max_message_bytes: transport.max_message_bytes,
            grace: daemon.shutdown_grace,
            read_timeout: daemon.read_timeout,
            session_idle_timeout: transport.session_idle_timeout,
            max_sessions: transport.max_sessions,
            gate: Arc::new(gate),
            max_connections: daemon.max_connections,
            max_headers: daemon.max_headers,
            max_header_bytes: daemon.max_header_bytes,
            metrics: daemon.metrics,
            metrics_access: super::metrics_door::MetricsAccess::from_settings(settings)?,
            sealer,
            peers,
        })
    }
}
