//! The `requestState` mcpx mints when a modern client's call waits on an upstream's question.
//!
//! It names the waiting call, the method and target it was for, the mcpx process holding the call
//! (and where other replicas reach it), and when it expires, and is sealed (XChaCha20-Poly1305,
//! [`SealingKeys`]): the client holds it between rounds but can neither forge one nor alter one
//! (the specification requires integrity protection, since the state decides which call a retry
//! resumes), nor read it (it names the replica's address inside the cluster, which is nobody
//! else's business). The key is made when mcpx starts, or derived from the cluster key, so that
//! a replica the retry lands on can trust the address it names and forward the retry there.
//! States of mcpx's own start with [`PREFIX`] and the id of the key that sealed them; any other
//! `requestState` (another mcpx's too, when this one is its client) is a modern upstream's,
//! passed through untouched.

use crate::cluster::SealingKeys;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What every state of mcpx's own starts with.
pub const PREFIX: &str = "mcpx1.";

/// What a state says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The mcpx process holding the call (random, per process).
    pub holder: String,
    /// Where other replicas reach that process, if it serves HTTP in a cluster.
    pub at: Option<String>,
    /// The waiting call's number, in its holder.
    pub call: u64,
    /// The method the client called.
    pub method: String,
    /// Its tool or prompt name, or resource URI, as the client named it.
    pub target: String,
    /// Milliseconds since the Unix epoch after which the state is refused.
    pub expires_ms: u64,
}

/// Mints states under one secret key, and opens them under it or the key it replaces.
pub struct Signer {
    keys: SealingKeys,
    /// The public id of each key, the current one first: every state sealed under a key
    /// carries its id, so that an mcpx whose upstream is another mcpx (minting states with the
    /// same prefix) tells its own states from those it passes through.
    ids: Vec<String>,
}

/// The public id of `secret`: a digest of it, which tells nothing of it.
fn key_id(secret: &[u8; 32]) -> String {
    // HMAC takes a key of any length, so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(b"mcpx requestState key id");
    URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..6])
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer { .. }")
    }
}

impl Signer {
    /// A signer with a fresh random key, or `None` when the system has no randomness to give.
    pub fn new() -> Option<Signer> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Signer::shared(key, None))
    }

    /// A signer every replica of a cluster shares (keys derived from the cluster key).
    pub fn shared(key: [u8; 32], previous: Option<[u8; 32]>) -> Signer {
        Signer {
            keys: SealingKeys::of(key, previous),
            ids: std::iter::once(key)
                .chain(previous)
                .map(|k| key_id(&k))
                .collect(),
        }
    }

    /// Whether `state` was sealed by this signer's keys (intact or not), not by another mcpx.
    pub fn owns(&self, state: &str) -> bool {
        self.sealed_part(state).is_some()
    }

    /// What follows [`PREFIX`] and the id of one of this signer's keys in `state`.
    fn sealed_part<'s>(&self, state: &'s str) -> Option<&'s str> {
        let (id, rest) = state.strip_prefix(PREFIX)?.split_once('.')?;
        self.ids.iter().any(|known| known == id).then_some(rest)
    }

    /// The state for `claims`; `None` when the system has no randomness for its nonce.
    pub fn sign(&self, claims: &Claims) -> Option<String> {
        let payload = json!({
            "holder": claims.holder,
            "at": claims.at,
            "call": claims.call,
            "method": claims.method,
            "target": claims.target,
            "exp": claims.expires_ms,
        })
        .to_string();
        let sealed = self.keys.seal("", payload.as_bytes()).ok()?;
        Some(format!("{PREFIX}{}.{sealed}", self.ids[0]))
    }

    /// What a state of mcpx's says, if it is intact and not expired at `now`.
    pub fn verify(&self, state: &str, now: SystemTime) -> Result<Claims, ErrorObject> {
        let tampered = failed_integrity;
        let sealed = self.sealed_part(state).ok_or_else(tampered)?;
        let payload = self.keys.open("", sealed).ok_or_else(tampered)?;
        let payload: Value = serde_json::from_slice(&payload).map_err(|_| tampered())?;
        let claims = Claims {
            holder: payload["holder"].as_str().ok_or_else(tampered)?.to_owned(),
            at: payload["at"].as_str().map(str::to_owned),
            call: payload["call"].as_u64().ok_or_else(tampered)?,
            method: payload["method"].as_str().ok_or_else(tampered)?.to_owned(),
            target: payload["target"].as_str().ok_or_else(tampered)?.to_owned(),
            expires_ms: payload["exp"].as_u64().ok_or_else(tampered)?,
        };
        if millis(now) > claims.expires_ms {
            return Err(ErrorObject::new(
                INVALID_PARAMS,
                "Invalid params: requestState expired; call again without it",
            ));
        }
        Ok(claims)
    }
}

/// The refusal of a state that is not intact, or that no one this mcpx can reach signed.
pub fn failed_integrity() -> ErrorObject {
    ErrorObject::new(
        INVALID_PARAMS,
        "Invalid params: requestState failed its integrity check; call again without it",
    )
}

/// `now + wait` as the milliseconds a claim carries.
pub fn expiry(now: SystemTime, wait: Duration) -> u64 {
    millis(crate::deadline::wall_after(now, wait))
}

fn millis(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod v2026_07_28 {
    mod request_state {
        use crate::gateway::request_state::{expiry, Claims, Signer, PREFIX};
        use std::time::{Duration, SystemTime};

        fn claims() -> Claims {
            Claims {
                holder: "0123456789abcdef".into(),
                at: Some("10.0.0.2:7777".into()),
                call: 7,
                method: "tools/call".into(),
                target: "fixture__ask".into(),
                expires_ms: expiry(SystemTime::now(), Duration::from_secs(60)),
            }
        }

        #[test]
        fn a_state_verifies_under_its_key_only() {
            let signer = Signer::new().unwrap();
            let signed = claims();
            let state = signer.sign(&signed).unwrap();
            assert!(state.starts_with(PREFIX));
            assert_eq!(signer.verify(&state, SystemTime::now()).unwrap(), signed);
            let other = Signer::new().unwrap();
            assert!(other.verify(&state, SystemTime::now()).is_err());
            assert!(signer.owns(&state) && !other.owns(&state));
        }

        /// Replicas sharing the cluster key trust each other's states, also through a rotation.
        #[test]
        fn a_shared_key_verifies_on_every_replica_and_as_the_previous_one() {
            let (old, new) = ([1u8; 32], [2u8; 32]);
            let signed = claims();
            let state = Signer::shared(old, None).sign(&signed).unwrap();
            let now = SystemTime::now();
            assert_eq!(
                Signer::shared(old, None).verify(&state, now).unwrap(),
                signed
            );
            assert_eq!(
                Signer::shared(new, Some(old)).verify(&state, now).unwrap(),
                signed
            );
            assert!(Signer::shared(new, None).verify(&state, now).is_err());
        }

        #[test]
        fn a_tampered_state_is_refused_with_invalid_params() {
            let signer = Signer::new().unwrap();
            let state = signer.sign(&claims()).unwrap();
            // Flip each character of the payload and the tag in turn.
            for at in PREFIX.len()..state.len() {
                let mut bytes = state.clone().into_bytes();
                bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
                let tampered = String::from_utf8(bytes).unwrap();
                if tampered == state {
                    continue;
                }
                let error = signer.verify(&tampered, SystemTime::now()).unwrap_err();
                assert_eq!(error.code, -32602, "{tampered}");
            }
            assert!(signer.verify("mcpx1.", SystemTime::now()).is_err());
            assert!(signer.verify("", SystemTime::now()).is_err());
        }

        /// Sealed, not only signed: nothing of the claims (the replica's address, the holder,
        /// the tool) can be read from the state, in any encoding.
        #[test]
        fn a_state_reveals_nothing_of_what_it_names() {
            use base64::Engine;
            let signer = Signer::new().unwrap();
            let state = signer.sign(&claims()).unwrap();
            let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let decoded: Vec<u8> = state
                .split('.')
                .filter_map(|part| engine.decode(part).ok())
                .flatten()
                .collect();
            let readable = String::from_utf8_lossy(&decoded);
            for secret in ["10.0.0.2", "7777", "0123456789abcdef", "fixture__ask"] {
                assert!(
                    !state.contains(secret) && !readable.contains(secret),
                    "{secret}"
                );
            }
            // Two states of the same claims differ: each has a nonce of its own.
            assert_ne!(state, signer.sign(&claims()).unwrap());
        }

        #[test]
        fn an_expired_state_is_refused() {
            let signer = Signer::new().unwrap();
            let state = signer.sign(&claims()).unwrap();
            let later = SystemTime::now() + Duration::from_secs(61);
            let error = signer.verify(&state, later).unwrap_err();
            assert!(error.message.contains("expired"), "{}", error.message);
        }
    }
}
