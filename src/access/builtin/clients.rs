//! Who may ask the built-in authorization server for tokens: a client that names itself by the
//! HTTPS URL of its metadata document (CIMD: the document is fetched under
//! [`fetch_public`]'s rules, or read from a pinned copy, and kept a while), or one that
//! registered itself (RFC 7591), up to a quota of registrations not yet consented to, which
//! expire. Either way its redirect URIs are matched exactly, a loopback one on any port
//! (RFC 8252 §7.3), and it authenticates with nothing (`none`, PKCE doing the work) or with a
//! JWT signed by its own key (`private_key_jwt`, RFC 7523), as ChatGPT's document declares.

use super::store::{Registration, Store};
use crate::config::Builtin;
use crate::deadline::within;
use crate::net::client::fetch_public;
use crate::sync::lock;
use crate::upstream::auth::authorize::random_token;
use crate::upstream::auth::store::now_secs;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most bytes of a fetched document.
const MAX_DOCUMENT: usize = 64 * 1024;

/// How long fetching one may take.
const FETCH_PATIENCE: Duration = Duration::from_secs(5);

/// How long a fetched document is kept when its answer does not say (`Cache-Control`), and
/// the bounds on what it may say.
const KEEP_DOCUMENT: Duration = Duration::from_secs(600);
const KEEP_AT_LEAST: Duration = Duration::from_secs(60);
const KEEP_AT_MOST: Duration = Duration::from_secs(24 * 3600);

/// How a client proves it is itself at the token endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Authentication {
    /// It does not (a public client; PKCE binds the code to it).
    None,
    /// A JWT signed by a key of its JWK Set, given inline or by URL.
    PrivateKeyJwt {
        /// `jwks`.
        jwks: Option<Value>,
        /// `jwks_uri`.
        jwks_uri: Option<String>,
    },
}

/// A client.
#[derive(Debug, Clone)]
pub struct Client {
    /// Its client id.
    pub id: String,
    /// Its `client_name`, else its id.
    pub name: String,
    /// Whether its name is vouched for by the domain serving its document (CIMD); a
    /// registered client names itself.
    pub by_document: bool,
    redirect_uris: Vec<String>,
    /// How it authenticates.
    pub authentication: Authentication,
    /// Whether it may have refresh tokens (`grant_types` names `refresh_token`, or is absent).
    pub refreshes: bool,
}

pub use super::registration::Invalid;

/// Why a client id names no client mcpx serves.
#[derive(Debug, Clone, PartialEq)]
pub enum NotFound {
    /// Its metadata document could not be fetched (and no copy is pinned): it may be a real
    /// client that mcpx cannot reach from here.
    Unfetched(String),
    /// It is not one: unregistered, expired, or its metadata says what mcpx does not serve.
    Refused(String),
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotFound::Unfetched(why) => write!(f, "its metadata document cannot be fetched: {why}"),
            NotFound::Refused(why) => f.write_str(why),
        }
    }
}

impl Client {
    /// The client `metadata` describes, or why it is not one mcpx serves.
    fn from_metadata(id: &str, metadata: &Value, by_document: bool) -> Result<Client, Invalid> {
        let text = |name: &str| metadata.get(name).and_then(Value::as_str);
        let redirect_uris: Vec<String> = (metadata.get("redirect_uris"))
            .and_then(Value::as_array)
            .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned))
            .into_iter()
            .flatten()
            .collect();
        if redirect_uris.is_empty() {
            return Err(("invalid_redirect_uri", "redirect_uris is required".into()));
        }
        if let Some(bad) = redirect_uris.iter().find(|uri| !acceptable_redirect(uri)) {
            return Err((
                "invalid_redirect_uri",
                format!("{bad:?} is not an https URL, a loopback http URL, or an app's own scheme (without a fragment)"),
            ));
        }
        let authentication = match text("token_endpoint_auth_method").unwrap_or("none") {
            "none" => Authentication::None,
            "private_key_jwt" => {
                let jwks = metadata.get("jwks").cloned();
                let jwks_uri = text("jwks_uri").map(str::to_owned);
                if jwks.is_none() && jwks_uri.is_none() {
                    return Err(("invalid_client_metadata", "private_key_jwt needs jwks or jwks_uri".into()));
                }
                Authentication::PrivateKeyJwt { jwks, jwks_uri }
            }
            other => {
                return Err((
                    "invalid_client_metadata",
                    format!("token_endpoint_auth_method {other:?} is not supported: use none or private_key_jwt"),
                ))
            }
        };
        let refreshes = match metadata.get("grant_types").and_then(Value::as_array) {
            Some(grants) => grants.iter().any(|g| g == "refresh_token"),
            None => true,
        };
        Ok(Client {
            id: id.to_owned(),
            name: Some(super::registration::display_name(
                text("client_name").unwrap_or(id),
            ))
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| id.to_owned()),
            by_document,
            redirect_uris,
            authentication,
            refreshes,
        })
    }

    /// The redirect URI a request names, if it is one of the client's: exactly, or a loopback
    /// one on another port. With none named, its only one.
    pub fn redirect(&self, asked: Option<&str>) -> Option<String> {
        let Some(asked) = asked else {
            return match self.redirect_uris.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            };
        };
        let without_port = |uri: &str| {
            let mut url = url::Url::parse(uri).ok()?;
            let _ = url.set_port(None);
            Some(url)
        };
        let matches = |registered: &String| {
            registered == asked
                || (is_loopback(registered)
                    && is_loopback(asked)
                    && without_port(registered) == without_port(asked))
        };
        self.redirect_uris
            .iter()
            .any(matches)
            .then(|| asked.to_owned())
    }

    /// The host its codes are sent back to, for the consent page.
    pub fn redirect_host(uri: &str) -> String {
        url::Url::parse(uri).ok().map_or_else(
            || uri.to_owned(),
            |u| match u.host_str() {
                Some(host) => host.to_owned(),
                None => format!("{}:", u.scheme()),
            },
        )
    }
}

/// `http://127.0.0.1|localhost|[::1]`, any port.
fn is_loopback(uri: &str) -> bool {
    url::Url::parse(uri).is_ok_and(|u| u.scheme() == "http" && on_loopback(&u))
}

/// Whether `url`'s host is loopback's (`127.0.0.1`, `localhost`, `[::1]`).
pub fn on_loopback(url: &url::Url) -> bool {
    matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
}

fn acceptable_redirect(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    url.fragment().is_none()
        && match url.scheme() {
            "https" => url.host_str().is_some(),
            "http" => is_loopback(uri),
            // An app's private-use scheme (RFC 8252 §7.1) is a reversed domain name.
            scheme => scheme.contains('.'),
        }
}

/// The clients mcpx knows.
#[derive(Debug)]
pub struct Clients {
    store: Arc<Store>,
    registration: bool,
    max_registrations: usize,
    registration_lifetime: Duration,
    client_documents: bool,
    pinned: BTreeMap<String, PathBuf>,
    /// Fetched documents by URL, until when each is kept.
    fetched: Mutex<HashMap<String, (Instant, Value)>>,
}

impl Clients {
    /// The clients `[auth.builtin]` admits, registrations kept in `store`.
    pub fn new(settings: &Builtin, store: Arc<Store>) -> Clients {
        Clients {
            store,
            registration: settings.registration,
            max_registrations: settings.max_registrations,
            registration_lifetime: settings.registration_lifetime,
            client_documents: settings.client_documents,
            pinned: settings.pinned.clone(),
            fetched: Mutex::default(),
        }
    }

    /// Whether clients may register.
    pub fn registration(&self) -> bool {
        self.registration
    }

    /// Whether clients may name themselves by their metadata document.
    pub fn client_documents(&self) -> bool {
        self.client_documents
    }

    /// The client `id`, or why there is none.
    pub async fn find(&self, id: &str) -> Result<Client, NotFound> {
        if id.starts_with("https://") {
            if !self.client_documents {
                return Err(NotFound::Refused(
                    "client metadata documents are turned off (auth.builtin.clientDocuments)"
                        .into(),
                ));
            }
            let document = self.document(id).await.map_err(NotFound::Unfetched)?;
            if document.get("client_id").and_then(Value::as_str) != Some(id) {
                return Err(NotFound::Refused(format!(
                    "the document at {id} names another client_id"
                )));
            }
            return Client::from_metadata(id, &document, true)
                .map_err(|(_, why)| NotFound::Refused(why));
        }
        let now = now_secs();
        let lifetime = self.registration_lifetime.as_secs();
        let registration = self.store.read(|saved| {
            let registered = saved.clients.get(id)?;
            let live = saved.consented.contains_key(id) || registered.registered + lifetime > now;
            live.then(|| registered.metadata.clone())
        });
        let metadata = registration.ok_or_else(|| {
            NotFound::Refused(format!(
                "no client {id:?} is registered (or its registration expired unconsented)"
            ))
        })?;
        Client::from_metadata(id, &metadata, false).map_err(|(_, why)| NotFound::Refused(why))
    }

    /// The owner consented to client `id`: its registration no longer expires.
    pub fn consented(&self, id: &str) {
        let now = now_secs();
        self.store
            .change(|saved| saved.consented.insert(id.to_owned(), now));
    }

    /// RFC 7591: registers the client `metadata` describes; the registration's answer.
    pub fn register(&self, metadata: Value) -> Result<Value, Invalid> {
        let mut metadata = super::registration::normalized(&metadata)?;
        let random = random_token(16).map_err(|e| ("invalid_client_metadata", e))?;
        let id = format!("mcpx-{random}");
        if metadata.get("token_endpoint_auth_method").is_none() {
            metadata["token_endpoint_auth_method"] = json!("none");
        }
        Client::from_metadata(&id, &metadata, false)?;
        let now = now_secs();
        let lifetime = self.registration_lifetime.as_secs();
        let quota = self.max_registrations;
        metadata["client_id"] = json!(id);
        metadata["client_id_issued_at"] = json!(now);
        self.store.change(|saved| {
            let consented = &saved.consented;
            saved
                .clients
                .retain(|id, r| consented.contains_key(id) || r.registered + lifetime > now);
            let waiting = (saved.clients.keys())
                .filter(|id| !saved.consented.contains_key(*id))
                .count();
            if waiting >= quota {
                return Err((
                    "invalid_client_metadata",
                    format!("{quota} registrations already wait for the owner's consent (auth.builtin.maxRegistrations); try again later"),
                ));
            }
            let registration = Registration {
                metadata: metadata.clone(),
                registered: now,
            };
            saved.clients.insert(id, registration);
            Ok(metadata)
        })
    }

    /// A document a client names by URL (its metadata, its keys): the pinned copy, else kept
    /// from an earlier fetch, else fetched.
    pub async fn document(&self, url: &str) -> Result<Value, String> {
        if let Some(path) = self.pinned.get(url) {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            return serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: not JSON: {e}", path.display()));
        }
        if let Some((until, document)) = lock(&self.fetched).get(url) {
            if *until > Instant::now() {
                return Ok(document.clone());
            }
        }
        let fetched = within(FETCH_PATIENCE, fetch_public(url, MAX_DOCUMENT)).await?;
        if fetched.status != http::StatusCode::OK {
            return Err(format!(
                "{url} answered {} (redirects are not followed)",
                fetched.status
            ));
        }
        let document: Value =
            serde_json::from_slice(&fetched.body).map_err(|e| format!("{url}: not JSON: {e}"))?;
        let keep = max_age(&fetched.headers)
            .unwrap_or(KEEP_DOCUMENT)
            .clamp(KEEP_AT_LEAST, KEEP_AT_MOST);
        let mut fetched = lock(&self.fetched);
        if fetched.len() >= 1024 {
            fetched.clear();
        }
        fetched.insert(url.to_owned(), (Instant::now() + keep, document.clone()));
        Ok(document)
    }
}

/// `Cache-Control: max-age`, if the answer gives it.
fn max_age(headers: &http::HeaderMap) -> Option<Duration> {
    let control = headers.get(http::header::CACHE_CONTROL)?.to_str().ok()?;
    let seconds = control
        .split(',')
        .find_map(|part| part.trim().strip_prefix("max-age="))?;
    seconds.parse().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod every_revision {
    mod access {
        use super::super::*;

        fn client(metadata: Value) -> Result<Client, Invalid> {
            Client::from_metadata("c", &metadata, false)
        }

        #[test]
        fn redirect_uris_match_exactly_and_loopback_on_any_port() {
            let c = client(json!({"redirect_uris": [
                "https://app.example/cb", "http://127.0.0.1/callback", "com.example.app:/cb"
            ]}))
            .unwrap();
            for good in [
                "https://app.example/cb",
                "http://127.0.0.1:53123/callback",
                "http://127.0.0.1/callback",
                "com.example.app:/cb",
            ] {
                assert_eq!(c.redirect(Some(good)).as_deref(), Some(good));
            }
            for bad in [
                "https://app.example/cb/",
                "https://app.example/cb?x=1",
                "https://app.example:8443/cb",
                "http://127.0.0.1:1/other",
                "http://localhost:5/callback",
                "https://evil.example/cb",
            ] {
                assert_eq!(c.redirect(Some(bad)), None, "{bad}");
            }
            assert_eq!(
                c.redirect(None),
                None,
                "three registered: one must be named"
            );
        }

        #[test]
        fn metadata_without_a_usable_redirect_or_with_a_secret_method_is_refused() {
            for (metadata, error) in [
                (json!({}), "invalid_redirect_uri"),
                (
                    json!({"redirect_uris": ["http://app.example/cb"]}),
                    "invalid_redirect_uri",
                ),
                (
                    json!({"redirect_uris": ["https://a.example/cb#x"]}),
                    "invalid_redirect_uri",
                ),
                (
                    json!({"redirect_uris": ["javascript:alert(1)"]}),
                    "invalid_redirect_uri",
                ),
                (
                    json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}),
                    "invalid_client_metadata",
                ),
                (
                    json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
                    "invalid_client_metadata",
                ),
            ] {
                assert_eq!(client(metadata.clone()).unwrap_err().0, error, "{metadata}");
            }
            let refreshless = client(json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["authorization_code", "urn:ietf:params:oauth:grant-type:jwt-bearer"]})).unwrap();
            assert!(
                !refreshless.refreshes,
                "an unknown grant type is ignored, not refused"
            );
        }
    }
}
