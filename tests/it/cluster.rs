//! Several daemons sharing a cluster key, end to end: a legacy session minted by one replica is
//! served by another, a tampered or foreign id is unknown, and a rotation keeps sessions.

use crate::common::cluster::*;
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// A daemon with the fixture and these cluster keys.
fn replica(key: &std::path::Path, previous: Option<&std::path::Path>) -> Daemon {
    replica_of(&fixture_config(""), key, previous)
}

fn echo(d: &Daemon, session: &str, revision: &str, id: i64) -> Reply {
    post(
        d,
        Some(session),
        Some(revision),
        &request(
            id,
            "tools/call",
            json!({"name": "fixture__echo", "arguments": {"text": "r"}}),
        ),
    )
}

/// Requests through nginx, retried once after a 502 as a client would.
trait ThroughNginx {
    fn legacy(&self, session: Option<&str>, body: &Value) -> Reply;
    fn modern(&self, id: i64, method: &str, params: Value) -> Reply;
}

impl ThroughNginx for Nginx {
    /// A legacy request through nginx (retried once if the replica it reached died under it).
    fn legacy(&self, session: Option<&str>, body: &Value) -> Reply {
        let mut headers: Vec<(&str, &[u8])> = vec![
            ("Accept", b"application/json, text/event-stream"),
            ("Content-Type", b"application/json"),
            ("MCP-Protocol-Version", b"2025-11-25"),
        ];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session.as_bytes()));
        }
        let send = || post_to_addr(self.addr, "/mcp", &headers, body.to_string().as_bytes());
        let reply = send();
        if reply.status == 502 {
            send()
        } else {
            reply
        }
    }

    /// A 2026-07-28 request through nginx, retried once as a client would after a 502.
    fn modern(&self, id: i64, method: &str, params: Value) -> Reply {
        let (headers, body) = modern_request(id, method, params);
        let refs = header_refs(&headers);
        let send = || post_to_addr(self.addr, "/mcp", &refs, body.to_string().as_bytes());
        let reply = send();
        if reply.status == 502 {
            send()
        } else {
            reply
        }
    }
}

/// How many legacy echo calls a replica served, from its metrics.
fn legacy_echoes(replica: &Daemon) -> f64 {
    let echoes = [("name", "fixture__echo"), ("era", "legacy")];
    metric_sample(
        &replica.metrics(),
        "mcp_server_operation_duration_seconds_count",
        &echoes,
    )
}

mod every_revision {
    pub mod cluster {
        use super::super::*;

        /// In every legacy revision a session minted by one replica is served by another with
        /// the same key (its negotiated revision kept), and by no replica without it.
        #[test]
        fn a_sealed_session_is_served_by_any_replica_with_the_key() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let (a, b) = (replica(&key, None), replica(&key, None));
            let stranger = Daemon::start(&fixture_config(""), "");
            for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
                let session = initialize_session(&a, revision, json!({"roots": {}}));
                println!("session id at {revision}: {} bytes", session.len());
                assert!(session.len() < 1024, "{}", session.len());
                for (id, replica) in [(1, &b), (2, &a), (3, &b)] {
                    let reply = echo(replica, &session, revision, id);
                    assert_eq!(reply.status, 200, "{revision}");
                    let body = match reply.events().pop() {
                        Some(event) => event,
                        None => reply.json(),
                    };
                    assert_eq!(
                        body["result"]["content"][0]["text"], "r",
                        "{revision}: {body}"
                    );
                    assert_result(revision, "tools/call", &body);
                }
                assert_eq!(echo(&stranger, &session, revision, 4).status, 404);
            }
        }

        #[test]
        fn a_tampered_or_ended_id_is_unknown() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let (a, b) = (replica(&key, None), replica(&key, None));
            let session = initialize_session(&a, "2025-11-25", json!({}));
            let mut tampered = session.clone().into_bytes();
            let at = tampered.len() / 2;
            tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8(tampered).unwrap();
            assert_eq!(echo(&b, &tampered, "2025-11-25", 1).status, 404);
            assert_eq!(b.delete_session(&session).status, 204);
            assert_eq!(echo(&b, &session, "2025-11-25", 2).status, 404);
        }

        /// A sealed id older than `sessionLifetime` is an expired session: 404 on every replica,
        /// the one that minted it included, so the client initializes again.
        #[test]
        fn a_sealed_id_past_its_lifetime_is_unknown_everywhere() {
            use std::time::{Duration, Instant};
            let lifetime = Duration::from_secs(2);
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let short = format!("sessionLifetime = \"2s\"\n{}", fixture_config(""));
            let (a, b) = (
                replica_of(&short, &key, None),
                replica_of(&short, &key, None),
            );
            // The windows come from what this test measures, so a busy machine cannot fail it:
            // an answer that came back within the lifetime of the moment before `initialize`
            // was sent is inside the session's lifetime; a slower round is retried.
            let mut served_within = None;
            for id in 1..=5 {
                let before = Instant::now();
                let session = initialize_session(&a, "2025-11-25", json!({}));
                let minted = Instant::now();
                let status = echo(&b, &session, "2025-11-25", id).status;
                if before.elapsed() < lifetime {
                    assert_eq!(status, 200, "the other replica refused a live session");
                    served_within = Some((session, minted));
                    break;
                }
            }
            let (session, minted) = served_within.expect("no round fit inside the lifetime");
            // Sealed before `initialize` answered: past that moment and the lifetime, it is old.
            std::thread::sleep(
                (minted + lifetime + Duration::from_millis(50))
                    .saturating_duration_since(Instant::now()),
            );
            assert_eq!(echo(&b, &session, "2025-11-25", 10).status, 404);
            assert_eq!(echo(&a, &session, "2025-11-25", 11).status, 404);
        }

        /// A `DELETE` taken by one replica is passed to its `peers`: the id is refused
        /// everywhere at once, not only where it was ended.
        #[test]
        fn a_delete_ends_the_session_on_every_peer() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let (a, b) = (replica(&key, None), replica(&key, None));
            let peers = format!(
                "peers = [\"{}\", \"{}\"]\n{}",
                a.addr,
                b.addr,
                fixture_config("")
            );
            let c = replica_of(&peers, &key, None);
            let session = initialize_session(&a, "2025-11-25", json!({}));
            assert_eq!(echo(&b, &session, "2025-11-25", 1).status, 200);
            assert_eq!(c.delete_session(&session).status, 204);
            for (id, peer) in [(2, &a), (3, &b)] {
                assert!(
                    eventually(|| echo(peer, &session, "2025-11-25", id).status == 404),
                    "a peer still serves the ended session"
                );
            }
            assert_eq!(echo(&c, &session, "2025-11-25", 4).status, 404);
            let told = [("kind", "end"), ("outcome", "ok")];
            let counted = || metric_sample(&c.metrics(), "mcpx_cluster_passed_on_total", &told);
            assert!(eventually(|| counted() == 2.0), "{}", counted());
        }

        /// A new key with the old one as `previousKeyFile` keeps the sessions sealed under the
        /// old; a replica with only the new key does not know them.
        #[test]
        fn a_key_rotation_loses_no_session() {
            let dir = tempfile::tempdir().unwrap();
            let (old, new) = (keygen(dir.path(), "old.key"), keygen(dir.path(), "new.key"));
            let before = replica(&old, None);
            let session = initialize_session(&before, "2025-06-18", json!({}));
            let rotated = replica(&new, Some(&old));
            assert_eq!(echo(&rotated, &session, "2025-06-18", 1).status, 200);
            let fresh = initialize_session(&rotated, "2025-06-18", json!({}));
            assert_eq!(echo(&rotated, &fresh, "2025-06-18", 2).status, 200);
            let only_new = replica(&new, None);
            assert_eq!(echo(&only_new, &session, "2025-06-18", 3).status, 404);
            assert_eq!(echo(&only_new, &fresh, "2025-06-18", 4).status, 200);
        }

        /// `GET /healthz` is 200 for a load balancer's probe, and tells each upstream's state to
        /// who has the daemon's token.
        #[test]
        fn healthz_is_200_with_upstream_states_for_who_has_the_token() {
            let daemon = Daemon::start(&fixture_config(""), "token = \"s3\"\n");
            let get = |auth: &str| {
                daemon.raw(
                    format!(
                        "GET /healthz HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n",
                        daemon.addr
                    )
                    .as_bytes(),
                )
            };
            let anonymous = get("");
            assert_eq!(anonymous.status, 200);
            assert_eq!(anonymous.json(), json!({"status": "ok"}));
            let trusted = get("Authorization: Bearer s3\r\n");
            assert_eq!(trusted.status, 200);
            assert!(eventually(|| get("Authorization: Bearer s3\r\n").json()
                ["upstreams"]["fixture"]
                == "ready"));
            assert_eq!(trusted.json()["status"], "ok");
        }

        /// Round-robin through nginx (the shipped file's alternative): a legacy session's
        /// consecutive requests land on different replicas and all succeed.
        #[test]
        fn round_robin_through_nginx_serves_a_session_on_several_replicas() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let replicas: Vec<Daemon> = (0..3).map(|_| replica(&key, None)).collect();
            let nginx = Nginx::start(&replicas.iter().collect::<Vec<_>>(), Balance::RoundRobin);
            let session = initialize_through(&nginx);
            for id in 1..=9 {
                answered(nginx.legacy(Some(&session), &echo_request(id)));
            }
            let served: Vec<f64> = replicas.iter().map(legacy_echoes).collect();
            assert_eq!(served.iter().sum::<f64>(), 9.0, "{served:?}");
            assert!(
                served.iter().filter(|n| **n > 0.0).count() >= 2,
                "one session, several replicas: {served:?}"
            );
        }

        /// Three replicas behind the shipped nginx site: a legacy session's requests stay on
        /// one replica, 2026-07-28 calls and multi-round calls go anywhere. That replica is
        /// killed with SIGKILL mid-way: the session goes on on a survivor without a new
        /// `initialize`, no modern call fails after its retry, and the session's GET stream,
        /// opened again, hears the survivor's `list_changed`.
        #[test]
        fn three_replicas_behind_nginx_survive_a_kill_of_the_sessions_replica() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let mut replicas: Vec<Daemon> = (0..3).map(|_| replica(&key, None)).collect();
            let nginx = Nginx::start(&replicas.iter().collect::<Vec<_>>(), Balance::Shipped);
            let session = initialize_through(&nginx);
            for id in 1..=6 {
                answered(nginx.legacy(Some(&session), &echo_request(id)));
                answered(nginx.modern(id, "tools/call", echo_params()));
                let asked = nginx.modern(100 + id, "tools/call", ask()).json();
                let resumed = nginx.modern(200 + id, "tools/call", answer(&asked)).json();
                assert_eq!(
                    resumed["result"]["content"][0]["text"], "accept: Ada",
                    "{resumed}"
                );
            }
            let served: Vec<f64> = replicas.iter().map(legacy_echoes).collect();
            let holder = served.iter().position(|n| *n == 6.0);
            let holder = holder.unwrap_or_else(|| panic!("one session, one replica: {served:?}"));
            let (mut stream, head) = open_get(&nginx, &session);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            replicas[holder].signal("KILL");
            assert!(
                std::iter::from_fn(|| stream.next_line()).all(|line| line.starts_with(':')),
                "the dead replica's stream ends"
            );
            for id in 7..=12 {
                answered(nginx.legacy(Some(&session), &echo_request(id)));
                answered(nginx.modern(id, "tools/call", echo_params()));
            }
            let (mut reopened, head) = open_get(&nginx, &session);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let add = request(
                13,
                "tools/call",
                json!({"name": "fixture__add_tool", "arguments": {}}),
            );
            assert_eq!(nginx.legacy(Some(&session), &add).status, 200);
            let heard = std::iter::from_fn(|| reopened.next_event())
                .find(|event| event["method"] == "notifications/tools/list_changed");
            assert!(
                heard.is_some(),
                "the reopened GET stream heard no list_changed"
            );
        }
    }
}

/// `initialize` at 2025-11-25 through nginx; the session id.
fn initialize_through(nginx: &Nginx) -> String {
    let initialize = request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let minted = nginx.legacy(None, &initialize);
    assert_eq!(minted.status, 200);
    let session = minted.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(nginx.legacy(Some(&session), &initialized).status, 202);
    session
}

/// A session's GET stream through nginx.
fn open_get(nginx: &Nginx, session: &str) -> (EventReader, String) {
    let mut stream = std::net::TcpStream::connect(nginx.addr).unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n\r\n"
    );
    std::io::Write::write_all(&mut stream, get.as_bytes()).unwrap();
    EventReader::open(stream)
}

fn echo_params() -> Value {
    json!({"name": "fixture__echo", "arguments": {"text": "r"}})
}

fn echo_request(id: i64) -> Value {
    request(id, "tools/call", echo_params())
}

/// Asserts an echo call was answered.
fn answered(reply: Reply) {
    assert_eq!(reply.status, 200);
    let body = reply.events().pop().unwrap_or_else(|| reply.json());
    assert_eq!(body["result"]["content"][0]["text"], "r", "{body}");
}

/// A call that asks `fixture__ask`'s question, by a modern client that can answer it.
fn ask() -> Value {
    json!({"name": "fixture__ask", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}})
}

/// The retry of `first`'s call with the answer "Ada".
fn answer(first: &Value) -> Value {
    let mut retry = ask();
    retry["requestState"] = first["result"]["requestState"].clone();
    retry["inputResponses"] =
        json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}});
    retry
}

mod v2026_07_28 {
    pub mod cluster {
        use super::super::*;

        /// The upstream call waits on the replica that started it; the retry that lands on
        /// another replica is forwarded there (its `requestState`, signed under the cluster key,
        /// names the holder) and resumes the same call: one question upstream, one answer.
        #[test]
        fn a_retry_that_lands_on_another_replica_resumes_its_call() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let (holder, other) = (replica(&key, None), replica(&key, None));
            let first = holder.modern(1, "tools/call", ask()).json();
            assert_eq!(first["result"]["resultType"], "input_required", "{first}");
            let resumed = other.modern(2, "tools/call", answer(&first)).json();
            assert_eq!(
                resumed["result"]["content"][0]["text"], "accept: Ada",
                "{resumed}"
            );
            assert_result("2026-07-28", "tools/call", &resumed);
            assert!(holder.log_shows("fixture: asking"));
            assert_eq!(holder.stderr().matches("fixture: asking").count(), 1);
            assert!(!other.stderr().contains("fixture: asking"));
            let passed = [("kind", "retry"), ("outcome", "ok")];
            let counted = metric_sample(&other.metrics(), "mcpx_cluster_passed_on_total", &passed);
            assert_eq!(counted, 1.0);
            // Behind a legacy server (which mints no state a retry could carry), a state no one
            // this daemon can reach sealed is refused, not passed on.
            let stranger = Daemon::start(&fixture_config("args = [\"--legacy-only\"]\n"), "");
            let refused = stranger.modern(3, "tools/call", answer(&first)).json();
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
        }

        /// A task mcpx runs on one replica is reached from any other: its id names its replica,
        /// and a `tasks/get` that lands elsewhere is forwarded there; a daemon outside the
        /// cluster knows no such task.
        #[test]
        fn a_task_held_by_one_replica_is_reached_from_another() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let servers = fixture_config("tasks = \"always\"\n");
            let (holder, other) = (
                replica_of(&servers, &key, None),
                replica_of(&servers, &key, None),
            );
            let tasks = |mut params: Value| {
                params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
                params
            };
            let call = json!({"name": "fixture__sleep", "arguments": {"ms": 200}});
            let created = holder.modern(1, "tools/call", tasks(call)).json();
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let get = || {
                other
                    .modern(2, "tasks/get", tasks(json!({"taskId": id})))
                    .json()
            };
            assert!(
                eventually(|| get()["result"]["status"] == "completed"),
                "{}",
                get()
            );
            assert_eq!(get()["result"]["result"]["content"][0]["text"], "slept");
            let stranger = Daemon::start(&servers, "");
            let unknown = stranger
                .modern(3, "tasks/get", tasks(json!({"taskId": id})))
                .json();
            assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        }

        /// A 2025-11-25 session's task of mcpx's, made on one replica, is reached from another
        /// that serves the same (sealed) session: `tasks/get` and `tasks/result` are forwarded to
        /// the replica holding the task; another session knows no such task, and with the
        /// holder gone the task is said to be lost.
        #[test]
        fn a_legacy_sessions_task_of_mcpxs_is_reached_from_another_replica() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let (mut holder, other) = (replica(&key, None), replica(&key, None));
            let session = initialize_session(&holder, "2025-11-25", json!({}));
            let legacy = |d: &Daemon, session: &str, body: Value| {
                post(d, Some(session), Some("2025-11-25"), &body)
            };
            let call = json!({"name": "fixture__sleep", "arguments": {"ms": 200},
                "task": {"ttl": 60000}});
            let created = legacy(&holder, &session, request(1, "tools/call", call)).json();
            let id = created["result"]["task"]["taskId"]
                .as_str()
                .unwrap()
                .to_owned();
            let about = |n, method| request(n, method, json!({"taskId": id}));
            let result = legacy(&other, &session, about(2, "tasks/result")).json();
            assert_eq!(result["result"]["content"][0]["text"], "slept", "{result}");
            let got = legacy(&other, &session, about(3, "tasks/get")).json();
            assert_eq!(got["result"]["status"], "completed", "{got}");
            let stranger = initialize_session(&other, "2025-11-25", json!({}));
            let foreign = legacy(&other, &stranger, about(4, "tasks/get")).json();
            assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
            holder.signal("KILL");
            let lost = legacy(&other, &session, about(5, "tasks/get"));
            assert_eq!(lost.status, 200);
            let lost = lost.json();
            assert_eq!(lost["error"]["code"], -32602, "{lost}");
            let said = lost["error"]["message"].as_str().unwrap_or_default();
            assert!(said.contains("the task is lost"), "{lost}");
        }

        /// A retry for a call whose replica died is refused with -32602, telling the client to
        /// call again without the state; it does not hang.
        #[test]
        fn a_retry_for_a_dead_replicas_call_says_to_call_again() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let (mut holder, other) = (replica(&key, None), replica(&key, None));
            let first = holder.modern(1, "tools/call", ask()).json();
            holder.signal("KILL");
            let refused = other.modern(2, "tools/call", answer(&first)).json();
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            assert!(
                refused["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("call again without requestState"),
                "{refused}"
            );
            let lost = [("kind", "retry"), ("outcome", "unreachable")];
            let counted = metric_sample(&other.metrics(), "mcpx_cluster_passed_on_total", &lost);
            assert_eq!(counted, 1.0);
            let again = other.modern(3, "tools/call", ask()).json();
            assert_eq!(again["result"]["resultType"], "input_required", "{again}");
        }
    }
}
