//! The merged catalog: every upstream's tools, prompts, resources and templates under one roof.
//!
//! Tools and prompts are renamed ([`naming::exposed`]) and routed back by their exposed name; their
//! schemas are kept verbatim. Resources keep their URIs and are routed to the server that listed
//! them, or failing that to the server whose template matches. Order is the configuration's server
//! order, then each server's own order, so `tools/list` is deterministic.

use super::naming;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::mcpheaders::{self, HeaderParam};
use crate::upstream::ListKind;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Items per page of a merged list.
pub const PAGE_SIZE: usize = 100;

/// Who answers for an item: the built-in server or an upstream by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// mcpx's own `mcpx` server.
    Builtin,
    /// The upstream at this index.
    Upstream(usize),
}

/// Where an exposed tool or prompt really lives.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Its server.
    pub owner: Owner,
    /// Its name on that server.
    pub name: String,
}

/// One server's catalog as it listed it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// `tools/list`.
    pub tools: Vec<Value>,
    /// `prompts/list`.
    pub prompts: Vec<Value>,
    /// `resources/list`.
    pub resources: Vec<Value>,
    /// `resources/templates/list`.
    pub templates: Vec<Value>,
}

impl Listing {
    /// The kinds of list in which `other` differs from this listing.
    pub fn differences(&self, other: &Listing) -> Vec<ListKind> {
        differing_kinds(
            [&self.tools, &self.prompts, &self.resources, &self.templates],
            [
                &other.tools,
                &other.prompts,
                &other.resources,
                &other.templates,
            ],
        )
    }
}

/// Tools, prompts, resources and templates compared: templates announce as resources.
fn differing_kinds(before: [&Vec<Value>; 4], after: [&Vec<Value>; 4]) -> Vec<ListKind> {
    let mut kinds = Vec::new();
    if before[0] != after[0] {
        kinds.push(ListKind::Tools);
    }
    if before[1] != after[1] {
        kinds.push(ListKind::Prompts);
    }
    if before[2] != after[2] || before[3] != after[3] {
        kinds.push(ListKind::Resources);
    }
    kinds
}

/// A server's contribution to the merged catalog.
#[derive(Debug)]
pub struct Source<'a> {
    /// Its configured name, for error messages.
    pub server: &'a str,
    /// Its exposed-name prefix.
    pub prefix: &'a str,
    /// Who answers for it.
    pub owner: Owner,
    /// What it listed.
    pub listing: &'a Listing,
}

/// The merged catalog.
#[derive(Debug, Default)]
pub struct Catalog {
    tools: Vec<Value>,
    tool_routes: HashMap<String, Route>,
    tool_header_params: HashMap<String, Vec<HeaderParam>>,
    prompts: Vec<Value>,
    prompt_routes: HashMap<String, Route>,
    resources: Vec<Value>,
    resource_owners: HashMap<String, Owner>,
    templates: Vec<Value>,
    template_owners: Vec<(String, Owner)>,
}

impl Catalog {
    /// Merges the sources in order. Two items exposed under one name is an error naming both
    /// servers: silently shadowing a tool would route calls to the wrong server.
    pub fn build(sources: &[Source<'_>]) -> Result<Catalog, String> {
        let mut catalog = Catalog::default();
        let mut tool_servers = HashMap::new();
        let mut prompt_servers = HashMap::new();
        for source in sources {
            for tool in source
                .listing
                .tools
                .iter()
                .filter(|t| named(t, source, "tool"))
            {
                // HTTP clients must drop a tool whose header annotations are invalid, and mcpx is
                // such a client of its upstreams; the catalog is one for every transport.
                let header_params = match mcpheaders::header_params(&tool["inputSchema"]) {
                    Ok(params) => params,
                    Err(why) => {
                        tracing::warn!(server = source.server, tool = %tool["name"], "dropped a tool: {why}");
                        continue;
                    }
                };
                let exposed = rename(tool, source, &mut tool_servers, "tool")?;
                catalog
                    .tool_header_params
                    .insert(exposed.0.clone(), header_params);
                catalog.tool_routes.insert(exposed.0.clone(), exposed.1);
                catalog.tools.push(exposed.2);
            }
            for prompt in source
                .listing
                .prompts
                .iter()
                .filter(|p| named(p, source, "prompt"))
            {
                let exposed = rename(prompt, source, &mut prompt_servers, "prompt")?;
                catalog.prompt_routes.insert(exposed.0.clone(), exposed.1);
                catalog.prompts.push(exposed.2);
            }
            for resource in &source.listing.resources {
                if let Some(uri) = resource.get("uri").and_then(Value::as_str) {
                    catalog
                        .resource_owners
                        .entry(uri.to_owned())
                        .or_insert(source.owner);
                    catalog.resources.push(resource.clone());
                }
            }
            for template in &source.listing.templates {
                if let Some(pattern) = template.get("uriTemplate").and_then(Value::as_str) {
                    catalog
                        .template_owners
                        .push((pattern.to_owned(), source.owner));
                    catalog.templates.push(template.clone());
                }
            }
        }
        Ok(catalog)
    }

    /// The kinds of list in which `other` differs from this catalog: what clients must hear
    /// `list_changed` for.
    pub fn differences(&self, other: &Catalog) -> Vec<ListKind> {
        differing_kinds(
            [&self.tools, &self.prompts, &self.resources, &self.templates],
            [
                &other.tools,
                &other.prompts,
                &other.resources,
                &other.templates,
            ],
        )
    }

    /// The route of an exposed tool name.
    pub fn tool(&self, exposed: &str) -> Option<&Route> {
        self.tool_routes.get(exposed)
    }

    /// The exposed tool definition (verbatim upstream schema, exposed name).
    pub fn tool_definition(&self, exposed: &str) -> Option<&Value> {
        self.tools.iter().find(|t| t["name"] == exposed)
    }

    /// The `Mcp-Param-*` headers a call of this exposed tool must carry.
    pub fn tool_header_params(&self, exposed: &str) -> Option<&[HeaderParam]> {
        self.tool_header_params.get(exposed).map(Vec::as_slice)
    }

    /// The route of an exposed prompt name.
    pub fn prompt(&self, exposed: &str) -> Option<&Route> {
        self.prompt_routes.get(exposed)
    }

    /// Which server answers for a resource URI: the one that listed it, else the first whose
    /// template matches it.
    pub fn resource_owner(&self, uri: &str) -> Option<Owner> {
        self.resource_owners.get(uri).copied().or_else(|| {
            self.template_owners
                .iter()
                .find(|(pattern, _)| template_matches(pattern, uri))
                .map(|(_, owner)| *owner)
        })
    }

    /// Which server listed a resource template.
    pub fn template_owner(&self, uri_template: &str) -> Option<Owner> {
        self.template_owners
            .iter()
            .find(|(p, _)| p == uri_template)
            .map(|(_, o)| *o)
    }

    /// One page of a merged list, as the result object of its `*/list` method.
    pub fn page(&self, method: &str, cursor: Option<&Value>) -> Result<Value, ErrorObject> {
        let (key, items) = match method {
            "tools/list" => ("tools", &self.tools),
            "prompts/list" => ("prompts", &self.prompts),
            "resources/list" => ("resources", &self.resources),
            _ => ("resourceTemplates", &self.templates),
        };
        let start = match cursor {
            None | Some(Value::Null) => 0,
            Some(cursor) => decode_cursor(cursor)
                .filter(|&n| n <= items.len())
                .ok_or_else(|| {
                    ErrorObject::new(
                        INVALID_PARAMS,
                        format!("Invalid params: unknown cursor {cursor}"),
                    )
                })?,
        };
        let end = (start + PAGE_SIZE).min(items.len());
        let mut result = json!({ key: items[start..end] });
        if end < items.len() {
            result["nextCursor"] = json!(encode_cursor(end));
        }
        Ok(result)
    }
}

/// Whether a listed tool or prompt has a name: anything else (a string, a number, an object
/// without one) could never be called, so it is left out with a warning.
fn named(item: &Value, source: &Source<'_>, what: &str) -> bool {
    let named = item.get("name").is_some_and(Value::is_string);
    if !named {
        tracing::warn!(
            server = source.server,
            "dropped a {what} without a name: {item}"
        );
    }
    named
}

/// Renames one tool or prompt; returns (exposed name, route, exposed definition).
fn rename(
    item: &Value,
    source: &Source<'_>,
    seen: &mut HashMap<String, String>,
    what: &str,
) -> Result<(String, Route, Value), String> {
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    let exposed = naming::exposed(source.prefix, name);
    if let Some(other) = seen.insert(exposed.clone(), source.server.to_owned()) {
        return Err(format!(
            "{what} name {exposed:?} is exposed by both server {other:?} and server {:?}; give one of them a different `prefix`",
            source.server
        ));
    }
    let mut definition = item.clone();
    definition["name"] = json!(exposed);
    let route = Route {
        owner: source.owner,
        name: name.to_owned(),
    };
    Ok((exposed, route, definition))
}

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("mcpx:{offset}"))
}

fn decode_cursor(cursor: &Value) -> Option<usize> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(cursor.as_str()?)
        .ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("mcpx:")?
        .parse()
        .ok()
}

/// Whether `uri` fits an RFC 6570 template, reading every `{...}` expression as "any text".
fn template_matches(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        rest = match rest[open..].find('}') {
            Some(close) => &rest[open + close + 1..],
            None => return false,
        };
    }
    literals.push(rest);
    let (first, last) = (literals[0], literals[literals.len() - 1]);
    if literals.len() == 1 {
        return uri == first;
    }
    if !uri.starts_with(first) || !uri[first.len()..].ends_with(last) {
        return false;
    }
    let mut middle = &uri[first.len()..uri.len() - last.len()];
    for literal in &literals[1..literals.len() - 1] {
        match middle.find(literal) {
            Some(at) => middle = &middle[at + literal.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod every_revision {
    mod catalog {
        use crate::gateway::catalog::{
            template_matches, Catalog, Listing, Owner, Source, PAGE_SIZE,
        };
        use serde_json::json;

        fn listing(tools: &[&str]) -> Listing {
            Listing {
                tools: tools
                    .iter()
                    .map(|t| json!({"name": t, "inputSchema": {"type": "object", "x-keep": 1}}))
                    .collect(),
                ..Listing::default()
            }
        }

        /// A server's list is not trusted to hold objects: what has no name is left out, and the
        /// rest is served.
        #[test]
        fn listed_items_without_a_name_are_left_out() {
            let mut odd = listing(&["echo"]);
            odd.tools
                .extend([json!("x"), json!(5), json!(null), json!({"name": 1})]);
            odd.prompts.extend([json!([]), json!({"name": "p"})]);
            let catalog = Catalog::build(&[Source {
                server: "a",
                prefix: "a",
                owner: Owner::Upstream(0),
                listing: &odd,
            }])
            .unwrap();
            let tools = catalog.page("tools/list", None).unwrap();
            assert_eq!(tools["tools"].as_array().unwrap().len(), 1);
            assert!(catalog.prompt("a__p").is_some());
        }

        #[test]
        fn tools_route_back_to_their_server_with_schemas_verbatim() {
            let a = listing(&["echo"]);
            let catalog = Catalog::build(&[Source {
                server: "a",
                prefix: "a",
                owner: Owner::Upstream(0),
                listing: &a,
            }])
            .unwrap();
            let route = catalog.tool("a__echo").unwrap();
            assert_eq!(
                (route.owner, route.name.as_str()),
                (Owner::Upstream(0), "echo")
            );
            assert_eq!(
                catalog.tool_definition("a__echo").unwrap()["inputSchema"]["x-keep"],
                1
            );
        }

        #[test]
        fn a_collision_is_an_error_naming_both_servers() {
            let (a, b) = (listing(&["echo"]), listing(&["echo"]));
            let err = Catalog::build(&[
                Source {
                    server: "a",
                    prefix: "",
                    owner: Owner::Upstream(0),
                    listing: &a,
                },
                Source {
                    server: "b",
                    prefix: "",
                    owner: Owner::Upstream(1),
                    listing: &b,
                },
            ])
            .unwrap_err();
            assert!(err.contains("\"a\"") && err.contains("\"b\""), "{err}");
        }

        #[test]
        fn lists_paginate_with_opaque_cursors() {
            let names: Vec<String> = (0..PAGE_SIZE + 5).map(|i| format!("t{i:03}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let l = listing(&refs);
            let catalog = Catalog::build(&[Source {
                server: "s",
                prefix: "s",
                owner: Owner::Upstream(0),
                listing: &l,
            }])
            .unwrap();
            let first = catalog.page("tools/list", None).unwrap();
            assert_eq!(first["tools"].as_array().unwrap().len(), PAGE_SIZE);
            let second = catalog
                .page("tools/list", Some(&first["nextCursor"]))
                .unwrap();
            assert_eq!(second["tools"].as_array().unwrap().len(), 5);
            assert!(second.get("nextCursor").is_none());
            assert!(catalog.page("tools/list", Some(&json!("bogus"))).is_err());
        }

        #[test]
        fn templates_match_uris() {
            assert!(template_matches("file:///{path}", "file:///etc/hosts"));
            assert!(template_matches(
                "db://{table}/rows/{id}",
                "db://users/rows/7"
            ));
            assert!(!template_matches(
                "db://{table}/rows/{id}",
                "db://users/cols/7"
            ));
            assert!(!template_matches("file:///{path}", "http://x"));
        }
    }
}
