//! The fixture's own check: with `--modern-only`, every result it gives is valid against the
//! 2026-07-28 schema, so that a strict client (the Python SDK v2) takes it directly, not only
//! through mcpx.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn schema_for(definition: &str) -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../spec/2026-07-28/schema.json"
    );
    let mut schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let defs = if schema.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    schema["$ref"] = json!(format!("#/{defs}/{definition}"));
    jsonschema::validator_for(&schema).unwrap()
}

mod v2026_07_28 {
    pub mod fixture {
        use super::super::*;

        #[test]
        fn every_modern_result_is_valid_against_the_schema() {
            let mut fixture = Command::new(env!("CARGO_BIN_EXE_fixture-upstream"))
                .arg("--modern-only")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut stdin = fixture.stdin.take().unwrap();
            let mut stdout = BufReader::new(fixture.stdout.take().unwrap());
            let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}});
            let requests = [
                ("server/discover", json!({}), "DiscoverResult"),
                ("tools/list", json!({}), "ListToolsResult"),
                ("prompts/list", json!({}), "ListPromptsResult"),
                ("resources/list", json!({}), "ListResourcesResult"),
                (
                    "resources/templates/list",
                    json!({}),
                    "ListResourceTemplatesResult",
                ),
                (
                    "resources/read",
                    json!({"uri": "fixture://hello"}),
                    "ReadResourceResult",
                ),
                (
                    "prompts/get",
                    json!({"name": "greet", "arguments": {"who": "Ada"}}),
                    "GetPromptResult",
                ),
                (
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "hi"}}),
                    "CallToolResult",
                ),
                (
                    "tools/call",
                    json!({"name": "kinds", "arguments": {}}),
                    "CallToolResult",
                ),
                (
                    "completion/complete",
                    json!({"ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "who", "value": "a"}}),
                    "CompleteResult",
                ),
            ];
            for (id, (method, mut params, definition)) in requests.into_iter().enumerate() {
                params["_meta"] = meta.clone();
                let request =
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                writeln!(stdin, "{request}").unwrap();
                let mut line = String::new();
                stdout.read_line(&mut line).unwrap();
                let answer: Value = serde_json::from_str(&line).unwrap();
                let result = answer
                    .get("result")
                    .unwrap_or_else(|| panic!("{method}: {answer}"));
                let errors: Vec<String> = schema_for(definition)
                    .iter_errors(result)
                    .map(|e| format!("{e} at {}", e.instance_path))
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{method} as {definition}: {errors:?}\n{result:#}"
                );
            }
            drop(stdin);
            let _ = fixture.wait();
        }
    }
}
