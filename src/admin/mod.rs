//! The admin socket: a local Unix socket on which a console (`mcpx-tui`, `mcpx status`) reads the
//! live state and acts on it. Newline-delimited JSON, one [`protocol::Command`] per line.
//!
//! Only the user who runs mcpx may connect: the socket is created 0600 in a private directory,
//! and a peer whose uid differs is refused even so (root can open any file); see
//! [`crate::net::private_socket`]. What a peer may ask is the control API's rule
//! ([`crate::control::allowed`]), on the caller this socket proves: [`By::Socket`].

/// The messages, the control API's ([`crate::control::protocol`]), where consoles import them.
pub use crate::control::protocol;

use crate::cancel::Cancel;
use crate::control::By;
use crate::gateway::Gateway;
use crate::json::Member;
use crate::lines;
use protocol::{Command, Refusal, Reply};
use smol::io::{AsyncWriteExt, BufReader};
use smol::net::unix::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The longest command line read; a longer one is read past, never held (a console is its
/// user's, but a buggy one must not make the daemon hold a gigabyte).
const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// The most of a bad command line quoted back in the error.
const ECHOED_BYTES: usize = 200;

/// The fewest milliseconds between two snapshots of a `watch`: a busy gateway changes far more
/// often than a person can read.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// The socket a `mcpx serve` process uses: beside the daemon's, named by its pid.
pub fn serve_socket(daemon_socket: &Path) -> PathBuf {
    let dir = daemon_socket.parent().unwrap_or(Path::new("/tmp"));
    dir.join(format!("serve-{}.sock", std::process::id()))
}

/// Admin sockets that answer, in the directory of the daemon's: the daemon's and each
/// `mcpx serve` process's.
pub fn running_sockets(daemon_socket: &Path) -> Vec<PathBuf> {
    let Some(dir) = daemon_socket.parent() else {
        return Vec::new();
    };
    let mut sockets: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            // The daemon's and each `mcpx serve`'s (`serve-PID.sock`), not the editors' door.
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let admin = path == daemon_socket || name.starts_with("serve-");
            admin
                && path.extension().is_some_and(|e| e == "sock")
                && std::os::unix::net::UnixStream::connect(path).is_ok()
        })
        .collect();
    sockets.sort_by_key(|path| path != daemon_socket);
    sockets
}

/// Serves consoles on `listener` until `stop` fires, then removes the socket file.
pub async fn serve(gateway: Arc<Gateway>, listener: UnixListener, path: PathBuf, stop: Cancel) {
    accept_until(listener, path, stop, |stream| {
        crate::runtime::spawn(console(Arc::clone(&gateway), stream)).detach()
    })
    .await
}

/// Hands each connection on `listener` to `take` until `stop` fires, then removes the socket
/// file at `path`: the loop of every local socket mcpx serves (consoles, attached editors).
pub async fn accept_until(
    listener: UnixListener,
    path: PathBuf,
    stop: Cancel,
    mut take: impl FnMut(UnixStream),
) {
    loop {
        let accepted = smol::future::or(async { Some(listener.accept().await) }, async {
            stop.cancelled().await;
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok((stream, _))) => take(stream),
            Some(Err(e)) => {
                tracing::warn!("accept on {} failed: {e}", path.display());
                smol::Timer::after(Duration::from_millis(50)).await;
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}

async fn console(gateway: Arc<Gateway>, stream: UnixStream) {
    let mut writer = stream.clone();
    let by = By::Socket {
        uid: crate::net::private_socket::peer_uid(&stream),
        from_upstream: crate::net::peer_process::descends_from_this_process(&stream),
    };
    // A stray of a server's tree (its supervisor killed) is mcpx's to end; one asking here is.
    if matches!(
        by,
        By::Socket {
            from_upstream: true,
            ..
        }
    ) {
        crate::upstream::orphans::sweep();
    }
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        let reply = match lines::read_line(&mut reader, &mut line, MAX_COMMAND_BYTES, |_| {}).await
        {
            lines::Read::Eof => return,
            lines::Read::TooLong { length } => Reply::Error {
                message: format!(
                    "a line of {length} bytes is not a command (at most {MAX_COMMAND_BYTES})"
                ),
                kind: Refusal::NotACommand,
            },
            lines::Read::Line => {
                let text = String::from_utf8_lossy(&line);
                if text.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Command>(&text) {
                    Err(e) => Reply::Error {
                        message: format!("not a command ({e}): {}", excerpt(&text)),
                        kind: Refusal::NotACommand,
                    },
                    Ok(Command::Watch) => match crate::control::allowed(&Command::Watch, &by) {
                        Ok(()) => return watch(&gateway, &mut writer, &mut reader).await,
                        Err((kind, message)) => Reply::Error { message, kind },
                    },
                    Ok(command) => crate::control::act(&gateway, command, &by).await,
                }
            }
        };
        if send(&mut writer, &reply).await.is_err() {
            return;
        }
    }
}

/// The start of a line a console sent, to quote in an error: never more than
/// [`ECHOED_BYTES`], so that a reply cannot be made as large as what was sent.
fn excerpt(text: &str) -> String {
    if text.len() <= ECHOED_BYTES {
        return text.to_owned();
    }
    let mut end = ECHOED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// A snapshot now and after every change, until the console goes away.
async fn watch(gateway: &Gateway, writer: &mut UnixStream, reader: &mut BufReader<UnixStream>) {
    loop {
        let changed = gateway.live().changed();
        if send(writer, &Reply::Snapshot(Box::new(gateway.snapshot())))
            .await
            .is_err()
        {
            return;
        }
        // Ages in the snapshot move even when nothing else does; refresh once a second anyway.
        let woke = smol::future::or(
            async {
                changed.await;
                true
            },
            async {
                smol::Timer::after(Duration::from_secs(1)).await;
                true
            },
        );
        let console_gone = async {
            // Commands are not taken during a watch; the read only notices the console leaving.
            let mut ignored = Vec::new();
            let cap = MAX_COMMAND_BYTES;
            while lines::read_line(reader, &mut ignored, cap, |_| {}).await != lines::Read::Eof {}
            false
        };
        if !smol::future::or(woke, console_gone).await {
            return;
        }
        smol::Timer::after(WATCH_INTERVAL).await;
    }
}

/// Asks a running mcpx one command and reads its one reply (blocking: for `mcpx status`).
pub fn ask(path: &Path, command: &Command) -> std::io::Result<Reply> {
    use std::io::{BufRead, Write};
    let mut stream = crate::net::private_socket::connect(path)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = serde_json::to_vec(command)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reply = String::new();
    std::io::BufReader::new(stream).read_line(&mut reply)?;
    serde_json::from_str(&reply).map_err(std::io::Error::other)
}

/// What the mcpx at `path` says it did about `command`, or why it did not (its refusal, or that
/// it could not be reached).
pub fn done(path: &Path, command: &Command) -> Result<String, String> {
    match ask(path, command) {
        Ok(Reply::Done { message }) => Ok(message),
        Ok(Reply::Error { message, .. }) => Err(message),
        Ok(_) => Err(format!("{} answered something else", path.display())),
        Err(e) => Err(format!("cannot reach {}: {e}", path.display())),
    }
}

/// A snapshot as text for people: one line per upstream, session, stream and request.
pub fn describe(snapshot: &protocol::Snapshot) -> String {
    use crate::view::printable as p;
    use std::fmt::Write;
    let seconds = |ms: u64| format!("{:.1}s", ms as f64 / 1000.0);
    let mut text = format!("mcpx {} (pid {})\n", snapshot.version, snapshot.pid);
    let _ = writeln!(text, "upstreams ({}):", snapshot.upstreams.len());
    for u in &snapshot.upstreams {
        let revision = u.revision.as_deref().unwrap_or("-");
        let _ = writeln!(
            text,
            "  {:<16} {:<10} {:<11} tools {} prompts {} resources {} restarts {}",
            p(&u.name),
            p(&u.state),
            p(revision),
            u.tools,
            u.prompts,
            u.resources,
            u.restarts
        );
        for i in &u.instances {
            let _ = writeln!(
                text,
                "    {} {}: {} requests, age {} idle {}",
                p(&i.person),
                p(&i.state),
                i.requests,
                seconds(i.age_ms),
                seconds(i.idle_ms)
            );
        }
        if let Some(sandbox) = &u.sandbox {
            let state = if sandbox.is_degraded() {
                "DEGRADED"
            } else {
                "confined"
            };
            let _ = writeln!(text, "    sandbox {state}: {}", p(&sandbox.summary()));
        }
    }
    if !snapshot.profiles.is_empty() {
        let _ = writeln!(text, "profiles ({}):", snapshot.profiles.len());
    }
    for profile in &snapshot.profiles {
        let search = match profile.listed_tools == profile.tools {
            true => String::new(),
            false => format!(" (listed {}: search)", profile.listed_tools),
        };
        let _ = writeln!(
            text,
            "  {:<16} tools {}{search} prompts {} sessions {}  (/mcp/{}, --profile {})",
            profile.name,
            profile.tools,
            profile.prompts,
            profile.sessions,
            profile.name,
            profile.name
        );
    }
    if !snapshot.consents.is_empty() {
        let _ = writeln!(
            text,
            "waiting for your consent ({}):",
            snapshot.consents.len()
        );
    }
    for c in &snapshot.consents {
        let (approve, named) = match (c.approved, c.verified) {
            (true, _) => ("approved".to_owned(), ""),
            (false, verified) => (
                format!("mcpx auth approve {}", c.code),
                if verified { "" } else { " (self-registered)" },
            ),
        };
        let _ = writeln!(
            text,
            "  {approve:<26} {}{named} -> {} for {} [{}] ({} ago)",
            p(&c.client),
            p(&c.redirect_host),
            p(&c.door),
            p(&c.scopes.join(" ")),
            seconds(c.age_ms)
        );
    }
    if !snapshot.approvals.is_empty() {
        let _ = writeln!(
            text,
            "waiting for your approval ({}):",
            snapshot.approvals.len()
        );
    }
    for a in &snapshot.approvals {
        let _ = writeln!(
            text,
            "  mcpx approvals approve {:<20} {} calls {} {} ({} ago, refused in {})",
            p(&a.id),
            p(&a.caller),
            p(&a.tool),
            p(&a.arguments),
            seconds(a.age_ms),
            seconds(a.ends_in_ms)
        );
    }
    for u in &snapshot.unfetched_clients {
        let _ = writeln!(
            text,
            "  refused: {}: its metadata document cannot be fetched ({}; {} ago): pin a copy in [auth.builtin.pinned]",
            p(&u.client_id),
            p(&u.why),
            seconds(u.age_ms)
        );
    }
    if !snapshot.tasks.is_empty() {
        let _ = writeln!(text, "tasks ({}):", snapshot.tasks.len());
    }
    for t in &snapshot.tasks {
        let _ = writeln!(
            text,
            "  {:<10} {:<6} {:<15} {:<24} session #{} age {}",
            crate::view::short_task_id(&t.id),
            p(&t.kind),
            p(&t.status),
            p(&t.tool),
            t.session,
            seconds(t.age_ms)
        );
    }
    if !snapshot.event_subscriptions.is_empty() {
        let count = snapshot.event_subscriptions.len();
        let _ = writeln!(text, "event subscriptions ({count}):");
    }
    for e in &snapshot.event_subscriptions {
        let _ = writeln!(
            text,
            "  {} {} for {} to {}: {} delivered, {} failed{}; ends in {} unless refreshed",
            p(&e.id),
            p(&e.event),
            p(&e.person),
            p(&e.callback),
            e.delivered,
            e.failed,
            e.last_error
                .as_ref()
                .map(|w| format!(" (last: {})", p(w)))
                .unwrap_or_default(),
            seconds(e.ends_in_ms)
        );
    }
    let _ = writeln!(text, "sessions ({}):", snapshot.sessions.len());
    for s in &snapshot.sessions {
        let client = s
            .client
            .as_ref()
            .and_then(|c| c.member("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("-");
        let _ = writeln!(
            text,
            "  #{:<5} {:<12} {:<11} {:<20} {}{}{} age {} idle {}",
            s.key,
            s.transport,
            p(s.revision.as_deref().unwrap_or("-")),
            p(client),
            s.caller
                .as_deref()
                .map(|caller| format!("{} ", p(caller)))
                .unwrap_or_default(),
            s.profile
                .as_deref()
                .map(|name| format!("profile {name} "))
                .unwrap_or_default(),
            p(&s.id
                .as_deref()
                .map(crate::view::short_session_id)
                .unwrap_or_default()),
            seconds(s.age_ms),
            seconds(s.idle_ms)
        );
        for c in &s.clients {
            let _ = writeln!(
                text,
                "    {} {} by {}: {} requests, idle {}",
                p(&c.name),
                p(&c.version),
                p(&c.caller),
                c.requests,
                seconds(c.idle_ms)
            );
        }
    }
    let _ = writeln!(text, "streams ({}):", snapshot.streams.len());
    for s in &snapshot.streams {
        let _ = writeln!(
            text,
            "  session #{:<5} {:<7} events {:<6} age {} {}",
            s.session,
            s.kind,
            s.events,
            seconds(s.age_ms),
            p(&s.filter.join(" "))
        );
    }
    let _ = writeln!(text, "requests in flight ({}):", snapshot.requests.len());
    for r in &snapshot.requests {
        let _ = writeln!(
            text,
            "  #{:<5} session #{:<5} {:<14} {} {} -> {} by {} age {} progress {}",
            r.key,
            r.session,
            p(&r.method),
            p(r.target.as_deref().unwrap_or("-")),
            p(&r.id.to_string()),
            p(r.upstream.as_deref().unwrap_or("-")),
            p(&r.caller),
            seconds(r.age_ms),
            r.progress
        );
    }
    let t = snapshot.totals;
    let _ = writeln!(
        text,
        "totals: answered {}, cancelled {}, failed {}",
        t.answered, t.cancelled, t.failed
    );
    let _ = writeln!(
        text,
        "awaiting client input (2026-07-28 calls between rounds): {}",
        snapshot.awaiting_input
    );
    text
}

async fn send(writer: &mut UnixStream, reply: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(reply).unwrap_or_default();
    line.push(b'\n');
    writer.write_all(&line).await
}
