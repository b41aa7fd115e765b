//! mcpx's own authorization server (`auth.mode = "builtin"`), end to end against the real
//! daemon on loopback: the test is the client and the owner's browser (raw HTTP: the consent
//! page's form, its cookie and CSRF token posted back), and `mcpx auth approve` is run as the
//! owner would on the host. Client metadata documents shaped like ChatGPT's (`private_key_jwt`,
//! its keys by `jwks_uri`) and claude.ai's (`none`) are pinned to local copies.

use crate::access::{b64, challenge, form, now, Keys};
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use sha2::Digest;
use std::collections::HashMap;

/// The owner secret of every daemon here.
pub(crate) const OWNER_SECRET: &str = "correct horse battery staple";

/// A daemon with the built-in server, its public URL its own address, its state, keys and
/// pinned documents in `dir`.
pub(crate) struct Builtin {
    pub d: Daemon,
    pub public: String,
    pub dir: tempfile::TempDir,
}

/// A free loopback port.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Builtin {
    /// Starts it with `more` configuration after `[auth.builtin]` (its keys, then tables).
    pub(crate) fn start(more: &str) -> Builtin {
        let dir = tempfile::tempdir().unwrap();
        Builtin::start_in(dir, free_port(), None, more)
    }

    /// Starts it in `dir` on `port`; its public URL is `public`, else its own address.
    fn start_in(dir: tempfile::TempDir, port: u16, public: Option<&str>, more: &str) -> Builtin {
        let public = public.map_or(format!("http://127.0.0.1:{port}"), str::to_owned);
        let d = Daemon::start_with_env(
            &format!(
                "[auth]\nmode = \"builtin\"\npublicUrl = \"{public}\"\n\
                 [auth.builtin]\nownerSecret = \"${{env:MCPX_OWNER}}\"\n\
                 stateFile = \"{0}/state.json\"\nkeyFile = \"{0}/key\"\n{more}\n\
                 [servers.fixture]\ncommand = {1:?}\n\
                 [profiles.readonly]\ninclude = [\"fixture__echo\"]\n",
                dir.path().display(),
                fixture_bin()
            ),
            &format!("address = \"127.0.0.1:{port}\"\n{SCRAPE_KEY}"),
            &[("MCPX_OWNER", OWNER_SECRET)],
        );
        Builtin { d, public, dir }
    }

    pub(crate) fn get(&self, target: &str) -> Reply {
        self.d.bodiless("GET", target, "")
    }

    /// A form POST to `path`, with `extra` header lines.
    pub(crate) fn post_form(&self, path: &str, fields: &[(&str, &str)], extra: &str) -> Reply {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            self.d.addr,
            body.len()
        );
        self.d.raw(head.as_bytes())
    }

    /// Registers a public client with `redirect` (RFC 7591); its id.
    pub(crate) fn register(&self, name: &str, redirect: &str, grants: &[&str]) -> String {
        let body = json!({"client_name": name, "redirect_uris": [redirect], "grant_types": grants,
            "token_endpoint_auth_method": "none"})
        .to_string();
        let head = format!(
            "POST /oauth/register HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.d.addr,
            body.len()
        );
        let reply = self.d.raw(head.as_bytes());
        assert_eq!(
            reply.status,
            201,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()["client_id"].as_str().unwrap().to_owned()
    }

    /// `GET /oauth/authorize` for `client` to `redirect` with PKCE `challenge`, `extra` query.
    pub(crate) fn authorize(
        &self,
        client: &str,
        redirect: &str,
        challenge: &str,
        extra: &[(&str, &str)],
    ) -> Reply {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query.extend_pairs([
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", redirect),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("state", "st-1"),
        ]);
        query.extend_pairs(extra);
        self.get(&format!("/oauth/authorize?{}", query.finish()))
    }

    /// The owner's answer on `page`: `decision`, with `secret` if given.
    pub(crate) fn decide(&self, page: &Page, decision: &str, secret: Option<&str>) -> Reply {
        let mut fields = vec![
            ("request", page.request.as_str()),
            ("csrf", page.csrf.as_str()),
            ("decision", decision),
        ];
        if let Some(secret) = secret {
            fields.push(("secret", secret));
        }
        let cookie = format!("Cookie: __Host-mcpx-consent={}\r\n", page.cookie);
        self.post_form("/oauth/authorize", &fields, &cookie)
    }

    /// The whole login of `client` for `resource` (the owner gives the secret): the token
    /// endpoint's answer.
    fn log_in(&self, client: &str, redirect: &str, resource: &str) -> Value {
        let (verifier, challenge) = pkce();
        let code = self.code(client, redirect, &challenge, resource);
        let reply = self.exchange(client, &code, redirect, &verifier, &[]);
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()
    }

    /// A code for `client`, consented with the owner secret.
    fn code(&self, client: &str, redirect: &str, challenge: &str, resource: &str) -> String {
        let page =
            Page::of(&self.authorize(client, redirect, challenge, &[("resource", resource)]));
        let back = self.decide(&page, "allow", Some(OWNER_SECRET));
        assert_eq!(back.status, 303, "{}", String::from_utf8_lossy(&back.body));
        redirected(&back)["code"].clone()
    }

    fn exchange(
        &self,
        client: &str,
        code: &str,
        redirect: &str,
        verifier: &str,
        extra: &[(&str, &str)],
    ) -> Reply {
        let mut fields = vec![
            ("grant_type", "authorization_code"),
            ("client_id", client),
            ("code", code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
        ];
        fields.extend_from_slice(extra);
        self.post_form("/oauth/token", &fields, "")
    }

    fn refresh(&self, client: &str, token: &str) -> Reply {
        let fields = [
            ("grant_type", "refresh_token"),
            ("client_id", client),
            ("refresh_token", token),
        ];
        self.post_form("/oauth/token", &fields, "")
    }

    /// `tools/list` at `door` with `token`.
    fn list(&self, door: &str, token: &str) -> Reply {
        let (mut headers, body) = modern_request(1, "tools/list", json!({}));
        headers.push(("Authorization".into(), format!("Bearer {token}")));
        self.d
            .post_to(door, &header_refs(&headers), body.to_string().as_bytes())
    }
}

/// A consent page's form, read as a browser would.
pub(crate) struct Page {
    request: String,
    csrf: String,
    pub code: String,
    cookie: String,
    html: String,
}

impl Page {
    pub(crate) fn of(reply: &Reply) -> Page {
        let html = String::from_utf8_lossy(&reply.body).into_owned();
        assert_eq!(reply.status, 200, "{html}");
        let value = |name: &str| {
            let marker = format!("name=\"{name}\" value=\"");
            let start = html
                .find(&marker)
                .unwrap_or_else(|| panic!("no {name}: {html}"))
                + marker.len();
            html[start..start + html[start..].find('"').unwrap()].to_owned()
        };
        let code_start = html.find("mcpx auth approve ").unwrap() + "mcpx auth approve ".len();
        let cookie = reply
            .header("set-cookie")
            .expect("the page sets its cookie");
        assert!(cookie.starts_with("__Host-mcpx-consent="), "{cookie}");
        for attribute in ["Secure", "HttpOnly", "Path=/", "SameSite=Strict"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        Page {
            request: value("request"),
            csrf: value("csrf"),
            code: html[code_start..code_start + 9].to_owned(),
            cookie: cookie["__Host-mcpx-consent=".len()..]
                .split(';')
                .next()
                .unwrap()
                .to_owned(),
            html,
        }
    }
}

/// A PKCE verifier and its S256 challenge.
pub(crate) fn pkce() -> (String, String) {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).unwrap();
    let verifier = b64(&bytes);
    let challenge = b64(&sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The query of a redirect's `Location`.
fn redirected(reply: &Reply) -> HashMap<String, String> {
    let location = reply.header("location").expect("a redirect");
    let url = url::Url::parse(location).unwrap();
    form(url.query().unwrap_or("").as_bytes())
}

/// A JWS's claims, unverified.
fn claims_of(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Runs `mcpx auth approve CODE` against `b`'s daemon; whether it succeeded, and its stderr.
fn approve_on_host(b: &Builtin, code: &str) -> (bool, String) {
    let out = std::process::Command::new(mcpx_bin())
        .args([
            "--config",
            b.d.config_path().to_str().unwrap(),
            "auth",
            "approve",
            code,
        ])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const LOOPBACK: &str = "http://127.0.0.1:4567/callback";

/// Runs an SDK's OAuth client (`script` in tests/sdk, by `program`) against the built-in server
/// with nothing but the door's URL, its browser posting the consent form with the owner secret;
/// checks it registered, listed and called. Its report.
fn sdk_logs_in(program: &str, script: &str) -> Value {
    let b = Builtin::start("");
    let started = std::time::Instant::now();
    let out = std::process::Command::new(program)
        .arg(format!("{}/tests/sdk/{script}", env!("CARGO_MANIFEST_DIR")))
        .arg(format!("{}/mcp", b.public))
        .env("MCPX_OWNER_SECRET", OWNER_SECRET)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", b.d.stderr());
    println!(
        "{script}: from the first 401 to the served call: {:?}",
        started.elapsed()
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["registered"]
            .as_str()
            .is_some_and(|id| id.starts_with("mcpx-")),
        "{report}"
    );
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("fixture__echo")), "{report}");
    assert!(
        report["echo"].as_str().is_some_and(|t| t.contains("hi")),
        "{report}"
    );
    report
}

mod every_revision {
    mod access {
        use super::super::*;

        /// The official suite's authorization-server scenarios (metadata, CIMD support, the
        /// authorization code grant), the test being the owner's browser at the consent page.
        #[test]
        fn the_official_authorization_server_scenarios_pass_against_the_builtin_server() {
            use std::io::BufRead;
            let b = Builtin::start("");
            let port = free_port();
            let callback = format!("http://127.0.0.1:{port}/callback");
            let client = b.register("conformance", &callback, &["authorization_code"]);
            let mut suite = std::process::Command::new(deps::node())
                .arg(deps::conformance_suite())
                .args(["authorization", "--url", &b.public, "--client-id", &client])
                .args([
                    "--port",
                    &port.to_string(),
                    "--resource",
                    &format!("{}/mcp", b.public),
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut lines = std::io::BufReader::new(suite.stdout.take().unwrap()).lines();
            let prefix = format!("{}/oauth/authorize?", b.public);
            let mut report = String::new();
            let authorization = loop {
                let line = lines.next().expect("the suite asks for a browser").unwrap();
                report.push_str(&line);
                report.push('\n');
                if line.starts_with(&prefix) {
                    break line;
                }
            };
            let page = Page::of(&b.get(&authorization[b.public.len()..]));
            let back = b.decide(&page, "allow", Some(OWNER_SECRET));
            assert_eq!(back.status, 303);
            let location = back.header("location").unwrap();
            let target = location
                .strip_prefix(&format!("http://127.0.0.1:{port}"))
                .unwrap();
            // The suite's callback listener may still be starting.
            let started = std::time::Instant::now();
            let mut browser = loop {
                match std::net::TcpStream::connect(("127.0.0.1", port)) {
                    Ok(stream) => break stream,
                    Err(e) if started.elapsed() > PATIENCE => {
                        panic!("no callback listener: {e}\n{report}")
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
                }
            };
            use std::io::{Read, Write};
            write!(
                browser,
                "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let _ = browser.read_to_end(&mut Vec::new());
            for line in lines {
                report.push_str(&line.unwrap());
                report.push('\n');
            }
            let status = wait_exit(&mut suite, PATIENCE).expect("the suite finishes");
            let mut stderr = String::new();
            let _ = suite.stderr.take().unwrap().read_to_string(&mut stderr);
            println!(
                "{}",
                report
                    .lines()
                    .filter(|l| l.contains('✓') || l.contains('✗') || l.contains("Total"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            assert!(status.success(), "{report}{stderr}\n{}", b.d.stderr());
            for scenario in ["authorization-server-metadata", "authorization-code-grant"] {
                assert!(
                    report.contains(&format!("✓ {scenario}")),
                    "{scenario}: {report}"
                );
            }
            assert!(!report.contains("WARNING"), "{report}");
        }

        /// The TypeScript SDK v1's OAuth client, through the consent page.
        #[test]
        fn the_typescript_sdk_logs_in_to_the_builtin_server_through_consent() {
            let report = sdk_logs_in(&deps::node(), "ts_oauth_client.mjs");
            assert_eq!(report["firstTry"], "unauthorized", "{report}");
        }

        /// The Python SDK v2's `OAuthClientProvider`, through the consent page.
        #[test]
        fn the_python_sdk_logs_in_to_the_builtin_server_through_consent() {
            sdk_logs_in(&deps::python(), "python_oauth_client.py");
        }

        /// mcpx's own client, as another mcpx's upstream: the first 401, the metadata,
        /// registration, the consent approved on the host with `mcpx auth approve`, a call.
        #[test]
        fn mcpx_auth_login_logs_in_to_another_mcpx_approved_on_its_host() {
            let b = Builtin::start("");
            let dir = tempfile::tempdir().unwrap();
            let config = format!(
                "[auth]\ncredentials = \"{0}/credentials.json\"\n[admin]\nsocket = \"{0}/admin.sock\"\n\
                 [servers.remote]\nurl = \"{1}/mcp\"\n",
                dir.path().display(),
                b.public
            );
            let browser = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/access/consenting-browser"
            );
            let started = std::time::Instant::now();
            let mcpx = mcpx_bin();
            let env = [
                ("MCPX_BIN", mcpx.to_str().unwrap()),
                ("MCPX_DAEMON_CONFIG", b.d.config_path().to_str().unwrap()),
            ];
            let (logged_in, log) = crate::auth::try_login_with(&config, dir.path(), browser, &env);
            assert!(logged_in, "{log}\n{}", b.d.stderr());
            let mut client = Serve::with_config_file(&dir.path().join("config.toml"));
            let echo = json!({"name": "remote__fixture__echo", "arguments": {"text": "hi"}});
            let called = client.call(1, "tools/call", modern(echo));
            assert!(called["result"]["content"].is_array(), "{called}");
            println!(
                "mcpx auth login: from the first 401 to the served call: {:?}",
                started.elapsed()
            );
            assert!(
                b.d.stderr().contains("the owner allowed"),
                "{}",
                b.d.stderr()
            );
        }

        #[test]
        fn the_builtin_server_publishes_rfc_8414_metadata_that_any_origin_may_read() {
            let b = Builtin::start("");
            let metadata = b.get("/.well-known/oauth-authorization-server");
            assert_eq!(metadata.status, 200);
            assert_eq!(metadata.header("access-control-allow-origin"), Some("*"));
            let m = metadata.json();
            let at = |path: &str| json!(format!("{}{path}", b.public));
            assert_eq!(m["issuer"], json!(b.public));
            assert_eq!(m["authorization_endpoint"], at("/oauth/authorize"));
            assert_eq!(m["token_endpoint"], at("/oauth/token"));
            assert_eq!(m["registration_endpoint"], at("/oauth/register"));
            assert_eq!(m["revocation_endpoint"], at("/oauth/revoke"));
            assert_eq!(m["jwks_uri"], at("/oauth/jwks.json"));
            assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
            assert_eq!(m["client_id_metadata_document_supported"], true);
            assert_eq!(m["authorization_response_iss_parameter_supported"], true);
            assert_eq!(
                m["token_endpoint_auth_methods_supported"],
                json!(["none", "private_key_jwt"])
            );
            assert_eq!(
                m["grant_types_supported"],
                json!(["authorization_code", "refresh_token"])
            );
            assert_eq!(b.get("/.well-known/openid-configuration").json(), m);
            // The resource's metadata names this server; the JWK Set holds one Ed25519 key.
            let resource = b.get("/.well-known/oauth-protected-resource/mcp").json();
            assert_eq!(resource["authorization_servers"], json!([b.public]));
            let keys = b.get("/oauth/jwks.json").json();
            assert_eq!(keys["keys"][0]["crv"], "Ed25519");
            assert!(keys["keys"][0].get("d").is_none(), "never the private key");
            // A browser client's preflight to the token and registration endpoints.
            for path in ["/oauth/token", "/oauth/register", "/token"] {
                let preflight = b.d.bodiless(
                    "OPTIONS",
                    path,
                    "Origin: http://localhost:6274\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n",
                );
                assert_eq!(preflight.status, 204, "{path}");
                assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
                assert!(preflight
                    .header("access-control-allow-methods")
                    .unwrap()
                    .contains("POST"));
            }
            // The door's 401 sends a client here.
            let refused = b.list("/mcp", "not-a-token");
            assert_eq!(refused.status, 401);
            let params = challenge(&refused);
            assert_eq!(params["error"], "invalid_token");
            assert_eq!(
                params["resource_metadata"],
                format!("{}/.well-known/oauth-protected-resource/mcp", b.public)
            );
        }

        #[test]
        fn a_registered_client_logs_in_on_the_consent_page_and_its_token_opens_only_its_door() {
            let b = Builtin::start("");
            let client = b.register(
                "Phone <script>",
                LOOPBACK,
                &["authorization_code", "refresh_token"],
            );
            let (verifier, pkce_challenge) = pkce();
            let door = format!("{}/mcp", b.public);
            let page = b.authorize(
                &client,
                "http://127.0.0.1:9999/callback",
                &pkce_challenge,
                &[("resource", &door)],
            );
            let csp = page.header("content-security-policy").unwrap().to_owned();
            assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
            assert_eq!(page.header("x-frame-options"), Some("DENY"));
            assert_eq!(page.header("cache-control"), Some("no-store"));
            let form = Page::of(&page);
            // The client's name (escaped), where its code goes, the door and the scopes.
            assert!(form.html.contains("Phone &lt;script&gt;"), "{}", form.html);
            assert!(!form.html.contains("<script>"));
            assert!(form.html.contains("<b>127.0.0.1</b>"));
            assert!(form.html.contains(&door));
            assert!(
                form.html.contains("its name is its own claim"),
                "a registered client is marked"
            );
            let back = b.decide(&form, "allow", Some(OWNER_SECRET));
            assert_eq!(back.status, 303, "{}", String::from_utf8_lossy(&back.body));
            let location = back.header("location").unwrap();
            assert!(
                location.starts_with("http://127.0.0.1:9999/callback?"),
                "loopback on any port: {location}"
            );
            let query = redirected(&back);
            assert_eq!(query["state"], "st-1");
            assert_eq!(query["iss"], b.public, "RFC 9207");
            let tokens = b.exchange(
                &client,
                &query["code"],
                "http://127.0.0.1:9999/callback",
                &verifier,
                &[("resource", &door)],
            );
            assert_eq!(
                tokens.status,
                200,
                "{}",
                String::from_utf8_lossy(&tokens.body)
            );
            assert_eq!(tokens.header("cache-control"), Some("no-store"));
            let tokens = tokens.json();
            assert_eq!(tokens["token_type"], "Bearer");
            assert!(tokens["refresh_token"].is_string());
            let access = tokens["access_token"].as_str().unwrap();
            let claims = claims_of(access);
            assert_eq!(claims["aud"], json!(door));
            assert_eq!(claims["iss"], json!(b.public));
            assert_eq!(claims["client_id"], json!(client));
            assert_eq!(claims["scope"], "mcp");
            let header = claims_of(&format!("x.{}", access.split('.').next().unwrap()));
            assert_eq!(header["typ"], "at+jwt");
            assert_eq!(header["alg"], "EdDSA");
            let listed = b.list("/mcp", access);
            assert_eq!(
                listed.status,
                200,
                "{}",
                String::from_utf8_lossy(&listed.body)
            );
            // Each door is its own resource: this token is not the profile door's.
            let elsewhere = b.list("/mcp/readonly", access);
            assert_eq!(elsewhere.status, 401);
            assert_eq!(challenge(&elsewhere)["error"], "invalid_token");
            // The status shows no one waiting any more.
            assert!(
                !b.d.stderr().contains(OWNER_SECRET),
                "the secret is never logged"
            );
        }

        #[test]
        fn consent_is_never_given_without_the_owner_and_a_wrong_secret_locks_the_page() {
            let b = Builtin::start("");
            let client = b.register("Laptop", LOOPBACK, &["authorization_code"]);
            let (_, pkce_challenge) = pkce();
            let page = Page::of(&b.authorize(&client, LOOPBACK, &pkce_challenge, &[]));
            // No secret, a wrong one: the page again, no code.
            let bare = b.decide(&page, "allow", None);
            assert_eq!(bare.status, 403);
            assert!(bare.header("location").is_none());
            // A form without this browser's cookie, or with another CSRF token.
            let stolen = b.post_form(
                "/oauth/authorize",
                &[
                    ("request", &page.request),
                    ("csrf", &page.csrf),
                    ("decision", "allow"),
                    ("secret", OWNER_SECRET),
                ],
                "",
            );
            assert_eq!(stolen.status, 403);
            let forged = Page {
                csrf: "x".repeat(43),
                ..Page::of(&b.authorize(&client, LOOPBACK, &pkce_challenge, &[]))
            };
            assert_eq!(b.decide(&forged, "allow", Some(OWNER_SECRET)).status, 403);
            // Sent from another site.
            let cross = b.post_form(
                "/oauth/authorize",
                &[
                    ("request", &page.request),
                    ("csrf", &page.csrf),
                    ("decision", "allow"),
                    ("secret", OWNER_SECRET),
                ],
                &format!(
                    "Origin: https://evil.example\r\nCookie: __Host-mcpx-consent={}\r\n",
                    page.cookie
                ),
            );
            assert_eq!(cross.status, 403);
            for _ in 0..4 {
                assert_eq!(b.decide(&page, "allow", Some("guess")).status, 403);
            }
            let locked = b.decide(&page, "allow", Some("guess"));
            assert_eq!(locked.status, 429, "the fifth wrong secret locks the page");
            let right_but_locked = b.decide(&page, "allow", Some(OWNER_SECRET));
            assert_eq!(
                right_but_locked.status, 429,
                "while locked, no secret is compared"
            );
            assert!(String::from_utf8_lossy(&right_but_locked.body)
                .contains("Approving on the host still works"));
            // The owner approves on the host instead: the same page then continues.
            let (approved, said) = approve_on_host(&b, &page.code.to_lowercase().replace('-', ""));
            assert!(approved, "{said}");
            assert!(said.contains("Laptop"), "{said}");
            let back = b.decide(&page, "allow", None);
            assert_eq!(back.status, 303, "{}", String::from_utf8_lossy(&back.body));
            assert!(redirected(&back).contains_key("code"));
            // An unknown code, and a page already answered.
            assert!(!approve_on_host(&b, "ZZZZ-ZZZZ").0);
            assert_eq!(b.decide(&page, "allow", None).status, 400);
            // Denied: back to the client with access_denied.
            let other = Page::of(&b.authorize(&client, LOOPBACK, &pkce_challenge, &[]));
            let denied = b.decide(&other, "deny", None);
            assert_eq!(denied.status, 303);
            let query = redirected(&denied);
            assert_eq!(query["error"], "access_denied");
            assert_eq!(query["state"], "st-1");
        }

        /// Under tmux: the console lists the client waiting, and `a`, `y` approve it; its page
        /// then continues without a secret.
        #[test]
        fn the_console_approves_a_client_waiting_for_consent() {
            use crate::common::console::{open_console, screen_shows, tmux};
            let b = Builtin::start("");
            let client = b.register("Tablet", LOOPBACK, &["authorization_code"]);
            let (_, pkce_challenge) = pkce();
            let page = Page::of(&b.authorize(&client, LOOPBACK, &pkce_challenge, &[]));
            // `mcpx status` lists it with the command that approves it.
            let status = std::process::Command::new(mcpx_bin())
                .args(["--config", b.d.config_path().to_str().unwrap(), "status"])
                .output()
                .unwrap();
            let status = String::from_utf8_lossy(&status.stdout);
            assert!(status.contains("waiting for your consent (1)"), "{status}");
            assert!(
                status.contains(&format!("mcpx auth approve {}", page.code)),
                "{status}"
            );
            assert!(
                status.contains("Tablet (self-registered) -> 127.0.0.1"),
                "{status}"
            );
            let config = std::fs::read_to_string(b.d.config_path()).unwrap();
            let socket = mcpx::config::Config::parse(&config).unwrap().admin.socket;
            let name = open_console("consent", "", &socket, (140, 24));
            screen_shows(&name, "6 Consents (1)");
            tmux(&["send-keys", "-t", &name, "6"]);
            let screen = screen_shows(&name, "Tablet");
            assert!(screen.contains(&page.code), "{screen}");
            assert!(screen.contains("self-registered"), "{screen}");
            tmux(&["send-keys", "-t", &name, "a"]);
            screen_shows(&name, "(y/n)");
            tmux(&["send-keys", "-t", &name, "y"]);
            screen_shows(&name, "approved Tablet");
            tmux(&["kill-session", "-t", &name]);
            let back = b.decide(&page, "allow", None);
            assert_eq!(back.status, 303, "{}", String::from_utf8_lossy(&back.body));
        }

        #[test]
        fn authorization_requests_the_server_cannot_serve_are_refused_without_a_code() {
            let b = Builtin::start("");
            let client = b.register("App", LOOPBACK, &["authorization_code"]);
            let (_, pkce_challenge) = pkce();
            // Unknown client or unregistered redirect: a page, never a redirect to it.
            for (client, redirect) in [
                ("nobody", LOOPBACK),
                (client.as_str(), "https://evil.example/cb"),
            ] {
                let refused = b.authorize(client, redirect, &pkce_challenge, &[]);
                assert_eq!(refused.status, 400);
                assert!(refused.header("location").is_none());
            }
            // The rest goes back to the client, with its state and the issuer.
            let back = |query: &str, error: &str| {
                let refused = b.get(&format!(
                    "/oauth/authorize?client_id={client}&redirect_uri={LOOPBACK}&state=s&{query}"
                ));
                assert_eq!(refused.status, 302, "{query}");
                let said = redirected(&refused);
                assert_eq!(said["error"], error, "{query}");
                assert_eq!(said["state"], "s");
                assert_eq!(said["iss"], b.public);
            };
            let challenge = format!("code_challenge={pkce_challenge}");
            back("response_type=code", "invalid_request");
            back(
                &format!("response_type=code&{challenge}&code_challenge_method=plain"),
                "invalid_request",
            );
            back(
                &format!("response_type=token&{challenge}&code_challenge_method=S256"),
                "unsupported_response_type",
            );
            back(&format!("response_type=code&{challenge}&code_challenge_method=S256&resource=https://elsewhere.example/mcp"), "invalid_target");
            back(&format!("response_type=code&{challenge}&code_challenge_method=S256&resource={}/mcp/nope", b.public), "invalid_target");
            back(
                &format!("response_type=code&{challenge}&code_challenge_method=S256&scope=admin"),
                "invalid_scope",
            );
        }

        #[test]
        fn a_code_is_single_use_and_bound_to_its_client_redirect_verifier_and_door() {
            let b = Builtin::start("");
            let client = b.register("A", LOOPBACK, &["authorization_code", "refresh_token"]);
            let other = b.register("B", LOOPBACK, &["authorization_code"]);
            let door = format!("{}/mcp", b.public);
            let error = |reply: Reply| {
                assert_eq!(
                    reply.status,
                    400,
                    "{}",
                    String::from_utf8_lossy(&reply.body)
                );
                reply.json()["error"].as_str().unwrap().to_owned()
            };
            let (verifier, pkce_challenge) = pkce();
            // Who exchanges, to which redirect, with which verifier, what more, and the error.
            type Case<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str)], &'a str);
            let cases: [Case; 4] = [
                (&other, LOOPBACK, &verifier, &[], "invalid_grant"),
                (
                    &client,
                    "http://127.0.0.1:4567/other",
                    &verifier,
                    &[],
                    "invalid_grant",
                ),
                (
                    &client,
                    LOOPBACK,
                    "wrong-verifier-wrong-verifier-wrong-verifier-x",
                    &[],
                    "invalid_grant",
                ),
                (
                    &client,
                    LOOPBACK,
                    &verifier,
                    &[("resource", "http://127.0.0.1:1/mcp")],
                    "invalid_target",
                ),
            ];
            for (who, redirect, presented, extra, expected) in cases {
                let code = b.code(&client, LOOPBACK, &pkce_challenge, &door);
                assert_eq!(
                    error(b.exchange(who, &code, redirect, presented, extra)),
                    expected,
                    "{redirect} {presented} {extra:?}"
                );
            }
            // Used twice: the second use fails, and revokes what the first one issued.
            let code = b.code(&client, LOOPBACK, &pkce_challenge, &door);
            let first = b.exchange(&client, &code, LOOPBACK, &verifier, &[]);
            assert_eq!(first.status, 200);
            let refresh = first.json()["refresh_token"].as_str().unwrap().to_owned();
            assert_eq!(
                error(b.exchange(&client, &code, LOOPBACK, &verifier, &[])),
                "invalid_grant"
            );
            assert_eq!(error(b.refresh(&client, &refresh)), "invalid_grant");
            // A client secret is never taken: this server issues none.
            let basic = b.post_form(
                "/oauth/token",
                &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
                "Authorization: Basic YTpi\r\n",
            );
            assert_eq!(basic.status, 401);
            assert_eq!(basic.json()["error"], "invalid_client");
        }

        #[test]
        fn refresh_tokens_rotate_survive_a_restart_and_a_replayed_one_revokes_the_login() {
            let dir = tempfile::tempdir().unwrap();
            let port = free_port();
            let reuse = "refreshReuse = \"300ms\"\n";
            let b = Builtin::start_in(dir, port, None, reuse);
            let client = b.register("Editor", LOOPBACK, &["authorization_code", "refresh_token"]);
            let tokens = b.log_in(&client, LOOPBACK, &format!("{}/mcp", b.public));
            let first = tokens["refresh_token"].as_str().unwrap().to_owned();
            let state = std::fs::read_to_string(b.dir.path().join("state.json")).unwrap();
            assert!(!state.contains(&first), "refresh tokens are kept hashed");
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(b.dir.path().join("state.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the state file is the owner's alone");
            // The daemon restarts: the login holds (and so does the key, so old tokens verify).
            let Builtin { mut d, dir, .. } = b;
            d.signal("TERM");
            let b = Builtin::start_in(dir, port, None, reuse);
            assert_eq!(
                b.list("/mcp", tokens["access_token"].as_str().unwrap())
                    .status,
                200
            );
            let rotated = b.refresh(&client, &first);
            assert_eq!(
                rotated.status,
                200,
                "{}",
                String::from_utf8_lossy(&rotated.body)
            );
            let rotated = rotated.json();
            let second = rotated["refresh_token"].as_str().unwrap().to_owned();
            assert_ne!(first, second);
            assert_eq!(
                b.list("/mcp", rotated["access_token"].as_str().unwrap())
                    .status,
                200
            );
            // The replaced token again, past the reuse interval: refused, and the whole family
            // with it.
            std::thread::sleep(std::time::Duration::from_millis(400));
            let replayed = b.refresh(&client, &first);
            assert_eq!(replayed.status, 400);
            assert_eq!(replayed.json()["error"], "invalid_grant");
            let after = b.refresh(&client, &second);
            assert_eq!(after.status, 400, "reuse revoked the login");
            let counted = |event: &str| {
                let fresh = b.log_in(&client, LOOPBACK, &format!("{}/mcp", b.public));
                let bearer = format!(
                    "Authorization: Bearer {}\r\n",
                    fresh["access_token"].as_str().unwrap()
                );
                // A member's token does not read the metrics; the scrape token does.
                assert_eq!(b.d.bodiless("GET", "/metrics", &bearer).status, 401);
                let text =
                    String::from_utf8(b.d.bodiless("GET", "/metrics", &scrape_bearer()).body)
                        .unwrap();
                metric_sample(&text, "mcpx_authorizations_total", &[("event", event)])
            };
            assert_eq!(counted("refresh_reused"), 1.0);
            assert_eq!(counted("refreshed"), 1.0);
            // Revocation (RFC 7009) ends a fresh login.
            let again = b.log_in(&client, LOOPBACK, &format!("{}/mcp", b.public));
            let token = again["refresh_token"].as_str().unwrap();
            let revoked = b.post_form(
                "/oauth/revoke",
                &[("client_id", &client), ("token", token)],
                "",
            );
            assert_eq!(revoked.status, 200);
            assert_eq!(b.refresh(&client, token).status, 400);
        }

        /// A client that refreshes twice at once with one refresh token (Gemini CLI does, five
        /// minutes before expiry, without a lock): within `refreshReuse` the second gets the
        /// first's refresh token back, and the login is kept.
        #[test]
        fn a_refresh_token_presented_twice_within_the_reuse_interval_keeps_the_login() {
            let b = Builtin::start("refreshReuse = \"60s\"\n");
            let client = b.register("Gemini", LOOPBACK, &["authorization_code", "refresh_token"]);
            let tokens = b.log_in(&client, LOOPBACK, &format!("{}/mcp", b.public));
            let first = tokens["refresh_token"].as_str().unwrap().to_owned();
            let once = b.refresh(&client, &first);
            let twice = b.refresh(&client, &first);
            assert_eq!(
                (once.status, twice.status),
                (200, 200),
                "{}",
                String::from_utf8_lossy(&twice.body)
            );
            let (once, twice) = (once.json(), twice.json());
            assert_eq!(once["refresh_token"], twice["refresh_token"]);
            assert_ne!(once["refresh_token"], json!(first));
            for answer in [&once, &twice] {
                let access = answer["access_token"].as_str().unwrap();
                assert_eq!(b.list("/mcp", access).status, 200);
            }
            // The login goes on from the token both got.
            let next = b.refresh(&client, once["refresh_token"].as_str().unwrap());
            assert_eq!(next.status, 200, "{}", String::from_utf8_lossy(&next.body));
            // The first token again, now that the login rotated past it: a replay, revoked.
            assert_eq!(b.refresh(&client, &first).status, 400);
            let latest = next.json()["refresh_token"].as_str().unwrap().to_owned();
            assert_eq!(
                b.refresh(&client, &latest).status,
                400,
                "reuse revoked the login"
            );
        }

        /// The document and keys of a ChatGPT-shaped client, pinned; its assertions signed RS256.
        fn chatgpt(dir: &std::path::Path, keys: &Keys) -> String {
            let document = json!({
                "client_id": "https://chatgpt.com/oauth/client.json",
                "client_name": "ChatGPT",
                "redirect_uris": ["https://chatgpt.com/connector_platform_oauth_redirect"],
                "grant_types": ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "private_key_jwt",
                "token_endpoint_auth_signing_alg": "RS256",
                "jwks_uri": "https://chatgpt.com/oauth/jwks.json",
            });
            let jwks = json!({"keys": [keys.set("gpt-")["keys"][2].clone()]});
            std::fs::write(dir.join("chatgpt.json"), document.to_string()).unwrap();
            std::fs::write(dir.join("chatgpt-jwks.json"), jwks.to_string()).unwrap();
            format!(
                "pinned = {{ \"https://chatgpt.com/oauth/client.json\" = \"{0}/chatgpt.json\", \"https://chatgpt.com/oauth/jwks.json\" = \"{0}/chatgpt-jwks.json\" }}",
                dir.display()
            )
        }

        #[test]
        fn a_chatgpt_shaped_client_document_logs_in_with_private_key_jwt() {
            let pins = tempfile::tempdir().unwrap();
            let keys = Keys::new();
            let b = Builtin::start(&chatgpt(pins.path(), &keys));
            let id = "https://chatgpt.com/oauth/client.json";
            let redirect = "https://chatgpt.com/connector_platform_oauth_redirect";
            let (verifier, pkce_challenge) = pkce();
            let page = Page::of(&b.authorize(id, redirect, &pkce_challenge, &[]));
            assert!(
                page.html.contains("vouched for by <b>chatgpt.com</b>"),
                "{}",
                page.html
            );
            let back = b.decide(&page, "allow", Some(OWNER_SECRET));
            let code = redirected(&back)["code"].clone();
            let assertion = |aud: &str, jti: &str, lifetime: u64| {
                let claims = json!({"iss": id, "sub": id, "aud": aud, "jti": jti, "iat": now(), "exp": now() + lifetime});
                keys.token(json!({"alg": "RS256", "kid": "gpt-rsa"}), &claims)
            };
            let token_endpoint = format!("{}/oauth/token", b.public);
            let with = |assertion: &str| {
                vec![
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                    ),
                    ("client_assertion", assertion.to_owned()),
                ]
            };
            let exchange = |code: &str, assertion: Option<&str>| {
                let extra: Vec<(&str, String)> = assertion.map(with).unwrap_or_default();
                let extra: Vec<(&str, &str)> =
                    extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
                b.exchange(id, code, redirect, &verifier, &extra)
            };
            // Without an assertion, with one for another audience, or living too long: refused.
            assert_eq!(exchange(&code, None).json()["error"], "invalid_client");
            assert_eq!(
                exchange(
                    &code,
                    Some(&assertion("https://elsewhere.example/token", "j1", 60))
                )
                .status,
                401
            );
            assert_eq!(
                exchange(&code, Some(&assertion(&token_endpoint, "j2", 3600))).status,
                401
            );
            // The refused attempts did not spend the code: they never reached it.
            let good = assertion(&token_endpoint, "j3", 60);
            let tokens = exchange(&code, Some(&good));
            assert_eq!(
                tokens.status,
                200,
                "{}",
                String::from_utf8_lossy(&tokens.body)
            );
            let tokens = tokens.json();
            assert_eq!(
                claims_of(tokens["access_token"].as_str().unwrap())["client_id"],
                id
            );
            // The same assertion again is a replay.
            let replay = b.post_form(
                "/oauth/token",
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    ),
                    ("client_assertion", &good),
                ],
                "",
            );
            assert_eq!(
                replay.status,
                401,
                "{}",
                String::from_utf8_lossy(&replay.body)
            );
            let fresh = assertion(&token_endpoint, "j4", 60);
            let refreshed = b.post_form(
                "/oauth/token",
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    ),
                    ("client_assertion", &fresh),
                ],
                "",
            );
            assert_eq!(
                refreshed.status,
                200,
                "{}",
                String::from_utf8_lossy(&refreshed.body)
            );
        }

        #[test]
        fn a_claude_shaped_client_document_logs_in_as_a_public_client() {
            let pins = tempfile::tempdir().unwrap();
            let id = "https://claude.ai/oauth/mcp-oauth-client-metadata";
            let document = json!({
                "client_id": id, "client_name": "Claude",
                "redirect_uris": ["https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"],
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            });
            std::fs::write(pins.path().join("claude.json"), document.to_string()).unwrap();
            let b = Builtin::start(&format!(
                "pinned = {{ \"{id}\" = \"{}/claude.json\" }}",
                pins.path().display()
            ));
            let door = format!("{}/mcp/readonly", b.public);
            let tokens = b.log_in(id, "https://claude.com/api/mcp/auth_callback", &door);
            let listed = b.list("/mcp/readonly", tokens["access_token"].as_str().unwrap());
            assert_eq!(
                listed.status,
                200,
                "{}",
                String::from_utf8_lossy(&listed.body)
            );
            let names: Vec<Value> = listed.json()["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone())
                .collect();
            assert_eq!(names, vec![json!("fixture__echo")]);
        }

        #[test]
        fn a_client_document_is_fetched_only_from_a_public_https_address() {
            let b = Builtin::start("");
            let (_, pkce_challenge) = pkce();
            for (id, said) in [
                ("https://localhost/client.json", "not a public address"),
                ("https://127.0.0.1/client.json", "not a public address"),
                ("https://10.0.0.1/client.json", "not a public address"),
                ("https://example.com:8443/client.json", "port 443"),
            ] {
                let refused = b.authorize(id, "https://app.example/cb", &pkce_challenge, &[]);
                assert_eq!(refused.status, 400, "{id}");
                let page = String::from_utf8_lossy(&refused.body);
                assert!(page.contains(said), "{id}: {page}");
            }
            // Said once per client at WARN, naming what to pin, and listed by `mcpx status`.
            // The log is read from the daemon's stderr as it comes: wait for the fourth line.
            let warnings = |log: &str| {
                log.lines()
                    .filter(|l| {
                        l.contains("WARN") && l.contains("metadata document cannot be fetched")
                    })
                    .count()
            };
            eventually(|| warnings(&b.d.stderr()) >= 4);
            let warned = b.d.stderr();
            assert_eq!(warnings(&warned), 4, "{warned}");
            assert!(warned.contains("[auth.builtin.pinned]"), "{warned}");
            b.authorize(
                "https://localhost/client.json",
                "https://app.example/cb",
                &pkce_challenge,
                &[],
            );
            let status = std::process::Command::new(mcpx_bin())
                .args(["--config"])
                .arg(b.d.config_path())
                .args(["status", "--json"])
                .output()
                .unwrap();
            let status: Value = serde_json::from_slice(&status.stdout).unwrap();
            let listed = status["unfetchedClients"].as_array().unwrap();
            assert_eq!(listed.len(), 4, "{status}");
            assert_eq!(listed[0]["clientId"], "https://localhost/client.json");
            let text = std::process::Command::new(mcpx_bin())
                .args(["--config"])
                .arg(b.d.config_path())
                .arg("status")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&text.stdout);
            assert!(
                text.contains("refused: https://localhost/client.json"),
                "{text}"
            );
            let off = Builtin::start("clientDocuments = false\nregistration = false\n");
            let metadata = off.get("/.well-known/oauth-authorization-server").json();
            assert_eq!(metadata["client_id_metadata_document_supported"], false);
            assert!(metadata.get("registration_endpoint").is_none());
            let refused = off.authorize(
                "https://claude.ai/x",
                "https://claude.ai/cb",
                &pkce_challenge,
                &[],
            );
            assert_eq!(refused.status, 400);
        }

        #[test]
        fn unconsented_registrations_are_capped() {
            let b = Builtin::start("maxRegistrations = 2\n");
            b.register("one", LOOPBACK, &[]);
            b.register("two", LOOPBACK, &[]);
            let body = json!({"redirect_uris": [LOOPBACK]}).to_string();
            let head = format!(
                "POST /register HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                b.d.addr,
                body.len()
            );
            let third = b.d.raw(head.as_bytes());
            assert_eq!(third.status, 400);
            assert!(third.json()["error_description"]
                .as_str()
                .unwrap()
                .contains("maxRegistrations"));
        }

        #[test]
        fn two_replicas_with_one_cluster_key_accept_each_others_tokens() {
            let key = tempfile::tempdir().unwrap();
            let key_file = key.path().join("cluster.key");
            std::fs::write(&key_file, "ab".repeat(32)).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
            let cluster = format!("[cluster]\nkeyFile = \"{}\"\n", key_file.display());
            let public = "https://mcp.test";
            let start = |extra: &str| {
                Builtin::start_in(
                    tempfile::tempdir().unwrap(),
                    free_port(),
                    Some(public),
                    extra,
                )
            };
            let a = start(&cluster);
            let replica = start(&cluster);
            let stranger = start("");
            let client = a.register("Phone", LOOPBACK, &["authorization_code"]);
            let tokens = a.log_in(&client, LOOPBACK, &format!("{public}/mcp"));
            let access = tokens["access_token"].as_str().unwrap();
            assert_eq!(a.list("/mcp", access).status, 200);
            let listed = replica.list("/mcp", access);
            assert_eq!(
                listed.status,
                200,
                "{}",
                String::from_utf8_lossy(&listed.body)
            );
            let refused = stranger.list("/mcp", access);
            assert_eq!(refused.status, 401, "another key: another server");
            assert_eq!(challenge(&refused)["error"], "invalid_token");
            assert_eq!(
                a.get("/oauth/jwks.json").json(),
                replica.get("/oauth/jwks.json").json(),
                "one key, one set"
            );
        }
    }
}
