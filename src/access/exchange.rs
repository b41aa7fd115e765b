//! Token exchange (RFC 8693) at the identity provider: a caller's access token becomes a token
//! of its own for one upstream (the upstream's resource as its audience), so that the caller
//! reaches a per-identity remote server as themselves, and their own token never reaches it.
//! mcpx authenticates as `[auth.external] clientId`, with its `clientSecret` (HTTP Basic) or by
//! a JWT signed with its `clientKey` (`private_key_jwt`, RFC 7523 §2.2).

use super::identity::AccessToken;
use super::issuer::{Issuer, FETCH_TIMEOUT};
use crate::config::Settings;
use crate::deadline::within;
use crate::net::client::fetch;
use base64::Engine;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// How long an exchanged token without `expires_in` is used.
const UNSTATED_LIFETIME: Duration = Duration::from_secs(300);

/// The provider's token endpoint, and who mcpx is there.
#[derive(Debug)]
pub struct Exchanger {
    issuer: Issuer,
    client_id: String,
    proof: Proof,
}

/// How mcpx proves at the token endpoint that it is its client.
enum Proof {
    /// `clientSecret` (none: an empty one), as HTTP Basic.
    Secret(Option<String>),
    /// `clientKey`: a short-lived JWT signed with it, on each request.
    Key(Box<ClientKey>),
}

impl std::fmt::Debug for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither the secret nor the key is ever printed.
        f.write_str(match self {
            Proof::Secret(_) => "Secret",
            Proof::Key(_) => "Key",
        })
    }
}

/// mcpx's private key at the provider, and the `kid` it is known by.
struct ClientKey {
    pair: KeyPair,
    kid: Option<String>,
}

enum KeyPair {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

/// How long a signed client assertion is good: one request's worth.
const ASSERTION_LIFETIME: u64 = 60;

/// RFC 7523's client assertion type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

impl ClientKey {
    /// The key in `pem` (PKCS#8: P-256 or RSA), known by `kid`; an error says what it is not.
    pub fn from_pem(pem: &str, kid: Option<String>) -> Result<ClientKey, String> {
        use rustls_pki_types::pem::PemObject;
        let der =
            rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| {
                "auth.external.clientKey is not a PKCS#8 private key in PEM (BEGIN PRIVATE KEY)"
                    .to_owned()
            })?;
        let der = der.secret_pkcs8_der();
        let rng = SystemRandom::new();
        let ec = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng);
        let pair = match (ec, RsaKeyPair::from_pkcs8(der)) {
            (Ok(ec), _) => KeyPair::Es256(ec),
            (_, Ok(rsa)) => KeyPair::Rs256(rsa),
            (Err(_), Err(_)) => {
                return Err("auth.external.clientKey is neither a P-256 nor an RSA key".into())
            }
        };
        Ok(ClientKey { pair, kid })
    }

    /// A client assertion for `client_id` at `endpoint`: signed, good for a minute, used once.
    fn assertion(&self, client_id: &str, endpoint: &str) -> Result<String, String> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let alg = match self.pair {
            KeyPair::Es256(_) => "ES256",
            KeyPair::Rs256(_) => "RS256",
        };
        let mut header = json!({"alg": alg, "typ": "JWT"});
        if let Some(kid) = &self.kid {
            header["kid"] = json!(kid);
        }
        let now = crate::upstream::auth::store::now_secs();
        let claims = json!({
            "iss": client_id, "sub": client_id, "aud": endpoint,
            "jti": crate::upstream::auth::authorize::random_token(16)?,
            "iat": now, "exp": now + ASSERTION_LIFETIME,
        });
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let failed = |_| "signing the client assertion failed".to_owned();
        let signed = match &self.pair {
            KeyPair::Es256(pair) => pair
                .sign(&rng, input.as_bytes())
                .map_err(failed)?
                .as_ref()
                .to_vec(),
            KeyPair::Rs256(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                (pair.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut out,
                ))
                .map_err(failed)?;
                out
            }
        };
        Ok(format!("{input}.{}", b64(&signed)))
    }
}

/// A token had by exchange.
pub struct Exchanged {
    /// The token the upstream is sent.
    pub token: String,
    /// When it stops being good.
    pub expires: Instant,
}

/// What the upstream's token is to be: for whom (its audience), with which scopes.
pub struct Asked<'a> {
    /// The upstream's resource (its URL), or `perIdentity.audience`.
    pub audience: &'a str,
    /// `perIdentity.scopes`.
    pub scopes: &'a [String],
}

impl Exchanger {
    /// The exchanger `[auth.external]` describes, with its `clientSecret` or `clientKey`
    /// expanded from `settings`; `None` without an issuer or a `clientId`; an error for a
    /// secret or key that cannot be had or used.
    pub fn new(settings: &Settings) -> Result<Option<Exchanger>, String> {
        let external = &settings.config.auth.external;
        let (Some(issuer), Some(client_id)) = (&external.issuer, &external.client_id) else {
            return Ok(None);
        };
        let proof = match settings.exchange_key.clone()? {
            Some(pem) => Proof::Key(Box::new(ClientKey::from_pem(
                &pem,
                external.client_key_id.clone(),
            )?)),
            None => Proof::Secret(settings.exchange_secret.clone()?),
        };
        Ok(Some(Exchanger {
            issuer: Issuer::new(issuer.clone(), None, None),
            client_id: client_id.clone(),
            proof,
        }))
    }

    /// `subject`'s token exchanged for one `asked` describes; an error says why, never a token.
    pub async fn exchange(
        &self,
        subject: &AccessToken,
        asked: Asked<'_>,
    ) -> Result<Exchanged, String> {
        let endpoint = self.issuer.token_endpoint().await?;
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", GRANT)
                .append_pair("subject_token", subject.expose())
                .append_pair("subject_token_type", ACCESS_TOKEN)
                .append_pair("requested_token_type", ACCESS_TOKEN)
                .append_pair("audience", asked.audience)
                .append_pair("resource", asked.audience);
            if !asked.scopes.is_empty() {
                form.append_pair("scope", &asked.scopes.join(" "));
            }
            if let Proof::Key(key) = &self.proof {
                form.append_pair("client_id", &self.client_id)
                    .append_pair("client_assertion_type", JWT_BEARER)
                    .append_pair(
                        "client_assertion",
                        &key.assertion(&self.client_id, &endpoint)?,
                    );
            }
            form.finish()
        };
        let mut headers = HeaderMap::new();
        if let Proof::Secret(secret) = &self.proof {
            let pair = format!("{}:{}", self.client_id, secret.as_deref().unwrap_or(""));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            if let Ok(mut value) = HeaderValue::try_from(format!("Basic {basic}")) {
                value.set_sensitive(true);
                headers.insert(http::header::AUTHORIZATION, value);
            }
        }
        let body = Some(("application/x-www-form-urlencoded", form));
        let answer = within(FETCH_TIMEOUT, fetch(Method::POST, &endpoint, headers, body)).await?;
        read_answer(answer.status, &answer.body)
    }
}

/// The token a provider's exchange answer (`status`, `body`) gives, or why there is none:
/// whatever the provider sends, an error or a token, never a panic.
pub fn read_answer(status: StatusCode, body: &[u8]) -> Result<Exchanged, String> {
    let said: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if status != StatusCode::OK {
        let error = said["error"].as_str().unwrap_or("no error code");
        let description = said["error_description"].as_str().unwrap_or_default();
        return Err(format!(
            "the identity provider refused the token exchange ({} {error}{}{description})",
            status.as_u16(),
            if description.is_empty() { "" } else { ": " },
        ));
    }
    let token = said["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("the identity provider's exchange answer holds no access_token")?;
    let lifetime = said["expires_in"]
        .as_u64()
        .map_or(UNSTATED_LIFETIME, Duration::from_secs);
    Ok(Exchanged {
        token: token.to_owned(),
        // `expires_in` is the provider's to say: 2^64-1 seconds is a long time, not a panic.
        expires: crate::deadline::after(lifetime),
    })
}

#[cfg(test)]
mod every_revision {
    mod team {
        use super::super::*;
        use ring::signature::{KeyPair as _, UnparsedPublicKey};

        fn pem(der: &[u8]) -> String {
            let body = base64::engine::general_purpose::STANDARD.encode(der);
            let lines: Vec<_> = body
                .as_bytes()
                .chunks(64)
                .map(|l| std::str::from_utf8(l).unwrap())
                .collect();
            format!(
                "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
                lines.join("\n")
            )
        }

        /// The signed parts of `jwt`, its header and claims, and its signature.
        fn parts(jwt: &str) -> (String, Value, Value, Vec<u8>) {
            let decode = |part: &str| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(part)
                    .unwrap()
            };
            let pieces: Vec<_> = jwt.split('.').collect();
            let json = |part: &str| serde_json::from_slice::<Value>(&decode(part)).unwrap();
            let input = format!("{}.{}", pieces[0], pieces[1]);
            (input, json(pieces[0]), json(pieces[1]), decode(pieces[2]))
        }

        #[test]
        fn a_client_assertion_is_signed_by_the_key_for_the_endpoint_and_is_short_lived() {
            let rng = SystemRandom::new();
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            let der = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
            let public = EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).unwrap();
            let key = ClientKey::from_pem(&pem(der.as_ref()), Some("k1".into())).unwrap();
            let jwt = key.assertion("mcpx", "https://idp/token").unwrap();
            let (input, header, claims, signed) = parts(&jwt);
            assert_eq!(header["alg"], "ES256");
            assert_eq!(header["kid"], "k1");
            assert_eq!(
                (&claims["iss"], &claims["sub"]),
                (&json!("mcpx"), &json!("mcpx"))
            );
            assert_eq!(claims["aud"], "https://idp/token");
            let lifetime = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
            assert!(lifetime <= ASSERTION_LIFETIME);
            let verifier = UnparsedPublicKey::new(
                &signature::ECDSA_P256_SHA256_FIXED,
                public.public_key().as_ref(),
            );
            verifier.verify(input.as_bytes(), &signed).unwrap();
            let again = parts(&key.assertion("mcpx", "https://idp/token").unwrap()).2;
            assert_ne!(again["jti"], claims["jti"], "each assertion is used once");
        }

        #[test]
        fn an_rsa_key_signs_rs256_and_anything_else_is_refused_saying_what_it_is_not() {
            let der = std::fs::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/access/rsa-2048.pk8"
            ))
            .unwrap();
            let key = ClientKey::from_pem(&pem(&der), None).unwrap();
            let (input, header, _, signed) =
                parts(&key.assertion("mcpx", "https://idp/token").unwrap());
            assert_eq!(header["alg"], "RS256");
            assert!(header.get("kid").is_none());
            let pair = RsaKeyPair::from_pkcs8(&der).unwrap();
            let verifier = UnparsedPublicKey::new(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                pair.public().as_ref(),
            );
            verifier.verify(input.as_bytes(), &signed).unwrap();
            let said = ClientKey::from_pem("not a key", None).err().unwrap();
            assert!(said.contains("PKCS#8"), "{said}");
        }
    }
}
