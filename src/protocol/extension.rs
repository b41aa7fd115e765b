//! The extensions mcpx carries (SEP-2133), and for each what a gateway must know of it: its
//! identifier, what mcpx declares for it as its upstreams' client, and the fields it adds to the
//! base protocol's definitions, which shaping keeps for a client that negotiated it.
//!
//! An extension mcpx does not carry is never forwarded to an upstream: its results would be cut
//! to the base protocol's fields on the way back, and the client would get a broken one.

use super::definition::Definition;
use super::Era;
use crate::json::Member;
use serde_json::{json, Map, Value};

/// An extension mcpx carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extension {
    /// MCP Apps (`io.modelcontextprotocol/ui`, ext-apps 2026-01-26): tools rendered by `ui://`
    /// HTML resources.
    Apps,
    /// Skills (`io.modelcontextprotocol/skills`, SEP-2640): `skill://` directories of files a
    /// model loads, listed by `skills/list` and fetched by `skills/get`.
    Skills,
    /// Tasks (`io.modelcontextprotocol/tasks`, SEP-2663): a `tools/call` the server chooses to
    /// run in the background, polled by `tasks/get` ([`super::task`]).
    Tasks,
    /// Events (`io.modelcontextprotocol/events`, SEP-3415): event types a client subscribes to,
    /// delivered by polling, a pushed stream or a webhook.
    Events,
}

/// The MIME type of an MCP App's HTML, the one mcpx's clients are asked to render.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

impl Extension {
    /// Every extension mcpx carries.
    pub const ALL: [Extension; 4] = [
        Extension::Apps,
        Extension::Skills,
        Extension::Tasks,
        Extension::Events,
    ];

    /// Its identifier, the key under `capabilities.extensions`.
    pub const fn id(self) -> &'static str {
        match self {
            Extension::Apps => "io.modelcontextprotocol/ui",
            Extension::Skills => "io.modelcontextprotocol/skills",
            Extension::Tasks => "io.modelcontextprotocol/tasks",
            Extension::Events => "io.modelcontextprotocol/events",
        }
    }

    /// The extension an identifier names, if mcpx carries it.
    pub fn parse(id: &str) -> Option<Extension> {
        Self::ALL.into_iter().find(|e| e.id() == id)
    }

    /// What mcpx declares for it to its upstreams, as the client of every client it serves:
    /// an upstream lists UI tools only to a client that declared it can render them.
    pub fn client_declaration(self) -> Value {
        match self {
            Extension::Apps => json!({ "mimeTypes": [APP_MIME_TYPE] }),
            Extension::Skills | Extension::Tasks | Extension::Events => json!({}),
        }
    }

    /// Whether it exists in `era`. Tasks does not in the legacy one, where 2025-11-25's own tasks
    /// stand in its place, nor Events, which relies on per-request capabilities and
    /// `server/discover`: a legacy session never negotiates either.
    pub const fn in_era(self, era: Era) -> bool {
        !matches!(
            (self, era),
            (Extension::Tasks | Extension::Events, Era::Legacy)
        )
    }

    /// Whether mcpx declares it upstream on its own requests (the handshake, the catalog's
    /// lists) as well as on its clients'. Not Tasks: only a client that declared it on a call
    /// can poll the task that call becomes, and an upstream that honoured a declaration made at
    /// `initialize` would answer every call with a task nobody polls.
    pub const fn declared_on_own_requests(self) -> bool {
        !matches!(self, Extension::Tasks)
    }

    /// The fields it adds to `definition`, kept for a client that negotiated it whatever its
    /// revision defines (an App hydrates from `structuredContent` and reads `_meta.ui`).
    pub fn added_fields(self, definition: Definition) -> &'static [&'static str] {
        match (self, definition) {
            (
                Extension::Apps,
                Definition::Tool
                | Definition::Resource
                | Definition::ResourceTemplate
                | Definition::TextResourceContents
                | Definition::BlobResourceContents,
            ) => &["_meta"],
            (Extension::Apps, Definition::CallToolResult) => &["_meta", "structuredContent"],
            (Extension::Apps, _) => &[],
            // Their fields are in results of their own methods, which shaping leaves whole, and
            // in a created task, which shaping keeps as such ([`super::task`]).
            (Extension::Skills | Extension::Tasks | Extension::Events, _) => &[],
        }
    }
}

/// A set of extensions: those a client declared, or an upstream did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extensions(u8);

impl Extensions {
    /// None at all.
    pub const NONE: Extensions = Extensions(0);

    /// Every extension mcpx carries.
    pub fn all() -> Extensions {
        Extension::ALL
            .into_iter()
            .fold(Extensions::NONE, Extensions::with)
    }

    /// The carried extensions `capabilities.extensions` declares (a client's or a server's).
    /// Events declared where the extension's first drafts put them, `capabilities.events` (as
    /// `mcp-handler` 2 and the AI SDK 2 still do), count as declared.
    pub fn declared_in(capabilities: Option<&Value>) -> Extensions {
        let declared = capabilities
            .and_then(|c| c.member("extensions"))
            .and_then(Value::as_object);
        let named = declared
            .into_iter()
            .flat_map(|map| map.keys())
            .filter_map(|id| Extension::parse(id))
            .fold(Extensions::NONE, Extensions::with);
        let drafted = capabilities.and_then(|c| c.member("events"));
        match drafted.is_some_and(Value::is_object) {
            true => named.with(Extension::Events),
            false => named,
        }
    }

    /// This set and `extension`.
    pub const fn with(self, extension: Extension) -> Extensions {
        Extensions(self.0 | 1 << extension as u8)
    }

    /// Both sets.
    pub const fn union(self, other: Extensions) -> Extensions {
        Extensions(self.0 | other.0)
    }

    /// Whether it holds `extension`.
    pub const fn contains(self, extension: Extension) -> bool {
        self.0 & 1 << extension as u8 != 0
    }

    /// Its extensions.
    pub fn iter(self) -> impl Iterator<Item = Extension> {
        Extension::ALL
            .into_iter()
            .filter(move |e| self.contains(*e))
    }

    /// Whether a field of `definition` is one of these extensions'.
    pub fn adds(self, definition: Definition, field: &str) -> bool {
        self.iter()
            .any(|e| e.added_fields(definition).contains(&field))
    }

    /// `capabilities.extensions` for these, with `declaration` for each.
    pub fn declared(self, declaration: impl Fn(Extension) -> Value) -> Map<String, Value> {
        self.iter()
            .map(|e| (e.id().to_owned(), declaration(e)))
            .collect()
    }
}

/// `capabilities.extensions` as mcpx declares them to its clients: every extension it carries.
/// A session's capabilities hold for its life, whichever upstreams start, stop or reload
/// meanwhile, and what mcpx does for each (Apps: renamed `ui://` URIs, App-only tools, bare tool
/// names) it does itself.
pub fn advertised_by_mcpx(era: Era) -> Value {
    let carried = Extension::ALL.into_iter().filter(|e| e.in_era(era));
    let carried = carried.fold(Extensions::NONE, Extensions::with);
    Value::Object(carried.declared(|_| json!({})))
}

/// What a legacy client declared at `initialize`, without the extensions of the modern era
/// (Tasks): mcpx neither honours nor passes them on in a legacy session.
pub fn for_legacy_session(mut capabilities: Value) -> Value {
    if let Some(Value::Object(map)) = capabilities.member_mut("extensions") {
        map.retain(|id, _| Extension::parse(id).is_none_or(|e| e.in_era(Era::Legacy)));
    }
    capabilities
}

/// `capabilities.extensions` as mcpx declares them to its upstreams for requests of its own (the
/// handshake, the catalog's lists): every extension it carries that such a request can use, since
/// it lists for every client.
pub fn declared_by_mcpx() -> Value {
    let own = Extension::ALL
        .into_iter()
        .filter(|e| e.declared_on_own_requests())
        .fold(Extensions::NONE, Extensions::with);
    Value::Object(own.declared(Extension::client_declaration))
}

/// `capabilities` as mcpx forwards them upstream for a client: its `extensions` cut to those
/// mcpx carries (dropped when none is left); everything else as declared.
pub fn carried_only(capabilities: &Value) -> Value {
    let mut capabilities = capabilities.clone();
    if let Some(Value::Object(map)) = capabilities.member_mut("extensions") {
        map.retain(|id, _| Extension::parse(id).is_some());
        if map.is_empty() {
            if let Value::Object(capabilities) = &mut capabilities {
                capabilities.remove("extensions");
            }
        }
    }
    capabilities
}

#[cfg(test)]
mod every_revision {
    mod extensions {
        use crate::protocol::definition::Definition;
        use crate::protocol::extension::{carried_only, Extension, Extensions, APP_MIME_TYPE};
        use serde_json::{json, Value};

        const TASKS: &str = "io.modelcontextprotocol/tasks";

        /// Tasks is of the modern era only: a legacy session neither declares it back nor keeps
        /// it among what its client declared; other extensions, known or not, are kept.
        #[test]
        fn a_legacy_session_has_no_tasks_extension() {
            use crate::protocol::extension::{advertised_by_mcpx, for_legacy_session};
            use crate::protocol::Era;
            assert!(advertised_by_mcpx(Era::Modern).get(TASKS).is_some());
            let legacy = advertised_by_mcpx(Era::Legacy);
            assert!(
                legacy.get(TASKS).is_none() && legacy.get("io.modelcontextprotocol/ui").is_some()
            );
            let declared = json!({"roots": {}, "extensions": {TASKS: {}, "com.example/x": {}}});
            let kept = for_legacy_session(declared);
            assert_eq!(
                kept,
                json!({"roots": {}, "extensions": {"com.example/x": {}}})
            );
        }

        #[test]
        fn a_declaration_names_only_what_mcpx_carries() {
            let capabilities = json!({"roots": {}, "extensions": {
                "io.modelcontextprotocol/ui": {"mimeTypes": [APP_MIME_TYPE]},
                TASKS: {},
                "com.example/unknown": {"x": 1},
            }});
            let declared = Extensions::declared_in(Some(&capabilities));
            assert!(declared.contains(Extension::Apps) && declared.contains(Extension::Tasks));
            assert!(!declared.contains(Extension::Skills));
            assert_eq!(declared.iter().count(), 2);
            assert_eq!(Extensions::declared_in(None), Extensions::NONE);
            assert_eq!(
                Extensions::declared_in(Some(&json!({"extensions": []}))),
                Extensions::NONE
            );
            // Where the Events drafts declared it (mcp-handler 2, the AI SDK 2).
            let drafted = Extensions::declared_in(Some(&json!({"events": {}})));
            assert_eq!(drafted, Extensions::NONE.with(Extension::Events));
            let not = Extensions::declared_in(Some(&json!({"events": true})));
            assert_eq!(not, Extensions::NONE);
            let forwarded = carried_only(&capabilities);
            assert_eq!(
                forwarded,
                json!({"roots": {}, "extensions": {
                    "io.modelcontextprotocol/ui": {"mimeTypes": [APP_MIME_TYPE]},
                    TASKS: {},
                }})
            );
            // Nothing carried is left: no empty `extensions` goes upstream.
            let unknown = json!({"elicitation": {}, "extensions": {"com.example/x": {}}});
            assert_eq!(carried_only(&unknown), json!({"elicitation": {}}));
        }

        fn apps_schema() -> Value {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/spec/ext-apps/schema.json"
            );
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        }

        /// What Apps adds, checked against its published schema: `_meta.ui` on tools
        /// (`McpUiToolMeta`) and on resources and their contents (`McpUiResourceMeta`), and the
        /// client's declaration (`McpUiClientCapabilities`) that mcpx makes upstream.
        #[test]
        fn apps_fields_are_those_of_its_published_schema() {
            let schema = apps_schema();
            let definition = |name: &str| {
                let mut d = schema["$defs"][name].clone();
                // Its `$ref`s point into the whole schema's `$defs`.
                d["$defs"] = schema["$defs"].clone();
                jsonschema::validator_for(&d).unwrap()
            };
            let declaration = Extension::Apps.client_declaration();
            assert!(definition("McpUiClientCapabilities").is_valid(&declaration));
            assert!(declaration["mimeTypes"]
                .as_array()
                .unwrap()
                .contains(&json!(APP_MIME_TYPE)));
            let tool_meta = json!({"resourceUri": "ui://widget/view.html", "visibility": ["app"]});
            assert!(definition("McpUiToolMeta").is_valid(&tool_meta));
            let resource_meta = json!({"prefersBorder": true, "csp": {"connectDomains": []}});
            assert!(definition("McpUiResourceMeta").is_valid(&resource_meta));
            // Both live in `_meta`, which Apps adds wherever the revision lacks it.
            for carrier in [
                Definition::Tool,
                Definition::Resource,
                Definition::TextResourceContents,
                Definition::BlobResourceContents,
                Definition::CallToolResult,
            ] {
                assert!(Extensions::NONE
                    .with(Extension::Apps)
                    .adds(carrier, "_meta"));
            }
            assert!(Extensions::NONE
                .with(Extension::Apps)
                .adds(Definition::CallToolResult, "structuredContent"));
            assert!(!Extensions::NONE.adds(Definition::Tool, "_meta"));
        }
    }
}
