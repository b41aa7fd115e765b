//! `mcpx daemon` at the legacy revisions end to end: sessions, GET streams, batches and
//! cancellation on real sockets, the fixture upstream behind it, and a real SDK client.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn daemon() -> Daemon {
    Daemon::start(&fixture_config(""), "")
}

/// Initializes at `revision` declaring no client capabilities; returns the session id.
fn initialize(d: &Daemon, revision: &str) -> String {
    initialize_session(d, revision, json!({}))
}

/// Sends a raw GET for a session's stream.
fn open_stream(d: &Daemon, session: &str) -> (EventReader, String) {
    let mut stream = std::net::TcpStream::connect(d.addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    std::io::Write::write_all(&mut stream, format!("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n").as_bytes()).unwrap();
    EventReader::open(stream)
}

fn get(d: &Daemon, headers: &str) -> Reply {
    d.raw(
        format!("GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}\r\n")
            .as_bytes(),
    )
}

mod v2025_03_26 {
    pub mod session {
        use super::super::*;

        #[test]
        fn initialize_mints_an_unguessable_visible_ascii_session_id() {
            let d = daemon();
            let (a, b) = (initialize(&d, "2025-03-26"), initialize(&d, "2025-03-26"));
            assert_ne!(a, b);
            assert!(
                a.len() >= 32 && a.bytes().all(|c| (0x21..=0x7e).contains(&c)),
                "{a}"
            );
        }

        #[test]
        fn an_unknown_session_is_404() {
            let d = daemon();
            assert_eq!(
                post(&d, Some("nope"), None, &request(1, "tools/list", json!({}))).status,
                404
            );
        }

        #[test]
        fn an_expired_session_is_404() {
            let d = Daemon::start(
                &fixture_config("[transport]\nsessionIdleTimeout = \"200ms\"\n"),
                "",
            );
            let session = initialize(&d, "2025-03-26");
            std::thread::sleep(Duration::from_millis(400));
            assert_eq!(
                post(
                    &d,
                    Some(&session),
                    None,
                    &request(1, "tools/list", json!({}))
                )
                .status,
                404
            );
        }

        #[test]
        fn delete_ends_the_session_and_closes_its_get_stream() {
            let d = daemon();
            let session = initialize(&d, "2025-03-26");
            let (mut events, head) = open_stream(&d, &session);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            assert_eq!(d.delete_session(&session).status, 204);
            assert_eq!(events.next_event(), None, "the GET stream stayed open");
            assert_eq!(
                post(
                    &d,
                    Some(&session),
                    None,
                    &request(1, "tools/list", json!({}))
                )
                .status,
                404
            );
        }

        #[test]
        fn delete_without_a_session_is_400_and_with_an_unknown_one_404() {
            let d = daemon();
            assert_eq!(
                d.raw(b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    .status,
                400
            );
            assert_eq!(d.raw(b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nMcp-Session-Id: nope\r\n\r\n").status, 404);
        }

        #[test]
        fn a_request_without_a_session_is_served_statelessly() {
            let d = daemon();
            let reply = post(
                &d,
                None,
                Some("2025-06-18"),
                &request(
                    1,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "stateless"}}),
                ),
            );
            assert_eq!(reply.status, 200);
            assert_eq!(reply.json()["result"]["content"][0]["text"], "stateless");
            assert!(reply.header("mcp-session-id").is_none());
        }

        #[test]
        fn a_full_session_table_refuses_initialize_clearly() {
            let d = Daemon::start(&fixture_config("[transport]\nmaxSessions = 1\n"), "");
            initialize(&d, "2025-03-26");
            let refused = post(
                &d,
                None,
                None,
                &request(
                    0,
                    "initialize",
                    json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
                ),
            );
            assert_eq!(refused.status, 503);
            assert!(refused.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("maxSessions"));
        }
    }

    pub mod batch {
        use super::super::*;

        #[test]
        fn accepted_in_a_session_that_negotiated_2025_03_26() {
            let d = daemon();
            let session = initialize(&d, "2025-03-26");
            let reply = post(
                &d,
                Some(&session),
                None,
                &json!([
                    request(1, "ping", json!({})),
                    request(2, "tools/list", json!({}))
                ]),
            );
            assert_eq!(reply.status, 200);
            let answers = reply.json();
            assert_eq!(answers.as_array().unwrap().len(), 2);
            assert_eq!(answers[0]["id"], 1);
            assert_result("2025-03-26", "tools/list", &answers[1]);
        }

        #[test]
        fn accepted_sessionless_without_header() {
            let d = daemon();
            let reply = post(&d, None, None, &json!([request(1, "ping", json!({}))]));
            assert_eq!(reply.json()[0]["result"], json!({}));
        }

        #[test]
        fn accepted_sessionless_with_a_2025_03_26_header() {
            let d = daemon();
            let reply = post(
                &d,
                None,
                Some("2025-03-26"),
                &json!([request(1, "ping", json!({}))]),
            );
            assert_eq!(reply.json()[0]["id"], 1);
        }

        #[test]
        fn refused_where_the_revision_has_none() {
            let d = daemon();
            let sessionless = post(
                &d,
                None,
                Some("2025-06-18"),
                &json!([request(1, "ping", json!({}))]),
            );
            assert_eq!(
                (
                    sessionless.status,
                    sessionless.json()["error"]["code"].clone()
                ),
                (400, json!(-32600))
            );
            let session = initialize(&d, "2025-11-25");
            let in_session = post(
                &d,
                Some(&session),
                None,
                &json!([request(1, "ping", json!({}))]),
            );
            assert_eq!(in_session.status, 400);
        }

        #[test]
        fn elements_run_concurrently() {
            let d = daemon();
            let started = std::time::Instant::now();
            let sleeps: Vec<Value> = (1..=3)
                .map(|i| {
                    request(
                        i,
                        "tools/call",
                        json!({"name": "fixture__sleep", "arguments": {"ms": 600}}),
                    )
                })
                .collect();
            let reply = post(&d, None, None, &Value::Array(sleeps));
            assert_eq!(reply.json().as_array().unwrap().len(), 3);
            // One after another would take 1800 ms; the rest is room for a loaded machine.
            assert!(
                started.elapsed() < Duration::from_millis(1500),
                "ran one after another: {:?}",
                started.elapsed()
            );
        }

        #[test]
        fn the_reply_array_keeps_the_batch_order_whatever_finishes_first() {
            let d = daemon();
            let batch = json!([
                request(
                    1,
                    "tools/call",
                    json!({"name": "fixture__sleep", "arguments": {"ms": 200}})
                ),
                request(2, "ping", json!({})),
                request(3, "nonexistent/method", json!({})),
            ]);
            let reply = post(&d, None, None, &batch);
            let ids: Vec<Value> = reply
                .json()
                .as_array()
                .unwrap()
                .iter()
                .map(|answer| answer["id"].clone())
                .collect();
            assert_eq!(ids, [json!(1), json!(2), json!(3)]);
        }

        #[test]
        fn initialize_inside_a_batch_is_refused_as_its_element_and_mints_nothing() {
            let d = daemon();
            let init = request(
                1,
                "initialize",
                json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            );
            let reply = post(
                &d,
                None,
                None,
                &json!([init, request(2, "ping", json!({}))]),
            );
            assert!(reply.header("mcp-session-id").is_none());
            let answers = reply.json();
            assert_eq!(answers[0]["error"]["code"], -32600);
            assert_eq!(answers[1]["result"], json!({}));
        }

        #[test]
        fn only_notifications_and_responses_is_202() {
            let d = daemon();
            let reply = post(
                &d,
                None,
                None,
                &json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 9, "result": {}}]),
            );
            assert_eq!(reply.status, 202);
            assert!(reply.body.is_empty());
        }

        #[test]
        fn an_element_that_streams_makes_every_reply_its_own_event() {
            let d = daemon();
            let progress = request(
                1,
                "tools/call",
                json!({"name": "fixture__progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}),
            );
            let reply = post(
                &d,
                None,
                None,
                &json!([progress, request(2, "ping", json!({}))]),
            );
            assert_eq!(reply.header("content-type"), Some("text/event-stream"));
            let events = reply.events();
            let ids: Vec<&Value> = events
                .iter()
                .filter(|e| e.get("id").is_some())
                .map(|e| &e["id"])
                .collect();
            assert_eq!(ids.len(), 2, "{events:?}");
            assert!(events
                .iter()
                .any(|e| e["method"] == "notifications/progress"));
        }
    }
}

mod v2025_06_18 {
    pub mod version {
        use super::super::*;

        #[test]
        fn a_header_naming_no_legacy_revision_is_400_32022_with_the_legacy_list() {
            let d = daemon();
            for bad in ["2025-01-01", "banana"] {
                let reply = post(&d, None, Some(bad), &request(1, "ping", json!({})));
                assert_eq!(reply.status, 400, "{bad}");
                let error = reply.json();
                assert_eq!(error["error"]["code"], -32022);
                assert_eq!(
                    error["error"]["data"]["supported"],
                    json!(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
                );
                assert_eq!(error["error"]["data"]["requested"], bad);
            }
        }

        #[test]
        fn in_a_session_the_negotiated_revision_governs_over_the_header() {
            let d = daemon();
            let session = initialize(&d, "2024-11-05");
            let reply = post(
                &d,
                Some(&session),
                Some("2025-11-25"),
                &request(
                    1,
                    "tools/call",
                    json!({"name": "fixture__kinds", "arguments": {}}),
                ),
            );
            let result = reply.json();
            assert_result("2024-11-05", "tools/call", &result);
            assert!(
                result["result"]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|c| c["type"] == "text"),
                "{result}"
            );
        }

        #[test]
        fn a_posted_response_nothing_waits_for_is_400_and_a_notification_202() {
            let d = daemon();
            assert_eq!(
                post(
                    &d,
                    None,
                    None,
                    &json!({"jsonrpc": "2.0", "id": 5, "result": {}})
                )
                .status,
                400
            );
            assert_eq!(
                post(
                    &d,
                    None,
                    None,
                    &json!({"jsonrpc": "2.0", "method": "notifications/whatever"})
                )
                .status,
                202
            );
        }

        #[test]
        fn every_legacy_revision_initializes_and_lists_through_http() {
            let d = daemon();
            for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
                let session = initialize(&d, revision);
                let list = post(
                    &d,
                    Some(&session),
                    Some(revision),
                    &request(1, "tools/list", json!({})),
                );
                assert_result(revision, "tools/list", &list.json());
            }
        }
    }
}

mod v2025_11_25 {
    pub mod get {
        use super::super::*;

        #[test]
        fn get_without_a_session_or_with_a_modern_header_is_405() {
            let d = daemon();
            assert_eq!(get(&d, "").status, 405);
            let session = initialize(&d, "2025-11-25");
            assert_eq!(
                get(
                    &d,
                    &format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2026-07-28\r\n")
                )
                .status,
                405
            );
        }

        #[test]
        fn get_with_an_unknown_session_is_404() {
            let d = daemon();
            assert_eq!(get(&d, "Mcp-Session-Id: nope\r\n").status, 404);
        }

        #[test]
        fn a_second_get_stream_is_409() {
            let d = daemon();
            let session = initialize(&d, "2025-11-25");
            let (_first, head) = open_stream(&d, &session);
            assert!(
                head.contains("text/event-stream")
                    && head.to_ascii_lowercase().contains("x-accel-buffering: no"),
                "{head}"
            );
            assert_eq!(
                get(&d, &format!("Mcp-Session-Id: {session}\r\n")).status,
                409
            );
        }

        /// A client that drops its GET stream (a network blip, a restart) may open a new one at
        /// once: the old one is noticed gone as it closes, not at a keep-alive (out of reach here).
        #[test]
        fn a_get_stream_the_client_closed_can_be_opened_again_at_once() {
            let d = Daemon::start(&fixture_config("[transport]\nsseKeepAlive = \"10m\"\n"), "");
            let session = initialize(&d, "2025-11-25");
            let (first, head) = open_stream(&d, &session);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            drop(first);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let (_second, head) = open_stream(&d, &session);
                if head.starts_with("HTTP/1.1 200") {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "still refused: {head}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }

        #[test]
        fn the_stream_carries_list_changed_resources_updated_and_keep_alive_comments() {
            let d = Daemon::start(
                &fixture_config("[transport]\nsseKeepAlive = \"100ms\"\n"),
                "",
            );
            let session = initialize(&d, "2025-11-25");
            let (mut events, _) = open_stream(&d, &session);
            assert!(events.next_line().unwrap().starts_with(':'));
            post(
                &d,
                Some(&session),
                None,
                &request(1, "resources/subscribe", json!({"uri": "fixture://hello"})),
            );
            post(
                &d,
                Some(&session),
                None,
                &request(
                    2,
                    "tools/call",
                    json!({"name": "fixture__add_tool", "arguments": {}}),
                ),
            );
            post(
                &d,
                Some(&session),
                None,
                &request(
                    3,
                    "tools/call",
                    json!({"name": "fixture__touch", "arguments": {}}),
                ),
            );
            let mut seen = Vec::new();
            while seen.len() < 2 {
                let event = events.next_event().unwrap();
                seen.push(event["method"].as_str().unwrap().to_owned());
            }
            seen.sort();
            assert_eq!(
                seen,
                vec![
                    "notifications/resources/updated",
                    "notifications/tools/list_changed"
                ]
            );
        }

        #[test]
        fn a_subscription_made_before_the_stream_opens_delivers_once_it_does() {
            let d = daemon();
            let session = initialize(&d, "2025-11-25");
            post(
                &d,
                Some(&session),
                None,
                &request(1, "resources/subscribe", json!({"uri": "fixture://hello"})),
            );
            let (mut events, _) = open_stream(&d, &session);
            post(
                &d,
                Some(&session),
                None,
                &request(
                    2,
                    "tools/call",
                    json!({"name": "fixture__touch", "arguments": {}}),
                ),
            );
            assert_eq!(
                events.next_event().unwrap()["params"]["uri"],
                "fixture://hello"
            );
        }

        #[test]
        fn with_no_stream_open_a_notification_is_dropped_not_redelivered() {
            let d = daemon();
            let session = initialize(&d, "2025-11-25");
            post(
                &d,
                Some(&session),
                None,
                &request(
                    1,
                    "tools/call",
                    json!({"name": "fixture__add_tool", "arguments": {}}),
                ),
            );
            // Wait until mcpx has re-listed (and so announced, to nobody) the changed catalog.
            let deadline = std::time::Instant::now() + PATIENCE;
            loop {
                let tools = post(
                    &d,
                    Some(&session),
                    None,
                    &request(9, "tools/list", json!({})),
                )
                .json();
                if tools["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["name"] == "fixture__extra")
                {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the catalog never changed"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(50));
            let (mut events, _) = open_stream(&d, &session);
            post(
                &d,
                Some(&session),
                None,
                &request(2, "resources/subscribe", json!({"uri": "fixture://hello"})),
            );
            post(
                &d,
                Some(&session),
                None,
                &request(
                    3,
                    "tools/call",
                    json!({"name": "fixture__touch", "arguments": {}}),
                ),
            );
            // The first event is the one sent after the stream opened, not the stale list_changed.
            assert_eq!(
                events.next_event().unwrap()["method"],
                "notifications/resources/updated"
            );
        }

        #[test]
        fn capabilities_declare_subscribe_and_list_changed() {
            let d = daemon();
            let reply = post(
                &d,
                None,
                None,
                &request(
                    0,
                    "initialize",
                    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
                ),
            );
            let capabilities = &reply.json()["result"]["capabilities"];
            assert_eq!(capabilities["resources"]["subscribe"], true);
            assert_eq!(capabilities["tools"]["listChanged"], true);
        }
    }

    pub mod cancel {
        use super::super::*;

        #[test]
        fn cancelled_on_the_session_reaches_the_upstream_and_the_post_ends_as_an_empty_stream() {
            let d = daemon();
            let session = initialize(&d, "2025-11-25");
            let body = request(
                7,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            let headers: Vec<(&str, &[u8])> = vec![("Mcp-Session-Id", session.as_bytes())];
            let stream = d.send_post(&headers, body.to_string().as_bytes());
            assert!(d.log_shows("fixture: sleeping request"));
            let cancelled = post(
                &d,
                Some(&session),
                None,
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}),
            );
            assert_eq!(cancelled.status, 202);
            assert!(d.log_shows("fixture: cancelled request"), "{}", d.stderr());
            let mut raw = Vec::new();
            let mut stream = stream;
            std::io::Read::read_to_end(&mut stream, &mut raw).unwrap();
            let text = String::from_utf8_lossy(&raw);
            assert!(text.contains("text/event-stream"), "{text}");
            assert!(
                !text.contains("\"id\":7"),
                "the cancelled request was answered: {text}"
            );
        }

        #[test]
        fn in_a_session_a_dropped_connection_is_not_a_cancellation() {
            let d = daemon();
            let session = initialize(&d, "2025-11-25");
            let body = request(
                8,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {"ms": 300}}),
            );
            let headers: Vec<(&str, &[u8])> = vec![("Mcp-Session-Id", session.as_bytes())];
            drop(d.send_post(&headers, body.to_string().as_bytes()));
            std::thread::sleep(Duration::from_millis(700));
            assert!(
                !d.stderr().contains("fixture: cancelled request"),
                "{}",
                d.stderr()
            );
        }

        #[test]
        fn without_a_session_the_disconnect_cancels() {
            let d = daemon();
            let body = request(
                9,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            let stream = d.send_post(&[], body.to_string().as_bytes());
            assert!(d.log_shows("fixture: sleeping request"));
            drop(stream);
            assert!(d.log_shows("fixture: cancelled request"), "{}", d.stderr());
        }
    }
}
