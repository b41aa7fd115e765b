//! A 2026-07-28 client names itself on every request (`_meta["io.modelcontextprotocol/
//! clientInfo"]`), not at an `initialize`: mcpx names its session from the first request (stdio,
//! an attached editor), and every audit line of a request from what that request carried, over
//! stdio and HTTP alike, where no session names anyone.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// `params` of a 2026-07-28 request naming the client `name`.
fn named(name: &str, params: Value) -> Value {
    let mut params = modern(params);
    params["_meta"]["io.modelcontextprotocol/clientInfo"] = json!({"name": name, "version": "2.1"});
    params
}

/// The audit log's lines for `tools/call`.
fn audited_calls(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["method"] == "tools/call")
        .collect()
}

mod v2026_07_28 {
    pub mod naming {
        use super::super::*;

        #[test]
        fn a_modern_stdio_client_is_named_in_status_and_in_its_audit_lines() {
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let config = dir.path().join("mcpx.toml");
            std::fs::write(
                &config,
                format!(
                    "[admin]\nsocket = {:?}\n[audit]\npath = {:?}\nkeyFile = {:?}\n{}",
                    dir.path().join("admin.sock").display().to_string(),
                    audit.display().to_string(),
                    dir.path().join("audit.key").display().to_string(),
                    fixture_config("")
                ),
            )
            .unwrap();
            let mut mcpx = Serve::with_config_file(&config);
            let call = named(
                "claude-code",
                json!({"name": "fixture__echo", "arguments": {"text": "hi"}}),
            );
            let answer = mcpx.call(1, "tools/call", call);
            assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
            let status = std::process::Command::new(mcpx_bin())
                .args(["status", "--json", "--socket"])
                .arg(dir.path().join(format!("serve-{}.sock", mcpx.pid())))
                .output()
                .unwrap();
            let status: Value = serde_json::from_slice(&status.stdout).unwrap();
            let session = &status["sessions"][0];
            assert_eq!(session["client"]["name"], "claude-code", "{status}");
            assert_eq!(session["revision"], "2026-07-28", "{status}");
            assert!(eventually(|| !audited_calls(&audit).is_empty()));
            assert_eq!(audited_calls(&audit)[0]["client"]["name"], "claude-code");
        }

        #[test]
        fn each_modern_http_request_is_audited_under_the_client_it_names() {
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let d = Daemon::start(
                &format!(
                    "[audit]\npath = {:?}\nkeyFile = {:?}\n{}",
                    audit.display().to_string(),
                    dir.path().join("audit.key").display().to_string(),
                    fixture_config("")
                ),
                "",
            );
            for (id, client) in [(1, "codex"), (2, "gemini-cli")] {
                let params = named(
                    client,
                    json!({"name": "fixture__echo", "arguments": {"text": client}}),
                );
                let (headers, body) = modern_request(id, "tools/call", params);
                let reply = d.post(&header_refs(&headers), body.to_string().as_bytes());
                assert_eq!(reply.status, 200);
            }
            assert!(eventually(|| audited_calls(&audit).len() == 2));
            let names: Vec<Value> = audited_calls(&audit)
                .iter()
                .map(|line| line["client"]["name"].clone())
                .collect();
            assert_eq!(names, [json!("codex"), json!("gemini-cli")]);
        }
    }
}
