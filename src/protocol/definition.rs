//! The schema's object definitions that mcpx shapes, and for each the fields every revision's
//! schema gives it (checked against the official schemas by the tests): what a result is cut to
//! for a client of that revision ([`super::shape`]), and what an extension adds to
//! ([`super::extension`]).

use super::Revision::{self, *};

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
}

#[cfg(test)]
mod every_revision {
    mod shape {
        use crate::protocol::definition::Definition;
        use crate::protocol::Revision;
        use serde_json::Value;
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
    }
}
