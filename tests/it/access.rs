//! The HTTP door as an OAuth 2.1 protected resource, end to end: `mcpx daemon` with
//! `auth.mode = "external"` in front of a fake identity provider written here (RFC 8414
//! metadata, a JWK Set it can rotate, RFC 7662 introspection, every fetch counted, all on
//! 127.0.0.1), and tokens minted by the test with ring: ES256, EdDSA and RS256 (the RSA key is
//! `tests/access/rsa-2048.pk8`, made for these tests and nothing else). Each refusal is checked
//! for its status and every parameter of its `WWW-Authenticate`.

use crate::common::http::*;
use crate::common::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Value};
use sha2::Digest;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// The public origin the daemon is configured with; its doors are this + `/mcp[/NAME]`.
pub(crate) const PUBLIC: &str = "https://mcp.test";

pub(crate) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The provider's signing keys.
pub(crate) struct Keys {
    rng: SystemRandom,
    ec: EcdsaKeyPair,
    ed: Ed25519KeyPair,
    rsa: RsaKeyPair,
}

impl Keys {
    pub(crate) fn new() -> Keys {
        let rng = SystemRandom::new();
        let ec_alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let ec_doc = EcdsaKeyPair::generate_pkcs8(ec_alg, &rng).unwrap();
        let ec = EcdsaKeyPair::from_pkcs8(ec_alg, ec_doc.as_ref(), &rng).unwrap();
        let ed_doc = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let ed = Ed25519KeyPair::from_pkcs8(ed_doc.as_ref()).unwrap();
        let rsa_der = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/access/rsa-2048.pk8"
        ))
        .unwrap();
        let rsa = RsaKeyPair::from_pkcs8(&rsa_der).unwrap();
        Keys { rng, ec, ed, rsa }
    }

    /// The RSA key's modulus: what an attacker would use as an HMAC secret.
    fn rsa_modulus(&self) -> Vec<u8> {
        let public: ring::rsa::PublicKeyComponents<Vec<u8>> = self.rsa.public().into();
        public.n
    }

    /// The JWK Set, each key under `kid` + its kind (`ec`, `ed`, `rsa`).
    pub(crate) fn set(&self, kid: &str) -> Value {
        let point = self.ec.public_key().as_ref();
        let rsa: ring::rsa::PublicKeyComponents<Vec<u8>> = self.rsa.public().into();
        json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": format!("{kid}ec"), "use": "sig",
             "x": b64(&point[1..33]), "y": b64(&point[33..])},
            {"kty": "OKP", "crv": "Ed25519", "kid": format!("{kid}ed"), "x": b64(self.ed.public_key().as_ref())},
            {"kty": "RSA", "kid": format!("{kid}rsa"), "alg": "RS256", "n": b64(&rsa.n), "e": b64(&rsa.e)},
        ]})
    }

    /// A compact JWS of `claims` under `header`, signed as its `alg` says (`none`: no signature;
    /// `HS256`: keyed with the RSA modulus, the classic forgery).
    pub(crate) fn token(&self, header: Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let message = input.as_bytes();
        let signature = match header["alg"].as_str().unwrap() {
            "ES256" => self.ec.sign(&self.rng, message).unwrap().as_ref().to_vec(),
            "EdDSA" => self.ed.sign(message).as_ref().to_vec(),
            "RS256" => {
                let mut out = vec![0; self.rsa.public().modulus_len()];
                (self.rsa)
                    .sign(&signature::RSA_PKCS1_SHA256, &self.rng, message, &mut out)
                    .unwrap();
                out
            }
            "HS256" => {
                use hmac::Mac;
                let mut mac =
                    hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.rsa_modulus()).unwrap();
                mac.update(message);
                mac.finalize().into_bytes().to_vec()
            }
            _ => Vec::new(),
        };
        format!("{input}.{}", b64(&signature))
    }
}

/// The fake identity provider.
pub(crate) struct Provider {
    pub(crate) issuer: String,
    keys: Arc<Keys>,
    /// The `kid` prefix of the set it serves now (rotation changes it).
    kid: Arc<Mutex<String>>,
    /// How often its JWK Set and its introspection endpoint were asked.
    key_fetches: Arc<AtomicUsize>,
    introspections: Arc<AtomicUsize>,
    /// Opaque tokens and what introspection says of each.
    pub(crate) opaque: Arc<Mutex<HashMap<String, Value>>>,
    /// The `Authorization` of the last introspection request.
    introspected_by: Arc<Mutex<Option<String>>>,
    /// The access tokens its token endpoint issued.
    issued: Arc<AtomicUsize>,
    /// The clients that prove themselves by a key (RFC 7523), and its public point.
    client_keys: Arc<Mutex<HashMap<String, Vec<u8>>>>,
}

/// A code the authorization endpoint gave: its PKCE challenge and the resource it is for.
struct Code {
    challenge: String,
    resource: String,
    client_id: String,
    /// Who signed in: what the person typed (`user`, as the tests' browser adds it), else
    /// `loop-user`.
    subject: String,
}

/// The query or form `text` as a map.
pub(crate) fn form(text: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(text).into_owned().collect()
}

/// RFC 8693's grant.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Who may exchange tokens at the provider, with its secret (HTTP Basic).
pub(crate) const EXCHANGE_CLIENT: (&str, &str) = ("mcpx-exchange", "xs");

/// A subject the provider never lets anyone act for.
pub(crate) const NEVER_ACTED_FOR: &str = "mallory";
/// A subject whose exchanged tokens the provider says live 2^64-1 seconds (`expires_in`).
pub(crate) const LIVES_FOREVER: &str = "methuselah";

/// The client a token request proves itself as: [`EXCHANGE_CLIENT`] by HTTP Basic, or a client
/// whose P-256 key the provider trusts by a client assertion (RFC 7523) for its token endpoint,
/// unexpired; `None` for any other.
fn exchanging_client(
    asked: &HashMap<String, String>,
    authorization: Option<&str>,
    issuer: &str,
    client_keys: &HashMap<String, Vec<u8>>,
) -> Option<String> {
    let (client, secret) = EXCHANGE_CLIENT;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{client}:{secret}"))
    );
    if authorization == Some(basic.as_str()) {
        return Some(client.to_owned());
    }
    if authorization.is_some()
        || asked.get("client_assertion_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    {
        return None;
    }
    let assertion = asked.get("client_assertion")?;
    let pieces: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = pieces[..] else {
        return None;
    };
    let decode = |part: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .ok()
    };
    let header: Value = serde_json::from_slice(&decode(header)?).ok()?;
    let claims: Value = serde_json::from_slice(&decode(claims)?).ok()?;
    let id = claims["iss"].as_str()?;
    let public = client_keys.get(id)?;
    let verifier =
        ring::signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, public);
    let input = format!("{}.{}", pieces[0], pieces[1]);
    let good = header["alg"] == "ES256"
        && verifier
            .verify(input.as_bytes(), &decode(signature)?)
            .is_ok()
        && claims["sub"] == id
        && asked.get("client_id").map(String::as_str) == Some(id)
        && claims["aud"] == format!("{issuer}/token")
        && claims["exp"].as_u64().is_some_and(|exp| exp > now());
    good.then(|| id.to_owned())
}

/// The provider's answer to a token exchange `asked` by the client `authorization` names: a
/// token `sign`ed for the subject token's `sub`, the asked audience and `act` naming the client;
/// `invalid_client` for another client, `invalid_grant` for a subject token it did not issue,
/// or one of [`NEVER_ACTED_FOR`].
fn exchange(
    asked: &HashMap<String, String>,
    authorization: Option<&str>,
    issuer: &str,
    client_keys: &HashMap<String, Vec<u8>>,
    sign: impl Fn(&Value) -> String,
) -> (&'static str, Value) {
    let Some(client) = exchanging_client(asked, authorization, issuer, client_keys) else {
        return ("401 Unauthorized", json!({"error": "invalid_client"}));
    };
    let subject_token = asked.get("subject_token").map_or("", String::as_str);
    let payload = subject_token.split('.').nth(1).unwrap_or_default();
    let claims: Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null);
    let sub = claims["sub"].as_str().unwrap_or_default();
    if claims["iss"] != issuer || sub.is_empty() {
        return (
            "400 Bad Request",
            json!({"error": "invalid_grant", "error_description": "not a token of this provider"}),
        );
    }
    if sub == NEVER_ACTED_FOR {
        return (
            "400 Bad Request",
            json!({"error": "invalid_grant", "error_description": "this subject may not be acted for"}),
        );
    }
    let audience = asked.get("audience").cloned().unwrap_or_default();
    let token = sign(&json!({
        "iss": issuer, "sub": sub, "aud": audience, "act": {"sub": client},
        "exp": now() + 300, "iat": now(), "scope": asked.get("scope").cloned().unwrap_or_default(),
    }));
    let expires_in = match sub == LIVES_FOREVER {
        true => u64::MAX,
        false => 300,
    };
    (
        "200 OK",
        json!({"access_token": token, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer", "expires_in": expires_in}),
    )
}

impl Provider {
    pub(crate) fn start() -> Provider {
        let keys = Arc::new(Keys::new());
        let kid = Arc::new(Mutex::new("one-".to_owned()));
        let key_fetches = Arc::new(AtomicUsize::new(0));
        let introspections = Arc::new(AtomicUsize::new(0));
        let opaque: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
        let introspected_by: Arc<Mutex<Option<String>>> = Arc::default();
        let issuer = Arc::new(Mutex::new(String::new()));
        let issued = Arc::new(AtomicUsize::new(0));
        let codes: Arc<Mutex<HashMap<String, Code>>> = Arc::default();
        let client_keys: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let served = {
            let client_keys = client_keys.clone();
            let (issued, codes) = (issued.clone(), codes.clone());
            let (keys, kid, key_fetches) = (keys.clone(), kid.clone(), key_fetches.clone());
            let (introspections, opaque) = (introspections.clone(), opaque.clone());
            let (introspected_by, issuer) = (introspected_by.clone(), issuer.clone());
            http_server(move |request| {
                let target = request.line.split(' ').nth(1).unwrap_or_default();
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                let issuer = issuer.lock().unwrap().clone();
                let json =
                    |value: Value| ("200 OK".to_owned(), "application/json", value.to_string());
                match path {
                    "/.well-known/oauth-authorization-server" => json(json!({
                        "issuer": issuer,
                        "authorization_endpoint": format!("{issuer}/authorize"),
                        "token_endpoint": format!("{issuer}/token"),
                        "registration_endpoint": format!("{issuer}/register"),
                        "jwks_uri": format!("{issuer}/jwks"),
                        "introspection_endpoint": format!("{issuer}/introspect"),
                        "code_challenge_methods_supported": ["S256"],
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["authorization_code", TOKEN_EXCHANGE],
                        "token_endpoint_auth_methods_supported": ["none"],
                        "authorization_response_iss_parameter_supported": true,
                    })),
                    "/register" => {
                        let mut client: Value =
                            serde_json::from_slice(&request.body).unwrap_or(json!({}));
                        client["client_id"] = json!("registered-client");
                        (
                            "201 Created".to_owned(),
                            "application/json",
                            client.to_string(),
                        )
                    }
                    // The person consents at once: straight back to the client with a code.
                    "/authorize" => {
                        let asked = form(query.as_bytes());
                        let code = format!("code-{}", codes.lock().unwrap().len());
                        codes.lock().unwrap().insert(
                            code.clone(),
                            Code {
                                challenge: asked.get("code_challenge").cloned().unwrap_or_default(),
                                resource: asked.get("resource").cloned().unwrap_or_default(),
                                client_id: asked.get("client_id").cloned().unwrap_or_default(),
                                subject: asked.get("user").cloned().unwrap_or("loop-user".into()),
                            },
                        );
                        let mut back = url::Url::parse(&asked["redirect_uri"]).unwrap();
                        back.query_pairs_mut()
                            .append_pair("code", &code)
                            .append_pair("state", asked.get("state").map_or("", |s| s))
                            .append_pair("iss", &issuer);
                        (
                            format!("302 Found\r\nLocation: {back}"),
                            "text/plain",
                            String::new(),
                        )
                    }
                    "/token"
                        if form(&request.body).get("grant_type").map(String::as_str)
                            == Some(TOKEN_EXCHANGE) =>
                    {
                        let authorization = request
                            .headers
                            .iter()
                            .find(|(n, _)| n == "authorization")
                            .map(|(_, v)| v.clone());
                        let (status, answer) = exchange(
                            &form(&request.body),
                            authorization.as_deref(),
                            &issuer,
                            &client_keys.lock().unwrap(),
                            |claims| {
                                let kid = format!("{}ec", kid.lock().unwrap());
                                keys.token(
                                    json!({"alg": "ES256", "kid": kid, "typ": "at+jwt"}),
                                    claims,
                                )
                            },
                        );
                        (status.to_owned(), "application/json", answer.to_string())
                    }
                    "/token" => {
                        let asked = form(&request.body);
                        let code = codes
                            .lock()
                            .unwrap()
                            .remove(asked.get("code").map_or("", |c| c));
                        let verifier = asked.get("code_verifier").cloned().unwrap_or_default();
                        let challenge = b64(&sha2::Sha256::digest(verifier.as_bytes()));
                        match code.filter(|c| c.challenge == challenge) {
                            None => (
                                "400 Bad Request".to_owned(),
                                "application/json",
                                json!({"error": "invalid_grant"}).to_string(),
                            ),
                            Some(code) => {
                                issued.fetch_add(1, Ordering::SeqCst);
                                let claims = json!({
                                    "iss": issuer, "sub": code.subject, "aud": code.resource,
                                    "exp": now() + 300, "iat": now(), "scope": "mcp",
                                    "client_id": code.client_id,
                                });
                                let kid = format!("{}ec", kid.lock().unwrap());
                                let token = keys.token(
                                    json!({"alg": "ES256", "kid": kid, "typ": "at+jwt"}),
                                    &claims,
                                );
                                json(
                                    json!({"access_token": token, "token_type": "Bearer", "expires_in": 300, "scope": "mcp"}),
                                )
                            }
                        }
                    }
                    "/jwks" => {
                        key_fetches.fetch_add(1, Ordering::SeqCst);
                        json(keys.set(&kid.lock().unwrap()))
                    }
                    "/introspect" => {
                        introspections.fetch_add(1, Ordering::SeqCst);
                        let authorization = request
                            .headers
                            .iter()
                            .find(|(n, _)| n == "authorization")
                            .map(|(_, v)| v.clone());
                        *introspected_by.lock().unwrap() = authorization;
                        let token = form(&request.body)
                            .get("token")
                            .cloned()
                            .unwrap_or_default();
                        let answer = opaque.lock().unwrap().get(&token).cloned();
                        json(answer.unwrap_or(json!({"active": false})))
                    }
                    _ => ("404 Not Found".to_owned(), "text/plain", String::new()),
                }
            })
        };
        let url = format!("http://{served}");
        *issuer.lock().unwrap() = url.clone();
        Provider {
            issuer: url,
            keys,
            kid,
            key_fetches,
            introspections,
            opaque,
            introspected_by,
            issued,
            client_keys,
        }
    }

    /// Trusts the client `id` that proves itself with the P-256 key whose public point is
    /// `public`.
    pub(crate) fn trust_client_key(&self, id: &str, public: &[u8]) {
        self.client_keys
            .lock()
            .unwrap()
            .insert(id.to_owned(), public.to_vec());
    }

    /// Claims of a good token for `sub` at the door `door`, with `scope`.
    pub(crate) fn claims(&self, sub: &str, door: &str, scope: &str) -> Value {
        json!({
            "iss": self.issuer, "sub": sub, "aud": format!("{PUBLIC}{door}"),
            "exp": now() + 300, "iat": now(), "scope": scope,
            "client_id": format!("{sub}-app"), "jti": format!("jti-{sub}"),
        })
    }

    /// A good ES256 token for `sub` at `/mcp` with scope `mcp`.
    pub(crate) fn good(&self, sub: &str) -> String {
        self.signed("ES256", "ec", &self.claims(sub, "/mcp", "mcp"))
    }

    /// `claims` signed with the current set's key of `kind` under `alg`.
    pub(crate) fn signed(&self, alg: &str, kind: &str, claims: &Value) -> String {
        let kid = format!("{}{kind}", self.kid.lock().unwrap());
        self.keys
            .token(json!({"alg": alg, "kid": kid, "typ": "at+jwt"}), claims)
    }
}

/// `mcpx daemon` taking `provider`'s tokens, with `more` configuration (rules, profiles).
pub(crate) fn daemon(provider: &Provider, more: &str) -> Daemon {
    Daemon::start(
        &format!(
            "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\n\
             [auth.external]\nissuer = \"{}\"\n\
             [auth.external.introspection]\nclientId = \"mcpx\"\nclientSecret = \"pw\"\n\
             [servers.fixture]\ncommand = {:?}\n\
             [profiles.readonly]\ninclude = [\"fixture__echo\"]\n{more}",
            provider.issuer,
            fixture_bin()
        ),
        SCRAPE_KEY,
    )
}

/// A modern request to `path` bearing `token` (none: no `Authorization`).
pub(crate) fn call(
    d: &Daemon,
    path: &str,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> Reply {
    let (mut headers, body) = modern_request(1, method, params);
    if let Some(token) = token {
        headers.push(("Authorization".into(), format!("Bearer {token}")));
    }
    d.post_to(path, &header_refs(&headers), body.to_string().as_bytes())
}

fn list(d: &Daemon, token: Option<&str>) -> Reply {
    call(d, "/mcp", token, "tools/list", json!({}))
}

/// A 2025-11-25 POST bearing `token`, in `session` if given.
pub(crate) fn legacy_post(d: &Daemon, token: &str, session: Option<&str>, body: &Value) -> Reply {
    let auth = format!("Bearer {token}");
    let mut headers: Vec<(&str, &[u8])> = vec![
        ("Content-Type", b"application/json"),
        ("Accept", b"application/json, text/event-stream"),
        ("Authorization", auth.as_bytes()),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session.as_bytes()));
        headers.push(("MCP-Protocol-Version", b"2025-11-25"));
    }
    d.post(&headers, body.to_string().as_bytes())
}

/// The parameters of a `Bearer` challenge.
pub(crate) fn challenge(reply: &Reply) -> BTreeMap<String, String> {
    let header = reply
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("no WWW-Authenticate: {} {:?}", reply.status, reply.headers));
    let params = header.strip_prefix("Bearer ").expect("a Bearer challenge");
    let mut found = BTreeMap::new();
    let mut rest = params;
    while let Some((name, after)) = rest.split_once("=\"") {
        let (value, tail) = after.split_once('"').unwrap();
        found.insert(
            name.trim_start_matches([',', ' ']).to_owned(),
            value.to_owned(),
        );
        rest = tail;
    }
    found
}

/// A daemon taking `provider`'s tokens at a port of its own, its public URL its real address
/// (so that clients reach the metadata it names); the daemon and that URL.
fn reachable_daemon(provider: &Provider) -> (Daemon, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let public = format!("http://127.0.0.1:{port}");
    let d = Daemon::start(
        &format!(
            "[auth]\nmode = \"external\"\npublicUrl = \"{public}\"\n\
             [auth.external]\nissuer = \"{}\"\n[servers.fixture]\ncommand = {:?}\n",
            provider.issuer,
            fixture_bin()
        ),
        &format!("address = \"127.0.0.1:{port}\""),
    );
    (d, public)
}

/// Runs an SDK's OAuth client (`script` in tests/sdk, by `program`) against a reachable door
/// with nothing but its URL; checks it registered, listed, called, and got one token. Its report.
fn sdk_logs_in(program: &str, script: &str) -> Value {
    let provider = Provider::start();
    let (_d, public) = reachable_daemon(&provider);
    let out = std::process::Command::new(program)
        .arg(format!("{}/tests/sdk/{script}", env!("CARGO_MANIFEST_DIR")))
        .arg(format!("{public}/mcp"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["registered"], "registered-client", "{report}");
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("fixture__echo")), "{report}");
    let echo = report["echo"].as_str();
    assert!(echo.is_some_and(|t| t.contains("hi")), "{report}");
    assert_eq!(provider.issued.load(Ordering::SeqCst), 1);
    report
}

mod every_revision {
    mod access {
        use super::super::*;

        /// A team's daemon shows its metrics (every server, tool and client, every refusal)
        /// to no member: without `metricsToken` `/metrics` is 403 whatever the token, and with
        /// it only its bearer reads them (a member's good token is 401).
        #[test]
        fn a_teams_metrics_are_read_with_the_metrics_token_only() {
            let provider = Provider::start();
            let member = format!("Authorization: Bearer {}\r\n", provider.good("alice"));
            let closed = Daemon::start(
                &format!(
                    "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\n\
                     [auth.external]\nissuer = \"{}\"\n",
                    provider.issuer
                ),
                "",
            );
            let refused = closed.bodiless("GET", "/metrics", &member);
            assert_eq!(refused.status, 403);
            let said = String::from_utf8_lossy(&refused.body).into_owned();
            assert!(said.contains("metricsToken"), "{said}");
            let open = daemon(&provider, "");
            assert_eq!(open.bodiless("GET", "/metrics", &member).status, 401);
            assert_eq!(open.bodiless("GET", "/metrics", "").status, 401);
            let wrong = "Authorization: Bearer scrape-9c2\r\n";
            assert_eq!(open.bodiless("GET", "/metrics", wrong).status, 401);
            let scraped = open.bodiless("GET", "/metrics", &scrape_bearer());
            assert_eq!(scraped.status, 200);
            let text = String::from_utf8_lossy(&scraped.body).into_owned();
            assert!(text.contains("mcpx_sessions"), "{text}");
            // The scrape token opens nothing else.
            assert_eq!(list(&open, Some("scrape-9c1")).status, 401);
        }

        /// mcpx's own client, as another mcpx's upstream, with nothing but the door's URL:
        /// the 401's metadata, the provider's, registration, PKCE, then a call served.
        #[test]
        fn mcpx_auth_login_goes_from_the_first_401_to_a_served_call() {
            let provider = Provider::start();
            let (_d, public) = reachable_daemon(&provider);
            let dir = tempfile::tempdir().unwrap();
            let config = format!(
                "[auth]\ncredentials = \"{0}/credentials.json\"\n[admin]\nsocket = \"{0}/admin.sock\"\n\
                 [servers.remote]\nurl = \"{public}/mcp\"\n",
                dir.path().display()
            );
            let started = std::time::Instant::now();
            let (logged_in, log) =
                crate::auth::try_login(&config, dir.path(), crate::auth::BROWSER);
            assert!(logged_in, "{log}");
            let mut client = Serve::with_config_file(&dir.path().join("config.toml"));
            let echo = json!({"name": "remote__fixture__echo", "arguments": {"text": "hi"}});
            let called = client.call(1, "tools/call", modern(echo));
            assert!(called["result"]["content"].is_array(), "{called}");
            println!(
                "from the first 401 to the first served call: {:?}",
                started.elapsed()
            );
            assert_eq!(provider.issued.load(Ordering::SeqCst), 1);
        }

        /// The TypeScript SDK v1's OAuth client finds its way from the door's first 401.
        #[test]
        fn the_typescript_sdk_logs_in_from_the_first_401_and_calls() {
            let report = sdk_logs_in(&deps::node(), "ts_oauth_client.mjs");
            assert_eq!(report["firstTry"], "unauthorized", "{report}");
        }

        /// The Python SDK v2's `OAuthClientProvider` finds its way from the door's first 401.
        #[test]
        fn the_python_sdk_logs_in_from_the_first_401_and_calls() {
            sdk_logs_in(&deps::python(), "python_oauth_client.py");
        }

        #[test]
        fn each_door_describes_itself_as_a_protected_resource_any_origin_may_read() {
            let provider = Provider::start();
            let d = daemon(&provider, "");
            for (path, door) in [
                ("/.well-known/oauth-protected-resource/mcp", "/mcp"),
                ("/.well-known/oauth-protected-resource", "/mcp"),
                (
                    "/.well-known/oauth-protected-resource/mcp/readonly",
                    "/mcp/readonly",
                ),
            ] {
                let reply = d.bodiless("GET", path, "Origin: https://inspector.example\r\n");
                assert_eq!(reply.status, 200, "{path}");
                assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
                assert_eq!(
                    reply.json(),
                    json!({
                        "resource": format!("{PUBLIC}{door}"),
                        "authorization_servers": [provider.issuer],
                        "bearer_methods_supported": ["header"],
                        "resource_name": "mcpx",
                        "scopes_supported": ["mcp"],
                    }),
                    "{path}"
                );
            }
            let unknown = d.bodiless("GET", "/.well-known/oauth-protected-resource/mcp/nope", "");
            assert_eq!(unknown.status, 404);
            // A browser client's preflight to the door, before it has any token.
            let preflight = d.bodiless(
                "OPTIONS",
                "/mcp",
                "Origin: http://localhost:6274\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\n",
            );
            assert_eq!(preflight.status, 204);
            let allowed = preflight.header("access-control-allow-headers").unwrap();
            assert!(
                allowed.to_ascii_lowercase().contains("authorization"),
                "{allowed}"
            );
            let exposed = list(&d, None);
            assert!(exposed.header("www-authenticate").is_some());
        }

        #[test]
        fn each_bad_token_is_refused_with_the_challenge_rfc_6750_names() {
            let provider = Provider::start();
            let d = daemon(&provider, "");
            let metadata = format!("{PUBLIC}/.well-known/oauth-protected-resource/mcp");
            let good = provider.claims("alice", "/mcp", "mcp");
            let with = |changes: Value| {
                let mut claims = good.clone();
                for (k, v) in changes.as_object().unwrap() {
                    match v {
                        Value::Null => drop(claims.as_object_mut().unwrap().remove(k)),
                        v => claims[k] = v.clone(),
                    }
                }
                claims
            };
            // The good ones, by each family of algorithm, pass.
            for (alg, kind) in [("ES256", "ec"), ("EdDSA", "ed"), ("RS256", "rsa")] {
                let reply = list(&d, Some(&provider.signed(alg, kind, &good)));
                assert_eq!(
                    reply.status,
                    200,
                    "{alg}: {}",
                    String::from_utf8_lossy(&reply.body)
                );
                assert!(reply.json()["result"]["tools"].is_array());
            }
            let refused = [
                (
                    "expired",
                    provider.signed("ES256", "ec", &with(json!({"exp": now() - 600}))),
                ),
                (
                    "nbf",
                    provider.signed("ES256", "ec", &with(json!({"nbf": now() + 600}))),
                ),
                (
                    "iss",
                    provider.signed(
                        "ES256",
                        "ec",
                        &with(json!({"iss": "https://other.example"})),
                    ),
                ),
                (
                    "aud",
                    provider.signed(
                        "ES256",
                        "ec",
                        &with(json!({"aud": "https://other.example/mcp"})),
                    ),
                ),
                (
                    "no aud",
                    provider.signed("ES256", "ec", &with(json!({"aud": null}))),
                ),
                (
                    "no exp",
                    provider.signed("ES256", "ec", &with(json!({"exp": null}))),
                ),
                (
                    "alg none",
                    provider.keys.token(
                        json!({"alg": "none", "kid": "one-ec", "typ": "at+jwt"}),
                        &good,
                    ),
                ),
                (
                    "HS256 keyed with the RSA key",
                    provider.keys.token(
                        json!({"alg": "HS256", "kid": "one-rsa", "typ": "at+jwt"}),
                        &good,
                    ),
                ),
                (
                    "RS256 under the EC key",
                    provider.keys.token(
                        json!({"alg": "RS256", "kid": "one-ec", "typ": "at+jwt"}),
                        &good,
                    ),
                ),
                ("forged", {
                    let token = provider.good("alice");
                    let parts: Vec<&str> = token.split('.').collect();
                    let forged = b64(with(json!({"sub": "root"})).to_string().as_bytes());
                    format!("{}.{forged}.{}", parts[0], parts[2])
                }),
                ("garbage", "not-a-token".to_owned()),
                (
                    "an unknown critical extension",
                    provider.keys.token(
                        json!({"alg": "ES256", "kid": "one-ec", "typ": "at+jwt",
                            "crit": ["exp-of-the-future"], "exp-of-the-future": 1}),
                        &good,
                    ),
                ),
                (
                    "an ID token's typ",
                    provider.keys.token(
                        json!({"alg": "ES256", "kid": "one-ec", "typ": "JWT"}),
                        &good,
                    ),
                ),
                (
                    "no typ",
                    provider
                        .keys
                        .token(json!({"alg": "ES256", "kid": "one-ec"}), &good),
                ),
            ];
            for (case, token) in &refused {
                let reply = list(&d, Some(token));
                assert_eq!(
                    reply.status,
                    401,
                    "{case}: {}",
                    String::from_utf8_lossy(&reply.body)
                );
                let params = challenge(&reply);
                assert_eq!(params["error"], "invalid_token", "{case}");
                assert_eq!(params["resource_metadata"], metadata, "{case}");
                assert_eq!(params["scope"], "mcp", "{case}");
                assert!(!params["error_description"].is_empty(), "{case}");
                assert_eq!(params.len(), 4, "{case}: {params:?}");
                assert!(reply.json()["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Unauthorized"));
            }
            // `application/at+jwt` is the same type (RFC 7515 §4.1.9).
            let long_form = provider.keys.token(
                json!({"alg": "ES256", "kid": "one-ec", "typ": "application/AT+JWT"}),
                &good,
            );
            assert_eq!(list(&d, Some(&long_form)).status, 200);
            // No token at all: the challenge names no error (RFC 6750 §3.1).
            let none = list(&d, None);
            assert_eq!(none.status, 401);
            let params = challenge(&none);
            assert_eq!(
                params.keys().collect::<Vec<_>>(),
                ["resource_metadata", "scope"]
            );
            // A good token without the door's scope: 403, naming every scope needed.
            let narrow = provider.signed("ES256", "ec", &with(json!({"scope": "other"})));
            let reply = list(&d, Some(&narrow));
            assert_eq!(reply.status, 403);
            let params = challenge(&reply);
            assert_eq!(
                (params["error"].as_str(), params["scope"].as_str()),
                ("insufficient_scope", "mcp")
            );
            assert_eq!(params["resource_metadata"], metadata);
            // A token in the URL is refused, even a good one.
            let (headers, body) = modern_request(1, "tools/list", json!({}));
            let query = format!("/mcp?access_token={}", provider.good("alice"));
            let reply = d.post_to(&query, &header_refs(&headers), body.to_string().as_bytes());
            assert_eq!(reply.status, 400);
            assert_eq!(challenge(&reply)["error"], "invalid_request");
            // A token for another door is not good at this one.
            let elsewhere = provider.signed(
                "ES256",
                "ec",
                &provider.claims("alice", "/mcp/readonly", "mcp"),
            );
            assert_eq!(list(&d, Some(&elsewhere)).status, 401);
            let there = call(
                &d,
                "/mcp/readonly",
                Some(&elsewhere),
                "tools/list",
                json!({}),
            );
            assert_eq!(there.status, 200);
            let metrics = d.bodiless("GET", "/metrics", &scrape_bearer());
            let text = String::from_utf8(metrics.body).unwrap();
            for (reason, at_least) in [
                ("expired", 1.0),
                ("algorithm", 2.0),
                ("signature", 2.0),
                ("audience", 3.0),
                ("missing", 1.0),
                ("scope", 1.0),
                ("query_token", 1.0),
                ("type", 2.0),
            ] {
                let counted =
                    metric_sample(&text, "mcpx_auth_failures_total", &[("reason", reason)]);
                assert!(counted >= at_least, "{reason}: {counted}\n{text}");
            }
        }

        #[test]
        fn a_rotated_key_is_fetched_at_once_and_made_up_kids_do_not_flood_the_provider() {
            let provider = Provider::start();
            let d = daemon(&provider, "");
            assert_eq!(list(&d, Some(&provider.good("alice"))).status, 200);
            assert_eq!(provider.key_fetches.load(Ordering::SeqCst), 1);
            *provider.kid.lock().unwrap() = "two-".into();
            let rotated = provider.good("alice");
            assert_eq!(
                list(&d, Some(&rotated)).status,
                200,
                "the rotated key is fetched"
            );
            assert_eq!(provider.key_fetches.load(Ordering::SeqCst), 2);
            let claims = provider.claims("mallory", "/mcp", "mcp");
            for n in 0..5 {
                let made_up = provider.keys.token(
                    json!({"alg": "ES256", "kid": format!("made-up-{n}"), "typ": "at+jwt"}),
                    &claims,
                );
                let reply = list(&d, Some(&made_up));
                assert_eq!(reply.status, 401);
                assert_eq!(challenge(&reply)["error"], "invalid_token");
            }
            assert_eq!(
                provider.key_fetches.load(Ordering::SeqCst),
                2,
                "at most one fetch a minute"
            );
            assert_eq!(list(&d, Some(&rotated)).status, 200);
        }

        /// RFC 9068's `at+jwt` by default; a provider that issues plain JWTs as access tokens
        /// is named so, and then its tokens (with `typ: JWT` or none) are taken, and no other.
        #[test]
        fn a_providers_token_type_is_checked_as_configured() {
            let provider = Provider::start();
            let config = format!(
                "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\n\
                 [auth.external]\nissuer = \"{}\"\ntyp = \"JWT\"\n\
                 [servers.fixture]\ncommand = {:?}\n",
                provider.issuer,
                fixture_bin()
            );
            let d = Daemon::start(&config, "");
            let good = provider.claims("alice", "/mcp", "mcp");
            let typed = |header: Value| provider.keys.token(header, &good);
            let plain = typed(json!({"alg": "ES256", "kid": "one-ec", "typ": "JWT"}));
            let untyped = typed(json!({"alg": "ES256", "kid": "one-ec"}));
            let profiled = typed(json!({"alg": "ES256", "kid": "one-ec", "typ": "at+jwt"}));
            assert_eq!(list(&d, Some(&plain)).status, 200);
            assert_eq!(list(&d, Some(&untyped)).status, 200);
            let refused = list(&d, Some(&profiled));
            assert_eq!(refused.status, 401);
            let description = &challenge(&refused)["error_description"];
            assert!(description.contains("typ"), "{description}");
        }

        #[test]
        fn an_opaque_token_is_introspected_and_the_answer_kept_a_while() {
            let provider = Provider::start();
            let d = daemon(&provider, "");
            provider.opaque.lock().unwrap().insert(
                "opaque-good".into(),
                json!({"active": true, "sub": "olga", "scope": "mcp", "client_id": "cli", "exp": now() + 300, "iss": provider.issuer}),
            );
            provider.opaque.lock().unwrap().insert(
                "opaque-other-aud".into(),
                json!({"active": true, "sub": "olga", "scope": "mcp", "aud": "https://other.example"}),
            );
            for _ in 0..3 {
                assert_eq!(list(&d, Some("opaque-good")).status, 200);
            }
            assert_eq!(provider.introspections.load(Ordering::SeqCst), 1, "kept");
            let basic = provider.introspected_by.lock().unwrap().clone().unwrap();
            assert_eq!(
                basic,
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode("mcpx:pw")
                )
            );
            for token in ["opaque-unknown", "opaque-other-aud"] {
                let reply = list(&d, Some(token));
                assert_eq!(reply.status, 401, "{token}");
                assert_eq!(challenge(&reply)["error"], "invalid_token");
            }
        }

        #[test]
        fn a_provider_that_cannot_be_reached_fails_closed_with_503() {
            let unreachable = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let issuer: SocketAddr = unreachable.local_addr().unwrap();
            drop(unreachable);
            let provider = Provider::start();
            let d = Daemon::start(
                &format!(
                    "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\n[auth.external]\nissuer = \"http://{issuer}\"\n"
                ),
                "",
            );
            let mut claims = provider.claims("alice", "/mcp", "mcp");
            claims["iss"] = json!(format!("http://{issuer}"));
            let reply = list(&d, Some(&provider.signed("ES256", "ec", &claims)));
            assert_eq!(
                reply.status,
                503,
                "{}",
                String::from_utf8_lossy(&reply.body)
            );
            assert!(reply.header("retry-after").is_some());
        }

        #[test]
        fn a_denied_tool_is_invisible_and_unknown_for_one_caller_and_callable_for_another() {
            let provider = Provider::start();
            let d = daemon(
                &provider,
                "[[auth.rules]]\nclaims = { groups = \"admins\" }\n\
                 [[auth.rules]]\nsubject = \"bob\"\ndenyTools = [\"fixture__ec*\"]\n\
                 [[auth.rules]]\nsubject = \"rita\"\nprofiles = [\"readonly\"]\n\
                 [[auth.rules]]\nsubject = \"carol\"\nstepUp = { \"fixture__echo\" = \"fixture:write\" }\n",
            );
            let mut admin = provider.claims("alice", "/mcp", "mcp");
            admin["groups"] = json!(["staff", "admins"]);
            let alice = provider.signed("ES256", "ec", &admin);
            let bob = provider.good("bob");
            let names = |reply: Reply| -> Vec<String> {
                let tools = reply.json()["result"]["tools"].as_array().unwrap().clone();
                tools
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_owned())
                    .collect()
            };
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "hi"}});
            assert!(names(list(&d, Some(&alice))).contains(&"fixture__echo".to_owned()));
            let bobs = names(list(&d, Some(&bob)));
            assert!(
                !bobs.contains(&"fixture__echo".to_owned()) && !bobs.is_empty(),
                "{bobs:?}"
            );
            let called = call(&d, "/mcp", Some(&alice), "tools/call", echo.clone()).json();
            assert!(called["result"]["content"].is_array(), "{called}");
            let denied = call(&d, "/mcp", Some(&bob), "tools/call", echo.clone()).json();
            let nothing = call(
                &d,
                "/mcp",
                Some(&bob),
                "tools/call",
                json!({"name": "fixture__nothing", "arguments": {}}),
            )
            .json();
            assert_eq!(
                denied["error"]["code"], nothing["error"]["code"],
                "{denied}"
            );
            assert_eq!(
                denied["error"]["message"]
                    .as_str()
                    .unwrap()
                    .replace("fixture__echo", "X"),
                nothing["error"]["message"]
                    .as_str()
                    .unwrap()
                    .replace("fixture__nothing", "X"),
                "a denied tool reads as one no server has"
            );
            // Rita's rule opens only the readonly door; nobody's rule is nobody's door.
            let rita = provider.signed(
                "ES256",
                "ec",
                &provider.claims("rita", "/mcp/readonly", "mcp"),
            );
            assert_eq!(
                call(&d, "/mcp/readonly", Some(&rita), "tools/list", json!({})).status,
                200
            );
            let rita_everything = provider.good("rita");
            assert_eq!(list(&d, Some(&rita_everything)).status, 403);
            assert_eq!(list(&d, Some(&provider.good("mallory"))).status, 403);
            // Carol lists the tool, but its call needs a scope more.
            let carol = provider.good("carol");
            let stepped = call(&d, "/mcp", Some(&carol), "tools/call", echo.clone());
            assert_eq!(stepped.status, 403);
            let params = challenge(&stepped);
            assert_eq!(params["error"], "insufficient_scope");
            assert_eq!(params["scope"], "mcp fixture:write");
            let wider = provider.signed(
                "ES256",
                "ec",
                &provider.claims("carol", "/mcp", "mcp fixture:write"),
            );
            assert_eq!(
                call(&d, "/mcp", Some(&wider), "tools/call", echo).status,
                200
            );
        }

        /// RFC 8707's "no transit": the client's token stays at mcpx's door; the upstream gets
        /// only what mcpx's own configuration gives it.
        #[test]
        fn a_callers_token_never_reaches_an_upstream() {
            let provider = Provider::start();
            let seen: Arc<Mutex<Vec<String>>> = Arc::default();
            let remote = {
                let seen = seen.clone();
                scripted_server(move |line, headers, message| {
                    let authorization = headers.iter().find(|(n, _)| n == "authorization");
                    seen.lock()
                        .unwrap()
                        .push(authorization.map_or("(none)".into(), |(_, v)| v.clone()));
                    let id = message["id"].clone();
                    one_tool_server(line, message, "peek", || {
                        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "peeked"}]}});
                        ("200 OK", "application/json", answer.to_string())
                    })
                })
            };
            let d = daemon(
                &provider,
                &format!("[servers.remote]\nurl = \"http://{remote}/mcp\"\nheaders = {{ Authorization = \"Bearer mcpx-own\" }}\n"),
            );
            let token = provider.good("alice");
            let call_peek = json!({"name": "remote__peek", "arguments": {}});
            let reply = call(&d, "/mcp", Some(&token), "tools/call", call_peek);
            assert_eq!(
                reply.status,
                200,
                "{}",
                String::from_utf8_lossy(&reply.body)
            );
            assert_eq!(reply.json()["result"]["content"][0]["text"], "peeked");
            let seen = seen.lock().unwrap();
            assert!(
                !seen.is_empty() && seen.iter().all(|a| a == "Bearer mcpx-own"),
                "{seen:?}"
            );
        }

        #[test]
        fn a_legacy_session_answers_only_the_caller_that_opened_it() {
            let provider = Provider::start();
            let d = daemon(&provider, "");
            let (alice, bob) = (provider.good("alice"), provider.good("bob"));
            let send = |token: &str, session: Option<&str>, body: &Value| {
                legacy_post(&d, token, session, body)
            };
            let opened = send(
                &alice,
                None,
                &request(
                    0,
                    "initialize",
                    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
                ),
            );
            assert_eq!(opened.status, 200);
            let session = opened.header("mcp-session-id").unwrap().to_owned();
            let listing = request(1, "tools/list", json!({}));
            assert_eq!(send(&alice, Some(&session), &listing).status, 200);
            assert_eq!(send(&bob, Some(&session), &listing).status, 404);
            assert_eq!(send(&alice, Some(&session), &listing).status, 200);
            // The console and `mcpx status` say whose session it is.
            let status = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(d.config_path())
                .args(["status", "--json"])
                .output()
                .unwrap();
            let snapshot: Value = serde_json::from_slice(&status.stdout).unwrap();
            let sessions = snapshot["sessions"].as_array().unwrap();
            let callers: Vec<&Value> = sessions.iter().map(|s| &s["caller"]).collect();
            assert!(
                callers.contains(&&json!("alice via alice-app")),
                "{snapshot}"
            );
        }

        /// The session's owner travels sealed in its id: another replica with the key answers
        /// it to its owner and to nobody else, even when it is the first to see it.
        #[test]
        fn a_sealed_session_answers_only_its_caller_on_every_replica() {
            let provider = Provider::start();
            let dir = tempfile::tempdir().unwrap();
            let key = crate::common::cluster::keygen(dir.path(), "cluster.key");
            let cluster = format!("[cluster]\nkeyFile = {:?}\n", key.display().to_string());
            let (a, b) = (daemon(&provider, &cluster), daemon(&provider, &cluster));
            let (alice, bob) = (provider.good("alice"), provider.good("bob"));
            let send = legacy_post;
            let hello = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
            let opened = send(&a, &alice, None, &request(0, "initialize", hello));
            let session = opened.header("mcp-session-id").unwrap().to_owned();
            let listing = request(1, "tools/list", json!({}));
            assert_eq!(
                send(&b, &bob, Some(&session), &listing).status,
                404,
                "bob first on b"
            );
            assert_eq!(send(&b, &alice, Some(&session), &listing).status, 200);
            assert_eq!(send(&a, &bob, Some(&session), &listing).status, 404);
        }

        #[test]
        fn the_audit_log_names_the_caller_and_never_its_token() {
            let provider = Provider::start();
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let d = daemon(
                &provider,
                &format!("[audit]\npath = {:?}\n", audit.display().to_string()),
            );
            let token = provider.good("alice");
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "hi"}});
            assert_eq!(
                call(&d, "/mcp", Some(&token), "tools/call", echo).status,
                200
            );
            assert!(eventually(
                || std::fs::read_to_string(&audit).is_ok_and(|t| t.contains("fixture__echo"))
            ));
            let text = std::fs::read_to_string(&audit).unwrap();
            let line: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
            assert_eq!(
                line["caller"],
                json!({"kind": "bearer", "sub": "alice", "clientId": "alice-app", "iss": provider.issuer, "jti": "jti-alice", "scopes": ["mcp"]})
            );
            let signature = token.rsplit('.').next().unwrap();
            assert!(!text.contains(signature) && !d.stderr().contains(signature));
        }
    }
}
