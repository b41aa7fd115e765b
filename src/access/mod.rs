//! Who may come in through the HTTP door, as whom: each door (`/mcp`, `/mcp/NAME`) is an OAuth
//! 2.1 protected resource (RFC 9728 metadata at `/.well-known/oauth-protected-resource/mcp[/NAME]`)
//! whose callers show a bearer token ([`external`]: a provider's), or the static
//! `daemon.token`, or nothing on a daemon only its own user may reach. A caller let in becomes an
//! [`Identity`] that goes with each of its requests; [`policy`] decides which doors and tools
//! it has. Refusals carry what RFC 6750 and the MCP authorization specification ask for:
//! 401 with `WWW-Authenticate: Bearer resource_metadata=…, scope=…` (and `error="invalid_token"`
//! for a bad token), 403 `insufficient_scope` naming every scope the operation needs.

pub mod builtin;
pub mod exchange;
pub mod external;
pub mod identity;
pub mod issuer;
pub mod jose;
pub mod policy;

use crate::cluster::ClusterKeys;
use crate::config::{AuthMode, Settings};
pub use identity::{Identity, Kind, Person};
use policy::{Denial, Policy};
use serde_json::{json, Value};
use std::sync::Arc;

/// Where each door's protected-resource metadata is, before the door's path.
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The `reason` label of `mcpx_auth_failures_total`.
    pub reason: &'static str,
    /// What the client is told (`error_description`).
    pub description: String,
    /// The token could not be checked at all (the provider is unreachable): 503, not 401.
    pub unavailable: bool,
}

impl Rejection {
    /// A token that is not good.
    pub fn invalid(reason: &'static str, description: impl Into<String>) -> Rejection {
        Rejection {
            reason,
            description: description.into(),
            unavailable: false,
        }
    }

    /// A token mcpx cannot check now.
    pub fn unavailable(description: String) -> Rejection {
        tracing::warn!("cannot verify access tokens: {description}");
        Rejection {
            reason: "keys_unavailable",
            description: "the identity provider could not be reached to verify the token".into(),
            unavailable: true,
        }
    }
}

/// A refused request, as the HTTP door answers it.
#[derive(Debug)]
pub struct Refusal {
    /// 400, 401, 403 or 503.
    pub status: u16,
    /// The `WWW-Authenticate` value, if any.
    pub challenge: Option<String>,
    /// The JSON-RPC error's message.
    pub message: String,
    /// The `reason` label of `mcpx_auth_failures_total`.
    pub reason: &'static str,
}

/// A caller let in: who it is, and the rule that decides for it (`None`: no rules).
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The caller.
    pub identity: Arc<Identity>,
    /// The index of its `[[auth.rules]]` rule.
    pub rule: Option<usize>,
}

/// A request's door and credentials, as far as the gate reads them.
#[derive(Debug, Clone, Copy)]
pub struct Knock<'a> {
    /// The door's path: `/mcp` or `/mcp/NAME`.
    pub door: &'a str,
    /// The door's profile, `None` for `/mcp`.
    pub profile: Option<&'a str>,
    /// The `Authorization` header.
    pub authorization: Option<&'a [u8]>,
    /// The request's query string.
    pub query: Option<&'a str>,
}

/// The resource server.
#[derive(Debug)]
pub struct Gate {
    token: Option<String>,
    public_url: Option<String>,
    scopes: Vec<String>,
    verifier: Option<external::Verifier>,
    /// `mode = "builtin"`: the authorization server whose tokens the verifier takes.
    authorization_server: Option<builtin::AuthServer>,
    policy: Policy,
    /// The callers let in without a provider's token, made once: most requests are theirs.
    owner: Arc<Identity>,
    token_holder: Arc<Identity>,
}

impl Gate {
    /// The gate `[auth]` and `daemon.token` describe; the built-in authorization server signs
    /// with a key derived from `cluster` (else the daemon's own) and its consents wait in
    /// `consents`. An error names a `${VAR}` not set, or a key or state file that is unusable.
    pub fn from_settings(
        settings: &Settings,
        cluster: Option<&ClusterKeys>,
        consents: Arc<builtin::consent::Consents>,
    ) -> Result<Gate, String> {
        let auth = &settings.config.auth;
        let mut authorization_server = None;
        let verifier = match auth.mode {
            AuthMode::External => {
                let secret = settings.introspection_secret.clone()?;
                // A token exchange's secret or key that cannot be had stops the start here,
                // rather than every exchange later.
                exchange::Exchanger::new(settings)?;
                Some(external::Verifier::new(&auth.external, secret))
            }
            AuthMode::Builtin => {
                let own;
                let keys = match cluster {
                    Some(keys) => keys,
                    None => {
                        own = ClusterKeys::own(&auth.builtin.key_file)?;
                        &own
                    }
                };
                let server = builtin::AuthServer::new(settings, keys, consents)?;
                let verifier = server.verifier();
                authorization_server = Some(server);
                Some(verifier)
            }
            AuthMode::Token => None,
        };
        Ok(Gate {
            token: settings.daemon_token.clone()?,
            public_url: auth.public_url.clone(),
            scopes: auth.scopes.clone(),
            verifier,
            authorization_server,
            policy: Policy::new(&auth.rules),
            owner: Arc::new(Identity::of_kind(Kind::LocalOwner)),
            token_holder: Arc::new(Identity::of_kind(Kind::DaemonToken)),
        })
    }

    /// Whether callers prove who they are (a token of some kind); otherwise only the daemon's
    /// own user may come in.
    pub fn authenticates(&self) -> bool {
        self.token.is_some() || self.verifier.is_some()
    }

    /// mcpx's own authorization server, in `mode = "builtin"`.
    pub fn authorization_server(&self) -> Option<&builtin::AuthServer> {
        self.authorization_server.as_ref()
    }

    /// The public origin, when configured: a host the door answers to.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// The protected-resource metadata served at `path` (`/.well-known/oauth-protected-
    /// resource` + a door's path, or alone for `/mcp`), if the gate takes tokens of a provider
    /// and `door_exists` knows that door.
    pub fn metadata(&self, path: &str, door_exists: impl Fn(&str) -> bool) -> Option<Value> {
        let verifier = self.verifier.as_ref()?;
        let door = match path.strip_prefix(METADATA_PREFIX)? {
            "" | "/" => "/mcp",
            door => door,
        };
        if !door_exists(door) {
            return None;
        }
        let mut document = json!({
            "resource": self.door_url(door)?,
            "authorization_servers": [verifier.issuer()],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcpx",
        });
        if !self.scopes.is_empty() {
            document["scopes_supported"] = json!(self.scopes);
        }
        Some(document)
    }

    /// Lets a request in, or says why not.
    pub async fn admit(&self, knock: Knock<'_>) -> Result<Admitted, Refusal> {
        if knock.query.is_some_and(carries_token) {
            let why = Why {
                status: 400,
                error: Some("invalid_request"),
                message:
                    "access tokens are taken only in the Authorization header, never in the URL",
                reason: "query_token",
            };
            return Err(self.challenge(knock.door, why, &self.scopes));
        }
        let identity = match (&self.verifier, &self.token) {
            // Boxed: only a daemon that verifies tokens carries that state in its requests.
            (Some(verifier), _) => Box::pin(self.verified(verifier, &knock)).await?,
            (None, Some(token)) => {
                if !bearer(knock.authorization).is_some_and(|p| same_secret(p, token)) {
                    return Err(Refusal {
                        status: 401,
                        challenge: Some("Bearer realm=\"mcpx\"".into()),
                        message: "Unauthorized: send Authorization: Bearer with the daemon's token"
                            .into(),
                        reason: "daemon_token",
                    });
                }
                Arc::clone(&self.token_holder)
            }
            (None, None) => Arc::clone(&self.owner),
        };
        let rule = self
            .policy
            .decide(&identity, knock.profile)
            .map_err(|denial| {
                let message = match denial {
                    Denial::NoRule => "Forbidden: no auth.rules rule admits this caller",
                    Denial::Door => "Forbidden: this caller's rule does not open this door",
                };
                Refusal {
                    status: 403,
                    challenge: None,
                    message: message.into(),
                    reason: "policy",
                }
            })?;
        Ok(Admitted { identity, rule })
    }

    /// The caller `knock`'s access token stands for, if the provider vouches for it and it
    /// grants the door's scopes.
    async fn verified(
        &self,
        verifier: &external::Verifier,
        knock: &Knock<'_>,
    ) -> Result<Arc<Identity>, Refusal> {
        let Some(token) = bearer(knock.authorization) else {
            let why = Why {
                status: 401,
                error: None,
                message: "Unauthorized: send an access token (Authorization: Bearer)",
                reason: "missing",
            };
            return Err(self.challenge(knock.door, why, &self.scopes));
        };
        let door_url = self.door_url(knock.door).unwrap_or_default();
        let identity = match verifier.verify(token, &door_url).await {
            Ok(identity) => identity,
            Err(rejection) if rejection.unavailable => {
                return Err(Refusal {
                    status: 503,
                    challenge: None,
                    message: format!("Service Unavailable: {}", rejection.description),
                    reason: rejection.reason,
                })
            }
            Err(rejection) => {
                let message = format!("Unauthorized: {}", rejection.description);
                let why = Why {
                    status: 401,
                    error: Some("invalid_token"),
                    message: &message,
                    reason: rejection.reason,
                };
                return Err(self.challenge(knock.door, why, &self.scopes));
            }
        };
        if let Some(missing) = self.scopes.iter().find(|s| !identity.has_scope(s)) {
            let message = format!("Forbidden: the token does not grant the scope {missing:?}");
            return Err(self.insufficient_scope(knock.door, &message, "scope", &self.scopes));
        }
        Ok(identity)
    }

    /// Whether some calls need a scope more than the door's ([`Gate::step_up`]).
    pub fn has_step_up(&self) -> bool {
        self.policy.has_step_up()
    }

    /// The 403 a call of `tool` at `door` gets when `admitted`'s rule asks a scope its token
    /// lacks.
    pub fn step_up(&self, admitted: &Admitted, door: &str, tool: &str) -> Option<Refusal> {
        let needed = self.policy.step_up(admitted.rule?, tool)?;
        if admitted.identity.has_scope(needed) {
            return None;
        }
        let mut scopes = self.scopes.clone();
        scopes.push(needed.to_owned());
        let message = format!("Forbidden: {tool} needs the scope {needed:?}");
        Some(self.insufficient_scope(door, &message, "step_up", &scopes))
    }

    /// RFC 6750's 403, naming every scope the operation needs.
    fn insufficient_scope(
        &self,
        door: &str,
        message: &str,
        reason: &'static str,
        scopes: &[String],
    ) -> Refusal {
        let why = Why {
            status: 403,
            error: Some("insufficient_scope"),
            message,
            reason,
        };
        self.challenge(door, why, scopes)
    }

    /// Whether `/healthz` may tell this caller each upstream's state: with no token to show,
    /// or with the daemon's own (a provider's token is not checked for a probe).
    pub fn trusts_probe(&self, authorization: Option<&[u8]>) -> bool {
        match (&self.verifier, &self.token) {
            (Some(_), _) => false,
            (None, Some(token)) => bearer(authorization).is_some_and(|p| same_secret(p, token)),
            (None, None) => true,
        }
    }

    /// The door's public URL: `publicUrl` + `/mcp[/NAME]`.
    fn door_url(&self, door: &str) -> Option<String> {
        self.public_url.as_ref().map(|url| format!("{url}{door}"))
    }

    /// A refusal with the challenge RFC 6750 and RFC 9728 describe: where the door's metadata
    /// is, the scopes the operation needs, and the error with its description.
    fn challenge(&self, door: &str, why: Why<'_>, scopes: &[String]) -> Refusal {
        let Why {
            status,
            error,
            message,
            reason,
        } = why;
        let mut params = Vec::new();
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
            let description = message.split_once(": ").map_or(message, |(_, d)| d);
            params.push(format!("error_description=\"{}\"", quoted(description)));
        }
        if let Some(url) = &self.public_url {
            params.push(format!(
                "resource_metadata=\"{url}{METADATA_PREFIX}{door}\""
            ));
        }
        if !scopes.is_empty() {
            params.push(format!("scope=\"{}\"", scopes.join(" ")));
        }
        Refusal {
            status,
            challenge: Some(format!("Bearer {}", params.join(", "))),
            message: message.to_owned(),
            reason,
        }
    }
}

/// What a challenge says went wrong.
struct Why<'m> {
    status: u16,
    /// RFC 6750's `error`, if it names one.
    error: Option<&'static str>,
    message: &'m str,
    reason: &'static str,
}

/// A quoted-string's content: no `"` or `\` (RFC 6750 §3 allows neither in its values).
fn quoted(text: &str) -> String {
    text.chars().filter(|c| *c != '"' && *c != '\\').collect()
}

/// The token of an `Authorization: Bearer` header (the scheme is case-insensitive).
fn bearer(header: Option<&[u8]>) -> Option<&str> {
    let header = header?;
    let token = header
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
        .map(|_| &header[7..])?;
    std::str::from_utf8(token)
        .ok()
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Whether a query string carries an access token (RFC 6750 §2.3's `access_token`).
fn carries_token(query: &str) -> bool {
    url::form_urlencoded::parse(query.as_bytes()).any(|(key, _)| key == "access_token")
}

/// Compared in constant time, so that timing tells nothing of how much of a guess was right.
pub(crate) fn same_secret(presented: &str, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    presented.as_bytes().ct_eq(token.as_bytes()).into()
}
