//! `[auth]`: who may use the HTTP door (`mode`, `[auth.external]`, `[[auth.rules]]`), and where
//! remote servers' tokens are kept (`credentials`). The two never meet: a client's token is
//! never passed to an upstream, whose credentials stay mcpx's own.

use super::daemon::private_temp_dir;
use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// `[auth]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Auth {
    /// The credentials file: tokens from `mcpx auth login`, mode 0600.
    pub credentials: PathBuf,
    /// How HTTP callers prove who they are.
    pub mode: AuthMode,
    /// The daemon's public origin (`https://mcp.example.com`), of which every door's URL is
    /// made: the `resource` of its metadata and the audience its tokens must name. Required by
    /// `external`; `X-Forwarded-*` headers are never trusted in its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// The scopes every request's token must grant (`scopes_supported`, and the `scope` of
    /// every challenge).
    pub scopes: Vec<String>,
    /// `mode = "external"`: the identity provider.
    pub external: External,
    /// Which doors each caller may use and which tools it may not; first match wins, and with
    /// rules present a caller no rule matches is refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
}

impl Default for Auth {
    fn default() -> Self {
        Auth {
            credentials: state_dir().join("credentials.json"),
            mode: AuthMode::Token,
            public_url: None,
            scopes: vec!["mcp".into()],
            external: External::default(),
            rules: Vec::new(),
        }
    }
}

/// `[auth] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// `daemon.token` when set; else only the daemon's own user.
    Token,
    /// Access tokens of an identity provider: JWTs checked against its keys, or opaque tokens
    /// it introspects.
    External,
}

/// `[auth.external]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct External {
    /// The provider's issuer identifier: tokens' `iss`, and where its metadata is discovered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Audiences a token may name besides the door's own URL (always accepted).
    pub audiences: Vec<String>,
    /// The signature algorithms accepted; never `none` nor an HMAC.
    pub algorithms: Vec<String>,
    /// How far `exp` and `nbf` may be off, for clocks that differ.
    #[serde(with = "humantime_serde")]
    pub leeway: Duration,
    /// Where the provider's keys are, when its metadata does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Opaque (non-JWT) tokens are introspected (RFC 7662) with these credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub introspection: Option<Introspection>,
}

impl Default for External {
    fn default() -> Self {
        External {
            issuer: None,
            audiences: Vec::new(),
            algorithms: ["RS256", "PS256", "ES256", "ES384", "EdDSA"]
                .map(str::to_owned)
                .to_vec(),
            leeway: Duration::from_secs(60),
            jwks_uri: None,
            introspection: None,
        }
    }
}

/// `[auth.external.introspection]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Introspection {
    /// The introspection endpoint, when the provider's metadata does not name one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// mcpx's client id at the provider.
    pub client_id: String,
    /// Its secret; `${VAR}` is taken from the environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How long an answer is kept (never past the token's `exp`).
    #[serde(default = "introspection_cache", with = "humantime_serde")]
    pub cache: Duration,
}

fn introspection_cache() -> Duration {
    Duration::from_secs(60)
}

/// `[[auth.rules]]`: whom a rule is for (every condition given must hold) and what it allows.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rule {
    /// The token's `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The token's client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The token's issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Scopes the token must all grant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Claims the token must carry: equal to the value, or a list holding it (`groups`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, String>,
    /// The profiles whose doors (`/mcp/NAME`) it may use; `"*"` for every door, `/mcp` too.
    #[serde(default = "every_door")]
    pub profiles: Vec<String>,
    /// Glob patterns over exposed tool names it may not see nor call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_tools: Vec<String>,
    /// Tool globs that need a scope more: a call without it is answered 403
    /// `insufficient_scope`, so the client can ask for it (step-up).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub step_up: BTreeMap<String, String>,
}

fn every_door() -> Vec<String> {
    vec!["*".into()]
}

/// Where mcpx keeps what it must remember (`$XDG_STATE_HOME/mcpx`): credentials, keys.
pub(super) fn state_dir() -> PathBuf {
    let dirs = directories::ProjectDirs::from("", "", "mcpx");
    dirs.as_ref()
        .map(|d| {
            d.state_dir()
                .unwrap_or_else(|| d.data_local_dir())
                .to_path_buf()
        })
        .unwrap_or_else(private_temp_dir)
}
