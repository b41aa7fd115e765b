//! Tool search for large catalogs: a search profile lists two tools, `mcpx__search_tools` and
//! `mcpx__call_tool`, in place of hundreds, so that a client's prompt carries two schemas rather
//! than tens of thousands of tokens of them.
//!
//! Tools are ranked by BM25 (the `bm25` crate, English stemming and stop words) over what a model
//! would judge a tool by: its name split into words, its title, its description, and its
//! parameters' names and descriptions.

use super::naming;
use super::route::{Owner, Route};
use crate::config::BUILTIN_SERVER;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::protocol::Method;
use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};
use serde_json::{json, Value};

/// The built-in tool that searches.
pub const SEARCH_TOOLS: &str = "search_tools";

/// The built-in tool that calls what a search found.
pub const CALL_TOOL: &str = "call_tool";

/// How many matches a search returns unless it asks for another number.
const DEFAULT_LIMIT: usize = 5;

/// The most matches one search returns.
const MAX_LIMIT: usize = 20;

/// The tools of one profile, indexed for search.
pub struct ToolIndex {
    engine: SearchEngine<usize>,
    tools: Vec<Value>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ToolIndex({} tools)", self.tools.len())
    }
}

impl ToolIndex {
    /// Indexes these exposed tool definitions.
    pub fn new(tools: &[Value]) -> ToolIndex {
        let documents = tools
            .iter()
            .enumerate()
            .map(|(i, tool)| Document::new(i, searchable_text(tool)));
        ToolIndex {
            engine: SearchEngineBuilder::<usize>::with_documents(Language::English, documents)
                .build(),
            tools: tools.to_vec(),
        }
    }

    /// The best matches for `query`, best first, as full definitions (schemas and all).
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Value> {
        self.engine
            .search(&words(query), limit)
            .into_iter()
            .filter_map(|found| self.tools.get(found.document.id))
            .collect()
    }
}

/// What a tool is found by, as words.
fn searchable_text(tool: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut parts = vec![
        words(tool["name"].as_str().unwrap_or_default()),
        text(&tool["title"]),
        text(&tool["annotations"]["title"]),
        text(&tool["description"]),
    ];
    if let Some(properties) = tool["inputSchema"]["properties"].as_object() {
        for (name, schema) in properties {
            parts.push(words(name));
            parts.push(text(&schema["description"]));
        }
    }
    parts.join(" ")
}

/// An identifier as words: `github__createIssue` reads "github create Issue".
fn words(identifier: &str) -> String {
    let mut out = String::with_capacity(identifier.len() + 8);
    let mut previous_lower = false;
    for c in identifier.chars() {
        if c == '_' || c == '-' || c == '.' || c == '/' {
            out.push(' ');
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            out.push(' ');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        out.push(c);
    }
    out
}

/// `mcpx__call_tool`, as exposed: made once, since every observed call is compared with it.
pub fn call_tool_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| naming::exposed(BUILTIN_SERVER, CALL_TOOL))
}

/// What a request of `method` with `params` names (its [`Method::target`]) and the arguments it
/// passes: for a call through `mcpx__call_tool`, the tool it names and that tool's arguments,
/// since that is what runs (what limits, pins and the audit log judge).
pub fn call_target(method: Method, params: Option<&Value>) -> (Option<&str>, Option<&Value>) {
    let name = method.target(params);
    let arguments = params.and_then(|p| p.member("arguments"));
    if method == Method::ToolsCall && name == Some(call_tool_name()) {
        let inner = arguments.and_then(|a| a.member("arguments"));
        return (Method::ToolsCall.target(arguments), inner);
    }
    (name, arguments)
}

/// The two tools a search profile lists, and their routes.
pub fn tools() -> (Vec<Value>, Vec<(String, Route)>) {
    let exposed = |tool: &str| naming::exposed(BUILTIN_SERVER, tool);
    let routes = [SEARCH_TOOLS, CALL_TOOL]
        .into_iter()
        .map(|tool| {
            let route = Route {
                owner: Owner::Builtin,
                name: tool.to_owned(),
            };
            (exposed(tool), route)
        })
        .collect();
    let listed = vec![
        json!({
            "name": exposed(SEARCH_TOOLS),
            "description": "Searches the tools available through mcpx (there are too many to list) and returns the best matches for a description of the task, each with its name and full input schema. Call a match with mcpx__call_tool.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in words (for example: \"create a GitHub issue\")"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("How many matches to return (default {DEFAULT_LIMIT})")},
                },
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        }),
        json!({
            "name": exposed(CALL_TOOL),
            "description": "Calls a tool that mcpx__search_tools found, by its name, with arguments that fit its input schema.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name, as mcpx__search_tools returned it"},
                    "arguments": {"type": "object", "description": "The tool's arguments"},
                },
                "required": ["name"],
            },
            "annotations": {"openWorldHint": true},
        }),
    ];
    (listed, routes)
}

/// `mcpx__search_tools`: the matches as a tool result.
pub fn answer(index: &ToolIndex, arguments: Option<&Value>) -> Value {
    let query = arguments
        .and_then(|a| a.member("query"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if query.trim().is_empty() {
        return json!({
            "content": [{"type": "text", "text": "query is empty: describe the task the tool should do"}],
            "isError": true,
        });
    }
    let limit = arguments
        .and_then(|a| a.member("limit"))
        .and_then(Value::as_u64)
        .map_or(DEFAULT_LIMIT, |n| (n as usize).clamp(1, MAX_LIMIT));
    let report = json!({ "tools": index.search(query, limit) });
    let text = serde_json::to_string(&report).unwrap_or_default();
    json!({ "content": [{"type": "text", "text": text}], "structuredContent": report, "isError": false })
}

/// `mcpx__call_tool`'s params as the direct call of the tool it names: its name and arguments
/// in place of the wrapper's, everything else (`_meta`, a retry's input) kept. A search tool is
/// not called through it.
pub fn called(params: Option<&Value>) -> Result<Value, ErrorObject> {
    let arguments = params.and_then(|p| p.member("arguments"));
    let name = arguments
        .and_then(|a| a.member("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ErrorObject::new(
                INVALID_PARAMS,
                "Invalid params: mcpx__call_tool needs the name of the tool to call",
            )
        })?;
    if [SEARCH_TOOLS, CALL_TOOL]
        .map(|t| naming::exposed(BUILTIN_SERVER, t))
        .contains(&name.to_owned())
    {
        return Err(ErrorObject::new(
            INVALID_PARAMS,
            format!("Invalid params: call {name} directly, not through mcpx__call_tool"),
        ));
    }
    let mut direct = params.cloned().unwrap_or_else(|| json!({}));
    direct["arguments"] = arguments
        .and_then(|a| a.member("arguments"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    direct["name"] = json!(name);
    Ok(direct)
}

#[cfg(test)]
mod every_revision {
    mod search {
        use crate::gateway::search::{words, ToolIndex};
        use serde_json::json;

        #[test]
        fn identifiers_are_read_as_words() {
            assert_eq!(words("github__createIssue"), "github  create Issue");
            assert_eq!(words("get-current.time"), "get current time");
        }

        #[test]
        fn the_tool_whose_words_match_ranks_first_with_its_schema() {
            let tools = [
                json!({"name": "time__get_current_time", "description": "Current time in a timezone", "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}}}),
                json!({"name": "gh__create_issue", "description": "Open a new issue in a repository", "inputSchema": {"type": "object", "properties": {"repo": {"type": "string", "description": "owner/name"}}}}),
                json!({"name": "fs__read_file", "description": "Read a file's contents", "inputSchema": {"type": "object"}}),
            ];
            let index = ToolIndex::new(&tools);
            let found = index.search("open an issue on a repository", 5);
            assert_eq!(found[0]["name"], "gh__create_issue");
            assert_eq!(
                found[0]["inputSchema"]["properties"]["repo"]["type"],
                "string"
            );
            assert_eq!(
                index.search("what time is it in Tokyo", 1)[0]["name"],
                "time__get_current_time"
            );
            assert!(index.search("zzzz qqqq", 5).is_empty());
        }
    }
}
