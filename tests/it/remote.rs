//! Remote upstreams over Streamable HTTP, end to end: a real `mcpx daemon` fronting the fixture
//! is the remote server, and `mcpx serve` reaches it in each era.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A remote server (a daemon with the fixture behind it) and a gateway reaching it.
fn through_remote(era: &str, remote_extra: &str) -> (Daemon, Serve) {
    let remote = Daemon::start(&fixture_config(remote_extra), "");
    let mcpx = Serve::start(&format!(
        "[servers.remote]\nurl = \"http://{}/mcp\"\nera = \"{era}\"\n",
        remote.addr
    ));
    (remote, mcpx)
}

fn state(mcpx: &mut Serve, id: i64) -> Value {
    let report = mcpx.call(
        id,
        "tools/call",
        json!({"name": "mcpx__upstreams", "arguments": {}}),
    );
    report["result"]["structuredContent"]["upstreams"][0].clone()
}

/// A legacy Streamable HTTP server written for one test: its one tool, `log`, sends a
/// `notifications/message` on the call's event stream before answering. (The fixture speaks
/// stdio, and mcpx's own daemon declares no logging.)
fn logging_server() -> std::net::SocketAddr {
    scripted_server(|request_line, _headers, message| {
        let id = message["id"].clone();
        one_tool_server(request_line, message, "log", || {
            let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "logger": "remote", "data": "hello from http"}});
            let answer = json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": "logged"}]}});
            (
                "200 OK",
                "text/event-stream",
                format!("data: {log}\n\ndata: {answer}\n\n"),
            )
        })
    })
}

mod every_revision {
    pub mod remote {
        use super::super::*;

        /// A 2025-11-25 server that issues no session id is served sessionless at once: mcpx
        /// opens no session stream and waits for none. Every request after `initialize` carries
        /// `MCP-Protocol-Version` (the server refuses one without it, as 2025-06-18 and later
        /// may), and so the call is answered.
        #[test]
        fn a_sessionless_server_is_served_at_once_with_the_version_on_every_request() {
            let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
            let heard = std::sync::Arc::clone(&seen);
            let addr = sessionless_scripted_server(move |line, headers, message| {
                let version = headers
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("mcp-protocol-version"))
                    .map_or("-", |(_, value)| value.as_str());
                let method = message["method"].as_str().unwrap_or("-");
                let verb = line.split(' ').next().unwrap_or_default();
                heard
                    .lock()
                    .unwrap()
                    .push(format!("{verb} {method} {version}"));
                let handshake = matches!(method, "initialize" | "server/discover");
                if verb == "POST" && !handshake && version != "2025-11-25" {
                    return (
                        "400 Bad Request",
                        "text/plain",
                        "MCP-Protocol-Version is required".into(),
                    );
                }
                if method == "server/discover" {
                    let refused = json!({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}});
                    return ("200 OK", "application/json", refused.to_string());
                }
                one_tool_server(line, message, "echo", || {
                    let said = message["params"]["arguments"]["text"].clone();
                    let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                        "result": {"content": [{"type": "text", "text": said}]}});
                    ("200 OK", "application/json", answer.to_string())
                })
            });
            let mut mcpx =
                Serve::start(&format!("[servers.remote]\nurl = \"http://{addr}/mcp\"\n"));
            mcpx.initialize("2025-11-25");
            let call = json!({"name": "remote__echo", "arguments": {"text": "hi"}});
            let answer = mcpx.call(1, "tools/call", call);
            assert_eq!(tool_text(&answer), "hi", "{answer}\n{}", mcpx.stderr());
            let seen = seen.lock().unwrap().clone();
            assert!(seen.iter().all(|l| !l.starts_with("GET")), "{seen:?}");
            let after = seen
                .iter()
                .skip_while(|l| !l.contains(" initialize "))
                .skip(1);
            let unversioned: Vec<&String> = after.filter(|l| l.ends_with(" -")).collect();
            assert!(unversioned.is_empty(), "{seen:?}");
        }

        fn lists_calls_streams_progress_and_hears_list_changed(era: &str, revision: &str) {
            let (_remote, mut mcpx) = through_remote(era, "");
            mcpx.initialize("2025-11-25");
            assert_eq!(state(&mut mcpx, 1)["revision"], revision);
            let tools = mcpx.call(2, "tools/list", json!({}));
            assert!(
                tools["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["name"] == "remote__fixture__echo"),
                "{tools}"
            );
            // `region` carries an x-mcp-header annotation: a modern remote refuses the call unless
            // mcpx mirrors it in Mcp-Param-Region.
            let echo = mcpx.call(3, "tools/call", json!({"name": "remote__fixture__echo", "arguments": {"text": "far", "region": "eu west"}}));
            assert_eq!(echo["result"]["content"][0]["text"], "far", "{echo}");
            mcpx.request(4, "tools/call", json!({"name": "remote__fixture__progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}));
            let mut progress = 0;
            loop {
                let message = mcpx.next();
                if message["method"] == "notifications/progress" {
                    assert_eq!(message["params"]["progressToken"], "p");
                    progress += 1;
                } else if message["id"] == 4 {
                    break;
                }
            }
            assert_eq!(progress, 2);
            mcpx.call(
                5,
                "tools/call",
                json!({"name": "remote__fixture__add_tool", "arguments": {}}),
            );
            let deadline = Instant::now() + PATIENCE;
            while !mcpx
                .drain(Duration::from_millis(100))
                .iter()
                .any(|m| m["method"] == "notifications/tools/list_changed")
            {
                assert!(Instant::now() < deadline, "no list_changed came through");
            }
            let tools = mcpx.call(6, "tools/list", json!({}));
            assert!(tools["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "remote__fixture__extra"));
        }

        #[test]
        fn a_legacy_remote_lists_calls_streams_progress_and_hears_list_changed() {
            lists_calls_streams_progress_and_hears_list_changed("legacy", "2025-11-25");
        }

        #[test]
        fn a_modern_remote_gets_mirrored_headers_and_hears_list_changed_on_a_listen() {
            lists_calls_streams_progress_and_hears_list_changed("2026-07-28", "2026-07-28");
        }

        #[test]
        fn auto_probes_with_server_discover_first() {
            let (_remote, mut mcpx) = through_remote("auto", "");
            mcpx.initialize("2025-11-25");
            assert_eq!(state(&mut mcpx, 1)["revision"], "2026-07-28");
        }

        #[test]
        fn an_expired_remote_session_is_initialized_again_transparently() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let (_remote, mut mcpx) = through_remote(
                "legacy",
                &format!("[admin]\nsocket = {:?}\n", socket.display().to_string()),
            );
            mcpx.initialize("2025-11-25");
            let first = mcpx.call(
                1,
                "tools/call",
                json!({"name": "remote__fixture__echo", "arguments": {"text": "one"}}),
            );
            assert_eq!(first["result"]["content"][0]["text"], "one");
            // The remote server forgets the session (as one that restarted or expired it would).
            let snapshot =
                match mcpx::admin::ask(&socket, &mcpx::admin::protocol::Command::Snapshot).unwrap()
                {
                    mcpx::admin::protocol::Reply::Snapshot(snapshot) => *snapshot,
                    other => panic!("{other:?}"),
                };
            let session = snapshot
                .sessions
                .iter()
                .find_map(|s| s.id.clone())
                .expect("the gateway holds no session");
            mcpx::admin::ask(
                &socket,
                &mcpx::admin::protocol::Command::EndSession { id: session },
            )
            .unwrap();
            let second = mcpx.call(
                2,
                "tools/call",
                json!({"name": "remote__fixture__echo", "arguments": {"text": "two"}}),
            );
            assert_eq!(second["result"]["content"][0]["text"], "two", "{second}");
            assert!(
                mcpx.stderr().contains("forgot its session"),
                "{}",
                mcpx.stderr()
            );
        }

        #[test]
        fn progress_read_together_with_the_answer_still_goes_before_it() {
            // An HTTP front door over an HTTP upstream: the remote's progress and its answer
            // come back in one event stream, often in one read, with no pause between them.
            let remote = Daemon::start(&fixture_config(""), "");
            let mcpx = Daemon::start(
                &format!("[servers.remote]\nurl = \"http://{}/mcp\"\n", remote.addr),
                "",
            );
            for round in 0..20 {
                let call = request(
                    round,
                    "tools/call",
                    json!({"name": "remote__fixture__progress", "arguments": {"steps": 3},
                        "_meta": {"progressToken": "p"}}),
                );
                let reply = post(&mcpx, None, None, &call);
                assert_eq!(reply.header("content-type"), Some("text/event-stream"));
                let events = reply.events();
                let kinds: Vec<bool> = events.iter().map(|e| e.get("id").is_some()).collect();
                assert_eq!(kinds, [false, false, false, true], "{events:?}");
            }
        }

        #[test]
        fn a_pooled_connection_the_remote_server_closed_is_replaced_not_failed() {
            for era in ["legacy", "2026-07-28"] {
                // The remote daemon closes a kept-alive connection that idles past its
                // readTimeout, as servers and proxies in front of them do.
                let remote = Daemon::start(&fixture_config(""), "readTimeout = \"200ms\"");
                let mut mcpx = Serve::start(&format!(
                    "[servers.remote]\nurl = \"http://{}/mcp\"\nera = \"{era}\"\n",
                    remote.addr
                ));
                mcpx.initialize("2025-11-25");
                for (id, text) in [(1, "before"), (2, "after"), (3, "again")] {
                    let reply = mcpx.call(
                        id,
                        "tools/call",
                        json!({"name": "remote__fixture__echo", "arguments": {"text": text}}),
                    );
                    assert_eq!(
                        reply["result"]["content"][0]["text"], text,
                        "{era}: {reply}"
                    );
                    std::thread::sleep(Duration::from_millis(600));
                }
            }
        }

        #[test]
        fn cancelling_reaches_the_remote_servers_upstream_in_both_eras() {
            for era in ["legacy", "2026-07-28"] {
                let (remote, mut mcpx) = through_remote(era, "");
                mcpx.initialize("2025-11-25");
                mcpx.request(
                    1,
                    "tools/call",
                    json!({"name": "remote__fixture__sleep", "arguments": {}}),
                );
                assert!(remote.log_shows("fixture: sleeping request"), "{era}");
                mcpx.notify("notifications/cancelled", json!({"requestId": 1}));
                assert!(
                    remote.log_shows("fixture: cancelled request"),
                    "{era}: {}",
                    remote.stderr()
                );
            }
        }

        #[test]
        fn a_header_naming_an_unset_variable_keeps_the_server_down_with_a_clear_reason() {
            let mut mcpx = Serve::start("[servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer ${MCPX_TEST_SURELY_UNSET}\" }\n");
            mcpx.initialize("2025-11-25");
            let reason = state(&mut mcpx, 1)["state"].as_str().unwrap().to_owned();
            assert!(reason.contains("MCPX_TEST_SURELY_UNSET"), "{reason}");
        }
        #[test]
        fn an_http_upstreams_log_message_is_logged_as_a_stdio_upstreams_is() {
            let addr = logging_server();
            let mut mcpx = Serve::start(&format!(
                "[servers.remote]\nurl = \"http://{addr}/mcp\"\nera = \"legacy\"\n"
            ));
            mcpx.initialize("2025-11-25");
            let call = mcpx.call(
                1,
                "tools/call",
                json!({"name": "remote__log", "arguments": {}}),
            );
            assert_eq!(call["result"]["content"][0]["text"], "logged", "{call}");
            assert!(mcpx.log_shows("hello from http"), "{}", mcpx.stderr());
            assert!(mcpx.log_shows("server=remote"), "{}", mcpx.stderr());
        }

        /// An HTTP upstream's log message on a call's stream reaches the legacy client whose
        /// call it came during, before the answer, tagged with the upstream; a modern client's
        /// call gets none (2026-07-28 has no protocol logging).
        #[test]
        fn an_http_upstreams_log_message_reaches_the_legacy_caller_and_no_modern_one() {
            let addr = logging_server();
            let config =
                format!("[servers.remote]\nurl = \"http://{addr}/mcp\"\nera = \"legacy\"\n");
            let mut legacy = Serve::start(&config);
            legacy.initialize("2025-11-25");
            legacy.request(
                1,
                "tools/call",
                json!({"name": "remote__log", "arguments": {}}),
            );
            let logged = legacy.next();
            assert_eq!(logged["method"], "notifications/message", "{logged}");
            assert_eq!(logged["params"]["logger"], "remote/remote", "{logged}");
            assert_eq!(logged["params"]["data"], "hello from http", "{logged}");
            assert_eq!(legacy.response(1)["result"]["content"][0]["text"], "logged");
            let mut modern_client = Serve::start(&config);
            let call = modern_client.call(
                1,
                "tools/call",
                modern(json!({"name": "remote__log", "arguments": {}})),
            );
            assert_eq!(call["result"]["content"][0]["text"], "logged", "{call}");
            let rest = modern_client.drain(Duration::from_millis(200));
            assert!(
                rest.iter().all(|m| m["method"] != "notifications/message"),
                "{rest:?}"
            );
        }
    }
}
