//! The admin socket, `mcpx status` and `mcpx-tui`, end to end against the real daemon with real
//! clients and the fixture upstream.

use crate::common;

use crate::common::http::*;
use crate::common::*;
use mcpx::admin::protocol::{Command, Refusal, Reply, Snapshot};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A daemon whose admin socket lives in a fresh directory.
fn daemon() -> (Daemon, PathBuf, tempfile::TempDir) {
    daemon_serving(&fixture_config(""))
}

/// A daemon serving `servers` (TOML), whose admin socket lives in a fresh directory.
fn daemon_serving(servers: &str) -> (Daemon, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run").join("admin.sock");
    let config = format!(
        "[admin]\nsocket = {:?}\n{servers}",
        socket.display().to_string(),
    );
    let d = Daemon::start(&config, "");
    // The socket is bound beside the listener; wait until it answers.
    let deadline = Instant::now() + PATIENCE;
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            Instant::now() < deadline,
            "no admin socket at {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    snapshot_where(&socket, |s| s.upstreams.iter().all(|u| u.state == "ready"));
    (d, socket, dir)
}

fn snapshot(socket: &Path) -> Snapshot {
    match mcpx::admin::ask(socket, &Command::Snapshot).unwrap() {
        Reply::Snapshot(snapshot) => *snapshot,
        other => panic!("not a snapshot: {other:?}"),
    }
}

/// Waits until a snapshot satisfies `ready`.
fn snapshot_where(socket: &Path, ready: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let s = snapshot(socket);
        if ready(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "never saw it: {s:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asks the daemon to restart the upstream `name`.
fn restart(socket: &Path, name: &str) -> Reply {
    let name = name.to_owned();
    mcpx::admin::ask(socket, &Command::RestartUpstream { name }).unwrap()
}

/// The first upstream's restarts and state.
fn restarts_and_state(s: &Snapshot) -> (u64, String) {
    (s.upstreams[0].restarts, s.upstreams[0].state.clone())
}

/// The fixture's `echo`, called through the daemon, answers.
fn assert_fixture_echoes(d: &Daemon) {
    let echo = d.modern(
        1,
        "tools/call",
        json!({"name": "fixture__echo", "arguments": {"text": "back"}}),
    );
    assert_eq!(echo.json()["result"]["content"][0]["text"], "back");
}

/// A legacy session with a client name; returns its id.
fn legacy_session(d: &Daemon) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "admin-test-client", "version": "1"}}});
    let reply = d.post(&[], init.to_string().as_bytes());
    reply.header("mcp-session-id").unwrap().to_owned()
}

/// Starts a call that sleeps until cancelled, on the session; returns its open connection.
fn sleeping_call(d: &Daemon, session: &str, id: i64) -> std::net::TcpStream {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "fixture__sleep", "arguments": {}}});
    d.send_post(
        &[("Mcp-Session-Id", session.as_bytes())],
        body.to_string().as_bytes(),
    )
}

mod every_revision {
    pub mod admin {
        use super::super::*;

        #[test]
        fn snapshot_shows_a_live_session_and_an_in_flight_call() {
            let (d, socket, _dir) = daemon();
            let session = legacy_session(&d);
            let _call = sleeping_call(&d, &session, 7);
            let s = snapshot_where(&socket, |s| !s.requests.is_empty());
            let live = s
                .sessions
                .iter()
                .find(|x| x.id.as_deref() == Some(session.as_str()))
                .expect("the session is missing");
            assert_eq!(live.client.as_ref().unwrap()["name"], "admin-test-client");
            assert_eq!(live.revision.as_deref(), Some("2025-11-25"));
            let request = &s.requests[0];
            assert_eq!(
                (
                    request.method.as_str(),
                    request.target.as_deref(),
                    request.upstream.as_deref()
                ),
                ("tools/call", Some("fixture__sleep"), Some("fixture"))
            );
            assert_eq!(request.id, json!(7));
            assert_eq!(s.upstreams[0].state, "ready");
        }

        #[test]
        fn cancel_reaches_the_upstream_and_the_client_gets_its_cancellation_outcome() {
            let (d, socket, _dir) = daemon();
            let session = legacy_session(&d);
            let mut call = sleeping_call(&d, &session, 8);
            // Cancelled before it reaches the upstream, it would never be sent at all.
            assert!(d.log_shows("fixture: sleeping request"));
            let key = snapshot_where(&socket, |s| !s.requests.is_empty()).requests[0].key;
            let reply = mcpx::admin::ask(&socket, &Command::Cancel { request: key }).unwrap();
            assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
            assert!(d.log_shows("fixture: cancelled request"), "{}", d.stderr());
            // Its client never asked: it is answered, once, that the owner cancelled it.
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut call, &mut raw).unwrap();
            let text = String::from_utf8_lossy(&raw);
            assert_eq!(text.matches("\"id\":8").count(), 1, "{text}");
            assert!(text.contains("-32800") && text.contains("owner"), "{text}");
            let s = snapshot_where(&socket, |s| s.requests.is_empty());
            assert_eq!(s.totals.cancelled, 1);
            let again = mcpx::admin::ask(&socket, &Command::Cancel { request: key }).unwrap();
            assert!(matches!(again, Reply::Error { .. }));
        }

        #[test]
        fn end_session_closes_its_get_stream_and_the_session_is_gone() {
            let (d, socket, _dir) = daemon();
            let session = legacy_session(&d);
            let mut stream = std::net::TcpStream::connect(d.addr).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            write!(
                stream,
                "GET /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: {session}\r\n\r\n"
            )
            .unwrap();
            let (mut events, _) = EventReader::open(stream);
            snapshot_where(&socket, |s| s.streams.iter().any(|x| x.kind == "get"));
            let reply = mcpx::admin::ask(
                &socket,
                &Command::EndSession {
                    id: session.clone(),
                },
            )
            .unwrap();
            assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
            assert_eq!(events.next_event(), None, "the GET stream stayed open");
            let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
            assert_eq!(
                d.post(
                    &[("Mcp-Session-Id", session.as_bytes())],
                    ping.to_string().as_bytes()
                )
                .status,
                404
            );
        }

        #[test]
        fn restart_upstream_restarts_it_and_it_serves_again() {
            let (d, socket, _dir) = daemon();
            let reply = restart(&socket, "fixture");
            assert!(
                matches!(&reply, Reply::Done { message } if message.contains("ready")),
                "{reply:?}"
            );
            assert_eq!(restarts_and_state(&snapshot(&socket)), (1, "ready".into()));
            assert_fixture_echoes(&d);
            // The old process's exit is no crash: nothing starts it a second time (the first
            // backoff is 250 ms).
            std::thread::sleep(Duration::from_secs(1));
            assert_eq!(restarts_and_state(&snapshot(&socket)), (1, "ready".into()));
            assert!(matches!(restart(&socket, "nope"), Reply::Error { .. }));
        }

        #[test]
        fn a_restart_whose_start_fails_is_revived_until_it_serves() {
            // The wrapper fails its start once, while a marker file is there.
            let marker = tempfile::tempdir().unwrap();
            let fail = marker.path().join("fail-once");
            let script = format!(
                "if [ -e {0:?} ]; then rm {0:?}; exit 3; fi; exec {1:?}",
                fail.display().to_string(),
                fixture_bin()
            );
            let servers =
                format!("[servers.fixture]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n");
            let (d, socket, _dir) = daemon_serving(&servers);
            std::fs::write(&fail, b"").unwrap();
            let reply = restart(&socket, "fixture");
            assert!(
                matches!(&reply, Reply::Done { message } if message.contains("failed")),
                "{reply:?}"
            );
            // Supervision takes it from there: it serves again without being asked.
            let s = snapshot_where(&socket, |s| s.upstreams[0].state == "ready");
            assert!(restarts_and_state(&s).0 >= 2, "{s:?}");
            assert_fixture_echoes(&d);
        }

        /// A task shows in the live state (tool, client, state, age, who runs it) and is
        /// cancelled from the admin socket as its client's `tasks/cancel` would.
        #[test]
        fn a_task_is_shown_and_cancelled_from_the_admin_socket() {
            let (d, socket, _dir) = daemon_serving(&fixture_config("tasks = \"always\"\n"));
            let params = json!({"name": "fixture__sleep", "arguments": {},
                "_meta": {"io.modelcontextprotocol/clientCapabilities":
                    {"extensions": {"io.modelcontextprotocol/tasks": {}}}}});
            let created = d.modern(1, "tools/call", params).json();
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let s = snapshot_where(&socket, |s| s.tasks.len() == 1);
            let task = &s.tasks[0];
            assert_eq!(
                (
                    task.id.as_str(),
                    task.kind.as_str(),
                    task.tool.as_str(),
                    task.server.as_str()
                ),
                (id.as_str(), "own", "fixture__sleep", "fixture")
            );
            assert_eq!(task.status, "working");
            let described = mcpx::admin::describe(&s);
            assert!(
                described.contains("tasks (1):") && described.contains("fixture__sleep"),
                "{described}"
            );
            let cancel = Command::CancelTask { id: id.clone() };
            let reply = mcpx::admin::ask(&socket, &cancel).unwrap();
            assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
            snapshot_where(&socket, |s| s.tasks[0].status == "cancelled");
            assert!(
                eventually(|| d.log_shows("fixture: cancelled request")),
                "{}",
                d.stderr()
            );
            // Its client, polling, reads who ended it.
            let get = json!({"taskId": id, "_meta": {"io.modelcontextprotocol/clientCapabilities":
                {"extensions": {"io.modelcontextprotocol/tasks": {}}}}});
            let got = d.modern(2, "tasks/get", get).json();
            assert_eq!(got["result"]["status"], "cancelled", "{got}");
            let said = got["result"]["statusMessage"].as_str().unwrap_or_default();
            assert!(said.contains("owner"), "{got}");
            let unknown = Command::CancelTask {
                id: "mcpxt1.nothing".into(),
            };
            let reply = mcpx::admin::ask(&socket, &unknown).unwrap();
            assert!(
                matches!(
                    reply,
                    Reply::Error {
                        kind: Refusal::NotFound,
                        ..
                    }
                ),
                "{reply:?}"
            );
        }

        /// A fresh daemon shows no session nobody opened; 2026-07-28 HTTP callers, who open
        /// none, are shown by the `clientInfo` their requests carry and by who called.
        #[test]
        fn http_clients_are_shown_by_name_and_no_session_nobody_opened() {
            let (d, socket, _dir) = daemon();
            assert!(d.upstreams_ready(), "{}", d.stderr());
            assert!(
                snapshot(&socket).sessions.is_empty(),
                "{:?}",
                snapshot(&socket)
            );
            let named = |name: &str| json!({"_meta": {"io.modelcontextprotocol/clientInfo": {"name": name, "version": "1.2"}}});
            for (id, name) in [(1, "codex"), (2, "codex"), (3, "claude-code")] {
                assert!(d
                    .modern(id, "tools/list", named(name))
                    .json()
                    .get("result")
                    .is_some());
            }
            let s = snapshot_where(&socket, |s| !s.sessions.is_empty());
            let clients = &s.sessions[0].clients;
            let requests = |name: &str| clients.iter().find(|c| c.name == name).map(|c| c.requests);
            assert_eq!(
                (requests("codex"), requests("claude-code")),
                (Some(2), Some(1)),
                "{clients:?}"
            );
            assert!(clients
                .iter()
                .all(|c| c.caller == "local owner" && c.version == "1.2"));
            let described = mcpx::admin::describe(&s);
            assert!(
                described.contains("codex 1.2 by local owner: 2 requests"),
                "{described}"
            );
        }

        #[test]
        fn watch_sends_a_snapshot_then_one_after_each_change() {
            let (d, socket, _dir) = daemon();
            let mut console = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            console.set_read_timeout(Some(PATIENCE)).unwrap();
            writeln!(
                console,
                "{}",
                serde_json::to_string(&Command::Watch).unwrap()
            )
            .unwrap();
            let mut lines = BufReader::new(console).lines();
            let first: Reply = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert!(matches!(first, Reply::Snapshot(ref s) if s.requests.is_empty()));
            let session = legacy_session(&d);
            let _call = sleeping_call(&d, &session, 9);
            let deadline = Instant::now() + PATIENCE;
            loop {
                let reply: Reply = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
                if matches!(reply, Reply::Snapshot(ref s) if s.requests.len() == 1) {
                    break;
                }
                assert!(Instant::now() < deadline);
            }
        }

        #[test]
        fn a_line_that_is_not_a_command_gets_an_error_and_the_console_carries_on() {
            let (_d, socket, _dir) = daemon();
            let mut console = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            console.set_read_timeout(Some(PATIENCE)).unwrap();
            writeln!(
                console,
                "{{\"cmd\": \"explode\"}}\n{}",
                serde_json::to_string(&Command::Snapshot).unwrap()
            )
            .unwrap();
            let mut lines = BufReader::new(console).lines();
            let error: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!(error["type"], "error");
            let snapshot: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!(snapshot["type"], "snapshot");
        }

        /// Another user's directory, made where mcpx would fall back to (`$TMPDIR/mcpx-UID`
        /// with no `$XDG_RUNTIME_DIR`): open to all, or private but theirs. The daemon refuses
        /// it, naming it, rather than bind its sockets where that user can swap them.
        #[test]
        fn a_runtime_directory_another_user_made_is_refused_by_name() {
            use std::os::unix::fs::MetadataExt;
            let tmp = tempfile::tempdir().unwrap();
            let me = std::fs::metadata("/proc/self").unwrap().uid();
            let squatted = tmp.path().join(format!("mcpx-{me}"));
            let config = tmp.path().join("config.toml");
            std::fs::write(&config, "[daemon]\naddress = \"127.0.0.1:0\"\n").unwrap();
            for (owner, mode, why) in [
                (me, 0o777, "mode is 777"),
                (65534, 0o777, "belongs to uid 65534"),
                (65534, 0o700, "belongs to uid 65534"),
            ] {
                std::fs::create_dir(&squatted).unwrap();
                std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(mode)).unwrap();
                std::os::unix::fs::chown(&squatted, Some(owner), Some(owner)).unwrap();
                let mut daemon = std::process::Command::new(mcpx_bin())
                    .arg("--config")
                    .arg(&config)
                    .arg("daemon")
                    .env_remove("XDG_RUNTIME_DIR")
                    .env("TMPDIR", tmp.path())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let status = wait_exit(&mut daemon, PATIENCE);
                let mut stderr = String::new();
                std::io::Read::read_to_string(daemon.stderr.as_mut().unwrap(), &mut stderr)
                    .unwrap();
                assert!(status.is_some_and(|s| !s.success()), "{stderr}");
                assert!(stderr.contains(&squatted.display().to_string()), "{stderr}");
                assert!(stderr.contains(why), "{stderr}");
                assert!(!squatted.join("admin.sock").exists());
                std::fs::remove_dir(&squatted).unwrap();
            }
        }

        /// A socket served by another user (one that won a race for the path, or a configured
        /// path it controls): `mcpx status` and `mcpx serve --attach` check the server's uid
        /// and send nothing.
        #[test]
        fn a_console_and_an_editor_send_nothing_to_another_users_socket() {
            let shared = PathBuf::from(format!("/tmp/mcpx-squat-test-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&shared);
            std::fs::create_dir_all(&shared).unwrap();
            std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
            let binary = shared.join("mcpx");
            std::fs::copy(mcpx_bin(), &binary).unwrap();
            let run = shared.join("run");
            let (admin, door) = (run.join("admin.sock"), run.join("serve.sock"));
            let config = shared.join("config.toml");
            std::fs::write(
                &config,
                format!(
                    "[daemon]\naddress = \"127.0.0.1:0\"\nlocalSocket = {:?}\n[admin]\nsocket = {:?}\n",
                    door.display().to_string(),
                    admin.display().to_string()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
            let mut attacker = std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&binary)
                .arg("--config")
                .arg(&config)
                .arg("daemon")
                .env("HOME", &shared)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let listening = eventually(|| {
                std::os::unix::net::UnixStream::connect(&admin).is_ok()
                    && std::os::unix::net::UnixStream::connect(&door).is_ok()
            });
            let status = std::process::Command::new(mcpx_bin())
                .args(["status", "--socket"])
                .arg(&admin)
                .output()
                .unwrap();
            let editor = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(&config)
                .args(["serve", "--attach"])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let _ = attacker.kill();
            let _ = attacker.wait();
            let _ = std::fs::remove_dir_all(&shared);
            assert!(listening, "the other user's daemon did not start");
            for out in [status, editor] {
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(!out.status.success(), "{stderr}");
                assert!(
                    stderr.contains("served by another user (uid 65534)"),
                    "{stderr}"
                );
            }
        }

        #[test]
        fn the_socket_is_0600_in_a_0700_directory_and_another_user_is_refused() {
            let (_d, socket, _dir) = daemon();
            assert_eq!(
                std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777,
                0o600
            );
            assert_eq!(
                std::fs::metadata(socket.parent().unwrap())
                    .unwrap()
                    .permissions()
                    .mode()
                    & 0o777,
                0o700
            );
            // Another user (nobody) runs `mcpx status` against it, from a copy it may execute.
            let shared = PathBuf::from(format!("/tmp/mcpx-admin-test-{}", std::process::id()));
            std::fs::create_dir_all(&shared).unwrap();
            std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
            let binary = shared.join("mcpx");
            std::fs::copy(mcpx_bin(), &binary).unwrap();
            let out = std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&binary)
                .args(["status", "--socket"])
                .arg(&socket)
                .output()
                .unwrap();
            let _ = std::fs::remove_dir_all(&shared);
            assert!(!out.status.success());
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }

        #[test]
        fn mcpx_status_prints_upstreams_sessions_and_requests() {
            let (d, socket, _dir) = daemon();
            let session = legacy_session(&d);
            let _call = sleeping_call(&d, &session, 10);
            snapshot_where(&socket, |s| !s.requests.is_empty());
            let out = std::process::Command::new(mcpx_bin())
                .args(["status", "--socket"])
                .arg(&socket)
                .output()
                .unwrap();
            assert!(out.status.success());
            let text = String::from_utf8_lossy(&out.stdout);
            for expected in [
                "fixture",
                "ready",
                "admin-test-client",
                &format!("{}…", &session[..8]),
                "fixture__sleep",
                "requests in flight (1)",
            ] {
                assert!(text.contains(expected), "{expected} missing from:\n{text}");
            }
            // A session id is a bearer credential: shown by its start only.
            assert!(!text.contains(&session), "{text}");
            let json = std::process::Command::new(mcpx_bin())
                .args(["status", "--json", "--socket"])
                .arg(&socket)
                .output()
                .unwrap();
            let parsed: Snapshot = serde_json::from_slice(&json.stdout).unwrap();
            assert_eq!(parsed.requests.len(), 1);
        }

        /// A console line past the cap is read past, never held, and answered with a short
        /// error (never an echo of it); the console carries on.
        #[test]
        fn a_huge_admin_line_is_refused_briefly_and_not_held() {
            let (d, socket, _dir) = daemon();
            let before = rss(d.pid());
            let console = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            console.set_read_timeout(Some(PATIENCE)).unwrap();
            let huge = vec![b'x'; 32 * 1024 * 1024];
            let mut writer = console.try_clone().unwrap();
            let sender = std::thread::spawn(move || {
                writer.write_all(&huge).unwrap();
                writeln!(
                    writer,
                    "\n{}",
                    serde_json::to_string(&Command::Snapshot).unwrap()
                )
                .unwrap();
            });
            let mut lines = BufReader::new(console).lines();
            let refusal = lines.next().unwrap().unwrap();
            assert!(refusal.len() < 1000, "{} bytes", refusal.len());
            assert!(refusal.contains("is not a command"), "{refusal}");
            let snapshot: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!(snapshot["type"], "snapshot");
            sender.join().unwrap();
            let grown = rss(d.pid()).saturating_sub(before);
            assert!(grown < 16 * 1024 * 1024, "the daemon grew by {grown} bytes");
        }

        /// A client's name is the client's to choose: `mcpx status` shows its escape sequences,
        /// newlines and bidi overrides as text, so it cannot retitle or clear the terminal,
        /// forge lines, or reorder what is read.
        #[test]
        fn mcpx_status_shows_a_hostile_client_name_escaped() {
            let (d, socket, _dir) = daemon();
            let name = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\nupstreams (9):\u{202e}txt";
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}});
            assert_eq!(d.post(&[], init.to_string().as_bytes()).status, 200);
            snapshot_where(&socket, |s| s.sessions.iter().any(|x| x.client.is_some()));
            let out = std::process::Command::new(mcpx_bin())
                .args(["status", "--socket"])
                .arg(&socket)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{202e}'),
                "{text:?}"
            );
            assert!(!text.contains("\nupstreams (9)"), "{text}");
            assert!(text.contains("evil\\u{1b}]0;pwned\\u{7}"), "{text}");
        }

        #[test]
        fn each_mcpx_serve_has_its_own_socket_named_by_pid_removed_on_exit() {
            let dir = tempfile::tempdir().unwrap();
            let daemon_socket = dir.path().join("admin.sock");
            let mut mcpx = Serve::start(&format!(
                "[admin]\nsocket = {:?}\n",
                daemon_socket.display().to_string()
            ));
            mcpx.call(1, "ping", json!({}));
            let sockets: Vec<PathBuf> = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert_eq!(sockets.len(), 1, "{sockets:?}");
            assert!(sockets[0]
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("serve-"));
            let s = snapshot(&sockets[0]);
            assert_eq!(s.sessions[0].transport, "stdio");
            mcpx.close_stdin();
            assert!(mcpx.wait(PATIENCE).unwrap().success());
            assert!(!sockets[0].exists(), "the socket outlived its process");
        }

        /// A socket path whose directory cannot be made (its parent is a file), even for root.
        fn unmakeable_socket(dir: &Path) -> String {
            let file = dir.join("a-file");
            std::fs::write(&file, "").unwrap();
            file.join("admin.sock").display().to_string()
        }

        #[test]
        fn the_daemon_stops_at_start_with_a_clear_error_when_its_socket_cannot_be_made() {
            let dir = tempfile::tempdir().unwrap();
            let socket = unmakeable_socket(dir.path());
            let config = dir.path().join("mcpx.toml");
            std::fs::write(
                &config,
                format!("[daemon]\naddress = \"127.0.0.1:0\"\n[admin]\nsocket = {socket:?}\n"),
            )
            .unwrap();
            let mut child = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(&config)
                .arg("daemon")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let Some(status) = wait_exit(&mut child, PATIENCE) else {
                child.kill().unwrap();
                panic!("the daemon kept running without its admin socket");
            };
            assert!(!status.success());
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
            assert!(
                stderr.contains("cannot open the admin socket") && stderr.contains("a-file"),
                "{stderr}"
            );
        }

        #[test]
        fn mcpx_serve_without_its_socket_still_serves_the_editor() {
            let dir = tempfile::tempdir().unwrap();
            let socket = unmakeable_socket(dir.path());
            let mut mcpx = Serve::start(&format!("[admin]\nsocket = {socket:?}\n"));
            assert_eq!(mcpx.call(1, "ping", json!({}))["result"], json!({}));
            assert!(mcpx.log_shows("no admin socket"));
        }
    }

    pub mod tui {
        use super::super::*;
        use common::console::{screen_lacks, screen_shows, tmux};

        /// Under tmux: the console shows a real client's session and in-flight call, cancels the
        /// call with `c` and `y`, and `q` leaves the shell's screen as it was.
        #[test]
        fn the_console_shows_cancels_and_quits_cleanly() {
            let (d, socket, _dir) = daemon();
            let session = legacy_session(&d);
            let _call = sleeping_call(&d, &session, 11);
            snapshot_where(&socket, |s| !s.requests.is_empty());
            let tui = workspace_bin("mcpx-tui", "mcpx-tui");
            let name = format!("mcpx-tui-test-{}", std::process::id());
            tmux(&["kill-session", "-t", &name]);
            tmux(&[
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "120",
                "-y",
                "24",
                "bash --norc --noprofile",
            ]);
            tmux(&["send-keys", "-t", &name, "PS1='ready$ '; clear", "Enter"]);
            screen_shows(&name, "ready$");
            tmux(&[
                "send-keys",
                "-t",
                &name,
                &format!("{} --socket {}", tui.display(), socket.display()),
                "Enter",
            ]);
            let screen = screen_shows(&name, "fixture__sleep");
            assert!(screen.contains("4 Requests (1)"), "{screen}");
            tmux(&["send-keys", "-t", &name, "2"]);
            screen_shows(&name, "admin-test-clie");
            tmux(&["send-keys", "-t", &name, "4"]);
            tmux(&["send-keys", "-t", &name, "c"]);
            screen_shows(&name, "(y/n)");
            tmux(&["send-keys", "-t", &name, "y"]);
            screen_shows(&name, "cancelled");
            assert!(d.log_shows("fixture: cancelled request"), "{}", d.stderr());
            screen_shows(&name, "4 Requests (0)");
            // `p` lists the running mcpx processes beside the socket; Esc closes the list.
            tmux(&["send-keys", "-t", &name, "p"]);
            screen_shows(&name, "running mcpx");
            screen_shows(&name, &socket.display().to_string());
            tmux(&["send-keys", "-t", &name, "Escape"]);
            screen_lacks(&name, "running mcpx");
            tmux(&["send-keys", "-t", &name, "q"]);
            let screen = screen_shows(&name, "ready$");
            tmux(&["kill-session", "-t", &name]);
            assert!(
                !screen.contains("Requests"),
                "the console left itself on the screen:\n{screen}"
            );
        }

        /// The console says when mcpx goes away, and attaches again when it comes back.
        #[test]
        fn the_console_survives_the_daemon_restarting() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let config = format!("[admin]\nsocket = {:?}\n", socket.display().to_string());
            let mut first = Daemon::start(&config, "");
            let tui = workspace_bin("mcpx-tui", "mcpx-tui");
            let name = format!("mcpx-tui-restart-{}", std::process::id());
            tmux(&["kill-session", "-t", &name]);
            tmux(&[
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "120",
                "-y",
                "24",
                &format!("{} --socket {}", tui.display(), socket.display()),
            ]);
            screen_shows(&name, "(pid ");
            assert!(first.signal("TERM").unwrap().success());
            screen_shows(&name, "disconnected");
            let _second = Daemon::start(&config, "");
            let screen = screen_shows(&name, "(pid ");
            tmux(&["kill-session", "-t", &name]);
            assert!(!screen.contains("disconnected"), "{screen}");
        }
    }

    /// Faults from the client side, with the ledger as witness that nothing is lost or left.
    pub mod faults {
        use super::super::*;

        /// How each request of the storm ends.
        #[derive(Clone, Copy, PartialEq)]
        enum Fate {
            /// A modern call that finishes; its reply must be a result.
            ModernAnswered,
            /// A modern call whose client hangs up mid-call.
            ModernDisconnected,
            /// A legacy call that finishes.
            LegacyAnswered,
            /// A legacy call cancelled with `notifications/cancelled`.
            LegacyCancelled,
        }

        fn sleep_call(id: i64, ms: Option<u64>) -> Value {
            let arguments = ms.map_or(json!({}), |ms| json!({"ms": ms}));
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "fixture__sleep", "arguments": arguments}})
        }

        fn read_all(mut stream: std::net::TcpStream) -> String {
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut stream, &mut raw).unwrap();
            String::from_utf8_lossy(&raw).into_owned()
        }

        fn run(d: &Daemon, socket: &Path, session: &str, id: i64, fate: Fate) {
            let in_session = [("Mcp-Session-Id", session.as_bytes())];
            match fate {
                Fate::ModernAnswered => {
                    let ms = fastrand::u64(0..30);
                    let reply = d.modern(
                        id,
                        "tools/call",
                        json!({"name": "fixture__sleep", "arguments": {"ms": ms}}),
                    );
                    assert_eq!(
                        reply.json()["result"]["content"][0]["text"],
                        "slept",
                        "{id}"
                    );
                }
                Fate::ModernDisconnected => {
                    let (headers, body) = modern_request(
                        id,
                        "tools/call",
                        json!({"name": "fixture__sleep", "arguments": {}}),
                    );
                    let refs = header_refs(&headers);
                    let stream = d.send_post(&refs, body.to_string().as_bytes());
                    std::thread::sleep(Duration::from_millis(fastrand::u64(0..30)));
                    drop(stream);
                }
                Fate::LegacyAnswered => {
                    let ms = fastrand::u64(0..30);
                    let call = sleep_call(id, Some(ms)).to_string();
                    let text = read_all(d.send_post(&in_session, call.as_bytes()));
                    assert!(text.contains("slept"), "{id}: {text}");
                }
                Fate::LegacyCancelled => {
                    let call = sleep_call(id, None).to_string();
                    let stream = d.send_post(&in_session, call.as_bytes());
                    // Cancelling a request mcpx has not yet read would name nothing.
                    snapshot_where(socket, |s| s.requests.iter().any(|r| r.id == json!(id)));
                    std::thread::sleep(Duration::from_millis(fastrand::u64(0..30)));
                    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "storm"}});
                    assert_eq!(
                        d.post(&in_session, cancel.to_string().as_bytes()).status,
                        202
                    );
                    // The cancelled request gets no response: its stream ends empty.
                    let text = read_all(stream);
                    assert!(!text.contains("slept"), "{id}: {text}");
                }
            }
        }

        #[test]
        fn a_storm_of_disconnects_and_cancellations_leaves_nothing_in_flight_and_loses_no_answer() {
            let (d, socket, _dir) = daemon();
            let session = legacy_session(&d);
            let before = snapshot(&socket).totals;
            let fates = [
                Fate::ModernAnswered,
                Fate::ModernDisconnected,
                Fate::LegacyAnswered,
                Fate::LegacyCancelled,
            ];
            let (threads, per_thread) = (6, 40);
            let ran: Vec<Fate> = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads)
                    .map(|thread| {
                        let (d, socket, session) = (&d, &socket, &session);
                        scope.spawn(move || {
                            (0..per_thread)
                                .map(|n| {
                                    let fate = fates[fastrand::usize(..fates.len())];
                                    run(d, socket, session, 1000 * (thread + 1) + n, fate);
                                    fate
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().unwrap())
                    .collect()
            });
            let count = |wanted: &[Fate]| ran.iter().filter(|f| wanted.contains(f)).count() as u64;
            let answered = count(&[Fate::ModernAnswered, Fate::LegacyAnswered]);
            let (cancelled, disconnected) = (
                count(&[Fate::LegacyCancelled]),
                count(&[Fate::ModernDisconnected]),
            );
            let s = snapshot_where(&socket, |s| {
                s.requests.is_empty() && s.totals.answered - before.answered == answered
            });
            let newly_cancelled = s.totals.cancelled - before.cancelled;
            // A client that hung up before its request was read leaves nothing to cancel.
            assert!(
                (cancelled..=cancelled + disconnected).contains(&newly_cancelled),
                "{cancelled} cancelled and {disconnected} disconnected, yet {:?}",
                s.totals
            );
            assert_eq!(s.totals.failed, before.failed);
            // Every call that was told to sleep forever was cancelled at the upstream too.
            let deadline = Instant::now() + PATIENCE;
            loop {
                let log = d.stderr();
                let started = log.matches("fixture: sleeping request").count();
                let cancelled = log.matches("fixture: cancelled request").count();
                let finished = answered as usize;
                if started == finished + cancelled {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{started} upstream calls started, {finished} answered, {cancelled} cancelled"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

mod v2026_07_28 {
    mod admin {
        use super::super::*;

        /// A call waiting between rounds is visible as such, and leaves no trace once its state
        /// expires: nothing in flight, nothing awaiting input.
        #[test]
        fn a_call_awaiting_input_is_shown_and_leaves_nothing_behind_when_it_expires() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let config = format!(
                "[admin]\nsocket = {:?}\n[transport]\ninputTimeout = \"500ms\"\n{}",
                socket.display().to_string(),
                fixture_config("")
            );
            let d = Daemon::start(&config, "");
            let params = json!({"name": "fixture__ask", "arguments": {},
                "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
            let reply = d.modern(1, "tools/call", params);
            assert_eq!(reply.json()["result"]["resultType"], "input_required");
            let parked = snapshot(&socket);
            assert_eq!(parked.awaiting_input, 1);
            assert!(parked.requests.is_empty(), "{:?}", parked.requests);
            let status = std::process::Command::new(mcpx_bin())
                .args(["status", "--socket"])
                .arg(&socket)
                .output()
                .unwrap();
            assert!(String::from_utf8_lossy(&status.stdout)
                .contains("awaiting client input (2026-07-28 calls between rounds): 1"));
            snapshot_where(&socket, |s| s.awaiting_input == 0);
            assert!(d.log_shows("fixture: told to cancel request"));
        }
    }
}
