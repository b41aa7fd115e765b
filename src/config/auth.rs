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
    /// Where those tokens are kept: the file, the desktop's keyring, or the keyring when one
    /// answers and else the file.
    pub credentials_store: CredentialsStore,
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
    /// `mode = "builtin"`: mcpx's own authorization server.
    pub builtin: Builtin,
    /// Which doors each caller may use and which tools it may not; first match wins, and with
    /// rules present a caller no rule matches is refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
}

impl Default for Auth {
    fn default() -> Self {
        Auth {
            credentials: state_dir().join("credentials.json"),
            credentials_store: CredentialsStore::File,
            mode: AuthMode::Token,
            public_url: None,
            scopes: vec!["mcp".into()],
            external: External::default(),
            builtin: Builtin::default(),
            rules: Vec::new(),
        }
    }
}

/// `[auth] credentialsStore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CredentialsStore {
    /// The 0600 file `credentials` (the default): it needs no desktop session and survives a
    /// reboot of a headless machine.
    File,
    /// The desktop's keyring (the Secret Service); an upstream needing a token fails to
    /// connect, saying why, when no keyring answers.
    Keyring,
    /// The keyring when one answers (asked once, briefly), else the file.
    Auto,
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
    /// Access tokens of mcpx's own authorization server, each client consented by the owner.
    Builtin,
}

/// `[auth.builtin]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Builtin {
    /// The secret that approves a client on the consent page; `${env:NAME}` is taken from the
    /// environment. Without it a consent is approved on the host (`mcpx auth approve CODE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner_secret: Option<String>,
    /// How long an access token is good for.
    #[serde(with = "humantime_serde")]
    pub access_lifetime: Duration,
    /// How long a login lasts without the owner's consent again: a refresh token's family.
    #[serde(with = "humantime_serde")]
    pub refresh_lifetime: Duration,
    /// How long after a refresh token is rotated presenting it again gets the same answer
    /// (clients that refresh twice at once, Gemini CLI's way) instead of revoking the login.
    #[serde(with = "humantime_serde")]
    pub refresh_reuse: Duration,
    /// Whether clients may register themselves (RFC 7591 dynamic registration).
    pub registration: bool,
    /// The most registrations not yet consented to, kept at once.
    pub max_registrations: usize,
    /// A registration not consented to within this long is forgotten.
    #[serde(with = "humantime_serde")]
    pub registration_lifetime: Duration,
    /// Whether a client may name itself by the HTTPS URL of its metadata document (CIMD).
    pub client_documents: bool,
    /// Local copies of documents mcpx would fetch (a client's metadata, its JWKS), by URL:
    /// used instead of fetching them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pinned: BTreeMap<String, PathBuf>,
    /// Where registrations, consents and refresh tokens (hashed) are kept.
    pub state_file: PathBuf,
    /// The key access tokens are signed with, made on first use, when `[cluster] keyFile` is
    /// not set (with it, the key is derived from the cluster's).
    pub key_file: PathBuf,
}

impl Default for Builtin {
    fn default() -> Self {
        Builtin {
            owner_secret: None,
            access_lifetime: Duration::from_secs(3600),
            refresh_lifetime: Duration::from_secs(30 * 24 * 3600),
            refresh_reuse: Duration::from_secs(10),
            registration: true,
            max_registrations: 100,
            registration_lifetime: Duration::from_secs(3600),
            client_documents: true,
            pinned: BTreeMap::new(),
            state_file: state_dir().join("authserver.json"),
            key_file: state_dir().join("authserver.key"),
        }
    }
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
    pub algorithms: Vec<Alg>,
    /// The `typ` the provider's access tokens carry: `at+jwt` (RFC 9068), or `JWT` for one that
    /// issues plain JWTs (a token without `typ` is then taken too). An ID token or another
    /// JWT of the provider's, replayed as an access token, carries another.
    pub typ: String,
    /// How far `exp` and `nbf` may be off, for clocks that differ.
    #[serde(with = "humantime_serde")]
    pub leeway: Duration,
    /// Where the provider's keys are, when its metadata does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Opaque (non-JWT) tokens are introspected (RFC 7662) with these credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub introspection: Option<Introspection>,
    /// Who mcpx is at the provider's token endpoint, for token exchange (RFC 8693) on behalf of
    /// a caller of a per-identity server.
    #[serde(rename = "clientId", skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret (`${VAR}` expands; never logged), sent as HTTP Basic.
    #[serde(rename = "clientSecret", skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Instead of a secret, its private key (a PKCS#8 PEM, P-256 or RSA; `${file:…}` or
    /// `${cred:…}` says where), with which mcpx signs a JWT for each request to the token
    /// endpoint (`private_key_jwt`, RFC 7523): no secret crosses the network.
    #[serde(rename = "clientKey", skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// The `kid` the provider knows that key by, if it asks for one.
    #[serde(rename = "clientKeyId", skip_serializing_if = "Option::is_none")]
    pub client_key_id: Option<String>,
}

impl Default for External {
    fn default() -> Self {
        External {
            issuer: None,
            audiences: Vec::new(),
            algorithms: vec![Alg::Rs256, Alg::Ps256, Alg::Es256, Alg::Es384, Alg::EdDsa],
            typ: "at+jwt".into(),
            leeway: Duration::from_secs(60),
            jwks_uri: None,
            introspection: None,
            client_id: None,
            client_secret: None,
            client_key: None,
            client_key_id: None,
        }
    }
}

/// The signature algorithms mcpx verifies: asymmetric only, by their JOSE names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// RSASSA-PSS with SHA-256.
    Ps256,
    /// RSASSA-PSS with SHA-384.
    Ps384,
    /// RSASSA-PSS with SHA-512.
    Ps512,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// ECDSA on P-384 with SHA-384.
    Es384,
    /// Ed25519 (RFC 8037).
    EdDsa,
}

impl Alg {
    /// Every one, in the order of their names.
    pub const ALL: [Alg; 9] = [
        Alg::Rs256,
        Alg::Rs384,
        Alg::Rs512,
        Alg::Ps256,
        Alg::Ps384,
        Alg::Ps512,
        Alg::Es256,
        Alg::Es384,
        Alg::EdDsa,
    ];

    /// Its JOSE name.
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 9] = [
            "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
        ];
        NAMES[self as usize]
    }

    /// The algorithm `name` names, if mcpx verifies it (never `none`, never an HMAC).
    pub fn named(name: &str) -> Option<Alg> {
        Alg::ALL.into_iter().find(|alg| alg.name() == name)
    }
}

impl TryFrom<String> for Alg {
    type Error = String;

    fn try_from(name: String) -> Result<Alg, String> {
        Alg::named(&name).ok_or_else(|| {
            let known: Vec<&str> = Alg::ALL.iter().map(|a| a.name()).collect();
            format!(
                "{name:?} is not an algorithm mcpx verifies ({}); `none` and HMAC never are",
                known.join(", ")
            )
        })
    }
}

impl From<Alg> for &'static str {
    fn from(alg: Alg) -> &'static str {
        alg.name()
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
pub fn state_dir() -> PathBuf {
    let dirs = directories::ProjectDirs::from("", "", "mcpx");
    dirs.as_ref()
        .map(|d| {
            d.state_dir()
                .unwrap_or_else(|| d.data_local_dir())
                .to_path_buf()
        })
        .unwrap_or_else(private_temp_dir)
}
