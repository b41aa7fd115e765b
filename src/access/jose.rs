//! JSON Web Signatures as access tokens use them (RFC 7515, 7517, 7518, 8037): a compact JWS is
//! split and its header read, and its signature is checked with `ring` against one of the
//! issuer's JWKs. The algorithm is the header's, but only if the allowlist names it and the key
//! is of its family: `none` and HMAC are never accepted, so a public key can never be used as a
//! shared secret (the "HS256 signed with the RSA key" forgery).

pub use crate::config::Alg;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use serde_json::{Map, Value};

/// RSA's parameters for `alg`, if it is an RSA algorithm.
fn rsa(alg: Alg) -> Option<&'static signature::RsaParameters> {
    Some(match alg {
        Alg::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        Alg::Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
        Alg::Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
        Alg::Ps256 => &signature::RSA_PSS_2048_8192_SHA256,
        Alg::Ps384 => &signature::RSA_PSS_2048_8192_SHA384,
        Alg::Ps512 => &signature::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

/// One public key of an issuer's JWK Set, usable for signatures.
#[derive(Debug, Clone)]
pub struct Jwk {
    /// Its `kid`, which a token's header names.
    pub kid: Option<String>,
    /// The one algorithm it is for, when the set says.
    alg: Option<String>,
    material: Material,
}

#[derive(Debug, Clone)]
enum Material {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (`04 || x || y`) on P-256 or P-384.
    Ec {
        p384: bool,
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
}

/// The signing keys of a JWK Set (`{"keys": [...]}`); a key for encryption, of an unknown type
/// or with a broken member is left out, not an error: a set may hold keys for others too.
pub fn keys_of(set: &Value) -> Vec<Jwk> {
    let keys = set.get("keys").and_then(Value::as_array);
    keys.into_iter().flatten().filter_map(jwk).collect()
}

fn jwk(key: &Value) -> Option<Jwk> {
    let text = |name: &str| key.get(name).and_then(Value::as_str);
    let bytes = |name: &str| text(name).and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
    if text("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let material = match (text("kty")?, text("crv")) {
        ("RSA", _) => Material::Rsa {
            n: bytes("n")?,
            e: bytes("e")?,
        },
        ("EC", Some(curve @ ("P-256" | "P-384"))) => {
            let (x, y) = (bytes("x")?, bytes("y")?);
            let size = if curve == "P-256" { 32 } else { 48 };
            if x.len() != size || y.len() != size {
                return None;
            }
            Material::Ec {
                p384: curve == "P-384",
                point: [&[4u8][..], &x, &y].concat(),
            }
        }
        ("OKP", Some("Ed25519")) => Material::Ed25519(bytes("x").filter(|x| x.len() == 32)?),
        _ => return None,
    };
    Some(Jwk {
        kid: text("kid").map(str::to_owned),
        alg: text("alg").map(str::to_owned),
        material,
    })
}

impl Jwk {
    /// Whether `signature` over `input` is this key's under `alg`, `alg` being of the key's
    /// family (and the key's own `alg`, where it names one).
    fn verifies(&self, alg: Alg, input: &[u8], signature: &[u8]) -> bool {
        if self.alg.as_deref().is_some_and(|own| own != alg.name()) {
            return false;
        }
        let verify = |algorithm: &'static dyn VerificationAlgorithm, key: &[u8]| {
            UnparsedPublicKey::new(algorithm, key)
                .verify(input, signature)
                .is_ok()
        };
        match (&self.material, alg) {
            (Material::Rsa { n, e }, alg) => rsa(alg).is_some_and(|params| {
                let components = signature::RsaPublicKeyComponents { n, e };
                components.verify(params, input, signature).is_ok()
            }),
            (Material::Ec { p384: false, point }, Alg::Es256) => {
                verify(&signature::ECDSA_P256_SHA256_FIXED, point)
            }
            (Material::Ec { p384: true, point }, Alg::Es384) => {
                verify(&signature::ECDSA_P384_SHA384_FIXED, point)
            }
            (Material::Ed25519(x), Alg::EdDsa) => verify(&signature::ED25519, x),
            _ => false,
        }
    }
}

/// A compact JWS, split and decoded, its signature not yet checked.
#[derive(Debug)]
pub struct Jws<'t> {
    /// The protected header.
    pub header: Map<String, Value>,
    /// The payload: a token's claims.
    pub claims: Map<String, Value>,
    signing_input: &'t str,
    signature: Vec<u8>,
}

/// Whether `token` has a JWS's shape (three base64url parts); an opaque token does not.
pub fn looks_like_jws(token: &str) -> bool {
    token.split('.').count() == 3
}

/// `token` split into a JWS whose header and payload are JSON objects; why not, otherwise.
pub fn parse(token: &str) -> Result<Jws<'_>, &'static str> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the token is not a JWS");
    };
    let object = |part: &str| {
        let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
        match serde_json::from_slice(&bytes).ok()? {
            Value::Object(map) => Some(map),
            _ => None,
        }
    };
    let (Some(header), Some(claims)) = (object(header), object(payload)) else {
        return Err("the token's header or claims are not base64url JSON objects");
    };
    // RFC 7515 §4.1.11: extensions named critical must be understood, and mcpx knows none.
    if header.contains_key("crit") {
        return Err("the token's header names critical extensions (crit) mcpx does not understand");
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "the token's signature is not base64url")?;
    Ok(Jws {
        header,
        claims,
        signing_input: &token[..token.rfind('.').unwrap_or(0)],
        signature,
    })
}

impl Jws<'_> {
    /// Whether its header's `typ` is `expected` (RFC 7515 §4.1.9: case aside, and with or
    /// without `application/`); a token without `typ` is a plain `JWT`.
    pub fn has_type(&self, expected: &str) -> bool {
        let bare = |t: &str| {
            let t = t.to_ascii_lowercase();
            t.strip_prefix("application/")
                .map(str::to_owned)
                .unwrap_or(t)
        };
        match self.header.get("typ") {
            Some(Value::String(typ)) => bare(typ) == bare(expected),
            None => bare(expected) == "jwt",
            Some(_) => false,
        }
    }

    /// The `kid` its header names.
    pub fn kid(&self) -> Option<&str> {
        self.header.get("kid").and_then(Value::as_str)
    }

    /// The algorithm its header names, if it is one of `allowed`; why not, otherwise.
    pub fn alg(&self, allowed: &[Alg]) -> Result<Alg, &'static str> {
        let named = self.header.get("alg").and_then(Value::as_str);
        named
            .and_then(Alg::named)
            .filter(|alg| allowed.contains(alg))
            .ok_or("the token's algorithm is not one mcpx accepts")
    }

    /// Whether one of `keys` (the one its `kid` names, when it names one) signed it under `alg`.
    pub fn signed_by(&self, alg: Alg, keys: &[Jwk]) -> bool {
        let kid = self.kid();
        keys.iter()
            .filter(|key| kid.is_none() || key.kid.as_deref() == kid)
            .any(|key| key.verifies(alg, self.signing_input.as_bytes(), &self.signature))
    }
}

#[cfg(test)]
mod every_revision {
    mod jose {
        use super::super::*;
        use ring::rand::SystemRandom;
        use ring::signature::{
            EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING,
        };
        use serde_json::json;

        fn b64(bytes: &[u8]) -> String {
            URL_SAFE_NO_PAD.encode(bytes)
        }

        fn signed(header: Value, claims: Value, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
            let input = format!(
                "{}.{}",
                b64(header.to_string().as_bytes()),
                b64(claims.to_string().as_bytes())
            );
            format!("{input}.{}", b64(&sign(input.as_bytes())))
        }

        #[test]
        fn an_es256_and_an_ed25519_signature_verify_and_a_changed_byte_does_not() {
            let rng = SystemRandom::new();
            let ec_doc =
                EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            let ec =
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, ec_doc.as_ref(), &rng)
                    .unwrap();
            let point = ec.public_key().as_ref();
            let ed_doc = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
            let ed = Ed25519KeyPair::from_pkcs8(ed_doc.as_ref()).unwrap();
            let set = json!({"keys": [
                {"kty": "EC", "crv": "P-256", "kid": "ec", "x": b64(&point[1..33]), "y": b64(&point[33..])},
                {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": b64(ed.public_key().as_ref())},
                {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            ]});
            let keys = keys_of(&set);
            assert_eq!(
                keys.len(),
                2,
                "the symmetric key is not a signing key mcpx takes"
            );
            let claims = json!({"sub": "alice"});
            let es = signed(json!({"alg": "ES256", "kid": "ec"}), claims.clone(), |m| {
                ec.sign(&rng, m).unwrap().as_ref().to_vec()
            });
            let eddsa = signed(json!({"alg": "EdDSA", "kid": "ed"}), claims, |m| {
                ed.sign(m).as_ref().to_vec()
            });
            for token in [&es, &eddsa] {
                let jws = parse(token).unwrap();
                let alg = jws.alg(&[Alg::Es256, Alg::EdDsa]).unwrap();
                assert!(jws.signed_by(alg, &keys), "{token}");
                assert_eq!(jws.claims["sub"], "alice");
            }
            // The EC signature under the Ed25519 key's kid, and a forged payload: neither holds.
            let swapped = es.replacen(
                &b64(br#"{"alg":"ES256","kid":"ec"}"#),
                &b64(br#"{"alg":"ES256","kid":"ed"}"#),
                1,
            );
            let jws = parse(&swapped).unwrap();
            assert!(!jws.signed_by(Alg::Es256, &keys));
            let mut parts: Vec<&str> = es.split('.').collect();
            let forged = b64(br#"{"sub":"mallory"}"#);
            parts[1] = &forged;
            let forged = parts.join(".");
            let jws = parse(&forged).unwrap();
            assert!(!jws.signed_by(Alg::Es256, &keys));
        }

        #[test]
        fn none_and_hmac_are_never_an_algorithm() {
            for alg in ["none", "HS256", "HS512", "", "rs256"] {
                let token = format!(
                    "{}.{}.",
                    b64(json!({"alg": alg}).to_string().as_bytes()),
                    b64(b"{}")
                );
                let jws = parse(&token).unwrap();
                assert!(jws.alg(&Alg::ALL).is_err(), "{alg}");
            }
            assert!(parse("a.b").is_err() && parse("a.b.c.d").is_err());
        }
    }
}
