//! Observability end to end against the real binary: `GET /metrics` after a mix of calls,
//! errors, cancellations and refusals (each counted once, with its labels, and accepted by
//! `promtool check metrics`), the metrics of `mcpx serve` in `mcpx status --json`, and the audit
//! log (a line per call and question, no argument values, reopened after a logrotate-style move).

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

fn call(daemon: &Daemon, id: i64, name: &str, arguments: Value) -> Value {
    daemon
        .modern(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .json()
}

mod every_revision {
    pub mod metrics {
        use super::super::*;

        #[test]
        fn each_call_error_cancellation_and_refusal_is_counted_once_with_its_labels() {
            let daemon =
                Daemon::start(&fixture_config("[transport]\nmaxMessageBytes = 4096\n"), "");
            for id in 1..=2 {
                assert_eq!(
                    call(&daemon, id, "fixture__echo", json!({"text": "a"}))["result"]["isError"],
                    false
                );
            }
            let session = initialize_session(&daemon, "2025-11-25", json!({}));
            let legacy = post(
                &daemon,
                Some(&session),
                Some("2025-11-25"),
                &request(
                    3,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "b"}}),
                ),
            );
            assert_eq!(legacy.json()["result"]["isError"], false);
            for (id, name) in [(4, "nope"), (5, "nope_either")] {
                assert_eq!(call(&daemon, id, name, json!({}))["error"]["code"], -32602);
            }
            assert_eq!(
                call(&daemon, 6, "fixture__fail", json!({}))["result"]["isError"],
                true
            );
            // Closing a modern call's stream cancels it.
            let (headers, body) = modern_request(
                7,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            let refs = header_refs(&headers);
            let sleeping = daemon.send_post(&refs, body.to_string().as_bytes());
            assert!(daemon.log_shows("fixture: sleeping request"));
            drop(sleeping);
            assert!(daemon.log_shows("fixture: cancelled request"));
            // Refusals: a foreign Origin, a mirrored header that disagrees, a body too large.
            let mut foreign = refs.clone();
            foreign.push(("Origin", b"https://evil.example"));
            assert_eq!(
                daemon.post(&foreign, body.to_string().as_bytes()).status,
                403
            );
            let (mut wrong, echo) = modern_request(
                8,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "c"}}),
            );
            wrong.retain(|(n, _)| n != "Mcp-Name");
            wrong.push(("Mcp-Name".into(), "fixture__sleep".into()));
            let wrong = header_refs(&wrong);
            assert_eq!(daemon.post(&wrong, echo.to_string().as_bytes()).status, 400);
            assert_eq!(daemon.post(&refs, &vec![b' '; 5000]).status, 413);

            let text = daemon.metrics();
            let operations = "mcp_server_operation_duration_seconds_count";
            let call_of = |name: &str, outcome: &str, era: &str| {
                metric_sample(
                    &text,
                    operations,
                    &[
                        ("method", "tools/call"),
                        ("name", name),
                        ("outcome", outcome),
                        ("era", era),
                    ],
                )
            };
            assert_eq!(call_of("fixture__echo", "ok", "modern"), 2.0, "{text}");
            assert_eq!(call_of("fixture__echo", "ok", "legacy"), 1.0, "{text}");
            assert_eq!(
                call_of("unknown", "-32602", "modern"),
                2.0,
                "one label for every unknown name"
            );
            assert_eq!(call_of("fixture__fail", "tool_error", "modern"), 1.0);
            assert_eq!(call_of("fixture__sleep", "cancelled", "modern"), 1.0);
            assert!(
                !text.contains("nope"),
                "a name tried is never a label value"
            );
            assert!(text.contains(r#"name="fixture__echo",upstream="fixture""#));
            let upstream_calls = |outcome: &str| {
                metric_sample(
                    &text,
                    "mcp_client_operation_duration_seconds_count",
                    &[
                        ("method", "tools/call"),
                        ("upstream", "fixture"),
                        ("outcome", outcome),
                    ],
                )
            };
            assert_eq!(upstream_calls("ok"), 3.0);
            assert_eq!(upstream_calls("tool_error"), 1.0);
            assert_eq!(upstream_calls("cancelled"), 1.0);
            for reason in ["origin", "header_mismatch", "too_large"] {
                assert_eq!(
                    metric_sample(&text, "mcpx_refused_requests_total", &[("reason", reason)]),
                    1.0,
                    "{reason}: {text}"
                );
            }
            assert!(
                metric_sample(&text, "mcpx_sessions", &[]) >= 2.0,
                "the legacy session and the modern callers"
            );
            assert!(metric_sample(&text, "mcpx_received_bytes_total", &[("door", "http")]) > 0.0);
            assert!(metric_sample(&text, "mcpx_sent_bytes_total", &[("door", "http")]) > 0.0);

            let mut check = std::process::Command::new(deps::promtool())
                .args(["check", "metrics"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            check
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            let checked = check.wait_with_output().unwrap();
            assert!(
                checked.status.success(),
                "promtool: {}{}",
                String::from_utf8_lossy(&checked.stdout),
                String::from_utf8_lossy(&checked.stderr)
            );
        }

        /// An upstream chooses its error codes; a label value is only one of JSON-RPC's range.
        #[test]
        fn an_upstreams_error_codes_outside_json_rpcs_range_are_one_label_value_and_exact_in_the_audit_log(
        ) {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("audit.jsonl");
            let daemon = super::audit::daemon_auditing_to(&log);
            for (id, code) in [(1, 1234), (2, 98765), (3, -32099)] {
                let answer = call(&daemon, id, "fixture__refuse", json!({"code": code}));
                assert_eq!(answer["error"]["code"], code, "{answer}");
            }
            let text = daemon.metrics();
            let labelled = |metric: &str, outcome: &str| {
                metric_sample(
                    &text,
                    metric,
                    &[("method", "tools/call"), ("outcome", outcome)],
                )
            };
            for metric in [
                "mcp_server_operation_duration_seconds_count",
                "mcp_client_operation_duration_seconds_count",
            ] {
                assert_eq!(labelled(metric, "error"), 2.0, "{metric}: {text}");
                assert_eq!(labelled(metric, "-32099"), 1.0, "{metric}: {text}");
            }
            assert!(!text.contains(r#"outcome="1234""#), "{text}");
            assert!(eventually(|| super::audit::lines(&log).len() == 3));
            let outcomes: Vec<Value> = super::audit::lines(&log)
                .iter()
                .map(|line| line["outcome"].clone())
                .collect();
            assert_eq!(outcomes, [json!("1234"), json!("98765"), json!("-32099")]);
        }

        #[test]
        fn metrics_take_the_daemons_token_and_can_be_turned_off() {
            let guarded = Daemon::start("", "token = \"s3\"\n");
            let get = |d: &Daemon, auth: &str| {
                d.raw(
                    format!(
                        "GET /metrics HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n",
                        d.addr
                    )
                    .as_bytes(),
                )
                .status
            };
            assert_eq!(get(&guarded, ""), 401);
            assert_eq!(get(&guarded, "Authorization: Bearer s3\r\n"), 200);
            let off = Daemon::start("", "metrics = false\n");
            assert_eq!(get(&off, ""), 404);
        }

        /// `mcpx serve` has no HTTP: its numbers are in `mcpx status --json`.
        #[test]
        fn mcpx_serve_shows_its_metrics_in_status() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let config = dir.path().join("config.toml");
            std::fs::write(
                &config,
                format!(
                    "[admin]\nsocket = {:?}\n{}",
                    socket.display().to_string(),
                    fixture_config("")
                ),
            )
            .unwrap();
            let mut mcpx = Serve::spawn(&config, &["--standalone"]);
            mcpx.initialize("2025-06-18");
            mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "x"}}),
            );
            // `mcpx serve` answers on `serve-PID.sock` beside the configured admin socket.
            let own = dir.path().join(format!("serve-{}.sock", mcpx.pid()));
            assert!(eventually(|| own.exists()));
            let status = std::process::Command::new(mcpx_bin())
                .args(["status", "--json", "--socket", own.to_str().unwrap()])
                .output()
                .unwrap();
            let snapshot: Value = serde_json::from_slice(&status.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&status.stderr)));
            let text = snapshot["metrics"]
                .as_str()
                .unwrap_or_else(|| panic!("{snapshot}"));
            let echo = [
                ("name", "fixture__echo"),
                ("era", "legacy"),
                ("outcome", "ok"),
            ];
            assert_eq!(
                metric_sample(text, "mcp_server_operation_duration_seconds_count", &echo),
                1.0,
                "{text}"
            );
            assert!(metric_sample(text, "mcpx_received_bytes_total", &[("door", "stdio")]) > 0.0);
        }
    }

    pub mod audit {
        use super::super::*;

        /// A configuration auditing to `log` (its key beside it) in front of the fixture.
        pub fn auditing_to(log: &std::path::Path) -> String {
            format!(
                "[audit]\npath = {:?}\nkeyFile = {:?}\n{}",
                log.display().to_string(),
                log.with_extension("key").display().to_string(),
                fixture_config("")
            )
        }

        /// A daemon in front of the fixture, writing its audit log to `log`.
        pub fn daemon_auditing_to(log: &std::path::Path) -> Daemon {
            Daemon::start(&auditing_to(log), "")
        }

        pub fn lines(path: &std::path::Path) -> Vec<Value> {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }

        /// A full disk (here: a 20 KiB file size limit) ends the audit log with whole lines
        /// only: a line that could be written in part is taken back, not left torn.
        #[test]
        fn a_full_disk_leaves_no_torn_line_in_the_audit_log() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("calls.jsonl");
            let config = auditing_to(&log);
            // SIGXFSZ ignored, so that past the limit a write fails (EFBIG) instead of killing.
            let daemon = Daemon::start_wrapped(
                &config,
                &[
                    "bash",
                    "-c",
                    "trap '' XFSZ; ulimit -f 20; exec \"$@\"",
                    "limited",
                ],
            );
            let full = || std::fs::metadata(&log).map_or(0, |m| m.len()) > 19 * 1024;
            let mut id = 1;
            while !full() || id < 10 {
                assert!(id < 2000, "the audit log never reached the limit");
                let text = "x".repeat(id as usize % 97);
                call(&daemon, id, "fixture__echo", json!({ "text": text }));
                id += 1;
            }
            // A few more, each a line that cannot fit.
            for extra in 0..5 {
                call(
                    &daemon,
                    id + extra,
                    "fixture__echo",
                    json!({"text": "after"}),
                );
            }
            assert!(daemon.log_shows("audit log"), "{}", daemon.stderr());
            let text = std::fs::read_to_string(&log).unwrap();
            assert!(
                text.ends_with('\n'),
                "a torn last line: {:?}",
                &text[text.len() - 80..]
            );
            for line in text.lines() {
                serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            }
        }

        #[test]
        fn one_line_per_call_without_argument_values_reopened_after_a_rotation() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("audit").join("calls.jsonl");
            let daemon = daemon_auditing_to(&log);
            call(&daemon, 1, "fixture__echo", json!({"text": "s3cret-value"}));
            daemon.modern(
                2,
                "prompts/get",
                json!({"name": "fixture__greet", "arguments": {"who": "Ada"}}),
            );
            daemon.modern(3, "resources/read", json!({"uri": "fixture://hello"}));
            daemon.modern(4, "tools/list", json!({}));
            assert!(eventually(|| lines(&log).len() >= 3));
            std::thread::sleep(Duration::from_millis(200));
            let written = lines(&log);
            assert_eq!(
                written.len(),
                3,
                "one line per call, prompt and read: {written:?}"
            );
            let echo = &written[0];
            assert_eq!(echo["method"], "tools/call");
            assert_eq!(echo["name"], "fixture__echo");
            assert_eq!(echo["upstream"], "fixture");
            assert_eq!(echo["upstreamName"], "echo");
            assert_eq!(echo["outcome"], "ok");
            assert_eq!(echo["door"], "http");
            assert!(echo["durationMs"].as_f64().unwrap() > 0.0);
            assert!(echo["time"].as_str().unwrap().ends_with('Z'));
            assert_eq!(echo["argumentsHmacSha256"].as_str().unwrap().len(), 64);
            assert!(!std::fs::read_to_string(&log).unwrap().contains("s3cret"));
            assert_eq!(written[1]["method"], "prompts/get");
            assert_eq!(written[2]["name"], "fixture://hello");
            // logrotate moves the file away and signals; the next line starts a new file.
            let rotated = dir.path().join("audit").join("calls.jsonl.1");
            std::fs::rename(&log, &rotated).unwrap();
            daemon.signal_only("HUP");
            assert!(daemon.log_shows("reloaded"));
            call(&daemon, 5, "fixture__echo", json!({"text": "after"}));
            assert!(eventually(|| lines(&log).len() == 1));
            assert_eq!(lines(&rotated).len(), 3);
        }

        /// A question mcpx puts to a legacy client on an upstream's behalf is a line of its own.
        #[test]
        fn a_question_to_a_legacy_client_is_a_line() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("audit.jsonl");
            let mut mcpx = Serve::start(&auditing_to(&log));
            mcpx.send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "auditor", "version": "1"}}}),
            );
            mcpx.response(0);
            mcpx.notify("notifications/initialized", json!({}));
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__ask", "arguments": {}}),
            );
            let question = loop {
                let message = mcpx.next();
                if message["method"] == "elicitation/create" {
                    break message;
                }
            };
            mcpx.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}));
            assert_eq!(
                mcpx.response(1)["result"]["content"][0]["text"],
                "accept: Ada"
            );
            assert!(eventually(|| lines(&log).len() >= 2));
            let written = lines(&log);
            let asked = written
                .iter()
                .find(|l| l["method"] == "elicitation/create")
                .unwrap_or_else(|| panic!("{written:?}"));
            assert_eq!(asked["upstream"], "fixture");
            assert_eq!(asked["outcome"], "ok");
            assert_eq!(asked["client"]["name"], "auditor");
            let called = written
                .iter()
                .find(|l| l["method"] == "tools/call")
                .unwrap();
            assert_eq!(called["name"], "fixture__ask");
        }
    }

    pub mod trace {
        use super::super::*;
        use std::sync::{Arc, Mutex};

        const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
        const CLIENT_SPAN: &str = "00f067aa0ba902b7";

        fn traceparent(span: &str) -> String {
            format!("00-{TRACE}-{span}-01")
        }

        /// A legacy HTTP upstream whose one tool, `rec`, answers with the trace context it got,
        /// as headers and in `_meta`.
        fn recording_upstream() -> std::net::SocketAddr {
            scripted_server(|request_line, headers, message| {
                let id = message["id"].clone();
                let header = headers
                    .iter()
                    .find(|(n, _)| n == "traceparent")
                    .map(|(_, v)| v.clone());
                let meta = message["params"]["_meta"]["traceparent"].clone();
                one_tool_server(request_line, message, "rec", || {
                    let seen = json!({"header": header, "meta": meta}).to_string();
                    let answer = json!({"jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": seen}]}});
                    ("200 OK", "application/json", answer.to_string())
                })
            })
        }

        fn config(extra: &str) -> String {
            format!(
                "{extra}[servers.rec]\nurl = \"http://{}/mcp\"\nera = \"legacy\"\n{}",
                recording_upstream(),
                fixture_config("")
            )
        }

        /// With tracing off, a client's trace context reaches the upstream unchanged: from
        /// `_meta` to a stdio upstream's `_meta`, from an HTTP header to an HTTP upstream's
        /// `traceparent` header and `_meta`.
        #[test]
        fn a_clients_traceparent_reaches_stdio_and_http_upstreams() {
            let daemon = Daemon::start(&config(""), "");
            let sent = traceparent(CLIENT_SPAN);
            call(&daemon, 1, "fixture__echo", json!({"text": "t"}));
            let traced = daemon
                .modern(2, "tools/call", json!({"name": "fixture__echo", "arguments": {"text": "t"}, "_meta": {"traceparent": sent}}))
                .json();
            assert_eq!(traced["result"]["isError"], false, "{traced}");
            assert!(daemon.log_shows(&format!("fixture: traceparent {sent} for echo")));
            let headers: Vec<(&str, &[u8])> = vec![
                ("Accept", b"application/json, text/event-stream"),
                ("Content-Type", b"application/json"),
                ("traceparent", sent.as_bytes()),
            ];
            let body = request(
                3,
                "tools/call",
                json!({"name": "rec__rec", "arguments": {}}),
            );
            let reply = daemon.post(&headers, body.to_string().as_bytes()).json();
            let seen: Value = serde_json::from_str(
                reply["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{reply}")),
            )
            .unwrap();
            assert_eq!(seen, json!({"header": sent, "meta": sent}));
        }

        /// In a legacy batch, the `traceparent` header reaches the upstream of every request in
        /// it, as header and `_meta`, except a request's own `_meta` one, which wins for it.
        #[test]
        fn each_request_of_a_batch_carries_the_headers_traceparent_unless_it_has_its_own() {
            let daemon = Daemon::start(&config(""), "");
            let sent = traceparent(CLIENT_SPAN);
            let own = traceparent("1111111111111111");
            let headers: Vec<(&str, &[u8])> = vec![
                ("Accept", b"application/json, text/event-stream"),
                ("Content-Type", b"application/json"),
                ("traceparent", sent.as_bytes()),
            ];
            let call = |id, meta: Value| {
                request(
                    id,
                    "tools/call",
                    json!({"name": "rec__rec", "arguments": {}, "_meta": meta}),
                )
            };
            let batch = json!([
                call(4, json!({})),
                call(5, json!({"traceparent": own})),
                call(6, json!({})),
            ]);
            let reply = daemon.post(&headers, batch.to_string().as_bytes()).json();
            let seen = |id: i64| -> Value {
                let answer = reply
                    .as_array()
                    .and_then(|all| all.iter().find(|a| a["id"] == id))
                    .unwrap_or_else(|| panic!("no answer {id} in {reply}"));
                serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap())
                    .unwrap()
            };
            assert_eq!(seen(4), json!({"header": sent, "meta": sent}));
            assert_eq!(seen(5), json!({"header": own, "meta": own}));
            assert_eq!(seen(6), json!({"header": sent, "meta": sent}));
        }

        /// With `[telemetry] otlpEndpoint`, mcpx's span sits between the client's and the
        /// upstream's: the upstream's parent is mcpx's span, in the client's trace, and the span
        /// is exported to the collector over OTLP/HTTP.
        #[test]
        fn with_otlp_mcpx_puts_its_span_in_between_and_exports_it() {
            let exported = Arc::new(Mutex::new(Vec::<Value>::new()));
            let collector = {
                let exported = Arc::clone(&exported);
                scripted_server(move |request_line, _headers, body| {
                    if request_line.starts_with("POST /v1/traces") {
                        exported.lock().unwrap().push(body.clone());
                    }
                    ("200 OK", "application/json", "{}".to_owned())
                })
            };
            let daemon = Daemon::start_with_env(
                &config(&format!(
                    "[telemetry]\notlpEndpoint = \"http://{collector}\"\n"
                )),
                "",
                &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
            );
            let sent = traceparent(CLIENT_SPAN);
            daemon.modern(1, "tools/call", json!({"name": "fixture__echo", "arguments": {"text": "t"}, "_meta": {"traceparent": sent}}));
            assert!(daemon.log_shows(&format!("fixture: traceparent 00-{TRACE}-")));
            let log = daemon.stderr();
            let got = log
                .split(&format!("fixture: traceparent 00-{TRACE}-"))
                .nth(1)
                .unwrap();
            let mcpx_span = &got[..16];
            assert_ne!(
                mcpx_span, CLIENT_SPAN,
                "mcpx's own span is the upstream's parent"
            );
            let span = || {
                exported
                    .lock()
                    .unwrap()
                    .iter()
                    .flat_map(|b| b["resourceSpans"].as_array().cloned().unwrap_or_default())
                    .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
                    .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
                    .find(|s| {
                        s["spanId"]
                            .as_str()
                            .is_some_and(|id| id.eq_ignore_ascii_case(mcpx_span))
                    })
            };
            assert!(
                eventually(|| span().is_some()),
                "no span exported: {:?}",
                exported.lock().unwrap()
            );
            let span = span().unwrap();
            assert!(
                span["traceId"]
                    .as_str()
                    .unwrap()
                    .eq_ignore_ascii_case(TRACE),
                "{span}"
            );
            assert!(
                span["parentSpanId"]
                    .as_str()
                    .unwrap()
                    .eq_ignore_ascii_case(CLIENT_SPAN),
                "{span}"
            );
            assert_eq!(span["name"], "tools/call fixture__echo");
        }
    }
}
