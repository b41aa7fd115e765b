//! The built-in authorization server's signing key: Ed25519, its seed derived from the cluster
//! key (or the daemon's own key file) with a label of its own, so that every replica holding
//! the key signs and verifies the same tokens, and nothing else derived from the key can be
//! turned into it. During a key rotation the previous key's public half stays in the JWK Set,
//! so tokens signed before still verify. Access tokens are RFC 9068 JWTs.

use crate::access::jose::{self, Jwk};
use crate::cluster::ClusterKeys;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What the key's seed is derived under.
const LABEL: &[u8] = b"mcpx builtin access-token signing v1";

/// The signing key, and the public keys tokens may be verified with.
pub struct Signer {
    key: Ed25519KeyPair,
    kid: String,
    /// The JWK Set served at `jwks_uri`: the current key, and the previous one in a rotation.
    set: Value,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("kid", &self.kid).finish()
    }
}

impl Signer {
    /// The signer `keys` derive.
    pub fn new(keys: &ClusterKeys) -> Result<Signer, String> {
        let (current, previous) = keys.derive(LABEL);
        let pair = |seed: [u8; 32]| {
            Ed25519KeyPair::from_seed_unchecked(&seed)
                .map_err(|_| "cannot make the signing key".to_owned())
        };
        let key = pair(current)?;
        let mut published = vec![public_jwk(&key)];
        if let Some(previous) = previous {
            published.push(public_jwk(&pair(previous)?));
        }
        Ok(Signer {
            kid: kid_of(&key),
            key,
            set: json!({ "keys": published }),
        })
    }

    /// The JWK Set.
    pub fn set(&self) -> &Value {
        &self.set
    }

    /// The keys a token of this server may be verified with.
    pub fn keys(&self) -> Vec<Jwk> {
        jose::keys_of(&self.set)
    }

    /// `claims` as a signed access token (`typ: at+jwt`).
    pub fn sign(&self, claims: &Map<String, Value>) -> String {
        let header = json!({"alg": "EdDSA", "typ": "at+jwt", "kid": self.kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(Value::Object(claims.clone()).to_string())
        );
        let signature = self.key.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

fn kid_of(key: &Ed25519KeyPair) -> String {
    let digest = Sha256::digest(key.public_key().as_ref());
    URL_SAFE_NO_PAD.encode(&digest[..9])
}

fn public_jwk(key: &Ed25519KeyPair) -> Value {
    json!({
        "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA",
        "kid": kid_of(key),
        "x": URL_SAFE_NO_PAD.encode(key.public_key().as_ref()),
    })
}
