//! Upstream log messages through mcpx, for legacy clients: the fixture's logging tool (three
//! `info` messages during the call) behind `mcpx serve`, in each legacy revision, and the level
//! a client sets with `logging/setLevel`. 2026-07-28 removed protocol logging.

use crate::common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// mcpx with the fixture's conformance catalog (its `test_tool_with_logging`) behind it.
fn logging_fixture() -> Serve {
    Serve::start(&fixture_config(
        "args = [\"--conformance\"]\nprefix = \"\"\n",
    ))
}

/// Calls the logging tool as request `id`; the log messages that came before its answer.
fn call_logging_tool(mcpx: &mut Serve, id: i64, params: Value) -> Vec<Value> {
    mcpx.request(id, "tools/call", params);
    let mut logged = Vec::new();
    loop {
        let message = mcpx.next();
        if message["id"] == id && message.get("method").is_none() {
            assert!(message.get("result").is_some(), "{message}");
            return logged;
        }
        if message["method"] == "notifications/message" {
            logged.push(message);
        }
    }
}

fn logging_tool() -> Value {
    json!({"name": "test_tool_with_logging", "arguments": {}})
}

mod every_revision {
    pub mod logging {
        use super::super::*;

        /// In every legacy revision: mcpx declares `logging`, and the upstream's messages reach
        /// the caller during its call, schema-valid, tagged with the upstream.
        #[test]
        fn an_upstreams_log_messages_reach_the_legacy_caller_in_every_legacy_revision() {
            for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
                let mut mcpx = logging_fixture();
                let initialized = mcpx.initialize(revision);
                assert_eq!(
                    initialized["result"]["capabilities"]["logging"],
                    json!({}),
                    "{revision}: {initialized}"
                );
                let logged = call_logging_tool(&mut mcpx, 1, logging_tool());
                assert_eq!(logged.len(), 3, "{revision}: {logged:?}");
                for message in &logged {
                    assert_eq!(message["params"]["logger"], "fixture", "{message}");
                    assert_eq!(message["params"]["level"], "info", "{message}");
                    assert_schema(revision, "LoggingMessageNotification", message);
                }
            }
        }

        /// A real SDK client (the Python SDK v2, legacy era) receives the upstream's messages
        /// through its logging callback during the call.
        #[test]
        fn the_python_sdk_receives_an_upstreams_log_messages_during_a_call() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("config.toml");
            let fixture = fixture_config("args = [\"--conformance\"]\nprefix = \"\"\n");
            std::fs::write(&config, fixture).unwrap();
            let script = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/sdk/python_logging_client.py"
            );
            let out = std::process::Command::new(deps::python())
                .arg(script)
                .arg(mcpx_bin())
                .arg(&config)
                .arg("test_tool_with_logging")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
            let logged = report["logged"].as_array().cloned().unwrap_or_default();
            assert_eq!(logged.len(), 3, "{report}");
            assert!(logged.iter().all(|l| l["logger"] == "fixture"), "{report}");
            assert_eq!(logged[0]["data"], "Tool execution started", "{report}");
        }

        /// `logging/setLevel` answers `{}` and filters what the client gets from then on; an
        /// unknown level is invalid params.
        #[test]
        fn set_level_filters_the_clients_log_messages() {
            let mut mcpx = logging_fixture();
            mcpx.initialize("2025-11-25");
            let set = mcpx.call(1, "logging/setLevel", json!({"level": "warning"}));
            assert_eq!(set["result"], json!({}), "{set}");
            assert!(call_logging_tool(&mut mcpx, 2, logging_tool()).is_empty());
            mcpx.call(3, "logging/setLevel", json!({"level": "debug"}));
            assert_eq!(call_logging_tool(&mut mcpx, 4, logging_tool()).len(), 3);
            let bad = mcpx.call(5, "logging/setLevel", json!({"level": "loud"}));
            assert_eq!(bad["error"]["code"], -32602, "{bad}");
        }

        /// A 2026-07-28 call gets no log messages, and `logging/setLevel` does not exist there.
        #[test]
        fn a_modern_client_gets_no_protocol_logging() {
            let mut mcpx = logging_fixture();
            let logged = call_logging_tool(&mut mcpx, 1, modern(logging_tool()));
            assert!(logged.is_empty(), "{logged:?}");
            let set = mcpx.call(2, "logging/setLevel", modern(json!({"level": "info"})));
            assert_eq!(set["error"]["code"], -32601, "{set}");
            let rest = mcpx.drain(Duration::from_millis(200));
            assert!(
                rest.iter().all(|m| m["method"] != "notifications/message"),
                "{rest:?}"
            );
        }
    }
}
