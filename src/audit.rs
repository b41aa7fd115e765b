//! The audit log (`[audit] path`): one JSON line per `tools/call`, `prompts/get`,
//! `resources/read` and question mcpx put to a client on an upstream's behalf: when, through
//! which door, which client (session, `clientInfo`, profile), what was named and where it went,
//! how it ended and how long it took, and an HMAC-SHA-256 of the arguments under the
//! installation's key (`[audit] keyFile`; their values only with `[audit] arguments = true`): a
//! plain hash of `{"path":"/etc/passwd"}` is found by hashing guesses, a keyed one is not, yet
//! equal arguments still show as equal.
//!
//! Lines are handed to a writer thread through a bounded queue, so a call never waits for the
//! disk; a full queue drops the line and says so in mcpx's log. The file is rotated by size
//! (`FILE.1` … `FILE.keep`) and reopened on SIGHUP, so logrotate can move it away.

use crate::config::Audit as AuditConfig;
use crate::ledger::{Ledger, SessionKey};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How many lines may wait for the writer.
const QUEUE: usize = 65_536;

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    lines: SyncSender<Message>,
    ledger: Arc<Ledger>,
    arguments: bool,
    /// What the arguments' digest is keyed with.
    key: Hmac<Sha256>,
    dropped: AtomicU64,
}

enum Message {
    Line(Vec<u8>),
    Reopen,
}

/// One audited operation.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The session it came from.
    pub session: SessionKey,
    /// The method (`tools/call`, `elicitation/create`, …).
    pub method: &'a str,
    /// The name or URI the client used.
    pub name: Option<&'a str>,
    /// The server that answered.
    pub upstream: Option<&'a str>,
    /// Its own name for what was named.
    pub upstream_name: Option<&'a str>,
    /// `ok`, `tool_error`, `cancelled`, `timeout`, `asked` or a JSON-RPC error code.
    pub outcome: &'a str,
    /// How long it took.
    pub took: Duration,
    /// The arguments the client sent.
    pub arguments: Option<&'a Value>,
    /// Who sent it (never its token).
    pub caller: Option<&'a crate::access::Identity>,
    /// The `clientInfo` the request itself carried (2026-07-28's `_meta`): it names the client
    /// where no session does.
    pub client: Option<&'a Value>,
    /// The person's own instance it went to, of a per-identity server: whether this call
    /// started it, and whom the server knows it as (by token exchange: the subject and `act`).
    pub instance: Option<&'a Value>,
    /// What `[guardrails]` found in its result: each kind, what was done, how often (never a
    /// value).
    pub guardrails: Option<&'a Value>,
    /// Who decided a call held for approval (`[approvals]`).
    pub decided_by: Option<&'a str>,
}

impl AuditLog {
    /// Opens the log `config` names (creating its directory), or says why it cannot.
    pub fn open(config: &AuditConfig, ledger: Arc<Ledger>) -> std::io::Result<Arc<AuditLog>> {
        let path = config.path.clone().unwrap_or_default();
        let file = open_append(&path)?;
        let key = installation_key(&config.key_file).map_err(|e| {
            std::io::Error::new(e.kind(), format!("{}: {e}", config.key_file.display()))
        })?;
        let key = Hmac::<Sha256>::new_from_slice(&key).map_err(std::io::Error::other)?;
        let (lines, queue) = mpsc::sync_channel(QUEUE);
        let writer = Writer {
            path,
            file,
            max_bytes: config.max_bytes,
            keep: config.keep,
        };
        std::thread::Builder::new()
            .name("mcpx-audit".into())
            .spawn(move || writer.run(queue))?;
        Ok(Arc::new(AuditLog {
            lines,
            ledger,
            arguments: config.arguments,
            key,
            dropped: AtomicU64::new(0),
        }))
    }

    /// Writes one line for `entry` (later, on the writer thread).
    pub fn record(&self, entry: &Entry<'_>) {
        let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        let mut line = json!({ "time": now });
        if let Value::Object(who) = self.ledger.who(entry.session) {
            if let Some(line) = line.as_object_mut() {
                line.extend(who);
            }
        }
        if let Some(client) = entry.client {
            line["client"] = client.clone();
        }
        if let Some(caller) = entry.caller {
            line["caller"] = caller.audited();
        }
        if let Some(instance) = entry.instance {
            line["instance"] = instance.clone();
        }
        if let Some(found) = entry.guardrails {
            line["guardrails"] = found.clone();
        }
        if let Some(by) = entry.decided_by {
            line["decidedBy"] = json!(by);
        }
        line["method"] = json!(entry.method);
        if let Some(name) = entry.name {
            line["name"] = json!(name);
        }
        if let Some(server) = entry.upstream {
            line["upstream"] = json!(server);
        }
        if let Some(own_name) = entry.upstream_name {
            line["upstreamName"] = json!(own_name);
        }
        line["outcome"] = json!(entry.outcome);
        line["durationMs"] = json!((entry.took.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0);
        if let Some(arguments) = entry.arguments {
            let canonical = serde_json::to_vec(arguments).unwrap_or_default();
            let mut digest = self.key.clone();
            digest.update(&canonical);
            line["argumentsHmacSha256"] = json!(hex::encode(digest.finalize().into_bytes()));
            if self.arguments {
                line["arguments"] = arguments.clone();
            }
        }
        // Names and client information in it may be anyone's: no text that reads reversed.
        let text = crate::log_writer::escape_bidi_in_json(line.to_string());
        let mut bytes = text.into_bytes();
        bytes.push(b'\n');
        self.send(Message::Line(bytes));
    }

    /// Reopens the file at its path (after logrotate moved it away): SIGHUP.
    pub fn reopen(&self) {
        self.send(Message::Reopen);
    }

    fn send(&self, message: Message) {
        if let Err(TrySendError::Full(_)) = self.lines.try_send(message) {
            // Said once per thousand, not once per line.
            if self.dropped.fetch_add(1, Ordering::Relaxed) % 1000 == 0 {
                tracing::warn!("the audit log's writer is behind: audit lines are being dropped");
            }
        }
    }
}

/// Where a call's questions to its client are recorded: the call's session, caller and server.
#[derive(Debug, Clone)]
pub struct Questions {
    log: Arc<AuditLog>,
    session: SessionKey,
    caller: crate::access::Identity,
    server: String,
}

impl Questions {
    /// The questions of `caller`'s call from `session` to `server`.
    pub fn new(
        log: &Arc<AuditLog>,
        session: SessionKey,
        caller: &crate::access::Identity,
        server: &str,
    ) -> Questions {
        Questions {
            log: Arc::clone(log),
            session,
            caller: caller.clone(),
            server: server.to_owned(),
        }
    }

    /// Records one question (`method`) and how it ended.
    pub fn record(&self, method: &str, outcome: &str, took: Duration) {
        self.log.record(&Entry {
            session: self.session,
            method,
            name: None,
            upstream: Some(&self.server),
            upstream_name: None,
            outcome,
            took,
            arguments: None,
            caller: Some(&self.caller),
            client: None,
            instance: None,
            guardrails: None,
            decided_by: None,
        });
    }
}

/// The writer thread's side.
struct Writer {
    path: PathBuf,
    file: File,
    max_bytes: u64,
    keep: usize,
}

impl Writer {
    fn run(mut self, queue: Receiver<Message>) {
        while let Ok(message) = queue.recv() {
            let result = match message {
                Message::Line(line) => self.write(&line),
                Message::Reopen => open_append(&self.path).map(|file| self.file = file),
            };
            if let Err(e) = result {
                tracing::warn!("audit log {}: {e}", self.path.display());
            }
        }
    }

    /// Appends one line in one write. A line is in the log whole or not at all: what a short
    /// write (a full disk, a file size limit) left of it is taken back.
    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        let before = self.file.metadata()?.len();
        let written = self.file.write(line);
        if !matches!(written, Ok(n) if n == line.len()) {
            let _ = self.file.set_len(before);
            return Err(match written {
                Err(e) => e,
                Ok(n) => std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    format!(
                        "only {n} of a line's {} bytes could be written; the line was taken back",
                        line.len()
                    ),
                ),
            });
        }
        if before + line.len() as u64 >= self.max_bytes {
            self.rotate()?;
        }
        Ok(())
    }

    /// `FILE` becomes `FILE.1`, `FILE.1` becomes `FILE.2`, …, and what would pass `keep` goes.
    fn rotate(&mut self) -> std::io::Result<()> {
        let numbered = |n: usize| PathBuf::from(format!("{}.{n}", self.path.display()));
        let _ = std::fs::remove_file(numbered(self.keep));
        for n in (1..self.keep).rev() {
            let _ = std::fs::rename(numbered(n), numbered(n + 1));
        }
        if self.keep > 0 {
            std::fs::rename(&self.path, numbered(1))?;
        } else {
            std::fs::remove_file(&self.path)?;
        }
        self.file = open_append(&self.path)?;
        Ok(())
    }
}

/// The installation's key, read from `path`, or made there (32 random bytes, 0600) when missing.
/// One that others can read is refused: it would make the digests guessable again.
fn installation_key(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    match std::fs::metadata(path) {
        Ok(meta) if meta.mode() & 0o077 != 0 => Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the audit key is readable by others: chmod 600 it",
        )),
        Ok(_) => std::fs::read(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::private_file::create_dir(dir)?;
            }
            let mut key = vec![0u8; 32];
            getrandom::fill(&mut key).map_err(std::io::Error::other)?;
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)?;
            file.write_all(&key)?;
            Ok(key)
        }
        Err(e) => Err(e),
    }
}

/// The file, opened to append (0600: it names what users did), its directory created.
fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private_file::create_dir(dir)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod every_revision {
    mod audit {
        use crate::audit::{AuditLog, Entry};
        use crate::config::Audit;
        use crate::ledger::Ledger;
        use serde_json::{json, Value};
        use std::time::Duration;

        fn lines(path: &std::path::Path) -> Vec<Value> {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }

        #[test]
        fn a_line_hashes_the_arguments_and_rotation_keeps_the_newest_files() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.jsonl");
            let config = Audit {
                path: Some(path.clone()),
                arguments: false,
                max_bytes: 600,
                keep: 2,
                key_file: dir.path().join("keys").join("audit.key"),
            };
            let ledger = Ledger::new();
            let session = ledger.open_session("stdio", Some("coding"));
            let log = AuditLog::open(&config, ledger).unwrap();
            let secret = json!({"token": "hunter2"});
            for _ in 0..6 {
                log.record(&Entry {
                    session,
                    method: "tools/call",
                    name: Some("gh__create_issue"),
                    upstream: Some("gh"),
                    upstream_name: Some("create_issue"),
                    outcome: "ok",
                    took: Duration::from_millis(3),
                    arguments: Some(&secret),
                    caller: None,
                    client: None,
                    instance: None,
                    guardrails: None,
                    decided_by: None,
                });
            }
            let all = || {
                [
                    path.clone(),
                    dir.path().join("audit.jsonl.1"),
                    dir.path().join("audit.jsonl.2"),
                ]
                .iter()
                .flat_map(|p| lines(p))
                .collect::<Vec<_>>()
            };
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while all().len() < 4 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(all().len() >= 4, "{:?}", all());
            assert!(!dir.path().join("audit.jsonl.3").exists());
            let line = &all()[0];
            assert_eq!(line["profile"], "coding");
            assert_eq!(line["door"], "stdio");
            assert_eq!(line["upstreamName"], "create_issue");
            assert!(!line.to_string().contains("hunter2"));
            // Keyed: the digest is the HMAC under the key made for the installation, 0600.
            use hmac::{Hmac, Mac};
            use std::os::unix::fs::PermissionsExt;
            let key = std::fs::read(&config.key_file).unwrap();
            assert_eq!(key.len(), 32);
            let mode = std::fs::metadata(&config.key_file)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mut expected = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
            expected.update(secret.to_string().as_bytes());
            let expected = hex::encode(expected.finalize().into_bytes());
            assert_eq!(line["argumentsHmacSha256"], expected.as_str());
        }
    }
}
