//! Tasks through mcpx, end to end: FastMCP 4 with `fastmcp-tasks` and rmcp 3.11 (the 2026-07-28
//! Tasks extension, `tests/sdk/fastmcp_tasks_server.py`, `tests/rmcp-tasks`) behind `mcpx serve`
//! and `mcpx daemon`, rmcp's client in front, the TypeScript SDK v1's 2025-11-25 tasks on both
//! sides of mcpx (`tests/sdk/ts_tasks_*.mjs`), and each generation bridged to the other.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `[servers.NAME]` running the FastMCP tasks server.
fn tasks_server(name: &str) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/fastmcp_tasks_server.py"
    );
    format!(
        "[servers.{name}]\ncommand = {:?}\nargs = [{script:?}]\n",
        deps::python()
    )
}

/// A modern request's params declaring the Tasks extension (and elicitation, for the questions
/// a task asks).
fn with_tasks(mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}, "extensions": {TASKS: {}}});
    modern(params)
}

/// Polls `tasks/get` until the task is `status` (or terminal); its last answer.
fn poll_until(mcpx: &mut Serve, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + PATIENCE;
    let mut request = 1000;
    loop {
        request += 1;
        let got = mcpx.call(request, "tasks/get", with_tasks(json!({"taskId": id})));
        let now = got["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let terminal = ["completed", "failed", "cancelled"].contains(&now.as_str());
        if now == status || terminal || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Calls `tool` declaring Tasks; the id of the task it became.
fn create(mcpx: &mut Serve, id: i64, tool: &str, arguments: Value) -> String {
    let created = mcpx.call(
        id,
        "tools/call",
        with_tasks(json!({"name": tool, "arguments": arguments})),
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// The fixture upstream (no tasks of its own), with `server` keys, and `[tasks]` keys.
fn fixture_with(server: &str, tasks: &str) -> String {
    format!(
        "[servers.fixture]\ncommand = {:?}\n{server}\n[tasks]\n{tasks}\n",
        fixture_bin()
    )
}

mod v2026_07_28 {
    mod tasks {
        use super::super::*;

        #[test]
        fn a_task_is_created_polled_and_completed_under_an_id_of_mcpxs() {
            let mut mcpx = Serve::start(&tasks_server("t"));
            let discovered = mcpx.call(0, "server/discover", with_tasks(json!({})));
            let capabilities = &discovered["result"]["capabilities"];
            assert!(
                capabilities["extensions"][TASKS].is_object(),
                "{discovered}"
            );
            assert!(capabilities.get("tasks").is_none(), "{discovered}");
            let created = mcpx.call(
                1,
                "tools/call",
                with_tasks(json!({"name": "t__slow_compute", "arguments": {"seconds": 0.5, "label": "sum"}})),
            );
            let task = &created["result"];
            // Every field the extension's CreateTaskResult has, and nothing mcpx cut.
            for field in ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"] {
                assert!(task.get(field).is_some(), "{field}: {created}");
            }
            assert_eq!(
                (&task["resultType"], &task["status"]),
                (&json!("task"), &json!("working"))
            );
            let id = task["taskId"].as_str().unwrap();
            assert!(id.starts_with("mcpxt1."), "{created}");
            let done = poll_until(&mut mcpx, id, "completed");
            assert_eq!(done["result"]["status"], "completed", "{done}");
            assert_eq!(done["result"]["taskId"], id, "{done}");
            assert_eq!(done["result"]["resultType"], "complete", "{done}");
            let text = &done["result"]["result"]["content"][0]["text"];
            assert_eq!(text, "sum done after 0.5s", "{done}");
        }

        #[test]
        fn a_tool_error_completes_and_a_protocol_error_fails() {
            let mut mcpx = Serve::start(&tasks_server("t"));
            let failing = create(&mut mcpx, 1, "t__failing_job", json!({}));
            let done = poll_until(&mut mcpx, &failing, "completed");
            assert_eq!(done["result"]["status"], "completed", "{done}");
            assert_eq!(done["result"]["result"]["isError"], true, "{done}");
            let broken = create(&mut mcpx, 2, "t__protocol_error_job", json!({}));
            let failed = poll_until(&mut mcpx, &broken, "failed");
            assert_eq!(failed["result"]["status"], "failed", "{failed}");
            assert_eq!(failed["result"]["error"]["code"], -32603, "{failed}");
            assert!(failed["result"].get("result").is_none(), "{failed}");
        }

        #[test]
        fn a_question_inside_a_task_is_answered_by_tasks_update() {
            let mut mcpx = Serve::start(&tasks_server("t"));
            let id = create(
                &mut mcpx,
                1,
                "t__confirm_delete",
                json!({"filename": "a.txt"}),
            );
            let waiting = poll_until(&mut mcpx, &id, "input_required");
            assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
            let asks = waiting["result"]["inputRequests"].as_object().unwrap();
            let (key, ask) = asks.iter().next().unwrap();
            assert_eq!(ask["method"], "elicitation/create", "{waiting}");
            let answers =
                json!({ key.as_str(): {"action": "accept", "content": {"confirm": true}} });
            let ack = mcpx.call(
                2,
                "tasks/update",
                with_tasks(json!({"taskId": id, "inputResponses": answers})),
            );
            assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
            assert!(ack["result"].get("taskId").is_none(), "{ack}");
            let done = poll_until(&mut mcpx, &id, "completed");
            let text = &done["result"]["result"]["content"][0]["text"];
            assert_eq!(text, "deleted a.txt", "{done}");
        }

        #[test]
        fn tasks_cancel_reaches_the_upstream_and_the_task_ends_cancelled() {
            let mut mcpx = Serve::start(&tasks_server("t"));
            let id = create(&mut mcpx, 1, "t__slow_compute", json!({"seconds": 60}));
            let ack = mcpx.call(2, "tasks/cancel", with_tasks(json!({"taskId": id})));
            assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
            assert!(ack["result"].get("status").is_none(), "{ack}");
            let ended = poll_until(&mut mcpx, &id, "cancelled");
            assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
        }

        #[test]
        fn a_client_that_does_not_declare_tasks_gets_the_result_and_minus_32021_on_tasks() {
            let mut mcpx = Serve::start(&tasks_server("t"));
            let call =
                json!({"name": "t__slow_compute", "arguments": {"seconds": 0.1, "label": "now"}});
            let answered = mcpx.call(1, "tools/call", modern(call));
            assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
            assert_eq!(
                answered["result"]["content"][0]["text"],
                "now done after 0.1s"
            );
            let id = create(&mut mcpx, 2, "t__slow_compute", json!({"seconds": 0.1}));
            for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"]
                .iter()
                .enumerate()
            {
                let refused = mcpx.call(3 + n as i64, method, modern(json!({"taskId": id})));
                assert_eq!(refused["error"]["code"], -32021, "{method}: {refused}");
                let required = &refused["error"]["data"]["requiredCapabilities"];
                assert!(required["extensions"][TASKS].is_object(), "{refused}");
            }
            // 2025-11-25's methods are gone from 2026-07-28.
            for method in ["tasks/result", "tasks/list"] {
                let gone = mcpx.call(9, method, with_tasks(json!({"taskId": id})));
                assert_eq!(gone["error"]["code"], -32601, "{method}: {gone}");
            }
        }

        #[test]
        fn a_forged_tampered_foreign_or_bare_upstream_id_is_unknown() {
            let config = tasks_server("t");
            let mut mcpx = Serve::start(&config);
            let id = create(&mut mcpx, 1, "t__slow_compute", json!({"seconds": 0.1}));
            // Sealed by another mcpx (another key): as foreign as a made-up one.
            let mut other = Serve::start(&config);
            let foreign = create(&mut other, 1, "t__slow_compute", json!({"seconds": 0.1}));
            let mut tampered = id.clone().into_bytes();
            let last = tampered.len() - 3;
            tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8(tampered).unwrap();
            for (n, unknown) in [tampered.as_str(), &foreign, "gate-test", "mcpxt1.AAAA", ""]
                .into_iter()
                .enumerate()
            {
                let got = mcpx.call(
                    2 + n as i64,
                    "tasks/get",
                    with_tasks(json!({"taskId": unknown})),
                );
                assert_eq!(got["error"]["code"], -32602, "{unknown}: {got}");
                assert!(
                    got["error"]["message"]
                        .as_str()
                        .unwrap()
                        .starts_with("Unknown task"),
                    "{got}"
                );
            }
            let known = mcpx.call(9, "tasks/get", with_tasks(json!({"taskId": id})));
            assert!(known.get("result").is_some(), "{known}");
        }

        #[test]
        fn task_ids_of_two_upstreams_never_collide_and_each_routes_home() {
            let mut mcpx = Serve::start(&(tasks_server("a") + &tasks_server("b")));
            let mut ids = Vec::new();
            for (n, server) in ["a", "b", "a", "b"].into_iter().enumerate() {
                let label = format!("{server}{n}");
                let tool = format!("{server}__slow_compute");
                let args = json!({"seconds": 0.2, "label": label});
                ids.push((create(&mut mcpx, n as i64, &tool, args), label));
            }
            let distinct: std::collections::HashSet<_> = ids.iter().map(|(id, _)| id).collect();
            assert_eq!(distinct.len(), ids.len(), "{ids:?}");
            for (id, label) in &ids {
                let done = poll_until(&mut mcpx, id, "completed");
                let text = done["result"]["result"]["content"][0]["text"].as_str();
                assert_eq!(
                    text,
                    Some(format!("{label} done after 0.2s").as_str()),
                    "{done}"
                );
            }
        }

        /// FastMCP 4's own client in front of mcpx's HTTP door, FastMCP with `fastmcp-tasks`
        /// behind it: its `tasks/get`, `tasks/update` and `tasks/cancel` carry no `Mcp-Name`
        /// (the task id in the body routes them), and are taken, and counted; a task created
        /// and its result awaited, a plain call to a task tool, a cancel, all work as they do
        /// without mcpx. A wrong `Mcp-Name` is still refused (below).
        #[test]
        fn fastmcps_own_task_client_creates_awaits_calls_and_cancels_through_the_http_door() {
            let d = Daemon::start(&(tasks_server("t") + "prefix = \"\"\n"), "metrics = true");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let report = python_client_against(&d, "fastmcp_tasks_client.py");
            assert_eq!(report["result"], "first done after 0.2s", "{report}");
            assert_eq!(report["plain"], "plain done after 0.1s", "{report}");
            assert_eq!(report["cancelled"], "cancelled", "{report}");
            let metrics = d.metrics();
            let tolerated = |method: &str| {
                metric_sample(
                    &metrics,
                    "mcpx_requests_tolerated_total",
                    &[("what", "mcp_name_missing"), ("method", method)],
                )
            };
            assert!(tolerated("tasks/get") >= 1.0, "{metrics}");
            assert!(tolerated("tasks/cancel") >= 1.0, "{metrics}");
        }

        /// Over HTTP: the extension first (-32021), then the routing header (-32020), then the
        /// id (-32602); and the POST that created a task ending does not end the task.
        #[test]
        fn over_http_the_gates_run_in_order_and_a_closed_post_leaves_its_task_running() {
            let d = Daemon::start(&tasks_server("t"), "");
            let created = d.modern(
                1,
                "tools/call",
                with_tasks(json!({"name": "t__slow_compute", "arguments": {"seconds": 1, "label": "http"}})),
            );
            let id = created.json()["result"]["taskId"]
                .as_str()
                .unwrap()
                .to_owned();
            let get = |declared: bool, name: &str, task: &str| {
                let params = json!({"taskId": task});
                let params = if declared {
                    with_tasks(params)
                } else {
                    modern(params)
                };
                let (mut headers, body) = modern_request(7, "tasks/get", params);
                headers.retain(|(h, _)| h != "Mcp-Name");
                headers.push(("Mcp-Name".into(), name.into()));
                d.post(&header_refs(&headers), body.to_string().as_bytes())
            };
            let undeclared = get(false, "elsewhere", "forged");
            assert_eq!(
                (
                    undeclared.status,
                    undeclared.json()["error"]["code"].clone()
                ),
                (400, json!(-32021))
            );
            let mismatched = get(true, "elsewhere", &id);
            assert_eq!(
                (
                    mismatched.status,
                    mismatched.json()["error"]["code"].clone()
                ),
                (400, json!(-32020))
            );
            let forged = get(true, "forged", "forged");
            assert_eq!(
                forged.json()["error"]["code"],
                -32602,
                "{:?}",
                forged.json()
            );
            let deadline = Instant::now() + PATIENCE;
            let done = loop {
                let got = get(true, &id, &id).json();
                let status = got["result"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if status != "working" || Instant::now() > deadline {
                    break got;
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            assert_eq!(done["result"]["status"], "completed", "{done}");
            assert_eq!(
                done["result"]["result"]["content"][0]["text"],
                "http done after 1.0s"
            );
        }
    }

    mod rmcp {
        use super::super::*;

        /// rmcp 3.11 on both sides of `mcpx serve`: its client (2026-07-28 by `server/discover`,
        /// declaring the extension) drives its server's tasks through mcpx, under mcpx's ids:
        /// polled to the end, a tool error `completed` with `isError`, a protocol error `failed`,
        /// a question answered by `tasks/update`, a cancel, and a forged id unknown.
        #[test]
        fn rmcps_client_drives_rmcps_tasks_through_mcpx() {
            let mut config = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut config, rmcp_tasks_server("rt").as_bytes()).unwrap();
            let out = std::process::Command::new(deps::rmcp_tasks())
                .arg("client")
                .arg(mcpx_bin())
                .arg(config.path())
                .arg("rt__")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stdout}\n{stderr}");
            let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            let slow = &report["slow"];
            assert!(
                slow["id"].as_str().unwrap().starts_with("mcpxt1."),
                "{report}"
            );
            assert_eq!(slow["task"]["status"], "completed", "{report}");
            let said = &slow["task"]["result"]["content"][0]["text"];
            assert_eq!(said, "slept 200ms", "{report}");
            assert_eq!(report["failing"]["status"], "completed", "{report}");
            assert_eq!(report["failing"]["result"]["isError"], true, "{report}");
            assert_eq!(report["broken"]["status"], "failed", "{report}");
            assert_eq!(report["broken"]["error"]["message"], "it broke", "{report}");
            let asked = &report["asked"]["inputRequests"]["name"];
            assert_eq!(asked["method"], "elicitation/create", "{report}");
            let answered = &report["answered"]["result"]["content"][0]["text"];
            assert_eq!(answered, "hello Ada", "{report}");
            assert_eq!(report["cancelled"]["status"], "cancelled", "{report}");
            let forged = report["forged"].as_str().unwrap_or_default();
            assert!(forged.contains("-32602"), "{report}");
        }
    }

    mod own_tasks {
        use super::super::*;

        /// Sync, then promote: a call that ends before `promoteAfter` is answered as it is, one
        /// still running then becomes a task of mcpx's, whose call runs on until it ends.
        #[test]
        fn a_quick_call_is_answered_as_it_is_and_a_long_one_becomes_a_task() {
            // No window a busy machine could miss: an hour for the call that must be answered,
            // a call that never ends for the one that must be promoted.
            let mut patient = Serve::start(&fixture_with("", "promoteAfter = \"1h\""));
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "now"}});
            let quick = patient.call(1, "tools/call", with_tasks(echo));
            assert_eq!(quick["result"]["content"][0]["text"], "now", "{quick}");
            let mut mcpx = Serve::start(&fixture_with("", "promoteAfter = \"1s\""));
            let long = json!({"name": "fixture__sleep", "arguments": {}});
            let created = mcpx.call(2, "tools/call", with_tasks(long));
            let task = &created["result"];
            assert_eq!(
                (&task["resultType"], &task["status"]),
                (&json!("task"), &json!("working")),
                "{created}"
            );
            for field in [
                "taskId",
                "createdAt",
                "lastUpdatedAt",
                "ttlMs",
                "pollIntervalMs",
            ] {
                assert!(task.get(field).is_some(), "{field}: {created}");
            }
            let id = task["taskId"].as_str().unwrap();
            let running = mcpx.call(3, "tasks/get", with_tasks(json!({"taskId": id})));
            assert_eq!(running["result"]["status"], "working", "{running}");
            // A client that did not declare the extension waits for the answer instead.
            let long = json!({"name": "fixture__sleep", "arguments": {"ms": 2500}});
            let waited = mcpx.call(4, "tools/call", modern(long));
            assert_eq!(waited["result"]["content"][0]["text"], "slept", "{waited}");
        }

        /// Each round of the upstream's questions becomes the task's `input_required`, under keys
        /// never used twice; `tasks/update` answers a round, and the call goes on.
        #[test]
        fn each_round_of_questions_is_answered_by_tasks_update() {
            let mut mcpx = Serve::start(&fixture_with("tasks = \"always\"", ""));
            let id = create(&mut mcpx, 1, "fixture__ask_twice", json!({}));
            let mut keys = Vec::new();
            for (round, answer) in [json!({"name": "Ada"}), json!({"name": "green"})]
                .into_iter()
                .enumerate()
            {
                let waiting = poll_until(&mut mcpx, &id, "input_required");
                assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
                let asked = waiting["result"]["inputRequests"].as_object().unwrap();
                assert_eq!(asked.len(), 1, "{waiting}");
                let key = asked.keys().next().unwrap().clone();
                assert!(!keys.contains(&key), "{key} again: {waiting}");
                let responses = json!({ key.as_str(): {"action": "accept", "content": answer} });
                let ack = mcpx.call(
                    10 + round as i64,
                    "tasks/update",
                    with_tasks(json!({"taskId": id, "inputResponses": responses})),
                );
                assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
                keys.push(key);
            }
            let done = poll_until(&mut mcpx, &id, "completed");
            let text = done["result"]["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(text.contains("Ada") && text.contains("green"), "{done}");
        }

        #[test]
        fn tasks_cancel_cancels_the_call_upstream_and_the_task_stays_cancelled() {
            let mut mcpx = Serve::start(&fixture_with("tasks = \"always\"", ""));
            let id = create(&mut mcpx, 1, "fixture__sleep", json!({}));
            let ack = mcpx.call(2, "tasks/cancel", with_tasks(json!({"taskId": id})));
            assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
            assert!(
                eventually(|| mcpx.log_shows("fixture: cancelled request")),
                "{}",
                mcpx.stderr()
            );
            let ended = poll_until(&mut mcpx, &id, "cancelled");
            assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
            assert!(ended["result"].get("error").is_none(), "{ended}");
        }

        #[test]
        fn the_caps_refuse_with_an_error_that_names_them() {
            let config = fixture_with(
                "tasks = \"always\"",
                "maxPerClient = 1\nmaxResultBytes = 10",
            );
            let mut mcpx = Serve::start(&config);
            let id = create(
                &mut mcpx,
                1,
                "fixture__echo",
                json!({"text": "longer than ten bytes"}),
            );
            let over = mcpx.call(
                2,
                "tools/call",
                with_tasks(json!({"name": "fixture__echo", "arguments": {"text": "x"}})),
            );
            let message = over["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("tasks.maxPerClient"), "{over}");
            let failed = poll_until(&mut mcpx, &id, "failed");
            assert_eq!(failed["result"]["status"], "failed", "{failed}");
            let why = failed["result"]["error"]["message"]
                .as_str()
                .unwrap_or_default();
            assert!(why.contains("tasks.maxResultBytes"), "{failed}");
        }

        /// Past its TTL a task is gone: unknown, as any id mcpx did not make.
        #[test]
        fn a_task_past_its_ttl_is_unknown() {
            let mut mcpx = Serve::start(&fixture_with("tasks = \"always\"", "ttl = \"1s\""));
            let id = create(&mut mcpx, 1, "fixture__echo", json!({"text": "x"}));
            let deadline = Instant::now() + PATIENCE;
            for request in 10.. {
                let got = mcpx.call(request, "tasks/get", with_tasks(json!({"taskId": id})));
                if got["error"]["code"] == -32602 {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the task outlived its TTL: {got}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }

        /// A task's call runs as long as the task lives, not the server's `timeout`, which
        /// still ends the same call made without a task.
        #[test]
        fn a_tasks_call_outlives_the_servers_timeout() {
            let mut mcpx = Serve::start(&fixture_with("timeout = \"1s\"\ntasks = \"always\"", ""));
            let long = json!({"name": "fixture__sleep", "arguments": {"ms": 2000}});
            let id = create(&mut mcpx, 1, "fixture__sleep", json!({"ms": 2000}));
            let done = poll_until(&mut mcpx, &id, "completed");
            assert_eq!(
                done["result"]["result"]["content"][0]["text"], "slept",
                "{done}"
            );
            let timed_out = mcpx.call(2, "tools/call", modern(long));
            let message = timed_out["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("did not answer") || message.contains("1s"),
                "{timed_out}"
            );
        }

        /// Each task's creation and end is an audit line, and `mcpx_tasks` counts tasks by kind
        /// and state.
        #[test]
        fn a_task_is_audited_and_counted_by_kind_and_state() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("audit.jsonl");
            let audit = format!(
                "[audit]\npath = {:?}\nkeyFile = {:?}\n",
                log.display().to_string(),
                log.with_extension("key").display().to_string()
            );
            let d = Daemon::start(&(audit + &fixture_with("tasks = \"always\"", "")), "");
            let call = json!({"name": "fixture__sleep", "arguments": {"ms": 100}});
            let created = d.modern(1, "tools/call", with_tasks(call)).json();
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let completed = [("kind", "own"), ("state", "completed")];
            assert!(
                eventually(|| metric_sample(&d.metrics(), "mcpx_tasks", &completed) == 1.0),
                "{}",
                d.metrics()
            );
            let task_lines = || {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let lines: Vec<Value> = text
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect();
                lines
                    .into_iter()
                    .filter(|l| l["method"] == "task")
                    .collect::<Vec<_>>()
            };
            assert!(eventually(|| task_lines().len() == 2), "{:?}", task_lines());
            let outcomes: Vec<Value> = task_lines().iter().map(|l| l["outcome"].clone()).collect();
            assert_eq!(outcomes, [json!("created"), json!("completed")]);
            for line in task_lines() {
                assert_eq!(
                    (&line["name"], &line["upstream"]),
                    (&json!("fixture__sleep"), &json!("fixture"))
                );
            }
            let done = d
                .modern(2, "tasks/get", with_tasks(json!({"taskId": id})))
                .json();
            assert_eq!(done["result"]["status"], "completed", "{done}");
            let result = &done["result"]["result"];
            assert_eq!(result["content"][0]["text"], "slept", "{done}");
            assert_eq!(result["resultType"], "complete", "{done}");
        }

        /// A 2026-07-28 task has no progress of its own: what its call reports after it became
        /// a task is its `statusMessage`.
        #[test]
        fn a_tasks_progress_is_its_status_message() {
            let mut mcpx = Serve::start(&fixture_with("tasks = \"always\"", ""));
            let mut call = with_tasks(json!({"name": "fixture__progress",
                "arguments": {"steps": 40, "delayMs": 100}}));
            call["_meta"]["progressToken"] = json!("p");
            let created = mcpx.call(1, "tools/call", call);
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let deadline = Instant::now() + PATIENCE;
            let said = loop {
                let got = mcpx.call(2, "tasks/get", with_tasks(json!({"taskId": id})));
                let said = got["result"]["statusMessage"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if said.starts_with("step") || Instant::now() > deadline {
                    break said;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            assert!(said.starts_with("step "), "{said}");
            let done = poll_until(&mut mcpx, &id, "completed");
            let text = &done["result"]["result"]["content"][0]["text"];
            assert_eq!(text, "40 steps", "{done}");
        }

        /// A call cancelled before it was promoted leaves no task behind: the client's one
        /// place (`maxPerClient = 1`) is free for the next.
        #[test]
        fn a_call_cancelled_before_its_promotion_leaves_no_task() {
            let config = fixture_with("", "promoteAfter = \"1h\"\nmaxPerClient = 1");
            let mut mcpx = Serve::start(&config);
            let sleep = with_tasks(json!({"name": "fixture__sleep", "arguments": {}}));
            mcpx.request(1, "tools/call", sleep);
            assert!(mcpx.log_shows("fixture: sleeping request"));
            mcpx.notify("notifications/cancelled", modern(json!({"requestId": 1})));
            let echo = with_tasks(json!({"name": "fixture__echo", "arguments": {"text": "next"}}));
            let deadline = Instant::now() + PATIENCE;
            let answered = loop {
                let answered = mcpx.call(2, "tools/call", echo.clone());
                let refused = answered["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("maxPerClient"));
                if !refused || Instant::now() > deadline {
                    break answered;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            assert_eq!(
                answered["result"]["content"][0]["text"], "next",
                "{answered}"
            );
        }

        /// A listen that asks for mcpx's task by id is told of its changes as
        /// `notifications/tasks` (the task as `tasks/get` shows it), tagged with the listen; an
        /// id mcpx does not hold is left out of the acknowledgement, and a client that did not
        /// declare Tasks is refused (-32021).
        #[test]
        fn a_listen_with_task_ids_hears_each_change_of_mcpxs_task() {
            let mut mcpx = Serve::start(&fixture_with("tasks = \"always\"", ""));
            let id = create(&mut mcpx, 1, "fixture__sleep", json!({}));
            let unknown = "mcpxt1.not-a-task";
            let listen = with_tasks(json!({"notifications": {"taskIds": [id, unknown]}}));
            mcpx.request(50, "subscriptions/listen", listen);
            let ack = mcpx.next();
            assert_eq!(
                ack["method"], "notifications/subscriptions/acknowledged",
                "{ack}"
            );
            assert_eq!(
                ack["params"]["notifications"],
                json!({"taskIds": [id]}),
                "{ack}"
            );
            let ack = mcpx.call(2, "tasks/cancel", with_tasks(json!({"taskId": id})));
            assert!(ack.get("result").is_some(), "{ack}");
            let heard = loop {
                let message = mcpx.next();
                if message["method"] == "notifications/tasks" {
                    break message;
                }
            };
            let params = &heard["params"];
            assert_eq!(
                (&params["taskId"], &params["status"]),
                (&json!(id), &json!("cancelled"))
            );
            assert_eq!(
                params["_meta"]["io.modelcontextprotocol/subscriptionId"], 50,
                "{heard}"
            );
            let undeclared = modern(json!({"notifications": {"taskIds": [id]}}));
            let refused = mcpx.call(3, "subscriptions/listen", undeclared);
            assert_eq!(refused["error"]["code"], -32021, "{refused}");
        }

        #[test]
        fn a_server_whose_tasks_key_says_never_is_answered_when_the_call_ends() {
            let config = fixture_with("tasks = \"never\"", "promoteAfter = \"100ms\"");
            let mut mcpx = Serve::start(&config);
            let long = json!({"name": "fixture__sleep", "arguments": {"ms": 500}});
            let waited = mcpx.call(1, "tools/call", with_tasks(long));
            assert_eq!(waited["result"]["content"][0]["text"], "slept", "{waited}");
        }
    }

    mod bridged_tasks {
        use super::super::*;

        /// The TypeScript SDK v1's 2025-11-25 tasks server, its tasks made at once (`tasks`).
        fn ts(tasks: &str) -> String {
            format!("{}tasks = {tasks:?}\n", ts_tasks_server("ts"))
        }

        /// Calls the server's `statuses` until its tasks' statuses include `status`; them.
        fn server_statuses_until(mcpx: &mut Serve, status: &str) -> Value {
            let deadline = Instant::now() + PATIENCE;
            let mut request = 5000;
            loop {
                request += 1;
                let call = modern(json!({"name": "ts__statuses", "arguments": {}}));
                let got = mcpx.call(request, "tools/call", call);
                let text = got["result"]["content"][0]["text"].as_str().unwrap_or("[]");
                let statuses: Value = serde_json::from_str(text).unwrap();
                let seen = statuses.as_array().unwrap().iter().any(|s| s == status);
                if seen || Instant::now() > deadline {
                    return statuses;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }

        /// A 2026-07-28 client that declared Tasks, calling a 2025-11-25 server's task tool,
        /// gets a task of mcpx's, polls it, and reads the server's result in the extension's
        /// terms: a tool error is `completed` with `isError`, not 2025-11-25's `failed`; the
        /// server's id and its `related-task` never show.
        #[test]
        fn a_2025_11_25_servers_task_is_a_task_of_the_extension_polled_to_its_result() {
            let mut mcpx = Serve::start(&ts("always"));
            let id = create(&mut mcpx, 1, "ts__delay", json!({"ms": 300}));
            assert!(id.starts_with("mcpxt1."), "{id}");
            let done = poll_until(&mut mcpx, &id, "completed");
            assert_eq!(done["result"]["status"], "completed", "{done}");
            let result = &done["result"]["result"];
            assert_eq!(result["content"][0]["text"], "waited 300ms", "{done}");
            assert!(!done.to_string().contains("related-task"), "{done}");
            let failing = create(&mut mcpx, 2, "ts__fail", json!({}));
            let done = poll_until(&mut mcpx, &failing, "completed");
            assert_eq!(done["result"]["status"], "completed", "{done}");
            assert_eq!(done["result"]["result"]["isError"], true, "{done}");
            // 2026-07-28 tools carry no `execution`: the client is never asked to choose.
            let listed = mcpx.call(3, "tools/list", modern(json!({})));
            let tools = listed["result"]["tools"].as_array().unwrap();
            assert!(
                tools.iter().all(|t| t.get("execution").is_none()),
                "{listed}"
            );
        }

        /// Under `auto`, a bridged call that ends within `promoteAfter` is answered as it is.
        #[test]
        fn a_quick_bridged_call_is_answered_as_it_is() {
            let config = format!("{}[tasks]\npromoteAfter = \"1h\"\n", ts("auto"));
            let mut mcpx = Serve::start(&config);
            let call = with_tasks(json!({"name": "ts__delay", "arguments": {"ms": 10}}));
            let answered = mcpx.call(1, "tools/call", call);
            let text = &answered["result"]["content"][0]["text"];
            assert_eq!(text, "waited 10ms", "{answered}");
            assert!(answered["result"].get("taskId").is_none(), "{answered}");
        }

        /// Under `auto`, a bridged call whose server asks within `promoteAfter` becomes a task at
        /// once, the question its `input_required`: a question answered by a retry could not
        /// reach the server's task again.
        #[test]
        fn a_bridged_call_that_asks_at_once_is_a_task_at_once() {
            let config = format!("{}[tasks]\npromoteAfter = \"1h\"\n", ts("auto"));
            let mut mcpx = Serve::start(&config);
            let id = create(&mut mcpx, 1, "ts__ask", json!({}));
            let asked = poll_until(&mut mcpx, &id, "input_required");
            let requests = asked["result"]["inputRequests"].as_object().unwrap();
            let (key, _) = requests.iter().next().unwrap();
            let answers = json!({key: {"action": "accept", "content": {"name": "Bo"}}});
            let update = with_tasks(json!({"taskId": id, "inputResponses": answers}));
            let _ = mcpx.call(2, "tasks/update", update);
            let done = poll_until(&mut mcpx, &id, "completed");
            let text = &done["result"]["result"]["content"][0]["text"];
            assert_eq!(text, "hello Bo", "{done}");
        }

        /// The server's question inside its task (on `tasks/result`, tied to the task) is the
        /// task's `input_required`; `tasks/update` answers it and the task completes.
        #[test]
        fn a_question_the_servers_task_asks_is_answered_by_tasks_update() {
            let mut mcpx = Serve::start(&ts("always"));
            let id = create(&mut mcpx, 1, "ts__ask", json!({}));
            let asked = poll_until(&mut mcpx, &id, "input_required");
            assert_eq!(asked["result"]["status"], "input_required", "{asked}");
            let requests = asked["result"]["inputRequests"].as_object().unwrap();
            assert_eq!(requests.len(), 1, "{asked}");
            let (key, question) = requests.iter().next().unwrap();
            assert_eq!(question["method"], "elicitation/create", "{asked}");
            assert_eq!(question["params"]["message"], "Your name?", "{asked}");
            assert!(!asked.to_string().contains("related-task"), "{asked}");
            let answers = json!({key: {"action": "accept", "content": {"name": "Ann"}}});
            let update = with_tasks(json!({"taskId": id, "inputResponses": answers}));
            let ack = mcpx.call(2, "tasks/update", update);
            assert!(ack.get("result").is_some(), "{ack}");
            let done = poll_until(&mut mcpx, &id, "completed");
            let text = &done["result"]["result"]["content"][0]["text"];
            assert_eq!(text, "hello Ann", "{done}");
        }

        /// `tasks/cancel` ends mcpx's task cancelled and cancels the server's task behind it.
        #[test]
        fn tasks_cancel_cancels_the_servers_task_and_the_task_stays_cancelled() {
            let mut mcpx = Serve::start(&ts("always"));
            let id = create(&mut mcpx, 1, "ts__delay", json!({"ms": 600_000}));
            let ack = mcpx.call(2, "tasks/cancel", with_tasks(json!({"taskId": id})));
            assert!(ack.get("result").is_some(), "{ack}");
            let ended = poll_until(&mut mcpx, &id, "cancelled");
            assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
            let statuses = server_statuses_until(&mut mcpx, "cancelled");
            assert_eq!(statuses, json!(["cancelled"]));
            let still = poll_until(&mut mcpx, &id, "cancelled");
            assert_eq!(still["result"]["status"], "cancelled", "{still}");
        }

        /// A tool the server runs only as a task is -32021 for a client that did not declare
        /// Tasks (its plain call would be refused); one it may run either way is called plainly.
        #[test]
        fn a_task_only_tool_is_minus_32021_without_tasks_and_an_optional_one_is_plain() {
            let mut mcpx = Serve::start(&ts_tasks_server("ts"));
            let call = modern(json!({"name": "ts__ask", "arguments": {}}));
            let refused = mcpx.call(1, "tools/call", call);
            assert_eq!(refused["error"]["code"], -32021, "{refused}");
            let call = modern(json!({"name": "ts__delay", "arguments": {"ms": 10}}));
            let plain = mcpx.call(2, "tools/call", call);
            let text = &plain["result"]["content"][0]["text"];
            assert_eq!(text, "waited 10ms", "{plain}");
        }
    }
}

/// `[servers.NAME]` running rmcp 3.11's server of the Tasks extension (`tests/rmcp-tasks`).
pub(crate) fn rmcp_tasks_server(name: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = {:?}\nargs = [\"server\"]\n",
        deps::rmcp_tasks()
    )
}

/// `[servers.NAME]` running the TypeScript SDK v1's 2025-11-25 tasks server.
pub(crate) fn ts_tasks_server(name: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/ts_tasks_server.mjs");
    format!(
        "[servers.{name}]\ncommand = {:?}\nargs = [{script:?}]\n",
        deps::node()
    )
}

mod v2025_11_25 {
    mod tasks {
        use super::super::*;

        /// The TypeScript SDK v1 on both sides of `mcpx serve`: its client's `callToolStream`
        /// follows each task to its end, answers the question a task asks on `tasks/result`
        /// (which names the task by mcpx's id), cancels one for good, hears the server's status
        /// notifications under mcpx's ids, and finds no task under an id mcpx did not make.
        #[test]
        fn the_typescript_sdks_tasks_pass_through_mcpx_under_its_ids() {
            let mut config = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut config, ts_tasks_server("ts").as_bytes()).unwrap();
            let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/ts_tasks_client.mjs");
            let out = std::process::Command::new(deps::node())
                .arg(client)
                .arg(mcpx_bin())
                .arg(config.path())
                .arg("ts__")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            // mcpx declares tasks for tools/call, and cancel; not list, which would show one
            // client another's tasks.
            let tasks = &report["capabilities"]["tasks"];
            assert_eq!(
                tasks,
                &json!({"cancel": {}, "requests": {"tools": {"call": {}}}})
            );
            assert_eq!(report["support"]["ts__delay"], "optional", "{report}");
            assert_eq!(report["support"]["ts__ask"], "required", "{report}");
            assert_eq!(report["support"]["mcpx__echo"], Value::Null, "{report}");
            let runs = &report["runs"];
            assert_eq!(runs["delay"]["final"], "completed", "{report}");
            assert_eq!(
                runs["delay"]["result"]["content"][0]["text"],
                "waited 300ms"
            );
            assert_eq!(runs["fail"]["final"], "failed", "{report}");
            assert_eq!(
                runs["ask"]["result"]["content"][0]["text"], "hello Ada",
                "{report}"
            );
            let id = runs["ask"]["taskId"].as_str().unwrap();
            assert!(id.starts_with("mcpxt1."), "{report}");
            // The question and the result name the task as the client knows it.
            assert_eq!(report["asked"][0]["relatedTask"], id, "{report}");
            let related = &runs["ask"]["result"]["_meta"]["io.modelcontextprotocol/related-task"];
            assert_eq!(related["taskId"], id, "{report}");
            assert_eq!(
                report["cancel"],
                json!({"status": "cancelled", "taskId": true, "after": "cancelled"})
            );
            assert_eq!(
                report["unknown"],
                json!({"forged": -32602, "tampered": -32602})
            );
            assert_eq!(report["list"], -32601, "{report}");
            // The server's status notifications reach the client under mcpx's ids.
            let delay = runs["delay"]["taskId"].as_str().unwrap();
            let heard = report["heard"].as_array().unwrap();
            let completed = json!({"taskId": delay, "status": "completed"});
            assert!(heard.contains(&completed), "{report}");
            assert!(
                heard.iter().all(|h| h["taskId"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("mcpxt1."))),
                "{report}"
            );
        }

        /// `mcpx serve` after a 2025-11-25 handshake declaring form elicitation.
        fn legacy_serve(config: &str) -> Serve {
            let mut mcpx = Serve::start(config);
            let hello = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "test", "version": "1"}});
            let _ = mcpx.call(0, "initialize", hello);
            mcpx.notify("notifications/initialized", json!({}));
            mcpx
        }

        /// The next request mcpx sends the client (its task's status notifications pass by).
        fn next_question(mcpx: &mut Serve) -> Value {
            loop {
                let message = mcpx.next();
                if message.get("id").is_some() && message.get("method").is_some() {
                    return message;
                }
            }
        }

        /// `tools/call` asking for a task; the id of the task it made.
        fn legacy_create(mcpx: &mut Serve, id: i64, tool: &str, arguments: Value) -> String {
            let call = json!({"name": tool, "arguments": arguments, "task": {"ttl": 60_000}});
            let created = mcpx.call(id, "tools/call", call);
            let task = &created["result"]["task"];
            let status = task["status"].as_str().unwrap_or_default();
            assert!(["working", "input_required"].contains(&status), "{created}");
            assert_eq!(task["ttl"], 60_000, "{created}");
            task["taskId"].as_str().unwrap().to_owned()
        }

        /// A task asked to be kept 2^64-1 ms is kept as long as mcpx keeps tasks, said in its
        /// `ttl`, and the arithmetic on it panics nothing: the task answers its result.
        #[test]
        fn a_task_asked_to_live_2_to_the_64_ms_is_kept_as_long_as_mcpx_keeps_tasks() {
            let mut mcpx = legacy_serve(&fixture_with("", ""));
            let call = json!({"name": "fixture__echo", "arguments": {"text": "hi"}, "task": {"ttl": u64::MAX}});
            let created = mcpx.call(1, "tools/call", call);
            let task = &created["result"]["task"];
            let ttl = task["ttl"].as_u64().unwrap_or_else(|| panic!("{created}"));
            assert!(ttl < u64::MAX, "{created}");
            let id = task["taskId"].as_str().unwrap();
            let result = mcpx.call(2, "tasks/result", json!({"taskId": id}));
            assert_eq!(result["result"]["content"][0]["text"], "hi", "{result}");
        }

        /// A 2025-11-25 client that asks for a task of a server without tasks gets one of mcpx's
        /// at once; `tasks/result` waits for the call's end and gives its result tied to the
        /// task, and a tool error is `failed`, as 2025-11-25 has it.
        #[test]
        fn a_task_asked_of_a_server_without_tasks_is_mcpxs_and_tasks_result_waits_for_it() {
            let mut mcpx = legacy_serve(&fixture_with("", ""));
            let id = legacy_create(&mut mcpx, 1, "fixture__echo", json!({"text": "hi"}));
            assert!(id.starts_with("mcpxt1."), "{id}");
            let result = mcpx.call(2, "tasks/result", json!({"taskId": id}));
            assert_eq!(result["result"]["content"][0]["text"], "hi", "{result}");
            let related = &result["result"]["_meta"]["io.modelcontextprotocol/related-task"];
            assert_eq!(related["taskId"], id.as_str(), "{result}");
            let got = mcpx.call(3, "tasks/get", json!({"taskId": id}));
            assert_eq!(got["result"]["status"], "completed", "{got}");
            assert_result("2025-11-25", "tasks/get", &got);
            let failing = legacy_create(&mut mcpx, 4, "fixture__fail", json!({}));
            let result = mcpx.call(5, "tasks/result", json!({"taskId": failing}));
            assert_eq!(result["result"]["isError"], true, "{result}");
            let got = mcpx.call(6, "tasks/get", json!({"taskId": failing}));
            assert_eq!(got["result"]["status"], "failed", "{got}");
        }

        /// The progress token of the call that asked for mcpx's task holds for the task's life:
        /// over HTTP, where the call's own stream ended with the created task, its progress
        /// keeps coming on the session's GET stream.
        #[test]
        fn mcpxs_task_reports_progress_under_the_callers_token_on_the_session_stream() {
            // No keep-alive within the read timeout: a stream that says nothing more fails the
            // test instead of holding it.
            let quiet = format!(
                "{}[transport]\nsseKeepAlive = \"1h\"\n",
                fixture_with("", "")
            );
            let d = Daemon::start(&quiet, "");
            let session = initialize_session(&d, "2025-11-25", json!({}));
            let mut stream = std::net::TcpStream::connect(d.addr).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            let get = format!("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n");
            std::io::Write::write_all(&mut stream, get.as_bytes()).unwrap();
            let (mut events, head) = EventReader::open(stream);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let call = json!({"name": "fixture__progress", "arguments": {"steps": 5, "delayMs": 100},
                "task": {"ttl": 60_000}, "_meta": {"progressToken": "p2"}});
            let created = post(
                &d,
                Some(&session),
                Some("2025-11-25"),
                &request(1, "tools/call", call),
            );
            assert!(
                created.json()["result"]["task"]["taskId"].is_string(),
                "{}",
                created.json()
            );
            let deadline = Instant::now() + PATIENCE;
            let last = loop {
                let event = events.next_event().expect("the session stream ended");
                let last =
                    event["method"] == "notifications/progress" && event["params"]["progress"] == 5;
                assert!(
                    Instant::now() < deadline,
                    "no last step on the session stream"
                );
                if last {
                    break event;
                }
            };
            assert_eq!(last["params"]["progressToken"], "p2", "{last}");
        }

        /// A question the server asks during the task goes to the client on its `tasks/result`,
        /// tied to the task by mcpx's id; the answer reaches the server and the task completes.
        #[test]
        fn a_question_inside_mcpxs_task_is_asked_on_tasks_result() {
            let mut mcpx = legacy_serve(&fixture_with("", ""));
            let id = legacy_create(&mut mcpx, 1, "fixture__ask", json!({}));
            mcpx.request(2, "tasks/result", json!({"taskId": id}));
            let asked = next_question(&mut mcpx);
            assert_eq!(asked["method"], "elicitation/create", "{asked}");
            let related = &asked["params"]["_meta"]["io.modelcontextprotocol/related-task"];
            assert_eq!(related["taskId"], id.as_str(), "{asked}");
            let answer = json!({"action": "accept", "content": {"name": "Ann"}});
            mcpx.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
            let result = mcpx.response(2);
            let text = result["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(text.contains("Ann"), "{result}");
        }

        /// `tasks/cancel` cancels the call upstream and answers with the cancelled task; the task
        /// stays cancelled, and cancelling it again is refused (-32602), as for any ended task.
        /// The client is told of the change.
        #[test]
        fn tasks_cancel_answers_the_cancelled_task_and_refuses_an_ended_one() {
            let mut mcpx = legacy_serve(&fixture_with("", ""));
            let id = legacy_create(&mut mcpx, 1, "fixture__sleep", json!({}));
            let cancelled = mcpx.call(2, "tasks/cancel", json!({"taskId": id}));
            assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
            assert_result("2025-11-25", "tasks/cancel", &cancelled);
            let got = mcpx.call(3, "tasks/get", json!({"taskId": id}));
            assert_eq!(got["result"]["status"], "cancelled", "{got}");
            let again = mcpx.call(4, "tasks/cancel", json!({"taskId": id}));
            assert_eq!(again["error"]["code"], -32602, "{again}");
            // Each change was told (2025-11-25's `notifications/tasks/status`), under mcpx's id.
            let told = loop {
                let message = mcpx.next();
                if message["method"] == "notifications/tasks/status" {
                    break message;
                }
            };
            assert_eq!(told["params"]["taskId"], id.as_str(), "{told}");
            assert_eq!(told["params"]["status"], "cancelled", "{told}");
            let result = mcpx.call(5, "tasks/result", json!({"taskId": id}));
            assert!(result.get("error").is_some(), "{result}");
        }

        /// A 2025-11-25 client is offered mcpx's tasks as the server's `tasks` says: `always`
        /// offers them, `required` demands them (a plain call is -32601), `auto` offers none,
        /// though one asked for is made, and under `never` the call is answered plainly; older
        /// clients never see `execution`.
        #[test]
        fn tools_offer_mcpxs_tasks_as_the_servers_tasks_key_says() {
            let support = |tasks: &str, revision: &str| {
                let mut mcpx = Serve::start(&fixture_with(&format!("tasks = {tasks:?}"), ""));
                mcpx.initialize(revision);
                let listed = mcpx.call(1, "tools/list", json!({}));
                let tools = listed["result"]["tools"].as_array().unwrap().clone();
                let echo = tools.iter().find(|t| t["name"] == "fixture__echo").unwrap();
                echo["execution"]["taskSupport"].clone()
            };
            assert_eq!(support("always", "2025-11-25"), "optional");
            assert_eq!(support("required", "2025-11-25"), "required");
            assert_eq!(support("auto", "2025-11-25"), Value::Null);
            assert_eq!(support("always", "2025-06-18"), Value::Null);
            let mut mcpx = legacy_serve(&fixture_with("tasks = \"required\"", ""));
            let call = json!({"name": "fixture__echo", "arguments": {"text": "hi"}});
            let refused = mcpx.call(1, "tools/call", call);
            assert_eq!(refused["error"]["code"], -32601, "{refused}");
            let mut never = legacy_serve(&fixture_with("tasks = \"never\"", ""));
            let call = json!({"name": "fixture__echo", "arguments": {"text": "hi"}, "task": {}});
            let plain = never.call(1, "tools/call", call);
            assert_eq!(plain["result"]["content"][0]["text"], "hi", "{plain}");
            let mut auto = legacy_serve(&fixture_with("", ""));
            let id = legacy_create(&mut auto, 1, "fixture__echo", json!({"text": "hi"}));
            let result = auto.call(2, "tasks/result", json!({"taskId": id}));
            assert_eq!(result["result"]["content"][0]["text"], "hi", "{result}");
        }

        /// A 2025-11-25 client in front of a server of the 2026-07-28 Tasks extension (FastMCP):
        /// its task is mcpx's, following the server's task; the question the task asks (its
        /// `inputRequests`) is asked on `tasks/result`, the answer goes back by `tasks/update`,
        /// and the task completes; outcomes and cancellation are 2025-11-25's.
        #[test]
        fn a_legacy_clients_task_of_an_extension_server_asks_on_tasks_result() {
            let mut mcpx = legacy_serve(&tasks_server("t"));
            let arguments = json!({"filename": "a.txt"});
            let id = legacy_create(&mut mcpx, 1, "t__confirm_delete", arguments);
            mcpx.request(2, "tasks/result", json!({"taskId": id}));
            let asked = next_question(&mut mcpx);
            assert_eq!(asked["method"], "elicitation/create", "{asked}");
            assert_eq!(asked["params"]["message"], "Delete a.txt?", "{asked}");
            let answer = json!({"action": "accept", "content": {"confirm": true}});
            mcpx.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
            let result = mcpx.response(2);
            let text = &result["result"]["content"][0]["text"];
            assert_eq!(text, "deleted a.txt", "{result}");
            let got = mcpx.call(3, "tasks/get", json!({"taskId": id}));
            assert_eq!(got["result"]["status"], "completed", "{got}");
            // Tools the server runs only as tasks: its task is followed, and its outcome mapped
            // (a tool error is `failed` in 2025-11-25; a protocol error is the result's error).
            let failing = legacy_create(&mut mcpx, 4, "t__failing_job", json!({}));
            let result = mcpx.call(5, "tasks/result", json!({"taskId": failing}));
            assert_eq!(result["result"]["isError"], true, "{result}");
            let got = mcpx.call(6, "tasks/get", json!({"taskId": failing}));
            assert_eq!(got["result"]["status"], "failed", "{got}");
            let broken = legacy_create(&mut mcpx, 7, "t__protocol_error_job", json!({}));
            let result = mcpx.call(8, "tasks/result", json!({"taskId": broken}));
            assert_eq!(result["error"]["code"], -32603, "{result}");
            assert_eq!(result["error"]["message"], "the job broke", "{result}");
            let slow = legacy_create(&mut mcpx, 9, "t__slow_compute", json!({"seconds": 600}));
            let cancelled = mcpx.call(10, "tasks/cancel", json!({"taskId": slow}));
            assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
            let got = mcpx.call(11, "tasks/get", json!({"taskId": slow}));
            assert_eq!(got["result"]["status"], "cancelled", "{got}");
        }

        /// A question the server's task asks names the task by mcpx's id, and the client's answer,
        /// tied to that id, reaches the server tied to the server's own.
        #[test]
        fn an_answer_tied_to_a_passed_task_reaches_the_server_under_its_own_id() {
            let mut mcpx = legacy_serve(&ts_tasks_server("ts"));
            let id = legacy_create(&mut mcpx, 1, "ts__ask", json!({}));
            mcpx.request(2, "tasks/result", json!({"taskId": id}));
            let asked = next_question(&mut mcpx);
            let related = &asked["params"]["_meta"]["io.modelcontextprotocol/related-task"];
            assert_eq!(related["taskId"], id.as_str(), "{asked}");
            let tied = json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
            let answer = json!({"action": "accept", "content": {"name": "Ann"}, "_meta": tied});
            mcpx.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
            let result = mcpx.response(2);
            assert_eq!(
                result["result"]["content"][0]["text"], "hello Ann",
                "{result}"
            );
        }

        /// A task the server runs reports progress under the token of the request that made it
        /// after that request was answered; the client hears it under its own token until the
        /// task ends, and nothing after.
        #[test]
        fn a_passed_tasks_progress_reaches_the_client_until_the_task_ends() {
            let mut mcpx = legacy_serve(&ts_tasks_server("ts"));
            hears_task_progress_until_it_ends(&mut mcpx, "ts__progress");
        }

        /// The same across HTTP, both ways: a daemon in front of the server sends the task's
        /// progress on its client's session stream (GET), and the gateway in front of that
        /// daemon, a remote server to it, takes it from there.
        #[test]
        fn a_passed_tasks_progress_crosses_http_on_the_session_stream() {
            let remote = Daemon::start(&ts_tasks_server("ts"), "");
            let config = format!(
                "[servers.remote]\nurl = \"http://{}/mcp\"\nera = \"legacy\"\n",
                remote.addr
            );
            let mut mcpx = legacy_serve(&config);
            hears_task_progress_until_it_ends(&mut mcpx, "remote__ts__progress");
        }

        /// Calls `tool` (the TypeScript server's `progress`) as a task with a progress token,
        /// and hears its progress after the answer, its result, and no progress after its end.
        fn hears_task_progress_until_it_ends(mcpx: &mut Serve, tool: &str) {
            let call = json!({"name": tool, "arguments": {}, "task": {"ttl": 60_000},
                "_meta": {"progressToken": "p1"}});
            let created = mcpx.call(1, "tools/call", call);
            let id = created["result"]["task"]["taskId"]
                .as_str()
                .unwrap()
                .to_owned();
            let mut heard = Vec::new();
            while heard.len() < 2 {
                let message = mcpx.next();
                if message["method"] == "notifications/progress" {
                    let params = &message["params"];
                    assert_eq!(params["progressToken"], "p1", "{message}");
                    // Tied to the task by the id the client knows.
                    let related = &params["_meta"]["io.modelcontextprotocol/related-task"];
                    assert_eq!(related["taskId"], id.as_str(), "{message}");
                    heard.push(params["progress"].clone());
                }
            }
            assert_eq!(heard, [json!(1), json!(2)]);
            let result = mcpx.call(2, "tasks/result", json!({"taskId": id}));
            assert_eq!(
                result["result"]["content"][0]["text"], "reported",
                "{result}"
            );
            let later = mcpx.drain(Duration::from_millis(500));
            let progress = later
                .iter()
                .filter(|m| m["method"] == "notifications/progress");
            assert_eq!(progress.count(), 0, "{later:?}");
        }

        /// A legacy session never negotiates the 2026-07-28 Tasks extension, even from a client
        /// that declares it at `initialize` (as rmcp's does): mcpx does not declare it back, and
        /// an extension server (rmcp's) answers the call plainly. Asked for a 2025-11-25 task, mcpx
        /// bridges to the server's: its question is asked on `tasks/result`.
        #[test]
        fn a_legacy_session_never_negotiates_the_tasks_extension() {
            let mut mcpx = Serve::start(&rmcp_tasks_server("rt"));
            let capabilities = json!({"elicitation": {"form": {}}, "extensions": {TASKS: {}}});
            let hello = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "1"}});
            let welcome = mcpx.call(0, "initialize", hello);
            mcpx.notify("notifications/initialized", json!({}));
            let declared = &welcome["result"]["capabilities"]["extensions"];
            assert!(declared.get(TASKS).is_none(), "{welcome}");
            assert!(
                declared.get("io.modelcontextprotocol/ui").is_some(),
                "{welcome}"
            );
            let call = json!({"name": "rt__slow", "arguments": {"ms": 10}});
            let plain = mcpx.call(1, "tools/call", call);
            assert_eq!(
                plain["result"]["content"][0]["text"], "slept 10ms",
                "{plain}"
            );
            let id = legacy_create(&mut mcpx, 2, "rt__ask", json!({}));
            mcpx.request(3, "tasks/result", json!({"taskId": id}));
            let asked = next_question(&mut mcpx);
            assert_eq!(asked["method"], "elicitation/create", "{asked}");
            let answer = json!({"action": "accept", "content": {"name": "Ann"}});
            mcpx.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
            let result = mcpx.response(3);
            assert_eq!(
                result["result"]["content"][0]["text"], "hello Ann",
                "{result}"
            );
        }

        /// A legacy client's task is its own: another session of the same daemon, given its id,
        /// finds no task.
        #[test]
        fn a_legacy_sessions_task_is_unknown_to_another_session() {
            let d = Daemon::start(&ts_tasks_server("ts"), "");
            let capabilities = json!({"elicitation": {"form": {}}});
            let owner = initialize_session(&d, "2025-11-25", capabilities.clone());
            let other = initialize_session(&d, "2025-11-25", capabilities);
            let call = request(
                1,
                "tools/call",
                json!({"name": "ts__delay", "arguments": {"ms": 100}, "task": {"ttl": 60000}}),
            );
            let created = post(&d, Some(&owner), Some("2025-11-25"), &call).json();
            let id = created["result"]["task"]["taskId"]
                .as_str()
                .unwrap()
                .to_owned();
            let get = request(2, "tasks/get", json!({"taskId": id}));
            let own = post(&d, Some(&owner), Some("2025-11-25"), &get).json();
            assert_eq!(own["result"]["taskId"], id.as_str(), "{own}");
            let foreign = post(&d, Some(&other), Some("2025-11-25"), &get).json();
            assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
            // An older revision has no tasks at all.
            let older = initialize_session(&d, "2025-06-18", json!({}));
            let old = post(&d, Some(&older), Some("2025-06-18"), &get).json();
            assert_eq!(old["error"]["code"], -32601, "{old}");
        }
    }
}
