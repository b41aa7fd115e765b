//! `[limits]`, end to end: a daemon in front of the fixture, called past its limits over HTTP
//! (modern) and over stdio (legacy). What the upstream saw is read from mcpx's own client-side
//! metric, which counts each call that reached it.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// A daemon with metrics, the fixture, and `limits` (TOML under `[limits]`).
fn limited_daemon(limits: &str) -> Daemon {
    let daemon = Daemon::start(
        &fixture_config(&format!("[limits]\n{limits}\n")),
        "metrics = true",
    );
    assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
    daemon
}

/// A modern `tools/call` of `tool` with `arguments`: the JSON-RPC response.
fn call(daemon: &Daemon, id: i64, tool: &str, arguments: Value) -> Value {
    let params = json!({"name": tool, "arguments": arguments});
    daemon.modern(id, "tools/call", params).json()
}

/// Whether `response` is mcpx's refusal by `limit`: a tool result with `isError`, naming the
/// limit and when to retry.
fn refused_by(response: &Value, limit: &str) -> bool {
    let result = &response["result"];
    result["isError"] == true
        && result["_meta"]["mcpx/limit"] == limit
        && result["_meta"]["mcpx/retryAfterMs"]
            .as_u64()
            .is_some_and(|ms| ms > 0)
        && result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!("limits.{limit}")) && t.contains("retry in"))
}

mod every_revision {
    pub mod limits {
        use super::super::*;

        #[test]
        fn the_call_past_the_rate_is_a_tool_error_and_the_upstream_saw_only_the_rate() {
            let daemon = limited_daemon("calls = \"3/hour\"");
            for id in 1..=3 {
                let reply = call(
                    &daemon,
                    id,
                    "fixture__echo",
                    json!({"text": id.to_string()}),
                );
                assert_eq!(reply["result"]["isError"], false, "{reply}");
            }
            let refused = call(&daemon, 4, "fixture__echo", json!({"text": "4"}));
            assert!(refused_by(&refused, "calls"), "{refused}");
            assert_result("2026-07-28", "tools/call", &refused);
            assert_eq!(fixture_calls(&daemon), 3.0);
            let text = daemon.metrics();
            let limited = [("limit", "calls")];
            assert_eq!(
                metric_sample(&text, "mcpx_calls_limited_total", &limited),
                1.0
            );
            let outcome = [("method", "tools/call"), ("outcome", "limited")];
            let served = "mcp_server_operation_duration_seconds_count";
            assert_eq!(metric_sample(&text, served, &outcome), 1.0, "{text}");
        }

        #[test]
        fn other_methods_past_the_rate_get_an_error_outside_the_reserved_range() {
            let daemon = limited_daemon("calls = \"1/hour\"");
            let params = json!({"name": "fixture__greet", "arguments": {"name": "Ada"}});
            let first = daemon.modern(1, "prompts/get", params.clone()).json();
            assert!(first["result"]["messages"].is_array(), "{first}");
            let refused = daemon.modern(2, "prompts/get", params).json();
            let error = &refused["error"];
            let code = error["code"].as_i64().unwrap();
            assert!(!(-32768..=-32000).contains(&code), "{refused}");
            assert_eq!(code, -31429);
            assert!(error["data"]["retryAfterMs"].as_u64().unwrap() > 0);
            assert_eq!(error["data"]["limit"], "calls");
            let read = json!({"uri": "fixture://hello"});
            assert_eq!(
                daemon.modern(3, "resources/read", read).json()["error"]["code"],
                code
            );
        }

        #[test]
        fn a_tool_glob_limits_the_tools_it_matches_and_no_other() {
            let daemon = limited_daemon("[limits.tools.\"fixture__e*\"]\ncalls = \"1/hour\"");
            let echo = json!({"text": "x"});
            assert_eq!(
                call(&daemon, 1, "fixture__echo", echo.clone())["result"]["isError"],
                false
            );
            let refused = call(&daemon, 2, "fixture__echo", echo);
            assert!(refused_by(&refused, "tools.\"fixture__e*\""), "{refused}");
            for id in 3..6 {
                let other = call(&daemon, id, "fixture__kinds", json!({}));
                assert!(other["result"]["content"].is_array(), "{other}");
                assert!(other["result"]["isError"] != true, "{other}");
            }
            assert_eq!(fixture_calls(&daemon), 4.0);
        }

        #[test]
        fn the_loop_guard_trips_on_identical_arguments_and_not_on_different_ones() {
            let daemon = limited_daemon("[limits.loopGuard]\nidentical = 2\nwindow = \"1h\"");
            let same = json!({"text": "again", "n": 1});
            // The same arguments in another order are the same call.
            let reordered = json!({"n": 1, "text": "again"});
            assert_eq!(
                call(&daemon, 1, "fixture__echo", same.clone())["result"]["isError"],
                false
            );
            assert_eq!(
                call(&daemon, 2, "fixture__echo", reordered)["result"]["isError"],
                false
            );
            let refused = call(&daemon, 3, "fixture__echo", same);
            assert!(refused_by(&refused, "loopGuard"), "{refused}");
            for id in 4..8 {
                let different = json!({"text": format!("call {id}")});
                let reply = call(&daemon, id, "fixture__echo", different);
                assert_eq!(reply["result"]["isError"], false, "{reply}");
            }
            assert_eq!(fixture_calls(&daemon), 6.0);
            let guarded = [("limit", "loopGuard")];
            assert_eq!(
                metric_sample(&daemon.metrics(), "mcpx_calls_limited_total", &guarded),
                1.0
            );
        }

        #[test]
        fn a_legacy_stdio_client_gets_the_same_tool_error_and_the_audit_log_says_limited() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("audit.jsonl");
            let config = format!(
                "[audit]\npath = {:?}\nkeyFile = {:?}\n[limits]\ncalls = \"1/hour\"\n{}",
                log.display().to_string(),
                dir.path().join("audit.key").display().to_string(),
                fixture_config("")
            );
            let mut serve = Serve::start(&config);
            serve.initialize("2025-06-18");
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "hi"}});
            let first = serve.call(2, "tools/call", echo.clone());
            assert_eq!(first["result"]["isError"], false, "{first}");
            let refused = serve.call(3, "tools/call", echo);
            assert!(refused_by(&refused, "calls"), "{refused}");
            assert_result("2025-06-18", "tools/call", &refused);
            let outcomes = || -> Vec<Value> {
                std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()["outcome"].clone())
                    .collect()
            };
            assert!(eventually(|| outcomes().len() == 2), "{:?}", outcomes());
            assert_eq!(outcomes(), [json!("ok"), json!("limited")]);
        }
    }
}
