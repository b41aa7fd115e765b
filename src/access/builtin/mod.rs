//! A small OAuth 2.1 authorization server of mcpx's own (`auth.mode = "builtin"`), for the
//! personal gateway behind a tunnel that claude.ai, ChatGPT or an editor elsewhere log in to:
//! RFC 8414 metadata (here), the authorization endpoint ([`authorize`]) and its consent page
//! ([`consent`]), the token, revocation and registration endpoints ([`token`]) with the codes
//! and tokens they deal in ([`grants`]), clients by registration or metadata document
//! ([`clients`]), `private_key_jwt` ([`assertion`]), the signing key and JWK Set ([`signing`]),
//! and what is remembered across restarts ([`store`]). Its access
//! tokens are verified by the same path as an external provider's
//! ([`super::external::Verifier`]), with its own keys and no fetching.
//!
//! Its endpoints are at `/oauth/…`, with `/authorize`, `/token` and `/register` as aliases for
//! 2025-03-26 clients that guess them from the origin. The issuer is `auth.publicUrl`.

mod answers;
pub mod assertion;
mod authorize;
pub mod clients;
pub mod consent;
pub mod grants;
mod registration;
pub mod signing;
pub mod store;
mod token;

use super::external::Verifier;
use super::issuer::Issuer;
use crate::cluster::ClusterKeys;
use crate::config::Settings;
use answers::{json_answer, oauth_error, text, with_headers};
use assertion::Seen;
use clients::Clients;
use consent::Consents;
use grants::{GrantError, Grants};
use http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The subject of every token: the gateway has one owner, who consents for each client.
pub const OWNER: &str = "owner";

/// The most bytes of a request body an endpoint reads.
pub const MAX_BODY: usize = 64 * 1024;

/// The paths the server answers, and what each is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Endpoint {
    Metadata,
    Keys,
    Authorize,
    Token,
    Register,
    Revoke,
}

impl Endpoint {
    fn of(path: &str) -> Option<Endpoint> {
        Some(match path {
            "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration" => {
                Endpoint::Metadata
            }
            "/oauth/jwks.json" => Endpoint::Keys,
            "/oauth/authorize" | "/authorize" => Endpoint::Authorize,
            "/oauth/token" | "/token" => Endpoint::Token,
            "/oauth/register" | "/register" => Endpoint::Register,
            "/oauth/revoke" => Endpoint::Revoke,
            _ => return None,
        })
    }

    /// Whether a browser's script on any origin may call it (a browser client such as the
    /// Inspector); the authorization endpoint is navigated to, never fetched.
    fn open_to_scripts(self) -> bool {
        self != Endpoint::Authorize
    }
}

/// A request to the server, as the HTTP door read it.
#[derive(Debug)]
pub struct Request<'r> {
    /// Its method.
    pub method: &'r Method,
    /// Its path.
    pub path: &'r str,
    /// Its query string.
    pub query: Option<&'r str>,
    /// Its headers.
    pub headers: &'r HeaderMap,
    /// Its body, whole.
    pub body: &'r [u8],
}

/// The authorization server.
#[derive(Debug)]
pub struct AuthServer {
    issuer: String,
    /// The scopes a client may ask: `auth.scopes`, and those rules name.
    grantable: Vec<String>,
    /// Those granted when a client asks none.
    default_scopes: Vec<String>,
    owner_secret: Option<String>,
    signer: Arc<signing::Signer>,
    clients: Clients,
    consents: Arc<Consents>,
    grants: Grants,
    assertions: Seen,
}

impl AuthServer {
    /// The server `[auth.builtin]` describes, signing with a key derived from `keys`, its
    /// consents waiting in `consents`.
    pub fn new(
        settings: &Settings,
        keys: &ClusterKeys,
        consents: Arc<Consents>,
    ) -> Result<AuthServer, String> {
        let auth = &settings.config.auth;
        let builtin = &auth.builtin;
        let issuer = auth.public_url.clone().unwrap_or_default();
        let signer = Arc::new(signing::Signer::new(keys)?);
        let store = Arc::new(store::Store::load(&builtin.state_file)?);
        let mut grantable = auth.scopes.clone();
        for rule in &auth.rules {
            grantable.extend(rule.scopes.iter().chain(rule.step_up.values()).cloned());
        }
        grantable.sort();
        grantable.dedup();
        if !issuer.starts_with("https://")
            && !url::Url::parse(&issuer).is_ok_and(|u| clients::on_loopback(&u))
        {
            tracing::warn!("auth.publicUrl {issuer} is neither https nor loopback: browsers will not keep the consent page's cookie, so no consent can complete");
        }
        Ok(AuthServer {
            grants: Grants::new(
                issuer.clone(),
                Arc::clone(&signer),
                Arc::clone(&store),
                builtin,
            ),
            clients: Clients::new(builtin, store),
            issuer,
            grantable,
            default_scopes: auth.scopes.clone(),
            owner_secret: settings.owner_secret.clone()?,
            signer,
            consents,
            assertions: Seen::default(),
        })
    }

    /// Whether an owner secret is configured: what the approval page needs.
    pub fn has_owner_secret(&self) -> bool {
        self.owner_secret.is_some()
    }

    /// Whether `presented` is the owner secret (compared in constant time).
    pub fn is_owner_secret(&self, presented: &str) -> bool {
        let secret = self.owner_secret.as_deref();
        secret.is_some_and(|secret| crate::access::same_secret(presented, secret))
    }

    /// Whether `path` is one of the server's.
    pub fn serves(path: &str) -> bool {
        Endpoint::of(path).is_some()
    }

    /// The verifier of the server's own access tokens.
    pub fn verifier(&self) -> Verifier {
        Verifier::own(Issuer::own(self.issuer.clone(), self.signer.keys()))
    }

    /// Answers `request`; `door_exists` says whether a door (`/mcp`, `/mcp/NAME`) is one a
    /// token may be asked for.
    pub async fn answer(
        &self,
        request: Request<'_>,
        door_exists: &(dyn Fn(&str) -> bool + Sync),
    ) -> Response<String> {
        let Some(endpoint) = Endpoint::of(request.path) else {
            return text(StatusCode::NOT_FOUND, "no such endpoint\n");
        };
        let method = request.method;
        let mut answer = match (endpoint, method) {
            (endpoint, &Method::OPTIONS) if endpoint.open_to_scripts() => with_headers(
                text(StatusCode::NO_CONTENT, ""),
                &[
                    (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"),
                    (
                        header::ACCESS_CONTROL_ALLOW_HEADERS,
                        "authorization, content-type, mcp-protocol-version",
                    ),
                    (header::ACCESS_CONTROL_MAX_AGE, "600"),
                ],
            ),
            (Endpoint::Metadata, &Method::GET) => json_answer(StatusCode::OK, &self.metadata()),
            (Endpoint::Keys, &Method::GET) => json_answer(StatusCode::OK, self.signer.set()),
            (Endpoint::Authorize, &Method::GET) => {
                self.authorize(&form(request.query.unwrap_or("").as_bytes()), door_exists)
                    .await
            }
            (Endpoint::Authorize, &Method::POST) => self.decide(&request),
            (Endpoint::Token, &Method::POST) => self.token(&request).await,
            (Endpoint::Register, &Method::POST) if self.clients.registration() => {
                self.register(request.body)
            }
            (Endpoint::Register, &Method::POST) => oauth_error(
                StatusCode::FORBIDDEN,
                GrantError(
                    "access_denied",
                    "registration is turned off (auth.builtin.registration)".into(),
                ),
            ),
            (Endpoint::Revoke, &Method::POST) => self.revoke(&request).await,
            _ => text(
                StatusCode::METHOD_NOT_ALLOWED,
                "this endpoint does not take that method\n",
            ),
        };
        if endpoint.open_to_scripts() {
            let headers = answer.headers_mut();
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
        answer
    }

    /// RFC 8414's document.
    fn metadata(&self) -> Value {
        let at = |path: &str| format!("{}{path}", self.issuer);
        let algorithms: Vec<&str> = crate::config::Alg::ALL.iter().map(|a| a.name()).collect();
        let mut document = json!({
            "issuer": self.issuer,
            "authorization_endpoint": at("/oauth/authorize"),
            "token_endpoint": at("/oauth/token"),
            "revocation_endpoint": at("/oauth/revoke"),
            "jwks_uri": at("/oauth/jwks.json"),
            "scopes_supported": self.grantable,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": algorithms,
            "revocation_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
            "client_id_metadata_document_supported": self.clients.client_documents(),
            "authorization_response_iss_parameter_supported": true,
        });
        if self.clients.registration() {
            document["registration_endpoint"] = json!(at("/oauth/register"));
        }
        document
    }
}

/// A query string or form body as a map (a name given twice: the last).
fn form(text: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(text).into_owned().collect()
}
