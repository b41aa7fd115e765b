//! A running `mcpx daemon` and a raw HTTP/1.1 client: raw, because the tests put bytes in
//! headers that an HTTP library would normalise or refuse.

use super::{mcpx_bin, own_cache, Log, PATIENCE};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};

/// A running `mcpx daemon` on a free loopback port.
pub struct Daemon {
    child: Child,
    pub addr: SocketAddr,
    log: Log,
    _config: tempfile::NamedTempFile,
    _admin_dir: tempfile::TempDir,
    _cache: Option<tempfile::TempDir>,
}

impl Daemon {
    /// Starts the daemon with `config` (its `[daemon]` table is supplied here).
    pub fn start(config: &str, daemon_keys: &str) -> Daemon {
        Daemon::start_with_env(config, daemon_keys, &[])
    }

    /// Starts the daemon with `config` and these environment variables set.
    pub fn start_with_env(config: &str, daemon_keys: &str, env: &[(&str, &str)]) -> Daemon {
        Daemon::launch(config, daemon_keys, env, &[])
    }

    /// Starts the daemon with `config` as the arguments of `wrapper` (a program that runs its
    /// arguments, such as `setpriv …` or a shell setting limits).
    pub fn start_wrapped(config: &str, wrapper: &[&str]) -> Daemon {
        Daemon::launch(config, "", &[], wrapper)
    }

    fn launch(config: &str, daemon_keys: &str, env: &[(&str, &str)], wrapper: &[&str]) -> Daemon {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        // Daemons run side by side; each gets its own admin socket unless the test names one.
        let admin_dir = tempfile::tempdir().unwrap();
        let admin = match config.contains("[admin]") {
            true => String::new(),
            false => format!(
                "[admin]\nsocket = {:?}\n",
                admin_dir.path().join("admin.sock").display().to_string()
            ),
        };
        // A free loopback port, unless the test names the address (a URL of its own must).
        let address = match daemon_keys.contains("address") {
            true => "",
            false => "address = \"127.0.0.1:0\"\n",
        };
        write!(file, "[daemon]\n{address}{daemon_keys}\n{admin}{config}").unwrap();
        let mcpx = mcpx_bin();
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(&mcpx);
                command
            }
            None => Command::new(&mcpx),
        };
        command
            .args(["--config", file.path().to_str().unwrap(), "daemon"])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let cache = own_cache(&mut command);
        let mut child = command.spawn().unwrap();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let log = Log::capture(child.stderr.take().unwrap(), move |line| {
            if let Some(rest) = line.split("serving MCP at http://").nth(1) {
                let _ = addr_tx.send(rest.trim_end_matches("/mcp").to_owned());
            }
        });
        let addr = addr_rx
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("the daemon did not start:\n{}", log.text()))
            .parse()
            .unwrap();
        Daemon {
            child,
            addr,
            log,
            _config: file,
            _admin_dir: admin_dir,
            _cache: cache,
        }
    }

    pub fn stderr(&self) -> String {
        self.log.text()
    }

    /// Waits until the daemon's log contains `text`.
    pub fn log_shows(&self, text: &str) -> bool {
        self.log.shows(text)
    }

    /// Where the daemon serves attached editors (beside its admin socket).
    pub fn local_socket(&self) -> std::path::PathBuf {
        let text = std::fs::read_to_string(self.config_path()).unwrap();
        mcpx::config::Config::parse(&text).unwrap().local_socket()
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The configuration file the daemon was started with.
    pub fn config_path(&self) -> &std::path::Path {
        self._config.path()
    }

    /// `body` as a configuration file for this daemon (the same `[daemon]` table).
    pub fn config_with(&self, body: &str) -> String {
        format!("[daemon]\naddress = \"127.0.0.1:0\"\n{body}")
    }

    /// Sends a signal and returns at once.
    pub fn signal_only(&self, signal: &str) {
        Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
    }

    /// Sends a signal and waits for the daemon to exit.
    pub fn signal(&mut self, signal: &str) -> Option<ExitStatus> {
        Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = super::wait_exit(&mut self.child, PATIENCE)?;
        self.log.finish();
        Some(status)
    }

    /// POSTs `body` to /mcp with exactly these headers (plus Host, Content-Length, Connection).
    pub fn post(&self, headers: &[(&str, &[u8])], body: &[u8]) -> Reply {
        self.post_to("/mcp", headers, body)
    }

    /// POSTs `body` to `path` (a profile's `/mcp/NAME`) with exactly these headers.
    pub fn post_to(&self, path: &str, headers: &[(&str, &[u8])], body: &[u8]) -> Reply {
        post_to_addr(self.addr, path, headers, body)
    }

    /// POSTs and returns the open connection, for streams read as they arrive.
    pub fn send_post(&self, headers: &[(&str, &[u8])], body: &[u8]) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        self.send_post_on(stream, "/mcp", headers, body)
    }

    /// POSTs on a connection opened earlier and reads the reply.
    pub fn post_on(&self, stream: TcpStream, headers: &[(&str, &[u8])], body: &[u8]) -> Reply {
        read_reply(self.send_post_on(stream, "/mcp", headers, body))
    }

    fn send_post_on(
        &self,
        stream: TcpStream,
        path: &str,
        headers: &[(&str, &[u8])],
        body: &[u8],
    ) -> TcpStream {
        send_post_on(stream, self.addr, path, headers, body)
    }

    /// Sends a raw request (any method and path).
    pub fn raw(&self, request: &[u8]) -> Reply {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.write_all(request).unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        Reply::parse(&raw)
    }

    /// Sends a raw request from another user of the machine (nobody, uid 65534), through
    /// bash's `/dev/tcp`: what any local account can do to a loopback port.
    pub fn raw_as_nobody(&self, request: &[u8]) -> Reply {
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "bash",
                "-c",
            ])
            .arg(format!(
                "exec 3<>/dev/tcp/{}/{}; printf '%s' \"$REQUEST\" >&3; cat <&3",
                self.addr.ip(),
                self.addr.port()
            ))
            .env("REQUEST", std::str::from_utf8(request).unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Reply::parse(&out.stdout)
    }

    /// `DELETE /mcp` of a legacy session.
    pub fn delete_session(&self, session: &str) -> Reply {
        self.raw(
            format!(
                "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n",
                self.addr
            )
            .as_bytes(),
        )
    }

    /// A bodiless request (`GET`, `OPTIONS`) to `path` with `extra` header lines, each ending
    /// in CRLF.
    pub fn bodiless(&self, method: &str, path: &str, extra: &str) -> Reply {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{extra}Connection: close\r\n\r\n",
            self.addr
        );
        self.raw(head.as_bytes())
    }

    /// Waits until `/healthz` shows every upstream ready (true), within twice [`PATIENCE`]: a
    /// client whose first request must not wait on the upstreams' start (a suite with a short
    /// timeout of its own) starts after this.
    pub fn upstreams_ready(&self) -> bool {
        let deadline = std::time::Instant::now() + 2 * PATIENCE;
        while std::time::Instant::now() < deadline {
            let health = self.bodiless("GET", "/healthz", "").json();
            let states = health["upstreams"].as_object().cloned().unwrap_or_default();
            if states.values().all(|state| state == "ready") {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// `GET /metrics`: the Prometheus text (checked to be served as such).
    pub fn metrics(&self) -> String {
        let reply = self.bodiless("GET", "/metrics", "");
        assert_eq!(reply.status, 200);
        assert!(reply
            .header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4"));
        String::from_utf8(reply.body).unwrap()
    }

    /// A modern request with every header right.
    pub fn modern(&self, id: i64, method: &str, params: Value) -> Reply {
        self.modern_to("/mcp", id, method, params)
    }

    /// A modern request with every header right, to `path`.
    pub fn modern_to(&self, path: &str, id: i64, method: &str, params: Value) -> Reply {
        let (headers, body) = modern_request(id, method, params);
        let refs = header_refs(&headers);
        self.post_to(path, &refs, body.to_string().as_bytes())
    }
}

/// The sum of the samples `name` in Prometheus `text` whose labels include every pair of
/// `labels`; 0 if none.
/// How many `tools/call`s reached the fixture behind `daemon`, by mcpx's own client-side metric
/// (metrics on).
pub fn fixture_calls(daemon: &Daemon) -> f64 {
    let labels = [("method", "tools/call"), ("upstream", "fixture")];
    let name = "mcp_client_operation_duration_seconds_count";
    metric_sample(&daemon.metrics(), name, &labels)
}

pub fn metric_sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// Owned header pairs as the borrowed pairs the posting functions take.
pub fn header_refs(headers: &[(String, String)]) -> Vec<(&str, &[u8])> {
    headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_bytes()))
        .collect()
}

/// POSTs `body` to `path` on whatever listens at `addr` (a proxy in front of daemons).
pub fn post_to_addr(addr: SocketAddr, path: &str, headers: &[(&str, &[u8])], body: &[u8]) -> Reply {
    let stream = TcpStream::connect(addr).unwrap();
    read_reply(send_post_on(stream, addr, path, headers, body))
}

fn send_post_on(
    mut stream: TcpStream,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &[u8])],
    body: &[u8],
) -> TcpStream {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    )
    .into_bytes();
    for (name, value) in headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head.extend_from_slice(body);
    stream.write_all(&head).unwrap();
    stream
}

pub fn read_reply(mut stream: TcpStream) -> Reply {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    Reply::parse(&raw)
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs a legacy message with an optional session and version header.
pub fn post(d: &Daemon, session: Option<&str>, version: Option<&str>, body: &Value) -> Reply {
    post_at(d, "/mcp", session, version, body)
}

/// POSTs a legacy message to `path`.
pub fn post_at(
    d: &Daemon,
    path: &str,
    session: Option<&str>,
    version: Option<&str>,
    body: &Value,
) -> Reply {
    let mut headers: Vec<(&str, &[u8])> = vec![
        ("Accept", b"application/json, text/event-stream"),
        ("Content-Type", b"application/json"),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session.as_bytes()));
    }
    if let Some(version) = version {
        headers.push(("MCP-Protocol-Version", version.as_bytes()));
    }
    d.post_to(path, &headers, body.to_string().as_bytes())
}

/// A JSON-RPC request without the modern envelope.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Initializes a legacy session at `revision` declaring `capabilities`; returns its id.
pub fn initialize_session(d: &Daemon, revision: &str, capabilities: Value) -> String {
    initialize_session_at(d, "/mcp", revision, capabilities)
}

/// Initializes a legacy session at `path` (a profile's `/mcp/NAME`); returns its id.
pub fn initialize_session_at(
    d: &Daemon,
    path: &str,
    revision: &str,
    capabilities: Value,
) -> String {
    let initialize = request(
        0,
        "initialize",
        json!({"protocolVersion": revision, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let reply = post_at(d, path, None, None, &initialize);
    assert_eq!(reply.status, 200);
    super::assert_result(revision, "initialize", &reply.json());
    let id = reply
        .header("mcp-session-id")
        .expect("no session minted")
        .to_owned();
    post_at(
        d,
        path,
        Some(&id),
        Some(revision),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    id
}

/// A 2026-07-28 request's headers and body, every mirrored header right.
pub fn modern_request(id: i64, method: &str, params: Value) -> (Vec<(String, String)>, Value) {
    let params = super::modern(params);
    let mut headers = vec![
        ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
        ("Mcp-Method".to_owned(), method.to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    let name = match method {
        "tools/call" | "prompts/get" => params["name"].as_str(),
        "resources/read" => params["uri"].as_str(),
        "tasks/get" | "tasks/update" | "tasks/cancel" => params["taskId"].as_str(),
        _ => None,
    };
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    (
        headers,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn parse(raw: &[u8]) -> Reply {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.lines();
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        if headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v == "chunked")
        {
            body = dechunk(&body);
        }
        Reply {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The `data:` payloads of an event stream, in order.
    pub fn events(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
}

/// Reads an event stream as it arrives.
pub struct EventReader {
    reader: BufReader<TcpStream>,
}

impl EventReader {
    /// Reads past the response head; returns the status line and headers.
    pub fn open(stream: TcpStream) -> (EventReader, String) {
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        (EventReader { reader }, head)
    }

    /// The next line of the stream that is an event's data or a comment (chunk sizes skipped).
    pub fn next_line(&mut self) -> Option<String> {
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end().to_owned();
            // The last chunk of a chunked body: the stream has ended.
            if line == "0" {
                return None;
            }
            if line.starts_with("data: ") || line.starts_with(':') || line.starts_with("id:") {
                return Some(line);
            }
        }
    }

    /// The next event's JSON.
    pub fn next_event(&mut self) -> Option<Value> {
        loop {
            let line = self.next_line()?;
            if let Some(data) = line.strip_prefix("data: ") {
                return Some(serde_json::from_str(data).unwrap());
            }
        }
    }
}

impl EventReader {
    /// The methods of the next `count` events, each checked to carry `subscription` as its
    /// subscription id, in order of name (a listen's notifications may come in any order).
    pub fn tagged_methods(&mut self, count: usize, subscription: i64) -> Vec<String> {
        let mut seen = Vec::new();
        while seen.len() < count {
            let event = self.next_event().unwrap();
            let tag = &event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"];
            assert_eq!(*tag, subscription, "{event}");
            seen.push(event["method"].as_str().unwrap().to_owned());
        }
        seen.sort();
        seen
    }
}

/// What a script of `tests/sdk` printed (one JSON object) when run against `daemon`'s `/mcp`
/// with the tests' Python; it must succeed.
pub fn python_client_against(daemon: &Daemon, script: &str) -> Value {
    let script = format!("{}/tests/sdk/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(super::deps::python())
        .arg(script)
        .arg(format!("http://{}/mcp", daemon.addr))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", daemon.stderr());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What a [`scripted_server`] answers: status line, content type, body.
pub type Scripted = (&'static str, &'static str, String);

/// A request as [`http_server`] read it.
pub struct Incoming {
    /// The request line.
    pub line: String,
    /// The headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, as sent.
    pub body: Vec<u8>,
}

/// A one-request-per-connection HTTP server on a free loopback port, written for one test:
/// `answer` sees each request's line, its headers (names lowercase) and its JSON body.
pub fn scripted_server(
    answer: impl Fn(&str, &[(String, String)], &Value) -> Scripted + Send + 'static,
) -> SocketAddr {
    scripted(Some("s1"), answer)
}

/// [`scripted_server`] for a server that issues no session id (2025-03-26 and later allow it).
pub fn sessionless_scripted_server(
    answer: impl Fn(&str, &[(String, String)], &Value) -> Scripted + Send + 'static,
) -> SocketAddr {
    scripted(None, answer)
}

fn scripted(
    session: Option<&'static str>,
    answer: impl Fn(&str, &[(String, String)], &Value) -> Scripted + Send + 'static,
) -> SocketAddr {
    serve_http(session, move |request| {
        let message: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let (status, kind, payload) = answer(&request.line, &request.headers, &message);
        (status.to_owned(), kind, payload)
    })
}

/// A one-request-per-connection HTTP server on a free loopback port, written for one test:
/// `answer` sees each request whole, and gives the status (with any header lines after it,
/// each after a CRLF), the content type and the body.
pub fn http_server(
    answer: impl Fn(&Incoming) -> (String, &'static str, String) + Send + 'static,
) -> SocketAddr {
    serve_http(Some("s1"), answer)
}

/// [`http_server`], its answers naming `session` as theirs.
fn serve_http(
    session: Option<&'static str>,
    answer: impl Fn(&Incoming) -> (String, &'static str, String) + Send + 'static,
) -> SocketAddr {
    use std::io::BufRead;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut headers) = (String::new(), Vec::new());
            let _ = reader.read_line(&mut line);
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
                if let Some((name, value)) = header.split_once(':') {
                    headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                }
            }
            let length = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (status, kind, payload) = answer(&Incoming {
                line,
                headers,
                body,
            });
            let session = session.map_or(String::new(), |s| format!("Mcp-Session-Id: {s}\r\n"));
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{session}Connection: close\r\n\r\n{payload}",
                payload.len()
            );
        }
    });
    addr
}

/// The answers of a legacy server with one tool, `tool`, whose call is answered by `call`: the
/// handshake, the list, 202 for notifications and 405 for GET.
pub fn one_tool_server(
    request_line: &str,
    message: &Value,
    tool: &str,
    call: impl FnOnce() -> Scripted,
) -> Scripted {
    let id = message["id"].clone();
    let json = |result: Value| {
        (
            "200 OK",
            "application/json",
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        )
    };
    match message["method"].as_str() {
        _ if request_line.starts_with("GET") => {
            ("405 Method Not Allowed", "text/plain", String::new())
        }
        Some("initialize") => json(json!({"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": tool, "version": "1"}})),
        Some("tools/list") => {
            json(json!({"tools": [{"name": tool, "inputSchema": {"type": "object"}}]}))
        }
        Some("tools/call") => call(),
        _ if id.is_null() => ("202 Accepted", "text/plain", String::new()),
        _ => json(json!({})),
    }
}
