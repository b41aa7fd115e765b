//! `[profiles.NAME]`: views of the catalog a client chooses by its door.

use serde::{Deserialize, Serialize};

/// `[profiles.NAME]`: which servers and which exposed names a client of this profile sees and
/// may use.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    /// The servers it sees (every one when unset); mcpx's own `mcpx` server is named like any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// Glob patterns over exposed tool, prompt and resource-template names: only what matches
    /// one is seen (everything when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Glob patterns over the same names, applied after `include`: what matches one is not seen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Lists two tools, `mcpx__search_tools` and `mcpx__call_tool`, in place of the catalog's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub search: bool,
    /// The most characters of text a tool result may carry through this door (`[guardrails]
    /// maxResultChars`; the least of those that apply is the budget).
    #[serde(rename = "maxResultChars", skip_serializing_if = "Option::is_none")]
    pub max_result_chars: Option<usize>,
}
