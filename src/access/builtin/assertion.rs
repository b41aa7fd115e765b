//! `private_key_jwt` (RFC 7523 §2.2, §3): a client proves it is itself with a short-lived JWT
//! signed by a key of its JWK Set. The assertion's `iss` and `sub` are the client id, its `aud`
//! names the token endpoint (or the issuer), it lives at most ten minutes, and its `jti` is
//! taken once: a copy replayed is refused. Asymmetric algorithms only, as for access tokens.

use super::clients::{Authentication, Client, Clients};
use crate::access::jose::{self, Alg};
use crate::sync::lock;
use crate::upstream::auth::store::now_secs;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// The `client_assertion_type` of a JWT assertion.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The longest an assertion may live.
const MAX_LIFETIME: u64 = 600;

/// Assertion `jti`s seen, until their `exp`.
#[derive(Debug, Default)]
pub struct Seen(Mutex<HashMap<String, u64>>);

/// The client id an assertion claims to be from (its `iss`), before anything is checked.
pub fn claimed_client(assertion: &str) -> Option<String> {
    let jws = jose::parse(assertion).ok()?;
    jws.claims.get("iss")?.as_str().map(str::to_owned)
}

impl Seen {
    /// Whether `assertion` proves it comes from `client`, for a token endpoint known by
    /// `audiences`; why not, otherwise.
    pub async fn check(
        &self,
        clients: &Clients,
        client: &Client,
        assertion: &str,
        audiences: &[String],
    ) -> Result<(), String> {
        let Authentication::PrivateKeyJwt { jwks, jwks_uri } = &client.authentication else {
            return Err("this client does not authenticate with private_key_jwt".into());
        };
        let jws = jose::parse(assertion).map_err(str::to_owned)?;
        let alg = jws.alg(&Alg::ALL).map_err(str::to_owned)?;
        let set = match (jwks, jwks_uri) {
            (Some(set), _) => set.clone(),
            (None, Some(uri)) => clients.document(uri).await?,
            (None, None) => return Err("the client has no keys".into()),
        };
        if !jws.signed_by(alg, &jose::keys_of(&set)) {
            return Err("the assertion's signature does not verify with the client's keys".into());
        }
        let claims = &jws.claims;
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        if text("iss") != Some(&client.id) || text("sub") != Some(&client.id) {
            return Err("the assertion's iss and sub must be the client id".into());
        }
        let named = |aud: &str| audiences.iter().any(|a| a == aud);
        let aud_ok = match claims.get("aud") {
            Some(Value::String(one)) => named(one),
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).any(named),
            _ => false,
        };
        if !aud_ok {
            return Err("the assertion's aud does not name the token endpoint".into());
        }
        let now = now_secs();
        let number = |name: &str| claims.get(name).and_then(Value::as_u64);
        let exp = number("exp").ok_or("the assertion has no exp")?;
        let from = number("iat").unwrap_or(now);
        if exp + 5 < now {
            return Err("the assertion has expired".into());
        }
        if exp.saturating_sub(from) > MAX_LIFETIME || exp > now + MAX_LIFETIME {
            return Err("the assertion lives longer than ten minutes".into());
        }
        let jti = text("jti").ok_or("the assertion has no jti")?;
        let mut seen = lock(&self.0);
        seen.retain(|_, until| *until + 5 >= now);
        if seen.insert(format!("{}\0{jti}", client.id), exp).is_some() {
            return Err("the assertion was already used (its jti)".into());
        }
        Ok(())
    }
}
