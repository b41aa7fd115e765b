//! Tasks as each generation writes them: 2025-11-25's (`params.task`, a `CreateTaskResult`
//! holding a `task`, `tasks/result`, the `related-task` `_meta`) and the 2026-07-28 extension's
//! (the server decides; a flat `resultType: "task"` result, `tasks/get` inlining the outcome,
//! `tasks/update`). The two do not interoperate: mcpx speaks each to the clients of its era, and
//! finds a task's id where that generation puts it.

use super::revision::Revision;
use super::Era;
use crate::json::Member;
use serde_json::Value;

/// The `_meta` key that ties a 2025-11-25 message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The first legacy revision with tasks.
pub const LEGACY_SINCE: Revision = Revision::V2025_11_25;

/// A 2025-11-25 `Task`'s fields.
pub const LEGACY_TASK_FIELDS: [&str; 7] = [
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttl",
    "pollInterval",
];

/// A 2026-07-28 `CreateTaskResult`'s fields: the extension's `Task`, flat in the result.
pub const CREATED_FIELDS: [&str; 9] = [
    "resultType",
    "_meta",
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttlMs",
    "pollIntervalMs",
];

/// Whether a task's status is one it ends in (the same three in both generations).
pub fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// Whether a revision has tasks of its own generation (2025-11-25, or the extension's era).
pub fn has_tasks(revision: Revision) -> bool {
    revision >= LEGACY_SINCE
}

/// Whether a `tools/call` result of `era` is a created task rather than the tool's result.
pub fn is_created(result: &Value, era: Era) -> bool {
    match era {
        Era::Modern => result.member("resultType").and_then(Value::as_str) == Some("task"),
        Era::Legacy => result.member("task").is_some_and(Value::is_object),
    }
}

/// The id of the task a result of `era` created, if it created one.
pub fn created_id(result: &Value, era: Era) -> Option<&str> {
    let task = match era {
        Era::Modern if is_created(result, era) => result,
        Era::Modern => return None,
        Era::Legacy => result.member("task")?,
    };
    task.member("taskId")?.as_str()
}

/// The task a created task's result of `era` describes: the flat result itself in 2026-07-28,
/// its `task` in 2025-11-25.
pub fn created_task_mut(result: &mut Value, era: Era) -> Option<&mut Value> {
    match era {
        Era::Modern => Some(result),
        Era::Legacy => result.member_mut("task"),
    }
}

/// How long a task is kept, in milliseconds, as the `Task` of `era` says (`ttl` in 2025-11-25,
/// `ttlMs` in the extension); `None` when it says unlimited or nothing.
pub fn ttl_ms(task: &Value, era: Era) -> Option<u64> {
    let key = match era {
        Era::Modern => "ttlMs",
        Era::Legacy => "ttl",
    };
    task.member(key).and_then(Value::as_u64)
}

/// The task id in a message's `related-task` `_meta`, to be shown as the client knows it.
pub fn related_task_id_mut(params: &mut Value) -> Option<&mut Value> {
    params
        .member_mut("_meta")?
        .member_mut(RELATED_TASK)?
        .member_mut("taskId")
}

/// Removes 2025-11-25's `related-task` from a message's params or result (and its `_meta`, were
/// that all it held): where the message goes, it would name a task by an id nobody there knows.
pub fn drop_related_task(message: &mut Value) {
    let Value::Object(message) = message else {
        return;
    };
    if let Some(Value::Object(meta)) = message.get_mut("_meta") {
        meta.remove(RELATED_TASK);
        if meta.is_empty() {
            message.remove("_meta");
        }
    }
}

/// Whether a 2025-11-25 server's capabilities let a client ask it for a task on `tools/call`.
pub fn serves_tool_tasks(capabilities: &Value) -> bool {
    let requests = capabilities
        .member("tasks")
        .and_then(|t| t.member("requests"));
    let tools = requests.and_then(|r| r.member("tools"));
    tools.and_then(|t| t.member("call")).is_some()
}

/// Drops `execution.taskSupport` from the tools of a server whose capabilities do not back it:
/// it means nothing from such a server, and mcpx, which declares tasks to its own clients,
/// would make it something a client acts on.
pub fn drop_unbacked_task_support(tools: &mut [Value], capabilities: &Value) {
    if serves_tool_tasks(capabilities) {
        return;
    }
    for tool in tools {
        let Some(Value::Object(execution)) = tool.member_mut("execution") else {
            continue;
        };
        execution.remove("taskSupport");
        if execution.is_empty() {
            if let Value::Object(tool) = tool {
                tool.remove("execution");
            }
        }
    }
}

#[cfg(test)]
mod v2025_11_25 {
    mod tasks {
        use crate::protocol::task::{CREATED_FIELDS, LEGACY_TASK_FIELDS};
        use serde_json::Value;
        use std::collections::BTreeSet;

        fn definition(path: &str, name: &str) -> BTreeSet<String> {
            let path = format!(
                "{}/tests/spec/{path}/schema.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let schema: Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            let definitions = schema.get("$defs").or_else(|| schema.get("definitions"));
            definitions.unwrap()[name]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        }

        #[test]
        fn task_support_is_dropped_from_a_server_that_does_not_declare_tool_tasks() {
            use crate::protocol::task::drop_unbacked_task_support;
            use serde_json::json;
            let tool = json!({"name": "t", "execution": {"taskSupport": "optional"}});
            let mut tools = vec![tool.clone()];
            let backed = json!({"tasks": {"requests": {"tools": {"call": {}}}}});
            drop_unbacked_task_support(&mut tools, &backed);
            assert_eq!(tools, [tool]);
            drop_unbacked_task_support(&mut tools, &json!({"tasks": {"list": {}}}));
            assert_eq!(tools, [json!({"name": "t"})]);
        }

        #[test]
        fn a_legacy_task_has_the_fields_of_the_2025_11_25_schema() {
            let ours: BTreeSet<String> = LEGACY_TASK_FIELDS.map(str::to_owned).into();
            assert_eq!(ours, definition("2025-11-25", "Task"));
        }

        /// The extension's `CreateTaskResult` is `Result & Task`: the task's fields, flat, and
        /// the result's own.
        #[test]
        fn a_created_extension_task_has_the_fields_of_the_extension_schema() {
            let mut expected = definition("ext-tasks", "Task");
            expected.extend(["resultType".to_owned(), "_meta".to_owned()]);
            let ours: BTreeSet<String> = CREATED_FIELDS.map(str::to_owned).into();
            assert_eq!(ours, expected);
        }
    }
}
