//! Tool search on a 500-tool catalog, end to end: what a search profile saves in `tools/list`,
//! and whether `mcpx__search_tools` ranks the right tool in its top five for realistic requests.
//!
//! The catalog is `tests/search/catalog.json` (tools modelled on popular MCP servers), padded to
//! 500 with the create/read/update/delete tools of SaaS servers, as real catalogs are. The
//! queries and the tool each should find are `tests/search/queries.json`, written before any
//! result was seen.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Map, Value};

/// The catalog's size.
const CATALOG_SIZE: usize = 500;

/// The least share of the committed queries whose tool must be in the top five.
const MIN_HIT_RATE: f64 = 0.8;

fn tool(name: String, description: String, params: &Map<String, Value>) -> Value {
    let properties: Map<String, Value> = params
        .iter()
        .map(|(param, about)| {
            (
                param.clone(),
                json!({"type": "string", "description": about}),
            )
        })
        .collect();
    json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties}})
}

/// The committed tools, then SaaS servers' CRUD tools up to [`CATALOG_SIZE`].
fn catalog() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search/catalog.json");
    let servers: Map<String, Value> =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut tools = Vec::new();
    for (server, entries) in servers.iter().filter(|(k, _)| !k.starts_with('_')) {
        for (name, entry) in entries.as_object().unwrap() {
            let description = entry[0].as_str().unwrap().to_owned();
            let params = entry[1].as_object().unwrap();
            tools.push(tool(format!("{server}__{name}"), description, params));
        }
    }
    let saas: [(&str, &str, &[&str]); 20] = [
        (
            "hubspot",
            "HubSpot",
            &["contact", "deal", "company", "ticket"],
        ),
        (
            "salesforce",
            "Salesforce",
            &["account", "lead", "opportunity", "case"],
        ),
        ("zendesk", "Zendesk", &["ticket", "user", "organization"]),
        ("asana", "Asana", &["task", "project", "section"]),
        ("trello", "Trello", &["card", "board", "list"]),
        ("airtable", "Airtable", &["record", "base", "table"]),
        ("shopify", "Shopify", &["product", "order", "customer"]),
        ("intercom", "Intercom", &["conversation", "contact"]),
        ("monday", "monday.com", &["item", "board"]),
        ("clickup", "ClickUp", &["task", "list", "space"]),
        ("pipedrive", "Pipedrive", &["deal", "person", "activity"]),
        (
            "mailchimp",
            "Mailchimp",
            &["campaign", "audience", "member"],
        ),
        ("zoom", "Zoom", &["meeting", "recording", "webinar"]),
        ("dropbox", "Dropbox", &["file", "folder"]),
        ("freshdesk", "Freshdesk", &["ticket", "contact"]),
        ("todoist", "Todoist", &["task", "project"]),
        ("quickbooks", "QuickBooks", &["invoice", "bill", "customer"]),
        ("twilio", "Twilio", &["message", "call"]),
        ("bitbucket", "Bitbucket", &["repository", "pull_request"]),
        ("discord", "Discord", &["message", "channel"]),
    ];
    let params = |pairs: &[(&str, &str)]| -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    };
    'fill: for (server, product, resources) in saas {
        for resource in resources {
            let words = resource.replace('_', " ");
            let verbs = [
                (
                    "list",
                    format!("List {words}s in {product}, a page at a time"),
                    params(&[("limit", "Page size"), ("cursor", "Where the page starts")]),
                ),
                (
                    "get",
                    format!("Get a {product} {words} by its id"),
                    params(&[("id", "The id")]),
                ),
                (
                    "create",
                    format!("Create a new {words} in {product}"),
                    params(&[("properties", "Its fields")]),
                ),
                (
                    "update",
                    format!("Update the fields of a {product} {words}"),
                    params(&[("id", "The id"), ("properties", "Fields to change")]),
                ),
                (
                    "delete",
                    format!("Delete a {product} {words}"),
                    params(&[("id", "The id")]),
                ),
                (
                    "search",
                    format!("Search {product} {words}s by text"),
                    params(&[("query", "Search text")]),
                ),
            ];
            for (verb, description, params) in verbs {
                if tools.len() == CATALOG_SIZE {
                    break 'fill;
                }
                tools.push(tool(
                    format!("{server}__{verb}_{resource}"),
                    description,
                    &params,
                ));
            }
        }
    }
    assert_eq!(tools.len(), CATALOG_SIZE);
    tools
}

/// The bytes of every page of `tools/list` at `path`.
fn tools_list_bytes(daemon: &Daemon, path: &str) -> usize {
    let (mut bytes, mut cursor, mut id) = (0, None::<Value>, 0);
    loop {
        id += 1;
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let reply = daemon.modern_to(path, id, "tools/list", params);
        bytes += reply.body.len();
        match reply.json()["result"].get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => return bytes,
        }
    }
}

mod every_revision {
    pub mod search {
        use super::super::*;

        #[test]
        fn a_search_profile_lists_a_fraction_and_ranks_the_right_tool_in_the_top_five() {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("catalog.json");
            std::fs::write(&file, serde_json::to_vec(&catalog()).unwrap()).unwrap();
            let config = format!(
                "[servers.big]\ncommand = {:?}\nargs = [\"--catalog\", {:?}]\nprefix = \"\"\n[profiles.found]\nsearch = true\n",
                fixture_bin(),
                file.display().to_string()
            );
            let daemon = Daemon::start(&config, "");
            let everything = tools_list_bytes(&daemon, "/mcp");
            let searched = tools_list_bytes(&daemon, "/mcp/found");
            println!(
                "tools/list of {} tools: {everything} bytes; behind search: {searched} bytes ({:.1}%)",
                CATALOG_SIZE + 4,
                100.0 * searched as f64 / everything as f64
            );
            assert!(searched * 50 < everything, "{searched} vs {everything}");

            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search/queries.json");
            let queries: Vec<(String, String)> =
                serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let mut hits = 0;
            for (i, (query, expected)) in queries.iter().enumerate() {
                let found = daemon
                    .modern_to(
                        "/mcp/found",
                        i as i64,
                        "tools/call",
                        json!({"name": "mcpx__search_tools", "arguments": {"query": query, "limit": 5}}),
                    )
                    .json();
                let names: Vec<&str> = found["result"]["structuredContent"]["tools"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{found}"))
                    .iter()
                    .map(|t| t["name"].as_str().unwrap())
                    .collect();
                let rank = names.iter().position(|n| n == expected);
                hits += usize::from(rank.is_some());
                println!(
                    "| {query} | {expected} | {} | {} |",
                    rank.map_or("miss".to_owned(), |r| format!("#{}", r + 1)),
                    names.join(", ")
                );
            }
            let rate = hits as f64 / queries.len() as f64;
            println!(
                "top-5 hit rate: {hits} of {} ({:.0}%)",
                queries.len(),
                rate * 100.0
            );
            assert!(rate >= MIN_HIT_RATE, "{hits} of {}", queries.len());
            // A found tool is called through mcpx__call_tool with its arguments.
            let called = daemon
                .modern_to(
                    "/mcp/found",
                    99,
                    "tools/call",
                    json!({"name": "mcpx__call_tool", "arguments": {"name": "time__convert_time", "arguments": {"time": "15:00"}}}),
                )
                .json();
            let text = called["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(
                text.starts_with("time__convert_time called with"),
                "{called}"
            );
        }
    }
}
