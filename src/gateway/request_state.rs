//! The `requestState` mcpx mints when a modern client's call waits on an upstream's question.
//!
//! It names the waiting call, the method and target it was for, the mcpx process holding the call
//! (and where other replicas reach it), and when it expires, and is signed with HMAC-SHA256: the
//! client holds it between rounds but can neither forge one nor alter one (the specification
//! requires integrity protection, since the state decides which call a retry resumes). The key
//! is made when mcpx starts, or derived from the cluster key, so that a replica the retry lands
//! on can trust the address it names and forward the retry there. States of mcpx's own start
//! with [`PREFIX`] and the id of the key that signed them; any other `requestState` (another
//! mcpx's too, when this one is its client) is a modern upstream's, passed through untouched.

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

/// Mints states under one secret key, and checks them under it or the key it replaces.
pub struct Signer {
    key: Key,
    previous: Option<Key>,
}

/// A signing key and its public id, which every state signed under it carries: an mcpx that is
/// the upstream of another mints states with the same prefix, and the id tells the outer one
/// which states are its own (the rest pass through to the upstream that minted them).
struct Key {
    secret: [u8; 32],
    id: String,
}

impl Key {
    fn new(secret: [u8; 32]) -> Key {
        let mut mac = Signer::mac(&secret);
        mac.update(b"mcpx requestState key id");
        let id = URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..6]);
        Key { secret, id }
    }
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
            key: Key::new(key),
            previous: previous.map(Key::new),
        }
    }

    /// Whether `state` was signed by this signer's keys (intact or not), not by another mcpx.
    pub fn owns(&self, state: &str) -> bool {
        self.key_of(state).is_some()
    }

    /// The key whose id `state` carries, and the rest of it.
    fn key_of<'s>(&self, state: &'s str) -> Option<(&Key, &'s str)> {
        let (id, rest) = state.strip_prefix(PREFIX)?.split_once('.')?;
        let key = std::iter::once(&self.key)
            .chain(self.previous.as_ref())
            .find(|key| key.id == id)?;
        Some((key, rest))
    }

    fn mac(key: &[u8; 32]) -> Hmac<Sha256> {
        // HMAC takes a key of any length, so this cannot fail.
        Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length")
    }

    /// The state for `claims`.
    pub fn sign(&self, claims: &Claims) -> String {
        let payload = json!({
            "holder": claims.holder,
            "at": claims.at,
            "call": claims.call,
            "method": claims.method,
            "target": claims.target,
            "exp": claims.expires_ms,
        })
        .to_string();
        let mut mac = Self::mac(&self.key.secret);
        mac.update(payload.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!(
            "{PREFIX}{}.{}.{}",
            self.key.id,
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// What a state of mcpx's says, if it is intact and not expired at `now`.
    pub fn verify(&self, state: &str, now: SystemTime) -> Result<Claims, ErrorObject> {
        let tampered = failed_integrity;
        let (key, signed) = self.key_of(state).ok_or_else(tampered)?;
        let (payload, tag) = signed.split_once('.').ok_or_else(tampered)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| tampered())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| tampered())?;
        let mut mac = Self::mac(&key.secret);
        mac.update(&payload);
        // Constant-time comparison: timing tells a forger nothing.
        mac.verify_slice(&tag).map_err(|_| tampered())?;
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
    millis(now + wait)
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
            let state = signer.sign(&signed);
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
            let state = Signer::shared(old, None).sign(&signed);
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
            let state = signer.sign(&claims());
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

        #[test]
        fn an_expired_state_is_refused() {
            let signer = Signer::new().unwrap();
            let state = signer.sign(&claims());
            let later = SystemTime::now() + Duration::from_secs(61);
            let error = signer.verify(&state, later).unwrap_err();
            assert!(error.message.contains("expired"), "{}", error.message);
        }
    }
}
