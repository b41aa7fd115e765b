//! How a client learns what mcpx offers: a legacy client's `initialize`, a modern client's
//! `server/discover`. Both declare the same catalog capabilities, each in its era's terms.

use super::{Client, Gateway};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Request, Response, INVALID_PARAMS};
use crate::protocol::{envelope, extension, task, Era, Revision};
use serde_json::{json, Value};

/// What mcpx tells every client it is.
const INSTRUCTIONS: &str = "mcpx merges the tools, prompts and resources of several MCP servers; tool and prompt names carry their server's prefix (server__name).";

/// The capabilities of the merged catalog, in every era.
fn served() -> Value {
    json!({
        "tools": {"listChanged": true},
        "prompts": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
    })
}

impl Gateway {
    /// The legacy handshake. A supported revision is echoed; anything else gets the newest legacy
    /// revision, which the client may refuse by disconnecting.
    pub fn initialize(&self, client: &Client, request: &Request) -> Response {
        let requested = request
            .params
            .as_ref()
            .and_then(|p| p.member("protocolVersion"))
            .and_then(Value::as_str);
        let Some(requested) = requested else {
            return Response::error(
                Some(request.id.clone()),
                ErrorObject::new(
                    INVALID_PARAMS,
                    "Invalid params: initialize needs a string protocolVersion",
                ),
            );
        };
        let revision = Revision::parse(requested)
            .filter(|r| r.era() == Era::Legacy)
            .unwrap_or(Revision::LATEST_LEGACY);
        client.set_revision(revision);
        let declared = request
            .params
            .as_ref()
            .and_then(|p| p.member("capabilities"));
        client.set_capabilities(declared.cloned().unwrap_or(Value::Null));
        let client_info = request
            .params
            .as_ref()
            .and_then(|p| p.member("clientInfo"))
            .cloned();
        self.live
            .ledger()
            .set_initialized(client.session, revision, client_info);
        let mut capabilities = served();
        capabilities["logging"] = json!({});
        if revision >= Revision::V2025_03_26 {
            capabilities["completions"] = json!({});
        }
        // Passed through to the servers that run them ([`tasks`]); not `list`, which would show
        // one client another's tasks.
        if task::has_tasks(revision) {
            capabilities["tasks"] = json!({"cancel": {}, "requests": {"tools": {"call": {}}}});
        }
        capabilities["extensions"] = extension::advertised_by_mcpx(Era::Legacy);
        let result = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": capabilities,
            "serverInfo": envelope::MCPX,
            "instructions": INSTRUCTIONS,
        });
        Response::result(request.id.clone(), result)
    }

    /// `server/discover`: every revision mcpx speaks, and what it serves in 2026-07-28.
    pub(super) fn discover(&self) -> Value {
        let mut capabilities = served();
        capabilities["completions"] = json!({});
        capabilities["extensions"] = extension::advertised_by_mcpx(Era::Modern);
        // Events' first drafts declared it as `capabilities.events`, and clients still read it
        // there (the AI SDK's `@ai-sdk/mcp` 2.0 refuses `events/*` without it): said both ways.
        capabilities["events"] = json!({"listChanged": true});
        json!({
            "supportedVersions": Revision::all_strings(),
            "capabilities": capabilities,
            "instructions": INSTRUCTIONS,
        })
    }
}
