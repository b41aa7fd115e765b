//! What a consent turns into: an authorization code (single use, 60 s, bound to the client, the
//! redirect URI, the PKCE challenge and the door), then tokens: an access token (an RFC 9068 JWT
//! for the door) and, for a client that may refresh, a refresh token in a family
//! ([`super::store::Family`]) that each refresh rotates. A code presented twice revokes what the
//! first use issued (RFC 6749 §4.1.2); a replaced refresh token presented again revokes its
//! family.

use super::consent::Asked;
use super::signing::Signer;
use super::store::{Family, Store};
use crate::sync::lock;
use crate::upstream::auth::authorize::{challenge_of, random_token};
use crate::upstream::auth::store::now_secs;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a code may wait to be exchanged.
const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// Replaced refresh tokens remembered per family, to tell reuse from a made-up token.
const REMEMBERED: usize = 16;

/// What every refresh token starts with; the family id follows, then the secret.
const REFRESH_PREFIX: &str = "mcpxr1.";

/// An RFC 6749 §5.2 error: its `error` and description.
#[derive(Debug, PartialEq)]
pub struct GrantError(pub &'static str, pub String);

fn invalid_grant(why: impl Into<String>) -> GrantError {
    GrantError("invalid_grant", why.into())
}

/// A code not yet exchanged.
#[derive(Debug)]
struct Code {
    asked: Asked,
    until: Instant,
}

/// A code exchanged: until when it is remembered, and the refresh family its exchange started.
type Spent = (Instant, Option<String>);

/// Codes and tokens.
#[derive(Debug)]
pub struct Grants {
    issuer: String,
    signer: Arc<Signer>,
    store: Arc<Store>,
    access_lifetime: Duration,
    refresh_lifetime: Duration,
    /// `refreshReuse`: how long a rotated refresh token still gets its rotation's answer.
    refresh_reuse: Duration,
    /// The rotations of the last [`Grants::refresh_reuse`], by the replaced token's hash: when,
    /// and the token that replaced it. In memory only (it holds tokens in the clear), so a
    /// restart forgets them, and a presentation after it revokes as any replay does.
    rotations: Mutex<HashMap<String, (Instant, String)>>,
    /// By the SHA-256 of the code.
    codes: Mutex<HashMap<[u8; 32], Code>>,
    /// Codes exchanged, by digest.
    spent: Mutex<HashMap<[u8; 32], Spent>>,
}

impl Grants {
    /// Codes and tokens of the server `issuer`.
    pub fn new(
        issuer: String,
        signer: Arc<Signer>,
        store: Arc<Store>,
        config: &crate::config::Builtin,
    ) -> Grants {
        Grants {
            issuer,
            signer,
            store,
            access_lifetime: config.access_lifetime,
            refresh_lifetime: config.refresh_lifetime,
            refresh_reuse: config.refresh_reuse,
            rotations: Mutex::default(),
            codes: Mutex::default(),
            spent: Mutex::default(),
        }
    }

    /// A code for what the owner consented to.
    pub fn code(&self, asked: Asked) -> Result<String, String> {
        let code = random_token(32)?;
        let mut codes = lock(&self.codes);
        codes.retain(|_, c| c.until > Instant::now());
        let until = Instant::now() + CODE_LIFETIME;
        codes.insert(digest(&code), Code { asked, until });
        Ok(code)
    }

    /// `grant_type=authorization_code`: the code's tokens, if `form` matches what it is
    /// bound to and `client_id` is its client.
    pub fn exchange(
        &self,
        client_id: &str,
        form: &HashMap<String, String>,
    ) -> Result<Value, GrantError> {
        let presented = form
            .get("code")
            .ok_or_else(|| GrantError("invalid_request", "code is required".into()))?;
        let key = digest(presented);
        let code = lock(&self.codes).remove(&key);
        let Some(code) = code.filter(|c| c.until > Instant::now()) else {
            let spent = lock(&self.spent).get(&key).cloned();
            if let Some((_, family)) = spent {
                tracing::warn!("an authorization code was presented again: its tokens are revoked");
                crate::metrics::authorization("code_reused");
                if let Some(family) = family {
                    self.revoke_family(&family);
                }
                return Err(invalid_grant(
                    "the code was already used: what it issued is revoked",
                ));
            }
            return Err(invalid_grant("the code is unknown or expired"));
        };
        let asked = &code.asked;
        if asked.client.id != client_id {
            return Err(invalid_grant("the code was issued to another client"));
        }
        if form.get("redirect_uri") != Some(&asked.redirect_uri) {
            return Err(invalid_grant(
                "redirect_uri is not the one the code was sent to",
            ));
        }
        let verifier = form.get("code_verifier").map_or("", String::as_str);
        let well_formed = (43..=128).contains(&verifier.len())
            && verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if !well_formed || challenge_of(verifier) != asked.challenge {
            return Err(invalid_grant(
                "code_verifier does not match the code's challenge",
            ));
        }
        if form.get("resource").is_some_and(|r| *r != asked.resource) {
            return Err(GrantError(
                "invalid_target",
                "resource is not the door the code was granted for".into(),
            ));
        }
        let (answer, family) = self.tokens(
            &asked.client.id,
            &asked.scopes,
            &asked.resource,
            asked.client.refreshes,
        )?;
        let mut spent = lock(&self.spent);
        spent.retain(|_, (until, _)| *until > Instant::now());
        spent.insert(key, (Instant::now() + CODE_LIFETIME * 10, family));
        Ok(answer)
    }

    /// `grant_type=refresh_token`: new tokens, the refresh token rotated. The token it replaced,
    /// presented again within `refreshReuse` of the rotation, gets the same refresh token back
    /// (a client that refreshed twice at once keeps its login); later, or once the login rotated
    /// on, it is a replay, and revokes the login.
    pub fn refresh(
        &self,
        client_id: &str,
        form: &HashMap<String, String>,
    ) -> Result<Value, GrantError> {
        let presented = form.get("refresh_token").map_or("", String::as_str);
        let (family_id, _) = presented
            .strip_prefix(REFRESH_PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .ok_or_else(|| invalid_grant("not a refresh token of this server"))?;
        let hash = hex::encode(digest(presented));
        let now = now_secs();
        let replacement = random_token(32).map_err(|e| GrantError("server_error", e))?;
        let fresh_token = format!("{REFRESH_PREFIX}{family_id}.{replacement}");
        let mut rotations = lock(&self.rotations);
        rotations.retain(|_, (at, _)| at.elapsed() < self.refresh_reuse);
        let reused = rotations.get(&hash).map(|(_, token)| token.clone());
        let (rotated, new_token) = self.store.change(|saved| {
            let family = saved.families.get_mut(family_id).filter(|f| f.expires > now);
            let family = family.ok_or_else(|| invalid_grant("the refresh token is unknown or expired"))?;
            if family.revoked {
                return Err(invalid_grant("the refresh token was revoked"));
            }
            if family.client_id != client_id {
                return Err(invalid_grant("the refresh token was issued to another client"));
            }
            if family.current != hash {
                let still_current = |token: &String| family.current == hex::encode(digest(token));
                if let Some(token) = reused.filter(still_current) {
                    crate::metrics::authorization("refresh_repeated");
                    return Ok((family.clone(), token));
                }
                if family.replaced.contains(&hash) {
                    family.revoked = true;
                    crate::metrics::authorization("refresh_reused");
                    tracing::warn!(client_id = ?client_id, "a replaced refresh token was used again: the login is revoked");
                    return Err(invalid_grant("the refresh token was already used: the login is revoked"));
                }
                return Err(invalid_grant("the refresh token is unknown"));
            }
            let replaced = std::mem::replace(&mut family.current, hex::encode(digest(&fresh_token)));
            family.replaced.push(replaced);
            if family.replaced.len() > REMEMBERED {
                family.replaced.remove(0);
            }
            Ok((family.clone(), fresh_token.clone()))
        })?;
        if new_token == fresh_token && !self.refresh_reuse.is_zero() {
            rotations.insert(hash, (Instant::now(), fresh_token));
        }
        drop(rotations);
        let scopes = match form.get("scope") {
            Some(asked) => {
                let asked: Vec<String> = asked.split_whitespace().map(str::to_owned).collect();
                if asked.iter().any(|s| !rotated.scopes.contains(s)) {
                    return Err(GrantError(
                        "invalid_scope",
                        "a refresh may only narrow the scopes".into(),
                    ));
                }
                asked
            }
            None => rotated.scopes.clone(),
        };
        if form.get("resource").is_some_and(|r| *r != rotated.resource) {
            return Err(GrantError(
                "invalid_target",
                "resource is not the login's door".into(),
            ));
        }
        let mut answer = self.access(client_id, &scopes, &rotated.resource);
        answer["refresh_token"] = json!(new_token);
        Ok(answer)
    }

    /// RFC 7009: a refresh token revoked revokes its family. An access token lives out its
    /// short life (it is verified without asking this server); an unknown token is no error.
    pub fn revoke(&self, client_id: &str, token: &str) {
        let Some((family_id, _)) = token
            .strip_prefix(REFRESH_PREFIX)
            .and_then(|r| r.split_once('.'))
        else {
            return;
        };
        let hash = hex::encode(digest(token));
        self.store.change(|saved| {
            if let Some(family) = saved.families.get_mut(family_id) {
                let its_own = family.client_id == client_id;
                if its_own && (family.current == hash || family.replaced.contains(&hash)) {
                    family.revoked = true;
                }
            }
        });
    }

    fn revoke_family(&self, family: &str) {
        self.store.change(|saved| {
            if let Some(family) = saved.families.get_mut(family) {
                family.revoked = true;
            }
        });
    }

    /// An access token, and a refresh token in a new family when the client may refresh.
    fn tokens(
        &self,
        client_id: &str,
        scopes: &[String],
        resource: &str,
        refreshes: bool,
    ) -> Result<(Value, Option<String>), GrantError> {
        let mut answer = self.access(client_id, scopes, resource);
        if !refreshes {
            return Ok((answer, None));
        }
        let fail = |e: String| GrantError("server_error", e);
        let family_id = random_token(32).map_err(fail)?[..22].to_owned();
        let token = format!(
            "{REFRESH_PREFIX}{family_id}.{}",
            random_token(32).map_err(fail)?
        );
        let family = Family {
            client_id: client_id.to_owned(),
            scopes: scopes.to_vec(),
            resource: resource.to_owned(),
            current: hex::encode(digest(&token)),
            replaced: Vec::new(),
            expires: now_secs() + self.refresh_lifetime.as_secs(),
            revoked: false,
        };
        self.store
            .change(|saved| saved.families.insert(family_id.clone(), family));
        answer["refresh_token"] = json!(token);
        Ok((answer, Some(family_id)))
    }

    /// The token endpoint's answer with an access token for `resource`.
    fn access(&self, client_id: &str, scopes: &[String], resource: &str) -> Value {
        let now = now_secs();
        let lifetime = self.access_lifetime.as_secs();
        let mut jti = [0u8; 16];
        // A failed random source leaves a jti of zeros: it names the token, it secures nothing.
        let _ = getrandom::fill(&mut jti);
        let claims: Map<String, Value> = json!({
            "iss": self.issuer,
            "sub": super::OWNER,
            "aud": resource,
            "client_id": client_id,
            "scope": scopes.join(" "),
            "iat": now,
            "exp": now + lifetime,
            "jti": URL_SAFE_NO_PAD.encode(jti),
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        json!({
            "access_token": self.signer.sign(&claims),
            "token_type": "Bearer",
            "expires_in": lifetime,
            "scope": scopes.join(" "),
        })
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}
