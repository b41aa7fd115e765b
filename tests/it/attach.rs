//! Editors sharing the daemon's upstreams: `mcpx serve --attach` carries an editor's stdio to the
//! daemon's local socket, where the daemon serves it with the same stdio transport and its one
//! set of upstreams.

use crate::common::http::Daemon;
use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A daemon with the fixture behind it, its sockets in a directory of the test's.
fn daemon() -> (Daemon, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.sock");
    let config = format!("[admin]\nsocket = {:?}\n{}", admin, fixture_config(""));
    let daemon = Daemon::start(&config, "");
    let door = dir.path().join("serve.sock");
    let deadline = Instant::now() + PATIENCE;
    while std::os::unix::net::UnixStream::connect(&door).is_err() {
        assert!(Instant::now() < deadline, "no local socket at {door:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    (daemon, dir)
}

/// Every process below `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            found.push(child);
            found.extend(descendants(child));
        }
    }
    found
}

/// How many fixture upstreams run below `pid`.
fn fixtures_below(pid: u32) -> usize {
    let comm = |p: &u32| std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
    descendants(pid)
        .iter()
        .filter(|p| comm(p).starts_with("fixture-upstrea"))
        .count()
}

/// `mcpx serve --attach` on `config`, run to its end with no input: its exit and stderr.
fn attach_alone(config: &Path) -> (bool, String) {
    let out = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .args(["serve", "--attach"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mcpx daemon` on the configuration file `config`, once its local socket answers.
fn start_daemon(config: &Path, door: &Path) -> std::process::Child {
    let _ = std::fs::remove_file(door);
    let child = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .arg("daemon")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while std::os::unix::net::UnixStream::connect(door).is_err() {
        assert!(Instant::now() < deadline, "no local socket at {door:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// An attached editor that declared it can answer elicitation.
fn asking_editor(daemon: &Daemon) -> Serve {
    let mut editor = Serve::attached(daemon.config_path());
    editor.call(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "editor", "version": "1"}}),
    );
    editor.notify("notifications/initialized", json!({}));
    editor
}

mod every_revision {
    pub mod attach {
        use super::super::*;

        /// One editor's cancellation reaches the shared upstream; the other editors' calls to it
        /// are not touched.
        #[test]
        fn a_cancellation_from_one_editor_leaves_the_others_calls_alone() {
            let (daemon, _dir) = daemon();
            let mut first = Serve::attached(daemon.config_path());
            let mut second = Serve::attached(daemon.config_path());
            for editor in [&mut first, &mut second] {
                editor.initialize("2025-11-25");
            }
            let sleep = |ms: u64| json!({"name": "fixture__sleep", "arguments": {"ms": ms}});
            first.request(1, "tools/call", sleep(10_000));
            second.request(1, "tools/call", sleep(500));
            std::thread::sleep(Duration::from_millis(100));
            first.notify("notifications/cancelled", json!({"requestId": 1}));
            let answered = second.response(1);
            assert!(answered.get("result").is_some(), "{answered}");
            assert!(
                daemon.log_shows("fixture: cancelled request"),
                "{}",
                daemon.stderr()
            );
            let withheld = first.drain(Duration::from_millis(200));
            assert!(withheld.iter().all(|m| m["id"] != 1), "{withheld:?}");
        }

        /// The console cancels an attached editor's request as any other: the upstream is told,
        /// and the editor gets one error saying the owner cancelled it.
        #[test]
        fn the_console_cancels_an_attached_editors_request() {
            use mcpx::admin::protocol::{Command, Reply, Snapshot};
            let (daemon, dir) = daemon();
            let admin = dir.path().join("admin.sock");
            let mut editor = Serve::attached(daemon.config_path());
            editor.initialize("2025-11-25");
            editor.request(
                7,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 10000}}),
            );
            assert!(daemon.log_shows("fixture: sleeping request"));
            let snapshot = match mcpx::admin::ask(&admin, &Command::Snapshot).unwrap() {
                Reply::Snapshot(snapshot) => snapshot,
                other => panic!("{other:?}"),
            };
            let Snapshot { requests, .. } = *snapshot;
            let key = requests[0].key;
            let cancelled = mcpx::admin::ask(&admin, &Command::Cancel { request: key }).unwrap();
            assert!(matches!(cancelled, Reply::Done { .. }), "{cancelled:?}");
            assert!(
                daemon.log_shows("fixture: cancelled request"),
                "{}",
                daemon.stderr()
            );
            // Its editor never asked: it is told, once, that the owner cancelled it.
            let told = editor.response(7);
            assert_eq!(told["error"]["code"], -32800, "{told}");
            let echoed = editor.call(
                8,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "on"}}),
            );
            assert_eq!(echoed["result"]["content"][0]["text"], "on", "{echoed}");
            let rest = editor.drain(Duration::from_millis(200));
            assert!(rest.iter().all(|m| m["id"] != 7), "{rest:?}");
        }

        /// An upstream's question goes to the editor whose call asked it, and to no other.
        #[test]
        fn a_question_reaches_the_editor_that_made_the_call_and_no_other() {
            let (daemon, _dir) = daemon();
            let mut asker = asking_editor(&daemon);
            let mut bystander = asking_editor(&daemon);
            asker.request(
                1,
                "tools/call",
                json!({"name": "fixture__ask", "arguments": {}}),
            );
            let question = loop {
                let message = asker.next();
                if message["method"] == "elicitation/create" {
                    break message;
                }
            };
            asker.send(json!({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}}}));
            let answered = asker.response(1);
            assert_eq!(
                answered["result"]["content"][0]["text"], "accept: Ada",
                "{answered}"
            );
            let seen = bystander.drain(Duration::from_millis(200));
            assert!(
                seen.iter().all(|m| m["method"] != "elicitation/create"),
                "{seen:?}"
            );
        }

        /// Another user's process cannot attach, even where the socket's permissions would let
        /// it connect: the daemon checks the peer's uid, and the other user's `mcpx serve`
        /// already refuses a daemon that is not its own.
        #[test]
        fn another_users_process_is_refused_on_the_socket() {
            use std::os::unix::fs::PermissionsExt;
            let (daemon, dir) = daemon();
            let door = dir.path().join("serve.sock");
            let open = |path: &Path, mode| {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
            };
            open(dir.path(), 0o755);
            open(&door, 0o666);
            open(daemon.config_path(), 0o644);
            let out = std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(mcpx_bin())
                .arg("--config")
                .arg(daemon.config_path())
                .args(["serve", "--attach"])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{stderr}");
            assert!(stderr.contains("another user"), "{stderr}");
        }

        /// A `systemctl --user restart` under an attached editor: the call in flight gets an
        /// error, and the editor's next request is served by the new daemon in the same session.
        #[test]
        fn an_attached_editor_goes_on_after_the_daemon_restarts() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("config.toml");
            let admin = dir.path().join("admin.sock");
            let door = dir.path().join("serve.sock");
            let text = format!(
                "[daemon]\naddress = \"127.0.0.1:0\"\nshutdownGrace = \"100ms\"\n[admin]\nsocket = {admin:?}\n{}",
                fixture_config("")
            );
            std::fs::write(&config, text).unwrap();
            let mut first = start_daemon(&config, &door);
            let mut editor = Serve::attached(&config);
            editor.initialize("2025-11-25");
            editor.request(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 10000}}),
            );
            std::thread::sleep(Duration::from_millis(200));
            std::process::Command::new("kill")
                .args(["-TERM", &first.id().to_string()])
                .status()
                .unwrap();
            first.wait().unwrap();
            let failed = editor.response(1);
            assert!(failed.get("error").is_some(), "{failed}");
            let mut second = start_daemon(&config, &door);
            let echoed = editor.call(
                2,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "still here"}}),
            );
            assert_eq!(
                echoed["result"]["content"][0]["text"], "still here",
                "{echoed}"
            );
            // The replayed initialize was answered to the shim, not to the editor again.
            let extra = editor.drain(Duration::from_millis(200));
            assert!(extra.iter().all(|m| m["id"] != 0), "{extra:?}");
            let _ = second.kill();
            let _ = second.wait();
        }

        #[test]
        fn attached_editors_share_the_daemons_one_upstream_process() {
            let (daemon, dir) = daemon();
            let mut editors: Vec<Serve> = (0..3)
                .map(|_| Serve::attached(daemon.config_path()))
                .collect();
            for (n, editor) in editors.iter_mut().enumerate() {
                editor.initialize("2025-11-25");
                let text = format!("editor {n}");
                let echoed = editor.call(
                    1,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": text}}),
                );
                assert_eq!(echoed["result"]["content"][0]["text"], text, "{echoed}");
            }
            assert_eq!(fixtures_below(daemon.pid()), 1);
            for editor in &editors {
                assert_eq!(
                    fixtures_below(editor.pid()),
                    0,
                    "an attached serve started upstreams"
                );
            }
            let status = std::process::Command::new(mcpx_bin())
                .args(["status", "--json", "--socket"])
                .arg(dir.path().join("admin.sock"))
                .output()
                .unwrap();
            let snapshot: Value = serde_json::from_slice(&status.stdout).unwrap();
            let mut editor_pids: Vec<u64> = snapshot["sessions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s["transport"] == "attached")
                .filter_map(|s| s["editorPid"].as_u64())
                .collect();
            editor_pids.sort();
            let mut expected: Vec<u64> = editors.iter().map(|e| e.pid() as u64).collect();
            expected.sort();
            assert_eq!(editor_pids, expected, "{snapshot}");
        }

        #[test]
        fn an_attached_session_keeps_the_stdio_rules_cancellation_and_the_eof_drain() {
            let (daemon, _dir) = daemon();
            let mut editor = Serve::attached(daemon.config_path());
            editor.initialize("2025-11-25");
            editor.request(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 5000}}),
            );
            editor.notify("notifications/cancelled", json!({"requestId": 1}));
            editor.request(
                2,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 300}}),
            );
            editor.close_stdin();
            // The cancelled call is never answered; the one in flight at EOF is, then the session ends.
            let answered = editor.response(2);
            assert!(answered.get("result").is_some(), "{answered}");
            let rest = editor.drain(Duration::from_millis(300));
            assert!(rest.iter().all(|m| m["id"] != 1), "{rest:?}");
            assert!(editor.wait(PATIENCE).is_some_and(|s| s.success()));
        }

        #[test]
        fn serve_attaches_by_default_when_a_daemon_runs_its_configuration_and_standalone_does_not()
        {
            let (daemon, _dir) = daemon();
            let mut shared = Serve::with_config_file(daemon.config_path());
            let mut own = Serve::spawn(daemon.config_path(), &["--standalone"]);
            for editor in [&mut shared, &mut own] {
                editor.initialize("2025-11-25");
                let echoed = editor.call(
                    1,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "hi"}}),
                );
                assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
            }
            assert_eq!(fixtures_below(shared.pid()), 0);
            assert_eq!(fixtures_below(own.pid()), 1);
            assert_eq!(fixtures_below(daemon.pid()), 1);
        }

        /// Files are compared by canonical path: `--config NAME` from the file's directory is
        /// the daemon's file; the same NAME in another directory (a copy) is not.
        #[test]
        fn a_relative_config_path_attaches_to_the_daemon_on_that_file_and_a_copy_elsewhere_does_not(
        ) {
            let (daemon, _dir) = daemon();
            let config = daemon.config_path();
            let (dir, name) = (config.parent().unwrap(), config.file_name().unwrap());
            let attach_from = |cwd: &Path| {
                let out = std::process::Command::new(mcpx_bin())
                    .arg("--config")
                    .arg(name)
                    .args(["serve", "--attach"])
                    .current_dir(cwd)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .unwrap();
                (
                    out.status.success(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                )
            };
            let (served, stderr) = attach_from(dir);
            assert!(served, "{stderr}");
            let elsewhere = tempfile::tempdir().unwrap();
            std::fs::copy(config, elsewhere.path().join(name)).unwrap();
            let (served, stderr) = attach_from(elsewhere.path());
            assert!(!served && stderr.contains("refused"), "{stderr}");
        }

        #[test]
        fn a_serve_on_another_configuration_is_refused_with_the_reason() {
            let (_daemon, dir) = daemon();
            let other = dir.path().join("other.toml");
            let admin = dir.path().join("admin.sock");
            std::fs::write(&other, format!("[admin]\nsocket = {admin:?}\n")).unwrap();
            let (served, stderr) = attach_alone(&other);
            assert!(!served);
            assert!(
                stderr.contains("refused") && stderr.contains("other.toml"),
                "{stderr}"
            );
        }

        #[test]
        fn attach_without_a_daemon_fails_and_says_so() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("config.toml");
            let admin: PathBuf = dir.path().join("admin.sock");
            std::fs::write(&config, format!("[admin]\nsocket = {admin:?}\n")).unwrap();
            let (served, stderr) = attach_alone(&config);
            assert!(!served);
            assert!(stderr.contains("no mcpx daemon answers"), "{stderr}");
        }
    }
}
