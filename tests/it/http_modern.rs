//! `mcpx daemon` at 2026-07-28 end to end: the real binary on a loopback port, raw sockets where
//! an HTTP library would normalise the bytes under test, the fixture upstream behind it.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

fn daemon() -> Daemon {
    Daemon::start(&fixture_config(""), "")
}

/// A modern request with one header replaced (`None` removes it).
fn with_header(
    id: i64,
    method: &str,
    params: Value,
    name: &str,
    value: Option<&[u8]>,
) -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let (headers, body) = modern_request(id, method, params);
    let mut headers: Vec<(String, Vec<u8>)> = headers
        .into_iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(name))
        .map(|(n, v)| (n, v.into_bytes()))
        .collect();
    if let Some(value) = value {
        headers.push((name.to_owned(), value.to_vec()));
    }
    (headers, body.to_string().into_bytes())
}

fn post_with(d: &Daemon, request: (Vec<(String, Vec<u8>)>, Vec<u8>)) -> Reply {
    let (headers, body) = request;
    let refs: Vec<(&str, &[u8])> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_slice()))
        .collect();
    d.post(&refs, &body)
}

fn assert_header_mismatch(reply: &Reply, id: i64) {
    assert_eq!(
        reply.status,
        400,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32020, "{body}");
    assert_eq!(body["id"], id, "{body}");
    assert_schema("2026-07-28", "HeaderMismatchError", &body);
}

fn echo(region: Option<&str>) -> Value {
    let mut arguments = json!({"text": "hi"});
    if let Some(region) = region {
        arguments["region"] = json!(region);
    }
    json!({"name": "fixture__echo", "arguments": arguments})
}

mod v2026_07_28 {
    pub mod http {
        use super::super::*;

        #[test]
        fn a_modern_request_gets_json_with_result_type_and_server_info() {
            let d = daemon();
            let reply = d.modern(1, "tools/list", json!({}));
            assert_eq!(reply.status, 200);
            assert_eq!(reply.header("content-type"), Some("application/json"));
            let body = reply.json();
            assert_result("2026-07-28", "tools/list", &body);
            assert_eq!(body["result"]["resultType"], "complete");
            let call = d.modern(2, "tools/call", echo(None)).json();
            assert_result("2026-07-28", "tools/call", &call);
            assert_eq!(call["result"]["content"][0]["text"], "hi");
        }

        #[test]
        fn a_modern_header_on_a_body_without_meta_is_refused_not_served_as_legacy() {
            // Refused as a modern request missing its envelope: -32602, as the specification's
            // conformance suite requires (a legacy server would have answered it).
            let d = daemon();
            let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
            let reply = d.post(
                &[
                    ("MCP-Protocol-Version", b"2026-07-28"),
                    ("Mcp-Method", b"tools/list"),
                ],
                body.to_string().as_bytes(),
            );
            assert_eq!(reply.status, 400);
            assert_eq!(reply.json()["error"]["code"], -32602);
            assert_eq!(reply.json()["id"], 4);
        }

        #[test]
        fn initialize_in_a_modern_request_is_a_removed_method_404() {
            let d = daemon();
            let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
            let reply = d.modern(5, "initialize", params);
            assert_eq!(reply.status, 404);
            assert_eq!(reply.json()["error"]["code"], -32601);
            assert!(reply.header("mcp-session-id").is_none());
        }

        #[test]
        fn a_later_unknown_revision_is_32022_not_legacy() {
            let d = daemon();
            let mut params = modern(json!({}));
            params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
            let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": params});
            let reply = d.post(
                &[
                    ("MCP-Protocol-Version", b"2027-01-01"),
                    ("Mcp-Method", b"tools/list"),
                ],
                body.to_string().as_bytes(),
            );
            assert_eq!(reply.status, 400);
            let body = reply.json();
            assert_eq!(body["error"]["code"], -32022);
            assert_eq!(body["error"]["data"]["requested"], "2027-01-01");
            assert_schema("2026-07-28", "UnsupportedProtocolVersionError", &body);
        }

        #[test]
        fn missing_protocol_version_header_is_400_header_mismatch_with_the_id() {
            let d = daemon();
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(7, "tools/list", json!({}), "MCP-Protocol-Version", None),
                ),
                7,
            );
        }

        #[test]
        fn an_unknown_revision_in_the_header_is_32022_even_when_the_body_has_no_meta() {
            let d = daemon();
            let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {}});
            let reply = d.post(
                &[
                    ("MCP-Protocol-Version", b"2099-01-01"),
                    ("Mcp-Method", b"tools/list"),
                ],
                body.to_string().as_bytes(),
            );
            assert_eq!(reply.status, 400);
            let body = reply.json();
            assert_eq!(body["id"], 6);
            assert_eq!(body["error"]["code"], -32022, "{body}");
            assert_eq!(body["error"]["data"]["requested"], "2099-01-01");
            let supported = body["error"]["data"]["supported"].as_array().unwrap();
            assert!(supported.contains(&json!("2026-07-28")), "{body}");
            assert!(supported.contains(&json!("2024-11-05")), "{body}");
            assert_schema("2026-07-28", "UnsupportedProtocolVersionError", &body);
        }

        #[test]
        fn a_protocol_version_header_different_from_meta_is_a_header_mismatch() {
            let d = daemon();
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(
                        7,
                        "tools/list",
                        json!({}),
                        "MCP-Protocol-Version",
                        Some(b"2025-11-25"),
                    ),
                ),
                7,
            );
        }

        #[test]
        fn missing_or_different_mcp_method_is_a_header_mismatch() {
            let d = daemon();
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(8, "tools/list", json!({}), "Mcp-Method", None),
                ),
                8,
            );
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(
                        9,
                        "tools/list",
                        json!({}),
                        "Mcp-Method",
                        Some(b"prompts/list"),
                    ),
                ),
                9,
            );
        }

        #[test]
        fn mcp_name_is_required_on_tools_call_prompts_get_and_resources_read() {
            let d = daemon();
            let calls = [
                ("tools/call", echo(None)),
                (
                    "prompts/get",
                    json!({"name": "fixture__greet", "arguments": {"who": "x"}}),
                ),
                ("resources/read", json!({"uri": "fixture://hello"})),
            ];
            for (i, (method, params)) in calls.into_iter().enumerate() {
                let id = 10 + i as i64;
                assert_header_mismatch(
                    &post_with(
                        &d,
                        with_header(id, method, params.clone(), "Mcp-Name", None),
                    ),
                    id,
                );
                assert_header_mismatch(
                    &post_with(
                        &d,
                        with_header(id, method, params.clone(), "Mcp-Name", Some(b"other")),
                    ),
                    id,
                );
                let good = post_with(
                    &d,
                    with_header(id, method, params, "Mcp-Name", None).clone_with_name(method),
                );
                assert_eq!(
                    good.status,
                    200,
                    "{method}: {}",
                    String::from_utf8_lossy(&good.body)
                );
            }
        }

        #[test]
        fn a_header_byte_outside_visible_ascii_is_400_header_mismatch_with_the_id() {
            let d = daemon();
            for bad in [
                &b"fixture__\xe9cho"[..],
                b"caf\xc3\xa9",
                b"fixture__echo\x80",
            ] {
                assert_header_mismatch(
                    &post_with(
                        &d,
                        with_header(21, "tools/call", echo(None), "Mcp-Name", Some(bad)),
                    ),
                    21,
                );
            }
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(
                        22,
                        "tools/list",
                        json!({}),
                        "Mcp-Method",
                        Some(b"tools/list\xff"),
                    ),
                ),
                22,
            );
        }

        #[test]
        fn a_control_byte_in_a_header_is_a_malformed_head_answered_400() {
            // HTTP itself forbids control bytes in a field value, so hyper refuses the head before
            // any body is read: a bare 400 (no request id can be known), and the daemon serves on.
            let d = daemon();
            for bad in [&b"fixture__echo\x7f"[..], b"fixture\x01"] {
                assert_eq!(
                    post_with(
                        &d,
                        with_header(23, "tools/call", echo(None), "Mcp-Name", Some(bad))
                    )
                    .status,
                    400
                );
            }
            assert_eq!(d.modern(24, "tools/list", json!({})).status, 200);
        }

        #[test]
        fn mcp_name_in_base64_is_decoded_strictly_before_comparing() {
            let d = daemon();
            // "fixture__echo" in the sentinel form.
            let encoded = b"=?base64?Zml4dHVyZV9fZWNobw==?=";
            assert_eq!(
                post_with(
                    &d,
                    with_header(23, "tools/call", echo(None), "Mcp-Name", Some(encoded))
                )
                .status,
                200
            );
            let unpadded = b"=?base64?Zml4dHVyZV9fZWNobw?=";
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(24, "tools/call", echo(None), "Mcp-Name", Some(unpadded)),
                ),
                24,
            );
            let bad_alphabet = b"=?base64?Zml4dHVyZV9f!!!ZWNobw==?=";
            assert_header_mismatch(
                &post_with(
                    &d,
                    with_header(25, "tools/call", echo(None), "Mcp-Name", Some(bad_alphabet)),
                ),
                25,
            );
        }

        #[test]
        fn header_names_are_case_insensitive_and_values_case_sensitive() {
            let d = daemon();
            for case in header_cases()["standard_headers"].as_array().unwrap() {
                let method = case["body_method"].as_str().unwrap();
                let row_headers = case["headers"].as_object().unwrap();
                let row_names_tool = row_headers
                    .keys()
                    .any(|n| n.eq_ignore_ascii_case("mcp-name"));
                let mut params = modern(json!({}));
                let mut headers: Vec<(String, Vec<u8>)> =
                    vec![("MCP-Protocol-Version".into(), b"2026-07-28".to_vec())];
                if method == "tools/call" {
                    // A row about Mcp-Method alone still needs a tools/call the name check passes.
                    let name = case
                        .get("body_name")
                        .and_then(Value::as_str)
                        .unwrap_or("fixture__echo");
                    params["name"] = json!(name);
                    params["arguments"] = json!({"text": "x"});
                    if !row_names_tool && case.get("body_name").is_none() {
                        headers.push(("Mcp-Name".into(), name.as_bytes().to_vec()));
                    }
                }
                for (name, value) in row_headers {
                    headers.push((name.clone(), value.as_str().unwrap().as_bytes().to_vec()));
                }
                let body = json!({"jsonrpc": "2.0", "id": 30, "method": method, "params": params});
                let reply = post_with(&d, (headers, body.to_string().into_bytes()));
                if case["expected"] == "reject" {
                    assert_header_mismatch(&reply, 30);
                } else {
                    // Accepted by the header check: whatever the core then says, it is not -32020.
                    assert_ne!(
                        reply.json()["error"]["code"],
                        -32020,
                        "{}: {}",
                        case["id"],
                        String::from_utf8_lossy(&reply.body)
                    );
                }
            }
        }

        /// A mirrored header sent twice is a mismatch whichever it is, even when its first line
        /// agrees with the body: an intermediary may read the other one.
        #[test]
        fn a_repeated_mirrored_header_is_a_header_mismatch() {
            let d = daemon();
            for (id, name, value) in [
                (60, "Mcp-Param-Region", &b"us-west1"[..]),
                (61, "Mcp-Method", b"tools/call"),
                (62, "MCP-Protocol-Version", b"2026-07-28"),
                (63, "Mcp-Name", b"fixture__echo"),
            ] {
                let (mut headers, body) = with_header(
                    id,
                    "tools/call",
                    echo(Some("us-west1")),
                    "Mcp-Param-Region",
                    Some(b"us-west1"),
                );
                headers.push((name.to_owned(), value.to_vec()));
                assert_header_mismatch(&post_with(&d, (headers, body)), id);
            }
        }

        /// An App calls a tool by its server's own name (`echo` for `fixture__echo`): the tool it
        /// reaches is the one whose `x-mcp-header` annotations its `Mcp-Param-*` headers must
        /// match.
        #[test]
        fn a_tool_called_by_its_servers_own_name_is_held_to_its_mcp_param_headers() {
            let d = daemon();
            let bare = json!({"name": "echo", "arguments": {"text": "hi", "region": "us-west1"}});
            let call = |id, value: Option<&[u8]>| {
                post_with(
                    &d,
                    with_header(id, "tools/call", bare.clone(), "Mcp-Param-Region", value),
                )
            };
            assert_header_mismatch(&call(47, None), 47);
            assert_header_mismatch(&call(48, Some(b"eu-west1")), 48);
            let reply = call(49, Some(b"us-west1"));
            assert_eq!(
                reply.status,
                200,
                "{}",
                String::from_utf8_lossy(&reply.body)
            );
            assert_eq!(reply.json()["result"]["content"][0]["text"], "hi");
        }

        #[test]
        fn mcp_param_headers_are_checked_against_x_mcp_header_arguments() {
            let d = daemon();
            let region = |id, value: Option<&[u8]>, arguments: Value| {
                post_with(
                    &d,
                    with_header(id, "tools/call", arguments, "Mcp-Param-Region", value),
                )
            };
            assert_eq!(
                region(40, Some(b"us-west1"), echo(Some("us-west1"))).status,
                200
            );
            assert_eq!(
                region(41, Some(b"=?base64?IHBhZGRlZCA=?="), echo(Some(" padded "))).status,
                200
            );
            assert_eq!(
                region(42, None, echo(None)).status,
                200,
                "no argument, no header"
            );
            assert_header_mismatch(&region(43, None, echo(Some("us-west1"))), 43);
            assert_header_mismatch(&region(44, Some(b"us-west1"), echo(None)), 44);
            assert_header_mismatch(&region(45, Some(b"eu-west1"), echo(Some("us-west1"))), 45);
            assert_header_mismatch(&region(46, Some(b"US-WEST1"), echo(Some("us-west1"))), 46);
            assert_header_mismatch(
                &region(47, Some(b"us-west\xff"), echo(Some("us-west\u{ff}"))),
                47,
            );
            assert_header_mismatch(
                &region(48, Some(b"=?base64?IHBhZGRlZCA?="), echo(Some(" padded "))),
                48,
            );
        }

        #[test]
        fn status_is_a_function_of_the_response() {
            let d = daemon();
            assert_eq!(d.modern(50, "no/such/method", json!({})).status, 404);
            let unknown_tool = d.modern(51, "tools/call", json!({"name": "nope", "arguments": {}}));
            assert_eq!(
                (
                    unknown_tool.status,
                    unknown_tool.json()["error"]["code"].clone()
                ),
                (400, json!(-32602))
            );
            let tool_error = d.modern(
                52,
                "tools/call",
                json!({"name": "fixture__fail", "arguments": {}}),
            );
            assert_eq!(
                (
                    tool_error.status,
                    tool_error.json()["result"]["isError"].clone()
                ),
                (200, json!(true))
            );
            let crashed = d.modern(
                53,
                "tools/call",
                json!({"name": "fixture__crash", "arguments": {}}),
            );
            assert_eq!(
                (crashed.status, crashed.json()["error"]["code"].clone()),
                (200, json!(-32603))
            );
        }

        #[test]
        fn a_session_id_is_ignored_never_echoed_or_minted() {
            let d = daemon();
            let (mut headers, body) = modern_request(60, "tools/list", json!({}));
            headers.push(("Mcp-Session-Id".into(), "no-such-session".into()));
            let reply = d.post(&header_refs(&headers), body.to_string().as_bytes());
            assert_eq!(reply.status, 200);
            assert!(reply.header("mcp-session-id").is_none());
            let discover = d.modern(61, "server/discover", json!({}));
            assert!(discover.header("mcp-session-id").is_none());
            assert_result("2026-07-28", "server/discover", &discover.json());
        }

        #[test]
        fn a_batch_is_400_invalid_request() {
            let d = daemon();
            let (headers, body) = modern_request(70, "tools/list", json!({}));
            let reply = d.post(&header_refs(&headers), json!([body]).to_string().as_bytes());
            assert_eq!(reply.status, 400);
            assert_eq!(reply.json()["error"]["code"], -32600);
        }

        #[test]
        fn notifications_are_202_with_no_body_and_unknown_ones_ignored() {
            let d = daemon();
            for method in ["notifications/cancelled", "notifications/made_up"] {
                let body = json!({"jsonrpc": "2.0", "method": method, "params": modern(json!({"requestId": 1}))});
                let reply = d.post(
                    &[("MCP-Protocol-Version", b"2026-07-28")],
                    body.to_string().as_bytes(),
                );
                assert_eq!(reply.status, 202, "{method}");
                assert!(reply.body.is_empty());
            }
        }

        #[test]
        fn a_notification_whose_headers_disagree_is_400_without_id() {
            let d = daemon();
            let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": modern(json!({"requestId": 1}))});
            let reply = d.post(
                &[
                    ("MCP-Protocol-Version", b"2026-07-28"),
                    ("Mcp-Method", b"tools/list"),
                ],
                body.to_string().as_bytes(),
            );
            assert_eq!(reply.status, 400);
            let error = reply.json();
            assert_eq!(error["error"]["code"], -32020);
            assert_eq!(error["id"], Value::Null);
        }

        #[test]
        fn a_posted_response_is_400() {
            let d = daemon();
            let body =
                json!({"jsonrpc": "2.0", "id": 1, "result": {}, "params": modern(json!({}))});
            let reply = d.post(
                &[("MCP-Protocol-Version", b"2026-07-28")],
                body.to_string().as_bytes(),
            );
            assert_eq!(reply.status, 400);
        }

        #[test]
        fn progress_makes_an_event_stream_ending_with_the_response_without_event_ids() {
            let d = daemon();
            let mut params = json!({"name": "fixture__progress", "arguments": {"steps": 2}});
            params["_meta"] = json!({"progressToken": "tok"});
            let reply = d.modern(80, "tools/call", params);
            assert_eq!(reply.status, 200);
            assert_eq!(reply.header("content-type"), Some("text/event-stream"));
            assert_eq!(reply.header("x-accel-buffering"), Some("no"));
            let body = String::from_utf8_lossy(&reply.body).into_owned();
            assert!(!body.lines().any(|l| l.starts_with("id:")), "{body}");
            let events = reply.events();
            assert_eq!(events.len(), 3, "{events:?}");
            for progress in &events[..2] {
                assert_eq!(progress["params"]["progressToken"], "tok");
                assert_schema("2026-07-28", "ProgressNotification", progress);
            }
            assert_eq!(events[2]["id"], 80);
            assert_result("2026-07-28", "tools/call", &events[2]);
        }

        #[test]
        fn listen_is_acknowledged_first_then_tagged_notifications_and_keep_alive_comments() {
            let d = Daemon::start(
                &fixture_config("[transport]\nsseKeepAlive = \"100ms\"\n"),
                "",
            );
            let (headers, body) = modern_request(
                90,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["fixture://hello"]}}),
            );
            let stream = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            let (mut events, head) = EventReader::open(stream);
            assert!(
                head.to_ascii_lowercase().contains("text/event-stream"),
                "{head}"
            );
            let ack = events.next_event().unwrap();
            assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
            assert_eq!(
                ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                90
            );
            assert_schema("2026-07-28", "SubscriptionsAcknowledgedNotification", &ack);
            let comment = events.next_line().unwrap();
            assert!(comment.starts_with(':'), "{comment}");
            d.modern(
                91,
                "tools/call",
                json!({"name": "fixture__add_tool", "arguments": {}}),
            );
            d.modern(
                92,
                "tools/call",
                json!({"name": "fixture__touch", "arguments": {}}),
            );
            assert_eq!(
                events.tagged_methods(2, 90),
                vec![
                    "notifications/resources/updated",
                    "notifications/tools/list_changed"
                ]
            );
        }

        #[test]
        fn closing_the_stream_cancels_the_upstream_call() {
            let d = daemon();
            let (headers, body) = modern_request(
                100,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            let stream = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            // Once the call has reached the upstream, vanish.
            assert!(d.log_shows("fixture: sleeping request"));
            drop(stream);
            assert!(
                d.log_shows("fixture: cancelled request"),
                "the upstream never saw the cancellation:\n{}",
                d.stderr()
            );
        }

        /// Hyper reads on while a response streams, so a client that closes an event stream
        /// midway is noticed at once, not at the next keep-alive.
        #[test]
        fn closing_an_event_stream_midway_cancels_the_upstream_call() {
            let first = close_after_the_first_event(
                &daemon(),
                json!({"name": "fixture__progress", "arguments": {"steps": 100, "delayMs": 50},
                    "_meta": {"progressToken": "p"}}),
            );
            assert_eq!(first["method"], "notifications/progress");
        }

        /// A stream with nothing to write (one progress, then a long wait upstream) notices its
        /// client leaving as it happens, not at a keep-alive (set out of reach here).
        #[test]
        fn closing_an_idle_event_stream_cancels_the_upstream_call_at_once() {
            let first = close_after_the_first_event(
                &Daemon::start(&fixture_config("[transport]\nsseKeepAlive = \"10m\"\n"), ""),
                json!({"name": "fixture__sleep", "arguments": {}, "_meta": {"progressToken": "p"}}),
            );
            assert_eq!(first["params"]["message"], "sleeping");
        }

        /// Calls a tool, reads the first event of its stream, closes the stream, and checks the
        /// upstream was told to cancel; returns that first event.
        fn close_after_the_first_event(d: &Daemon, params: Value) -> Value {
            let (headers, body) = modern_request(101, "tools/call", params);
            let stream = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            let (mut events, _) = EventReader::open(stream);
            let first = events.next_event().expect("no first event");
            drop(events);
            assert!(
                d.log_shows("fixture: told to cancel request"),
                "the upstream never heard:\n{}",
                d.stderr()
            );
            first
        }

        #[test]
        fn a_foreign_origin_is_403_with_an_id_less_error_on_every_method() {
            let d = Daemon::start(
                &fixture_config("[transport]\nallowedOrigins = [\"https://app.example\"]\n"),
                "",
            );
            let (headers, body) = modern_request(110, "tools/list", json!({}));
            for origin in [
                &b"https://evil.example"[..],
                b"null",
                b"http://localhost.evil.example",
            ] {
                let mut h = header_refs(&headers);
                h.push(("Origin", origin));
                let reply = d.post(&h, body.to_string().as_bytes());
                assert_eq!(reply.status, 403, "{}", String::from_utf8_lossy(origin));
                assert_eq!(reply.json()["id"], Value::Null);
                assert!(reply.json()["error"]["code"].is_i64());
            }
            let get = d.raw(format!("GET /mcp HTTP/1.1\r\nHost: {}\r\nOrigin: https://evil.example\r\nConnection: close\r\n\r\n", d.addr).as_bytes());
            assert_eq!(get.status, 403);
            for origin in [
                &b"http://localhost:5173"[..],
                b"https://127.0.0.1",
                b"https://app.example",
            ] {
                let mut h = header_refs(&headers);
                h.push(("Origin", origin));
                assert_eq!(
                    d.post(&h, body.to_string().as_bytes()).status,
                    200,
                    "{}",
                    String::from_utf8_lossy(origin)
                );
            }
        }

        #[test]
        fn an_oversized_body_is_413_without_reading_it() {
            let d = Daemon::start("[transport]\nmaxMessageBytes = 1024\n", "");
            let mut stream = std::net::TcpStream::connect(d.addr).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            write!(
                stream,
                "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000000\r\n\r\n"
            )
            .unwrap();
            let mut head = [0u8; 12];
            std::io::Read::read_exact(&mut stream, &mut head).unwrap();
            assert_eq!(&head, b"HTTP/1.1 413");
            let (headers, mut body) =
                modern_request(120, "tools/list", json!({"pad": "x".repeat(2000)}));
            body["params"]["pad"] = json!("x".repeat(2000));
            assert_eq!(
                d.post(&header_refs(&headers), body.to_string().as_bytes())
                    .status,
                413
            );
        }

        #[test]
        fn a_slow_or_silent_client_cannot_hold_a_connection() {
            let d = Daemon::start(&fixture_config(""), "readTimeout = \"300ms\"");
            let started = std::time::Instant::now();
            let mut silent = std::net::TcpStream::connect(d.addr).unwrap();
            silent.set_read_timeout(Some(PATIENCE)).unwrap();
            silent
                .write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
                .unwrap();
            let mut whatever = Vec::new();
            let _ = std::io::Read::read_to_end(&mut silent, &mut whatever);
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "a half-sent head held the connection"
            );
            let started = std::time::Instant::now();
            let slow_body = d.raw(
                b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
            );
            assert_eq!(slow_body.status, 408);
            assert!(started.elapsed() < Duration::from_secs(5));
            assert_eq!(d.modern(1, "tools/list", json!({})).status, 200);
        }

        #[test]
        fn malformed_json_is_400_parse_error() {
            let d = daemon();
            let reply = d.post(&[("MCP-Protocol-Version", b"2026-07-28")], b"{not json");
            assert_eq!(reply.status, 400);
            assert_eq!(reply.json()["error"]["code"], -32700);
        }

        /// A body is checked as UTF-8 once and then read as text: bytes that are not UTF-8 are
        /// a parse error wherever they stand, and text beyond ASCII comes back as it was sent.
        #[test]
        fn a_body_that_is_not_utf8_is_400_parse_error_and_utf8_text_round_trips() {
            let d = daemon();
            let version: &[(&str, &[u8])] = &[("MCP-Protocol-Version", b"2026-07-28")];
            let in_a_string = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}";
            let outside_one = b"{\"jsonrpc\":\"2.0\",\"id\":1\xc3}";
            for body in [&in_a_string[..], &outside_one[..]] {
                let reply = d.post(version, body);
                assert_eq!(reply.status, 400);
                assert_eq!(reply.json()["error"]["code"], -32700);
            }
            let text = "é ✓ 😀";
            let echo = json!({"name": "mcpx__echo", "arguments": {"text": text}});
            let reply = d.modern(2, "tools/call", echo);
            assert_eq!(reply.status, 200);
            assert_eq!(reply.json()["result"]["content"][0]["text"], text);
        }

        /// mcpx's `serverInfo` is written into a result's `_meta` as the answer is serialized:
        /// a JSON answer carries it, with the rest of the result as it was.
        #[test]
        fn a_modern_result_names_mcpx_in_its_meta() {
            let d = daemon();
            let echo = json!({"name": "mcpx__echo", "arguments": {"text": "hi"}});
            let result = d.modern(3, "tools/call", echo).json()["result"].clone();
            let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
            assert_eq!(info["name"], "mcpx");
            assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
            assert_eq!(result["content"][0]["text"], "hi");
            assert_eq!(result["resultType"], "complete");
        }

        #[test]
        fn a_malformed_head_gets_400_and_the_daemon_serves_on() {
            let d = daemon();
            let reply =
                d.raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nBad Header Name: 1\r\n\r\n");
            assert_eq!(reply.status, 400);
            assert_eq!(d.modern(130, "tools/list", json!({})).status, 200);
        }

        /// A call still running when the shutdown grace ends is answered by mcpx itself: a
        /// JSON one with 503, `Retry-After` and -32603 "mcpx is shutting down", an event stream
        /// already open with that error as its last event, each under its request's id.
        #[test]
        fn sigterm_past_the_grace_answers_every_call_in_flight_with_an_error() {
            let mut d = Daemon::start(&fixture_config(""), "shutdownGrace = \"200ms\"");
            let sleep = json!({"name": "fixture__sleep", "arguments": {}});
            let (headers, body) = modern_request(150, "tools/call", sleep.clone());
            let plain = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            let mut with_progress = sleep;
            with_progress["_meta"] = json!({"progressToken": "t151"});
            let (headers, body) = modern_request(151, "tools/call", with_progress);
            let streamed = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            assert!(
                eventually(|| d.stderr().matches("fixture: sleeping request").count() == 2),
                "{}",
                d.stderr()
            );
            let status = d.signal("TERM").expect("the daemon did not exit");
            assert!(status.success());
            let plain = read_reply(plain);
            assert_eq!(
                plain.status,
                503,
                "{}",
                String::from_utf8_lossy(&plain.body)
            );
            assert!(plain.header("retry-after").is_some());
            let answer = plain.json();
            assert_eq!(answer["id"], 150, "{answer}");
            assert_eq!(answer["error"]["code"], -32603, "{answer}");
            assert_eq!(
                answer["error"]["message"], "mcpx is shutting down",
                "{answer}"
            );
            let streamed = read_reply(streamed);
            assert_eq!(streamed.status, 200);
            let events = streamed.events();
            let last = events.last().unwrap_or_else(|| panic!("an empty stream"));
            assert_eq!(last["id"], 151, "{events:?}");
            assert_eq!(last["error"]["code"], -32603, "{events:?}");
        }

        #[test]
        fn sigterm_finishes_in_flight_requests_then_exits_cleanly() {
            let mut d = daemon();
            let (headers, body) = modern_request(
                140,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 300}}),
            );
            let stream = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            std::thread::sleep(Duration::from_millis(100));
            let status = d.signal("TERM").expect("the daemon did not exit");
            assert!(status.success());
            let mut raw = Vec::new();
            let mut stream = stream;
            let _ = std::io::Read::read_to_end(&mut stream, &mut raw);
            assert!(
                String::from_utf8_lossy(&raw).contains("slept"),
                "the request in flight was not answered: {}",
                String::from_utf8_lossy(&raw)
            );
        }

        #[test]
        fn a_real_sdk_client_lists_and_calls_tools_including_an_x_mcp_header_parameter() {
            let d = daemon();
            let report = python_client_against(&d, "python_modern_client.py");
            assert!(report["tools"]
                .as_array()
                .unwrap()
                .contains(&json!("fixture__echo")));
            assert_eq!(report["echo"], json!(["via the SDK"]));
            assert_eq!(report["unicode"], json!(["héllo"]));
        }
    }
}

fn header_cases() -> Value {
    let path = format!(
        "{}/tests/spec/header-cases.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Restores the right `Mcp-Name` for a request built by [`with_header`].
trait WithName {
    fn clone_with_name(self, method: &str) -> Self;
}

impl WithName for (Vec<(String, Vec<u8>)>, Vec<u8>) {
    fn clone_with_name(mut self, method: &str) -> Self {
        let body: Value = serde_json::from_slice(&self.1).unwrap();
        let name = if method == "resources/read" {
            &body["params"]["uri"]
        } else {
            &body["params"]["name"]
        };
        self.0.push((
            "Mcp-Name".into(),
            name.as_str().unwrap().as_bytes().to_vec(),
        ));
        self
    }
}

mod every_revision {
    pub mod http {
        use super::super::*;

        /// A GET of `path` naming `host`, as raw bytes, `Connection: close`.
        fn raw_get(path: &str, host: &str) -> Vec<u8> {
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").into_bytes()
        }

        /// A tools/list as raw bytes, `Connection: close`, with `extra` header lines.
        fn raw_tools_list(d: &Daemon, extra: &str) -> Vec<u8> {
            let (headers, body) = modern_request(1, "tools/list", json!({}));
            let body = body.to_string();
            let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", d.addr);
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            format!(
                "{head}{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        }

        /// What a page's script, run in headless Chromium, could read of two calls to `/mcp`:
        /// `initialize` (its `Mcp-Session-Id`) and the built-in echo in that session. The page
        /// is served on `pages` as `page_host` (a name only the browser resolves, to loopback).
        fn what_a_browser_page_reads(
            d: &Daemon,
            pages: std::net::TcpListener,
            page_host: &str,
        ) -> String {
            let port = pages.local_addr().unwrap().port();
            let endpoint = format!("http://127.0.0.1:{}/mcp", d.addr.port());
            let page = format!(
                r#"<html><body><pre id="out">not run</pre><script>
const post = (body, headers) => fetch({endpoint:?}, {{method: "POST", body: JSON.stringify(body),
  headers: Object.assign({{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}}, headers)}});
(async () => {{
  try {{
    const init = await post({{jsonrpc: "2.0", id: 1, method: "initialize", params: {{protocolVersion: "2025-11-25",
      capabilities: {{}}, clientInfo: {{name: "browser", version: "1"}}}}}}, {{}});
    const session = init.headers.get("Mcp-Session-Id");
    await init.json();
    const echo = await post({{jsonrpc: "2.0", id: 2, method: "tools/call", params: {{name: "mcpx__echo",
      arguments: {{text: "from the browser"}}}}}}, {{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}});
    const answer = await echo.json();
    document.getElementById("out").textContent = "session " + (session ? "read" : "hidden") + "; " + answer.result.content[0].text;
  }} catch (e) {{ document.getElementById("out").textContent = "failed: " + e; }}
}})();
</script></body></html>"#
            );
            std::thread::spawn(move || {
                for stream in pages.incoming() {
                    let Ok(mut stream) = stream else { break };
                    let mut head = [0u8; 4096];
                    let _ = std::io::Read::read(&mut stream, &mut head);
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    );
                }
            });
            let profile = tempfile::tempdir().unwrap();
            let out = deps::chromium()
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--no-first-run",
                    "--disable-dev-shm-usage",
                    "--virtual-time-budget=20000",
                    "--dump-dom",
                ])
                .arg(format!("--host-resolver-rules=MAP {page_host} 127.0.0.1"))
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg(format!("http://{page_host}:{port}/"))
                .output()
                .unwrap();
            let dom = String::from_utf8_lossy(&out.stdout);
            let said = dom
                .split_once(r#"<pre id="out">"#)
                .and_then(|(_, rest)| rest.split_once("</pre>"))
                .map(|(said, _)| said.to_owned());
            said.unwrap_or_else(|| {
                panic!(
                    "no page in Chromium's output: {dom}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
        }

        /// A real browser: a page from an origin in `allowedOrigins` calls `/mcp` with fetch
        /// (its preflight answered, `Mcp-Session-Id` exposed to it); a page from another origin
        /// reads nothing, since no CORS header is given to it.
        #[test]
        fn a_browser_page_from_an_allowed_origin_calls_mcp_with_fetch() {
            let listen = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let (allowed, other) = (listen(), listen());
            let origin = format!("http://app.test:{}", allowed.local_addr().unwrap().port());
            let d = Daemon::start(&format!("[transport]\nallowedOrigins = [{origin:?}]\n"), "");
            let page = what_a_browser_page_reads(&d, allowed, "app.test");
            assert_eq!(page, "session read; from the browser");
            let refused = what_a_browser_page_reads(&d, other, "other.test");
            assert!(refused.starts_with("failed: TypeError"), "{refused}");
        }

        /// Loopback is shared by every user of the machine: without a token, another uid's
        /// connection is refused 403 with an id-less JSON-RPC error (logged once per uid),
        /// while the daemon's own user is served as before.
        #[test]
        fn another_users_connection_without_a_token_is_403() {
            let d = daemon();
            for _ in 0..2 {
                let refused = d.raw_as_nobody(&raw_tools_list(&d, ""));
                assert_eq!(
                    refused.status,
                    403,
                    "{}",
                    String::from_utf8_lossy(&refused.body)
                );
                let body = refused.json();
                assert_eq!(body["id"], Value::Null, "{body}");
                assert_eq!(body["error"]["code"], -32600, "{body}");
                assert!(body.get("result").is_none(), "{body}");
            }
            let metrics = d.raw_as_nobody(&raw_get("/metrics", &d.addr.to_string()));
            assert_eq!(metrics.status, 403);
            let health = d.raw_as_nobody(&raw_get("/healthz", &d.addr.to_string()));
            assert_eq!(health.status, 200);
            assert!(
                health.json().get("upstreams").is_none(),
                "{}",
                health.json()
            );
            let own = d.raw(&raw_tools_list(&d, ""));
            assert_eq!(own.status, 200);
            assert!(own.json()["result"]["tools"].is_array(), "{}", own.json());
            assert!(
                eventually(|| d.log_shows("refused uid 65534")),
                "{}",
                d.stderr()
            );
            assert_eq!(
                d.stderr().matches("refused uid 65534").count(),
                1,
                "{}",
                d.stderr()
            );
        }

        /// With a token, the token decides for every user: another uid that sends it is served.
        #[test]
        fn another_user_with_the_daemons_token_is_served() {
            let d = Daemon::start(&fixture_config(""), "token = \"t0ken\"");
            let bare = d.raw_as_nobody(&raw_tools_list(&d, ""));
            assert_eq!(bare.status, 401);
            let served = d.raw_as_nobody(&raw_tools_list(&d, "Authorization: Bearer t0ken\r\n"));
            assert_eq!(
                served.status,
                200,
                "{}",
                String::from_utf8_lossy(&served.body)
            );
            assert!(served.json()["result"]["tools"].is_array());
        }

        /// DNS rebinding: a page whose name was rebound to 127.0.0.1 sends its own name as
        /// `Host`; a loopback daemon answers it 421 on every path, `/metrics` and `/healthz`
        /// included, and serves loopback names and `allowedHosts`.
        #[test]
        fn a_host_naming_neither_loopback_nor_an_allowed_host_is_421() {
            let d = Daemon::start(
                &format!(
                    "[transport]\nallowedHosts = [\"mcp.internal\"]\n{}",
                    fixture_config("")
                ),
                "",
            );
            for path in ["/metrics", "/healthz", "/mcp"] {
                let rebound = d.raw(&raw_get(path, &format!("evil.example:{}", d.addr.port())));
                assert_eq!(rebound.status, 421, "{path}");
            }
            for host in ["localhost", "mcp.internal:7777", &d.addr.to_string()] {
                let served = d.raw(&raw_get("/healthz", host));
                assert_eq!(served.status, 200, "{host}");
            }
            let rebound_post = String::from_utf8(raw_tools_list(&d, ""))
                .unwrap()
                .replace(&format!("Host: {}", d.addr), "Host: evil.example");
            assert_eq!(d.raw(rebound_post.as_bytes()).status, 421);
        }

        #[test]
        fn a_non_loopback_address_without_a_token_refuses_to_start() {
            let mut config = tempfile::NamedTempFile::new().unwrap();
            write!(config, "[daemon]\naddress = \"0.0.0.0:0\"\n").unwrap();
            let out = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(config.path())
                .arg("daemon")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("daemon.token"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }

        #[test]
        fn with_a_token_every_request_needs_it_as_a_bearer() {
            // Given to the daemon alone: the test process's own environment is shared by every
            // test running beside this one.
            let d = Daemon::start_with_env(
                &fixture_config(""),
                "token = \"${MCPX_TEST_DAEMON_TOKEN}\"",
                &[("MCPX_TEST_DAEMON_TOKEN", "s3cret")],
            );
            let (headers, body) = modern_request(1, "tools/list", json!({}));
            let bare = d.post(&header_refs(&headers), body.to_string().as_bytes());
            assert_eq!(bare.status, 401);
            assert_eq!(
                bare.header("www-authenticate"),
                Some("Bearer realm=\"mcpx\"")
            );
            assert_eq!(bare.json()["id"], Value::Null);
            for (token, status) in [
                (&b"Bearer wrong"[..], 401),
                (b"Bearer s3cret", 200),
                (b"bearer s3cret", 200),
                (b"Basic s3cret", 401),
            ] {
                let mut h = header_refs(&headers);
                h.push(("Authorization", token));
                assert_eq!(
                    d.post(&h, body.to_string().as_bytes()).status,
                    status,
                    "{}",
                    String::from_utf8_lossy(token)
                );
            }
        }

        #[test]
        fn past_max_connections_a_connection_gets_503_and_the_held_ones_are_unaffected() {
            let d = Daemon::start(&fixture_config(""), "maxConnections = 2");
            // Two connections sit idle, holding both places.
            let first = std::net::TcpStream::connect(d.addr).unwrap();
            let _second = std::net::TcpStream::connect(d.addr).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            let refused = d.modern(1, "tools/list", json!({}));
            assert_eq!(refused.status, 503);
            assert_eq!(refused.header("retry-after"), Some("1"));
            assert!(refused.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("maxConnections (2)"));
            assert!(d.log_shows("maxConnections (2) reached"));
            // A held connection still serves, and a closed one frees its place.
            let (headers, body) = modern_request(2, "tools/list", json!({}));
            let reply = d.post_on(first, &header_refs(&headers), body.to_string().as_bytes());
            assert_eq!(reply.status, 200);
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            loop {
                let status = d.modern(3, "tools/list", json!({})).status;
                if status == 200 {
                    break;
                }
                assert!(std::time::Instant::now() < deadline, "still {status}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        /// `maxHeaderBytes` caps the head however it arrives: a 100 kB head written at once,
        /// past a 64 KiB cap, is 431 (hyper alone caps only the buffer it reads into).
        #[test]
        fn a_whole_head_past_max_header_bytes_is_431() {
            let d = Daemon::start(&fixture_config(""), "maxHeaderBytes = 65536");
            let (headers, body) = modern_request(1, "tools/list", json!({}));
            let fields: String = headers
                .iter()
                .map(|(n, v)| format!("{n}: {v}\r\n"))
                .collect();
            let head = |filler: usize| {
                format!(
                    "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{fields}X-Filler: {}\r\nContent-Length: {}\r\n\r\n{body}",
                    "a".repeat(filler),
                    body.to_string().len()
                )
            };
            assert_eq!(d.raw(head(100_000).as_bytes()).status, 431);
            assert_eq!(
                d.raw(head(60_000).as_bytes()).status,
                200,
                "a head under the cap"
            );
            assert!(d.log_shows("past maxHeaderBytes (431)"));
        }

        #[test]
        fn too_many_or_too_long_header_fields_are_431_and_the_daemon_serves_on() {
            let d = Daemon::start(
                &fixture_config(""),
                "maxHeaders = 20\nmaxHeaderBytes = 16384",
            );
            let many: String = (0..30).map(|i| format!("X-Filler-{i}: {i}\r\n")).collect();
            let reply =
                d.raw(format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\n{many}\r\n").as_bytes());
            assert_eq!(reply.status, 431);
            // A head past the limit, not yet finished: refused once the limit is crossed,
            // without waiting for the rest.
            let long = format!(
                "POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Long: {}",
                "a".repeat(17_000)
            );
            let reply = d.raw(long.as_bytes());
            assert_eq!(reply.status, 431);
            assert_eq!(d.modern(1, "tools/list", json!({})).status, 200);
            assert!(d.log_shows("past maxHeaders or maxHeaderBytes (431)"));
        }
    }
}
