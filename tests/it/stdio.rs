//! `mcpx serve` end to end: the real binary on real pipes, with the fixture upstream (and, where
//! named, the published `mcp-server-time`) behind it. Test paths are `<revision>::<area>::<rule>`.

use crate::common::*;
use serde_json::{json, Value};
use std::time::Duration;

const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

mod every_revision {
    pub mod stdio {
        use super::super::*;

        #[test]
        fn requests_run_concurrently_and_cancelled_reaches_the_upstream_and_suppresses_the_reply() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            // The sleeping request does not hold up the next one.
            let echo = mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "hi"}}),
            );
            assert_eq!(echo["result"]["content"][0]["text"], "hi");
            mcpx.notify(
                "notifications/cancelled",
                json!({"requestId": 1, "reason": "test"}),
            );
            assert!(
                mcpx.log_shows("fixture: cancelled request"),
                "the upstream never saw the cancellation:\n{}",
                mcpx.stderr()
            );
            let ping = mcpx.call(3, "ping", json!({}));
            assert_eq!(ping["result"], json!({}));
            let late = mcpx.drain(Duration::from_millis(300));
            assert!(
                late.iter().all(|m| m["id"] != 1),
                "a cancelled request was answered: {late:?}"
            );
        }

        #[test]
        fn notifications_are_never_answered_even_unknown_ones() {
            let mut mcpx = Serve::start("");
            mcpx.notify("notifications/initialized", json!({}));
            mcpx.notify("notifications/no_such_thing", json!({}));
            mcpx.send(json!({"jsonrpc": "2.0", "method": "tools/list"}));
            mcpx.request(9, "ping", json!({}));
            let first = mcpx.next();
            assert_eq!(first["id"], 9, "something answered a notification: {first}");
        }

        #[test]
        fn a_malformed_line_is_a_parse_error_without_id_and_reading_carries_on() {
            let mut mcpx = Serve::start("");
            mcpx.send_raw("{this is not json");
            mcpx.send_raw("\u{1}\u{2}\u{3}");
            for _ in 0..2 {
                let error = mcpx.next();
                assert_eq!(error["error"]["code"], -32700);
                assert_eq!(error["id"], Value::Null);
            }
            assert_eq!(mcpx.call(1, "ping", json!({}))["result"], json!({}));
        }

        #[test]
        fn an_oversized_line_is_refused_and_reading_carries_on() {
            let mut mcpx = Serve::start("[transport]\nmaxMessageBytes = 1024\n");
            mcpx.send_raw(&format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}", "x".repeat(4096)));
            assert_eq!(mcpx.next()["error"]["code"], -32600);
            assert_eq!(mcpx.call(2, "ping", json!({}))["result"], json!({}));
        }

        #[test]
        fn eof_lets_requests_in_flight_answer_then_exits() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-06-18");
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 300}}),
            );
            mcpx.close_stdin();
            let reply = mcpx.next();
            assert_eq!(reply["id"], 1);
            assert_eq!(reply["result"]["content"][0]["text"], "slept");
            assert!(mcpx.wait(PATIENCE).expect("mcpx did not exit").success());
        }

        #[test]
        fn eof_cancels_what_outlives_stdio_drain_and_exits() {
            let mut mcpx = Serve::start(&fixture_config("[transport]\nstdioDrain = \"200ms\"\n"));
            mcpx.initialize("2025-06-18");
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            // Let the request reach the upstream before stdin closes.
            mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "x"}}),
            );
            mcpx.close_stdin();
            assert!(mcpx.wait(PATIENCE).expect("mcpx did not exit").success());
            assert!(mcpx
                .drain(Duration::from_millis(50))
                .iter()
                .all(|m| m["id"] != 1));
            // (Attached, the daemon logs it: it may come just after the editor's session ends.)
            assert!(
                mcpx.log_shows("fixture: cancelled request"),
                "{}",
                mcpx.stderr()
            );
        }

        #[test]
        fn before_initialize_ping_and_the_rest_get_the_oldest_revision_shapes() {
            let mut mcpx = Serve::start(&fixture_config(""));
            assert_eq!(mcpx.call(1, "ping", json!({}))["result"], json!({}));
            let kinds = mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__kinds", "arguments": {}}),
            );
            assert_result("2024-11-05", "tools/call", &kinds);
            let kinds_seen: Vec<&str> = kinds["result"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["type"].as_str().unwrap())
                .collect();
            assert_eq!(
                kinds_seen,
                vec!["text", "text", "text"],
                "audio and resource_link do not exist in 2024-11-05"
            );
            assert!(kinds["result"].get("structuredContent").is_none());
        }

        #[test]
        fn stdout_carries_only_mcp_frames_one_per_line() {
            for revision in LEGACY {
                let mut mcpx = Serve::start(&fixture_config(""));
                let init = mcpx.initialize(revision);
                assert_result(revision, "initialize", &init);
                assert_eq!(init["result"]["protocolVersion"], revision);
                let list = mcpx.call(1, "tools/list", json!({}));
                assert_result(revision, "tools/list", &list);
                let call = mcpx.call(
                    2,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "line one\nline two"}}),
                );
                assert_result(revision, "tools/call", &call);
                assert_eq!(call["result"]["content"][0]["text"], "line one\nline two");
                let failed = mcpx.call(
                    3,
                    "tools/call",
                    json!({"name": "fixture__fail", "arguments": {}}),
                );
                assert_result(revision, "tools/call", &failed);
                assert_eq!(failed["result"]["isError"], true);
                let unknown_tool =
                    mcpx.call(4, "tools/call", json!({"name": "nope", "arguments": {}}));
                assert_eq!(unknown_tool["error"]["code"], -32602);
                let unknown_method = mcpx.call(5, "no/such/method", json!({}));
                assert_eq!(unknown_method["error"]["code"], -32601);
                for message in [&unknown_tool, &unknown_method] {
                    assert_error(revision, message);
                }
                mcpx.close_stdin();
                assert!(mcpx.wait(PATIENCE).unwrap().success());
                // Every line was parsed as exactly one JSON value by the harness; none was left.
                assert!(mcpx.drain(Duration::from_millis(50)).is_empty());
            }
        }

        #[test]
        fn every_result_validates_against_the_clients_revision_schema() {
            for revision in LEGACY {
                let mut mcpx = Serve::start(&fixture_config(""));
                mcpx.initialize(revision);
                let calls = [
                    ("tools/list", json!({})),
                    (
                        "tools/call",
                        json!({"name": "fixture__kinds", "arguments": {}}),
                    ),
                    ("prompts/list", json!({})),
                    (
                        "prompts/get",
                        json!({"name": "fixture__greet", "arguments": {"who": "Ada"}}),
                    ),
                    ("resources/list", json!({})),
                    ("resources/templates/list", json!({})),
                    ("resources/read", json!({"uri": "fixture://hello"})),
                    (
                        "completion/complete",
                        json!({"ref": {"type": "ref/prompt", "name": "fixture__greet"}, "argument": {"name": "who", "value": "a"}}),
                    ),
                    ("ping", json!({})),
                ];
                for (i, (method, params)) in calls.into_iter().enumerate() {
                    let response = mcpx.call(10 + i as i64, method, params);
                    assert_result(revision, method, &response);
                }
            }
        }

        #[test]
        fn list_changed_is_forwarded_after_a_legacy_initialize() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-03-26");
            mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__add_tool", "arguments": {}}),
            );
            let notification = mcpx
                .drain(Duration::from_millis(500))
                .into_iter()
                .find(|m| m["method"] == "notifications/tools/list_changed");
            assert_schema(
                "2025-03-26",
                "ToolListChangedNotification",
                &notification.expect("no list_changed"),
            );
            let tools = mcpx.call(2, "tools/list", json!({}));
            assert!(tools["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "fixture__extra"));
            assert_eq!(
                mcpx.call(
                    3,
                    "tools/call",
                    json!({"name": "fixture__extra", "arguments": {}})
                )["result"]["content"][0]["text"],
                "extra"
            );
        }

        #[test]
        fn progress_reaches_the_caller_under_its_own_token_before_the_reply() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-06-18");
            mcpx.request(1, "tools/call", json!({"name": "fixture__progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "mine"}}));
            let mut progress = 0;
            loop {
                let message = mcpx.next();
                if message["method"] == "notifications/progress" {
                    assert_eq!(message["params"]["progressToken"], "mine");
                    assert_schema("2025-06-18", "ProgressNotification", &message);
                    progress += 1;
                } else {
                    assert_eq!(message["id"], 1);
                    break;
                }
            }
            assert_eq!(progress, 3);
        }

        #[test]
        fn an_upstream_that_dies_mid_call_fails_the_call_and_the_rest_keep_serving() {
            let mut mcpx = Serve::start(
                &fixture_config("[servers.other]\ncommand = \"{FIXTURE}\"\n")
                    .replace("{FIXTURE}", &fixture_bin()),
            );
            mcpx.initialize("2025-11-25");
            let crashed = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__crash", "arguments": {}}),
            );
            assert_eq!(crashed["error"]["code"], -32603, "{crashed}");
            assert!(crashed["error"]["message"]
                .as_str()
                .unwrap()
                .contains("fixture"));
            let other = mcpx.call(
                2,
                "tools/call",
                json!({"name": "other__echo", "arguments": {"text": "still here"}}),
            );
            assert_eq!(other["result"]["content"][0]["text"], "still here");
            let report = mcpx.call(
                3,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            // Down since it exited, or (on a slow machine, past the first backoff) already
            // started again by supervision: either way the report knows it died.
            let fixture = report["result"]["structuredContent"]["upstreams"]
                .as_array()
                .unwrap()
                .iter()
                .find(|u| u["name"] == "fixture")
                .cloned()
                .unwrap();
            assert!(
                fixture["state"].as_str().unwrap().contains("exited")
                    || fixture["restarts"].as_u64() >= Some(1),
                "{fixture}"
            );
        }

        /// With no configuration at all, the built-in server answers a round trip in every era.
        #[test]
        fn the_builtin_echo_answers_with_no_upstream_in_both_eras() {
            let mut mcpx = Serve::start("");
            let echo = json!({"name": "mcpx__echo", "arguments": {"text": "round trip"}});
            let modern_echo = mcpx.call(1, "tools/call", modern(echo.clone()));
            assert_eq!(modern_echo["result"]["content"][0]["text"], "round trip");
            assert_result("2026-07-28", "tools/call", &modern_echo);
            mcpx.initialize("2025-11-25");
            let legacy_echo = mcpx.call(2, "tools/call", echo);
            assert_eq!(legacy_echo["result"]["content"][0]["text"], "round trip");
        }

        #[test]
        fn a_server_that_fails_to_start_is_reported_and_the_others_serve() {
            let mut mcpx = Serve::start(&fixture_config(
                "[servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
            ));
            mcpx.initialize("2025-11-25");
            let report = mcpx.call(
                1,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            let upstreams = &report["result"]["structuredContent"]["upstreams"];
            let broken = upstreams
                .as_array()
                .unwrap()
                .iter()
                .find(|u| u["name"] == "broken")
                .unwrap();
            assert!(
                broken["state"].as_str().unwrap().starts_with("failed"),
                "{broken}"
            );
            assert!(mcpx.log_shows("broken"), "{}", mcpx.stderr());
            let echo = mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "ok"}}),
            );
            assert_eq!(echo["result"]["content"][0]["text"], "ok");
        }

        #[test]
        fn resources_updated_reaches_a_subscribed_client() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            assert_eq!(
                mcpx.call(1, "resources/subscribe", json!({"uri": "fixture://hello"}))["result"],
                json!({})
            );
            // The fixture speaks 2026-07-28: mcpx's listen to it now asks for the URI.
            assert!(mcpx.log_shows("\"resourceSubscriptions\":[\"fixture://hello\"]"));
            mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__touch", "arguments": {}}),
            );
            let updated = mcpx
                .drain(Duration::from_millis(500))
                .into_iter()
                .find(|m| m["method"] == "notifications/resources/updated");
            assert_eq!(
                updated.expect("no resources/updated")["params"]["uri"],
                "fixture://hello"
            );
        }

        #[test]
        fn an_unknown_resource_is_32002_for_legacy_clients() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            assert_eq!(
                mcpx.call(1, "resources/read", json!({"uri": "nowhere://x"}))["error"]["code"],
                -32002
            );
            let templated = mcpx.call(2, "resources/read", json!({"uri": "fixture://items/7"}));
            assert_eq!(
                templated["result"]["contents"][0]["text"],
                "fixture://items/7"
            );
        }

        #[test]
        fn initialize_echoes_a_supported_revision_and_offers_the_latest_otherwise() {
            let mut mcpx = Serve::start("");
            assert_eq!(
                mcpx.initialize("1999-01-01")["result"]["protocolVersion"],
                "2025-11-25"
            );
        }

        #[test]
        fn lists_paginate_through_the_merged_catalog() {
            let mut mcpx = Serve::start(&format!(
                "[servers.fixture]\ncommand = {:?}\nargs = [\"--tools\", \"150\"]\n",
                fixture_bin()
            ));
            mcpx.initialize("2025-11-25");
            let first = mcpx.call(1, "tools/list", json!({}));
            let cursor = first["result"]["nextCursor"].clone();
            assert!(cursor.is_string(), "{first}");
            let second = mcpx.call(2, "tools/list", json!({"cursor": cursor}));
            let total = first["result"]["tools"].as_array().unwrap().len()
                + second["result"]["tools"].as_array().unwrap().len();
            // Everything a fixture without generated tools lists (built-ins included), plus 150.
            let mut plain = Serve::start(&fixture_config(""));
            plain.initialize("2025-11-25");
            let unpaged = plain.call(1, "tools/list", json!({}))["result"]["tools"]
                .as_array()
                .unwrap()
                .len();
            assert_eq!(total, unpaged + 150);
            assert_eq!(
                mcpx.call(3, "tools/list", json!({"cursor": "bogus"}))["error"]["code"],
                -32602
            );
        }

        #[test]
        fn a_real_published_server_answers_through_mcpx() {
            let mut mcpx = Serve::start(&format!(
                "[servers.time]\ncommand = {:?}\n",
                deps::mcp_server_time()
            ));
            mcpx.initialize("2025-06-18");
            assert!(mcpx.upstreams_ready(), "{}", mcpx.stderr());
            let list = mcpx.call(1, "tools/list", json!({}));
            assert!(
                list["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["name"] == "time__get_current_time"),
                "{list}"
            );
            let call = mcpx.call(
                2,
                "tools/call",
                json!({"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}),
            );
            assert_result("2025-06-18", "tools/call", &call);
            assert!(call["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("UTC"));
            let modern_call = mcpx.call(
                3,
                "tools/call",
                modern(json!({"name": "time__get_current_time", "arguments": {"timezone": "UTC"}})),
            );
            assert_result("2026-07-28", "tools/call", &modern_call);
        }

        #[test]
        fn a_modern_only_upstream_is_spoken_to_at_2026_07_28() {
            let mut mcpx = Serve::start(&format!(
                "[servers.fixture]\ncommand = {:?}\nargs = [\"--modern-only\"]\n",
                fixture_bin()
            ));
            mcpx.initialize("2025-11-25");
            let echo = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "modern"}}),
            );
            assert_eq!(echo["result"]["content"][0]["text"], "modern", "{echo}");
            assert_result("2025-11-25", "tools/call", &echo);
            let report = mcpx.call(
                2,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            assert_eq!(
                report["result"]["structuredContent"]["upstreams"][0]["revision"],
                "2026-07-28"
            );
        }

        /// Two servers exposing one name: mcpx serves on, the first server keeps the name, the
        /// other's tool is left out, and an ERROR names both (one policy at start, at run time
        /// and at reload; the rule itself is the catalog's unit test).
        #[test]
        fn a_name_collision_keeps_the_first_server_and_logs_both() {
            let config = format!("[servers.a]\ncommand = {0:?}\nprefix = \"\"\n[servers.b]\ncommand = {0:?}\nprefix = \"\"\n", fixture_bin());
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let listed = mcpx.call(1, "tools/list", json!({}));
            let names: Vec<&str> = listed["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{listed}"))
                .iter()
                .filter_map(|t| t["name"].as_str())
                .collect();
            assert_eq!(
                names.iter().filter(|n| **n == "echo").count(),
                1,
                "{names:?}"
            );
            let echoed = mcpx.call(
                2,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "one"}}),
            );
            assert_eq!(echoed["result"]["content"][0]["text"], "one", "{echoed}");
            let names_both = || {
                mcpx.stderr()
                    .contains("\"a\" keeps it, \"b\"'s is not served")
            };
            assert!(eventually(names_both), "{}", mcpx.stderr());
            assert!(mcpx.stderr().contains("ERROR"), "{}", mcpx.stderr());
        }

        #[test]
        fn a_bad_config_file_names_file_line_and_key_and_mcpx_does_not_start() {
            let mut mcpx = Serve::start("[transport]\nstdioDrain = \"5s\"\nbogusKey = 1\n");
            let status = mcpx.wait(PATIENCE).expect("mcpx started with a bad config");
            assert_eq!(status.code(), Some(2));
            let log = mcpx.stderr();
            assert!(log.contains(":3:") && log.contains("bogusKey"), "{log}");
        }
    }
}

mod v2025_03_26 {
    pub mod stdio {
        use super::super::*;

        #[test]
        fn a_batch_is_answered_as_an_array_with_elements_run_concurrently() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-03-26");
            mcpx.send(json!([
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fixture__sleep", "arguments": {"ms": 200}}},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/whatever"}
            ]));
            let reply = mcpx.next();
            let ids: Vec<&Value> = reply
                .as_array()
                .expect("not an array")
                .iter()
                .map(|r| &r["id"])
                .collect();
            assert_eq!(ids, vec![&json!(1), &json!(2)]);
        }

        #[test]
        fn initialize_inside_a_batch_is_an_error_element() {
            let mut mcpx = Serve::start("");
            mcpx.send(json!([
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            ]));
            let reply = mcpx.next();
            assert_eq!(reply[0]["error"]["code"], -32600);
            assert_eq!(reply[1]["result"], json!({}));
        }

        #[test]
        fn a_batch_before_any_initialize_is_accepted() {
            let mut mcpx = Serve::start("");
            mcpx.send(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
            assert_eq!(mcpx.next()[0]["id"], 1);
        }

        #[test]
        fn a_batch_of_only_notifications_gets_nothing() {
            let mut mcpx = Serve::start("");
            mcpx.send(json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]));
            mcpx.request(5, "ping", json!({}));
            assert_eq!(mcpx.next()["id"], 5);
        }
    }
}

mod v2025_06_18 {
    pub mod stdio {
        use super::super::*;

        #[test]
        fn a_batch_is_refused_after_negotiating_a_revision_without_batches() {
            for revision in ["2024-11-05", "2025-06-18", "2025-11-25"] {
                let mut mcpx = Serve::start("");
                mcpx.initialize(revision);
                mcpx.send(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
                let reply = mcpx.next();
                assert_eq!(reply["error"]["code"], -32600, "{revision}: {reply}");
            }
        }
    }
}

mod v2026_07_28 {
    pub mod stdio {
        use super::super::*;

        #[test]
        fn server_discover_lists_all_five_revisions_at_any_time() {
            let mut mcpx = Serve::start(&fixture_config(""));
            let discover = mcpx.call(1, "server/discover", modern(json!({})));
            assert_result("2026-07-28", "server/discover", &discover);
            assert_eq!(
                discover["result"]["supportedVersions"],
                json!(LEGACY
                    .iter()
                    .copied()
                    .chain(["2026-07-28"])
                    .collect::<Vec<_>>())
            );
            assert_eq!(
                discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "mcpx"
            );
            // Even after a legacy initialize on the same process.
            mcpx.initialize("2025-06-18");
            assert_result(
                "2026-07-28",
                "server/discover",
                &mcpx.call(2, "server/discover", modern(json!({}))),
            );
        }

        #[test]
        fn a_missing_envelope_is_invalid_params() {
            let mut mcpx = Serve::start("");
            assert_eq!(
                mcpx.call(1, "server/discover", json!({}))["error"]["code"],
                -32602
            );
            let no_caps =
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
            assert_eq!(mcpx.call(2, "tools/list", no_caps)["error"]["code"], -32602);
        }

        #[test]
        fn an_unsupported_version_is_32022_with_supported_and_requested() {
            let mut mcpx = Serve::start("");
            let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}});
            let error = mcpx.call(1, "tools/list", params);
            assert_eq!(error["error"]["code"], -32022);
            assert_eq!(error["error"]["data"]["requested"], "2099-01-01");
            assert!(error["error"]["data"]["supported"]
                .as_array()
                .unwrap()
                .contains(&json!("2026-07-28")));
            assert_schema("2026-07-28", "UnsupportedProtocolVersionError", &error);
        }

        #[test]
        fn every_result_carries_result_type_server_info_and_cache_fields() {
            let mut mcpx = Serve::start(&fixture_config(""));
            let calls = [
                ("tools/list", json!({})),
                (
                    "tools/call",
                    json!({"name": "fixture__kinds", "arguments": {}}),
                ),
                ("prompts/list", json!({})),
                (
                    "prompts/get",
                    json!({"name": "fixture__greet", "arguments": {"who": "Ada"}}),
                ),
                ("resources/list", json!({})),
                ("resources/templates/list", json!({})),
                ("resources/read", json!({"uri": "fixture://hello"})),
                (
                    "completion/complete",
                    json!({"ref": {"type": "ref/prompt", "name": "fixture__greet"}, "argument": {"name": "who", "value": "a"}}),
                ),
            ];
            for (i, (method, params)) in calls.into_iter().enumerate() {
                let response = mcpx.call(i as i64 + 1, method, modern(params));
                assert_result("2026-07-28", method, &response);
                assert_eq!(response["result"]["resultType"], "complete", "{method}");
                assert_eq!(
                    response["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                    "mcpx"
                );
            }
        }

        #[test]
        fn legacy_only_methods_are_not_found() {
            let mut mcpx = Serve::start("");
            let initialize = modern(
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            );
            assert_eq!(
                mcpx.call(3, "initialize", initialize)["error"]["code"],
                -32601
            );
            assert_eq!(
                mcpx.call(1, "ping", modern(json!({})))["error"]["code"],
                -32601
            );
            assert_eq!(
                mcpx.call(2, "resources/subscribe", modern(json!({"uri": "x"})))["error"]["code"],
                -32601
            );
        }

        #[test]
        fn an_unknown_resource_is_32602() {
            let mut mcpx = Serve::start(&fixture_config(""));
            assert_eq!(
                mcpx.call(1, "resources/read", modern(json!({"uri": "nowhere://x"})))["error"]
                    ["code"],
                -32602
            );
        }

        #[test]
        fn listen_is_acknowledged_first_then_tagged_notifications_and_cancel_withholds_the_reply() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.request(
                7,
                "subscriptions/listen",
                modern(json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["fixture://hello"]}})),
            );
            let ack = mcpx.next();
            assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
            assert_eq!(
                ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                7
            );
            assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
            assert!(ack["params"]["notifications"]
                .get("promptsListChanged")
                .is_none());
            assert_schema("2026-07-28", "SubscriptionsAcknowledgedNotification", &ack);
            mcpx.call(
                8,
                "tools/call",
                modern(json!({"name": "fixture__add_tool", "arguments": {}})),
            );
            mcpx.call(
                9,
                "tools/call",
                modern(json!({"name": "fixture__touch", "arguments": {}})),
            );
            let seen = mcpx.drain(Duration::from_millis(500));
            for method in [
                "notifications/tools/list_changed",
                "notifications/resources/updated",
            ] {
                let n = seen
                    .iter()
                    .find(|m| m["method"] == method)
                    .unwrap_or_else(|| panic!("no {method} in {seen:?}"));
                assert_eq!(
                    n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                    7
                );
            }
            mcpx.notify("notifications/cancelled", json!({"requestId": 7}));
            mcpx.call(10, "tools/list", modern(json!({})));
            assert!(mcpx
                .drain(Duration::from_millis(200))
                .iter()
                .all(|m| m["id"] != 7));
        }

        #[test]
        fn listen_completes_with_its_result_when_stdin_closes() {
            let mut mcpx = Serve::start("");
            mcpx.request(
                3,
                "subscriptions/listen",
                modern(json!({"notifications": {"toolsListChanged": true}})),
            );
            assert_eq!(
                mcpx.next()["method"],
                "notifications/subscriptions/acknowledged"
            );
            mcpx.close_stdin();
            let done = mcpx.next();
            assert_eq!(done["id"], 3);
            assert_eq!(
                done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                3
            );
            assert_result("2026-07-28", "subscriptions/listen", &done);
            assert!(mcpx.wait(PATIENCE).unwrap().success());
        }

        /// Open listens hold places like any request: past the cap a request is refused at once,
        /// and a place given back serves the next one.
        #[test]
        fn past_max_in_flight_per_client_a_request_is_refused_at_once() {
            let mut mcpx = Serve::start("[transport]\nmaxInFlightPerClient = 2\n");
            let listen = modern(json!({"notifications": {"toolsListChanged": true}}));
            for id in [1, 2] {
                mcpx.request(id, "subscriptions/listen", listen.clone());
                assert_eq!(
                    mcpx.next()["method"],
                    "notifications/subscriptions/acknowledged"
                );
            }
            let refused = mcpx.call(3, "tools/list", modern(json!({})));
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("transport.maxInFlightPerClient (2)"),
                "{refused}"
            );
            assert!(mcpx.log_shows("maxInFlightPerClient (2) reached"));
            mcpx.notify("notifications/cancelled", json!({"requestId": 1}));
            let deadline = std::time::Instant::now() + PATIENCE;
            let served = loop {
                let answer = mcpx.call(4, "tools/list", modern(json!({})));
                if answer.get("result").is_some() || std::time::Instant::now() > deadline {
                    break answer;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            assert!(served["result"]["tools"].is_array(), "{served}");
        }
    }
}
