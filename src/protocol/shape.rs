//! Shaping what mcpx sends for the revision the client speaks.
//!
//! An upstream may speak a newer revision than the client, so its results can hold fields and
//! content kinds that the client's revision never defined. Every object mcpx forwards is cut down to
//! the fields its definition has in the client's revision (the [`Definition`] tables below, checked
//! against the official schemas by the tests), and content kinds a revision lacks become text that
//! says what was there. Modern results get their required envelope fields (`resultType`, and
//! `ttlMs`/`cacheScope` where the schema makes them required); legacy results lose them.

use super::envelope;
use super::Revision::{self, *};
use crate::json::Member;
use crate::jsonrpc::MetaEntry;
use crate::protocol::Method;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::LazyLock;

/// A field and the first and last revisions whose schema defines it.
type Field = (&'static str, Revision, Revision);

const FIRST: Revision = V2024_11_05;
const LAST: Revision = V2026_07_28;

/// An object definition of the schema whose fields mcpx filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Definition {
    /// `Tool`.
    Tool,
    /// `Prompt`.
    Prompt,
    /// `PromptArgument`.
    PromptArgument,
    /// `Resource`.
    Resource,
    /// `ResourceTemplate`.
    ResourceTemplate,
    /// `TextContent`.
    TextContent,
    /// `ImageContent`.
    ImageContent,
    /// `AudioContent`.
    AudioContent,
    /// `EmbeddedResource`.
    EmbeddedResource,
    /// `ResourceLink`.
    ResourceLink,
    /// `TextResourceContents`.
    TextResourceContents,
    /// `BlobResourceContents`.
    BlobResourceContents,
    /// `CallToolResult`.
    CallToolResult,
    /// `GetPromptResult`.
    GetPromptResult,
    /// `ReadResourceResult`.
    ReadResourceResult,
    /// `CompleteResult`.
    CompleteResult,
    /// `InputRequiredResult` (2026-07-28).
    InputRequiredResult,
}

impl Definition {
    /// Every filtered definition, for the schema tests.
    pub const ALL: [Definition; 17] = [
        Definition::Tool,
        Definition::Prompt,
        Definition::PromptArgument,
        Definition::Resource,
        Definition::ResourceTemplate,
        Definition::TextContent,
        Definition::ImageContent,
        Definition::AudioContent,
        Definition::EmbeddedResource,
        Definition::ResourceLink,
        Definition::TextResourceContents,
        Definition::BlobResourceContents,
        Definition::CallToolResult,
        Definition::GetPromptResult,
        Definition::ReadResourceResult,
        Definition::CompleteResult,
        Definition::InputRequiredResult,
    ];

    /// The definition's name in the schema.
    pub fn schema_name(self) -> &'static str {
        match self {
            Definition::Tool => "Tool",
            Definition::Prompt => "Prompt",
            Definition::PromptArgument => "PromptArgument",
            Definition::Resource => "Resource",
            Definition::ResourceTemplate => "ResourceTemplate",
            Definition::TextContent => "TextContent",
            Definition::ImageContent => "ImageContent",
            Definition::AudioContent => "AudioContent",
            Definition::EmbeddedResource => "EmbeddedResource",
            Definition::ResourceLink => "ResourceLink",
            Definition::TextResourceContents => "TextResourceContents",
            Definition::BlobResourceContents => "BlobResourceContents",
            Definition::CallToolResult => "CallToolResult",
            Definition::GetPromptResult => "GetPromptResult",
            Definition::ReadResourceResult => "ReadResourceResult",
            Definition::CompleteResult => "CompleteResult",
            Definition::InputRequiredResult => "InputRequiredResult",
        }
    }

    /// The revision that introduced the definition.
    pub fn since(self) -> Revision {
        match self {
            Definition::AudioContent => V2025_03_26,
            Definition::ResourceLink => V2025_06_18,
            Definition::InputRequiredResult => V2026_07_28,
            _ => FIRST,
        }
    }

    fn fields(self) -> &'static [Field] {
        const META: Field = ("_meta", V2025_06_18, LAST);
        const TITLE: Field = ("title", V2025_06_18, LAST);
        const ICONS: Field = ("icons", V2025_11_25, LAST);
        const RESULT_TYPE: Field = ("resultType", LAST, LAST);
        const CACHE: [Field; 2] = [("ttlMs", LAST, LAST), ("cacheScope", LAST, LAST)];
        const ANNOTATIONS: Field = ("annotations", FIRST, LAST);
        match self {
            Definition::Tool => &[
                ("name", FIRST, LAST),
                ("description", FIRST, LAST),
                ("inputSchema", FIRST, LAST),
                ("annotations", V2025_03_26, LAST),
                ("outputSchema", V2025_06_18, LAST),
                ("execution", V2025_11_25, V2025_11_25),
                META,
                TITLE,
                ICONS,
            ],
            Definition::Prompt => &[
                ("name", FIRST, LAST),
                ("description", FIRST, LAST),
                ("arguments", FIRST, LAST),
                META,
                TITLE,
                ICONS,
            ],
            Definition::PromptArgument => &[
                ("name", FIRST, LAST),
                ("description", FIRST, LAST),
                ("required", FIRST, LAST),
                TITLE,
            ],
            Definition::Resource => &[
                ("uri", FIRST, LAST),
                ("name", FIRST, LAST),
                ("description", FIRST, LAST),
                ("mimeType", FIRST, LAST),
                ("size", FIRST, LAST),
                ANNOTATIONS,
                META,
                TITLE,
                ICONS,
            ],
            Definition::ResourceTemplate => &[
                ("uriTemplate", FIRST, LAST),
                ("name", FIRST, LAST),
                ("description", FIRST, LAST),
                ("mimeType", FIRST, LAST),
                ANNOTATIONS,
                META,
                TITLE,
                ICONS,
            ],
            Definition::TextContent => &[
                ("type", FIRST, LAST),
                ("text", FIRST, LAST),
                ANNOTATIONS,
                META,
            ],
            Definition::ImageContent | Definition::AudioContent => &[
                ("type", FIRST, LAST),
                ("data", FIRST, LAST),
                ("mimeType", FIRST, LAST),
                ANNOTATIONS,
                META,
            ],
            Definition::EmbeddedResource => &[
                ("type", FIRST, LAST),
                ("resource", FIRST, LAST),
                ANNOTATIONS,
                META,
            ],
            Definition::ResourceLink => &[
                ("type", V2025_06_18, LAST),
                ("uri", V2025_06_18, LAST),
                ("name", V2025_06_18, LAST),
                ("description", V2025_06_18, LAST),
                ("mimeType", V2025_06_18, LAST),
                ("size", V2025_06_18, LAST),
                ("annotations", V2025_06_18, LAST),
                META,
                TITLE,
                ICONS,
            ],
            Definition::TextResourceContents => &[
                ("uri", FIRST, LAST),
                ("mimeType", FIRST, LAST),
                ("text", FIRST, LAST),
                META,
            ],
            Definition::BlobResourceContents => &[
                ("uri", FIRST, LAST),
                ("mimeType", FIRST, LAST),
                ("blob", FIRST, LAST),
                META,
            ],
            Definition::CallToolResult => &[
                ("_meta", FIRST, LAST),
                ("content", FIRST, LAST),
                ("isError", FIRST, LAST),
                ("structuredContent", V2025_06_18, LAST),
                RESULT_TYPE,
            ],
            Definition::GetPromptResult => &[
                ("_meta", FIRST, LAST),
                ("description", FIRST, LAST),
                ("messages", FIRST, LAST),
                RESULT_TYPE,
            ],
            Definition::ReadResourceResult => &[
                ("_meta", FIRST, LAST),
                ("contents", FIRST, LAST),
                RESULT_TYPE,
                CACHE[0],
                CACHE[1],
            ],
            Definition::CompleteResult => &[
                ("_meta", FIRST, LAST),
                ("completion", FIRST, LAST),
                RESULT_TYPE,
            ],
            Definition::InputRequiredResult => &[
                ("_meta", LAST, LAST),
                ("inputRequests", LAST, LAST),
                ("requestState", LAST, LAST),
                RESULT_TYPE,
            ],
        }
    }

    /// The field names this definition has in `revision`.
    pub fn fields_in(self, revision: Revision) -> impl Iterator<Item = &'static str> {
        self.fields()
            .iter()
            .filter(move |(_, since, until)| (*since..=*until).contains(&revision))
            .map(|(name, _, _)| *name)
    }

    /// Drops every field of `object` that this definition lacks in `revision`.
    fn retain(self, object: &mut Value, revision: Revision) {
        if let Value::Object(map) = object {
            map.retain(|key, _| self.fields_in(revision).any(|field| field == key));
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

/// Shapes the result of `method` for a client of `revision`. A modern result's `serverInfo`
/// is added as it is written ([`server_info`]).
pub fn result(method: Method, revision: Revision, mut result: Value) -> Value {
    if !result.is_object() {
        result = json!({});
    }
    let input_required =
        result.member("resultType").and_then(Value::as_str) == Some("input_required");
    match method {
        // Only a modern client is ever given one; its content is the questions, not a result.
        _ if input_required && revision >= V2026_07_28 => {
            Definition::InputRequiredResult.retain(&mut result, revision)
        }
        Method::ToolsList => each(&mut result, "tools", |tool| shape_tool(tool, revision)),
        Method::PromptsList => each(&mut result, "prompts", |prompt| {
            shape_prompt(prompt, revision)
        }),
        Method::ResourcesList => each(&mut result, "resources", |r| {
            Definition::Resource.retain(r, revision)
        }),
        Method::ResourcesTemplatesList => each(&mut result, "resourceTemplates", |t| {
            Definition::ResourceTemplate.retain(t, revision)
        }),
        Method::ToolsCall => {
            Definition::CallToolResult.retain(&mut result, revision);
            each(&mut result, "content", |c| shape_content(c, revision));
        }
        Method::PromptsGet => {
            Definition::GetPromptResult.retain(&mut result, revision);
            each(&mut result, "messages", |message| {
                if let Some(content) = message.member_mut("content") {
                    shape_content(content, revision);
                }
            });
        }
        Method::ResourcesRead => {
            Definition::ReadResourceResult.retain(&mut result, revision);
            each(&mut result, "contents", |c| {
                shape_resource_contents(c, revision)
            });
        }
        Method::CompletionComplete => Definition::CompleteResult.retain(&mut result, revision),
        _ => {}
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
        if let Some(Value::Object(meta)) = map.member_mut("_meta") {
            meta.retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
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

fn each(result: &mut Value, key: &str, mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = result.member_mut(key) {
        items.iter_mut().for_each(&mut f);
    }
}

fn shape_tool(tool: &mut Value, revision: Revision) {
    Definition::Tool.retain(tool, revision);
}

fn shape_prompt(prompt: &mut Value, revision: Revision) {
    Definition::Prompt.retain(prompt, revision);
    each(prompt, "arguments", |a| {
        Definition::PromptArgument.retain(a, revision)
    });
}

fn shape_resource_contents(contents: &mut Value, revision: Revision) {
    if contents.member("blob").is_some() {
        Definition::BlobResourceContents.retain(contents, revision);
    } else {
        Definition::TextResourceContents.retain(contents, revision);
    }
}

/// Shapes one content block; a kind the revision lacks becomes a text block describing it.
pub fn shape_content(content: &mut Value, revision: Revision) {
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
    definition.retain(content, revision);
    if let Some(resource) = content.member_mut("resource") {
        shape_resource_contents(resource, revision);
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

/// Shapes a notification's params for a client of `revision`.
pub fn notification_params(method: &str, revision: Revision, params: &mut Value) {
    if method == "notifications/progress" && revision < V2025_03_26 {
        if let Value::Object(map) = params {
            map.remove("message");
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod shape {
        use crate::jsonrpc;
        use crate::protocol::shape::{self, Definition};
        use crate::protocol::{Method, Revision};
        use serde_json::{json, Value};
        use std::collections::BTreeSet;

        fn schema(revision: Revision) -> Value {
            let path = format!(
                "{}/tests/spec/{}/schema.json",
                env!("CARGO_MANIFEST_DIR"),
                revision
            );
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        }

        fn definitions(schema: &Value) -> &Value {
            schema
                .get("$defs")
                .or_else(|| schema.get("definitions"))
                .unwrap()
        }

        /// The field tables are the schemas' own property lists, revision by revision.
        #[test]
        fn field_tables_match_every_schema() {
            for revision in Revision::ALL {
                let schema = schema(revision);
                for definition in Definition::ALL {
                    let in_schema = definitions(&schema).get(definition.schema_name());
                    if revision < definition.since() {
                        assert!(
                            in_schema.is_none(),
                            "{revision} has {}",
                            definition.schema_name()
                        );
                        continue;
                    }
                    let expected: BTreeSet<&str> = in_schema.unwrap()["properties"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .map(String::as_str)
                        .collect();
                    let ours: BTreeSet<&str> = definition.fields_in(revision).collect();
                    assert_eq!(ours, expected, "{revision} {}", definition.schema_name());
                }
            }
        }

        #[test]
        fn resource_link_becomes_text_before_2025_06_18() {
            let link =
                json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]});
            let old = shape::result(Method::ToolsCall, Revision::V2025_03_26, link.clone());
            assert_eq!(old["content"][0]["type"], "text");
            assert!(old["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("file:///a"));
            let new = shape::result(Method::ToolsCall, Revision::V2025_06_18, link);
            assert_eq!(new["content"][0]["type"], "resource_link");
        }

        #[test]
        fn audio_becomes_text_in_2024_11_05() {
            let audio =
                json!({"content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]});
            let old = shape::result(Method::ToolsCall, Revision::V2024_11_05, audio);
            assert_eq!(old["content"][0]["type"], "text");
        }

        #[test]
        fn result_type_only_for_2026_07_28() {
            for revision in Revision::ALL {
                let r = shape::result(
                    Method::ToolsList,
                    revision,
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
            assert!(
                shape::result(Method::ToolsCall, Revision::V2025_03_26, r.clone())
                    .get("structuredContent")
                    .is_none()
            );
            assert!(shape::result(Method::ToolsCall, Revision::V2025_06_18, r)
                .get("structuredContent")
                .is_some());
        }
    }
}
