//! Shaping what mcpx sends for the revision the client speaks.
//!
//! An upstream may speak a newer revision than the client, so its results can hold fields and
//! content kinds that the client's revision never defined. Every object mcpx forwards is cut down to
//! the fields its definition has in the client's revision (the [`Definition`] tables below, checked
//! against the official schemas by the tests), and content kinds a revision lacks become text that
//! says what was there. Modern results get their required envelope fields (`resultType`, and
//! `ttlMs`/`cacheScope` where the schema makes them required); legacy results lose them.

use super::definition::Definition;
use super::envelope;
use super::Revision::{self, *};
use super::{task, Era, Extensions};
use crate::json::Member;
use crate::jsonrpc::MetaEntry;
use crate::protocol::Method;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::LazyLock;

impl Definition {
    /// Drops every field of `object` that this definition lacks in `revision` and that none
    /// of `extensions` adds to it.
    fn retain(self, object: &mut Value, revision: Revision, extensions: Extensions) {
        if let Value::Object(map) = object {
            map.retain(|key, _| {
                self.fields_in(revision).any(|field| field == key) || extensions.adds(self, key)
            });
            if let Some(annotations) = map.member_mut("annotations") {
                retain_annotations(annotations, revision);
            }
        }
    }
}

/// Content annotations gained `lastModified` in 2025-06-18.
fn retain_annotations(annotations: &mut Value, revision: Revision) {
    if revision < V2025_06_18 {
        if let Value::Object(map) = annotations {
            map.remove("lastModified");
        }
    }
}

/// The `_meta` key under which a modern result names its server.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// How long a client may cache mcpx's cacheable results. Zero: upstream catalogs change whenever
/// an upstream says so, and a listen stream is the way to hear about it.
pub const CACHE_TTL_MS: u64 = 0;

/// A gateway's catalog mixes upstreams configured for one user, so it is never shared.
pub const CACHE_SCOPE: &str = "private";

/// Shapes the result of `method` for a client of `revision` that negotiated `extensions`. A
/// modern result's `serverInfo` is added as it is written ([`server_info`]).
pub fn result(
    method: Method,
    revision: Revision,
    extensions: Extensions,
    mut result: Value,
) -> Value {
    if !result.is_object() {
        result = json!({});
    }
    let input_required =
        result.member("resultType").and_then(Value::as_str) == Some("input_required");
    // Only a modern client is ever given one; its content is the questions, not a result.
    if input_required && revision >= V2026_07_28 {
        Definition::InputRequiredResult.retain(&mut result, revision, extensions);
        envelope(method, revision, &mut result);
        return result;
    }
    match method {
        Method::ToolsList => each(&mut result, "tools", |tool| {
            shape_tool(tool, revision, extensions)
        }),
        Method::PromptsList => each(&mut result, "prompts", |prompt| {
            shape_prompt(prompt, revision, extensions)
        }),
        Method::ResourcesList => each(&mut result, "resources", |r| {
            Definition::Resource.retain(r, revision, extensions)
        }),
        Method::ResourcesTemplatesList => each(&mut result, "resourceTemplates", |t| {
            Definition::ResourceTemplate.retain(t, revision, extensions)
        }),
        // A created task, not the tool's result: kept as its generation writes it.
        Method::ToolsCall
            if task::has_tasks(revision) && task::is_created(&result, revision.era()) =>
        {
            retain_created_task(&mut result, revision)
        }
        Method::ToolsCall | Method::TasksResult => {
            Definition::CallToolResult.retain(&mut result, revision, extensions);
            each(&mut result, "content", |c| {
                shape_content(c, revision, extensions)
            });
        }
        Method::PromptsGet => {
            Definition::GetPromptResult.retain(&mut result, revision, extensions);
            each(&mut result, "messages", |message| {
                if let Some(content) = message.member_mut("content") {
                    shape_content(content, revision, extensions);
                }
            });
        }
        Method::ResourcesRead => {
            Definition::ReadResourceResult.retain(&mut result, revision, extensions);
            each(&mut result, "contents", |c| {
                shape_resource_contents(c, revision, extensions)
            });
        }
        Method::CompletionComplete => {
            Definition::CompleteResult.retain(&mut result, revision, extensions)
        }
        // 2025-11-25's `GetTaskResult` and `CancelTaskResult` are `Result & Task`.
        Method::TasksGet | Method::TasksCancel if revision.era() == Era::Legacy => {
            if let Value::Object(map) = &mut result {
                map.retain(|key, _| {
                    key == "_meta" || task::LEGACY_TASK_FIELDS.contains(&key.as_str())
                });
            }
        }
        // Kept as made: mcpx writes these itself (or passes a task's state as its extension
        // defines it), and none has a definition that differs by revision.
        Method::Initialize
        | Method::Ping
        | Method::ServerDiscover
        | Method::SubscriptionsListen
        | Method::ResourcesSubscribe
        | Method::ResourcesUnsubscribe
        | Method::LoggingSetLevel
        | Method::SamplingCreateMessage
        | Method::ElicitationCreate
        | Method::RootsList
        | Method::SkillsList
        | Method::SkillsGet
        | Method::ResourcesDirectoryRead
        | Method::TasksGet
        | Method::TasksList
        | Method::TasksCancel
        | Method::TasksUpdate
        | Method::EventsList
        | Method::EventsPoll
        | Method::EventsStream
        | Method::EventsSubscribe
        | Method::EventsUnsubscribe => {}
    }
    envelope(method, revision, &mut result);
    result
}

/// Adds or removes the modern envelope fields of a result.
fn envelope(method: Method, revision: Revision, result: &mut Value) {
    let Value::Object(map) = result else { return };
    if revision < V2026_07_28 {
        for key in ["resultType", "ttlMs", "cacheScope"] {
            map.remove(key);
        }
        // 2025-11-25 ties a task's messages to it in `_meta`.
        let related_task = |key: &str| key == task::RELATED_TASK && task::has_tasks(revision);
        if let Some(Value::Object(meta)) = map.member_mut("_meta") {
            meta.retain(|key, _| !key.starts_with("io.modelcontextprotocol/") || related_task(key));
            if meta.is_empty() {
                map.remove("_meta");
            }
        }
        return;
    }
    let complete = match map.member("resultType") {
        Some(kind) => kind == "complete",
        None => {
            map.insert("resultType".into(), json!("complete"));
            true
        }
    };
    if method.is_cacheable() && complete {
        map.entry("ttlMs").or_insert(json!(CACHE_TTL_MS));
        map.entry("cacheScope").or_insert(json!(CACHE_SCOPE));
    }
}

/// What a 2026-07-28 result is written with in its `_meta`: mcpx's `Implementation` under
/// [`SERVER_INFO_KEY`], as the specification asks of every result (an upstream's own entry is
/// replaced).
pub fn server_info() -> MetaEntry {
    static MCPX_JSON: LazyLock<Box<RawValue>> = LazyLock::new(|| {
        serde_json::value::to_raw_value(&envelope::MCPX).expect("a struct of two strings")
    });
    MetaEntry {
        key: SERVER_INFO_KEY,
        value: &MCPX_JSON,
    }
}

/// A created task as its generation writes it: 2025-11-25's `CreateTaskResult` (a `task` of the
/// `Task`'s fields), the extension's flat `Task` result.
fn retain_created_task(result: &mut Value, revision: Revision) {
    let Value::Object(map) = result else { return };
    match revision.era() {
        Era::Legacy => {
            map.retain(|key, _| key == "task" || key == "_meta");
            if let Some(Value::Object(task)) = map.get_mut("task") {
                task.retain(|key, _| task::LEGACY_TASK_FIELDS.contains(&key.as_str()));
            }
        }
        Era::Modern => map.retain(|key, _| task::CREATED_FIELDS.contains(&key.as_str())),
    }
}

fn each(result: &mut Value, key: &str, mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = result.member_mut(key) {
        items.iter_mut().for_each(&mut f);
    }
}

fn shape_tool(tool: &mut Value, revision: Revision, extensions: Extensions) {
    Definition::Tool.retain(tool, revision, extensions);
}

fn shape_prompt(prompt: &mut Value, revision: Revision, extensions: Extensions) {
    Definition::Prompt.retain(prompt, revision, extensions);
    each(prompt, "arguments", |a| {
        Definition::PromptArgument.retain(a, revision, extensions)
    });
}

fn shape_resource_contents(contents: &mut Value, revision: Revision, extensions: Extensions) {
    if contents.member("blob").is_some() {
        Definition::BlobResourceContents.retain(contents, revision, extensions);
    } else {
        Definition::TextResourceContents.retain(contents, revision, extensions);
    }
}

/// Shapes one content block; a kind the revision lacks becomes a text block describing it.
pub fn shape_content(content: &mut Value, revision: Revision, extensions: Extensions) {
    let kind = content
        .member("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let definition = match kind {
        "text" => Definition::TextContent,
        "image" => Definition::ImageContent,
        "audio" => Definition::AudioContent,
        "resource" => Definition::EmbeddedResource,
        "resource_link" => Definition::ResourceLink,
        _ => {
            *content = json!({ "type": "text", "text": format!("[content of type {kind:?} omitted: not defined in MCP {revision}]") });
            return;
        }
    };
    if revision < definition.since() {
        *content = json!({ "type": "text", "text": describe(content, kind, revision) });
        return;
    }
    definition.retain(content, revision, extensions);
    if let Some(resource) = content.member_mut("resource") {
        shape_resource_contents(resource, revision, extensions);
    }
}

/// The text that stands in for a content block a revision cannot carry.
fn describe(content: &Value, kind: &str, revision: Revision) -> String {
    let field = |key: &str| content.member(key).and_then(Value::as_str).unwrap_or("");
    match kind {
        "resource_link" => {
            let mut text = format!("Resource link: {} <{}>", field("name"), field("uri"));
            if !field("description").is_empty() {
                text.push_str(&format!(" - {}", field("description")));
            }
            text
        }
        _ => format!(
            "[{kind} content ({}) omitted: MCP {revision} cannot carry it]",
            field("mimeType")
        ),
    }
}

/// Shapes a progress notification's params for a client of `revision` (a `message` only since
/// 2025-03-26).
pub fn progress_params(revision: Revision, params: &mut Value) {
    if revision < V2025_03_26 {
        if let Value::Object(map) = params {
            map.remove("message");
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod shape {
        use crate::jsonrpc;
        use crate::protocol::shape;
        use crate::protocol::{Extension, Extensions, Method, Revision};
        use serde_json::{json, Value};

        #[test]
        fn resource_link_becomes_text_before_2025_06_18() {
            let link =
                json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]});
            let old = shape::result(
                Method::ToolsCall,
                Revision::V2025_03_26,
                Extensions::NONE,
                link.clone(),
            );
            assert_eq!(old["content"][0]["type"], "text");
            assert!(old["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("file:///a"));
            let new = shape::result(
                Method::ToolsCall,
                Revision::V2025_06_18,
                Extensions::NONE,
                link,
            );
            assert_eq!(new["content"][0]["type"], "resource_link");
        }

        #[test]
        fn audio_becomes_text_in_2024_11_05() {
            let audio =
                json!({"content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]});
            let old = shape::result(
                Method::ToolsCall,
                Revision::V2024_11_05,
                Extensions::NONE,
                audio,
            );
            assert_eq!(old["content"][0]["type"], "text");
        }

        #[test]
        fn result_type_only_for_2026_07_28() {
            for revision in Revision::ALL {
                let r = shape::result(
                    Method::ToolsList,
                    revision,
                    Extensions::NONE,
                    json!({"tools": [], "resultType": "complete"}),
                );
                assert_eq!(
                    r.get("resultType").is_some(),
                    revision == Revision::V2026_07_28,
                    "{revision}"
                );
                assert_eq!(
                    r.get("ttlMs").is_some(),
                    revision == Revision::V2026_07_28,
                    "{revision}"
                );
            }
        }

        /// An upstream's `serverInfo` is replaced, a `_meta` that is not an object too; the
        /// envelope is written last.
        #[test]
        fn a_modern_result_is_written_with_mcpx_server_info_in_its_meta() {
            let written = |result: Value| {
                let mut response = jsonrpc::Response::result(jsonrpc::Id::Number(1), result);
                response.meta_entry = Some(shape::server_info());
                let message = serde_json::to_value(&response).unwrap();
                serde_json::to_string(&message["result"]).unwrap()
            };
            let mcpx = serde_json::to_string(&crate::protocol::envelope::MCPX).unwrap();
            let key = shape::SERVER_INFO_KEY;
            assert_eq!(
                written(json!({"content": [], "isError": false})),
                format!(r#"{{"content":[],"isError":false,"_meta":{{"{key}":{mcpx}}}}}"#)
            );
            assert_eq!(
                written(json!({"_meta": {key: {"name": "up"}, "k": 1}, "content": []})),
                format!(r#"{{"content":[],"_meta":{{"k":1,"{key}":{mcpx}}}}}"#)
            );
            assert_eq!(
                written(json!({"_meta": 5})),
                format!(r#"{{"_meta":{{"{key}":{mcpx}}}}}"#)
            );
            assert_eq!(written(json!([1])), "[1]");
        }

        #[test]
        fn structured_content_only_from_2025_06_18() {
            let r = json!({"content": [], "structuredContent": {"a": 1}});
            assert!(shape::result(
                Method::ToolsCall,
                Revision::V2025_03_26,
                Extensions::NONE,
                r.clone()
            )
            .get("structuredContent")
            .is_none());
            assert!(shape::result(
                Method::ToolsCall,
                Revision::V2025_06_18,
                Extensions::NONE,
                r
            )
            .get("structuredContent")
            .is_some());
        }

        /// What an App reads survives for a client that negotiated Apps, whatever its revision
        /// defines: a tool's and a resource's `_meta.ui`, a read's content `_meta.ui`, a call's
        /// `structuredContent`; a client without Apps gets its revision's fields.
        #[test]
        fn apps_fields_survive_shaping_in_every_revision() {
            let apps = Extensions::NONE.with(Extension::Apps);
            let ui = json!({"ui": {"resourceUri": "ui://widget/view.html", "visibility": ["app"]}});
            for revision in Revision::ALL {
                let shaped = |method, extensions, result| {
                    shape::result(method, revision, extensions, result)
                };
                let tools = json!({"tools": [{"name": "show", "inputSchema": {}, "_meta": ui}]});
                let listed = shaped(Method::ToolsList, apps, tools.clone());
                assert_eq!(listed["tools"][0]["_meta"], ui, "{revision}");
                let resources = json!({"resources": [{"uri": "ui://widget/view.html", "name": "v",
                    "_meta": {"ui": {"prefersBorder": true}}}]});
                let listed = shaped(Method::ResourcesList, apps, resources);
                assert_eq!(listed["resources"][0]["_meta"]["ui"]["prefersBorder"], true);
                let read = json!({"contents": [{"uri": "ui://widget/view.html", "text": "<p>",
                    "mimeType": "text/html;profile=mcp-app", "_meta": {"ui": {"domain": "a"}}}]});
                let read = shaped(Method::ResourcesRead, apps, read);
                assert_eq!(
                    read["contents"][0]["_meta"]["ui"]["domain"], "a",
                    "{revision}"
                );
                let call = json!({"content": [], "structuredContent": {"server": "a"}});
                let called = shaped(Method::ToolsCall, apps, call.clone());
                assert_eq!(called["structuredContent"]["server"], "a", "{revision}");
                let without = shaped(Method::ToolsList, Extensions::NONE, tools);
                let defined = revision >= Revision::V2025_06_18;
                assert_eq!(
                    without["tools"][0].get("_meta").is_some(),
                    defined,
                    "{revision}"
                );
                let without = shaped(Method::ToolsCall, Extensions::NONE, call);
                let kept = without.get("structuredContent").is_some();
                assert_eq!(kept, defined, "{revision}");
            }
        }
    }
}
