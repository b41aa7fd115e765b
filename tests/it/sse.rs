//! Remote upstreams on the 2024-11-05 HTTP+SSE transport, end to end: the reference
//! `@modelcontextprotocol/server-everything` in its `sse` mode (a server nobody here wrote)
//! behind `mcpx serve`, reached by the backwards-compatibility procedure and by
//! `transport = "sse"`, called from a legacy and a modern client.

use crate::common::*;
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// server-everything serving HTTP+SSE on a port of its own (`/sse` for the stream, `/message`
/// for the POSTs); killed when dropped.
struct Everything {
    child: Child,
    addr: SocketAddr,
}

impl Everything {
    fn start() -> Everything {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Everything::start_on(port)
    }

    fn start_on(port: u16) -> Everything {
        let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/sdk/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let node = deps::node();
        let child = Command::new(node)
            .arg(server)
            .arg("sse")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Everything { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/sse", self.addr)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The text of a tool call's first content block.
fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
}

/// The upstream's line in `mcpx__upstreams`.
fn upstream_state(mcpx: &mut Serve, id: i64) -> Value {
    let report = mcpx.call(
        id,
        "tools/call",
        json!({"name": "mcpx__upstreams", "arguments": {}}),
    );
    report["result"]["structuredContent"]["upstreams"][0].clone()
}

/// Waits until `tools/list` names `tool`, asking with ids from `id` on.
fn wait_for_tool(mcpx: &mut Serve, id: &mut i64, tool: &str, params: Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        *id += 1;
        let listed = mcpx.call(*id, "tools/list", params.clone());
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        if names.contains(&tool) {
            return;
        }
        assert!(Instant::now() < deadline, "{tool} never listed: {names:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

mod v2024_11_05 {
    mod sse_upstream {
        use super::super::*;

        #[test]
        fn a_server_that_refuses_posts_is_reached_over_http_sse_and_serves_a_legacy_client() {
            let everything = Everything::start();
            let mut mcpx = Serve::start(&format!(
                "[servers.everything]\nurl = \"{}\"\n",
                everything.url()
            ));
            mcpx.call(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "test", "version": "1"}}),
            );
            mcpx.notify("notifications/initialized", json!({}));
            let echoed = mcpx.call(
                1,
                "tools/call",
                json!({"name": "everything__echo", "arguments": {"message": "over sse"}}),
            );
            assert_eq!(text(&echoed), "Echo: over sse", "{echoed}");
            assert_result("2025-11-25", "tools/call", &echoed);
            let state = upstream_state(&mut mcpx, 2);
            assert_eq!(state["state"], "ready", "{state}");
            assert!(mcpx.log_shows("trying HTTP+SSE"), "{}", mcpx.stderr());

            // Progress comes back on the stream, under the client's own token.
            let progressed = mcpx.call(
                3,
                "tools/call",
                json!({"name": "everything__trigger-long-running-operation",
                    "arguments": {"duration": 1, "steps": 3}, "_meta": {"progressToken": "p"}}),
            );
            assert!(progressed.get("result").is_some(), "{progressed}");
            let progress: Vec<Value> = mcpx
                .drain(Duration::from_millis(100))
                .into_iter()
                .filter(|m| m["method"] == "notifications/progress")
                .collect();
            assert_eq!(progress.len(), 3, "{progress:?}");
            assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p"));

            // The server's question comes on the stream, goes to the client, and its answer is
            // POSTed back; the tool registered once the session began, announced by list_changed.
            let mut id = 10;
            wait_for_tool(
                &mut mcpx,
                &mut id,
                "everything__trigger-elicitation-request",
                json!({}),
            );
            mcpx.request(
                100,
                "tools/call",
                json!({"name": "everything__trigger-elicitation-request", "arguments": {}}),
            );
            let asked = loop {
                let message = mcpx.next();
                if message["method"] == "elicitation/create" {
                    break message;
                }
            };
            mcpx.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
                "action": "accept", "content": {"name": "Ada", "check": true}}}));
            let answered = mcpx.response(100);
            assert!(answered["result"].to_string().contains("Ada"), "{answered}");
        }

        #[test]
        fn a_configured_sse_server_serves_a_modern_client_and_comes_back_after_it_restarts() {
            let mut everything = Everything::start();
            let mut mcpx = Serve::start(&format!(
                "[servers.everything]\nurl = \"{}\"\ntransport = \"sse\"\n",
                everything.url()
            ));
            let summed = mcpx.call(
                1,
                "tools/call",
                modern(json!({"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}})),
            );
            assert!(text(&summed).contains('5'), "{summed}");
            assert_result("2026-07-28", "tools/call", &summed);
            assert!(!mcpx.stderr().contains("trying HTTP+SSE"));

            // The stream dropping is the server going away: a call fails at once, naming it.
            let port = everything.addr.port();
            everything.stop();
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut id = 10;
            loop {
                id += 1;
                let state = upstream_state(&mut mcpx, id);
                if state["state"] != "ready" {
                    break;
                }
                assert!(Instant::now() < deadline, "still ready: {state}");
                std::thread::sleep(Duration::from_millis(50));
            }
            let failed = mcpx.call(
                50,
                "tools/call",
                modern(json!({"name": "everything__echo", "arguments": {"message": "x"}})),
            );
            let failure = failed.to_string();
            assert!(failure.contains("everything"), "{failed}");

            // Back on the same port: supervision reconnects, and calls are served again.
            let _back = Everything::start_on(port);
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                id += 1;
                let echoed = mcpx.call(
                    id,
                    "tools/call",
                    modern(json!({"name": "everything__echo", "arguments": {"message": "again"}})),
                );
                if echoed["result"]["content"][0]["text"] == "Echo: again" {
                    break;
                }
                assert!(Instant::now() < deadline, "not back: {echoed}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
