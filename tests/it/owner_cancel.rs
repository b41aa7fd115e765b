//! When the owner cancels a call (`mcpx-tui`'s `c`, the admin socket), its caller, who never
//! asked, is answered once that the owner cancelled it, on whatever route it listens on; the
//! upstream is told, the audit line says who. A client's own cancel still gets no answer.

use crate::common::http::*;
use crate::common::*;
use mcpx::admin::protocol::{Command, Reply};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `[admin]` at a socket in `dir` and an audit log there, before the fixture.
fn config_in(dir: &Path) -> (String, PathBuf) {
    let socket = dir.join("admin.sock");
    let config = format!(
        "[admin]\nsocket = {:?}\n[audit]\npath = {:?}\nkeyFile = {:?}\n{}",
        socket.display().to_string(),
        dir.join("audit.jsonl").display().to_string(),
        dir.join("audit.key").display().to_string(),
        fixture_config("")
    );
    (config, socket)
}

/// The keys of the requests in flight at `socket`, once there are `count`.
fn in_flight(socket: &Path, count: usize) -> Vec<u64> {
    let keys = std::cell::RefCell::new(Vec::new());
    let seen = || {
        let Ok(Reply::Snapshot(s)) = mcpx::admin::ask(socket, &Command::Snapshot) else {
            return false;
        };
        *keys.borrow_mut() = s.requests.iter().map(|r| r.key).collect();
        keys.borrow().len() >= count
    };
    assert!(eventually(seen), "never {count} in flight");
    keys.into_inner()
}

/// Cancels, as the owner, the one request in flight at `socket`.
fn owner_cancels(socket: &Path) {
    let key = in_flight(socket, 1)[0];
    let reply = mcpx::admin::ask(socket, &Command::Cancel { request: key }).unwrap();
    assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
}

/// A sleeping call's params, with a progress token if `token`.
fn sleep_call(token: Option<&str>) -> Value {
    let mut params = json!({"name": "fixture__sleep", "arguments": {}});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    params
}

/// Whether `answer` is the one error the owner's cancel gives, naming the server and tool.
fn owners_error(answer: &Value) -> bool {
    let error = &answer["error"];
    error["code"] == -32800
        && error["message"]
            .as_str()
            .is_some_and(|m| m.contains("owner"))
        && error["data"]["cancelledBy"] == "owner"
        && error["data"]["server"] == "fixture"
        && error["data"]["name"] == "fixture__sleep"
}

mod every_revision {
    mod owner_cancel {
        use super::super::*;

        /// Over the daemon: a 2026-07-28 call answered as JSON and one answered as an event
        /// stream (it asked for progress), and a 2025-11-25 session's call (its GET stream open
        /// too), each cancelled by the
        /// owner, get one error naming the owner, the server and the tool; the upstream is told
        /// each time; each audit line says `cancelled`, decided by the owner.
        #[test]
        fn a_call_the_owner_cancels_is_answered_once_over_http() {
            let dir = tempfile::tempdir().unwrap();
            let (config, socket) = config_in(dir.path());
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let told = |n: usize| d.stderr().matches("fixture: cancelled request").count() >= n;
            for (n, token) in [(1, None), (2, Some("p"))] {
                let answer = std::thread::scope(|scope| {
                    let call = scope.spawn(|| d.modern(n, "tools/call", sleep_call(token)));
                    owner_cancels(&socket);
                    call.join().unwrap()
                });
                let message = match token {
                    None => answer.json(),
                    Some(_) => {
                        let events = answer.events();
                        let answers: Vec<&Value> = events.iter().filter(|e| e["id"] == n).collect();
                        assert_eq!(answers.len(), 1, "{events:?}");
                        answers[0].clone()
                    }
                };
                assert!(owners_error(&message), "{message}");
                assert!(eventually(|| told(n as usize)), "{}", d.stderr());
            }
            // A 2025-11-25 session's call: its POST's stream carries the one answer.
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
            let session = d.post(&[], init.to_string().as_bytes());
            let session = session.header("mcp-session-id").unwrap().to_owned();
            // With its GET stream open: the answer still comes on the POST's own stream.
            let mut get = std::net::TcpStream::connect(d.addr).unwrap();
            let head = format!("GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n", d.addr);
            std::io::Write::write_all(&mut get, head.as_bytes()).unwrap();
            let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": sleep_call(None)});
            let mut call = d.send_post(
                &[("Mcp-Session-Id", session.as_bytes())],
                body.to_string().as_bytes(),
            );
            owner_cancels(&socket);
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut call, &mut raw).unwrap();
            let text = String::from_utf8_lossy(&raw);
            assert_eq!(text.matches("\"id\":3").count(), 1, "{text}");
            assert!(text.contains("-32800"), "{text}");
            assert!(eventually(|| told(3)), "{}", d.stderr());
            let audit = dir.path().join("audit.jsonl");
            let lines = || -> Vec<Value> {
                let text = std::fs::read_to_string(&audit).unwrap_or_default();
                let all = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok());
                all.filter(|l| l["name"] == "fixture__sleep").collect()
            };
            assert!(eventually(|| lines().len() >= 3), "{:?}", lines());
            for line in lines() {
                assert_eq!(line["outcome"], "cancelled", "{line}");
                assert_eq!(line["decidedBy"], "owner", "{line}");
            }
        }

        /// Over `mcpx serve`, standalone (2026-07-28, its own admin socket) and attached to the
        /// daemon (2025-11-25): the owner's cancel is the caller's one error on stdout.
        #[test]
        fn a_call_the_owner_cancels_is_answered_once_over_stdio() {
            let dir = tempfile::tempdir().unwrap();
            let (config, socket) = config_in(dir.path());
            let path = dir.path().join("config.toml");
            std::fs::write(&path, &config).unwrap();
            let mut standalone = Serve::with_config_file(&path);
            standalone.request(1, "tools/call", modern(sleep_call(None)));
            assert!(eventually(|| standalone
                .stderr()
                .contains("fixture: sleeping request")));
            owner_cancels(&serve_socket(dir.path()));
            let answer = standalone.response(1);
            assert!(owners_error(&answer), "{answer}");
            drop(standalone);
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let mut attached = Serve::attached(d.config_path());
            attached.initialize("2025-11-25");
            attached.request(2, "tools/call", sleep_call(None));
            assert!(eventually(|| d
                .stderr()
                .contains("fixture: sleeping request")));
            owner_cancels(&socket);
            let answer = attached.response(2);
            assert!(owners_error(&answer), "{answer}");
        }

        /// A client's own `notifications/cancelled` still gets no answer (the specification's
        /// rule); its next call is answered as ever.
        #[test]
        fn a_clients_own_cancel_gets_no_answer() {
            let dir = tempfile::tempdir().unwrap();
            let (config, _) = config_in(dir.path());
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let socket = serve_socket(dir.path());
            mcpx.request(1, "tools/call", sleep_call(None));
            in_flight(&socket, 1);
            mcpx.notify(
                "notifications/cancelled",
                json!({"requestId": 1, "reason": "changed my mind"}),
            );
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "next"}});
            assert_eq!(tool_text(&mcpx.call(2, "tools/call", echo)), "next");
            assert!(eventually(|| in_flight_count(&socket) == 0));
            let later = mcpx.drain(std::time::Duration::from_millis(300));
            assert!(later.iter().all(|m| m["id"] != 1), "{later:?}");
        }

        /// 180 calls (within one client's fair share of `maxInFlight`) that end by themselves
        /// at staggered times while the owner cancels each as it appears: every caller gets
        /// exactly one answer, its result or the owner's error.
        #[test]
        fn calls_ending_while_the_owner_cancels_get_one_answer_each() {
            let dir = tempfile::tempdir().unwrap();
            let (config, _) = config_in(dir.path());
            let mut mcpx = Serve::start(&config);
            mcpx.call(0, "ping", json!({}));
            let socket = serve_socket(dir.path());
            for id in 1..=180 {
                let params = json!({"name": "fixture__sleep", "arguments": {"ms": id * 2}});
                mcpx.request(id, "tools/call", modern(params));
            }
            let cancelling = std::thread::spawn(move || {
                for _ in 0..200 {
                    if let Ok(Reply::Snapshot(s)) = mcpx::admin::ask(&socket, &Command::Snapshot) {
                        for request in s.requests {
                            let _ = mcpx::admin::ask(
                                &socket,
                                &Command::Cancel {
                                    request: request.key,
                                },
                            );
                        }
                    }
                }
            });
            let mut answered = std::collections::BTreeMap::new();
            while answered.len() < 180 {
                let message = mcpx.next();
                if let Some(id) = message["id"].as_i64() {
                    // Cancelled before it was resolved, it names the tool it was sent for.
                    let result = message.get("result").is_some();
                    let cancelled = message["error"]["code"] == -32800
                        && message["error"]["data"]["name"] == "fixture__sleep";
                    assert!(result || cancelled, "{message}");
                    *answered.entry(id).or_insert(0) += 1;
                }
            }
            cancelling.join().unwrap();
            let later = mcpx.drain(std::time::Duration::from_millis(300));
            for message in later.iter().filter(|m| m["id"].is_i64()) {
                *answered.entry(message["id"].as_i64().unwrap()).or_insert(0) += 1;
            }
            assert!(answered.values().all(|&n| n == 1), "{answered:?}");
        }
    }
}

mod v2025_11_25 {
    mod owner_cancel {
        use super::super::*;

        /// A task its server runs (2025-11-25's, the TypeScript SDK's server), which mcpx
        /// passes through, cancelled by the owner: the server gets its `tasks/cancel`, and the
        /// client reads that the owner ended it, in the cancel's answer and in `tasks/get`.
        #[test]
        fn a_servers_own_task_the_owner_cancels_says_so() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let config = format!(
                "[admin]\nsocket = {:?}\n{}",
                socket.display().to_string(),
                crate::tasks::ts_tasks_server("ts")
            );
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let call =
                json!({"name": "ts__delay", "arguments": {"ms": 600_000}, "task": {"ttl": 60_000}});
            let created = mcpx.call(1, "tools/call", call);
            let id = created["result"]["task"]["taskId"]
                .as_str()
                .unwrap()
                .to_owned();
            owner_cancels_task(&serve_socket(dir.path()), &id);
            let got = mcpx.call(2, "tasks/get", json!({"taskId": id}));
            assert_eq!(got["result"]["status"], "cancelled", "{got}");
            assert!(says_owner(&got["result"]), "{got}");
            let statuses = json!({"name": "ts__statuses", "arguments": {}});
            let statuses = tool_text(&mcpx.call(3, "tools/call", statuses));
            assert!(statuses.contains("cancelled"), "{statuses}");
            // What it was told of the change says so too.
            let told = mcpx.drain(std::time::Duration::from_millis(300));
            let told = told.iter().filter(|m| {
                m["method"] == "notifications/tasks/status" && m["params"]["status"] == "cancelled"
            });
            assert!(
                told.clone().all(|m| says_owner(&m["params"])),
                "{:?}",
                told.collect::<Vec<_>>()
            );
        }
    }
}

mod v2026_07_28 {
    mod owner_cancel {
        use super::super::*;

        /// A task of the Tasks extension its server runs (rmcp's), passed through, cancelled
        /// by the owner: the server stops it, and the client polling it reads that the owner
        /// ended it.
        #[test]
        fn a_servers_own_task_the_owner_cancels_says_so() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let config = format!(
                "[admin]\nsocket = {:?}\n{}",
                socket.display().to_string(),
                crate::tasks::rmcp_tasks_server("rt")
            );
            let mut mcpx = Serve::start(&config);
            let tasks = |params: Value| {
                let mut params = modern(params);
                params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
                    json!({"io.modelcontextprotocol/tasks": {}});
                params
            };
            let call = tasks(json!({"name": "rt__slow", "arguments": {"ms": 600_000}}));
            let created = mcpx.call(1, "tools/call", call);
            assert_eq!(created["result"]["resultType"], "task", "{created}");
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            owner_cancels_task(&serve_socket(dir.path()), &id);
            let deadline = std::time::Instant::now() + PATIENCE;
            let mut request = 10;
            let got = loop {
                request += 1;
                let got = mcpx.call(request, "tasks/get", tasks(json!({"taskId": id})));
                if got["result"]["status"] != "working" || std::time::Instant::now() > deadline {
                    break got;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            };
            assert_eq!(got["result"]["status"], "cancelled", "{got}");
            assert!(says_owner(&got["result"]), "{got}");
        }
    }
}

/// Cancels task `id` as the owner, through `socket`.
fn owner_cancels_task(socket: &Path, id: &str) {
    let cancel = Command::CancelTask { id: id.to_owned() };
    let reply = mcpx::admin::ask(socket, &cancel).unwrap();
    assert!(matches!(reply, Reply::Done { .. }), "{reply:?}");
}

/// Whether a task's `statusMessage` says the owner of the gateway ended it.
fn says_owner(task: &Value) -> bool {
    let said = task["statusMessage"].as_str().unwrap_or_default();
    said.contains("owner of the gateway")
}

/// The admin socket of the `mcpx serve` whose `[admin] socket` is in `dir` (each names its own
/// by its pid beside it).
fn serve_socket(dir: &Path) -> PathBuf {
    let found = || {
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("serve-"))
            })
    };
    assert!(
        eventually(|| found().is_some()),
        "no serve socket in {}",
        dir.display()
    );
    found().unwrap()
}

/// How many requests are in flight at `socket`.
fn in_flight_count(socket: &Path) -> usize {
    match mcpx::admin::ask(socket, &Command::Snapshot) {
        Ok(Reply::Snapshot(s)) => s.requests.len(),
        _ => usize::MAX,
    }
}
