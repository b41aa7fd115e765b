//! A stdio upstream: a child process speaking newline-delimited JSON-RPC on its stdin and stdout.
//!
//! One task writes the [`Peer`]'s messages to the child as lines, one reads its stdout into the
//! peer, and one copies its stderr into mcpx's log tagged with the server's name. When stdout
//! ends the process is gone, and so is the conversation.

use super::chatter::Chatter;
use super::child_environment::{self, PersonHome};
use super::client::{self, FirstTry};
use super::last_words::LastWords;
use super::peer::Peer;
use super::{Event, Handshake, LinkId};
use crate::cancel::Cancel;
use crate::config::{private_tmp_of, Credentials, ServerKind, ServerSettings, UpstreamEra};
use crate::failure::Failure;
use crate::jsonrpc::{self, Frame, Id};
use crate::lines::{self, IdScanner};
use crate::sandbox::cgroup::ServerCgroup;
use crate::sandbox::{Report, Spec, REPORT_PREFIX};
use crate::sync::lock;
use async_channel::Sender;
use smol::io::{AsyncWriteExt, BufReader};
use smol::process::{Child, Command, Stdio};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// From this length on, a line is parsed on the blocking pool: parsing megabytes of JSON takes
/// milliseconds, which on an executor thread would hold up every other upstream's calls.
const PARSE_ELSEWHERE: usize = 256 * 1024;

/// The longest stderr line logged (and the most of a stdout line that is not JSON-RPC); the rest
/// of a longer one is cut.
pub const MAX_STDERR_LINE: usize = 4096;

/// How long an upstream whose stdout closed gets to finish its stderr and exit, for the
/// reason it ended.
const LAST_WORDS_PATIENCE: Duration = Duration::from_millis(500);

/// A running stdio upstream.
#[derive(Debug)]
pub struct StdioUpstream {
    peer: Peer,
    /// The server's process group (its pid), killed whole when it stops.
    process_group: u32,
    /// Which era to handshake in.
    era_choice: UpstreamEra,
    /// Which handshake `auto` tries first.
    first_try: FirstTry,
    /// Fired when the server's stderr ends, so shutdown can wait until its last words are logged.
    stderr_closed: Cancel,
    /// What it said last there, for the reason it ended.
    last_words: Arc<LastWords>,
    /// `transport.maxMessageBytes`: a longer line on stdout is read past, never held.
    max_message_bytes: usize,
    child: Mutex<Option<Child>>,
    /// Its supervisor registered as mcpx's own, so that no sweep of strays takes it for one.
    _own: super::orphans::Own,
    /// A sandboxed server's cgroup, removed once the server is gone.
    _cgroup: Option<ServerCgroup>,
}

/// How mcpx starts its stdio upstreams.
#[derive(Debug, Clone, Copy)]
pub struct Spawning<'a> {
    /// The program that starts each so that it dies with mcpx (see [`super::supervisor`]);
    /// `None` starts it directly.
    pub launcher: Option<&'a Path>,
    /// The longest line it may write.
    pub max_message_bytes: usize,
    /// Which handshake `era = "auto"` tries first: `server/discover`, unless the server is
    /// known to exit on it.
    pub first_try: FirstTry,
    /// Where a sandboxed server's [`Report`] goes, for its status.
    pub sandbox_report: &'a Arc<Mutex<Option<Report>>>,
}

impl StdioUpstream {
    /// Spawns the server and starts its reader, writer and stderr tasks. Events go to `events`
    /// tagged with `index` and `generation`. A stdout line longer than `max_message_bytes` is
    /// read past, and a stderr line is cut at [`MAX_STDERR_LINE`], so the server cannot make
    /// mcpx hold more than that.
    ///
    /// The server runs in a process group of its own, so that stopping it also stops what it
    /// started (an `npx` wrapper's node, say). With a `launcher` (the mcpx binary), it is started
    /// under `mcpx-exec-upstream` ([`super::supervisor`]), which takes the whole tree down when
    /// mcpx dies, even by SIGKILL.
    pub fn spawn(
        name: &str,
        link: LinkId,
        server: ServerSettings<'_>,
        how: &Spawning<'_>,
        events: Sender<Event>,
    ) -> Result<Arc<Self>, String> {
        let ServerKind::Stdio(spec) = server.kind() else {
            return Err(format!("{name} is reached over HTTP, not started"));
        };
        let program = spec.command;
        let sandbox_tmp = spec.sandbox.map(|_| private_tmp_of(name));
        let person_home = match (&sandbox_tmp, server.credentials) {
            (None, Credentials::PerIdentity) => Some(PersonHome::of(name)?),
            (Some(_), _) | (None, Credentials::Shared) => None,
        };
        let environment =
            child_environment::for_child(server, sandbox_tmp.as_deref(), person_home.as_ref());
        let supervisor = how.launcher.map(super::supervisor::Binary::beside);
        // mcpx as a supervisor keeps its allocator small; the server gets its environment as it
        // was.
        let (quiet, quiet_value) = super::supervisor::ALLOCATOR_QUIET;
        let quiet_allocator = matches!(supervisor, Some(super::supervisor::Binary::Mcpx(_)))
            && !environment.iter().any(|(n, _)| n == quiet);
        let mut command = match &supervisor {
            Some(supervisor) => {
                let mut command = supervisor.command();
                if quiet_allocator {
                    command.args(["--unset", quiet]);
                }
                command.arg("--");
                command
            }
            None => std::process::Command::new(program),
        };
        let mut server_cgroup = None;
        if let (Some(sandbox), Some(tmp)) = (spec.sandbox, &sandbox_tmp) {
            let Some(launcher) = how.launcher else {
                return Err(
                    "a sandboxed server is started by the mcpx binary, which was not found".into(),
                );
            };
            let path = environment
                .iter()
                .find(|(name, _)| name == "PATH")
                .and_then(|(_, value)| value.to_str());
            let mut spec = Spec::for_server(sandbox, program, path, tmp)?;
            server_cgroup = ServerCgroup::for_spec(&mut spec, name);
            let spec = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
            command
                .arg(launcher)
                .args(["__sandbox-exec", "--spec", &spec, "--"]);
        }
        if how.launcher.is_some() {
            command.arg(program);
        }
        command
            .args(&server.expanded.args)
            .env_clear()
            .envs(environment)
            .process_group(0);
        if quiet_allocator {
            command.env(quiet, quiet_value);
        }
        if let Some(cwd) = spec.cwd {
            command.current_dir(cwd);
        }
        let mut command = Command::from(command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let (mut child, own) = super::orphans::spawn_own(|| command.spawn(), Child::id)
            .map_err(|e| format!("cannot start {program:?}: {e}"))?;
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(mut stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            return Err("the child's pipes were not created".into());
        };
        let (peer, outgoing) = Peer::new(name, link, server.timeout(), events.clone());
        let upstream = Arc::new(StdioUpstream {
            peer,
            stderr_closed: Cancel::new(),
            last_words: Arc::default(),
            process_group: child.id(),
            child: Mutex::new(Some(child)),
            _own: own,
            era_choice: server.era,
            first_try: how.first_try,
            max_message_bytes: how.max_message_bytes,
            _cgroup: server_cgroup,
        });
        crate::runtime::spawn(async move {
            // Lines queued together go out in one write: a syscall per line would dominate a
            // busy upstream.
            let mut batch = String::new();
            while let Ok(message) = outgoing.recv().await {
                batch.push_str(&message);
                batch.push('\n');
                while let Ok(more) = outgoing.try_recv() {
                    batch.push_str(&more);
                    batch.push('\n');
                    if batch.len() >= 64 * 1024 {
                        break;
                    }
                }
                if stdin.write_all(batch.as_bytes()).await.is_err() || stdin.flush().await.is_err()
                {
                    break;
                }
                batch.clear();
            }
        })
        .detach();
        let tag = name.to_owned();
        let public = child_environment::given_to_every_child();
        let secrets = crate::redact::pieces(&server.expanded.secrets, &public);
        let shown_secrets = secrets.clone();
        let stderr_closed = upstream.stderr_closed.clone();
        let last_words = Arc::clone(&upstream.last_words);
        let chatter = Chatter::new(name, "stderr lines");
        let sandbox_report = server
            .sandbox
            .as_ref()
            .map(|_| Arc::clone(how.sandbox_report));
        crate::runtime::spawn(async move {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            if let Some(slot) = sandbox_report {
                // The helper's report is its first line; later lines are the server's own, so
                // a server cannot pass itself off as confined.
                if let lines::Read::Line =
                    lines::read_line(&mut stderr, &mut line, MAX_STDERR_LINE * 4, |_| {}).await
                {
                    take_report(&tag, &line, &slot);
                }
            }
            // Read at the server's pace, whatever is kept: a line the log filter or the
            // allowance drops costs its read and nothing else, so a server logging each call
            // never waits on this pipe (its stdout, and so its answers, would wait with it).
            loop {
                let length =
                    match lines::read_line(&mut stderr, &mut line, MAX_STDERR_LINE, |_| {}).await {
                        lines::Read::Eof => break,
                        lines::Read::Line => None,
                        lines::Read::TooLong { length } => Some(length),
                    };
                last_words.heard(&line);
                if !tracing::enabled!(target: "upstream", tracing::Level::INFO) || !chatter.admit()
                {
                    continue;
                }
                let cut = match length {
                    None => String::new(),
                    Some(length) => {
                        line.truncate(MAX_STDERR_LINE);
                        format!(" [cut: {length} bytes]")
                    }
                };
                let text = String::from_utf8_lossy(&line);
                let text = crate::redact::mask(&text, &secrets);
                tracing::info!(target: "upstream", server = %tag, "{text}{cut}");
            }
            stderr_closed.cancel();
        })
        .detach();
        let reader = Arc::clone(&upstream);
        crate::runtime::spawn(async move {
            reader.read_stdout(BufReader::new(stdout)).await;
            let reason = reader.ending(&shown_secrets).await;
            let reason = format!("exited {reason}");
            reader.peer.end(reason.clone());
            match reader.peer.closed_by_us() {
                true => tracing::info!(server = %reader.peer.name(), "upstream stopped: {reason}"),
                false => tracing::warn!(server = %reader.peer.name(), "upstream {reason}"),
            }
            let _ = events.send(Event::Exited { link, reason }).await;
        })
        .detach();
        Ok(upstream)
    }

    /// Handshakes in the configured era, in `auto` in the order [`Spawning::first_try`] says
    /// (see [`super::client`] for why), `within` its start timeout.
    pub async fn handshake(&self, within: Duration) -> Result<Handshake, String> {
        client::handshake(&self.peer, self.era_choice, self.first_try, within).await
    }

    /// The conversation with the server.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Shuts the server down the way MCP's stdio transport says: close its stdin, give it `grace`
    /// to exit, then kill it.
    pub async fn shutdown(&self, grace: Duration) {
        self.peer.close();
        let exited = async {
            self.peer.ended().cancelled().await;
            self.stderr_closed.cancelled().await;
        };
        smol::future::or(exited, async {
            smol::Timer::after(grace).await;
        })
        .await;
        self.stop();
    }

    /// Stops the server at once: closes its stdin and kills its whole process group, and any
    /// stray of its tree that mcpx adopted.
    pub fn stop(&self) {
        self.peer.close();
        if let Some(group) = rustix::process::Pid::from_raw(self.process_group as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        if let Some(mut child) = lock(&self.child).take() {
            let _ = child.kill();
        }
        super::orphans::sweep();
    }

    /// How the server ended, once its stdout closed: its exit status and its last words on
    /// stderr, each given a moment to arrive (a process whose stdout closed is exiting).
    async fn ending(&self, secrets: &[String]) -> String {
        if self.peer.closed_by_us() {
            return "(its stdout closed)".into();
        }
        let said = self.stderr_closed.cancelled();
        smol::future::or(said, crate::deadline::sleep(LAST_WORDS_PATIENCE)).await;
        let mut status = None;
        for _ in 0..10 {
            status = lock(&self.child)
                .as_mut()
                .and_then(|child| child.try_status().ok().flatten());
            if status.is_some() {
                break;
            }
            smol::Timer::after(LAST_WORDS_PATIENCE / 10).await;
        }
        let code = status.map(|s| {
            use std::os::unix::process::ExitStatusExt;
            s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
        });
        self.last_words.ending(code, secrets)
    }

    /// Reads the server's stdout until it closes (the process is ending).
    async fn read_stdout(&self, mut stdout: impl smol::io::AsyncBufRead + Unpin) {
        let mut buf = Vec::new();
        loop {
            let mut answered = IdScanner::default();
            let read = lines::read_line(&mut stdout, &mut buf, self.max_message_bytes, |piece| {
                answered.feed(piece)
            });
            match read.await {
                lines::Read::Eof => return,
                lines::Read::TooLong { length } => {
                    self.refuse_oversized(length, answered.id());
                    continue;
                }
                lines::Read::Line => {}
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let frame = if buf.len() >= PARSE_ELSEWHERE {
                let line = std::mem::take(&mut buf);
                let (line, frame) = smol::unblock(move || {
                    let frame = jsonrpc::parse_frame(&line);
                    (line, frame)
                })
                .await;
                buf = line;
                frame
            } else {
                jsonrpc::parse_frame(&buf)
            };
            match frame {
                Ok(Frame::Single(message)) => self.peer.receive(message).await,
                Ok(Frame::Batch(messages)) => {
                    for message in messages.into_iter().flatten() {
                        self.peer.receive(message).await;
                    }
                }
                Err(_) => {
                    let shown = String::from_utf8_lossy(&buf[..buf.len().min(MAX_STDERR_LINE)]);
                    tracing::warn!(server = %self.peer.name(), "ignored a line of {} bytes that is not JSON-RPC: {}", buf.len(), shown.trim_end())
                }
            }
        }
    }

    /// A message too long to take: logged with its size, and the request it answers (if its id
    /// could be read) fails at once rather than at its timeout.
    fn refuse_oversized(&self, length: u64, id: Option<&Id>) {
        let cap = self.max_message_bytes;
        tracing::warn!(server = %self.peer.name(), "discarded a message of {length} bytes, over transport.maxMessageBytes ({cap})");
        if let Some(id) = id {
            let why = format!(
                "answered with {length} bytes, more than transport.maxMessageBytes ({cap})"
            );
            self.peer.fail(id, Failure::gone(self.peer.name(), why));
        }
    }

    /// Whether the process is still running.
    pub fn is_alive(&self) -> bool {
        self.peer.is_open()
    }
}

/// Keeps the helper's report for server `name`'s status and logs what it says.
fn take_report(name: &str, line: &[u8], slot: &Mutex<Option<Report>>) {
    let text = String::from_utf8_lossy(line);
    let report = text
        .trim_end()
        .strip_prefix(REPORT_PREFIX)
        .and_then(|json| serde_json::from_str::<Report>(json).ok());
    let report = report.unwrap_or_else(|| Report {
        enforced: Vec::new(),
        missing: vec![format!(
            "the sandbox helper did not report: {}",
            text.trim_end()
        )],
    });
    match report.is_degraded() {
        true => tracing::warn!(server = %name, "sandbox degraded: {}", report.summary()),
        false => tracing::info!(server = %name, "sandbox: {}", report.summary()),
    }
    *lock(slot) = Some(report);
}

impl Drop for StdioUpstream {
    fn drop(&mut self) {
        self.stop();
    }
}
