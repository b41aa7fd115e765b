//! The catalog the official MCP conformance suite expects of a server under test (its scenario
//! descriptions give the exact outputs), served through mcpx with `prefix = ""`.
//!
//! The legacy fixture (`--conformance`) asks its questions (sampling, elicitation) as requests of
//! its own, which mcpx carries to legacy clients and turns into `InputRequiredResult`s for modern
//! ones. The suite's multi-round scenarios fix the exact `inputRequests` keys a server returns, so
//! those tools come from a modern fixture (`--conformance-rounds`), whose results mcpx passes
//! through.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often `test_trigger_tool_change` and `test_trigger_prompt_change` ran: each really changes
/// its list (a gateway passes on a change, not an announcement that changed nothing).
static TOOL_CHANGES: AtomicU64 = AtomicU64::new(0);
static PROMPT_CHANGES: AtomicU64 = AtomicU64::new(0);

/// The item a trigger changes, once it has run.
fn changed(counter: &AtomicU64, item: impl Fn(u64) -> Value) -> Option<Value> {
    match counter.load(Ordering::Relaxed) {
        0 => None,
        n => Some(item(n)),
    }
}

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
    let dynamic = changed(&TOOL_CHANGES, |n| {
        no_args("test_dynamic_tool", &format!("Changed {n} times."))
    });
    dynamic.into_iter().chain(vec![
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
        no_args(
            "test_elicitation_sep1034_defaults",
            "Elicits with a default for every primitive type.",
        ),
        no_args(
            "test_elicitation_sep1330_enums",
            "Elicits with every enum schema variant.",
        ),
        no_args("test_missing_capability", "Needs sampling from the client."),
        no_args("test_streaming_elicitation", "Asks the user mid-call."),
        json!({"name": "test_elicitation", "description": "Asks the user.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}}),
        json!({"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}, "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]}, "then": {"required": ["phone"]}, "else": {"required": ["email"]},
            "additionalProperties": false}}),
    ])
    .collect()
}

/// Runs a conformance tool; `None` if `name` is not one. `send` writes a message to the client
/// (mcpx), for progress, logs and list changes; `ask` sends a request and waits for the answer.
pub fn call(
    name: &str,
    params: &Value,
    send: &dyn Fn(Value),
    ask: &dyn Fn(&str, Value) -> Result<Value, Value>,
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
            TOOL_CHANGES.fetch_add(1, Ordering::Relaxed);
            send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
            content(vec![text("Tool list change triggered")])
        }
        "test_trigger_prompt_change" => {
            PROMPT_CHANGES.fetch_add(1, Ordering::Relaxed);
            send(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
            content(vec![text("Prompt list change triggered")])
        }
        "test_sampling" | "test_missing_capability" => {
            let prompt = params["arguments"]["prompt"]
                .as_str()
                .unwrap_or("Say hello");
            let question =
                json!({"messages": [{"role": "user", "content": text(prompt)}], "maxTokens": 100});
            answered(ask("sampling/createMessage", question), |answer| {
                format!(
                    "LLM response: {}",
                    answer["content"]["text"].as_str().unwrap_or_default()
                )
            })
        }
        "test_elicitation" | "test_streaming_elicitation" => {
            let message = params["arguments"]["message"]
                .as_str()
                .unwrap_or("Who are you?");
            let question = json!({"message": message, "requestedSchema": {"type": "object", "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}},
                "required": ["username", "email"]}});
            answered(ask("elicitation/create", question), |answer| {
                format!(
                    "User response: <action: {}, content: {}>",
                    answer["action"], answer["content"]
                )
            })
        }
        "test_elicitation_sep1034_defaults" => {
            let question = json!({"message": "Please review your details", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}}}});
            answered(ask("elicitation/create", question), completed)
        }
        "test_elicitation_sep1330_enums" => {
            let question = json!({"message": "Choose", "requestedSchema": {"type": "object", "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}}}});
            answered(ask("elicitation/create", question), completed)
        }
        "json_schema_2020_12_tool" => content(vec![text("ok")]),
        _ => return None,
    })
}

/// A tool result from the client's answer, or a tool error saying it could not answer.
fn answered(
    answer: Result<Value, Value>,
    say: impl Fn(&Value) -> String,
) -> Result<Value, (i64, &'static str)> {
    Ok(match answer {
        Ok(answer) => json!({"content": [text(&say(&answer))]}),
        Err(error) => {
            json!({"isError": true, "content": [text(&format!("the client could not answer: {error}"))]})
        }
    })
}

fn completed(answer: &Value) -> String {
    format!(
        "Elicitation completed: action={}, content={}",
        answer["action"].as_str().unwrap_or_default(),
        answer["content"]
    )
}

/// The multi-round tools of the 2026-07-28 suite (`--conformance-rounds`).
pub fn round_tools() -> Vec<Value> {
    [
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
    ]
    .iter()
    .map(|name| no_args(name, "A multi-round tool of the conformance suite."))
    .collect()
}

/// The multi-round prompt of the 2026-07-28 suite.
pub fn round_prompts() -> Vec<Value> {
    vec![
        json!({"name": "test_input_required_result_prompt", "description": "A prompt that needs context from the user."}),
    ]
}

/// The state the multi-round tools hand out: what they saw so far, with a tag that a change
/// to any byte invalidates (a toy stand-in for the HMAC a real server would use).
fn seal(state: &Value) -> String {
    let text = state.to_string();
    let tag = text
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    format!("{tag:016x}.{text}")
}

fn unseal(sealed: &str) -> Option<Value> {
    let (_, text) = sealed.split_once('.')?;
    (seal(&serde_json::from_str(text).ok()?) == sealed).then(|| serde_json::from_str(text).ok())?
}

/// A multi-round tool or prompt: round by round, an `InputRequiredResult` until the answers it
/// needs are in, then the result. `None` if `name` is not one.
pub fn round(name: &str, params: &Value) -> Option<Result<Value, (i64, &'static str)>> {
    let elicit = |message: &str, field: &str, kind: &str| {
        json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": {
            "type": "object", "properties": {field: {"type": kind}}, "required": [field]}}})
    };
    let sample = |prompt: &str, tokens: u64| {
        json!({"method": "sampling/createMessage", "params": {"messages": [
            {"role": "user", "content": text(prompt)}], "maxTokens": tokens}})
    };
    let roots = json!({"method": "roots/list", "params": {}});
    let responses = &params["inputResponses"];
    let state = params["requestState"].as_str();
    let input = |requests: Value, state: Option<Value>| {
        let mut result = json!({"resultType": "input_required", "inputRequests": requests});
        if let Some(state) = state {
            result["requestState"] = json!(seal(&state));
        }
        Ok(result)
    };
    let done = |t: String| Ok(json!({"content": [text(&t)]}));
    let answer_of = |key: &str| responses.get(key).filter(|r| r.is_object());
    Some(match name {
        "test_input_required_result_elicitation" => match answer_of("user_name") {
            Some(a) => done(format!(
                "Hello, {}!",
                a["content"]["name"].as_str().unwrap_or("there")
            )),
            None => input(
                json!({"user_name": elicit("What is your name?", "name", "string")}),
                None,
            ),
        },
        "test_input_required_result_sampling" => match answer_of("capital_question") {
            Some(a) => done(format!(
                "The model said: {}",
                a["content"]["text"].as_str().unwrap_or_default()
            )),
            None => input(
                json!({"capital_question": sample("What is the capital of France?", 100)}),
                None,
            ),
        },
        "test_input_required_result_list_roots" => match answer_of("client_roots") {
            Some(a) => done(format!("Roots: {}", a["roots"])),
            None => input(json!({"client_roots": roots}), None),
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => match (answer_of("confirm"), state) {
            (Some(_), Some(state)) => match unseal(state) {
                Some(_) => done("state-ok: confirmed".into()),
                None => {
                    return Some(Err((
                        -32602,
                        "Invalid params: requestState failed its integrity check",
                    )))
                }
            },
            _ => {
                let confirm = elicit("Please confirm", "ok", "boolean");
                input(json!({"confirm": confirm}), Some(json!({"round": 1})))
            }
        },
        "test_input_required_result_multiple_inputs" => {
            let keys = ["user_name", "greeting", "client_roots"];
            match (
                keys.iter().all(|k| answer_of(k).is_some()),
                state.and_then(unseal),
            ) {
                (true, Some(_)) => done("All inputs received".into()),
                _ => input(
                    json!({"user_name": elicit("What is your name?", "name", "string"),
                        "greeting": sample("Generate a greeting", 50), "client_roots": roots}),
                    Some(json!({"round": 1})),
                ),
            }
        }
        "test_input_required_result_multi_round" => {
            let round = state
                .and_then(unseal)
                .and_then(|s| s["round"].as_u64())
                .unwrap_or(0);
            match (round, answer_of("step1"), answer_of("step2")) {
                (1, Some(_), _) => input(
                    json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                    Some(json!({"round": 2})),
                ),
                (2, _, Some(_)) => done("Both steps completed".into()),
                _ => input(
                    json!({"step1": elicit("Step 1: What is your name?", "name", "string")}),
                    Some(json!({"round": 1})),
                ),
            }
        }
        "test_input_required_result_capabilities" => {
            let declared = &params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
            if responses.is_object() {
                done("Capabilities respected".into())
            } else {
                let mut requests = json!({});
                if declared.get("sampling").is_some() {
                    requests["capital_question"] = sample("What is the capital of France?", 100);
                }
                if declared.get("elicitation").is_some() {
                    requests["user_name"] = elicit("What is your name?", "name", "string");
                }
                if requests.as_object().is_some_and(|r| r.is_empty()) {
                    done("No input could be requested".into())
                } else {
                    input(requests, None)
                }
            }
        }
        "test_input_required_result_prompt" => match answer_of("user_context") {
            Some(a) => Ok(
                json!({"messages": [{"role": "user", "content": text(&format!(
                "Context: {}", a["content"]["context"].as_str().unwrap_or_default()))}]}),
            ),
            None => input(
                json!({"user_context": elicit("What context should the prompt use?", "context", "string")}),
                None,
            ),
        },
        _ => return None,
    })
}

pub fn prompts() -> Vec<Value> {
    let dynamic = changed(
        &PROMPT_CHANGES,
        |n| json!({"name": "test_dynamic_prompt", "description": format!("Changed {n} times.")}),
    );
    dynamic.into_iter().chain(vec![
        json!({"name": "test_simple_prompt", "description": "A simple prompt."}),
        json!({"name": "test_prompt_with_arguments", "description": "A prompt with arguments.", "arguments": [
            {"name": "arg1", "description": "First test argument", "required": true},
            {"name": "arg2", "description": "Second test argument", "required": true}]}),
        json!({"name": "test_prompt_with_embedded_resource", "description": "A prompt with an embedded resource.", "arguments": [
            {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]}),
        json!({"name": "test_prompt_with_image", "description": "A prompt with an image."}),
    ])
    .collect()
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
