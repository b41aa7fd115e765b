//! Several daemons sharing a cluster key, end to end: a legacy session minted by one replica is
//! served by another, a tampered or foreign id is unknown, and a rotation keeps sessions.

mod common;

use common::http::*;
use common::*;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// A daemon with the fixture and these cluster keys.
fn replica(key: &std::path::Path, previous: Option<&std::path::Path>) -> Daemon {
    let previous = previous.map_or(String::new(), |p| {
        format!("previousKeyFile = {:?}\n", p.display().to_string())
    });
    Daemon::start(
        &format!(
            "[cluster]\nkeyFile = {:?}\n{previous}{}",
            key.display().to_string(),
            fixture_config("")
        ),
        "",
    )
}

fn keygen(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let out = std::process::Command::new(mcpx_bin())
        .arg("keygen")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim().len(), 64);
    let path = dir.join(name);
    std::fs::write(&path, &out.stdout).unwrap();
    path
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

/// nginx on a free loopback port, configured with `packaging/nginx/mcpx.conf` pointed at
/// `replicas`; killed when dropped.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start(replicas: &[&Daemon]) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let shipped = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/packaging/nginx/mcpx.conf"
        ))
        .unwrap();
        let servers: String = replicas
            .iter()
            .map(|r| format!("server {};\n    ", r.addr))
            .collect();
        let site = shipped
            .replace("server 127.0.0.1:7777;\n    server 127.0.0.1:7778;\n    server 127.0.0.1:7779;\n    ", &servers)
            .replace("listen 127.0.0.1:8080;", &format!("listen 127.0.0.1:{port};"));
        assert!(
            site.contains(&servers),
            "the shipped configuration's upstream block changed"
        );
        let prefix = dir.path().display().to_string();
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\n\
             events {{ worker_connections 1024; }}\nhttp {{\n access_log off;\n\
             client_body_temp_path {prefix}/body;\n proxy_temp_path {prefix}/proxy;\n\
             fastcgi_temp_path {prefix}/fastcgi;\n uwsgi_temp_path {prefix}/uwsgi;\n scgi_temp_path {prefix}/scgi;\n\
             {site}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(deps::nginx())
            .args(["-p", &prefix, "-c", path.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        assert!(
            eventually(|| std::net::TcpStream::connect(addr).is_ok()),
            "nginx did not start"
        );
        Nginx {
            child,
            addr,
            _dir: dir,
        }
    }

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

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
            let delete = b.raw(
                format!(
                    "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n",
                    b.addr
                )
                .as_bytes(),
            );
            assert_eq!(delete.status, 204);
            assert_eq!(echo(&b, &session, "2025-11-25", 2).status, 404);
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

        /// Three replicas behind nginx, configured with the shipped `packaging/nginx/mcpx.conf`:
        /// a legacy session's requests land on different replicas and all succeed, 2026-07-28
        /// calls too; one replica is killed with SIGKILL, and the session and the calls go on
        /// on the survivors without a new `initialize`.
        #[test]
        fn three_replicas_behind_nginx_serve_every_request_and_survive_a_kill() {
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let mut replicas = [
                replica(&key, None),
                replica(&key, None),
                replica(&key, None),
            ];
            let nginx = Nginx::start(&replicas.iter().collect::<Vec<_>>());
            let initialize = request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25",
                "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            );
            let minted = nginx.legacy(None, &initialize);
            assert_eq!(minted.status, 200);
            let session = minted.header("mcp-session-id").unwrap().to_owned();
            let echo = |id: i64| {
                request(
                    id,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "r"}}),
                )
            };
            let answered = |reply: Reply| {
                assert_eq!(reply.status, 200);
                let body = reply.events().pop().unwrap_or_else(|| reply.json());
                assert_eq!(body["result"]["content"][0]["text"], "r", "{body}");
            };
            for id in 1..=9 {
                answered(nginx.legacy(Some(&session), &echo(id)));
                answered(nginx.modern(
                    id,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "r"}}),
                ));
            }
            let served: Vec<f64> = replicas.iter().map(legacy_echoes).collect();
            assert_eq!(served.iter().sum::<f64>(), 9.0, "{served:?}");
            assert!(
                served.iter().filter(|n| **n > 0.0).count() >= 2,
                "one session, several replicas: {served:?}"
            );
            replicas[1].signal("KILL");
            for id in 10..=18 {
                answered(nginx.legacy(Some(&session), &echo(id)));
                answered(nginx.modern(
                    id,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "r"}}),
                ));
            }
        }
    }
}
