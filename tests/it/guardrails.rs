//! `[guardrails]`, end to end: a FastMCP server that hands out credentials and personal data
//! in every place a model reads (`tests/sdk/fastmcp_leaky_server.py`) behind `mcpx serve` and
//! the daemon, under each action, in both eras: what the client receives, what mcpx logs and
//! what its audit log says.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The made-up values the server hands out (built as it builds them).
fn leaked() -> Vec<String> {
    vec![
        format!("ghp_{}F6g7H8", "A1b2C3d4E5".repeat(3)),
        "AKIAIOSFODNN7EXAMPLE".to_owned(),
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned(),
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7".to_owned(),
        "ada.lovelace@example.org".to_owned(),
    ]
}

/// The markers of what redaction found in the server's configuration text.
const MARKERS: [&str; 5] = [
    "[redacted: github-token]",
    "[redacted: aws-access-key]",
    "[redacted: aws-secret-key]",
    "[redacted: private-key]",
    "[redacted: email]",
];

/// `[servers.leaky]` with `more` of its own, after `section` (TOML under `[guardrails]`) and an
/// audit log at `audit`.
fn config(section: &str, more: &str, audit: &std::path::Path) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/fastmcp_leaky_server.py"
    );
    let key = audit.with_extension("key");
    format!(
        "[audit]\npath = {:?}\nkeyFile = {:?}\n[guardrails]\n{section}\n[servers.leaky]\ncommand = {:?}\nargs = [{script:?}]\n{more}",
        audit.display().to_string(),
        key.display().to_string(),
        deps::python()
    )
}

/// Which of the leaked values `text` shows.
fn shown_in(text: &str) -> Vec<String> {
    leaked().into_iter().filter(|v| text.contains(v)).collect()
}

/// The audit log's lines, once `count` of `method` are in it.
fn audited(audit: &std::path::Path, method: &str, count: usize) -> Vec<Value> {
    let lines = || -> Vec<Value> {
        let text = std::fs::read_to_string(audit).unwrap_or_default();
        let all = text.lines().filter_map(|l| serde_json::from_str(l).ok());
        all.filter(|l: &Value| l["method"] == method).collect()
    };
    assert!(eventually(|| lines().len() >= count), "{:?}", lines());
    lines()
}

/// One era's way of asking: legacy after `initialize`, or modern's envelope on each request.
#[derive(Clone, Copy)]
enum Era {
    Legacy,
    Modern,
}

impl Era {
    fn started(self, config: &str) -> Serve {
        let mut mcpx = Serve::start(config);
        if let Era::Legacy = self {
            let hello = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}});
            let _ = mcpx.call(0, "initialize", hello);
            mcpx.notify("notifications/initialized", json!({}));
        }
        mcpx
    }

    fn params(self, params: Value) -> Value {
        match self {
            Era::Legacy => params,
            Era::Modern => {
                let mut params = modern(params);
                params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    json!({"extensions": {TASKS: {}}});
                params
            }
        }
    }

    /// A task's result: `leaky__leak_later` run as a task (the server's own, or bridged to
    /// it), followed to its end.
    fn task_result(self, mcpx: &mut Serve) -> Value {
        let mut call = json!({"name": "leaky__leak_later", "arguments": {}});
        if let Era::Legacy = self {
            call["task"] = json!({"ttl": 60_000});
        }
        let created = mcpx.call(50, "tools/call", self.params(call));
        let id = match self {
            Era::Legacy => created["result"]["task"]["taskId"].as_str(),
            Era::Modern => created["result"]["taskId"].as_str(),
        };
        let id = id.unwrap_or_else(|| panic!("{created}")).to_owned();
        match self {
            Era::Legacy => mcpx.call(51, "tasks/result", json!({"taskId": id})),
            Era::Modern => {
                for n in 51.. {
                    let got = mcpx.call(n, "tasks/get", self.params(json!({"taskId": id})));
                    if got["result"]["status"] != "working" {
                        return got;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                unreachable!()
            }
        }
    }

    /// Everything the server offers a model, as this era's client receives it: a structured
    /// result, a text result, a resource, a prompt, a task's result, the tool list.
    fn everything(self, mcpx: &mut Serve) -> Vec<(&'static str, Value)> {
        let call = |name: &str| json!({"name": format!("leaky__{name}"), "arguments": {}});
        let mut got = vec![
            (
                "structured",
                mcpx.call(1, "tools/call", self.params(call("leak"))),
            ),
            (
                "text",
                mcpx.call(2, "tools/call", self.params(call("leak_text"))),
            ),
            (
                "resource",
                mcpx.call(
                    3,
                    "resources/read",
                    self.params(json!({"uri": "leak://config"})),
                ),
            ),
            (
                "prompt",
                mcpx.call(
                    4,
                    "prompts/get",
                    self.params(json!({"name": "leaky__leaky"})),
                ),
            ),
            ("list", mcpx.call(5, "tools/list", self.params(json!({})))),
        ];
        got.push(("task", self.task_result(mcpx)));
        got
    }
}

/// The description `tools/list` in `listed` gives `leaky__deploy`.
fn deploy_description(listed: &Value) -> String {
    let tools = listed["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let deploy = tools.iter().find(|t| t["name"] == "leaky__deploy");
    let deploy = deploy.unwrap_or_else(|| panic!("{listed}"));
    deploy["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `leaky__big`'s whole text: a million characters, its ends marked.
fn big_text() -> String {
    format!("HEAD>{}<TAIL", "x".repeat(1_000_000 - 10))
}

/// Checks that `result` (a tool's) was cut to `max` characters of text and names where its
/// whole is: that URI.
fn cut_to(result: &Value, max: usize) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let uri = result["_meta"]["mcpx/wholeResult"]
        .as_str()
        .unwrap_or_default();
    assert!(
        uri.starts_with("mcpx://results/"),
        "{}",
        &text[..text.len().min(500)]
    );
    assert!(
        text.starts_with("HEAD>") && text.ends_with("<TAIL"),
        "{text}"
    );
    assert!(text.contains(uri), "{text}");
    let marker = text.find("\n[mcpx cut").unwrap();
    let marker_end = text.rfind("]\n").unwrap() + 2;
    assert_eq!(text.len() - (marker_end - marker), max, "{text}");
    assert_eq!(result["_meta"]["mcpx/cutChars"], 1_000_000 - max);
    uri.to_owned()
}

mod every_revision {
    mod guardrails {
        use super::super::*;

        /// A million characters are cut to `maxResultChars` (head and tail kept, a marker
        /// between naming the whole), and the whole is read back as `mcpx://results/ID` by the
        /// caller, in both eras; a result within the budget passes whole.
        #[test]
        fn a_huge_result_is_cut_to_its_budget_and_read_whole_by_its_caller() {
            for era in [Era::Legacy, Era::Modern] {
                let dir = tempfile::tempdir().unwrap();
                let audit = dir.path().join("audit.jsonl");
                let mut mcpx = era.started(&config("maxResultChars = 2000", "", &audit));
                let call = json!({"name": "leaky__big", "arguments": {}});
                let answer = mcpx.call(1, "tools/call", era.params(call));
                let uri = cut_to(&answer["result"], 2000);
                let read = mcpx.call(2, "resources/read", era.params(json!({"uri": uri})));
                let whole = read["result"]["contents"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                assert!(whole == big_text(), "{}", &read.to_string()[..300]);
                let small = json!({"name": "leaky__big", "arguments": {"size": 2000}});
                let answer = mcpx.call(3, "tools/call", era.params(small));
                let text = answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                assert_eq!(text.len(), 2000, "{answer}");
                assert!(
                    answer["result"]["_meta"]["mcpx/wholeResult"].is_null(),
                    "{answer}"
                );
                let unknown = format!("{uri}0");
                let none = mcpx.call(4, "resources/read", era.params(json!({"uri": unknown})));
                assert!(none["error"].is_object(), "{none}");
            }
        }

        /// Under `redact`, in both eras, every place a model reads shows the markers and none
        /// of the values: a structured result and its text, a text result, a resource, a
        /// prompt, a task's result and a tool's description; mcpx's log and audit log show no
        /// value either, and each call's audit line names what was found.
        #[test]
        fn redacted_values_reach_neither_the_client_nor_the_logs() {
            for era in [Era::Legacy, Era::Modern] {
                let dir = tempfile::tempdir().unwrap();
                let audit = dir.path().join("audit.jsonl");
                let section = "secrets = \"redact\"\npii = \"redact\"";
                let mut mcpx = era.started(&config(section, "", &audit));
                for (place, answer) in era.everything(&mut mcpx) {
                    let text = answer.to_string();
                    assert_eq!(shown_in(&text), Vec::<String>::new(), "{place}: {answer}");
                    let markers: &[&str] = match place {
                        "list" => &["[redacted: github-token]"],
                        _ => &MARKERS,
                    };
                    for marker in markers {
                        assert!(text.contains(marker), "{place} lacks {marker}: {answer}");
                    }
                }
                let calls = audited(&audit, "tools/call", 2);
                let found = &calls[0]["guardrails"];
                let kinds: Vec<&str> = found
                    .as_array()
                    .unwrap_or_else(|| panic!("{calls:?}"))
                    .iter()
                    .map(|f| f["kind"].as_str().unwrap())
                    .collect();
                for kind in ["github-token", "aws-access-key", "private-key", "email"] {
                    assert!(kinds.contains(&kind), "{found}");
                }
                assert!(found
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|f| f["action"] == "redact"));
                let resource = audited(&audit, "resources/read", 1);
                assert!(resource[0]["guardrails"].is_array(), "{resource:?}");
                // A definition's finding is audited once, as its server's.
                let definitions = audited(&audit, "guardrails", 1);
                assert_eq!(definitions.len(), 1, "{definitions:?}");
                assert_eq!(definitions[0]["name"], "tool:deploy");
                assert_eq!(definitions[0]["upstream"], "leaky");
                assert_eq!(definitions[0]["guardrails"][0]["kind"], "github-token");
                let audit_text = std::fs::read_to_string(&audit).unwrap();
                assert_eq!(shown_in(&audit_text), Vec::<String>::new());
                mcpx.close_stdin();
                mcpx.wait(PATIENCE);
                assert_eq!(shown_in(&mcpx.stderr()), Vec::<String>::new());
            }
        }

        /// What a first look misses is read too, in both eras: the token split over two text
        /// items, behind a zero-width space and a look-alike letter, in base64, as a member's
        /// name, in a server's members named as protocol tokens, in its `_meta`, and in a
        /// JSON-RPC error's message and data. None of it reaches the client.
        #[test]
        fn a_secret_a_first_look_misses_is_redacted_too() {
            for era in [Era::Legacy, Era::Modern] {
                let dir = tempfile::tempdir().unwrap();
                let audit = dir.path().join("audit.jsonl");
                let mut mcpx = era.started(&config("secrets = \"redact\"", "", &audit));
                let call = |name: &str| json!({"name": format!("leaky__{name}"), "arguments": {}});
                let hidden = mcpx.call(1, "tools/call", era.params(call("leak_hidden")));
                let broken = json!({"uri": "leak://broken"});
                let failed = mcpx.call(2, "resources/read", era.params(broken));
                let token = &leaked()[0];
                let pieces = [&token[..20], &token[20..], &token[4..]];
                let encoded = {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD.encode(token)
                };
                for answer in [&hidden, &failed] {
                    let text = answer.to_string();
                    for piece in pieces.iter().chain([&encoded.as_str()]) {
                        assert!(!text.contains(*piece), "{piece} in {answer}");
                    }
                    assert!(text.contains("[redacted: github-token]"), "{answer}");
                }
                let result = &hidden["result"];
                assert!(result["content"][3]["text"].is_string(), "{hidden}");
                assert!(failed["error"]["message"].is_string(), "{failed}");
                let calls = audited(&audit, "tools/call", 1);
                assert!(calls[0]["guardrails"].is_array(), "{calls:?}");
                // (mcpx's log is not checked: FastMCP prints the error's traceback, token and
                // all, on its stderr, which mcpx logs as the server wrote it.)
            }
        }

        /// A 2025-11-25 server's question to its client (an elicitation here) is read as its
        /// results are: the token in its message reaches the client masked, and the call goes
        /// on with the client's answer.
        #[test]
        fn a_servers_question_to_a_legacy_client_is_redacted() {
            let token = &leaked()[0];
            let config = format!("[guardrails]\nsecrets = \"redact\"\n{}", fixture_config(""));
            let mut mcpx = Serve::start(&config);
            let hello = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "test", "version": "1"}});
            let _ = mcpx.call(0, "initialize", hello);
            mcpx.notify("notifications/initialized", json!({}));
            let params = json!({"name": "fixture__ask", "arguments": {"message": format!("Your token {token}?")}});
            mcpx.request(1, "tools/call", params);
            let question = loop {
                let message = mcpx.next();
                if message["method"] == "elicitation/create" {
                    break message;
                }
            };
            let said = question["params"]["message"].as_str().unwrap_or_default();
            assert_eq!(said, "Your token [redacted: github-token]?", "{question}");
            mcpx.send(json!({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}}}));
            assert_eq!(tool_text(&mcpx.response(1)), "accept: Ada");
        }

        /// A server's completion values are offered through its guardrails, in both eras.
        #[test]
        fn a_servers_completion_values_are_redacted() {
            let token = &leaked()[0];
            let config = format!("[guardrails]\nsecrets = \"redact\"\n{}", fixture_config(""));
            for era in [Era::Legacy, Era::Modern] {
                let mut mcpx = era.started(&config);
                let params = json!({"ref": {"type": "ref/prompt", "name": "fixture__greet"},
                    "argument": {"name": "name", "value": format!("echo:key {token}")}});
                let answer = mcpx.call(1, "completion/complete", era.params(params));
                let values = &answer["result"]["completion"]["values"];
                assert_eq!(*values, json!(["key [redacted: github-token]"]), "{answer}");
            }
        }

        /// A server's progress messages and log messages during a call reach a 2025-11-25
        /// client through its guardrails: the token they carry arrives masked.
        #[test]
        fn a_servers_progress_and_log_messages_are_redacted() {
            let token = &leaked()[0];
            let config = format!("[guardrails]\nsecrets = \"redact\"\n{}", fixture_config(""));
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let params = json!({"name": "fixture__progress", "arguments": {"steps": 2, "say": format!("key {token}")},
                "_meta": {"progressToken": "p"}});
            mcpx.request(1, "tools/call", params);
            let mut heard = Vec::new();
            let answer = loop {
                let message = mcpx.next();
                if message["id"] == 1 {
                    break message;
                }
                heard.push(message);
            };
            assert_eq!(tool_text(&answer), "2 steps");
            let text = serde_json::to_string(&heard).unwrap();
            assert!(!text.contains(token.as_str()), "{text}");
            let progress = heard
                .iter()
                .filter(|m| m["method"] == "notifications/progress");
            let said: Vec<&str> = progress
                .filter_map(|m| m["params"]["message"].as_str())
                .collect();
            assert_eq!(
                said,
                [
                    "step 1: key [redacted: github-token]",
                    "step 2: key [redacted: github-token]"
                ]
            );
            let logged = heard
                .iter()
                .find(|m| m["method"] == "notifications/message");
            let logged = logged.unwrap_or_else(|| panic!("no log message: {text}"));
            assert_eq!(
                logged["params"]["data"],
                "said: key [redacted: github-token]"
            );
        }

        /// Under `block`, a tool's result (and a task's) is an `isError` result that names what
        /// was found and nothing of it; a resource and a prompt are an error that does too; the
        /// tool's description says it was withheld, and the tool can still be called.
        #[test]
        fn a_blocked_result_names_what_was_found_and_never_the_value() {
            for era in [Era::Legacy, Era::Modern] {
                let dir = tempfile::tempdir().unwrap();
                let audit = dir.path().join("audit.jsonl");
                let mut mcpx = era.started(&config("secrets = \"block\"", "", &audit));
                for (place, answer) in era.everything(&mut mcpx) {
                    let text = answer.to_string();
                    assert_eq!(shown_in(&text), Vec::<String>::new(), "{place}: {answer}");
                    let said = match place {
                        "structured" | "text" => {
                            assert_eq!(answer["result"]["isError"], true, "{answer}");
                            answer["result"]["content"][0]["text"].clone()
                        }
                        "task" => {
                            let result = match era {
                                Era::Legacy => &answer["result"],
                                Era::Modern => &answer["result"]["result"],
                            };
                            assert_eq!(result["isError"], true, "{answer}");
                            result["content"][0]["text"].clone()
                        }
                        "resource" | "prompt" => answer["error"]["message"].clone(),
                        _ => json!(deploy_description(&answer)),
                    };
                    let said = said.as_str().unwrap_or_default();
                    assert!(said.contains("github-token"), "{place}: {answer}");
                    if place != "list" {
                        assert!(said.contains("private-key"), "{place}: {answer}");
                        // Personal data is not looked for: pii is off.
                        assert!(!said.contains("email"), "{place}: {answer}");
                    }
                }
                let deployed = json!({"name": "leaky__deploy", "arguments": {}});
                let called = mcpx.call(60, "tools/call", era.params(deployed));
                assert_eq!(
                    called["result"]["content"][0]["text"], "deployed",
                    "{called}"
                );
                let calls = audited(&audit, "tools/call", 2);
                assert!(calls[0]["guardrails"][0]["action"] == "block", "{calls:?}");
                let audit_text = std::fs::read_to_string(&audit).unwrap();
                assert_eq!(shown_in(&audit_text), Vec::<String>::new());
                mcpx.close_stdin();
                mcpx.wait(PATIENCE);
                assert_eq!(shown_in(&mcpx.stderr()), Vec::<String>::new());
            }
        }

        /// A call mcpx may run as a task of its own (its server runs none) is screened on its
        /// rounds, and what they find is on its audit line: the `tools/call`'s when it is
        /// answered as a call, the task's end when it became a task (a 2025-11-25 client's
        /// asked-for task, a 2026-07-28 client's under `tasks = "always"`).
        #[test]
        fn a_promoted_calls_findings_are_on_its_audit_line() {
            let token = &leaked()[0];
            let echo =
                json!({"name": "fixture__echo", "arguments": {"text": format!("key {token}")}});
            for (era, tasks) in [
                (Era::Modern, "auto"),
                (Era::Legacy, "auto"),
                (Era::Modern, "always"),
            ] {
                let dir = tempfile::tempdir().unwrap();
                let audit = dir.path().join("audit.jsonl");
                let config = format!(
                    "[audit]\npath = {:?}\nkeyFile = {:?}\n[guardrails]\nsecrets = \"redact\"\n\
                     [tasks]\npromoteAfter = \"10m\"\n[servers.fixture]\ncommand = {:?}\ntasks = {tasks:?}\n",
                    audit.display().to_string(),
                    audit.with_extension("key").display().to_string(),
                    fixture_bin()
                );
                let mut mcpx = era.started(&config);
                let as_task = matches!(era, Era::Legacy) || tasks == "always";
                let answer = match (era, as_task) {
                    (Era::Modern, false) => mcpx.call(1, "tools/call", era.params(echo.clone())),
                    (Era::Legacy, _) => {
                        let mut call = echo.clone();
                        call["task"] = json!({"ttl": 60_000});
                        let created = mcpx.call(1, "tools/call", call);
                        let id = &created["result"]["task"]["taskId"];
                        mcpx.call(2, "tasks/result", json!({"taskId": id}))
                    }
                    (Era::Modern, true) => {
                        let created = mcpx.call(1, "tools/call", era.params(echo.clone()));
                        let id = created["result"]["taskId"].clone();
                        assert!(id.is_string(), "{created}");
                        let ended = (2..).map(|n| {
                            let got = mcpx.call(n, "tasks/get", era.params(json!({"taskId": id})));
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            got
                        });
                        let mut ended =
                            ended.skip_while(|got| got["result"]["status"] == "working");
                        ended.next().unwrap()
                    }
                };
                let text = answer.to_string();
                assert!(!text.contains(token.as_str()), "{answer}");
                assert!(text.contains("[redacted: github-token]"), "{answer}");
                let line = match as_task {
                    false => audited(&audit, "tools/call", 1).remove(0),
                    true => {
                        let ended = || {
                            let tasks = audited(&audit, "task", 1);
                            tasks.into_iter().find(|l| l["outcome"] == "completed")
                        };
                        assert!(
                            eventually(|| ended().is_some()),
                            "{:?}",
                            audited(&audit, "task", 1)
                        );
                        ended().unwrap()
                    }
                };
                let found = &line["guardrails"];
                assert_eq!(found[0]["kind"], "github-token", "{tasks}: {line}");
                assert_eq!(found[0]["action"], "redact", "{tasks}: {line}");
                let audit_text = std::fs::read_to_string(&audit).unwrap();
                assert!(!audit_text.contains(token.as_str()));
            }
        }
    }
}

mod v2026_07_28 {
    mod guardrails {
        use super::super::*;
        use crate::access::{call as call_with_token, daemon as daemon_for, Provider};
        use crate::one_gate::called_in_both_eras;

        /// A kept result is its caller's alone: alice reads hers whole, bob is told there is
        /// no such resource. The budget here is the door's profile's (`/mcp/small`); `/mcp`
        /// sets none and cuts nothing.
        #[test]
        fn a_kept_result_is_its_callers_alone_and_a_profile_sets_a_budget() {
            let provider = Provider::start();
            let script = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/sdk/fastmcp_leaky_server.py"
            );
            let more = format!(
                "[profiles.small]\nmaxResultChars = 100\n[servers.leaky]\ncommand = {:?}\nargs = [{script:?}]\n",
                deps::python()
            );
            let d = daemon_for(&provider, &more);
            assert!(d.upstreams_ready(), "{}", d.stderr());
            // A token is for one door: each person has one for each.
            let token = |sub: &str, door: &str| {
                let claims = provider.claims(sub, door, "mcp");
                provider.signed("ES256", "ec", &claims)
            };
            let big = json!({"name": "leaky__big", "arguments": {}});
            let as_alice = |door: &str, method, params| {
                call_with_token(&d, door, Some(&token("alice", door)), method, params).json()
            };
            let cut = as_alice("/mcp/small", "tools/call", big.clone());
            assert!(cut["result"].is_object(), "{cut}");
            let uri = cut_to(&cut["result"], 100);
            let read = json!({"uri": uri});
            let hers = as_alice("/mcp/small", "resources/read", read.clone());
            assert!(
                hers["result"]["contents"][0]["text"] == big_text(),
                "{}",
                d.stderr()
            );
            // Kept for the caller, not the door: read through another.
            let again = as_alice("/mcp", "resources/read", read.clone());
            assert!(again["result"]["contents"][0]["text"] == big_text());
            for door in ["/mcp/small", "/mcp"] {
                let bob = token("bob", door);
                let reply = call_with_token(&d, door, Some(&bob), "resources/read", read.clone());
                let theirs = reply.json();
                assert!(
                    theirs["result"].is_null(),
                    "bob read alice's result at {door}"
                );
                let said = theirs["error"]["message"].as_str().unwrap_or_default();
                assert!(said.contains(&uri), "{theirs}");
            }
            let whole = as_alice("/mcp", "tools/call", big);
            let text = whole["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(
                text == big_text(),
                "cut at /mcp: {}",
                &text[..text.len().min(300)]
            );
        }

        /// The attacker's test: a result is guarded whichever route its call took (the exposed
        /// name, the server's own name, `mcpx__call_tool` naming either), in both eras.
        #[test]
        fn every_route_to_a_tool_leaves_by_the_guarded_door() {
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let section = "secrets = \"block\"\n[profiles.found]\nsearch = true";
            let daemon = Daemon::start(&config(section, "", &audit), "");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let through = |name: &str| json!({"name": "mcpx__call_tool", "arguments": {"name": name, "arguments": {}}});
            let routes = [
                ("/mcp", json!({"name": "leaky__leak_text", "arguments": {}})),
                ("/mcp", json!({"name": "leak_text", "arguments": {}})),
                ("/mcp/found", through("leaky__leak_text")),
                ("/mcp/found", through("leak_text")),
            ];
            for (n, (door, params)) in routes.iter().enumerate() {
                for result in called_in_both_eras(&daemon, door, n as i64 + 1, params) {
                    assert_eq!(result["isError"], true, "{door} {params}: {result}");
                    let text = result.to_string();
                    assert!(text.contains("github-token"), "{door} {params}: {result}");
                    assert_eq!(shown_in(&text), Vec::<String>::new(), "{door} {params}");
                }
            }
        }

        /// `log` lets the result pass unchanged and counts each finding in
        /// `mcpx_guardrail_findings_total`; a server's own setting wins over the section's
        /// (`redact` there, `log` here), and `off` reads nothing.
        #[test]
        fn log_counts_and_passes_and_a_servers_own_setting_wins() {
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let section = "secrets = \"redact\"\npii = \"redact\"";
            let own = "[servers.leaky.guardrails]\nsecrets = \"log\"\npii = \"off\"\n";
            let daemon = Daemon::start(&config(section, own, &audit), "metrics = true");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let params = json!({"name": "leaky__leak_text", "arguments": {}});
            let answer = daemon.modern(1, "tools/call", params).json();
            assert_eq!(shown_in(&answer.to_string()).len(), 5, "{answer}");
            let metrics = daemon.metrics();
            let found = |kind: &str, action: &str| {
                let labels = [("kind", kind), ("action", action)];
                metric_sample(&metrics, "mcpx_guardrail_findings_total", &labels)
            };
            // Each place counts: the text, FastMCP's structured copy of it, the description.
            assert!(found("github-token", "log") >= 2.0, "{metrics}");
            assert!(found("private-key", "log") >= 1.0, "{metrics}");
            assert_eq!(found("email", "log"), 0.0, "{metrics}");
            assert_eq!(found("github-token", "redact"), 0.0, "{metrics}");
            let calls = audited(&audit, "tools/call", 1);
            let actions = calls[0]["guardrails"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(actions.iter().all(|f| f["action"] == "log"), "{calls:?}");
            assert_eq!(shown_in(&daemon.stderr()), Vec::<String>::new());
        }
    }
}
