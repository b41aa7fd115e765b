//! A stdio upstream: a child process speaking newline-delimited JSON-RPC on its stdin and stdout.
//!
//! One task writes lines to the child, one reads its stdout and settles the pending requests by
//! id, and one copies its stderr into mcpx's log tagged with the server's name. When stdout ends
//! the process is gone: every pending request fails at once with an error naming the server, so no
//! caller waits on a dead upstream.

use super::asks::{self, Askers};
use super::client::{self, FirstTry, Wire};
use super::failure::Failure;
use super::{Caller, Event, Handshake, ProgressSink};
use crate::cancel::Cancel;
use crate::config::{Server, UpstreamEra};
use crate::environment;
use crate::jsonrpc::{self, ErrorObject, Frame, Id, Message, Notification, Request, Response};
use crate::lines::{self, IdScanner};
use crate::protocol::envelope;
use crate::protocol::Era;
use crate::sync::lock;
use async_channel::Sender;
use serde_json::{json, Value};
use smol::io::{AsyncWriteExt, BufReader};
use smol::process::{Child, Command, Stdio};
use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest stderr line logged (and the most of a stdout line that is not JSON-RPC); the rest
/// of a longer one is cut.
pub const MAX_STDERR_LINE: usize = 4096;

type Reply = Result<Value, ErrorObject>;

/// A running stdio upstream.
#[derive(Debug)]
pub struct StdioUpstream {
    name: String,
    lines: Sender<String>,
    pending: Mutex<HashMap<i64, Sender<Reply>>>,
    progress: Mutex<HashMap<String, ProgressSink>>,
    /// The calls in flight whose clients can take the server's own requests.
    askers: Askers,
    next_id: AtomicI64,
    era: Mutex<Era>,
    exited: Cancel,
    /// The server's process group (its pid), killed whole when it stops.
    process_group: u32,
    /// How long a request may go unanswered.
    timeout: Duration,
    /// Which era to handshake in.
    era_choice: UpstreamEra,
    /// Fired when the server's stderr ends, so shutdown can wait until its last words are logged.
    stderr_closed: Cancel,
    /// `transport.maxMessageBytes`: a longer line on stdout is read past, never held.
    max_message_bytes: usize,
    child: Mutex<Option<Child>>,
}

impl Wire for StdioUpstream {
    fn set_era(&self, era: Era) {
        *lock(&self.era) = era;
    }

    async fn send(&self, method: &str, params: Option<Value>) -> Reply {
        self.request(method, params, &Cancel::new(), Caller::default())
            .await
    }

    async fn deliver(&self, method: &str, params: Option<Value>) {
        // Lines go out in order: what is sent next reaches the server after it.
        self.notify(method, params)
    }
}

impl StdioUpstream {
    /// Spawns the server and starts its reader, writer and stderr tasks. Events go to `events`
    /// tagged with `index` and `generation`. A stdout line longer than `max_message_bytes` is
    /// read past, and a stderr line is cut at [`MAX_STDERR_LINE`], so the server cannot make
    /// mcpx hold more than that.
    ///
    /// The server runs in a process group of its own, so that stopping it also stops what it
    /// started (an `npx` wrapper's node, say). With a `launcher` (the mcpx binary), it is started
    /// through `mcpx exec-upstream`, which asks the kernel to kill it when mcpx dies, even by
    /// SIGKILL, before it becomes the server.
    pub fn spawn(
        name: &str,
        index: usize,
        generation: u64,
        server: &Server,
        launcher: Option<&Path>,
        max_message_bytes: usize,
        events: Sender<Event>,
    ) -> Result<Arc<Self>, String> {
        let program = server.command.as_deref().unwrap_or_default();
        let mut command = match launcher {
            Some(launcher) => {
                let mut command = std::process::Command::new(launcher);
                command.args(["exec-upstream", "--", program]);
                command
            }
            None => std::process::Command::new(program),
        };
        command
            .args(&server.args)
            .env_clear()
            .envs(environment::for_child(server)?)
            .process_group(0);
        if let Some(cwd) = &server.cwd {
            command.current_dir(cwd);
        }
        let mut command = Command::from(command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {program:?}: {e}"))?;
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(mut stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
            return Err("the child's pipes were not created".into());
        };
        let (lines, outgoing) = async_channel::unbounded::<String>();
        let upstream = Arc::new(StdioUpstream {
            name: name.to_owned(),
            lines,
            pending: Mutex::default(),
            progress: Mutex::default(),
            askers: Askers::default(),
            next_id: AtomicI64::new(1),
            era: Mutex::new(Era::Legacy),
            exited: Cancel::new(),
            stderr_closed: Cancel::new(),
            process_group: child.id(),
            child: Mutex::new(Some(child)),
            timeout: server.timeout(),
            era_choice: server.era,
            max_message_bytes,
        });
        smol::spawn(async move {
            // Lines queued together go out in one write: a syscall per line would dominate a
            // busy upstream.
            let mut batch = String::new();
            while let Ok(line) = outgoing.recv().await {
                batch.push_str(&line);
                while let Ok(more) = outgoing.try_recv() {
                    batch.push_str(&more);
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
        let stderr_closed = upstream.stderr_closed.clone();
        smol::spawn(async move {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                let cut =
                    match lines::read_line(&mut stderr, &mut line, MAX_STDERR_LINE, |_| {}).await {
                        lines::Read::Eof => break,
                        lines::Read::Line => String::new(),
                        lines::Read::TooLong { length } => {
                            line.truncate(MAX_STDERR_LINE);
                            format!(" [cut: {length} bytes]")
                        }
                    };
                let text = String::from_utf8_lossy(&line);
                tracing::info!(target: "upstream", server = %tag, "{text}{cut}");
            }
            stderr_closed.cancel();
        })
        .detach();
        let reader = Arc::clone(&upstream);
        smol::spawn(async move {
            let reason = reader
                .read_stdout(BufReader::new(stdout), index, &events)
                .await;
            reader.fail_pending(&reason);
            tracing::warn!(server = %reader.name, "upstream exited: {reason}");
            let _ = events
                .send(Event::Exited {
                    upstream: index,
                    generation,
                    reason,
                })
                .await;
        })
        .detach();
        Ok(upstream)
    }

    /// Handshakes in the configured era, `initialize` first in `auto` (see
    /// [`super::client`] for why).
    pub async fn handshake(&self) -> Result<Handshake, String> {
        client::handshake(self, self.era_choice, FirstTry::Initialize).await
    }

    /// Sends a request in the server's era and waits for its answer, unless `cancel` fires first
    /// (then the server is told, and the answer is an error nobody will read).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        cancel: &Cancel,
        caller: Caller,
    ) -> Reply {
        let params = match *lock(&self.era) {
            Era::Modern => Some(envelope::wrap(params)),
            Era::Legacy => params,
        };
        self.request_raw(method, params, cancel, caller).await
    }

    async fn request_raw(
        &self,
        method: &str,
        mut params: Option<Value>,
        cancel: &Cancel,
        caller: Caller,
    ) -> Reply {
        if self.exited.is_cancelled() {
            return Err(self.gone());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let token = caller.progress.map(|sink| {
            let token = client::progress_token(id);
            client::put_progress_token(&mut params, &token);
            lock(&self.progress).insert(token.clone(), sink);
            token
        });
        if let Some(asks) = caller.asks {
            self.askers.enter(id, asks);
        }
        let (tx, rx) = async_channel::bounded(1);
        lock(&self.pending).insert(id, tx);
        self.send(&Request {
            id: Id::Number(id),
            method: method.to_owned(),
            params,
        });
        // Whichever first: the answer, the caller's cancellation, or the upstream's timeout.
        let timed_out = Cancel::new();
        let reply = smol::future::or(cancel.run(rx.recv()), async {
            smol::Timer::after(self.timeout).await;
            timed_out.cancel();
            None
        })
        .await;
        if let Some(token) = token {
            lock(&self.progress).remove(&token);
        }
        self.askers.leave(id);
        match reply {
            Some(Ok(reply)) => reply,
            Some(Err(_)) => Err(self.gone()),
            None => {
                lock(&self.pending).remove(&id);
                let failure = if timed_out.is_cancelled() {
                    Failure::Timeout {
                        server: self.name.clone(),
                        after: self.timeout,
                    }
                } else {
                    Failure::Cancelled
                };
                let reason = failure.reason_for_upstream();
                self.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": reason})),
                );
                Err(failure.into())
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        let notification = Notification {
            method: method.to_owned(),
            params,
        };
        let _ = self.lines.try_send(line(&notification));
    }

    /// Shuts the server down the way MCP's stdio transport says: close its stdin, give it `grace`
    /// to exit, then kill it.
    pub async fn shutdown(&self, grace: Duration) {
        self.lines.close();
        let exited = async {
            self.exited.cancelled().await;
            self.stderr_closed.cancelled().await;
        };
        smol::future::or(exited, async {
            smol::Timer::after(grace).await;
        })
        .await;
        self.stop();
    }

    /// Stops the server at once: closes its stdin and kills its whole process group.
    pub fn stop(&self) {
        self.lines.close();
        if let Some(group) = rustix::process::Pid::from_raw(self.process_group as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        if let Some(mut child) = lock(&self.child).take() {
            let _ = child.kill();
        }
    }

    fn send(&self, request: &Request) {
        let _ = self.lines.try_send(line(request));
    }

    fn gone(&self) -> ErrorObject {
        Failure::gone(&self.name, "exited before answering").into()
    }

    /// Reads the server's stdout until it ends; returns why it ended.
    async fn read_stdout(
        &self,
        mut stdout: impl smol::io::AsyncBufRead + Unpin,
        index: usize,
        events: &Sender<Event>,
    ) -> String {
        let mut buf = Vec::new();
        loop {
            let mut answered = IdScanner::default();
            let read = lines::read_line(&mut stdout, &mut buf, self.max_message_bytes, |piece| {
                answered.feed(piece)
            });
            match read.await {
                lines::Read::Eof => return "its stdout closed".into(),
                lines::Read::TooLong { length } => {
                    self.refuse_oversized(length, answered.id());
                    continue;
                }
                lines::Read::Line => {}
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match jsonrpc::parse_frame(&buf) {
                Ok(Frame::Single(message)) => self.receive(message, index, events).await,
                Ok(Frame::Batch(messages)) => {
                    for message in messages.into_iter().flatten() {
                        self.receive(message, index, events).await;
                    }
                }
                Err(_) => {
                    let shown = String::from_utf8_lossy(&buf[..buf.len().min(MAX_STDERR_LINE)]);
                    tracing::warn!(server = %self.name, "ignored a line of {} bytes that is not JSON-RPC: {}", buf.len(), shown.trim_end())
                }
            }
        }
    }

    /// A message too long to take: logged with its size, and the request it answers (if its id
    /// could be read) fails at once rather than at its timeout.
    fn refuse_oversized(&self, length: u64, id: Option<&Id>) {
        let cap = self.max_message_bytes;
        tracing::warn!(server = %self.name, "discarded a message of {length} bytes, over transport.maxMessageBytes ({cap})");
        let Some(Id::Number(id)) = id else { return };
        let waiter = lock(&self.pending).remove(id);
        if let Some(waiter) = waiter {
            let why = format!(
                "answered with {length} bytes, more than transport.maxMessageBytes ({cap})"
            );
            let _ = waiter.try_send(Err(Failure::gone(&self.name, why).into()));
        }
    }

    async fn receive(&self, message: Message, index: usize, events: &Sender<Event>) {
        match message {
            Message::Response(Response {
                id: Some(Id::Number(id)),
                outcome,
            }) => {
                let waiter = lock(&self.pending).remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.try_send(outcome);
                }
            }
            Message::Response(response) => {
                tracing::debug!(server = %self.name, "response to no request: {:?}", response.id)
            }
            Message::Notification(n) => self.on_notification(n, index, events).await,
            Message::Request(request) => self.on_request(request),
        }
    }

    async fn on_notification(&self, n: Notification, index: usize, events: &Sender<Event>) {
        let params = n.params.unwrap_or(Value::Null);
        if n.method == "notifications/progress" {
            let token = params
                .get("progressToken")
                .map(token_key)
                .unwrap_or_default();
            let sink = lock(&self.progress).get(&token).cloned();
            if let Some(sink) = sink {
                sink.forward(params);
            }
        } else if let Some(event) = client::event_of(&self.name, index, &n.method, &params) {
            let _ = events.send(event).await;
        }
    }

    /// A request from the server: answered in a task of its own, since an ask waits on a person
    /// or a model while the server's other messages keep arriving. Nothing on stdio says which
    /// call an ask belongs to, so it goes to the newest one in flight.
    fn on_request(&self, request: Request) {
        let (lines, name) = (self.lines.clone(), self.name.clone());
        let asker = self.askers.newest();
        smol::spawn(async move {
            let response = asks::answer(request, asker, &name).await;
            let _ = lines.try_send(line(&response));
        })
        .detach();
    }

    fn fail_pending(&self, reason: &str) {
        self.exited.cancel();
        let error = ErrorObject::from(Failure::gone(&self.name, format!("exited: {reason}")));
        for (_, waiter) in lock(&self.pending).drain() {
            let _ = waiter.try_send(Err(error.clone()));
        }
    }

    /// Whether the process is still running.
    pub fn is_alive(&self) -> bool {
        !self.exited.is_cancelled()
    }
}

impl Drop for StdioUpstream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A server that refuses `initialize` in a way only a modern server would: -32022, or an error
/// whose `data.supported` lists a modern revision.
fn token_key(token: &Value) -> String {
    token
        .as_str()
        .map_or_else(|| token.to_string(), str::to_owned)
}

/// One message as a line for the server's stdin, written straight from the message.
fn line(message: &impl serde::Serialize) -> String {
    // Serializing a message with string keys cannot fail.
    let mut line = serde_json::to_string(message).unwrap_or_default();
    line.push('\n');
    line
}
