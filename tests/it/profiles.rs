//! Profiles, overrides and tool search, end to end against the real binary: each client sees and
//! can use only its profile's servers and names, through both doors (`mcpx serve --profile`, the
//! daemon's `/mcp/NAME`) and in both eras; a renamed tool keeps its `x-mcp-header` parameters;
//! `list_changed` reaches only the profiles whose view changed; a search profile works from a
//! real SDK client.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// Three upstreams (the fixture with overrides, `mcp-server-time`, a second fixture) and three
/// profiles over them.
fn config() -> String {
    let fixture = fixture_bin();
    format!(
        r#"
[servers.fixture]
command = {fixture:?}
[servers.fixture.tools.echo]
name = "say"
description = "Says its text back."
readOnlyHint = true
[servers.fixture.tools.fail]
disabled = true

[servers.time]
command = {time:?}

[servers.gen]
command = {fixture:?}
args = ["--tools", "3"]

[profiles.coding]
servers = ["fixture", "time"]
exclude = ["fixture__crash", "fixture__flood"]

[profiles.clock]
servers = ["time"]
include = ["time__get_*"]

[profiles.search]
servers = ["fixture", "time"]
search = true
"#,
        time = deps::mcp_server_time()
    )
}

/// Asks one request (method, params) and gives its response.
type Ask<'a> = &'a mut dyn FnMut(&str, Value) -> Value;

/// The checks one profile's client must pass, at a revision.
type Check = fn(&str, Ask<'_>);

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools list: {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// What the `clock` profile's client sees and may do, asked through `ask` (method, params →
/// response) in `revision`: `mcp-server-time`'s one `get_*` tool, and nothing of the fixture's on
/// any method.
fn clock_sees_only_its_tool(revision: &str, ask: Ask<'_>) {
    let modern = revision == "2026-07-28";
    let list = ask("tools/list", json!({}));
    assert_result(revision, "tools/list", &list);
    assert_eq!(names(&list), ["time__get_current_time"], "{revision}");
    let call = ask(
        "tools/call",
        json!({"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}),
    );
    assert_result(revision, "tools/call", &call);
    assert!(call["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("UTC"));
    let unknown = |response: &Value, code: i64| {
        assert_eq!(response["error"]["code"], code, "{revision}: {response}");
    };
    let excluded = ask(
        "tools/call",
        json!({"name": "time__convert_time", "arguments": {}}),
    );
    unknown(&excluded, -32602);
    assert!(excluded["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unknown tool"));
    unknown(
        &ask(
            "tools/call",
            json!({"name": "fixture__say", "arguments": {"text": "x"}}),
        ),
        -32602,
    );
    let prompts = ask("prompts/list", json!({}));
    assert_eq!(prompts["result"]["prompts"], json!([]), "{prompts}");
    unknown(
        &ask(
            "prompts/get",
            json!({"name": "fixture__greet", "arguments": {"who": "a"}}),
        ),
        -32602,
    );
    let not_found = if modern { -32602 } else { -32002 };
    unknown(
        &ask("resources/read", json!({"uri": "fixture://hello"})),
        not_found,
    );
    let resources = ask("resources/list", json!({}));
    assert_eq!(resources["result"]["resources"], json!([]), "{resources}");
    unknown(
        &ask(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "fixture__greet"}, "argument": {"name": "who", "value": ""}}),
        ),
        -32602,
    );
    if !modern {
        unknown(
            &ask("resources/subscribe", json!({"uri": "fixture://hello"})),
            not_found,
        );
    }
}

/// What the `coding` profile's client sees: the fixture under its overrides and both time tools;
/// not the second fixture, not mcpx's own tools, not what it excludes or the override disables.
fn coding_sees_its_servers_under_overrides(revision: &str, ask: Ask<'_>) {
    let list = ask("tools/list", json!({}));
    assert_result(revision, "tools/list", &list);
    let seen = names(&list);
    for expected in ["fixture__say", "fixture__sleep", "time__convert_time"] {
        assert!(seen.iter().any(|n| n == expected), "{expected} in {seen:?}");
    }
    for hidden in [
        "fixture__echo",
        "fixture__fail",
        "fixture__crash",
        "gen__gen000",
        "mcpx__upstreams",
    ] {
        assert!(!seen.iter().any(|n| n == hidden), "{hidden} in {seen:?}");
    }
    let say = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fixture__say")
        .unwrap();
    assert_eq!(say["description"], "Says its text back.");
    assert_eq!(say["annotations"]["readOnlyHint"], true);
    assert_eq!(
        say["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region",
        "the input schema is passed on verbatim"
    );
    // The fixture knows no `say`: the answer proves it was asked for `echo`.
    let call = ask(
        "tools/call",
        json!({"name": "fixture__say", "arguments": {"text": "renamed"}}),
    );
    assert_eq!(call["result"]["content"][0]["text"], "renamed", "{call}");
    let disabled = ask(
        "tools/call",
        json!({"name": "fixture__fail", "arguments": {}}),
    );
    assert_eq!(disabled["error"]["code"], -32602, "{disabled}");
    let read = ask("resources/read", json!({"uri": "fixture://hello"}));
    assert_result(revision, "resources/read", &read);
}

/// `mcpx serve --profile NAME`, spoken to in a legacy revision and (on the same process) in
/// 2026-07-28.
fn through_stdio(config_file: &std::path::Path, profile: &str, check: Check) {
    let mut mcpx = Serve::spawn(config_file, &["--standalone", "--profile", profile]);
    mcpx.initialize("2025-11-25");
    let mut id = 0;
    check("2025-11-25", &mut |method, params| {
        id += 1;
        mcpx.call(id, method, params)
    });
    check("2026-07-28", &mut |method, params| {
        id += 1;
        mcpx.call(id, method, modern(params))
    });
}

/// The daemon's `/mcp/NAME`, in a legacy session and in 2026-07-28.
fn through_http(daemon: &Daemon, profile: &str, check: Check) {
    let path = format!("/mcp/{profile}");
    let session = initialize_session_at(daemon, &path, "2025-11-25", json!({}));
    let mut id = 0;
    check("2025-11-25", &mut |method, params| {
        id += 1;
        post_at(
            daemon,
            &path,
            Some(&session),
            Some("2025-11-25"),
            &request(id, method, params),
        )
        .json()
    });
    check("2026-07-28", &mut |method, params| {
        id += 1;
        daemon.modern_to(&path, id, method, params).json()
    });
}

mod every_revision {
    pub mod profiles {
        use super::super::*;

        #[test]
        fn a_profile_sees_and_uses_only_its_servers_and_names_over_stdio() {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("config.toml");
            // The `clock` profile cannot see `mcpx__upstreams` to wait on: its first list
            // waits for every server instead (this test is about views, not a slow start).
            let waits = format!("{WAIT_FOR_ALL}{}", config());
            std::fs::write(&file, waits).unwrap();
            through_stdio(&file, "clock", clock_sees_only_its_tool);
            through_stdio(&file, "coding", coding_sees_its_servers_under_overrides);
        }

        #[test]
        fn a_profile_sees_and_uses_only_its_servers_and_names_over_http() {
            let daemon = Daemon::start(&config(), "");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            through_http(&daemon, "clock", clock_sees_only_its_tool);
            through_http(&daemon, "coding", coding_sees_its_servers_under_overrides);
            // `/mcp` still serves everything.
            let all = names(&daemon.modern(1, "tools/list", json!({})).json());
            for name in [
                "gen__gen000",
                "fixture__say",
                "mcpx__upstreams",
                "time__convert_time",
            ] {
                assert!(all.iter().any(|n| n == name), "{name} in {all:?}");
            }
        }

        #[test]
        fn an_unknown_profile_is_404_naming_the_known_ones() {
            let daemon = Daemon::start(&config(), "");
            let reply = daemon.modern_to("/mcp/nope", 1, "tools/list", json!({}));
            assert_eq!(reply.status, 404);
            let message = reply.json()["error"]["message"]
                .as_str()
                .unwrap()
                .to_owned();
            for known in ["clock", "coding", "search"] {
                assert!(message.contains(known), "{message}");
            }
            let legacy = post_at(
                &daemon,
                "/mcp/nope",
                None,
                None,
                &request(
                    1,
                    "initialize",
                    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
                ),
            );
            assert_eq!(legacy.status, 404);
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("config.toml");
            std::fs::write(&file, config()).unwrap();
            let out = std::process::Command::new(mcpx_bin())
                .args([
                    "--config",
                    file.to_str().unwrap(),
                    "serve",
                    "--standalone",
                    "--profile",
                    "nope",
                ])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(!out.status.success());
            assert!(out.stdout.is_empty(), "stdout carries only MCP frames");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("\"nope\"") && stderr.contains("clock, coding, search"),
                "{stderr}"
            );
        }

        /// A legacy session belongs to the door that minted it: under another profile's path it
        /// is unknown (404), so a client cannot step out of its profile with its session id.
        #[test]
        fn a_session_is_unknown_at_another_profiles_door() {
            let daemon = Daemon::start(&config(), "");
            let session = initialize_session_at(&daemon, "/mcp/clock", "2025-11-25", json!({}));
            let list = request(1, "tools/list", json!({}));
            let elsewhere = post_at(
                &daemon,
                "/mcp/coding",
                Some(&session),
                Some("2025-11-25"),
                &list,
            );
            assert_eq!(elsewhere.status, 404);
            let everything = post_at(&daemon, "/mcp", Some(&session), Some("2025-11-25"), &list);
            assert_eq!(everything.status, 404);
            let home = post_at(
                &daemon,
                "/mcp/clock",
                Some(&session),
                Some("2025-11-25"),
                &list,
            );
            assert_eq!(home.status, 200);
        }

        /// The fixture adds a tool: the `coding` profile (which sees the fixture) and the
        /// unprofiled client hear `tools/list_changed`; the `clock` profile, whose view did not
        /// change, hears nothing. Each is an editor attached to one daemon.
        #[test]
        fn list_changed_reaches_only_the_profiles_whose_view_changed() {
            let daemon = Daemon::start(&config(), "");
            // A server's first start is a change of every view that holds it.
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let door = daemon.local_socket();
            assert!(eventually(|| std::os::unix::net::UnixStream::connect(
                &door
            )
            .is_ok()));
            let editor = |profile: Option<&str>| {
                let mut options = vec!["--attach"];
                options.extend(profile.map(|p| ["--profile", p]).into_iter().flatten());
                let mut serve = Serve::spawn(daemon.config_path(), &options);
                serve.initialize("2025-11-25");
                serve
            };
            let (mut coding, mut clock, mut everything) =
                (editor(Some("coding")), editor(Some("clock")), editor(None));
            let added = coding.call(
                1,
                "tools/call",
                json!({"name": "fixture__add_tool", "arguments": {}}),
            );
            assert_eq!(added["result"]["isError"], false, "{added}");
            let heard = |serve: &mut Serve| {
                serve
                    .drain(Duration::from_secs(2))
                    .iter()
                    .any(|m| m["method"] == "notifications/tools/list_changed")
            };
            assert!(heard(&mut coding), "coding's view changed");
            assert!(heard(&mut everything), "the whole catalog changed");
            assert!(!heard(&mut clock), "clock's view did not change");
            let list = coding.call(2, "tools/list", json!({}));
            assert!(names(&list).iter().any(|n| n == "fixture__extra"));
        }

        /// The built-in tools answer through the caller's view: a profile's client is told of
        /// its own servers and profile only, and `mcpx__login` of a server outside its view is
        /// answered exactly as for a name no server has (it could otherwise bind a shared server
        /// to its own account, and learn the state of servers it does not see).
        #[test]
        fn a_profiles_client_sees_and_logs_in_to_only_its_own_servers() {
            let config = format!(
                "[servers.fixture]\ncommand = {:?}\n[servers.remote]\nurl = \"http://127.0.0.1:1/mcp\"\n\
                 [profiles.narrow]\nservers = [\"fixture\", \"mcpx\"]\n[profiles.other]\nservers = [\"remote\", \"mcpx\"]\n",
                fixture_bin()
            );
            let daemon = Daemon::start(&config, "");
            let call = |path: &str, id, name: &str, arguments: Value| {
                daemon
                    .modern_to(
                        path,
                        id,
                        "tools/call",
                        json!({"name": name, "arguments": arguments}),
                    )
                    .json()
            };
            let unknown = call("/mcp/narrow", 1, "mcpx__login", json!({"server": "nope"}));
            let outside = call("/mcp/narrow", 2, "mcpx__login", json!({"server": "remote"}));
            assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
            assert_eq!(
                outside["error"]["code"], unknown["error"]["code"],
                "{outside}"
            );
            assert_eq!(
                outside["error"]["message"],
                json!(unknown["error"]["message"]
                    .as_str()
                    .unwrap()
                    .replace("nope", "remote")),
                "{outside}"
            );
            let inside = call("/mcp/other", 3, "mcpx__login", json!({"server": "remote"}));
            assert!(inside.get("result").is_some(), "{inside}");
            let report = call("/mcp/narrow", 4, "mcpx__upstreams", json!({}));
            let seen = &report["result"]["structuredContent"];
            let listed = |key: &str| -> Vec<String> {
                seen[key]
                    .as_array()
                    .unwrap_or_else(|| panic!("{report}"))
                    .iter()
                    .map(|u| u["name"].as_str().unwrap().to_owned())
                    .collect()
            };
            assert!(
                !listed("upstreams").contains(&"remote".to_owned()),
                "{report}"
            );
            assert!(
                listed("upstreams").contains(&"fixture".to_owned()),
                "{report}"
            );
            assert_eq!(listed("profiles"), ["narrow"], "{report}");
            let everything = call("/mcp", 5, "mcpx__upstreams", json!({}));
            assert_eq!(
                everything["result"]["structuredContent"]["profiles"]
                    .as_array()
                    .map(Vec::len),
                Some(2),
                "{everything}"
            );
        }

        /// Profiles and each session's profile show in `mcpx__upstreams` and `mcpx status`.
        #[test]
        fn profiles_show_in_the_builtin_report_and_status() {
            let daemon = Daemon::start(&config(), "");
            let _session = initialize_session_at(&daemon, "/mcp/clock", "2025-11-25", json!({}));
            let report = daemon
                .modern(
                    1,
                    "tools/call",
                    json!({"name": "mcpx__upstreams", "arguments": {}}),
                )
                .json();
            let profiles = &report["result"]["structuredContent"]["profiles"];
            let clock = profiles
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "clock")
                .unwrap_or_else(|| panic!("{report}"));
            assert_eq!(clock["tools"], 1);
            // The legacy session; the one client that stands for modern callers at its door
            // counts once one of them came (none has yet).
            assert_eq!(clock["sessions"], 1);
            let search = profiles
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "search")
                .unwrap();
            assert_eq!(search["listedTools"], 2);
            let text = std::fs::read_to_string(daemon.config_path()).unwrap();
            let admin = mcpx::config::Config::parse(&text).unwrap().admin.socket;
            let status = std::process::Command::new(mcpx_bin())
                .args(["status", "--socket", admin.to_str().unwrap()])
                .output()
                .unwrap();
            let status = String::from_utf8_lossy(&status.stdout);
            assert!(status.contains("profiles (3):"), "{status}");
            assert!(status.contains("profile clock"), "{status}");
        }

        /// A real SDK client (the Python SDK v2) on a search profile, over stdio in a legacy
        /// revision and over HTTP in 2026-07-28: it sees two tools, finds a tool by a description
        /// of the task (with its full schema), calls through `mcpx__call_tool` with progress
        /// passing through, and its cancellation reaches the upstream.
        #[test]
        fn a_search_profile_finds_and_calls_tools_from_a_real_sdk_client() {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("config.toml");
            std::fs::write(&file, config()).unwrap();
            let daemon = Daemon::start(&config(), "");
            let script = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/sdk/python_search_client.py"
            );
            let doors: [(&str, Vec<String>); 2] = [
                (
                    "2025-11-25",
                    vec![
                        "stdio".into(),
                        mcpx_bin().display().to_string(),
                        file.display().to_string(),
                        "search".into(),
                    ],
                ),
                (
                    "2026-07-28",
                    vec!["http".into(), format!("http://{}/mcp/search", daemon.addr)],
                ),
            ];
            for (revision, door) in doors {
                let out = std::process::Command::new(deps::python())
                    .arg(script)
                    .arg(revision)
                    .args(&door)
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "{revision}: {stderr}");
                let report: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(
                    report["listed"],
                    json!(["mcpx__call_tool", "mcpx__search_tools"]),
                    "{report}"
                );
                assert_eq!(report["found"][0], "fixture__progress", "{report}");
                assert_eq!(
                    report["found_schema"]["properties"]["steps"]["type"], "integer",
                    "{report}"
                );
                assert_eq!(report["called"], json!(["searched"]), "{report}");
                assert_eq!(report["progress"], 2, "{report}");
                assert_eq!(report["cancelled"], true, "{report}");
                let saw_cancel = match door[0].as_str() {
                    "http" => daemon.log_shows("fixture: cancelled request"),
                    _ => stderr.contains("fixture: cancelled request"),
                };
                assert!(
                    saw_cancel,
                    "{revision}: the upstream never saw the cancellation"
                );
            }
        }
    }
}

/// `mcpx serve --profile search` declaring elicitation, in `revision`.
fn search_editor(revision: &str) -> (tempfile::TempDir, Serve) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, config()).unwrap();
    let mut mcpx = Serve::spawn(&file, &["--standalone", "--profile", "search"]);
    mcpx.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    mcpx.response(0);
    mcpx.notify("notifications/initialized", json!({}));
    (dir, mcpx)
}

/// `mcpx__call_tool`'s params for the fixture's `ask` tool.
fn call_ask() -> Value {
    json!({"name": "mcpx__call_tool", "arguments": {"name": "fixture__ask", "arguments": {}}})
}

mod v2025_11_25 {
    pub mod profiles {
        use super::super::*;

        /// An upstream's question during a call made through `mcpx__call_tool` reaches a legacy
        /// client as it would during a direct call, and the answer goes back.
        #[test]
        fn a_question_during_a_searched_call_reaches_the_client() {
            let (_dir, mut mcpx) = search_editor("2025-11-25");
            mcpx.request(1, "tools/call", call_ask());
            let question = loop {
                let message = mcpx.next();
                if message["method"] == "elicitation/create" {
                    break message;
                }
            };
            mcpx.send(json!({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}}}));
            let answer = mcpx.response(1);
            assert_eq!(
                answer["result"]["content"][0]["text"], "accept: Ada",
                "{answer}"
            );
        }
    }
}

mod v2026_07_28 {
    pub mod profiles {
        use super::super::*;

        /// A 2026-07-28 client gets the question as an `InputRequiredResult` of its
        /// `mcpx__call_tool` call, and its retry of that call resumes the upstream call.
        #[test]
        fn a_question_during_a_searched_call_is_answered_by_the_retry() {
            let (_dir, mut mcpx) = search_editor("2025-11-25");
            let capabilities =
                json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
            let mut params = modern(call_ask());
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                capabilities["io.modelcontextprotocol/clientCapabilities"].clone();
            let first = mcpx.call(1, "tools/call", params.clone());
            let result = &first["result"];
            assert_eq!(result["resultType"], "input_required", "{first}");
            assert_schema("2026-07-28", "InputRequiredResult", result);
            let (key, question) = result["inputRequests"]
                .as_object()
                .unwrap()
                .iter()
                .next()
                .unwrap();
            assert_eq!(question["method"], "elicitation/create");
            let mut retry = params;
            retry["inputResponses"] =
                json!({ key: {"action": "accept", "content": {"name": "Eve"}} });
            retry["requestState"] = result["requestState"].clone();
            let done = mcpx.call(2, "tools/call", retry);
            assert_eq!(
                done["result"]["content"][0]["text"], "accept: Eve",
                "{done}"
            );
        }

        /// A tool renamed by an override keeps its `x-mcp-header` parameter: the client's
        /// mirrored headers are checked against the exposed name, and the modern remote behind
        /// mcpx (which refuses a call whose headers disagree) gets its own name and headers.
        #[test]
        fn a_renamed_tool_keeps_its_header_parameters() {
            let remote = Daemon::start(&fixture_config(""), "");
            let daemon = Daemon::start(
                &format!(
                    "[servers.remote]\nurl = \"http://{}/mcp\"\nera = \"2026-07-28\"\n[servers.remote.tools.fixture__echo]\nname = \"shout\"\n",
                    remote.addr
                ),
                "",
            );
            let call = |name_header: &str, region: Option<&str>| {
                let (mut headers, body) = modern_request(
                    1,
                    "tools/call",
                    json!({"name": "remote__shout", "arguments": {"text": "far", "region": "eu"}}),
                );
                headers.retain(|(n, _)| n != "Mcp-Name");
                headers.push(("Mcp-Name".into(), name_header.into()));
                if let Some(region) = region {
                    headers.push(("Mcp-Param-Region".into(), region.into()));
                }
                let refs = header_refs(&headers);
                daemon.post(&refs, body.to_string().as_bytes())
            };
            let ok = call("remote__shout", Some("eu"));
            assert_eq!(ok.status, 200, "{:?}", ok.json());
            assert_eq!(ok.json()["result"]["content"][0]["text"], "far");
            let old_name = call("remote__fixture__echo", Some("eu"));
            assert_eq!(old_name.status, 400);
            assert_eq!(old_name.json()["error"]["code"], -32020);
            let missing = call("remote__shout", None);
            assert_eq!(missing.status, 400);
            assert_eq!(missing.json()["error"]["code"], -32020);
        }
    }
}
