//! mcpx as an OAuth 2.1 client of its remote upstreams, as the MCP authorization specification
//! asks of a client: discovery ([`discovery`]), a login in the user's browser ([`login`]), the
//! tokens kept in the user's credential store ([`store`]), and an [`Authorizer`] per server that
//! puts the access token on each request and refreshes it before it expires or when the server
//! refuses it, one refresh at a time.

pub mod authorize;
pub mod discovery;
pub mod login;
pub mod store;

use crate::config::ServerSettings;
use crate::json::Member;
use crate::net::client::{fetch, Pool};
use crate::sync::lock;
use base64::Engine;
use discovery::Challenge;
use http::{HeaderMap, HeaderValue, Method};
use login::Introduction;
use serde_json::Value;
use std::sync::Mutex;
use store::{now_secs, Credential, Slot};

/// The tokens of one server, kept fresh.
#[derive(Debug)]
pub struct Authorizer {
    server: String,
    url: String,
    /// Where its credential is kept: the server's own, or one person's.
    slot: Slot,
    /// The credential in use (re-read from the store when the server refuses it: a login from
    /// `mcpx auth login` may have written a new one).
    current: Mutex<Option<Credential>>,
    /// Held while a refresh is in flight, so that callers wait for it rather than refresh again
    /// with the same refresh token.
    refreshing: smol::lock::Mutex<()>,
    /// How mcpx introduces itself to an authorization server the server moves to.
    introduction: Introduction,
    /// The access token last found refused for good: whether the server moved to another
    /// authorization server is asked once per token, not on every refused request.
    move_checked_for: Mutex<Option<String>>,
}

/// Why a request cannot be authorized.
#[derive(Debug, Clone, PartialEq)]
pub enum NeedsLogin {
    /// No credential, or one the server refused and that cannot be refreshed.
    Login(String),
}

impl std::fmt::Display for NeedsLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let NeedsLogin::Login(server) = self;
        write!(f, "run `mcpx auth login {server}`")
    }
}

impl Authorizer {
    /// The authorizer of server `server` at `url`, its tokens in `slot`.
    pub fn new(server: &str, url: &str, slot: Slot, introduction: Introduction) -> Authorizer {
        let current = slot.get().filter(|c| c.server_url == url);
        Authorizer {
            server: server.to_owned(),
            url: url.to_owned(),
            slot,
            current: Mutex::new(current),
            refreshing: smol::lock::Mutex::new(()),
            introduction,
            move_checked_for: Mutex::new(None),
        }
    }

    /// The connections to a `url` server and, unless its configured headers carry an
    /// `Authorization` of their own, its authorizer: what both HTTP wires start from.
    pub fn reach(
        name: &str,
        server: ServerSettings<'_>,
        credentials: Slot,
    ) -> Result<(Pool, Option<Authorizer>), String> {
        let pool = pool_for(server)?;
        let url = server.remote_url().unwrap_or_default();
        let auth = (!pool.carries_authorization())
            .then(|| Authorizer::new(name, url, credentials, Introduction::of(server)));
        Ok((pool, auth))
    }

    /// The access token as it stands, without refreshing: for requests sent from background
    /// tasks (answers to the server's questions, its GET stream).
    pub fn current_token(&self) -> Option<String> {
        lock(&self.current).as_ref().map(|c| c.access_token.clone())
    }

    /// The access token to send now, refreshed first if it is about to expire; `None` when there
    /// is no credential (the server may not need one).
    pub async fn token(&self) -> Option<String> {
        // Only the token is copied out: this runs on every request.
        let (token, due) = {
            let current = lock(&self.current);
            let current = current.as_ref()?;
            let due = current.due_for_refresh() && current.refresh_token.is_some();
            (current.access_token.clone(), due)
        };
        if due {
            return self.refresh(Some(&token)).await.ok();
        }
        Some(token)
    }

    /// The server refused `used` (401, with `challenge`) on the `attempt`th try of a request: a
    /// fresh token to try once more with, or, on the second refusal, a login; before a login is
    /// asked for, a move to another authorization server is followed.
    pub async fn after_refusal(
        &self,
        used: Option<&str>,
        attempt: u32,
        challenge: &Challenge,
    ) -> Result<(), NeedsLogin> {
        let outcome = match attempt {
            0 => self.refused(used).await.map(drop),
            _ => Err(self.needs_login()),
        };
        if outcome.is_err() {
            self.follow_a_move(used, challenge).await;
        }
        outcome
    }

    /// The credential is refused for good. If the server now names another authorization
    /// server than the one that issued it, mcpx registers there at once, as a first login
    /// would (SEP-2352: a client's registration and tokens belong to the server that issued
    /// them), and keeps the registration for the login that follows: the person is asked only
    /// for what needs a person.
    async fn follow_a_move(&self, used: Option<&str>, challenge: &Challenge) {
        {
            let mut checked = lock(&self.move_checked_for);
            if checked.as_deref() == used {
                return;
            }
            *checked = used.map(str::to_owned);
        }
        let _one_at_a_time = self.refreshing.lock().await;
        let stored = self.slot.read().await;
        let Some(mut credential) = stored.filter(|c| c.server_url == self.url) else {
            return;
        };
        let auth = match discovery::discover(&self.url, challenge).await {
            Ok(discovered) => discovered.auth,
            Err(e) => {
                tracing::debug!(server = %self.server, "which authorization server it names now is unknown: {e}");
                return;
            }
        };
        if auth.issuer == credential.issuer || credential.registrations.contains_key(&auth.issuer) {
            return;
        }
        let (server, from, to) = (&self.server, &credential.issuer, &auth.issuer);
        match login::register_ahead(server, &self.introduction, &auth).await {
            Ok(None) => {
                tracing::warn!(%server, %from, %to, "the server moved to another authorization server; a login there is needed");
            }
            Ok(Some(registration)) => {
                tracing::warn!(%server, %from, %to, "the server moved to another authorization server; mcpx registered there, a login is needed");
                credential
                    .registrations
                    .insert(auth.issuer.clone(), registration);
                if let Err(e) = self.slot.keep(Some(credential)).await {
                    tracing::warn!(%server, "the registration could not be saved: {e}");
                }
            }
            Err(e) => {
                tracing::warn!(%server, %from, %to, "the server moved to another authorization server; registering there failed: {e}");
            }
        }
    }

    /// The server refused `used` (401): a new token if one can be had (another caller's refresh,
    /// a login written to the store since, or a refresh of our own); otherwise a login is needed.
    pub async fn refused(&self, used: Option<&str>) -> Result<String, NeedsLogin> {
        self.refresh(used).await
    }

    /// One refresh at a time: whoever comes second finds the token already changed and takes it.
    async fn refresh(&self, used: Option<&str>) -> Result<String, NeedsLogin> {
        let _one_at_a_time = self.refreshing.lock().await;
        let stored = self.slot.read().await.filter(|c| c.server_url == self.url);
        let current = lock(&self.current).clone();
        let newest = match (current, stored) {
            (Some(current), Some(stored)) if stored.access_token != current.access_token => stored,
            (current, stored) => match current.or(stored) {
                Some(credential) => credential,
                None => return Err(self.needs_login()),
            },
        };
        if Some(newest.access_token.as_str()) != used && !newest.expires_within(0) {
            *lock(&self.current) = Some(newest.clone());
            return Ok(newest.access_token);
        }
        let Some(refresh_token) = newest.refresh_token.clone() else {
            return Err(self.needs_login());
        };
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.as_str()),
            ("resource", newest.resource.as_str()),
        ];
        match token_request(&newest, &form).await {
            Ok(answer) => {
                let refreshed = answer.apply(newest);
                *lock(&self.current) = Some(refreshed.clone());
                if let Err(e) = self.slot.keep(Some(refreshed.clone())).await {
                    tracing::warn!(server = %self.server, "the refreshed token could not be saved: {e}");
                }
                tracing::info!(server = %self.server, "access token refreshed");
                Ok(refreshed.access_token)
            }
            Err(e) => {
                // A refused refresh token needs a person: it is forgotten, so that no later
                // request tries it again.
                tracing::warn!(server = %self.server, "refreshing the access token failed: {e}");
                let spent = Credential {
                    refresh_token: None,
                    ..newest
                };
                *lock(&self.current) = Some(spent.clone());
                let _ = self.slot.keep(Some(spent)).await;
                Err(self.needs_login())
            }
        }
    }

    /// Remembers that the server asked for `scope` beyond what the token has, so that the next
    /// login asks for it too.
    pub fn wants_scope(&self, scope: &str) {
        let Some(mut credential) = self.slot.get() else {
            return;
        };
        credential.wanted_scope = Some(scope.to_owned());
        if let Err(e) = self.slot.put(Some(credential)) {
            tracing::warn!(server = %self.server, "could not remember the scope asked for: {e}");
        }
    }

    fn needs_login(&self) -> NeedsLogin {
        NeedsLogin::Login(self.server.clone())
    }
}

/// A token endpoint's answer (RFC 6749 §5.1).
#[derive(Debug)]
pub struct TokenAnswer {
    access_token: String,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
    scope: Option<String>,
}

impl TokenAnswer {
    /// `credential` with these tokens; a refresh token the server did not rotate is kept.
    pub fn apply(self, mut credential: Credential) -> Credential {
        credential.access_token = self.access_token;
        if self.refresh_token.is_some() {
            credential.refresh_token = self.refresh_token;
        }
        credential.expires_at = self.expires_in.map(|s| now_secs().saturating_add(s));
        credential.lifetime = self.expires_in;
        if self.scope.is_some() {
            credential.scope = self.scope;
        }
        credential
    }
}

/// The token request's form and headers: the client authenticates as its method says.
fn token_form(client: &Credential, form: &[(&str, &str)]) -> Result<(String, HeaderMap), String> {
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    body.extend_pairs(form);
    let mut headers = HeaderMap::new();
    match (client.token_auth_method.as_str(), &client.client_secret) {
        ("client_secret_basic", Some(secret)) => {
            let encode =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", encode(&client.client_id), encode(secret));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            let value =
                HeaderValue::try_from(format!("Basic {basic}")).map_err(|e| e.to_string())?;
            headers.insert(http::header::AUTHORIZATION, value);
        }
        ("client_secret_post", Some(secret)) => {
            body.append_pair("client_id", &client.client_id);
            body.append_pair("client_secret", secret);
        }
        _ => {
            body.append_pair("client_id", &client.client_id);
        }
    }
    Ok((body.finish(), headers))
}

/// POSTs `form` to the credential's token endpoint, authenticating as its client says.
pub async fn token_request(
    client: &Credential,
    form: &[(&str, &str)],
) -> Result<TokenAnswer, String> {
    let (body, headers) = token_form(client, form)?;
    let answer = fetch(
        Method::POST,
        &client.token_endpoint,
        headers,
        Some(("application/x-www-form-urlencoded", body)),
    )
    .await?;
    read_token_answer(answer.status, &answer.body)
}

/// A token endpoint's answer (`status`, `body`), or why it gives no token: whatever the server
/// sends, never a panic.
pub fn read_token_answer(status: http::StatusCode, body: &[u8]) -> Result<TokenAnswer, String> {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if !status.is_success() {
        let error = value
            .member("error")
            .and_then(Value::as_str)
            .unwrap_or("no error code");
        return Err(format!("the token endpoint answered {} ({error})", status));
    }
    let text = |key: &str| value.member(key).and_then(Value::as_str).map(str::to_owned);
    Ok(TokenAnswer {
        access_token: text("access_token").ok_or("the token endpoint sent no access_token")?,
        refresh_token: text("refresh_token"),
        expires_in: value.member("expires_in").and_then(Value::as_u64),
        scope: text("scope"),
    })
}

/// Puts `Authorization: Bearer TOKEN` in `headers`, when there is a token.
pub fn bearer(headers: &mut HeaderMap, token: Option<&str>) -> Result<(), String> {
    if let Some(token) = token {
        let mut value = HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|_| "the access token has bytes a header cannot carry".to_owned())?;
        value.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, value);
    }
    Ok(())
}
/// A pool for a `url` server: its URL, and its configured headers.
fn pool_for(server: ServerSettings<'_>) -> Result<Pool, String> {
    use http::{HeaderName, Uri};
    let url = server.remote_url().unwrap_or_default();
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("`url` {url:?} is not a URL: {e}"))?;
    if uri.host().is_none() {
        return Err(format!("`url` {url:?} has no host"));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &server.expanded.headers {
        let header = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("headers.{name} is not a header name"))?;
        let mut value = HeaderValue::try_from(value.as_str())
            .map_err(|_| format!("headers.{name} has bytes a header cannot carry"))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok(Pool::new(uri, headers))
}
