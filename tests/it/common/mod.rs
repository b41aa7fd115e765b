//! Test harness: spawns the real `mcpx` binary with real pipes, and checks what it writes
//! against the official JSON schema of the client's revision.

pub mod cluster;
pub mod console;
pub mod deps;
pub mod http;

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any single expected message may take.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A `[daemon]` table whose first list waits for every server: for a test of what the servers
/// list, not how soon, whose client cannot wait on `mcpx__upstreams` (`upstreams_ready`).
pub const WAIT_FOR_ALL: &str = "[daemon]\nlistWait = \"2m\"\n";

/// The `[daemon]` key of a team's daemon whose `/metrics` a test reads, and its bearer.
pub const SCRAPE_KEY: &str = "metricsToken = \"scrape-9c1\"\n";

/// The `Authorization` header line that reads `/metrics` of a daemon with [`SCRAPE_KEY`].
pub fn scrape_bearer() -> String {
    "Authorization: Bearer scrape-9c1\r\n".to_owned()
}

/// How long a `mcpx serve`'s first answer may take: it waits on mcpx's start and on its
/// upstreams' handshakes, which mcpx itself gives 30 s each (a Python server's imports alone
/// take that long on a saturated machine).
const FIRST_ANSWER_PATIENCE: Duration = Duration::from_secs(90);

pub fn mcpx_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcpx"))
}

/// A binary of another workspace package, built beside mcpx. Cargo builds a package's binaries
/// for its own integration tests only, so the test builds that package itself (a no-op when it
/// is up to date) rather than trust whatever binary an earlier build left.
pub fn workspace_bin(package: &str, bin: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if !built.iter().any(|p| p == package) {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--package", package])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cannot run cargo");
        assert!(status.success(), "building {package} failed");
        built.push(package.to_owned());
    }
    mcpx_bin().parent().unwrap().join(bin)
}

/// The fixture upstream.
pub fn fixture_bin() -> String {
    workspace_bin("mcpx-fixture-upstream", "fixture-upstream")
        .display()
        .to_string()
}

/// A config with the fixture upstream named `fixture`, plus `extra` TOML.
pub fn fixture_config(extra: &str) -> String {
    format!("[servers.fixture]\ncommand = {:?}\n{extra}", fixture_bin())
}

/// What a child process writes to stderr, collected as it arrives.
pub struct Log {
    text: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Log {
    /// Collects `stderr`, showing each line to `on_line` as well.
    pub fn capture(
        stderr: std::process::ChildStderr,
        on_line: impl Fn(&str) + Send + 'static,
    ) -> Log {
        let text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                on_line(&line);
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        Log {
            text,
            reader: Some(reader),
        }
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// Waits until the log contains `text`.
    pub fn shows(&self, text: &str) -> bool {
        eventually(|| self.text().contains(text))
    }

    /// Waits until the process's stderr is closed and read to the end.
    pub fn finish(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Whether `holds` comes true within [`PATIENCE`].
pub fn eventually(holds: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if holds() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// The resident memory of process `pid`, in bytes.
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// `mcpx serve` with `options` on the configuration file `path`, its three streams piped.
pub fn serve_command(path: &std::path::Path, options: &[&str]) -> Command {
    let mut command = Command::new(mcpx_bin());
    command
        .args(["--config", path.to_str().unwrap(), "serve"])
        .args(options)
        .env("MCPX_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Gives `command` a `$XDG_CACHE_HOME` of its own, unless the test set one: a catalog an
/// earlier test's mcpx kept would list its server at once, which a fresh machine's first start
/// does not (the suite would pass only where it ran before).
pub fn own_cache(command: &mut Command) -> Option<tempfile::TempDir> {
    let named = command.get_envs().any(|(key, _)| key == "XDG_CACHE_HOME");
    if named {
        return None;
    }
    let cache = tempfile::tempdir().unwrap();
    command.env("XDG_CACHE_HOME", cache.path());
    Some(cache)
}

/// A running `mcpx serve`.
pub struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    held: VecDeque<Value>,
    log: Log,
    _config: Option<tempfile::NamedTempFile>,
    /// Its own `$XDG_CACHE_HOME`, unless the test named one (see [`own_cache`]).
    _cache: Option<tempfile::TempDir>,
    /// The daemon an attached `mcpx serve` is served by, when the test started it.
    daemon: Option<http::Daemon>,
    /// Whether mcpx has answered anything yet (see [`FIRST_ANSWER_PATIENCE`]).
    answered: bool,
}

/// Whether this test runs its `mcpx serve` through a daemon (`mcpx serve --attach`):
/// `stdio_attached` runs the stdio rules' test bodies that way. libtest names each test's
/// thread after the test, module path and all.
fn attached_mode() -> bool {
    std::thread::current()
        .name()
        .is_some_and(|name| name.starts_with("stdio_attached::"))
}

impl Serve {
    /// `mcpx serve` with `config`: on its own, or attached to a daemon running `config` in the
    /// attached mode.
    pub fn start(config: &str) -> Serve {
        let attached = attached_mode();
        if attached && mcpx::config::Config::parse(config).is_ok() {
            return Serve::through_daemon(config);
        }
        // A configuration that does not load is refused by `mcpx serve --attach` as by
        // `mcpx serve`, before any daemon is looked for.
        let options: &[&str] = if attached { &["--attach"] } else { &[] };
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(config.as_bytes()).unwrap();
        let mut serve = Serve::spawn(file.path(), options);
        serve._config = Some(file);
        serve
    }

    /// `mcpx serve` on a configuration file the test keeps.
    pub fn with_config_file(path: &std::path::Path) -> Serve {
        Serve::spawn(path, &[])
    }

    /// A daemon with `config`, and `mcpx serve --attach` on it.
    fn through_daemon(config: &str) -> Serve {
        let daemon = http::Daemon::start(config, "");
        let door = daemon.local_socket();
        let deadline = Instant::now() + PATIENCE;
        while std::os::unix::net::UnixStream::connect(&door).is_err() {
            assert!(Instant::now() < deadline, "no local socket at {door:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut serve = Serve::attached(daemon.config_path());
        serve.daemon = Some(daemon);
        serve
    }

    /// `mcpx serve --attach` on a running daemon's configuration file.
    pub fn attached(path: &std::path::Path) -> Serve {
        Serve::spawn(path, &["--attach"])
    }

    /// `mcpx serve` with `options` on a configuration file the test keeps.
    pub fn spawn(path: &std::path::Path, options: &[&str]) -> Serve {
        Serve::from_command(serve_command(path, options))
    }

    /// `mcpx serve` as `command` (a [`serve_command`] the test changed) starts it.
    pub fn from_command(mut command: Command) -> Serve {
        let cache = own_cache(&mut command);
        let mut child = command.spawn().unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let log = Log::capture(child.stderr.take().unwrap(), |_| {});
        Serve {
            stdin: child.stdin.take(),
            child,
            lines,
            held: VecDeque::new(),
            log,
            _config: None,
            _cache: cache,
            daemon: None,
            answered: false,
        }
    }

    pub fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next stdout line, which must be exactly one JSON value.
    pub fn next_line(&mut self, within: Duration) -> Option<Value> {
        if let Some(held) = self.held.pop_front() {
            return Some(held);
        }
        match self.lines.recv_timeout(within) {
            Ok(line) => Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}")),
            ),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    pub fn next(&mut self) -> Value {
        self.next_line(PATIENCE)
            .unwrap_or_else(|| panic!("no message from mcpx; stderr:\n{}", self.stderr()))
    }

    /// Waits for the response with this id; other messages are kept for later reads.
    pub fn response(&mut self, id: i64) -> Value {
        let patience = match std::mem::replace(&mut self.answered, true) {
            true => PATIENCE,
            false => FIRST_ANSWER_PATIENCE,
        };
        let deadline = Instant::now() + patience;
        let mut skipped = Vec::new();
        // One that arrived while another was awaited is answered from what was kept.
        if let Some(found) = self
            .held
            .iter()
            .position(|m| m["id"] == id && m.get("method").is_none())
        {
            return self.held.remove(found).unwrap();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.lines.recv_timeout(left) {
                Ok(line) => serde_json::from_str::<Value>(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
                Err(_) => panic!(
                    "no response {id}; got {skipped:?}; stderr:\n{}",
                    self.stderr()
                ),
            };
            if let Some(found) = self
                .held
                .iter()
                .position(|m| m["id"] == id && m.get("method").is_none())
            {
                let found = self.held.remove(found).unwrap();
                self.held.push_back(message);
                return found;
            }
            if message["id"] == id && message.get("method").is_none() {
                self.held.extend(skipped);
                return message;
            }
            skipped.push(message);
        }
    }

    /// Sends a request and waits for its response.
    pub fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params);
        self.response(id)
    }

    /// Waits until `mcpx__upstreams` shows every upstream ready, within twice [`PATIENCE`] (as
    /// [`http::Daemon::upstreams_ready`] does with `/healthz`): a test whose subject is not a
    /// slow start begins after this, since the first list waits only `[daemon] listWait` for a
    /// server starting. Call after `initialize`; its requests take ids from -1 down.
    pub fn upstreams_ready(&mut self) -> bool {
        let deadline = Instant::now() + 2 * PATIENCE;
        let mut id = -1;
        while Instant::now() < deadline {
            let report = self.call(
                id,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            let upstreams = report["result"]["structuredContent"]["upstreams"].as_array();
            if upstreams.is_some_and(|all| all.iter().all(|u| u["state"] == "ready")) {
                return true;
            }
            id -= 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The legacy handshake at `revision`.
    pub fn initialize(&mut self, revision: &str) -> Value {
        let response = self.call(
            0,
            "initialize",
            json!({"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        self.notify("notifications/initialized", json!({}));
        response
    }

    /// Messages held back while waiting for a response, and any that arrive within `within`.
    pub fn drain(&mut self, within: Duration) -> Vec<Value> {
        let mut all: Vec<Value> = self.held.drain(..).collect();
        while let Some(m) = self.next_line(within) {
            all.push(m);
        }
        all
    }

    /// Kills mcpx with SIGKILL: no chance to clean up.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    pub fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let status = wait_exit(&mut self.child, within)?;
        self.log.finish();
        Some(status)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// mcpx's log: its stderr, and its daemon's when it is attached.
    pub fn stderr(&self) -> String {
        let daemon = self.daemon.as_ref().map(http::Daemon::stderr);
        self.log.text() + &daemon.unwrap_or_default()
    }

    /// Waits until mcpx's log contains `text`.
    pub fn log_shows(&self, text: &str) -> bool {
        eventually(|| self.stderr().contains(text))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to `within` for `child` to exit; its status, or `None` if it is still running.
pub fn wait_exit(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What `mcpx status --json` says of the mcpx running on the configuration at `config`.
pub fn status_json(config: &std::path::Path) -> Value {
    let out = Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .args(["status", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// `params` with a valid 2026-07-28 envelope added (declaring no capabilities, unless the
/// params already declare some).
pub fn modern(mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    let meta = &mut params["_meta"];
    if meta
        .get("io.modelcontextprotocol/clientCapabilities")
        .is_none()
    {
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    }
    params
}

fn schema(revision: &str) -> Value {
    let path = format!(
        "{}/tests/spec/{revision}/schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap()
}

/// Asserts that `instance` is a valid `definition` of `revision`'s official schema.
pub fn assert_schema(revision: &str, definition: &str, instance: &Value) {
    let mut document = schema(revision);
    let defs = if document.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    assert!(
        document[defs].get(definition).is_some(),
        "{revision} has no {definition}"
    );
    document["$ref"] = json!(format!("#/{defs}/{definition}"));
    let validator = jsonschema::validator_for(&document).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{revision} {definition} invalid: {errors:?}\n{instance:#}"
    );
}

/// Asserts that a response's result is its method's result type in `revision`'s schema.
pub fn assert_result(revision: &str, method: &str, response: &Value) {
    let definition = match method {
        "initialize" => "InitializeResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "completion/complete" => "CompleteResult",
        "server/discover" => "DiscoverResult",
        _ => "Result",
    };
    assert!(
        response.get("result").is_some(),
        "{method} failed: {response}"
    );
    assert_schema(revision, definition, &response["result"]);
    let envelope = if revision < "2025-11-25" {
        "JSONRPCResponse"
    } else {
        "JSONRPCResultResponse"
    };
    assert_schema(revision, envelope, response);
}

/// Asserts that an error response is a JSON-RPC error in `revision`'s schema.
pub fn assert_error(revision: &str, response: &Value) {
    let envelope = if revision < "2025-11-25" {
        "JSONRPCError"
    } else {
        "JSONRPCErrorResponse"
    };
    assert_schema(revision, envelope, response);
}

/// The text of the first content item of the tool result in `answer` (empty when there is none).
pub fn tool_text(answer: &Value) -> String {
    let text = answer["result"]["content"][0]["text"].as_str();
    text.unwrap_or_default().to_owned()
}
