//! `mcpx serve --attach`: the editor's stdio carried to a running daemon's local socket, byte
//! for byte, so that every editor shares the daemon's one set of upstreams.
//!
//! After the handshake line ([`crate::transport::local`]) the shim parses nothing: one thread
//! copies stdin to the socket and half-closes it at EOF (so the daemon drains the session as
//! `mcpx serve` would), and the calling thread copies the socket to stdout. It starts no executor
//! and no upstream, so its cost is a process start and a connect.

use crate::transport::local::{Answer, Attach};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// How long the daemon may take to answer the handshake.
const ANSWER_PATIENCE: Duration = Duration::from_secs(5);

/// Attaches to the daemon on `socket`, saying this process runs with `config`: the connection,
/// ready to carry the session, or why not.
pub fn attach(socket: &Path, config: Option<&Path>) -> Result<UnixStream, String> {
    let mut stream = UnixStream::connect(socket)
        .map_err(|e| format!("no mcpx daemon answers on {}: {e}", socket.display()))?;
    let attach = Attach {
        config: config.map(|p| p.display().to_string()),
        pid: std::process::id(),
    };
    let mut line = serde_json::to_vec(&attach).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream.write_all(&line).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(ANSWER_PATIENCE))
        .map_err(|e| e.to_string())?;
    let answer = read_answer(&mut stream)?;
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    match answer {
        Answer::Attached => Ok(stream),
        Answer::Refused(why) => Err(format!("the daemon refused to serve this editor: {why}")),
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

/// Carries the session until the daemon ends it: stdin to the socket, the socket to stdout.
pub fn carry(stream: UnixStream) -> std::io::Result<()> {
    let mut to_daemon = stream.try_clone()?;
    std::thread::spawn(move || {
        let _ = relay(&mut std::io::stdin(), &mut to_daemon);
        // EOF from the editor: the daemon drains the session, answers, and closes.
        let _ = to_daemon.shutdown(Shutdown::Write);
    });
    let mut from_daemon = stream;
    relay(&mut from_daemon, &mut std::io::stdout())
}

/// Copies `from` to `to` as bytes arrive, each read written and flushed at once: a frame must
/// not wait in a buffer for the next one (`std::io::copy` gives no such promise).
fn relay(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                to.write_all(&buf[..n])?;
                to.flush()?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
