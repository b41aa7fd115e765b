//! `mcpx serve --attach`: the editor's stdio carried to a running daemon's local socket, so that
//! every editor shares the daemon's one set of upstreams.
//!
//! After the handshake line ([`crate::transport::local`]) the shim passes whole lines through
//! unchanged. It reads only each message's top-level id ([`IdScanner`]), to know which of the
//! editor's requests are unanswered, and the editor's first line, to keep its `initialize`: when
//! the daemon goes away (a `systemctl --user restart mcpx`, a crash), the unanswered requests get
//! a JSON-RPC error at once, and the shim attaches to the daemon that comes back, replaying the
//! editor's `initialize` (its answer swallowed) so that the editor's session goes on. If none
//! comes back within [`RECONNECT_PATIENCE`], the shim ends, as a `mcpx serve` whose server died
//! would, and the editor starts it again.
//!
//! It starts no executor and no upstream: threads and blocking sockets, so its cost is a process
//! start and a connect.

use crate::jsonrpc::{ErrorObject, Id, Response, INTERNAL_ERROR};
use crate::lines::IdScanner;
use crate::protocol::{Method, Notice};
use crate::transport::local::{Answer, Attach};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender};
use std::time::{Duration, Instant};

/// How long the daemon may take to answer the handshake.
const ANSWER_PATIENCE: Duration = Duration::from_secs(5);

/// How long a shim whose daemon went away waits for one to come back.
pub const RECONNECT_PATIENCE: Duration = Duration::from_secs(10);

/// Why `mcpx serve --attach` is not carried by a daemon. A caller decides by the kind: no daemon
/// yet may come (a restart), a refusal or another user's socket will not change by waiting.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// Nothing listens on the socket.
    #[error("no mcpx daemon answers on {}: {source}", socket.display())]
    NoDaemon {
        /// The daemon's local socket.
        socket: PathBuf,
        /// What connecting said.
        source: std::io::Error,
    },
    /// The socket, or its directory, is not this user's ([`crate::net::private_socket`]).
    #[error("{0}")]
    NotYours(std::io::Error),
    /// The daemon answered, and will not serve this editor.
    #[error("the daemon refused to serve this editor: {0}")]
    Refused(String),
    /// The connection failed before the daemon answered.
    #[error("{0}")]
    Broken(String),
}

impl AttachError {
    /// Whether trying again later may succeed: a daemon restarting, a connection cut.
    pub fn may_pass(&self) -> bool {
        matches!(self, AttachError::NoDaemon { .. } | AttachError::Broken(_))
    }
}

/// Attaches to the daemon on `socket`, saying who this process is (`who`: the configuration it
/// runs with, its editor's profile): the connection, ready to carry the session, or why not.
pub fn attach(socket: &Path, who: &Attach) -> Result<UnixStream, AttachError> {
    let mut stream =
        crate::net::private_socket::connect(socket).map_err(|source| match source.kind() {
            std::io::ErrorKind::PermissionDenied => AttachError::NotYours(source),
            _ => AttachError::NoDaemon {
                socket: socket.to_owned(),
                source,
            },
        })?;
    let broken = |e: std::io::Error| AttachError::Broken(e.to_string());
    let mut line = serde_json::to_vec(who).map_err(|e| AttachError::Broken(e.to_string()))?;
    line.push(b'\n');
    // A daemon that refuses at once (another user) may close before taking the line: its
    // answer still says why.
    let written = stream.write_all(&line);
    stream
        .set_read_timeout(Some(ANSWER_PATIENCE))
        .map_err(broken)?;
    let answer = match (read_answer(&mut stream), written) {
        (Ok(answer), _) => answer,
        (Err(_), Err(e)) => {
            return Err(AttachError::Broken(format!(
                "the daemon closed the connection: {e}"
            )))
        }
        (Err(why), Ok(())) => return Err(AttachError::Broken(why)),
    };
    stream.set_read_timeout(None).map_err(broken)?;
    match answer {
        Answer::Attached => Ok(stream),
        Answer::Refused(why) => Err(AttachError::Refused(why)),
    }
}

/// The daemon's answer line, read a byte at a time: what follows it is the session's.
fn read_answer(stream: &mut UnixStream) -> Result<Answer, String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => {
                return serde_json::from_slice(&line).map_err(|e| format!("not an answer: {e}"))
            }
            Ok(_) => line.push(byte[0]),
            Err(e) => return Err(format!("no answer from the daemon: {e}")),
        }
    }
    Err("the daemon closed the connection without answering".into())
}

/// What the shim's threads report.
enum Event {
    /// A line from the editor (its newline included).
    FromEditor(Vec<u8>),
    /// The editor closed stdin.
    EditorDone,
    /// A line from the daemon of connection `generation`.
    FromDaemon(u64, Vec<u8>),
    /// The daemon of connection `generation` closed it.
    DaemonGone(u64),
}

/// How many lines the shim holds between its readers and its writer.
const EVENTS: usize = 16;

/// A session carried to the daemon on `socket` for the process `who` says.
pub struct Shim {
    socket: PathBuf,
    who: Attach,
    events: SyncSender<Event>,
    stream: UnixStream,
    generation: u64,
    /// The editor's requests the daemon has not answered.
    unanswered: HashSet<Id>,
    /// The daemon's questions the editor has not answered (their ids are the daemon's).
    questions: HashSet<Id>,
    /// The editor's `initialize` and `initialized`, replayed to a daemon that comes back.
    handshake: Vec<Vec<u8>>,
    /// The id of a replayed `initialize`, whose answer the editor must not see twice.
    replayed: Option<Id>,
    lines_seen: usize,
}

impl Shim {
    /// Carries the session on `stream` until the editor is done and the daemon has answered.
    pub fn carry(socket: &Path, who: Attach, stream: UnixStream) -> Result<(), String> {
        // Bounded: when the editor stops reading, the threads stop reading too, and the daemon
        // (which bounds its own queue) is what decides, not the shim's memory.
        let (events, inbox) = mpsc::sync_channel(EVENTS);
        let editor = events.clone();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            split_lines(&mut stdin.lock(), |line| {
                editor.send(Event::FromEditor(line)).is_ok()
            });
            let _ = editor.send(Event::EditorDone);
        });
        let mut shim = Shim {
            socket: socket.to_owned(),
            who,
            events,
            stream,
            generation: 0,
            unanswered: HashSet::new(),
            questions: HashSet::new(),
            handshake: Vec::new(),
            replayed: None,
            lines_seen: 0,
        };
        shim.follow_daemon()?;
        let mut editor_done = false;
        let mut stdout = std::io::stdout();
        for event in inbox {
            match event {
                Event::FromEditor(line) => shim.send_to_daemon(line),
                Event::EditorDone => {
                    editor_done = true;
                    // The daemon drains the session, answers, and closes.
                    let _ = shim.stream.shutdown(Shutdown::Write);
                }
                Event::FromDaemon(generation, line) if generation == shim.generation => {
                    if shim.shown_to_editor(&line) {
                        stdout.write_all(&line).map_err(|e| e.to_string())?;
                        stdout.flush().map_err(|e| e.to_string())?;
                    }
                }
                Event::DaemonGone(generation) if generation == shim.generation => {
                    if editor_done {
                        return Ok(());
                    }
                    shim.answer_unanswered(&mut stdout)?;
                    shim.reattach()?;
                }
                Event::FromDaemon(..) | Event::DaemonGone(_) => {}
            }
        }
        Ok(())
    }

    /// Reads the current connection in a thread of its own.
    fn follow_daemon(&mut self) -> Result<(), String> {
        let mut reader = self.stream.try_clone().map_err(|e| e.to_string())?;
        let (events, generation) = (self.events.clone(), self.generation);
        std::thread::spawn(move || {
            split_lines(&mut reader, |line| {
                events.send(Event::FromDaemon(generation, line)).is_ok()
            });
            let _ = events.send(Event::DaemonGone(generation));
        });
        Ok(())
    }

    /// Notes what the editor sends and passes it on; a daemon that cannot take it is gone, and
    /// its reader says so.
    fn send_to_daemon(&mut self, line: Vec<u8>) {
        if self.lines_seen < 2 && starts_session(&line) {
            self.handshake.push(line.clone());
        }
        self.lines_seen += 1;
        if let Some(id) = id_of(&line) {
            if !self.questions.remove(&id) {
                self.unanswered.insert(id);
            }
        }
        let _ = self.stream.write_all(&line);
    }

    /// Notes what the daemon sends; whether the editor is to see it.
    fn shown_to_editor(&mut self, line: &[u8]) -> bool {
        let Some(id) = id_of(line) else { return true };
        if self.replayed.as_ref() == Some(&id) {
            self.replayed = None;
            return false;
        }
        if !self.unanswered.remove(&id) {
            self.questions.insert(id);
        }
        true
    }

    /// The daemon went away: each request it left unanswered gets an error now.
    fn answer_unanswered(&mut self, stdout: &mut impl Write) -> Result<(), String> {
        let error = ErrorObject::new(
            INTERNAL_ERROR,
            "the mcpx daemon went away before answering; mcpx serve is attaching to it again",
        );
        for id in self.unanswered.drain() {
            let response = Response::error(Some(id), error.clone());
            let mut line = serde_json::to_vec(&response).map_err(|e| e.to_string())?;
            line.push(b'\n');
            stdout.write_all(&line).map_err(|e| e.to_string())?;
        }
        self.questions.clear();
        stdout.flush().map_err(|e| e.to_string())
    }

    /// Attaches to the daemon that comes back and replays the editor's handshake to it.
    fn reattach(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + RECONNECT_PATIENCE;
        let stream = loop {
            match attach(&self.socket, &self.who) {
                Ok(stream) => break stream,
                // A daemon that came back and refuses this editor will not change its mind.
                Err(why) if !why.may_pass() => {
                    return Err(format!("the daemon came back, but: {why}"))
                }
                Err(why) if Instant::now() >= deadline => {
                    return Err(format!("the daemon went away and did not come back: {why}"))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        };
        self.stream = stream;
        self.generation += 1;
        self.replayed = self.handshake.first().and_then(|line| id_of(line));
        for line in &self.handshake {
            self.stream.write_all(line).map_err(|e| e.to_string())?;
        }
        self.follow_daemon()
    }
}

/// Whether a line is part of a legacy session's start: `initialize` or `initialized`.
fn starts_session(line: &[u8]) -> bool {
    let message: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or_default();
    method == Method::Initialize.as_str() || method == Notice::Initialized
}

/// A message's top-level id, read without parsing the rest.
fn id_of(line: &[u8]) -> Option<Id> {
    let mut scanner = IdScanner::default();
    scanner.feed(line);
    scanner.id().cloned()
}

/// The most of a line held before it is passed on in pieces: the daemon bounds messages, and the
/// shim must not hold a longer one whole.
const MAX_HELD: usize = 1024 * 1024;

/// Reads `from` and hands each whole line (newline included) to `take`, until `from` ends or
/// `take` says stop; a line longer than [`MAX_HELD`] goes in pieces.
fn split_lines(from: &mut impl Read, mut take: impl FnMut(Vec<u8>) -> bool) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut partial = Vec::new();
    loop {
        let read = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => &buf[..n],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut rest = read;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            partial.extend_from_slice(&rest[..=at]);
            if !take(std::mem::take(&mut partial)) {
                return;
            }
            rest = &rest[at + 1..];
        }
        partial.extend_from_slice(rest);
        if partial.len() >= MAX_HELD && !take(std::mem::take(&mut partial)) {
            return;
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod attach {
        use crate::attach::{attach, AttachError};
        use crate::transport::local::{Answer, Attach};
        use std::io::{BufRead, BufReader, Write};
        use std::os::unix::net::UnixListener;

        fn who() -> Attach {
            Attach {
                config: None,
                pid: std::process::id(),
                cwd: None,
                profile: None,
            }
        }

        /// The shim waits for a daemon that is not there yet, and not for one that refused.
        #[test]
        fn no_daemon_may_pass_a_refusal_does_not() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("serve.sock");
            let error = attach(&socket, &who()).unwrap_err();
            assert!(matches!(error, AttachError::NoDaemon { .. }), "{error}");
            assert!(error.may_pass());

            let listener = UnixListener::bind(&socket).unwrap();
            let daemon = std::thread::spawn(move || {
                let (stream, _) = listener.accept().unwrap();
                let mut line = String::new();
                BufReader::new(&stream).read_line(&mut line).unwrap();
                let refusal = Answer::Refused("another configuration".into());
                let mut answer = serde_json::to_vec(&refusal).unwrap();
                answer.push(b'\n');
                (&stream).write_all(&answer).unwrap();
            });
            let error = attach(&socket, &who()).unwrap_err();
            daemon.join().unwrap();
            assert!(matches!(error, AttachError::Refused(_)), "{error}");
            assert!(!error.may_pass());
            assert_eq!(
                error.to_string(),
                "the daemon refused to serve this editor: another configuration"
            );
        }
    }
}
