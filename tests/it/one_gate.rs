//! One gate for every call, end to end and as an attacker tries it: each policy (`stepUp`, pins,
//! `[limits]`, the loop guard) is tried through every route a call can take to one tool (its
//! exposed name, its server's own name as an App calls it, `mcpx__call_tool` naming either) in
//! both eras; a task id and a `requestState` are presented by a caller they do not belong to;
//! and a server tries to pass its `ui://` URI off as another server's renamed one.

use crate::access::{
    call as call_with_token, challenge, daemon as daemon_for, legacy_post, Provider,
};
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

/// The profile whose door lists only the search tools, so that `mcpx__call_tool` is there.
const SEARCH_PROFILE: &str = "[profiles.found]\nsearch = true\n";

/// The four ways to call the fixture's `echo` with `arguments`: the door each goes through, and
/// its `tools/call` params.
fn routes_to_echo(arguments: Value) -> [(&'static str, Value); 4] {
    let through = |name: &str| json!({"name": "mcpx__call_tool", "arguments": {"name": name, "arguments": arguments}});
    [
        (
            "/mcp",
            json!({"name": "fixture__echo", "arguments": arguments}),
        ),
        ("/mcp", json!({"name": "echo", "arguments": arguments})),
        ("/mcp/found", through("fixture__echo")),
        ("/mcp/found", through("echo")),
    ]
}

/// A `tools/call` of `params` at `door` in both eras: a 2026-07-28 request, and one in a
/// 2025-11-25 session opened at that door; the two results.
pub(crate) fn called_in_both_eras(d: &Daemon, door: &str, id: i64, params: &Value) -> [Value; 2] {
    let modern = d.modern_to(door, id, "tools/call", params.clone()).json();
    let session = initialize_session_at(d, door, "2025-11-25", json!({}));
    let call = request(id, "tools/call", params.clone());
    let legacy = post_at(d, door, Some(&session), Some("2025-11-25"), &call).json();
    [modern["result"].clone(), legacy["result"].clone()]
}

/// `mcpx pins status` on `config`.
fn pins_status(config: &Path) -> String {
    let output = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .args(["pins", "status"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A daemon in front of the pinned fixture, which changes its definitions as `pull` says
/// (`KIND:N`, [`crate::pins`]), with the search profile's door; its pins book in `dir`.
fn pinned_daemon(dir: &Path, pull: &str) -> Daemon {
    let config = format!(
        "[pins]\nfile = {:?}\n{SEARCH_PROFILE}{}args = [\"--rug-pull\", {pull:?}]\n[servers.fixture.pin]\n{ECHO_AS_TASK}",
        dir.join("pins.json").display().to_string(),
        fixture_config(""),
    );
    let d = Daemon::start(&config, "");
    assert!(d.upstreams_ready(), "{}", d.stderr());
    d
}

/// Whether `result` is a tool result with `isError` whose text says `said`.
fn tool_error_saying(result: &Value, said: &str) -> bool {
    result["isError"] == true
        && result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains(said))
}

/// `echo` runs as a task of mcpx's whenever its caller can have one.
const ECHO_AS_TASK: &str = "[servers.fixture.tools.echo]\ntasks = \"always\"\n";

/// `fixture__echo` called as a task in both eras (a 2026-07-28 call declaring the Tasks
/// extension, a 2025-11-25 call asking for one): the two answers. A refusal of the first is a
/// tool result; of the second an error, since its client expects a task where a result would be.
fn called_as_tasks(d: &Daemon, id: i64) -> [Value; 2] {
    let echo = json!({"name": "fixture__echo", "arguments": {"text": "t"}});
    let modern = d.modern(id, "tools/call", with_tasks(echo.clone())).json();
    let session = initialize_session_at(d, "/mcp", "2025-11-25", json!({}));
    let mut asked = echo;
    asked["task"] = json!({"ttl": 60000});
    let call = request(id + 1, "tools/call", asked);
    let legacy = post_at(d, "/mcp", Some(&session), Some("2025-11-25"), &call).json();
    [modern, legacy]
}

/// Whether `answers`, of [`called_as_tasks`], are both refusals saying `said`, and no task.
fn refused_as_tasks(answers: &[Value; 2], said: &str) -> bool {
    let [modern, legacy] = answers;
    let message = legacy["error"]["message"].as_str().unwrap_or_default();
    tool_error_saying(&modern["result"], said) && message.contains(said)
}

/// A modern `tools/call`'s params declaring the Tasks extension and elicitation.
fn with_tasks(params: Value) -> Value {
    let mut params = modern(params);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}});
    params
}

mod every_revision {
    pub mod one_gate {
        use super::super::*;

        /// `stepUp` judges the tool a call reaches: by its exposed name, by its server's own
        /// name, and through `mcpx__call_tool` with either, a token without the scope gets the
        /// 403 that asks for it (before, only the exposed name was asked), and one with it is
        /// served.
        #[test]
        fn step_up_is_asked_by_every_name_and_route_a_tool_is_called_by() {
            let provider = Provider::start();
            let d = daemon_for(
                &provider,
                &format!("{SEARCH_PROFILE}[[auth.rules]]\nsubject = \"carol\"\nprofiles = [\"*\"]\nstepUp = {{ \"fixture__echo\" = \"fixture:write\" }}\n"),
            );
            for (door, params) in routes_to_echo(json!({"text": "hi"})) {
                let token = |scope: &str| {
                    provider.signed("ES256", "ec", &provider.claims("carol", door, scope))
                };
                let refused =
                    call_with_token(&d, door, Some(&token("mcp")), "tools/call", params.clone());
                let said = String::from_utf8_lossy(&refused.body).into_owned();
                assert_eq!(refused.status, 403, "{door} {params}: {said}");
                let asked = challenge(&refused);
                assert_eq!(asked["error"], "insufficient_scope", "{params}");
                assert_eq!(asked["scope"], "mcp fixture:write", "{params}");
                let wider = token("mcp fixture:write");
                let served = call_with_token(&d, door, Some(&wider), "tools/call", params.clone());
                assert_eq!(served.status, 200, "{params}");
                let text = &served.json()["result"]["content"][0]["text"];
                assert_eq!(text, "hi", "{params}");
            }
            // The same in a 2025-11-25 session at `/mcp`, by both names.
            let narrow = provider.good("carol");
            let initialize = request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25",
                "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            );
            let opened = legacy_post(&d, &narrow, None, &initialize);
            let session = opened.header("mcp-session-id").unwrap().to_owned();
            for (id, (_, params)) in routes_to_echo(json!({"text": "hi"}))[..2]
                .iter()
                .enumerate()
            {
                let call = request(id as i64 + 1, "tools/call", params.clone());
                let refused = legacy_post(&d, &narrow, Some(&session), &call);
                assert_eq!(refused.status, 403, "{params}");
                assert_eq!(challenge(&refused)["scope"], "mcp fixture:write");
            }
        }

        /// A pinned tool whose definition changed is refused by every route and in both eras
        /// (before, its server's own name and `mcpx__call_tool` ran the changed tool).
        #[test]
        fn a_changed_pinned_tool_is_refused_by_every_route_in_both_eras() {
            let dir = tempfile::tempdir().unwrap();
            let d = pinned_daemon(dir.path(), "description:1");
            let first = d.modern(
                1,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "a"}}),
            );
            assert_eq!(first.json()["result"]["isError"], false);
            assert!(
                eventually(|| pins_status(d.config_path()).contains("changed")),
                "{}",
                d.stderr()
            );
            let said = "mcpx pins approve fixture tool:echo";
            for (n, (door, params)) in routes_to_echo(json!({"text": "b"})).into_iter().enumerate()
            {
                for result in called_in_both_eras(&d, door, 10 + n as i64, &params) {
                    assert!(tool_error_saying(&result, said), "{params}: {result}");
                }
            }
            // As a task, too: refused before any task is made.
            let answers = called_as_tasks(&d, 20);
            assert!(refused_as_tasks(&answers, said), "{answers:?}");
        }

        /// A pinned prompt whose definition changed is refused by `prompts/get` in both eras,
        /// and by a completion of its arguments.
        #[test]
        fn a_changed_pinned_prompt_is_refused_in_both_eras_and_completions() {
            let dir = tempfile::tempdir().unwrap();
            let d = pinned_daemon(dir.path(), "prompt:1");
            let get = json!({"name": "fixture__greet", "arguments": {"who": "Ada"}});
            let before = d.modern(1, "prompts/get", get.clone()).json();
            assert!(before["result"]["messages"].is_array(), "{before}");
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "a"}});
            d.modern(2, "tools/call", echo);
            assert!(
                eventually(|| pins_status(d.config_path()).contains("prompt:greet")),
                "{}",
                d.stderr()
            );
            let said = "mcpx pins approve fixture prompt:greet";
            let modern = d.modern(3, "prompts/get", get.clone()).json();
            let message = modern["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{modern}");
            let session = initialize_session_at(&d, "/mcp", "2025-11-25", json!({}));
            let legacy_get = request(4, "prompts/get", get);
            let legacy =
                post_at(&d, "/mcp", Some(&session), Some("2025-11-25"), &legacy_get).json();
            let message = legacy["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{legacy}");
            let complete = json!({"ref": {"type": "ref/prompt", "name": "fixture__greet"},
                "argument": {"name": "who", "value": "A"}});
            let completion = d.modern(5, "completion/complete", complete).json();
            let message = completion["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{completion}");
        }

        /// A resource template whose definition changed serves no read of a URI it matches,
        /// nor a completion of it, until it is approved (before, reads reached the server).
        #[test]
        fn a_changed_pinned_template_serves_no_read_and_no_completion() {
            let dir = tempfile::tempdir().unwrap();
            let d = pinned_daemon(dir.path(), "template:1");
            let read = json!({"uri": "fixture://items/7"});
            let before = d.modern(1, "resources/read", read.clone()).json();
            assert!(before["result"]["contents"].is_array(), "{before}");
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "a"}});
            assert_eq!(
                d.modern(2, "tools/call", echo).json()["result"]["isError"],
                false
            );
            assert!(
                eventually(
                    || pins_status(d.config_path()).contains("template:fixture://items/{id}")
                ),
                "{}",
                d.stderr()
            );
            let said = "mcpx pins approve fixture template:fixture://items/{id}";
            let refused = d.modern(3, "resources/read", read.clone()).json();
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{refused}");
            let session = initialize_session_at(&d, "/mcp", "2025-11-25", json!({}));
            let legacy_read = request(4, "resources/read", read);
            let legacy =
                post_at(&d, "/mcp", Some(&session), Some("2025-11-25"), &legacy_read).json();
            let message = legacy["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{legacy}");
            let complete = json!({"ref": {"type": "ref/resource", "uri": "fixture://items/{id}"},
                "argument": {"name": "id", "value": "7"}});
            let completion = d.modern(5, "completion/complete", complete).json();
            let message = completion["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(said), "{completion}");
        }

        /// A rate on `fixture__*` is one budget for every route to its tools: the third call is
        /// refused whichever name or route it takes, in both eras (before, the own name and
        /// `mcpx__call_tool` were never counted).
        #[test]
        fn a_tool_rate_counts_every_route_to_the_tool_as_one_budget() {
            let d = Daemon::start(
                &fixture_config(&format!(
                    "{SEARCH_PROFILE}{ECHO_AS_TASK}[limits.tools.\"fixture__*\"]\ncalls = \"2/hour\"\n"
                )),
                "",
            );
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let routes = routes_to_echo(json!({"text": "x"}));
            for (id, (door, params)) in routes[..2].iter().enumerate() {
                let served = d
                    .modern_to(door, id as i64, "tools/call", params.clone())
                    .json();
                assert_eq!(served["result"]["isError"], false, "{served}");
            }
            for (n, (door, params)) in routes.iter().enumerate() {
                for result in called_in_both_eras(&d, door, 10 + n as i64, params) {
                    assert!(
                        tool_error_saying(&result, "limits.tools"),
                        "{params}: {result}"
                    );
                }
            }
            let answers = called_as_tasks(&d, 20);
            assert!(refused_as_tasks(&answers, "limits.tools"), "{answers:?}");
        }

        /// The loop guard compares arguments in RFC 8785's canonical form: `0`, `0.0`, `0e0`
        /// and `-0` are one call, the third of which is refused (before, four different calls).
        #[test]
        fn the_loop_guard_counts_every_spelling_of_one_number_as_one_call() {
            let d = Daemon::start(
                &fixture_config("[limits.loopGuard]\nidentical = 2\nwindow = \"1h\"\n"),
                "",
            );
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let spellings = ["0", "0.0", "0e0", "-0"];
            let results: Vec<Value> = spellings
                .iter()
                .enumerate()
                .map(|(id, zero)| {
                    let params = json!({"name": "fixture__echo", "arguments": {"text": "z", "seconds": "ZERO"}});
                    let (headers, body) = modern_request(id as i64, "tools/call", params);
                    let body = body.to_string().replace("\"ZERO\"", zero);
                    d.post_to("/mcp", &header_refs(&headers), body.as_bytes()).json()["result"].clone()
                })
                .collect();
            assert_eq!(results[0]["isError"], false, "{results:?}");
            assert_eq!(results[1]["isError"], false, "{results:?}");
            for refused in &results[2..] {
                assert!(
                    tool_error_saying(refused, "limits.loopGuard"),
                    "{results:?}"
                );
            }
        }
    }
}

mod v2026_07_28 {
    pub mod one_gate {
        use super::super::*;

        /// A daemon taking the provider's tokens, whose fixture's calls become mcpx's tasks
        /// at once, one per caller at a door.
        fn tasks_daemon(provider: &Provider) -> Daemon {
            daemon_for(
                provider,
                "[servers.fixture.tools.sleep]\ntasks = \"always\"\n[tasks]\nmaxPerClient = 1\n",
            )
        }

        /// Alice's task is hers: Bob polling, cancelling or updating it by its id gets what an
        /// id nobody made gets, learns nothing of it, and it goes on; Bob's own first task is
        /// not refused by the cap Alice's task filled (before, Bob read Alice's task and was
        /// refused his first).
        #[test]
        fn a_task_answers_only_the_caller_who_made_it_and_the_cap_is_per_caller() {
            let provider = Provider::start();
            let d = tasks_daemon(&provider);
            let (alice, bob) = (provider.good("alice"), provider.good("bob"));
            let sleep = with_tasks(json!({"name": "fixture__sleep", "arguments": {"ms": 60000}}));
            let created =
                call_with_token(&d, "/mcp", Some(&alice), "tools/call", sleep.clone()).json();
            assert_eq!(created["result"]["resultType"], "task", "{created}");
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let asked = |token: &str, method: &str, params: Value| {
                call_with_token(&d, "/mcp", Some(token), method, with_tasks(params)).json()
            };
            let nobodys = asked(&bob, "tasks/get", json!({"taskId": "mcpxt1.nobody"}));
            for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
                let refused = asked(&bob, method, json!({"taskId": id, "inputResponses": {}}));
                assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
                assert!(refused.get("result").is_none(), "{refused}");
                let message = refused["error"]["message"].as_str().unwrap();
                assert!(message.starts_with("Unknown task"), "{refused}");
                assert_eq!(nobodys["error"]["code"], refused["error"]["code"]);
            }
            let hers = asked(&alice, "tasks/get", json!({"taskId": id}));
            assert_eq!(hers["result"]["status"], "working", "{hers}");
            let capped =
                call_with_token(&d, "/mcp", Some(&alice), "tools/call", sleep.clone()).json();
            let message = capped["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("tasks.maxPerClient"), "{capped}");
            let bobs = call_with_token(&d, "/mcp", Some(&bob), "tools/call", sleep).json();
            assert_eq!(bobs["result"]["resultType"], "task", "{bobs}");
        }

        /// Every line of the audit log names whose it is: a call's, and a task's when it is made
        /// and when it ends, long after the request that made it (before, a task's lines named
        /// nobody).
        #[test]
        fn every_audit_line_names_its_caller() {
            let provider = Provider::start();
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let d = daemon_for(
                &provider,
                &format!(
                    "[audit]\npath = {:?}\n[servers.fixture.tools.sleep]\ntasks = \"always\"\n",
                    audit.display().to_string()
                ),
            );
            let alice = provider.good("alice");
            let sleep = with_tasks(json!({"name": "fixture__sleep", "arguments": {"ms": 10}}));
            let created = call_with_token(&d, "/mcp", Some(&alice), "tools/call", sleep).json();
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let polled = || {
                let get = with_tasks(json!({"taskId": id}));
                call_with_token(&d, "/mcp", Some(&alice), "tasks/get", get).json()
            };
            assert!(eventually(|| polled()["result"]["status"] == "completed"));
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "hi"}});
            call_with_token(&d, "/mcp", Some(&alice), "tools/call", modern(echo));
            let lines = || std::fs::read_to_string(&audit).unwrap_or_default();
            let outcomes = ["\"created\"", "\"completed\"", "fixture__echo"];
            assert!(
                eventually(|| outcomes.iter().all(|o| lines().contains(o))),
                "{}",
                lines()
            );
            for line in lines().lines() {
                let entry: Value = serde_json::from_str(line).unwrap();
                assert_eq!(entry["caller"]["sub"], "alice", "{line}");
            }
        }

        /// Alice's call waits on her answer under a `requestState`: Bob's retry carrying it
        /// answers nothing and gets nothing of hers, and Alice's own retry still resumes her
        /// call (before, Bob's answer reached her call and he received its result).
        #[test]
        fn a_request_state_resumes_only_the_callers_own_call() {
            let provider = Provider::start();
            let d = tasks_daemon(&provider);
            let (alice, bob) = (provider.good("alice"), provider.good("bob"));
            let ask = modern(json!({"name": "fixture__ask", "arguments": {},
                "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}));
            let first = call_with_token(&d, "/mcp", Some(&alice), "tools/call", ask.clone()).json();
            let state = first["result"]["requestState"].as_str().unwrap().to_owned();
            let key = first["result"]["inputRequests"]
                .as_object()
                .and_then(|requests| requests.keys().next().cloned())
                .unwrap();
            let retry = |name: &str| {
                let mut retry = ask.clone();
                retry["requestState"] = json!(state);
                retry["inputResponses"] =
                    json!({key.as_str(): {"action": "accept", "content": {"name": name}}});
                retry
            };
            let bobs = call_with_token(&d, "/mcp", Some(&bob), "tools/call", retry("Bob")).json();
            assert_eq!(bobs["error"]["code"], -32602, "{bobs}");
            assert!(bobs.get("result").is_none(), "{bobs}");
            let hers =
                call_with_token(&d, "/mcp", Some(&alice), "tools/call", retry("Alice")).json();
            assert_eq!(
                hers["result"]["content"][0]["text"], "accept: Alice",
                "{hers}"
            );
        }

        /// A daemon with app servers: `zeta` and `beta` share `ui://widget/view.html` (so
        /// zeta's is shown as `ui://zeta/widget/view.html`), and `impostor` also serves a
        /// `ui://zeta/widget/view.html` of its own; `[profiles.z]` is zeta's alone.
        fn app_daemon(impostor: &str) -> Daemon {
            let (python, script) = (
                deps::python(),
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/sdk/fastmcp_app_server.py"
                ),
            );
            let server = |name: &str, extra: &str| {
                format!("[servers.{name}]\ncommand = {python:?}\nargs = [{script:?}, \"{name}\"{extra}]\n")
            };
            let config = server("zeta", "")
                + &server("beta", "")
                + &server(impostor, ", \"ui://zeta/widget/view.html\"")
                + "[profiles.z]\nservers = [\"zeta\"]\n";
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            d
        }

        /// The text a read of `uri` at `door` answers.
        fn read(d: &Daemon, door: &str, uri: &str) -> String {
            let read = d
                .modern_to(door, 1, "resources/read", json!({"uri": uri}))
                .json();
            let text = read["result"]["contents"][0]["text"].as_str();
            text.map_or_else(|| read.to_string(), str::to_owned)
        }

        /// Runs `mcpx reload` on `d`'s configuration file with `old` replaced by `new`.
        fn reload_with(d: &Daemon, old: &str, new: &str) {
            let text = std::fs::read_to_string(d.config_path()).unwrap();
            assert!(text.contains(old), "{text}");
            std::fs::write(d.config_path(), text.replace(old, new)).unwrap();
            let out = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(d.config_path())
                .arg("reload")
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{said}");
        }

        /// A server that a reload makes claim zeta's renamed URI, sorting before zeta or after
        /// it, takes nothing of zeta's: `ui://zeta/…` stays zeta's in the whole catalog and in
        /// zeta's own profile, and the impostor's own URI reads, renamed, in its own profile.
        #[test]
        fn a_server_changed_by_a_reload_cannot_take_anothers_app() {
            let (python, script) = (
                deps::python(),
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/sdk/fastmcp_app_server.py"
                ),
            );
            let server = |name: &str, extra: &str| {
                format!("[servers.{name}]\ncommand = {python:?}\nargs = [{script:?}, \"{name}\"{extra}]\n")
            };
            for impostor in ["alpha", "omega"] {
                // Profiles are read at start (a reload applies `[servers]`).
                let profiles = format!("[profiles.z]\nservers = [\"zeta\"]\n[profiles.i]\nservers = [\"{impostor}\"]\n");
                let honest = server(impostor, "");
                let config = server("zeta", "") + &server("beta", "") + &honest + &profiles;
                let d = Daemon::start(&config, "");
                assert!(d.upstreams_ready(), "{}", d.stderr());
                let zetas = "ui://zeta/widget/view.html";
                assert!(read(&d, "/mcp", zetas).contains("widget of server zeta"));
                let claiming = server(impostor, ", \"ui://zeta/widget/view.html\"");
                reload_with(&d, &honest, &claiming);
                assert!(d.upstreams_ready(), "{}", d.stderr());
                for door in ["/mcp", "/mcp/z"] {
                    let html = read(&d, door, zetas);
                    assert!(
                        html.contains("widget of server zeta"),
                        "{impostor} {door}: {html}"
                    );
                }
                let own = format!("ui://{impostor}/zeta/widget/view.html");
                for door in ["/mcp", "/mcp/i"] {
                    let html = read(&d, door, &own);
                    assert!(
                        html.contains(&format!("served by {impostor}")),
                        "{door} {own}: {html}"
                    );
                }
            }
        }

        /// A task's result passed through from the server that runs it leaves by the door
        /// every result of that server does: the `ui://` URI it shares with another server is
        /// shown renamed in it, inline in `tasks/get` (before, a passed-through task's result
        /// kept the server's own URI, which the catalog routes to another server).
        #[test]
        fn a_passed_through_task_result_shows_its_servers_uris_renamed() {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk");
            let python = deps::python();
            let config = format!(
                "[servers.tasks]\ncommand = {python:?}\nargs = [\"{dir}/fastmcp_tasks_server.py\", \"--widget\"]\n[servers.zeta]\ncommand = {python:?}\nargs = [\"{dir}/fastmcp_app_server.py\", \"zeta\"]\n"
            );
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let call = with_tasks(json!({"name": "tasks__link_widget", "arguments": {}}));
            let created = d.modern(1, "tools/call", call).json();
            assert_eq!(created["result"]["resultType"], "task", "{created}");
            let id = created["result"]["taskId"].as_str().unwrap().to_owned();
            let polled = || {
                d.modern(2, "tasks/get", with_tasks(json!({"taskId": id})))
                    .json()
            };
            assert!(eventually(|| polled()["result"]["status"] == "completed"));
            let done = polled();
            let link = &done["result"]["result"]["content"][0];
            assert_eq!(link["uri"], "ui://tasks/widget/view.html", "{done}");
            let html = read(&d, "/mcp", "ui://tasks/widget/view.html");
            assert!(html.contains("widget of the tasks server"), "{html}");
        }

        /// `stepUp` asks for its scope of a call that would become a task, before any task is
        /// made, and a caller holding the scope gets the task.
        #[test]
        fn step_up_is_asked_before_a_task_is_made() {
            let provider = Provider::start();
            let d = daemon_for(
                &provider,
                "[servers.fixture.tools.sleep]\ntasks = \"always\"\n[[auth.rules]]\nsubject = \"carol\"\nprofiles = [\"*\"]\nstepUp = { \"fixture__sleep\" = \"fixture:write\" }\n",
            );
            let sleep = with_tasks(json!({"name": "fixture__sleep", "arguments": {"ms": 60000}}));
            let token = |scope: &str| {
                provider.signed("ES256", "ec", &provider.claims("carol", "/mcp", scope))
            };
            let refused =
                call_with_token(&d, "/mcp", Some(&token("mcp")), "tools/call", sleep.clone());
            assert_eq!(refused.status, 403);
            assert_eq!(challenge(&refused)["scope"], "mcp fixture:write");
            let status = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(d.config_path())
                .args(["status", "--json"])
                .output()
                .unwrap();
            let status: Value = serde_json::from_slice(&status.stdout).unwrap();
            assert_eq!(status["tasks"], json!([]), "no task was made: {status}");
            let wider = token("mcp fixture:write");
            let created = call_with_token(&d, "/mcp", Some(&wider), "tools/call", sleep).json();
            assert_eq!(created["result"]["resultType"], "task", "{created}");
        }

        /// A server cannot pass its `ui://` URI off as another's renamed one, whether it is
        /// listed before that server or after it: `ui://zeta/…` is zeta's, in the whole
        /// catalog and in zeta's own profile, and the impostor's URI is shown renamed as its
        /// own (before, the server listed first served its HTML as zeta's App, and zeta's own
        /// profile found no such URI).
        #[test]
        fn a_renamed_ui_uri_is_only_ever_its_own_servers() {
            for impostor in ["alpha", "omega"] {
                let d = app_daemon(impostor);
                let zetas = "ui://zeta/widget/view.html";
                for door in ["/mcp", "/mcp/z"] {
                    let html = read(&d, door, zetas);
                    assert!(
                        html.contains("widget of server zeta"),
                        "{impostor} {door}: {html}"
                    );
                }
                let own = format!("ui://{impostor}/zeta/widget/view.html");
                let html = read(&d, "/mcp", &own);
                assert!(
                    html.contains(&format!("served by {impostor}")),
                    "{own}: {html}"
                );
            }
        }
    }
}
