//! `[approvals]`, end to end: a call of a tool it names waits, its caller hearing progress
//! that says how to approve it, until `mcpx approvals approve|deny ID` (through the admin
//! socket of the mcpx holding it) decides, or its timeout refuses it; the server is reached
//! only after an approval, once; an id decided once names nothing, and an approval of one call
//! does not release another with other arguments.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// A configuration in `dir` (admin socket and audit log there too) holding calls of the
/// fixture's `echo` for approval, with `more` under `[approvals]`.
fn config_in(dir: &Path, more: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "[admin]\nsocket = {:?}\n[audit]\npath = {:?}\nkeyFile = {:?}\n[approvals]\ntools = [\"fixture__*\"]\n{more}\n{}",
        dir.join("admin.sock").display().to_string(),
        dir.join("audit.jsonl").display().to_string(),
        dir.join("audit.key").display().to_string(),
        fixture_config("")
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `mcpx approvals ARGS` on `config`: whether it succeeded, and what it printed.
fn approvals(config: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .arg("approvals")
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// The id a progress notification of mcpx's names, waiting on `mcpx` for the one for `token`.
fn waiting_id(mcpx: &mut Serve, token: &str) -> String {
    loop {
        let message = mcpx.next();
        if message["method"] != "notifications/progress"
            || message["params"]["progressToken"] != token
        {
            continue;
        }
        let said = message["params"]["message"].as_str().unwrap_or_default();
        let after = said.split_once("approve ").map_or("", |(_, after)| after);
        let id = after.split(' ').next().unwrap_or_default();
        assert!(
            said.starts_with("waiting for approval") && id.starts_with('a'),
            "{message}"
        );
        return id.to_owned();
    }
}

/// The audit log's `approval` lines.
fn approval_lines(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap_or_default();
    let lines = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok());
    lines.filter(|l| l["method"] == "approval").collect()
}

mod every_revision {
    mod approvals {
        use super::super::*;

        /// Two calls wait, their caller told how to approve each; `mcpx approvals` lists both
        /// with their arguments; approving one releases it alone (the other, with other
        /// arguments, waits on), and its id then names nothing; denying the other refuses it.
        /// Each decision is audited with who made it. In both eras.
        #[test]
        fn mcpx_approvals_approves_one_call_once_and_denies_another() {
            for modern_era in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let config = config_in(dir.path(), "");
                let mut mcpx = Serve::with_config_file(&config);
                let wrap = |params: Value| match modern_era {
                    true => modern(params),
                    false => params,
                };
                if !modern_era {
                    mcpx.initialize("2025-11-25");
                }
                let call = |text: &str, token: &str| {
                    wrap(json!({"name": "fixture__echo", "arguments": {"text": text},
                        "_meta": {"progressToken": token}}))
                };
                mcpx.request(1, "tools/call", call("ship it", "one"));
                let first = waiting_id(&mut mcpx, "one");
                mcpx.request(2, "tools/call", call("delete it all", "two"));
                let second = waiting_id(&mut mcpx, "two");
                let (ok, listed) = approvals(&config, &[]);
                assert!(
                    ok && listed.contains(&first) && listed.contains(&second),
                    "{listed}"
                );
                assert!(
                    listed.contains("ship it") && listed.contains("fixture__echo"),
                    "{listed}"
                );
                let (ok, text) = approvals(&config, &["approve", &first]);
                assert!(ok, "{text}");
                assert_eq!(tool_text(&mcpx.response(1)), "ship it");
                let (ok, text) = approvals(&config, &["approve", &first]);
                assert!(!ok && text.contains(&first), "replayed: {text}");
                let (_, listed) = approvals(&config, &["list"]);
                assert!(
                    listed.contains(&second) && !listed.contains(&first),
                    "{listed}"
                );
                let (ok, text) = approvals(&config, &["deny", &second]);
                assert!(ok, "{text}");
                let denied = mcpx.response(2);
                assert_eq!(denied["result"]["isError"], true, "{denied}");
                assert!(tool_text(&denied).contains("Denied"), "{denied}");
                // The audit line may follow its answer.
                assert!(eventually(|| approval_lines(dir.path()).len() >= 2));
                let lines = approval_lines(dir.path());
                let outcomes: Vec<(&Value, &Value)> = lines
                    .iter()
                    .map(|l| (&l["outcome"], &l["decidedBy"]))
                    .collect();
                let by = json!("the owner (mcpx approvals)");
                assert_eq!(
                    outcomes,
                    [(&json!("approved"), &by), (&json!("denied"), &by)]
                );
            }
        }
    }
}

mod v2026_07_28 {
    mod approvals {
        use super::super::*;

        /// The attacker's routes: the server's own name for the tool, and `mcpx__call_tool`
        /// naming either name, are held for approval as the exposed name is, and a denial
        /// reaches each.
        #[test]
        fn every_route_to_a_held_tool_waits_for_approval() {
            let dir = tempfile::tempdir().unwrap();
            let config = config_in(dir.path(), "[profiles.found]\nsearch = true");
            let through = |name: &str| json!({"name": "mcpx__call_tool", "arguments": {"name": name, "arguments": {"text": "routed"}}});
            let routes = [
                (
                    None,
                    json!({"name": "echo", "arguments": {"text": "routed"}}),
                ),
                (Some("found"), through("fixture__echo")),
                (Some("found"), through("echo")),
            ];
            for (n, (profile, mut params)) in routes.into_iter().enumerate() {
                let options: Vec<&str> = profile.map_or(vec![], |p| vec!["--profile", p]);
                let mut mcpx = Serve::spawn(&config, &options);
                params["_meta"] = json!({"progressToken": "r"});
                mcpx.request(1, "tools/call", modern(params.clone()));
                let id = waiting_id(&mut mcpx, "r");
                let (_, listed) = approvals(&config, &[]);
                assert!(listed.contains("fixture__echo"), "route {n}: {listed}");
                assert!(approvals(&config, &["deny", &id]).0);
                let denied = mcpx.response(1);
                assert!(tool_text(&denied).contains("Denied"), "route {n}: {denied}");
            }
        }

        /// A call that is a task (a 2026-07-28 client declaring the Tasks extension, a
        /// 2025-11-25 client asking for one) waits for approval as a task: the client has the
        /// task at once, its status says what it waits for and how to approve it; approved, it
        /// runs and ends with its result; denied, it ends refused.
        #[test]
        fn a_call_that_is_a_task_waits_for_approval_as_one() {
            const TASKS: &str = "io.modelcontextprotocol/tasks";
            for modern_era in [true, false] {
                let dir = tempfile::tempdir().unwrap();
                let config = config_in(dir.path(), "");
                let mut mcpx = Serve::with_config_file(&config);
                let wrap = |mut params: Value| match modern_era {
                    true => {
                        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                            json!({"extensions": {TASKS: {}}});
                        modern(params)
                    }
                    false => params,
                };
                if !modern_era {
                    mcpx.initialize("2025-11-25");
                }
                let mut task_of = |id: i64, text: &str| {
                    let mut call = json!({"name": "fixture__echo", "arguments": {"text": text}});
                    if !modern_era {
                        call["task"] = json!({"ttl": 60_000});
                    }
                    let created = mcpx.call(id, "tools/call", wrap(call));
                    let task = match modern_era {
                        true => &created["result"]["taskId"],
                        false => &created["result"]["task"]["taskId"],
                    };
                    task.as_str()
                        .unwrap_or_else(|| panic!("{created}"))
                        .to_owned()
                };
                let (first, second) = (task_of(1, "approved as a task"), task_of(2, "denied"));
                let status = |mcpx: &mut Serve, id: i64, task: &str| {
                    let got = mcpx.call(id, "tasks/get", wrap(json!({"taskId": task})));
                    got["result"].clone()
                };
                let mut waiting_for = |task: &str| -> String {
                    let deadline = std::time::Instant::now() + PATIENCE;
                    for n in 100.. {
                        let got = status(&mut mcpx, n, task);
                        let said = got["statusMessage"].as_str().unwrap_or_default();
                        if let Some((_, after)) = said.split_once("approvals approve ") {
                            assert_eq!(got["status"], "working", "{got}");
                            return after.split(' ').next().unwrap().to_owned();
                        }
                        assert!(std::time::Instant::now() < deadline, "{got}");
                        std::thread::sleep(std::time::Duration::from_millis(25));
                    }
                    unreachable!()
                };
                let (approve, deny) = (waiting_for(&first), waiting_for(&second));
                if modern_era {
                    // The attacker's try: the client answers for the person. It is no answer.
                    let answers = json!({"taskId": first, "inputResponses": {"approve": {"action": "accept"}}});
                    let _ = mcpx.call(90, "tasks/update", wrap(answers));
                    let got = status(&mut mcpx, 91, &first);
                    assert_eq!(got["status"], "working", "{got}");
                    let listed = approvals(&config, &[]).1;
                    assert!(listed.contains(&approve), "{listed}");
                }
                assert!(approvals(&config, &["approve", &approve]).0);
                assert!(approvals(&config, &["deny", &deny]).0);
                let ended = |mcpx: &mut Serve, task: &str| -> Value {
                    match modern_era {
                        true => {
                            for n in 300.. {
                                let got = status(mcpx, n, task);
                                if got["status"] != "working" {
                                    return got["result"].clone();
                                }
                                std::thread::sleep(std::time::Duration::from_millis(25));
                            }
                            unreachable!()
                        }
                        false => mcpx.call(400, "tasks/result", json!({"taskId": task}))["result"]
                            .clone(),
                    }
                };
                let done = ended(&mut mcpx, &first);
                assert_eq!(done["content"][0]["text"], "approved as a task", "{done}");
                let refused = ended(&mut mcpx, &second);
                assert_eq!(refused["isError"], true, "{refused}");
                let text = refused["content"][0]["text"].as_str().unwrap_or_default();
                assert!(text.contains("Denied"), "{refused}");
            }
        }

        /// Under tmux: the console's Approvals view shows the waiting call (caller, tool,
        /// arguments), and `a`, `y` approve it; the call goes on, and the audit log says the
        /// console decided.
        #[test]
        fn the_console_approves_a_call_from_its_approvals_view() {
            use crate::common::console::{open_console, screen_shows, tmux};
            let dir = tempfile::tempdir().unwrap();
            let config = config_in(dir.path(), "");
            let mut mcpx = Serve::with_config_file(&config);
            let params = json!({"name": "fixture__echo", "arguments": {"text": "from the console"},
                "_meta": {"progressToken": "c"}});
            mcpx.request(1, "tools/call", modern(params));
            waiting_id(&mut mcpx, "c");
            let socket = dir.path().join(format!("serve-{}.sock", mcpx.pid()));
            let name = open_console("approvals", "", &socket, (160, 40));
            screen_shows(&name, "9 Approvals (1)");
            tmux(&["send-keys", "-t", &name, "9"]);
            screen_shows(&name, "from the console");
            tmux(&["send-keys", "-t", &name, "a"]);
            screen_shows(&name, "(y/n)");
            tmux(&["send-keys", "-t", &name, "y"]);
            screen_shows(&name, "approved");
            tmux(&["kill-session", "-t", &name]);
            assert_eq!(tool_text(&mcpx.response(1)), "from the console");
            let lines = approval_lines(dir.path());
            assert_eq!(lines[0]["decidedBy"], "the owner (console)", "{lines:?}");
        }

        /// With the built-in authorization server, the caller is told the call's page too; the
        /// page shows the call and takes the owner secret only: a wrong one decides nothing,
        /// five lock the page (the host still decides), an unknown id is a 404; the right one
        /// approves. The page is never framed or cached.
        #[test]
        fn the_approval_page_takes_the_owner_secret_and_locks_after_wrong_ones() {
            use crate::authserver::{Builtin, OWNER_SECRET};
            let b = Builtin::start("[approvals]\ntools = [\"fixture__*\"]");
            assert!(b.d.upstreams_ready(), "{}", b.d.stderr());
            let mut mcpx = Serve::attached(b.d.config_path());
            let call = |text: &str, token: &str| {
                modern(json!({"name": "fixture__echo", "arguments": {"text": text},
                    "_meta": {"progressToken": token}}))
            };
            mcpx.request(1, "tools/call", call("<b>ship</b> it", "one"));
            let id = waiting_id(&mut mcpx, "one");
            let page = format!("/approvals/{id}");
            let shown = b.get(&page);
            assert_eq!(shown.status, 200, "{}", shown.text());
            assert!(shown.text().contains("fixture__echo"), "{}", shown.text());
            assert!(
                shown.text().contains("&lt;b&gt;ship&lt;/b&gt; it"),
                "{}",
                shown.text()
            );
            assert_eq!(shown.header("x-frame-options"), Some("DENY"));
            assert_eq!(shown.header("cache-control"), Some("no-store"));
            assert_eq!(b.get("/approvals/a00").status, 404);
            let decide = |secret: &str, decision: &str| {
                let fields = [("secret", secret), ("decision", decision)];
                b.post_form(&page, &fields, "")
            };
            assert_eq!(decide("guess", "approve").status, 403);
            assert!(b.get(&page).status == 200, "a wrong secret decided nothing");
            assert_eq!(decide(OWNER_SECRET, "approve").status, 200);
            assert_eq!(tool_text(&mcpx.response(1)), "<b>ship</b> it");
            assert_eq!(b.get(&page).status, 404, "an id is used once");
            mcpx.request(2, "tools/call", call("again", "two"));
            let second = waiting_id(&mut mcpx, "two");
            let page = format!("/approvals/{second}");
            for _ in 0..5 {
                let fields = [("secret", "guess"), ("decision", "approve")];
                assert_eq!(b.post_form(&page, &fields, "").status, 403);
            }
            let fields = [("secret", OWNER_SECRET), ("decision", "approve")];
            let locked = b.post_form(&page, &fields, "");
            assert!(
                locked.status == 403 && locked.text().contains("on the host"),
                "{}",
                locked.text()
            );
            let (ok, text) = approvals(b.d.config_path(), &["deny", &second]);
            assert!(ok, "{text}");
            assert!(tool_text(&mcpx.response(2)).contains("Denied"));
        }

        /// One caller holds at most 16 calls waiting, in both eras together (an editor's two
        /// sessions are one caller): the next is refused at once, saying the limit; and wrong
        /// owner secrets spread over many calls' pages (fewer than five on each) lock every
        /// page, so the right secret guessed on yet another is refused there too.
        #[test]
        fn held_calls_are_bounded_per_caller_and_wrong_secrets_lock_every_page() {
            use crate::authserver::{Builtin, OWNER_SECRET};
            let b = Builtin::start("[approvals]\ntools = [\"fixture__*\"]");
            assert!(b.d.upstreams_ready(), "{}", b.d.stderr());
            let (mut legacy, mut modern_client) = (
                Serve::attached(b.d.config_path()),
                Serve::attached(b.d.config_path()),
            );
            legacy.initialize("2025-11-25");
            let call = |n: i64, is_modern: bool| {
                let params = json!({"name": "fixture__echo", "arguments": {"text": format!("call {n}")},
                    "_meta": {"progressToken": format!("t{n}")}});
                match is_modern {
                    true => modern(params),
                    false => params,
                }
            };
            let mut pages = Vec::new();
            for n in 1..=16 {
                let (client, is_modern) = match n % 2 {
                    0 => (&mut modern_client, true),
                    _ => (&mut legacy, false),
                };
                client.request(n, "tools/call", call(n, is_modern));
                pages.push(format!(
                    "/approvals/{}",
                    waiting_id(client, &format!("t{n}"))
                ));
            }
            for (client, is_modern) in [(&mut legacy, false), (&mut modern_client, true)] {
                client.request(17, "tools/call", call(17, is_modern));
                let refused = tool_text(&client.response(17));
                assert!(
                    refused.contains("the most one caller may (16)"),
                    "{refused}"
                );
            }
            let decide = |page: &str, secret: &str| {
                let fields = [("secret", secret), ("decision", "approve")];
                b.post_form(page, &fields, "")
            };
            // Twelve: from the tenth on, each locks every page longer (30 s, doubling).
            for page in pages.iter().take(12) {
                assert_eq!(decide(page, "guess").status, 403);
            }
            let locked = decide(&pages[12], OWNER_SECRET);
            assert!(
                locked.status == 403 && locked.text().contains("on the host"),
                "{}",
                locked.text()
            );
            let (ok, text) = approvals(
                b.d.config_path(),
                &["approve", pages[12].trim_start_matches("/approvals/")],
            );
            assert!(ok, "{text}");
            assert_eq!(tool_text(&legacy.response(13)), "call 13");
        }

        /// Over HTTP, the server is reached only once a person approved, and once; a call
        /// nobody decides is refused at its timeout and never reaches it.
        #[test]
        fn the_server_is_reached_once_after_approval_and_never_after_a_timeout() {
            // A daemon whose calls wait a second, for the refusal; the approval is given on
            // another, whose calls wait the default ten minutes: a busy machine's slow CLI
            // never races the timeout.
            let daemon_waiting = |timeout: &str| {
                let dir = tempfile::tempdir().unwrap();
                let config = config_in(dir.path(), timeout);
                let text = std::fs::read_to_string(&config).unwrap();
                let daemon = Daemon::start(&text, "metrics = true");
                assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
                (dir, daemon)
            };
            let (_impatient, daemon) = daemon_waiting("timeout = \"1s\"");
            let timed_out = daemon
                .modern(
                    1,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "late"}}),
                )
                .json();
            assert!(
                tool_text(&timed_out).contains("Not approved within 1s"),
                "{timed_out}"
            );
            assert_eq!(fixture_calls(&daemon), 0.0);
            let (_patient, daemon) = daemon_waiting("");
            let config = daemon.config_path().to_owned();
            std::thread::scope(|scope| {
                let call = scope.spawn(|| {
                    let params = json!({"name": "fixture__echo", "arguments": {"text": "now"}});
                    daemon.modern(2, "tools/call", params).json()
                });
                let id = {
                    let listed = || approvals(&config, &[]).1;
                    assert!(eventually(|| listed().contains("\"now\"")), "{}", listed());
                    listed().split_whitespace().next().unwrap().to_owned()
                };
                assert_eq!(fixture_calls(&daemon), 0.0);
                let (ok, text) = approvals(&config, &["approve", &id]);
                assert!(ok, "{text}");
                assert_eq!(tool_text(&call.join().unwrap()), "now");
            });
            assert_eq!(fixture_calls(&daemon), 1.0);
        }
    }
}
