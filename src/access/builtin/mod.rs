//! A small OAuth 2.1 authorization server of mcpx's own (`auth.mode = "builtin"`), for the
//! personal gateway behind a tunnel that claude.ai, ChatGPT or an editor elsewhere log in to:
//! RFC 8414 metadata, the authorization endpoint and its consent page ([`consent`]), the token
//! endpoint ([`grants`]), registration and client metadata documents ([`clients`]),
//! `private_key_jwt` ([`assertion`]), revocation and the JWK Set ([`signing`]). Its access
//! tokens are verified by the same path as an external provider's
//! ([`super::external::Verifier`]), with its own keys and no fetching.
//!
//! Its endpoints are at `/oauth/…`, with `/authorize`, `/token` and `/register` as aliases for
//! 2025-03-26 clients that guess them from the origin. The issuer is `auth.publicUrl`.

pub mod assertion;
pub mod clients;
pub mod consent;
pub mod grants;
pub mod signing;
pub mod store;

use super::external::Verifier;
use super::issuer::Issuer;
use crate::cluster::ClusterKeys;
use crate::config::Settings;
use crate::metrics;
use assertion::{claimed_client, Seen, JWT_BEARER};
use clients::{Client, Clients};
use consent::{Asked, Consents, Refused, Waiting, COOKIE};
use grants::{GrantError, Grants};
use http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

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
        if !issuer.starts_with("https://") && !is_loopback_origin(&issuer) {
            tracing::warn!("auth.publicUrl {issuer} is neither https nor loopback: browsers will not keep the consent page's cookie, so no consent can complete");
        }
        Ok(AuthServer {
            grants: Grants::new(
                issuer.clone(),
                Arc::clone(&signer),
                Arc::clone(&store),
                (builtin.access_lifetime, builtin.refresh_lifetime),
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
            (endpoint, &Method::OPTIONS) if endpoint.open_to_scripts() => {
                let mut answer = text(StatusCode::NO_CONTENT, "");
                let headers = answer.headers_mut();
                headers.insert(
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("GET, POST, OPTIONS"),
                );
                headers.insert(
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    HeaderValue::from_static("authorization, content-type, mcp-protocol-version"),
                );
                headers.insert(
                    header::ACCESS_CONTROL_MAX_AGE,
                    HeaderValue::from_static("600"),
                );
                answer
            }
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

    /// `GET /oauth/authorize`: the request checked, then its consent page. What is wrong
    /// with the client or its redirect URI is told on a page (a redirect there could aim at
    /// anyone); the rest goes back to the client.
    async fn authorize(
        &self,
        asked: &HashMap<String, String>,
        door_exists: &(dyn Fn(&str) -> bool + Sync),
    ) -> Response<String> {
        let Some(client_id) = asked.get("client_id") else {
            return error_page(StatusCode::BAD_REQUEST, "The request names no client_id.");
        };
        let client = match self.clients.find(client_id).await {
            Ok(client) => client,
            Err(why) => {
                tracing::info!("refused an authorization request: {why}");
                return error_page(
                    StatusCode::BAD_REQUEST,
                    &format!("This client is not one mcpx can serve: {why}."),
                );
            }
        };
        let Some(redirect_uri) = client.redirect(asked.get("redirect_uri").map(String::as_str))
        else {
            return error_page(
                StatusCode::BAD_REQUEST,
                "The redirect_uri is not one the client registered.",
            );
        };
        let state = asked.get("state").cloned();
        let back = |error: &str, description: &str| {
            let params = [("error", error), ("error_description", description)];
            self.back_to(&redirect_uri, &params, state.as_deref(), StatusCode::FOUND)
        };
        if asked.get("response_type").map(String::as_str) != Some("code") {
            return back(
                "unsupported_response_type",
                "only response_type=code is supported",
            );
        }
        let challenge = asked
            .get("code_challenge")
            .filter(|c| (43..=128).contains(&c.len()));
        let (Some(challenge), Some("S256")) = (
            challenge,
            asked.get("code_challenge_method").map(String::as_str),
        ) else {
            return back(
                "invalid_request",
                "PKCE with code_challenge_method=S256 is required",
            );
        };
        let resource = match asked.get("resource") {
            None => format!("{}/mcp", self.issuer),
            Some(resource) => {
                let door = resource
                    .strip_prefix(&self.issuer)
                    .filter(|door| door_exists(door));
                match door {
                    Some(_) => resource.clone(),
                    None => return back("invalid_target", "resource is not a door of this mcpx"),
                }
            }
        };
        let scopes: Vec<String> = match asked.get("scope") {
            None => self.default_scopes.clone(),
            Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
        };
        if let Some(unknown) = scopes.iter().find(|s| !self.grantable.contains(s)) {
            return back(
                "invalid_scope",
                &format!("the scope {unknown:?} is not one this server grants"),
            );
        }
        let asked = Asked {
            client,
            redirect_uri,
            state,
            challenge: challenge.clone(),
            scopes,
            resource,
        };
        match self.consents.open(asked) {
            Ok(waiting) => {
                tracing::info!(
                    "{} asks to reach {}: its consent page waits (approve with `mcpx auth approve {}`)",
                    waiting.asked.client.name, waiting.asked.resource, waiting.code
                );
                self.consent_page(StatusCode::OK, &waiting, None, true)
            }
            Err(e) => error_page(StatusCode::INTERNAL_SERVER_ERROR, &e),
        }
    }

    /// `POST /oauth/authorize`: the owner's answer on the consent page.
    fn decide(&self, request: &Request<'_>) -> Response<String> {
        let origin = request
            .headers
            .get(header::ORIGIN)
            .map(HeaderValue::as_bytes);
        if origin.is_some_and(|o| o != self.issuer.as_bytes()) {
            return error_page(
                StatusCode::FORBIDDEN,
                "The consent form was sent from another site.",
            );
        }
        let posted = form(request.body);
        let field = |name: &str| posted.get(name).map_or("", String::as_str);
        let cookie = cookie(request.headers, COOKIE);
        let waiting = match self
            .consents
            .find(field("request"), cookie.as_deref(), field("csrf"))
        {
            Ok(waiting) => waiting,
            Err(Refused::Forged) => {
                return error_page(
                    StatusCode::FORBIDDEN,
                    "This consent form does not belong to this browser.",
                )
            }
            Err(_) => {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "This request is no longer waiting: start again from the app.",
                )
            }
        };
        let state = waiting.asked.state.as_deref();
        if field("decision") != "allow" {
            self.consents.close(&waiting.request);
            tracing::info!("the owner denied {}", waiting.asked.client.name);
            metrics::authorization("denied");
            let params = [
                ("error", "access_denied"),
                ("error_description", "the owner denied the request"),
            ];
            return self.back_to(
                &waiting.asked.redirect_uri,
                &params,
                state,
                StatusCode::SEE_OTHER,
            );
        }
        let secret = posted.get("secret").map(String::as_str);
        match self
            .consents
            .approved(&waiting, secret, self.owner_secret.as_deref())
        {
            Ok(()) => {}
            Err(Refused::Locked(left)) => {
                metrics::authorization("locked");
                let notice = format!("Too many wrong secrets: the secret is refused for {} s more. Approving on the host still works.", left.as_secs().max(1));
                return self.consent_page(
                    StatusCode::TOO_MANY_REQUESTS,
                    &waiting,
                    Some(&notice),
                    false,
                );
            }
            Err(_) => {
                let wrong = secret.is_some_and(|s| !s.is_empty());
                if wrong {
                    metrics::authorization("secret_refused");
                }
                let notice = match wrong {
                    true => "That is not the owner secret.",
                    false => "Not approved yet: approve it on the host first.",
                };
                return self.consent_page(StatusCode::FORBIDDEN, &waiting, Some(notice), false);
            }
        }
        self.consents.close(&waiting.request);
        let asked = waiting.asked;
        let (redirect_uri, client_id) = (asked.redirect_uri.clone(), asked.client.id.clone());
        tracing::info!(
            "the owner allowed {} ({client_id}) to reach {}",
            asked.client.name,
            asked.resource
        );
        self.clients.consented(&client_id);
        metrics::authorization("consented");
        let state = asked.state.clone();
        match self.grants.code(asked) {
            Ok(code) => self.back_to(
                &redirect_uri,
                &[("code", &code)],
                state.as_deref(),
                StatusCode::SEE_OTHER,
            ),
            Err(e) => error_page(StatusCode::INTERNAL_SERVER_ERROR, &e),
        }
    }

    /// The consent page, with its security headers (and its cookie when `fresh`).
    fn consent_page(
        &self,
        status: StatusCode,
        waiting: &Waiting,
        notice: Option<&str>,
        fresh: bool,
    ) -> Response<String> {
        let mut answer = html(
            status,
            consent::page(waiting, self.owner_secret.is_some(), notice),
        );
        let headers = answer.headers_mut();
        let redirect = redirect_source(&waiting.asked.redirect_uri);
        let policy = format!("default-src 'none'; style-src 'unsafe-inline'; form-action 'self' {redirect}; frame-ancestors 'none'; base-uri 'none'");
        if let Ok(policy) = HeaderValue::try_from(policy) {
            headers.insert(header::CONTENT_SECURITY_POLICY, policy);
        }
        if fresh {
            let cookie = format!(
                "{COOKIE}={}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=600",
                waiting.cookie
            );
            if let Ok(cookie) = HeaderValue::try_from(cookie) {
                headers.insert(header::SET_COOKIE, cookie);
            }
        }
        answer
    }

    /// The redirect to the client with `params`, its `state` and the issuer (RFC 9207).
    fn back_to(
        &self,
        redirect_uri: &str,
        params: &[(&str, &str)],
        state: Option<&str>,
        status: StatusCode,
    ) -> Response<String> {
        let Ok(mut url) = url::Url::parse(redirect_uri) else {
            return error_page(StatusCode::BAD_REQUEST, "The redirect_uri is not a URL.");
        };
        {
            let mut query = url.query_pairs_mut();
            for (name, value) in params {
                query.append_pair(name, value);
            }
            if let Some(state) = state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", &self.issuer);
        }
        let mut answer = text(status, "");
        if let Ok(location) = HeaderValue::try_from(url.as_str()) {
            answer.headers_mut().insert(header::LOCATION, location);
        }
        answer
    }

    /// `POST /oauth/token`.
    async fn token(&self, request: &Request<'_>) -> Response<String> {
        let posted = form(request.body);
        let client = match self.authenticated(request.headers, &posted).await {
            Ok(client) => client,
            Err(error) => {
                tracing::info!("refused a token request: {}", error.1);
                metrics::authorization("refused");
                return oauth_error(StatusCode::UNAUTHORIZED, error);
            }
        };
        let granted = match posted.get("grant_type").map(String::as_str) {
            Some("authorization_code") => self.grants.exchange(&client.id, &posted),
            Some("refresh_token") => self.grants.refresh(&client.id, &posted),
            Some(other) => Err(GrantError(
                "unsupported_grant_type",
                format!("{other:?} is not a grant this server takes"),
            )),
            None => Err(GrantError(
                "invalid_request",
                "grant_type is required".into(),
            )),
        };
        match granted {
            Ok(tokens) => {
                metrics::authorization(match posted.get("grant_type").map(String::as_str) {
                    Some("refresh_token") => "refreshed",
                    _ => "token",
                });
                let mut answer = json_answer(StatusCode::OK, &tokens);
                answer
                    .headers_mut()
                    .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
                answer
            }
            Err(error) => {
                tracing::info!("refused a token request of {}: {}", client.id, error.1);
                metrics::authorization("refused");
                oauth_error(StatusCode::BAD_REQUEST, error)
            }
        }
    }

    /// `POST /oauth/revoke` (RFC 7009): 200 whatever the token was.
    async fn revoke(&self, request: &Request<'_>) -> Response<String> {
        let posted = form(request.body);
        let client = match self.authenticated(request.headers, &posted).await {
            Ok(client) => client,
            Err(error) => return oauth_error(StatusCode::UNAUTHORIZED, error),
        };
        if let Some(token) = posted.get("token") {
            self.grants.revoke(&client.id, token);
        }
        json_answer(StatusCode::OK, &json!({}))
    }

    /// The client a token or revocation request comes from, authenticated as it registered.
    async fn authenticated(
        &self,
        headers: &HeaderMap,
        posted: &HashMap<String, String>,
    ) -> Result<Client, GrantError> {
        let invalid = |why: String| GrantError("invalid_client", why);
        if headers.contains_key(header::AUTHORIZATION) || posted.contains_key("client_secret") {
            return Err(invalid(
                "this server issues no client secrets: authenticate with none or private_key_jwt"
                    .into(),
            ));
        }
        let assertion = posted.get("client_assertion");
        let id = match (assertion, posted.get("client_id")) {
            (Some(assertion), named) => {
                if posted.get("client_assertion_type").map(String::as_str) != Some(JWT_BEARER) {
                    return Err(invalid(format!(
                        "client_assertion_type must be {JWT_BEARER}"
                    )));
                }
                let claimed = claimed_client(assertion)
                    .ok_or_else(|| invalid("the client assertion names no client".into()))?;
                if named.is_some_and(|named| *named != claimed) {
                    return Err(invalid("client_id is not the assertion's".into()));
                }
                claimed
            }
            (None, Some(named)) => named.clone(),
            (None, None) => return Err(invalid("client_id is required".into())),
        };
        let client = self.clients.find(&id).await.map_err(invalid)?;
        match (&client.authentication, assertion) {
            (clients::Authentication::None, None) => Ok(client),
            (clients::Authentication::None, Some(_)) => Err(invalid(
                "this client is public: it sends no assertion".into(),
            )),
            (clients::Authentication::PrivateKeyJwt { .. }, None) => Err(invalid(
                "this client authenticates with private_key_jwt: send client_assertion".into(),
            )),
            (clients::Authentication::PrivateKeyJwt { .. }, Some(assertion)) => {
                let audiences = [
                    format!("{}/oauth/token", self.issuer),
                    format!("{}/token", self.issuer),
                    self.issuer.clone(),
                ];
                (self
                    .assertions
                    .check(&self.clients, &client, assertion, &audiences)
                    .await)
                    .map_err(invalid)?;
                Ok(client)
            }
        }
    }

    /// `POST /oauth/register` (RFC 7591).
    fn register(&self, body: &[u8]) -> Response<String> {
        let metadata: Value = match serde_json::from_slice(body) {
            Ok(metadata) => metadata,
            Err(e) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    GrantError(
                        "invalid_client_metadata",
                        format!("the body is not JSON: {e}"),
                    ),
                )
            }
        };
        match self.clients.register(metadata) {
            Ok(registered) => {
                tracing::info!("a client registered: {}", registered["client_id"]);
                metrics::authorization("registered");
                json_answer(StatusCode::CREATED, &registered)
            }
            Err((error, why)) => oauth_error(StatusCode::BAD_REQUEST, GrantError(error, why)),
        }
    }
}

/// The seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn is_loopback_origin(origin: &str) -> bool {
    url::Url::parse(origin)
        .is_ok_and(|u| matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")))
}

/// The CSP source a form may go on to: the redirect URI's origin, or its scheme.
fn redirect_source(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.origin().ascii_serialization(),
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => String::new(),
    }
}

/// A query string or form body as a map (a name given twice: the last).
fn form(text: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(text).into_owned().collect()
}

/// The value of cookie `name`.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then(|| value.to_owned())
        })
}

fn text(status: StatusCode, body: &str) -> Response<String> {
    let mut answer = Response::new(body.to_owned());
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    answer
}

fn json_answer(status: StatusCode, value: &Value) -> Response<String> {
    let mut answer = text(status, &value.to_string());
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer
}

fn html(status: StatusCode, page: String) -> Response<String> {
    let mut answer = text(status, "");
    *answer.body_mut() = page;
    let headers = answer.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    answer
}

fn error_page(status: StatusCode, why: &str) -> Response<String> {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcpx</title></head><body><h1>mcpx cannot go on</h1><p>{}</p></body></html>",
        consent::escape(why)
    );
    let mut answer = html(status, page);
    let policy = HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'");
    answer
        .headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, policy);
    answer
}

fn oauth_error(status: StatusCode, GrantError(error, description): GrantError) -> Response<String> {
    json_answer(
        status,
        &json!({"error": error, "error_description": description}),
    )
}
