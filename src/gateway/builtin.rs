//! The built-in `mcpx` server: read-only tools about the gateway itself, so that the first run
//! (with no configuration) shows something real, a failing upstream can be diagnosed from inside
//! an editor, and a client's round trip through mcpx can be checked (and measured) with no
//! upstream behind it.

use super::Listing;
use crate::json::Member;
use crate::protocol::Revision;
use crate::view::{ProfileView, UpstreamView};
use serde_json::{json, Value};

/// The one built-in tool that acts: it logs in to a remote server ([`super::login`]).
pub const LOGIN: &str = "login";

/// The built-in server's catalog.
pub fn listing() -> Listing {
    let read_only = json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
    Listing {
        tools: vec![
            json!({
                "name": "upstreams",
                "description": "Lists the MCP servers configured behind mcpx with their state (ready, failed, exited), negotiated protocol revision and catalog sizes, and the profiles clients can see them through.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": read_only,
            }),
            json!({
                "name": "echo",
                "description": "Returns its text unchanged: a round trip through mcpx with no upstream behind it, to check a client's connection.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "annotations": read_only,
            }),
            json!({
                "name": LOGIN,
                "description": "Signs in to a remote MCP server that needs a login (its state in mcpx__upstreams is needs-login): you are asked to open the server's sign-in page, and mcpx keeps the tokens and starts the server.",
                "inputSchema": {"type": "object", "properties": {"server": {"type": "string", "description": "The server's name, as mcpx__upstreams lists it"}}, "required": ["server"]},
                "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
            }),
            json!({
                "name": "about",
                "description": "Reports the mcpx version, the configuration file in use and the MCP protocol revisions served.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": read_only,
            }),
        ],
        events: super::own_events::definitions(),
        ..Listing::default()
    }
}

/// What `mcpx__login` answers when it cannot log in to `server` (in `state`, waiting for a
/// login or not) for a client that declared `capabilities`: a tool error that says what would.
pub fn login_refused(server: &str, waits: bool, state: &str, capabilities: &Value) -> Value {
    let why = if !waits {
        format!("{server} does not need a login: it is {state}")
    } else if capabilities["elicitation"].member("url").is_none() {
        format!("this client cannot open a sign-in page (it did not declare URL-mode elicitation): run `mcpx auth login {server}` in a terminal")
    } else {
        format!("{server} cannot be logged in to from here: run `mcpx auth login {server}`")
    };
    json!({ "content": [{"type": "text", "text": why}], "isError": true })
}

/// Runs a built-in tool; `tool` is a name from [`listing`] other than [`LOGIN`]. `upstreams`
/// tells the upstreams' and profiles' state.
pub fn call(
    tool: &str,
    arguments: Option<&Value>,
    upstreams: impl FnOnce() -> (Vec<UpstreamView>, Vec<ProfileView>),
    config_path: Option<&str>,
) -> Value {
    if tool == "echo" {
        let text = arguments
            .and_then(|a| a.member("text"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return json!({ "content": [{"type": "text", "text": text}], "isError": false });
    }
    let report = match tool {
        "upstreams" => {
            let (upstreams, profiles) = upstreams();
            json!({ "upstreams": upstreams, "profiles": profiles })
        }
        _ => json!({
            "version": env!("CARGO_PKG_VERSION"),
            "config": config_path.unwrap_or("(none: built-in defaults)"),
            "revisions": Revision::all_strings(),
        }),
    };
    let text = serde_json::to_string_pretty(&report).unwrap_or_default();
    json!({ "content": [{"type": "text", "text": text}], "structuredContent": report, "isError": false })
}
