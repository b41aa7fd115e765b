//! The catalog the official MCP conformance suite expects of a server under test (its scenario
//! descriptions give the exact outputs), served through mcpx with `prefix = ""`.

use serde_json::{json, Value};
use std::time::Duration;

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
/// A 44-byte silent WAV header.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn no_args(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}})
}

pub fn tools() -> Vec<Value> {
    vec![
        no_args("test_simple_text", "Returns simple text."),
        no_args("test_image_content", "Returns an image."),
        no_args("test_audio_content", "Returns audio."),
        no_args("test_embedded_resource", "Returns an embedded resource."),
        no_args(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
        ),
        no_args(
            "test_tool_with_logging",
            "Logs three messages while it runs.",
        ),
        no_args("test_logging_tool", "Logs while it runs."),
        no_args("test_error_handling", "Always a tool error."),
        no_args(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100 of 100.",
        ),
        no_args("test_trigger_tool_change", "Changes the tool list."),
        no_args("test_trigger_prompt_change", "Changes the prompt list."),
        json!({"name": "test_sampling", "description": "Asks the client to sample.", "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}}),
        json!({"name": "test_elicitation", "description": "Asks the user.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}}),
        json!({"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}, "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]}, "then": {"required": ["phone"]}, "else": {"required": ["email"]},
            "additionalProperties": false}}),
    ]
}

/// Runs a conformance tool; `None` if `name` is not one. `send` writes a message to the client
/// (mcpx), for progress, logs and list changes.
pub fn call(
    name: &str,
    params: &Value,
    send: &dyn Fn(Value),
) -> Option<Result<Value, (i64, &'static str)>> {
    let content = |items: Vec<Value>| Ok(json!({"content": items}));
    Some(match name {
        "test_simple_text" => content(vec![text("This is a simple text response for testing.")]),
        "test_image_content" => content(vec![
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
        ]),
        "test_audio_content" => content(vec![
            json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
        ]),
        "test_embedded_resource" => content(vec![
            json!({"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}),
        ]),
        "test_multiple_content_types" => content(vec![
            text("Multiple content types test:"),
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}),
        ]),
        "test_tool_with_logging" | "test_logging_tool" => {
            for (i, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .iter()
            .enumerate()
            {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                send(
                    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": message}}),
                );
            }
            content(vec![text("Tool with logging executed successfully")])
        }
        "test_error_handling" => Ok(
            json!({"isError": true, "content": [text("This tool intentionally returns an error for testing")]}),
        ),
        "test_tool_with_progress" => {
            let token = params["_meta"]["progressToken"].clone();
            for (i, progress) in [0, 50, 100].iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if !token.is_null() {
                    send(
                        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": progress, "total": 100}}),
                    );
                }
            }
            content(vec![text("Tool with progress executed successfully")])
        }
        "test_trigger_tool_change" => {
            send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
            content(vec![text("Tool list change triggered")])
        }
        "test_trigger_prompt_change" => {
            send(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
            content(vec![text("Prompt list change triggered")])
        }
        // mcpx offers upstreams no client features yet (sampling, elicitation): say so.
        "test_sampling" | "test_elicitation" => {
            Ok(json!({"isError": true, "content": [text("the client does not support this")]}))
        }
        "json_schema_2020_12_tool" => content(vec![text("ok")]),
        _ => return None,
    })
}

pub fn prompts() -> Vec<Value> {
    vec![
        json!({"name": "test_simple_prompt", "description": "A simple prompt."}),
        json!({"name": "test_prompt_with_arguments", "description": "A prompt with arguments.", "arguments": [
            {"name": "arg1", "description": "First test argument", "required": true},
            {"name": "arg2", "description": "Second test argument", "required": true}]}),
        json!({"name": "test_prompt_with_embedded_resource", "description": "A prompt with an embedded resource.", "arguments": [
            {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]}),
        json!({"name": "test_prompt_with_image", "description": "A prompt with an image."}),
    ]
}

pub fn get_prompt(name: &str, args: &Value) -> Option<Value> {
    let user = |content: Value| json!({"role": "user", "content": content});
    let arg = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
    Some(match name {
        "test_simple_prompt" => {
            json!({"messages": [user(text("This is a simple prompt for testing."))]})
        }
        "test_prompt_with_arguments" => {
            json!({"messages": [user(text(&format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))))]})
        }
        "test_prompt_with_embedded_resource" => json!({"messages": [
            user(json!({"type": "resource", "resource": {"uri": arg("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."}})),
            user(text("Please process the embedded resource above."))]}),
        "test_prompt_with_image" => json!({"messages": [
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(text("Please analyze the image above."))]}),
        _ => return None,
    })
}

pub fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"}),
        json!({"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png"}),
        json!({"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"}),
    ]
}

pub fn templates() -> Vec<Value> {
    vec![
        json!({"uriTemplate": "test://template/{id}/data", "name": "template", "description": "A templated resource", "mimeType": "application/json"}),
    ]
}

pub fn read(uri: &str) -> Option<Value> {
    Some(match uri {
        "test://static-text" => {
            json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}]})
        }
        "test://static-binary" => {
            json!({"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]})
        }
        "test://watched-resource" => {
            json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": "Watched resource content."}]})
        }
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")?;
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": data.to_string()}]})
        }
    })
}
