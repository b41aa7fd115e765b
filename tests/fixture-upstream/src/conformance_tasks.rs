//! The tools the conformance suite's `tasks-*` scenarios name (`--conformance-tasks`), served by
//! a server with no tasks of its own: mcpx makes their calls tasks ([servers.NAME] tasks and its
//! per-tool overrides), so the scenarios test mcpx's own tasks.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn tool(name: &str, description: &str, properties: Value) -> Value {
    json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties}})
}

pub fn tools() -> Vec<Value> {
    vec![
        tool(
            "greet",
            "Greets at once.",
            json!({"name": {"type": "string"}}),
        ),
        tool(
            "slow_compute",
            "Works for `seconds`, then says it is done.",
            json!({"seconds": {"type": "number"}, "label": {"type": "string"}}),
        ),
        tool("failing_job", "Fails (a tool error).", json!({})),
        tool("protocol_error_job", "Fails (a JSON-RPC error).", json!({})),
        tool(
            "confirm_delete",
            "Asks before it deletes.",
            json!({"filename": {"type": "string"}}),
        ),
        tool(
            "multi_input",
            "Asks for a name and a confirmation.",
            json!({}),
        ),
        tool(
            "test_tool_with_task",
            "Asks for a user name, then greets them after a while.",
            json!({}),
        ),
    ]
}

fn text(t: String) -> Result<Value, (i64, &'static str)> {
    Ok(json!({"content": [{"type": "text", "text": t}], "isError": false}))
}

/// A form elicitation of one field.
fn question(message: &str, field: &str, kind: &str) -> Value {
    json!({"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}}})
}

/// Runs one of the tools; `None` if `name` is not one. `ask` puts a question to the client;
/// `cancelled` says whether the call was cancelled.
pub fn call(
    name: &str,
    params: &Value,
    ask: &dyn Fn(&str, Value) -> Result<Value, Value>,
    cancelled: &dyn Fn() -> bool,
) -> Option<Result<Value, (i64, &'static str)>> {
    let args = &params["arguments"];
    let elicit = |message: &str, field: &str, kind: &str| {
        ask("elicitation/create", question(message, field, kind)).unwrap_or_default()
    };
    Some(match name {
        "greet" => text(format!(
            "Hello, {}!",
            args["name"].as_str().unwrap_or("world")
        )),
        "slow_compute" => {
            let seconds = args["seconds"].as_f64().unwrap_or(1.0);
            let until = Instant::now() + Duration::from_secs_f64(seconds.max(0.0));
            while Instant::now() < until {
                if cancelled() {
                    return Some(Err((-32800, "cancelled")));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let label = args["label"].as_str().unwrap_or("job");
            text(format!("{label} done after {seconds}s"))
        }
        "failing_job" => {
            Ok(json!({"content": [{"type": "text", "text": "the job failed"}], "isError": true}))
        }
        "protocol_error_job" => Err((-32603, "the job broke")),
        "confirm_delete" => {
            let filename = args["filename"].as_str().unwrap_or("the file");
            let answer = elicit(&format!("Delete {filename}?"), "confirm", "boolean");
            match answer["action"] == "accept" && answer["content"]["confirm"] == true {
                true => text(format!("deleted {filename}")),
                false => text(format!("kept {filename}")),
            }
        }
        "multi_input" => {
            let name = elicit("Your name?", "name", "string");
            let go = elicit("Go ahead?", "confirm", "boolean");
            text(format!(
                "thanks, {} ({})",
                name["content"]["name"].as_str().unwrap_or("?"),
                go["action"].as_str().unwrap_or("?")
            ))
        }
        "test_tool_with_task" => {
            let answer = elicit("Your name?", "name", "string");
            // Longer after the answer than the test's `promoteAfter` (5 s), so that the retry
            // becomes a task.
            std::thread::sleep(Duration::from_secs(6));
            text(format!(
                "Hello, {}!",
                answer["content"]["name"].as_str().unwrap_or("?")
            ))
        }
        _ => return None,
    })
}
