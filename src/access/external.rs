//! Tokens from an identity provider mcpx trusts (`auth.mode = "external"`): a JWT access token
//! is verified against the provider's keys (signature, `iss`, `aud`, `exp`, `nbf`, with an
//! algorithm allowlist); an opaque one is introspected (RFC 7662), its answer kept a short while.
//! What cannot be verified is refused: mcpx fails closed.

use super::identity::{Identity, Kind};
use super::issuer::{Issuer, KeyError, FETCH_TIMEOUT};
use super::jose::{self, Alg};
use super::Rejection;
use crate::config::{External, Introspection};
use crate::deadline::within;
use crate::net::client::fetch;
use crate::sync::lock;
use base64::Engine;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The most verdicts kept at once.
const MAX_KEPT: usize = 4096;

/// How long a verified JWT's verdict is kept at most: a signature checked once serves the
/// token's next requests (a P-256 verification costs more than a whole built-in call).
const KEEP_VERIFIED: Duration = Duration::from_secs(300);

/// Verifies the provider's tokens.
#[derive(Debug)]
pub struct Verifier {
    issuer: Issuer,
    audiences: Vec<String>,
    algorithms: Vec<Alg>,
    /// The `typ` an access token must carry.
    typ: String,
    leeway: Duration,
    introspection: Option<(Introspection, Option<String>)>,
    /// Verdicts by the SHA-256 of the door and the token: verified JWTs, introspection answers.
    kept: Mutex<HashMap<[u8; 32], Kept>>,
    /// Whom its tokens let in: a provider's people ([`Kind::Bearer`]), or mcpx's own grants,
    /// all the owner's ([`Kind::OwnerGrant`]).
    grants: Kind,
}

/// A verdict, and until when it is kept.
type Kept = (Instant, Result<Arc<Identity>, Rejection>);

/// A verdict, and how long it may be kept (`ZERO`: not at all).
type Verdict = (Result<Arc<Identity>, Rejection>, Duration);

impl Verifier {
    /// The verifier `[auth.external]` describes; `secret` is the introspection client's
    /// expanded secret.
    pub fn new(external: &External, secret: Option<String>) -> Verifier {
        let issuer = external.issuer.clone().unwrap_or_default();
        let endpoint = external
            .introspection
            .as_ref()
            .and_then(|i| i.endpoint.clone());
        Verifier {
            issuer: Issuer::new(issuer, external.jwks_uri.clone(), endpoint),
            audiences: external.audiences.clone(),
            algorithms: external.algorithms.clone(),
            typ: external.typ.clone(),
            leeway: external.leeway,
            introspection: external.introspection.clone().map(|i| (i, secret)),
            kept: Mutex::default(),
            grants: Kind::Bearer,
        }
    }

    /// The verifier of mcpx's own authorization server's tokens: `issuer`'s keys, EdDSA only,
    /// the door's URL the only audience.
    pub fn own(issuer: Issuer) -> Verifier {
        Verifier {
            issuer,
            audiences: Vec::new(),
            algorithms: vec![Alg::EdDsa],
            typ: "at+jwt".into(),
            leeway: Duration::from_secs(5),
            introspection: None,
            kept: Mutex::default(),
            grants: Kind::OwnerGrant,
        }
    }

    /// The issuer identifier tokens must name.
    pub fn issuer(&self) -> &str {
        &self.issuer.id
    }

    /// The caller `token` stands for at the door `door_url`, or why it does not: kept from an
    /// earlier request with this token at this door, else verified now. Shared: a kept
    /// verdict costs a hash and a lookup, not a copy of every claim.
    pub async fn verify(&self, token: &str, door_url: &str) -> Result<Arc<Identity>, Rejection> {
        let mut digest = Sha256::new();
        digest.update(door_url.as_bytes());
        digest.update([0]);
        digest.update(token.as_bytes());
        let key: [u8; 32] = digest.finalize().into();
        if let Some((until, verdict)) = lock(&self.kept).get(&key) {
            if *until > Instant::now() {
                return verdict.clone();
            }
        }
        let (verdict, keep) = match (jose::looks_like_jws(token), &self.introspection) {
            (true, _) => {
                let verdict = self.verify_jwt(token, door_url).await.map(Arc::new);
                // A good one is kept while it lives; a bad one is not, so that made-up tokens
                // cannot push the good ones out.
                let keep = match &verdict {
                    Ok(identity) => lifetime(&identity.claims).min(KEEP_VERIFIED),
                    Err(_) => Duration::ZERO,
                };
                (verdict, keep)
            }
            (false, Some(_)) => self.introspect(token, door_url).await?,
            (false, None) => {
                let why =
                    "the token is not a JWT, and auth.external.introspection is not configured";
                return Err(Rejection::invalid("malformed", why));
            }
        };
        if !keep.is_zero() {
            let mut kept = lock(&self.kept);
            if kept.len() >= MAX_KEPT {
                let now = Instant::now();
                kept.retain(|_, (until, _)| *until > now);
                if kept.len() >= MAX_KEPT {
                    kept.clear();
                }
            }
            kept.insert(key, (Instant::now() + keep, verdict.clone()));
        }
        verdict
    }

    async fn verify_jwt(&self, token: &str, door_url: &str) -> Result<Identity, Rejection> {
        let jws = jose::parse(token).map_err(|why| Rejection::invalid("malformed", why))?;
        if !jws.has_type(&self.typ) {
            let typ = jws
                .header
                .get("typ")
                .map_or("none".into(), Value::to_string);
            return Err(Rejection::invalid(
                "type",
                format!(
                    "the token's typ ({typ}) is not {:?}, that of the provider's access tokens \
                     ([auth.external] typ; \"JWT\" for a provider that issues plain JWTs)",
                    self.typ
                ),
            ));
        }
        let alg = jws
            .alg(&self.algorithms)
            .map_err(|why| Rejection::invalid("algorithm", why))?;
        let keys = match self.issuer.keys_for(jws.kid()).await {
            Ok(keys) => keys,
            Err(KeyError::Unknown) => {
                return Err(Rejection::invalid(
                    "unknown_key",
                    "no key of the issuer has the token's kid",
                ))
            }
            Err(KeyError::Unavailable(why)) => return Err(Rejection::unavailable(why)),
        };
        if !jws.signed_by(alg, &keys) {
            return Err(Rejection::invalid(
                "signature",
                "the token's signature does not verify",
            ));
        }
        self.check_claims(&jws.claims, door_url, true)?;
        self.identity_of(jws.claims, token)
    }

    /// Who a token with these verified `claims` lets in; a token that names no subject lets
    /// no one in (it would otherwise be no one in particular, which mcpx once took for the owner).
    fn identity_of(&self, claims: Map<String, Value>, token: &str) -> Result<Identity, Rejection> {
        let identity = Identity::from_claims(claims, &self.issuer.id)
            .map_err(|why| Rejection::invalid("subject", why))?;
        Ok(Identity {
            kind: self.grants,
            ..identity.holding(token)
        })
    }

    /// `iss`, `aud`, `exp` and `nbf`. `exp` is required of a JWT, and checked where an
    /// introspection answer gives it; a missing `iss` or `aud` in an introspection answer is the
    /// provider's to vouch for.
    fn check_claims(
        &self,
        claims: &Map<String, Value>,
        door_url: &str,
        jwt: bool,
    ) -> Result<(), Rejection> {
        let now = unix_now();
        let leeway = self.leeway.as_secs();
        let number = |name: &str| claims.get(name).and_then(Value::as_u64);
        match claims.get("iss").and_then(Value::as_str) {
            Some(iss) if iss == self.issuer.id => {}
            None if !jwt => {}
            _ => {
                return Err(Rejection::invalid(
                    "issuer",
                    "the token was not issued by the authorization server mcpx trusts",
                ))
            }
        }
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let accepted = |aud: &&str| *aud == door_url || self.audiences.iter().any(|a| a == aud);
        let aud_ok = match audiences.is_empty() {
            true => !jwt && claims.get("aud").is_none(),
            false => audiences.iter().any(accepted),
        };
        if !aud_ok {
            return Err(Rejection::invalid(
                "audience",
                "the token is not for this resource (its aud names neither the door nor an accepted audience)",
            ));
        }
        match number("exp") {
            Some(exp) if exp + leeway < now => {
                return Err(Rejection::invalid("expired", "the token has expired"))
            }
            None if jwt => return Err(Rejection::invalid("malformed", "the token has no exp")),
            _ => {}
        }
        if number("nbf").is_some_and(|nbf| nbf > now + leeway) {
            return Err(Rejection::invalid(
                "not_yet_valid",
                "the token is not valid yet (nbf)",
            ));
        }
        Ok(())
    }

    /// RFC 7662: the provider says whether the token is active, and for whom. Its answer, kept
    /// up to `introspection.cache` (never past the token's `exp`), inactive ones too; the
    /// provider unreachable is an error, never kept.
    async fn introspect(&self, token: &str, door_url: &str) -> Result<Verdict, Rejection> {
        let Some((settings, secret)) = &self.introspection else {
            return Err(Rejection::invalid("malformed", "the token is not a JWT"));
        };
        let endpoint =
            (self.issuer.introspection_endpoint().await).map_err(Rejection::unavailable)?;
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let mut headers = HeaderMap::new();
        let pair = format!("{}:{}", settings.client_id, secret.as_deref().unwrap_or(""));
        let basic = base64::engine::general_purpose::STANDARD.encode(pair);
        if let Ok(value) = HeaderValue::try_from(format!("Basic {basic}")) {
            headers.insert(http::header::AUTHORIZATION, value);
        }
        let body = Some(("application/x-www-form-urlencoded", form));
        let fetched = within(FETCH_TIMEOUT, fetch(Method::POST, &endpoint, headers, body))
            .await
            .map_err(Rejection::unavailable)?;
        if fetched.status != StatusCode::OK {
            return Err(Rejection::unavailable(format!(
                "{endpoint} answered {}",
                fetched.status
            )));
        }
        let answer: Map<String, Value> = serde_json::from_slice(&fetched.body)
            .map_err(|e| Rejection::unavailable(format!("{endpoint}: not JSON: {e}")))?;
        let keep = lifetime(&answer).min(settings.cache);
        let verdict = match answer.get("active").and_then(Value::as_bool) {
            Some(true) => self
                .check_claims(&answer, door_url, false)
                .and_then(|()| self.identity_of(answer, token).map(Arc::new)),
            _ => Err(Rejection::invalid("inactive", "the token is not active")),
        };
        Ok((verdict, keep))
    }
}

/// How long a token with `claims` lives yet: until its `exp` (without one, as long as any).
fn lifetime(claims: &Map<String, Value>) -> Duration {
    match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) => Duration::from_secs(exp.saturating_sub(unix_now())),
        None => Duration::MAX,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
