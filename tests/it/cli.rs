//! The command line for people: `mcpx tools` and `mcpx call`, on the real binary.

use crate::common::*;
use std::io::Write;
use std::process::{Command, Output};

fn mcpx(config: &str, args: &[&str]) -> Output {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(config.as_bytes()).unwrap();
    Command::new(mcpx_bin())
        .arg("--config")
        .arg(file.path())
        .args(args)
        .output()
        .unwrap()
}

mod every_revision {
    pub mod config {
        use super::super::*;

        /// `$XDG_STATE_HOME/mcpx` holds keys, credentials and the audit key: only its user may
        /// enter it, whether mcpx makes it or an older mcpx left it 0755.
        #[test]
        fn the_state_directory_is_private_made_or_found() {
            use std::os::unix::fs::PermissionsExt;
            let mode = |path: &std::path::Path| {
                std::fs::metadata(path).unwrap().permissions().mode() & 0o777
            };
            for existing in [false, true] {
                let home = tempfile::tempdir().unwrap();
                let state = home.path().join("state/mcpx");
                if existing {
                    std::fs::create_dir_all(&state).unwrap();
                    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755))
                        .unwrap();
                }
                let config = home.path().join("mcpx.toml");
                let audit = state.join("audit.jsonl");
                std::fs::write(
                    &config,
                    format!("[audit]\npath = {:?}\n", audit.display().to_string()),
                )
                .unwrap();
                let mut command = serve_command(&config, &[]);
                command.env("XDG_STATE_HOME", home.path().join("state"));
                let mut serve = Serve::from_command(command);
                serve.initialize("2025-11-25");
                assert!(
                    eventually(|| state.join("audit.key").exists()),
                    "{}",
                    serve.stderr()
                );
                assert_eq!(mode(&state), 0o700, "existing: {existing}");
                assert_eq!(
                    mode(&state.join("audit.key")) & 0o077,
                    0,
                    "existing: {existing}"
                );
            }
        }

        #[test]
        fn a_cap_of_zero_stops_mcpx_naming_the_file_line_and_key() {
            for (text, key, line) in [
                ("[daemon]\nmaxConnections = 0\n", "daemon.maxConnections", 2),
                (
                    "\n[transport]\nmaxSessions = 0\n",
                    "transport.maxSessions",
                    3,
                ),
                (
                    "[transport]\nmaxMessageBytes = 0\n",
                    "transport.maxMessageBytes",
                    2,
                ),
                (
                    "[servers.a]\ncommand = \"x\"\nmaxInFlight = 0\n",
                    "servers.a.maxInFlight",
                    3,
                ),
            ] {
                let mut file = tempfile::NamedTempFile::new().unwrap();
                file.write_all(text.as_bytes()).unwrap();
                for args in [&["serve"][..], &["daemon"], &["tools"]] {
                    let out = Command::new(mcpx_bin())
                        .arg("--config")
                        .arg(file.path())
                        .args(args)
                        .stdin(std::process::Stdio::null())
                        .output()
                        .unwrap();
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    assert_eq!(out.status.code(), Some(2), "{text} {args:?}: {stderr}");
                    let place = format!("{}:{line}:", file.path().display());
                    assert!(
                        stderr.contains(&place) && stderr.contains(key),
                        "{text} {args:?}: {stderr}"
                    );
                    assert!(out.stdout.is_empty(), "{text} {args:?}");
                }
            }
        }
    }

    pub mod cli {
        use super::super::*;

        #[test]
        fn tools_groups_the_catalog_by_upstream_with_state_and_revision() {
            let out = mcpx(&fixture_config(""), &["tools"]);
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(text.contains("mcpx (built-in)"), "{text}");
            assert!(
                text.contains("fixture [ready, revision 2026-07-28]"),
                "{text}"
            );
            assert!(text.contains("  fixture__echo"), "{text}");
        }

        #[test]
        fn call_prints_the_result_and_exits_zero() {
            let out = mcpx(
                &fixture_config(""),
                &["call", "fixture__echo", "--args", r#"{"text":"hello"}"#],
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(result["content"][0]["text"], "hello");
        }

        #[test]
        fn call_exits_non_zero_on_a_tool_error_or_an_unknown_tool() {
            assert!(!mcpx(&fixture_config(""), &["call", "fixture__fail"])
                .status
                .success());
            let unknown = mcpx("", &["call", "nope"]);
            assert!(!unknown.status.success());
            assert!(String::from_utf8_lossy(&unknown.stderr).contains("Unknown tool"));
        }

        /// With a daemon running on the same configuration, `mcpx call` is served by it: the
        /// same server process answers (its pid), the daemon writes the call's audit line, and
        /// no server is started for the command; `mcpx tools` lists the daemon's catalog.
        /// `--standalone` starts a server of its own.
        #[test]
        fn call_and_tools_use_the_daemon_running_on_the_same_configuration() {
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let config = format!(
                "[audit]\npath = {:?}\nkeyFile = {:?}\n[servers.fixture]\ncommand = {:?}\nargs = [\"--show-environment\"]\n",
                audit.display().to_string(),
                dir.path().join("audit.key").display().to_string(),
                fixture_bin()
            );
            let d = crate::common::http::Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let pid_of = |result: &serde_json::Value| result["structuredContent"]["pid"].clone();
            let params =
                serde_json::json!({"name": "fixture__environment", "arguments": {"names": []}});
            let direct = d.modern(1, "tools/call", params).json();
            let daemons = pid_of(&direct["result"]);
            assert!(daemons.is_u64(), "{direct}");
            let run = |args: &[&str]| {
                Command::new(mcpx_bin())
                    .arg("--config")
                    .arg(d.config_path())
                    .args(args)
                    .output()
                    .unwrap()
            };
            let call = ["call", "fixture__environment", "--args", r#"{"names":[]}"#];
            let out = run(&call);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(pid_of(&result), daemons, "{result}");
            let lines = || {
                let text = std::fs::read_to_string(&audit).unwrap_or_default();
                text.lines()
                    .filter(|l| l.contains("fixture__environment"))
                    .count()
            };
            assert!(
                eventually(|| lines() == 2),
                "{}",
                std::fs::read_to_string(&audit).unwrap_or_default()
            );
            let listed = run(&["tools"]);
            let text = String::from_utf8_lossy(&listed.stdout);
            assert!(
                text.contains("fixture [ready, revision 2026-07-28]"),
                "{text}"
            );
            assert!(text.contains("  fixture__environment"), "{text}");
            assert_eq!(
                d.stderr().matches("fixture: pid").count(),
                1,
                "{}",
                d.stderr()
            );
            let mut standalone = call.to_vec();
            standalone.push("--standalone");
            let out = run(&standalone);
            let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(pid_of(&result).is_u64(), "{result}");
            assert_ne!(pid_of(&result), daemons, "{result}");
        }

        #[test]
        fn runs_with_no_configuration_at_all() {
            let out = Command::new(mcpx_bin())
                .args(["call", "mcpx__about"])
                .env("XDG_CONFIG_HOME", "/nonexistent")
                .output()
                .unwrap();
            assert!(out.status.success());
            assert!(String::from_utf8_lossy(&out.stdout).contains("2026-07-28"));
        }
    }
}

mod packaging {
    pub mod daemon {
        use super::super::*;
        use std::os::unix::net::UnixDatagram;

        /// As systemd runs the unit: a notify socket in the environment; READY=1 arrives once the
        /// daemon accepts connections, STOPPING=1 and a clean exit follow SIGTERM.
        #[test]
        fn the_daemon_notifies_readiness_and_stops_cleanly_on_sigterm() {
            let dir = tempfile::tempdir().unwrap();
            let socket_path = dir.path().join("notify.sock");
            let socket = UnixDatagram::bind(&socket_path).unwrap();
            socket.set_read_timeout(Some(PATIENCE)).unwrap();
            let mut config = tempfile::NamedTempFile::new().unwrap();
            write!(
                config,
                "[daemon]\naddress = \"127.0.0.1:0\"\n[admin]\nsocket = {:?}\n",
                dir.path().join("admin.sock").display().to_string()
            )
            .unwrap();
            let mut child = Command::new(mcpx_bin())
                .arg("--config")
                .arg(config.path())
                .arg("daemon")
                .env("NOTIFY_SOCKET", &socket_path)
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let mut message = [0u8; 256];
            let n = socket.recv(&mut message).expect("no READY=1 arrived");
            assert!(String::from_utf8_lossy(&message[..n]).contains("READY=1"));
            Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .unwrap();
            let n = socket.recv(&mut message).expect("no STOPPING=1 arrived");
            assert!(String::from_utf8_lossy(&message[..n]).contains("STOPPING=1"));
            let status = wait_exit(&mut child, PATIENCE).expect("the daemon did not stop");
            assert!(status.success());
        }
    }

    pub mod import {
        use super::super::*;

        #[test]
        fn import_prints_tables_that_load() {
            let mut editor = tempfile::NamedTempFile::new().unwrap();
            write!(
                editor,
                r#"{{"mcpServers": {{"time": {{"command": "mcp-server-time"}}}}}}"#
            )
            .unwrap();
            let out = mcpx("", &["import", editor.path().to_str().unwrap()]);
            assert!(out.status.success());
            let tables = String::from_utf8(out.stdout).unwrap();
            assert!(
                mcpx::config::Config::parse(&tables)
                    .unwrap()
                    .servers
                    .contains_key("time"),
                "{tables}"
            );
        }

        /// A remote server that answers 401 to everything, as one that needs a login does.
        fn refusing_server() -> std::net::SocketAddr {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            std::thread::spawn(move || {
                for mut stream in listener.incoming().flatten() {
                    let mut request = [0u8; 4096];
                    let _ = std::io::Read::read(&mut stream, &mut request);
                    let _ = stream.write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer scope=\"read\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                }
            });
            addr
        }

        #[test]
        fn import_says_which_remote_servers_need_a_login() {
            let addr = refusing_server();
            let mut editor = tempfile::NamedTempFile::new().unwrap();
            write!(
                editor,
                r#"{{"servers": {{"linear": {{"type": "http", "url": "http://{addr}/mcp"}}, "time": {{"command": "mcp-server-time"}}}}}}"#
            )
            .unwrap();
            let out = mcpx("", &["import", editor.path().to_str().unwrap()]);
            assert!(out.status.success());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("linear: needs a login: run `mcpx auth login linear`"),
                "{stderr}"
            );
            assert!(!stderr.contains("time:"), "{stderr}");
        }

        #[test]
        fn import_write_appends_to_the_configuration() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("config.toml");
            std::fs::write(&config, "[transport]\nstdioDrain = \"1s\"\n").unwrap();
            let editor = dir.path().join("mcp.json");
            std::fs::write(
                &editor,
                r#"{"servers": {"time": {"type": "stdio", "command": "mcp-server-time"}}}"#,
            )
            .unwrap();
            let out = Command::new(mcpx_bin())
                .arg("--config")
                .arg(&config)
                .arg("import")
                .arg(&editor)
                .arg("--write")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let written = std::fs::read_to_string(&config).unwrap();
            assert!(
                written.starts_with("[transport]") && written.contains("[servers.time]"),
                "{written}"
            );
        }

        #[test]
        fn import_of_a_broken_file_names_it_and_writes_nothing() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("config.toml");
            std::fs::write(&config, "# mine\n").unwrap();
            let editor = dir.path().join("claude_desktop_config.json");
            std::fs::write(&editor, "{\"mcpServers\": {").unwrap();
            let out = Command::new(mcpx_bin())
                .arg("--config")
                .arg(&config)
                .arg("import")
                .arg(&editor)
                .arg("--write")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("claude_desktop_config.json") && stderr.contains("not JSON"),
                "{stderr}"
            );
            assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n");
        }
    }
}
