//! `[[guardrails.hooks]]`, end to end: an outside policy (`tests/sdk/policy_hook.py`, speaking
//! agentgateway's ExtMCP messages in JSON) asked over HTTP and as a kept-running command, in
//! front of and behind the fixture's `echo`: it refuses a call (which never reaches the
//! server), rewrites its arguments, replaces and withholds its result; a hook that misses its
//! deadline fails closed or open as configured.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::Path;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/policy_hook.py");

/// The policy served over HTTP, logging to `log`: the process and its URL.
fn policy_over_http(log: &Path) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(deps::python())
        .args([SCRIPT, &log.display().to_string(), "--http"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufReader::new(stdout)
        .read_line(&mut port)
        .unwrap();
    (child, format!("http://127.0.0.1:{}/check", port.trim()))
}

/// A request hook and a response hook, each asked by `how` (`url = …` or `command = […]`),
/// with `more` of each.
fn hooks(how: &str, more: &str) -> String {
    ["request", "response"]
        .map(|phase| format!("[[guardrails.hooks]]\n{how}\nphase = \"{phase}\"\n{more}\n"))
        .concat()
}

/// The policy as a command logging to `log`.
fn by_command(log: &Path) -> String {
    let python = deps::python();
    format!(
        "command = [{python:?}, {SCRIPT:?}, {:?}]",
        log.display().to_string()
    )
}

/// The messages the policy got.
fn asked(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

mod v2026_07_28 {
    mod guardrails {
        use super::super::*;

        /// Over HTTP, in ExtMCP's messages: a refused call is a tool error with the policy's
        /// reason and never reaches the server; rewritten arguments reach it; a replaced result
        /// is what the client gets, a withheld one a tool error; the hook is asked about the
        /// server's own name, with the exposed one and the caller in its context.
        #[test]
        fn a_hook_over_http_refuses_rewrites_and_replaces() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("asked.jsonl");
            let (mut policy, url) = policy_over_http(&log);
            let config = fixture_config(&hooks(&format!("url = {url:?}"), ""));
            let daemon = Daemon::start(&config, "metrics = true");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let echo = |id, text: &str| {
                let params = json!({"name": "fixture__echo", "arguments": {"text": text}});
                daemon.modern(id, "tools/call", params).json()
            };
            let denied = echo(1, "deny me");
            assert_eq!(denied["result"]["isError"], true, "{denied}");
            assert!(
                tool_text(&denied).contains("echo may not say that"),
                "{denied}"
            );
            assert_eq!(fixture_calls(&daemon), 0.0);
            let own_error = echo(2, "mcp error");
            assert_eq!(own_error["error"]["code"], -32001, "{own_error}");
            assert_eq!(own_error["error"]["message"], "policy says no");
            assert_eq!(tool_text(&echo(3, "rewrite me")), "rewritten by policy");
            assert_eq!(
                tool_text(&echo(4, "replace my result")),
                "replaced by policy"
            );
            let withheld = echo(5, "withhold my result");
            assert_eq!(withheld["result"]["isError"], true, "{withheld}");
            assert!(
                tool_text(&withheld).contains("this result stays here"),
                "{withheld}"
            );
            assert_eq!(tool_text(&echo(6, "plain")), "plain");
            assert_eq!(fixture_calls(&daemon), 4.0);
            let messages = asked(&log);
            let first = &messages[0];
            assert_eq!(first["serviceName"], "fixture", "{first}");
            assert_eq!(first["method"], "tools/call");
            assert_eq!(first["mcpRequest"]["name"], "echo", "{first}");
            assert_eq!(first["metadataContext"]["phase"], "request");
            assert_eq!(first["metadataContext"]["name"], "fixture__echo");
            assert!(
                first["metadataContext"]["caller"]["kind"].is_string(),
                "{first}"
            );
            let response = messages.iter().find(|m| m.get("mcpResponse").is_some());
            let response = response.unwrap_or_else(|| panic!("{messages:?}"));
            assert_eq!(response["metadataContext"]["phase"], "response");
            let _ = policy.kill();
        }

        /// A hook that misses its deadline: under `failMode = "deny"` the call is refused,
        /// saying the policy could not be asked; under `"allow"` it goes on. A command hook
        /// that missed one is started afresh, and answers the next call.
        #[test]
        fn a_hook_that_times_out_fails_closed_or_open_as_configured() {
            for (mode, goes_on) in [("deny", false), ("allow", true)] {
                let dir = tempfile::tempdir().unwrap();
                let log = dir.path().join("asked.jsonl");
                // Long enough for the restarted policy to start and answer on a busy machine.
                let more = format!("timeout = \"5s\"\nfailMode = \"{mode}\"");
                let config = fixture_config(&hooks(&by_command(&log), &more));
                let mut mcpx = Serve::start(&config);
                let params = json!({"name": "fixture__echo", "arguments": {"text": "slow"}});
                let answer = mcpx.call(1, "tools/call", modern(params));
                match goes_on {
                    true => assert_eq!(tool_text(&answer), "slow", "{answer}"),
                    false => {
                        assert_eq!(answer["result"]["isError"], true, "{answer}");
                        assert!(
                            tool_text(&answer).contains("could not be asked"),
                            "{answer}"
                        );
                    }
                }
                let params = json!({"name": "fixture__echo", "arguments": {"text": "rewrite me"}});
                let next = mcpx.call(2, "tools/call", modern(params));
                assert_eq!(tool_text(&next), "rewritten by policy", "{mode}: {next}");
            }
        }
    }
}

mod every_revision {
    mod guardrails {
        use super::super::*;

        /// A hook's URL may carry its key (`?key=…`, `user:key@`): when the hook cannot be
        /// asked, the refusal names its host and path, in both eras, and neither the caller nor
        /// mcpx's log is told the key.
        #[test]
        fn a_hooks_key_in_its_url_is_never_told() {
            let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = closed.local_addr().unwrap().port();
            drop(closed);
            let url =
                format!("url = \"http://hookuser:hookpass@127.0.0.1:{port}/check?key=s3cretKEY\"");
            let config = fixture_config(&hooks(&url, "failMode = \"deny\""));
            for modern_era in [false, true] {
                let mut mcpx = Serve::start(&config);
                let params = json!({"name": "fixture__echo", "arguments": {"text": "x"}});
                let params = match modern_era {
                    true => modern(params),
                    false => {
                        mcpx.initialize("2025-11-25");
                        params
                    }
                };
                let answer = mcpx.call(1, "tools/call", params);
                let text = tool_text(&answer);
                assert!(text.contains("could not be asked"), "{answer}");
                assert!(
                    text.contains(&format!("127.0.0.1:{port}/check")),
                    "{answer}"
                );
                assert!(
                    eventually(|| mcpx.stderr().contains("did not answer")),
                    "{}",
                    mcpx.stderr()
                );
                for secret in ["s3cretKEY", "hookpass", "hookuser"] {
                    assert!(!answer.to_string().contains(secret), "{answer}");
                    assert!(!mcpx.stderr().contains(secret), "{}", mcpx.stderr());
                }
            }
        }

        /// A kept-running command hook, in both eras: refused, rewritten and replaced alike,
        /// through every route to the tool (its exposed name, its server's own).
        #[test]
        fn a_command_hook_refuses_rewrites_and_replaces_in_both_eras() {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("asked.jsonl");
            let config = fixture_config(&hooks(&by_command(&log), ""));
            for modern_era in [false, true] {
                let mut mcpx = Serve::start(&config);
                let wrap = |params: Value| match modern_era {
                    true => modern(params),
                    false => params,
                };
                if !modern_era {
                    mcpx.initialize("2025-11-25");
                }
                for (n, tool) in ["fixture__echo", "echo"].into_iter().enumerate() {
                    let id = 10 * n as i64;
                    let mut echo = |id, text: &str| {
                        let params = json!({"name": tool, "arguments": {"text": text}});
                        mcpx.call(id, "tools/call", wrap(params))
                    };
                    let denied = echo(id + 1, "deny me");
                    assert!(
                        tool_text(&denied).contains("echo may not say that"),
                        "{denied}"
                    );
                    assert_eq!(
                        tool_text(&echo(id + 2, "rewrite me")),
                        "rewritten by policy"
                    );
                    let replaced = echo(id + 3, "replace my result");
                    assert_eq!(tool_text(&replaced), "replaced by policy", "{tool}");
                }
            }
            assert!(asked(&log).len() >= 12);
        }
    }
}
