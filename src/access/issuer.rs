//! An identity provider mcpx trusts (`[auth.external]`): its metadata, found by RFC 8414 or
//! OpenID discovery on first use (a daemon starts whether or not the provider answers), and its
//! signing keys, cached by `kid`. A token naming a `kid` not in the cache makes mcpx fetch the
//! set again, at most once a minute, so that rotated keys are picked up at once and a flood of
//! made-up `kid`s does not become a flood of requests to the provider. Nothing fetched: nothing
//! passes.

use super::jose::{self, Jwk};
use crate::deadline::within;
use crate::net::client::{fetch, Fetched};
use crate::sync::lock;
use crate::upstream::auth::discovery::{auth_server, AuthServer};
use http::{HeaderMap, Method, StatusCode};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The least time between two fetches of the key set again for an unknown `kid`.
const REFETCH_EVERY: Duration = Duration::from_secs(60);

/// The least time between two tries when nothing was ever fetched (the provider is down).
const RETRY_EVERY: Duration = Duration::from_secs(5);

/// How long one fetch from the provider may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The provider, and what mcpx knows of it so far.
#[derive(Debug)]
pub struct Issuer {
    /// Its issuer identifier, which its tokens' `iss` must equal.
    pub id: String,
    /// `jwksUri` when configured; else the metadata's.
    configured_jwks: Option<String>,
    /// `introspection.endpoint` when configured; else the metadata's.
    configured_introspection: Option<String>,
    known: Mutex<Known>,
    /// The keys are mcpx's own ([`Issuer::own`]): nothing to fetch, a `kid` not among them is
    /// unknown.
    fixed: bool,
    /// Held while one request fetches, so that the others wait for its answer.
    fetching: smol::lock::Mutex<()>,
}

#[derive(Debug, Default)]
struct Known {
    metadata: Option<AuthServer>,
    keys: Vec<Jwk>,
    /// When the keys were last fetched (or tried).
    fetched: Option<Instant>,
    /// When they were last fetched again for an unknown `kid`.
    refetched: Option<Instant>,
    /// Whether any fetch succeeded.
    ever: bool,
}

/// Why no key could be had.
#[derive(Debug)]
pub enum KeyError {
    /// The provider's keys could not be fetched: mcpx cannot tell a good token from a bad one.
    Unavailable(String),
    /// The set was fetched and no key in it has this `kid`.
    Unknown,
}

impl Issuer {
    /// The provider `id`, with the endpoints configured for it (the rest are discovered).
    pub fn new(id: String, jwks_uri: Option<String>, introspection: Option<String>) -> Issuer {
        Issuer {
            id,
            configured_jwks: jwks_uri,
            configured_introspection: introspection,
            known: Mutex::default(),
            fixed: false,
            fetching: smol::lock::Mutex::new(()),
        }
    }

    /// mcpx's own authorization server `id`, whose signing keys are `keys`.
    pub fn own(id: String, keys: Vec<Jwk>) -> Issuer {
        let known = Known {
            keys,
            ever: true,
            ..Known::default()
        };
        Issuer {
            known: Mutex::new(known),
            fixed: true,
            ..Issuer::new(id, None, None)
        }
    }

    /// The keys that may have signed a token naming `kid`: from the cache, or from the set
    /// fetched again when the cache has no such key and the last fetch is old enough.
    pub async fn keys_for(&self, kid: Option<&str>) -> Result<Vec<Jwk>, KeyError> {
        if let Some(keys) = self.cached(kid) {
            return Ok(keys);
        }
        if self.fixed {
            return Err(KeyError::Unknown);
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        if let Some(keys) = self.cached(kid) {
            return Ok(keys);
        }
        let due = {
            let known = lock(&self.known);
            let (last, wait) = match known.ever {
                true => (known.refetched, REFETCH_EVERY),
                false => (known.fetched, RETRY_EVERY),
            };
            last.is_none_or(|at| at.elapsed() >= wait)
        };
        if due {
            let fetched = self.fetch_keys().await;
            let mut known = lock(&self.known);
            let now = Some(Instant::now());
            if known.ever {
                known.refetched = now;
            }
            known.fetched = now;
            match fetched {
                Ok(keys) => {
                    known.keys = keys;
                    known.ever = true;
                }
                Err(e) if !known.ever => return Err(KeyError::Unavailable(e)),
                Err(e) => tracing::warn!("fetching {}'s keys again failed: {e}", self.id),
            }
        }
        let known = lock(&self.known);
        if !known.ever {
            return Err(KeyError::Unavailable(format!(
                "{}'s signing keys could not be fetched yet",
                self.id
            )));
        }
        let matching = matching(&known.keys, kid);
        match matching.is_empty() {
            true => Err(KeyError::Unknown),
            false => Ok(matching),
        }
    }

    fn cached(&self, kid: Option<&str>) -> Option<Vec<Jwk>> {
        let known = lock(&self.known);
        let matching = matching(&known.keys, kid);
        (!matching.is_empty()).then_some(matching)
    }

    /// The token endpoint, from the provider's metadata.
    pub async fn token_endpoint(&self) -> Result<String, String> {
        Ok(self.metadata().await?.token_endpoint)
    }

    /// The introspection endpoint: configured, else the provider's metadata's.
    pub async fn introspection_endpoint(&self) -> Result<String, String> {
        if let Some(endpoint) = &self.configured_introspection {
            return Ok(endpoint.clone());
        }
        let metadata = self.metadata().await?;
        metadata.introspection_endpoint.ok_or_else(|| {
            format!(
                "{} names no introspection_endpoint: set auth.external.introspection.endpoint",
                self.id
            )
        })
    }

    async fn fetch_keys(&self) -> Result<Vec<Jwk>, String> {
        let uri = match &self.configured_jwks {
            Some(uri) => uri.clone(),
            None => self.metadata().await?.jwks_uri.ok_or_else(|| {
                format!("{} names no jwks_uri: set auth.external.jwksUri", self.id)
            })?,
        };
        let Fetched { status, body, .. } = within(
            FETCH_TIMEOUT,
            fetch(Method::GET, &uri, HeaderMap::new(), None),
        )
        .await?;
        if status != StatusCode::OK {
            return Err(format!("{uri} answered {status}"));
        }
        let set: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| format!("{uri}: not a JWK Set: {e}"))?;
        Ok(jose::keys_of(&set))
    }

    /// The provider's metadata, fetched once it is first needed.
    async fn metadata(&self) -> Result<AuthServer, String> {
        if let Some(metadata) = lock(&self.known).metadata.clone() {
            return Ok(metadata);
        }
        let found = within(FETCH_TIMEOUT, auth_server(&self.id)).await?;
        lock(&self.known).metadata = Some(found.clone());
        Ok(found)
    }
}

/// The keys a token naming `kid` may have been signed with: the one of that `kid`; every key
/// when the token names none.
fn matching(keys: &[Jwk], kid: Option<&str>) -> Vec<Jwk> {
    keys.iter()
        .filter(|key| kid.is_none() || key.kid.as_deref() == kid)
        .cloned()
        .collect()
}
