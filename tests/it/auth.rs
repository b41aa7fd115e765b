//! Remote servers that need a login, end to end: `mcpx auth login` against a small authorization
//! and resource server written for these tests (tokens that expire when the test says, refresh
//! tokens it can refuse, every token request counted), then calls through `mcpx serve`.
//! The official suite's authorization scenarios run in tests/it/conformance.rs.

use crate::common;

use crate::common::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server has issued and seen.
#[derive(Default)]
struct State {
    /// Live access tokens and when they stop working.
    access: HashMap<String, Instant>,
    refresh: Vec<String>,
    issued: Vec<String>,
    refresh_requests: usize,
    next: usize,
    /// The open HTTP+SSE streams by their session, where answers to `/message?session=N` go
    /// (two mcpx processes may each hold one).
    streams: HashMap<String, TcpStream>,
}

/// One server playing both the authorization server and the MCP server (issuer and resource on
/// the same origin, as many hosted servers are).
pub(crate) struct AuthServer {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    /// How long an access token works.
    lifetime: Duration,
    refresh_allowed: bool,
    /// Changes to its authorization server metadata (a `null` removes the key).
    metadata: Value,
    /// The authorization server its resource metadata names, when not itself: set when the
    /// server moves to another (whose tokens it then takes, and only those).
    moved_to: Mutex<Option<Arc<AuthServer>>>,
    /// How many clients registered here.
    registrations: std::sync::atomic::AtomicUsize,
}

impl AuthServer {
    pub(crate) fn start(lifetime: Duration, refresh_allowed: bool) -> Arc<AuthServer> {
        AuthServer::with_metadata(lifetime, refresh_allowed, json!({}))
    }

    /// A server whose metadata `changes` alter.
    fn with_metadata(lifetime: Duration, refresh_allowed: bool, changes: Value) -> Arc<AuthServer> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = Arc::new(AuthServer {
            addr: listener.local_addr().unwrap(),
            state: Arc::default(),
            lifetime,
            refresh_allowed,
            metadata: changes,
            moved_to: Mutex::default(),
            registrations: Default::default(),
        });
        let serving = Arc::clone(&server);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let serving = Arc::clone(&serving);
                std::thread::spawn(move || serving.answer(stream));
            }
        });
        server
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server names `to` as its authorization server from now on: every token issued
    /// before is dead, and `to`'s work.
    fn move_to(&self, to: &Arc<AuthServer>) {
        *self.moved_to.lock().unwrap() = Some(Arc::clone(to));
        let mut state = self.state.lock().unwrap();
        state.access.clear();
        state.refresh.clear();
    }

    fn issue(&self, state: &mut State) -> Value {
        state.next += 1;
        let (access, refresh) = (
            format!("at-{}-secret", state.next),
            format!("rt-{}", state.next),
        );
        state
            .access
            .insert(access.clone(), Instant::now() + self.lifetime);
        state.refresh.push(refresh.clone());
        state.issued.push(access.clone());
        json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
            "expires_in": self.lifetime.as_secs(), "scope": "mcp"})
    }

    fn answer(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        let _ = reader.read_line(&mut request_line);
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        let body = String::from_utf8_lossy(&body).into_owned();
        let mut parts = request_line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = target.split('?').next().unwrap_or("");
        let form = |text: &str| -> HashMap<String, String> {
            url::form_urlencoded::parse(text.as_bytes())
                .into_owned()
                .collect()
        };
        let base = self.url();
        let (status, extra, payload) = match (method, path) {
            ("GET", resource) if resource.starts_with("/.well-known/oauth-protected-resource/") => {
                let path = &resource["/.well-known/oauth-protected-resource".len()..];
                let issuer = self.moved_to.lock().unwrap().as_ref().map(|to| to.url());
                let issuer = issuer.unwrap_or_else(|| base.clone());
                (
                    "200 OK",
                    String::new(),
                    json!({"resource": format!("{base}{path}"), "authorization_servers": [issuer]})
                        .to_string(),
                )
            }
            ("GET", "/.well-known/oauth-authorization-server") => {
                let mut metadata = json!({
                    "issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"), "registration_endpoint": format!("{base}/register"),
                    "code_challenge_methods_supported": ["S256"], "scopes_supported": ["mcp"]});
                for (key, value) in self.metadata.as_object().into_iter().flatten() {
                    match value {
                        Value::Null => drop(metadata.as_object_mut().unwrap().remove(key)),
                        value => metadata[key] = value.clone(),
                    }
                }
                ("200 OK", String::new(), metadata.to_string())
            }
            ("POST", "/register") => {
                let n = 1 + self
                    .registrations
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let client = json!({"client_id": format!("mcpx-test-client-{n}")});
                ("201 Created", String::new(), client.to_string())
            }
            ("GET", "/authorize") => {
                let query = form(target.split_once('?').map_or("", |(_, q)| q));
                let location = format!(
                    "{}?code=the-code&state={}&iss={}",
                    query["redirect_uri"],
                    query["state"],
                    url::form_urlencoded::byte_serialize(base.as_bytes()).collect::<String>()
                );
                (
                    "302 Found",
                    format!("Location: {location}\r\n"),
                    String::new(),
                )
            }
            ("POST", "/token") => {
                let form = form(&body);
                let mut state = self.state.lock().unwrap();
                match form.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        ("200 OK", String::new(), self.issue(&mut state).to_string())
                    }
                    Some("refresh_token") => {
                        state.refresh_requests += 1;
                        let known = state.refresh.contains(&form["refresh_token"]);
                        if self.refresh_allowed && known {
                            state.refresh.retain(|r| r != &form["refresh_token"]);
                            ("200 OK", String::new(), self.issue(&mut state).to_string())
                        } else {
                            (
                                "400 Bad Request",
                                String::new(),
                                json!({"error": "invalid_grant"}).to_string(),
                            )
                        }
                    }
                    _ => (
                        "400 Bad Request",
                        String::new(),
                        json!({"error": "unsupported_grant_type"}).to_string(),
                    ),
                }
            }
            ("GET", "/mcp") => ("405 Method Not Allowed", String::new(), String::new()),
            ("POST", "/mcp") => self.mcp(&headers, &body),
            ("GET", "/sse") if self.authorized(&headers) => return self.open_stream(stream),
            ("GET", "/sse") => ("401 Unauthorized", self.challenge("/sse"), String::new()),
            ("POST", "/message") => {
                let session = target.split("session=").nth(1).unwrap_or_default();
                self.message(&headers, &body, session)
            }
            _ => ("404 Not Found", String::new(), String::new()),
        };
        let kind = if payload.starts_with('{') {
            "application/json"
        } else {
            "text/plain"
        };
        let mut stream = stream;
        let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{payload}", payload.len());
    }

    /// Whether the request carries a live access token (of the authorization server it moved
    /// to, once moved).
    fn authorized(&self, headers: &HashMap<String, String>) -> bool {
        let token = headers
            .get("authorization")
            .and_then(|a| a.strip_prefix("Bearer "))
            .unwrap_or("");
        let issuer = self.moved_to.lock().unwrap().clone();
        let state = match &issuer {
            Some(issuer) => &issuer.state,
            None => &self.state,
        };
        let live = state.lock().unwrap().access.get(token).copied();
        live.is_some_and(|until| Instant::now() < until)
    }

    /// The Bearer challenge for the resource at `path`.
    fn challenge(&self, path: &str) -> String {
        format!("WWW-Authenticate: Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource{path}\", scope=\"mcp\"\r\n", self.url())
    }

    /// The same server on the 2024-11-05 HTTP+SSE transport: the stream names `/message` as
    /// its endpoint, and is held open until the client goes.
    fn open_stream(&self, mut stream: TcpStream) {
        let session = {
            let mut state = self.state.lock().unwrap();
            state.next += 1;
            format!("s{}", state.next)
        };
        // Registered before the endpoint is announced: a client quick to POST (or a machine
        // slow to run this thread) must find the stream its answer goes on.
        if let Ok(held) = stream.try_clone() {
            self.state
                .lock()
                .unwrap()
                .streams
                .insert(session.clone(), held);
        }
        let opened = format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: endpoint\ndata: /message?session={session}\n\n");
        if stream.write_all(opened.as_bytes()).is_err() {
            return;
        }
        let _ = stream.read(&mut [0; 1]);
    }

    /// A message POSTed to the HTTP+SSE endpoint: its answer goes on the stream.
    fn message(
        &self,
        headers: &HashMap<String, String>,
        body: &str,
        session: &str,
    ) -> (&'static str, String, String) {
        if !self.authorized(headers) {
            return ("401 Unauthorized", self.challenge("/sse"), String::new());
        }
        let (_, _, answer) = self.mcp(headers, body);
        if !answer.is_empty() {
            if let Some(stream) = self.state.lock().unwrap().streams.get_mut(session) {
                let _ = write!(stream, "event: message\ndata: {answer}\n\n");
            }
        }
        ("202 Accepted", String::new(), String::new())
    }

    /// A legacy MCP server behind a bearer check: `whoami` answers after `ms` milliseconds.
    fn mcp(&self, headers: &HashMap<String, String>, body: &str) -> (&'static str, String, String) {
        if !self.authorized(headers) {
            return ("401 Unauthorized", self.challenge("/mcp"), String::new());
        }
        let message: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let id = message["id"].clone();
        let result = match message["method"].as_str().unwrap_or("") {
            _ if id.is_null() => return ("202 Accepted", String::new(), String::new()),
            "server/discover" => return ("200 OK", String::new(),
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}).to_string()),
            "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "protected", "version": "1"}}),
            "tools/list" => json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}),
            "tools/call" => {
                let ms = message["params"]["arguments"]["ms"].as_u64().unwrap_or(0);
                std::thread::sleep(Duration::from_millis(ms));
                json!({"content": [{"type": "text", "text": "you are logged in"}]})
            }
            _ => json!({}),
        };
        (
            "200 OK",
            "Mcp-Session-Id: s1\r\n".into(),
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        )
    }
}

/// A configuration naming the server `remote`, its credentials in `dir`.
fn config(server: &AuthServer, dir: &std::path::Path) -> String {
    format!(
        "[auth]\ncredentials = \"{}/credentials.json\"\n[admin]\nsocket = \"{}/admin.sock\"\n[servers.remote]\nurl = \"{}/mcp\"\n",
        dir.display(),
        dir.display(),
        server.url()
    )
}

/// A login against a server whose metadata `changes` alter, which must fail: the server, and
/// what mcpx said.
fn refused_login(changes: Value) -> (Arc<AuthServer>, String) {
    let server = AuthServer::with_metadata(Duration::from_secs(60), true, changes);
    let dir = tempfile::tempdir().unwrap();
    let (succeeded, stderr) = try_login(&config(&server, dir.path()), dir.path(), BROWSER);
    assert!(!succeeded, "{stderr}");
    (server, stderr)
}

/// The browser that follows the authorization server's redirects.
pub(crate) const BROWSER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/browser");

/// Runs `mcpx auth login remote` with a browser that follows the redirects; returns its stderr.
fn login(config: &str, dir: &std::path::Path) -> String {
    let (succeeded, stderr) = try_login(config, dir, BROWSER);
    assert!(succeeded, "{stderr}");
    stderr
}

/// Runs `mcpx auth login remote` with `browser`, for at most [`PATIENCE`]: whether it
/// succeeded, and its stderr.
pub(crate) fn try_login(config: &str, dir: &std::path::Path, browser: &str) -> (bool, String) {
    try_login_with(config, dir, browser, &[])
}

/// [`try_login`] with `env` set for the login (and its browser).
pub(crate) fn try_login_with(
    config: &str,
    dir: &std::path::Path,
    browser: &str,
    env: &[(&str, &str)],
) -> (bool, String) {
    let path = dir.join("config.toml");
    std::fs::write(&path, config).unwrap();
    let mut child = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(&path)
        .args(["auth", "login", "remote"])
        .env("BROWSER", browser)
        .env("MCPX_LOG", "debug")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = Log::capture(child.stderr.take().unwrap(), |_| {});
    let status = wait_exit(&mut child, PATIENCE);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    log.finish();
    (status.is_some_and(|s| s.success()), log.text())
}

/// A login, a served call, then a wait past the token's lifetime.
fn logged_in_then_expired(
    lifetime: Duration,
    refresh_allowed: bool,
) -> (Arc<AuthServer>, tempfile::TempDir, Serve) {
    let server = AuthServer::start(lifetime, refresh_allowed);
    let dir = tempfile::tempdir().unwrap();
    let config = config(&server, dir.path());
    login(&config, dir.path());
    let mut mcpx = Serve::start(&config);
    mcpx.initialize("2025-11-25");
    let first = whoami(&mut mcpx, 1);
    assert_eq!(
        first["result"]["content"][0]["text"], "you are logged in",
        "{first}"
    );
    std::thread::sleep(lifetime + Duration::from_millis(500));
    (server, dir, mcpx)
}

/// What the built-in `mcpx__upstreams` tool says of `name`.
fn upstream_report(mcpx: &mut Serve, id: i64, name: &str) -> Value {
    let report = mcpx.call(
        id,
        "tools/call",
        json!({"name": "mcpx__upstreams", "arguments": {}}),
    );
    let upstreams = report["result"]["structuredContent"]["upstreams"]
        .as_array()
        .cloned();
    let found = upstreams.into_iter().flatten().find(|u| u["name"] == name);
    found.unwrap_or_else(|| panic!("no {name} in {report}"))
}

fn whoami(mcpx: &mut Serve, id: i64) -> Value {
    mcpx.call(
        id,
        "tools/call",
        json!({"name": "remote__whoami", "arguments": {}}),
    )
}

mod every_revision {
    pub mod auth {
        use super::super::*;
        use std::os::unix::fs::PermissionsExt;

        /// Under tmux: `L` on a server that needs a login runs `mcpx auth login` in the console's
        /// terminal (the browser follows the redirects), and the daemon serves it right after.
        #[test]
        fn the_console_logs_in_to_the_selected_upstream_with_l() {
            use common::console::{open_console, screen_shows, tmux};
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let daemon = common::http::Daemon::start(&config(&server, dir.path()), "");
            let socket = dir.path().join("admin.sock");
            let browser = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/browser");
            let prefix = format!("env BROWSER={browser}");
            let name = open_console("login", &prefix, &socket, (160, 30));
            tmux(&["send-keys", "-t", &name, "1"]);
            screen_shows(&name, "needs-login");
            tmux(&["send-keys", "-t", &name, "L"]);
            screen_shows(&name, "logged in to remote");
            // The table follows with the revision the server now speaks.
            let screen = screen_shows(&name, "2025-11-25");
            tmux(&["kill-session", "-t", &name]);
            assert!(!screen.contains("needs-login"), "{screen}");
            for token in &server.state.lock().unwrap().issued {
                assert!(
                    !daemon.stderr().contains(token.as_str()),
                    "{token} was logged"
                );
            }
        }

        #[test]
        fn a_login_stores_tokens_privately_and_an_expired_token_is_refreshed_without_losing_the_call(
        ) {
            let server = AuthServer::start(Duration::from_secs(2), true);
            let dir = tempfile::tempdir().unwrap();
            let config = config(&server, dir.path());
            let started = Instant::now();
            let login_log = login(&config, dir.path());
            let credentials = dir.path().join("credentials.json");
            let mode = std::fs::metadata(&credentials)
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o600);
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            assert_eq!(
                whoami(&mut mcpx, 1)["result"]["content"][0]["text"],
                "you are logged in"
            );
            let first_call = started.elapsed();
            println!("from `mcpx auth login` to the first served call: {first_call:?}");
            std::thread::sleep(Duration::from_millis(2500));
            let after = whoami(&mut mcpx, 2);
            assert_eq!(
                after["result"]["content"][0]["text"], "you are logged in",
                "{after}"
            );
            assert!(server.state.lock().unwrap().refresh_requests >= 1);
            // No token in any log line or in what mcpx reports.
            let report = mcpx.call(
                3,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            let everything = format!("{login_log}{}{report}", mcpx.stderr());
            for token in &server.state.lock().unwrap().issued {
                assert!(!everything.contains(token.as_str()), "{token} was shown");
            }
        }

        /// With `credentialsStore = "keyring"` (a real gnome-keyring on a private bus) a login's
        /// tokens go to the keyring and never to the file, a serving mcpx reads them from
        /// there, and a logout takes them out.
        #[test]
        fn a_login_with_the_keyring_store_keeps_its_tokens_in_the_keyring() {
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let keyring = crate::secrets::SessionKeyring::start(dir.path());
            let bus = [("DBUS_SESSION_BUS_ADDRESS", keyring.address.as_str())];
            let config = config(&server, dir.path())
                .replace("[auth]\n", "[auth]\ncredentialsStore = \"keyring\"\n");
            let (succeeded, said) = try_login_with(&config, dir.path(), BROWSER, &bus);
            assert!(succeeded, "{said}");
            let file = std::fs::read_to_string(dir.path().join("credentials.json"));
            assert!(file.is_err() || !file.unwrap().contains("remote"));
            let auth = |action: &str| {
                let output = std::process::Command::new(mcpx_bin())
                    .arg("--config")
                    .arg(dir.path().join("config.toml"))
                    .args(["auth", action])
                    .args((action == "logout").then_some("remote"))
                    .envs(bus)
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&output.stdout).into_owned()
                    + &String::from_utf8_lossy(&output.stderr)
            };
            assert!(auth("status").contains("remote: logged in"));
            let mut command = serve_command(&dir.path().join("config.toml"), &[]);
            command.envs(bus);
            let mut mcpx = Serve::from_command(command);
            mcpx.initialize("2025-11-25");
            assert_eq!(
                whoami(&mut mcpx, 1)["result"]["content"][0]["text"],
                "you are logged in"
            );
            auth("logout");
            assert!(auth("status").contains("remote: not logged in"));
        }

        /// `credentialsStore = "auto"` where no keyring answers keeps the tokens in the file.
        #[test]
        fn a_login_with_the_auto_store_and_no_keyring_keeps_its_tokens_in_the_file() {
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let nobody = format!("unix:path={}", dir.path().join("no-bus").display());
            let config = config(&server, dir.path())
                .replace("[auth]\n", "[auth]\ncredentialsStore = \"auto\"\n");
            let bus = [("DBUS_SESSION_BUS_ADDRESS", nobody.as_str())];
            let (succeeded, said) = try_login_with(&config, dir.path(), BROWSER, &bus);
            assert!(succeeded, "{said}");
            let file = std::fs::read_to_string(dir.path().join("credentials.json")).unwrap();
            assert!(file.contains("\"remote\""), "{file}");
        }

        #[test]
        fn many_calls_on_an_expired_token_make_exactly_one_refresh() {
            let (server, _dir, mut mcpx) = logged_in_then_expired(Duration::from_secs(3), true);
            for id in 10..30 {
                mcpx.request(
                    id,
                    "tools/call",
                    json!({"name": "remote__whoami", "arguments": {"ms": 50}}),
                );
            }
            for id in 10..30 {
                let answer = mcpx.response(id);
                assert_eq!(
                    answer["result"]["content"][0]["text"], "you are logged in",
                    "{answer}"
                );
            }
            assert_eq!(server.state.lock().unwrap().refresh_requests, 1);
        }

        /// SEP-2352: the server names another authorization server. mcpx registers there as
        /// soon as the old credential is refused for good (before the person is asked), the
        /// login that follows uses that registration (no second one) and not the old client,
        /// and the calls go on with the new server's tokens.
        #[test]
        fn a_server_moved_to_another_authorization_server_is_registered_with_then_logged_in_to() {
            let old = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            login(&config(&old, dir.path()), dir.path());
            let mut mcpx = Serve::start(&config(&old, dir.path()));
            mcpx.initialize("2025-11-25");
            let first = whoami(&mut mcpx, 1);
            assert_eq!(
                first["result"]["content"][0]["text"], "you are logged in",
                "{first}"
            );
            let new = AuthServer::start(Duration::from_secs(60), true);
            old.move_to(&new);
            let refused = whoami(&mut mcpx, 2);
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("mcpx auth login remote"), "{refused}");
            let registered = |server: &AuthServer| {
                server
                    .registrations
                    .load(std::sync::atomic::Ordering::SeqCst)
            };
            assert_eq!(registered(&new), 1, "{}", mcpx.stderr());
            assert!(mcpx
                .stderr()
                .contains("moved to another authorization server"));
            let kept: Value = serde_json::from_slice(
                &std::fs::read(dir.path().join("credentials.json")).unwrap(),
            )
            .unwrap();
            let registration = &kept["remote"]["registrations"][new.url()];
            assert_eq!(registration["clientId"], "mcpx-test-client-1", "{kept}");

            login(&config(&old, dir.path()), dir.path());
            assert_eq!(registered(&new), 1, "the login registered again");
            let kept: Value = serde_json::from_slice(
                &std::fs::read(dir.path().join("credentials.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(kept["remote"]["issuer"], new.url(), "{kept}");
            assert_eq!(kept["remote"]["clientId"], "mcpx-test-client-1", "{kept}");
            assert!(kept["remote"].get("registrations").is_none(), "{kept}");
            let served = whoami(&mut mcpx, 3);
            assert_eq!(
                served["result"]["content"][0]["text"], "you are logged in",
                "{served}"
            );
            assert_eq!(registered(&old), 1);
        }

        #[test]
        fn a_refused_refresh_token_leads_to_needs_login_without_a_loop() {
            let (server, _dir, mut mcpx) = logged_in_then_expired(Duration::from_secs(2), false);
            for id in 2..6 {
                let refused = whoami(&mut mcpx, id);
                let message = refused["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                assert!(message.contains("mcpx auth login remote"), "{refused}");
            }
            assert_eq!(server.state.lock().unwrap().refresh_requests, 1);
            let remote = upstream_report(&mut mcpx, 9, "remote");
            assert!(
                remote["state"].as_str().unwrap().starts_with("needs-login"),
                "{remote}"
            );
        }

        /// `code_challenge_methods_supported` is a MUST: without it, PKCE cannot be known to be
        /// there, and mcpx does not log in.
        #[test]
        fn an_authorization_server_whose_metadata_does_not_list_pkce_is_refused() {
            let (server, stderr) = refused_login(json!({"code_challenge_methods_supported": null}));
            assert!(
                stderr.contains("lacks code_challenge_methods_supported"),
                "{stderr}"
            );
            assert!(server.state.lock().unwrap().issued.is_empty());
        }

        /// A token endpoint over plain HTTP off loopback would carry the code and the tokens in
        /// the clear: refused before anything is sent.
        #[test]
        fn an_authorization_server_with_a_plain_http_endpoint_off_loopback_is_refused() {
            let (_server, stderr) =
                refused_login(json!({"token_endpoint": "http://auth.example/token"}));
            assert!(
                stderr.contains("token_endpoint \"http://auth.example/token\" is not HTTPS"),
                "{stderr}"
            );
        }

        /// Another local process that connects to the redirect listener first and sends
        /// nothing (or half a line) cannot stall the login: the browser's redirect is still read.
        #[test]
        fn a_process_holding_the_redirect_listener_open_cannot_stall_a_login() {
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let browser = dir.path().join("browser");
            std::fs::write(
                &browser,
                format!(
                    "#!/usr/bin/env bash\n\
                     port=$(sed -E 's/.*redirect_uri=http%3A%2F%2F127.0.0.1%3A([0-9]+).*/\\1/' <<< \"$1\")\n\
                     exec 3<>/dev/tcp/127.0.0.1/$port 4<>/dev/tcp/127.0.0.1/$port\n\
                     printf 'GET /call' >&4\n\
                     {BROWSER} \"$1\"\n"
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
            let (succeeded, stderr) = try_login(
                &config(&server, dir.path()),
                dir.path(),
                browser.to_str().unwrap(),
            );
            assert!(succeeded, "{stderr}");
        }

        /// `mcpx auth login` tells every mcpx running on the same configuration, editors'
        /// `mcpx serve` processes included: the server serves at once, not at the next backoff.
        #[test]
        fn a_login_reaches_a_running_mcpx_serve_at_once() {
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let config = config(&server, dir.path());
            let path = dir.path().join("config.toml");
            std::fs::write(&path, &config).unwrap();
            let mut mcpx = Serve::with_config_file(&path);
            mcpx.initialize("2025-11-25");
            let waiting = upstream_report(&mut mcpx, 1, "remote");
            assert!(waiting["state"]
                .as_str()
                .unwrap()
                .starts_with("needs-login"));
            let told = login(&config, dir.path());
            assert!(
                told.contains("The running mcpx is using the new login"),
                "{told}"
            );
            let served = whoami(&mut mcpx, 2);
            assert_eq!(
                served["result"]["content"][0]["text"], "you are logged in",
                "{served}"
            );
        }

        /// An HTTP+SSE server that needs a login: mcpx finds its challenge on the stream's GET,
        /// logs in, and sends the token on the GET and on every POST to its endpoint.
        #[test]
        fn an_http_sse_server_that_needs_a_login_is_logged_in_to_and_serves() {
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let config = config(&server, dir.path()).replace("/mcp\"", "/sse\"");
            let mut waiting = Serve::start(&config);
            waiting.initialize("2025-11-25");
            let state = upstream_report(&mut waiting, 1, "remote")["state"].clone();
            assert_eq!(state, "needs-login: run `mcpx auth login remote`");
            login(&config, dir.path());
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let served = whoami(&mut mcpx, 2);
            assert_eq!(
                served["result"]["content"][0]["text"], "you are logged in",
                "{served}"
            );
            assert!(
                mcpx.stderr().contains("trying HTTP+SSE"),
                "{}",
                mcpx.stderr()
            );
        }

        #[test]
        fn a_server_that_needs_a_login_is_needs_login_and_its_neighbours_serve() {
            let server = AuthServer::start(Duration::from_secs(60), true);
            let dir = tempfile::tempdir().unwrap();
            let config = format!("{}{}", config(&server, dir.path()), fixture_config(""));
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let echo = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "still here"}}),
            );
            assert_eq!(echo["result"]["content"][0]["text"], "still here");
            let remote = upstream_report(&mut mcpx, 2, "remote");
            assert_eq!(
                remote["state"], "needs-login: run `mcpx auth login remote`",
                "{remote}"
            );
        }
    }
}

/// The Python SDK v2 client, which can open a URL, in `era` against a server whose tokens live
/// `lifetime` (never refreshed): `steps` as tests/sdk/python_login_client.py takes them. Returns
/// its report; asserts that no token reached its log.
fn from_the_client(era: &str, lifetime: Duration, steps: &[&str]) -> (Arc<AuthServer>, Value) {
    let server = AuthServer::start(lifetime, false);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, self::config(&server, dir.path())).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/python_login_client.py"
    );
    let out = std::process::Command::new(deps::python())
        .arg(script)
        .arg(era)
        .arg(mcpx_bin())
        .arg(&config)
        .args(steps)
        .env("MCPX_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    });
    for token in &server.state.lock().unwrap().issued {
        assert!(!stderr.contains(token.as_str()), "{token} was logged");
    }
    let page = report["asked"][0]["url"].as_str().unwrap_or_default();
    assert_eq!(report["asked"][0]["mode"], "url", "{report}");
    assert!(
        page.starts_with(&format!("{}/authorize?", server.url())),
        "{report}"
    );
    assert!(page.contains("code_challenge_method=S256"), "{report}");
    (server, report)
}

/// A server never logged in to: `mcpx__login` asks the client to open the sign-in page, and the
/// server's tool is served next.
fn first_login_from_the_client(era: &str) {
    let steps = [r#"mcpx__login={"server": "remote"}"#, "remote__whoami"];
    let (_, report) = from_the_client(era, Duration::from_secs(60), &steps);
    let calls = &report["calls"];
    let logged_in = calls[0].as_str().unwrap_or_default();
    assert!(logged_in.starts_with("Logged in to remote"), "{report}");
    assert_eq!(calls[1], "you are logged in", "{report}");
}

/// A token that expires mid-session and cannot be refreshed: the call that meets the refusal
/// logs in again through the client and goes on.
fn login_again_within_a_call(era: &str) {
    let steps = [
        r#"mcpx__login={"server": "remote"}"#,
        "remote__whoami",
        "sleep=2.5",
        "remote__whoami",
    ];
    let (server, report) = from_the_client(era, Duration::from_secs(2), &steps);
    assert_eq!(
        report["asked"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["calls"][2], "you are logged in", "{report}");
    assert_eq!(server.state.lock().unwrap().refresh_requests, 1);
}

mod v2025_11_25 {
    pub mod auth {
        #[test]
        fn a_client_that_can_open_a_url_logs_in_with_mcpx_login() {
            super::super::first_login_from_the_client("legacy");
        }

        #[test]
        fn a_call_refused_for_an_expired_login_logs_in_through_the_client_and_goes_on() {
            super::super::login_again_within_a_call("legacy");
        }
    }
}

mod v2026_07_28 {
    pub mod auth {
        #[test]
        fn a_client_that_can_open_a_url_logs_in_with_mcpx_login() {
            super::super::first_login_from_the_client("2026-07-28");
        }

        #[test]
        fn a_call_refused_for_an_expired_login_logs_in_through_the_client_and_goes_on() {
            super::super::login_again_within_a_call("2026-07-28");
        }
    }
}
