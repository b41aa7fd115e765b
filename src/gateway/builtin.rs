//! The built-in `mcpx` server: read-only tools about the gateway itself, so that the first run
//! (with no configuration) shows something real, a failing upstream can be diagnosed from inside
//! an editor, and a client's round trip through mcpx can be checked (and measured) with no
//! upstream behind it.

use super::Listing;
use crate::protocol::Revision;
use crate::view::UpstreamView;
use serde_json::{json, Value};

/// The built-in server's catalog.
pub fn listing() -> Listing {
    let read_only = json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
    Listing {
        tools: vec![
            json!({
                "name": "upstreams",
                "description": "Lists the MCP servers configured behind mcpx with their state (ready, failed, exited), negotiated protocol revision and catalog sizes.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": read_only,
            }),
            json!({
                "name": "echo",
                "description": "Returns its text unchanged: a round trip through mcpx with no upstream behind it, to check a client's connection.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "annotations": read_only,
            }),
            json!({
                "name": "about",
                "description": "Reports the mcpx version, the configuration file in use and the MCP protocol revisions served.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": read_only,
            }),
        ],
        ..Listing::default()
    }
}

/// Runs a built-in tool; `tool` is a name from [`listing`].
pub fn call(
    tool: &str,
    arguments: Option<&Value>,
    upstreams: impl FnOnce() -> Vec<UpstreamView>,
    config_path: Option<&str>,
) -> Value {
    if tool == "echo" {
        let text = arguments
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return json!({ "content": [{"type": "text", "text": text}], "isError": false });
    }
    let report = match tool {
        "upstreams" => json!({ "upstreams": upstreams() }),
        _ => json!({
            "version": env!("CARGO_PKG_VERSION"),
            "config": config_path.unwrap_or("(none: built-in defaults)"),
            "revisions": Revision::all_strings(),
        }),
    };
    let text = serde_json::to_string_pretty(&report).unwrap_or_default();
    json!({ "content": [{"type": "text", "text": text}], "structuredContent": report, "isError": false })
}
