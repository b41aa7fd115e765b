//! `[servers.NAME]`: one upstream, a child process or a remote server, and its tools' overrides.

use super::duration as humantime_serde;
use super::pins::Pin;
use super::sandbox::Sandbox;
use super::tasks::TaskPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Replaces the server's `tasks` for this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskPolicy>,
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
    /// Whether it gets all of mcpx's environment rather than only the safe set (the locale,
    /// `PATH`, `HOME` and the like, listed where a child's environment is made).
    #[serde(rename = "inheritEnv", skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// Its working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// What it may touch, when it is confined ([`crate::sandbox`]); unconfined without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    /// Its definitions are pinned ([`crate::pins`]): changes wait for approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<Pin>,
    /// Its own `[guardrails]` settings, in place of the section's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<super::ServerGuardrails>,
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
    /// How long a start may take, from launching it (or connecting) to its handshake's end
    /// (default [`DEFAULT_START_TIMEOUT`]).
    #[serde(
        rename = "startTimeout",
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub start_timeout: Option<Duration>,
    /// How long its first start may take, when it never started before and no catalog of it is
    /// cached: an `npx -y` or `uvx` server downloads itself then (default
    /// [`DEFAULT_FIRST_START_TIMEOUT`]).
    #[serde(
        rename = "firstStartTimeout",
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub first_start_timeout: Option<Duration>,
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
    /// Whether mcpx runs a long call to it as a task of its own, for a client that declared the
    /// Tasks extension, when the server runs no tasks itself (`[tasks]`).
    #[serde(skip_serializing_if = "TaskPolicy::is_auto")]
    pub tasks: TaskPolicy,
    /// Whose the server's process and credentials are: everyone's, or each caller's own.
    #[serde(skip_serializing_if = "Credentials::is_shared")]
    pub credentials: Credentials,
    /// `[servers.NAME.perIdentity]`: how each caller's own instance is kept.
    #[serde(
        rename = "perIdentity",
        skip_serializing_if = "PerIdentity::is_default"
    )]
    pub per_identity: PerIdentity,
}

/// The identity every local caller is to a per-identity server (stdio, an attached editor, the
/// daemon's own token): a single user's setup runs one instance.
pub const OWNER: &str = "owner";

/// `[servers.NAME] credentials`: one process and one set of credentials for every caller, or
/// one of each per identity (the verified token's issuer and subject; every local caller is the
/// one identity `owner`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum Credentials {
    /// Today's, and a single user's: one process, its secrets, for everyone.
    #[default]
    #[serde(rename = "shared")]
    Shared,
    /// A process of its own for each identity, started on that identity's first call, its
    /// placeholders naming the caller (`{subject}`).
    #[serde(rename = "per-identity")]
    PerIdentity,
}

impl Credentials {
    fn is_shared(&self) -> bool {
        *self == Credentials::Shared
    }
}

/// `[servers.NAME.perIdentity]`: the instances of a `credentials = "per-identity"` server.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct PerIdentity {
    /// How many identities' instances may run at once: past it, the least recently used idle
    /// one is stopped, and if none is idle the call is refused.
    pub max_instances: usize,
    /// An instance with nothing in flight for this long is stopped.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// How a `url` server's instance gets its person's token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<PersonToken>,
    /// The audience asked for in a token exchange: the server's resource (its URL) unless set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// The scopes asked for in a token exchange.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// `[servers.NAME.perIdentity] token`: how a person's token for a remote server is had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum PersonToken {
    /// RFC 8693 token exchange at the identity provider: the caller's token for one naming
    /// the server as its audience. The caller's own token never reaches the server.
    #[serde(rename = "exchange")]
    Exchange,
    /// Each person logs in to the server once, through mcpx's upstream OAuth client.
    #[serde(rename = "login")]
    Login,
}

impl Default for PerIdentity {
    fn default() -> PerIdentity {
        PerIdentity {
            max_instances: 16,
            idle_timeout: Duration::from_secs(600),
            token: None,
            audience: None,
            scopes: Vec::new(),
        }
    }
}

impl PerIdentity {
    fn is_default(&self) -> bool {
        *self == PerIdentity::default()
    }
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
    /// Whether it is left to mcpx (the default).
    pub(super) fn is_auto(&self) -> bool {
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

/// How long a server's start may take, unless its `startTimeout` says otherwise.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server's first start may take (a download), unless `firstStartTimeout` says.
pub const DEFAULT_FIRST_START_TIMEOUT: Duration = Duration::from_secs(180);

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

/// What kind of server a `[servers.NAME]` table is, with what only that kind has: the code
/// that differs by kind matches on it, so that a new kind (a REST API, say) is one variant the
/// compiler walks every such place through. The table keeps its flat keys as written;
/// [`super::load`] refuses one with both `command` and `url`, or neither.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServerKind<'a> {
    /// A program mcpx spawns and speaks to over its stdin and stdout.
    Stdio(StdioSpec<'a>),
    /// A server mcpx reaches over HTTP.
    Remote(RemoteSpec<'a>),
}

/// What only a stdio server has (its arguments and environment are expanded with the rest of
/// its values: [`super::Expanded`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StdioSpec<'a> {
    /// The program to spawn.
    pub command: &'a str,
    /// The directory it runs in; mcpx's own unless set.
    pub cwd: Option<&'a std::path::Path>,
    /// What it may touch, when it is confined.
    pub sandbox: Option<&'a Sandbox>,
}

/// What only a remote server has (its headers are expanded with the rest of its values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RemoteSpec<'a> {
    /// Its endpoint.
    pub url: &'a str,
    /// Which HTTP transport it speaks.
    pub transport: RemoteTransport,
}

impl ServerKind<'_> {
    /// Whether mcpx reaches it over HTTP: what may need a login, or a person's own token.
    pub fn is_remote(&self) -> bool {
        match self {
            ServerKind::Stdio(_) => false,
            ServerKind::Remote(_) => true,
        }
    }
}

impl Server {
    /// This server as the person `subject` runs it: each `{subject}` in its `args`, `env`,
    /// `cwd` and `headers` is theirs (before its placeholders expand, so that `${keyring:gh-{subject}}` names
    /// their key).
    pub fn with_subject(&self, subject: &str) -> Server {
        let put = |value: &str| value.replace("{subject}", subject);
        Server {
            args: self.args.iter().map(|a| put(a)).collect(),
            env: self.env.iter().map(|(k, v)| (k.clone(), put(v))).collect(),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), put(v)))
                .collect(),
            cwd: self.cwd.as_ref().map(|c| put(&c.to_string_lossy()).into()),
            ..self.clone()
        }
    }

    /// What kind of server it is. A table with a `url` is remote; any other is a program (one
    /// with no `command`, which loading refuses, fails to start saying its command is empty).
    pub fn kind(&self) -> ServerKind<'_> {
        match &self.url {
            Some(url) => ServerKind::Remote(RemoteSpec {
                url,
                transport: self.transport,
            }),
            None => ServerKind::Stdio(StdioSpec {
                command: self.command.as_deref().unwrap_or_default(),
                cwd: self.cwd.as_deref(),
                sandbox: self.sandbox.as_ref(),
            }),
        }
    }

    /// A remote server's URL; `None` for a program.
    pub fn remote_url(&self) -> Option<&str> {
        match self.kind() {
            ServerKind::Remote(remote) => Some(remote.url),
            ServerKind::Stdio(_) => None,
        }
    }

    /// How long a request to it may go unanswered.
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_UPSTREAM_TIMEOUT)
    }

    /// How long a start may take: its first (never started, nothing cached), or any other.
    pub fn start_within(&self, first: bool) -> Duration {
        match first {
            true => (self.first_start_timeout).unwrap_or(DEFAULT_FIRST_START_TIMEOUT),
            false => self.start_timeout.unwrap_or(DEFAULT_START_TIMEOUT),
        }
    }

    /// The prefix exposed names carry (without the `__` separator).
    pub fn prefix<'a>(&'a self, name: &'a str) -> &'a str {
        self.prefix.as_deref().unwrap_or(name)
    }
}
