//! The merged catalog: every upstream's tools, prompts, resources and templates under one roof.
//!
//! Tools and prompts are renamed ([`naming::exposed`]) and routed back by their exposed name; their
//! schemas are kept verbatim. Resources keep their URIs (but for the `ui://` and `skill://` URIs
//! two servers share, [`shared_uris`]) and are routed to the server that listed them or whose tool
//! names them as its UI, or failing that to the server whose template matches. Order is the
//! configuration's server order, then each server's own order, so `tools/list` is deterministic.

use super::apps::{self, BareTools};
use super::cursor;
use super::naming;
use super::route::{Owner, Route};
use super::search::ToolIndex;
use super::shared_uris::{self, SharedUris, UriRenames};
use super::skills;
use super::uri_template::template_matches;
use crate::config::{TaskPolicy, ToolOverride};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::mcpheaders::{self, HeaderParam};
use crate::protocol::Method;
use crate::upstream::ListKind;
use hashbrown::HashMap;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Items per page of a merged list.
pub const PAGE_SIZE: usize = 100;

/// One server's catalog as it listed it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Listing {
    /// `tools/list`.
    pub tools: Vec<Value>,
    /// `prompts/list`.
    pub prompts: Vec<Value>,
    /// `resources/list`.
    pub resources: Vec<Value>,
    /// `resources/templates/list`.
    pub templates: Vec<Value>,
    /// `skills/list` (Skills), from a server that declares it.
    #[serde(default)]
    pub skills: Vec<Value>,
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
    /// How its tools are exposed (`[servers.NAME.tools]`), by their own names.
    pub overrides: Option<&'a BTreeMap<String, ToolOverride>>,
    /// Its `tasks`, where mcpx runs its tasks for 2025-11-25 clients; `None` where it runs
    /// 2025-11-25 tasks itself (its tools keep their own `execution.taskSupport`) or none may.
    pub own_tasks: Option<TaskPolicy>,
}

/// The merged catalog.
#[derive(Debug, Default)]
pub struct Catalog {
    tools: Vec<Value>,
    /// The tools a client that cannot render Apps is shown: all but the App-only ones.
    model_tools: Vec<Value>,
    /// Tools by their servers' own names, as Apps call them ([`apps`]).
    bare_tools: BareTools,
    /// The URIs renamed because two servers use them ([`shared_uris`]).
    shared_uris: SharedUris,
    tool_routes: HashMap<String, Route>,
    tool_header_params: HashMap<String, Vec<HeaderParam>>,
    prompts: Vec<Value>,
    prompt_routes: HashMap<String, Route>,
    resources: Vec<Value>,
    resource_owners: HashMap<String, Owner>,
    templates: Vec<Value>,
    template_owners: Vec<(String, Owner)>,
    skills: Vec<Value>,
    skill_owners: Vec<Owner>,
    /// A search profile's: what `tools/list` shows instead of `tools`, and the index that
    /// `mcpx__search_tools` asks.
    search: Option<(Vec<Value>, Arc<ToolIndex>)>,
}

impl Catalog {
    /// Merges the sources in order. Two servers exposing one name never share it (a call would
    /// go to the wrong server): the name's first owner keeps it (its owner in `previous`, the
    /// catalog being replaced, else the server first in order), and the newcomer's item is left
    /// out; each such collision is returned, naming both, for the caller to report.
    pub fn build(sources: &[Source<'_>], previous: &Catalog) -> (Catalog, Vec<Collision>) {
        let mut catalog = Catalog::default();
        let mut collisions = Vec::new();
        // What each source can serve, found once (what is left out is logged once).
        let tools: Vec<Vec<&Value>> = sources
            .iter()
            .map(|s| {
                s.listing
                    .tools
                    .iter()
                    .filter(|t| is_served_tool(t, s))
                    .collect()
            })
            .collect();
        let prompts: Vec<Vec<&Value>> = sources
            .iter()
            .map(|s| {
                s.listing
                    .prompts
                    .iter()
                    .filter(|p| has_name(p, s, "prompt"))
                    .collect()
            })
            .collect();
        let claims = |items: &[Vec<&Value>]| -> Vec<(usize, String)> {
            let named = items.iter().enumerate().flat_map(|(i, listed)| {
                listed
                    .iter()
                    .map(move |item| (i, exposed_name(item, &sources[i])))
            });
            named.collect()
        };
        let ui_claims: Vec<_> = sources
            .iter()
            .map(|s| apps::claimed(listed(s.listing)))
            .collect();
        let servers: Vec<&str> = sources.iter().map(|s| s.server).collect();
        let shared_ui = shared_uris::shared(&ui_claims, &servers);
        let skill_dirs: Vec<_> = sources
            .iter()
            .map(|s| skills::claimed(&s.listing.skills))
            .collect();
        let shared_dirs = shared_uris::shared(&skill_dirs, &servers);
        let tool_keepers = keepers(sources, claims(&tools), &previous.tool_routes);
        let prompt_keepers = keepers(sources, claims(&prompts), &previous.prompt_routes);
        for (index, source) in sources.iter().enumerate() {
            let mut renames = UriRenames::new(source.server);
            let templates = &source.listing.templates;
            apps::add_renames(&mut renames, &ui_claims[index], templates, &shared_ui);
            for dir in skill_dirs[index].intersection(&shared_dirs) {
                renames.dir(dir);
            }
            for tool in tools[index].iter().copied() {
                let own_name = tool["name"].as_str().unwrap_or_default();
                let overridden = source.overrides.and_then(|o| o.get(own_name));
                let exposed_name = exposed_name(tool, source);
                if let Some(collision) = lost(&tool_keepers, &exposed_name, source, "tool") {
                    collisions.push(collision);
                    continue;
                }
                // Checked by `is_served_tool`: header annotations mcpx's HTTP clients accept.
                let header_params =
                    mcpheaders::header_params(&tool["inputSchema"]).unwrap_or_default();
                let mut exposed = rename(tool, source, exposed_name);
                if let Some(changes) = overridden {
                    apply(changes, &mut exposed.2);
                }
                if let Some(policy) = source.own_tasks {
                    let policy = overridden.and_then(|o| o.tasks).unwrap_or(policy);
                    offer_own_tasks(policy, &mut exposed.2);
                }
                apps::rename_in_tool(&renames, &mut exposed.2);
                // A UI resource may be left out of `resources/list`: its tool names its owner.
                for uri in apps::tool_ui_uris(&exposed.2) {
                    catalog
                        .resource_owners
                        .entry(uri.to_owned())
                        .or_insert(source.owner);
                }
                // No App is served by mcpx's own server: its tools keep their prefix.
                if source.owner != Owner::Builtin {
                    catalog.bare_tools.add(own_name, &exposed.0);
                }
                catalog
                    .tool_header_params
                    .insert(exposed.0.clone(), header_params);
                catalog.tool_routes.insert(exposed.0.clone(), exposed.1);
                catalog.tools.push(exposed.2);
            }
            for prompt in prompts[index].iter().copied() {
                let exposed_name = exposed_name(prompt, source);
                if let Some(collision) = lost(&prompt_keepers, &exposed_name, source, "prompt") {
                    collisions.push(collision);
                    continue;
                }
                let exposed = rename(prompt, source, exposed_name);
                catalog.prompt_routes.insert(exposed.0.clone(), exposed.1);
                catalog.prompts.push(exposed.2);
            }
            for resource in &source.listing.resources {
                let mut resource = resource.clone();
                renames.in_item(&mut resource);
                if let Some(uri) = resource.member("uri").and_then(Value::as_str) {
                    catalog
                        .resource_owners
                        .entry(uri.to_owned())
                        .or_insert(source.owner);
                    catalog.resources.push(resource);
                }
            }
            for template in &source.listing.templates {
                let mut template = template.clone();
                renames.in_item(&mut template);
                if let Some(pattern) = template.member("uriTemplate").and_then(Value::as_str) {
                    catalog
                        .template_owners
                        .push((pattern.to_owned(), source.owner));
                    catalog.templates.push(template);
                }
            }
            for skill in &source.listing.skills {
                let skill = skills::renamed(&renames, skill);
                for uri in skills::uris(&skill) {
                    let owners = &mut catalog.resource_owners;
                    owners.entry(uri.to_owned()).or_insert(source.owner);
                }
                catalog.skills.push(skill);
                catalog.skill_owners.push(source.owner);
            }
            catalog.shared_uris.add(source.owner, renames);
        }
        catalog.model_tools = model_tools(&catalog.tools);
        (catalog, collisions)
    }

    /// The kinds of list in which `other` differs from this catalog as its clients see it: what
    /// they must hear `list_changed` for (templates announce as resources).
    pub fn differences(&self, other: &Catalog) -> Vec<ListKind> {
        let mut kinds = Vec::new();
        if self.listed_tools() != other.listed_tools() {
            kinds.push(ListKind::Tools);
        }
        if self.prompts != other.prompts {
            kinds.push(ListKind::Prompts);
        }
        if self.resources != other.resources || self.templates != other.templates {
            kinds.push(ListKind::Resources);
        }
        kinds
    }

    /// What `tools/list` shows a client that renders Apps.
    fn listed_tools(&self) -> &Vec<Value> {
        self.listed_tools_for(true)
    }

    /// What `tools/list` shows: to a client that cannot render Apps (`apps` false), no tool
    /// only an App may call.
    fn listed_tools_for(&self, apps: bool) -> &Vec<Value> {
        match (&self.search, apps) {
            (Some((listed, _)), _) => listed,
            (None, true) => &self.tools,
            (None, false) => &self.model_tools,
        }
    }

    /// How many tools can be called, how many `tools/list` shows, and how many prompts.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.tools.len(),
            self.listed_tools().len(),
            self.prompts.len(),
        )
    }

    /// The part of this catalog that `keep` admits, by owner and exposed name (resources, which
    /// have no exposed name, by owner alone); the rest is unknown to it, exactly as a name no
    /// server lists.
    pub fn restricted(&self, keep: impl Fn(Owner, Option<&str>) -> bool) -> Catalog {
        let routed = |routes: &HashMap<String, Route>, item: &Value| {
            named(item)
                .and_then(|name| routes.get(name))
                .is_some_and(|route| keep(route.owner, named(item)))
        };
        let tools: Vec<Value> = self
            .tools
            .iter()
            .filter(|t| routed(&self.tool_routes, t))
            .cloned()
            .collect();
        let prompts: Vec<Value> = self
            .prompts
            .iter()
            .filter(|p| routed(&self.prompt_routes, p))
            .cloned()
            .collect();
        let kept_templates: Vec<(Value, (String, Owner))> = self
            .templates
            .iter()
            .zip(&self.template_owners)
            .filter(|(template, (_, owner))| keep(*owner, named(template)))
            .map(|(t, o)| (t.clone(), o.clone()))
            .collect();
        let resource_owners: HashMap<String, Owner> = self
            .resource_owners
            .iter()
            .filter(|(_, owner)| keep(**owner, None))
            .map(|(uri, owner)| (uri.clone(), *owner))
            .collect();
        let only = |names: &[Value], map: &HashMap<String, Route>| -> HashMap<String, Route> {
            names
                .iter()
                .filter_map(named)
                .filter_map(|n| map.get_key_value(n))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let tool_routes = only(&tools, &self.tool_routes);
        let (skills, skill_owners) = self
            .skills
            .iter()
            .zip(&self.skill_owners)
            .filter(|(_, owner)| keep(**owner, None))
            .map(|(skill, owner)| (skill.clone(), *owner))
            .unzip();
        Catalog {
            model_tools: model_tools(&tools),
            bare_tools: self.bare_tools.restricted(|e| tool_routes.contains_key(e)),
            shared_uris: self.shared_uris.restricted(|owner| keep(owner, None)),
            skills,
            skill_owners,
            tool_header_params: self
                .tool_header_params
                .iter()
                .filter(|(name, _)| tool_routes.contains_key(*name))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            tool_routes,
            prompt_routes: only(&prompts, &self.prompt_routes),
            resources: self
                .resources
                .iter()
                .filter(|r| {
                    r.member("uri")
                        .and_then(Value::as_str)
                        .is_some_and(|uri| resource_owners.contains_key(uri))
                })
                .cloned()
                .collect(),
            resource_owners,
            templates: kept_templates.iter().map(|(t, _)| t.clone()).collect(),
            template_owners: kept_templates.into_iter().map(|(_, o)| o).collect(),
            tools,
            prompts,
            search: None,
        }
    }

    /// This catalog behind search: `tools/list` shows `listed` (the search and call tools,
    /// which `routes` routes), while every tool stays callable and is found by
    /// `mcpx__search_tools`.
    pub fn searched(mut self, listed: Vec<Value>, routes: Vec<(String, Route)>) -> Catalog {
        let index = ToolIndex::new(&self.tools);
        self.tool_routes.extend(routes);
        self.search = Some((listed, Arc::new(index)));
        self
    }

    /// The search index, in a search profile.
    pub fn search_index(&self) -> Option<&ToolIndex> {
        self.search.as_ref().map(|(_, index)| index.as_ref())
    }

    /// The route of an exposed tool name.
    pub fn tool(&self, exposed: &str) -> Option<&Route> {
        self.tool_routes.get(exposed)
    }

    /// The `Mcp-Param-*` headers a call of this tool must carry (by the name the call gives:
    /// exposed, or its server's own, [`Catalog::called_tool`]).
    pub fn tool_header_params(&self, called: &str) -> Option<&[HeaderParam]> {
        let exposed = self.called_tool(called).ok().flatten()?;
        self.tool_header_params.get(exposed).map(Vec::as_slice)
    }

    /// The route of an exposed prompt name.
    pub fn prompt(&self, exposed: &str) -> Option<&Route> {
        self.prompt_routes.get(exposed)
    }

    /// Which server answers for a resource URI ([`Catalog::resource_route`]).
    pub fn resource_owner(&self, uri: &str) -> Option<Owner> {
        self.resource_route(uri).map(|(owner, _)| owner)
    }

    /// Which server answers for a resource URI: the one that listed it, else the first whose
    /// template matches it (and that template, as shown).
    pub fn resource_route(&self, uri: &str) -> Option<(Owner, Option<&str>)> {
        if let Some(owner) = self.resource_owners.get(uri) {
            return Some((*owner, None));
        }
        self.template_owners
            .iter()
            .find(|(pattern, _)| template_matches(pattern, uri))
            .map(|(pattern, owner)| (*owner, Some(pattern.as_str())))
    }

    /// Which server listed a resource template.
    pub fn template_owner(&self, uri_template: &str) -> Option<Owner> {
        self.template_owners
            .iter()
            .find(|(p, _)| p == uri_template)
            .map(|(_, o)| *o)
    }

    /// The exposed name a `tools/call` of `name` reaches ([`BareTools::called`]).
    pub fn called_tool<'a>(&'a self, name: &'a str) -> Result<Option<&'a str>, ErrorObject> {
        let exposes = |exposed: &str| self.tool_routes.contains_key(exposed);
        self.bare_tools.called(name, exposes)
    }

    /// What the exposed tool's 2025-11-25 `execution.taskSupport` says (`forbidden` when it says
    /// nothing). Looked up only for a server that runs 2025-11-25 tasks, so a scan will do.
    pub fn task_support(&self, exposed: &str) -> &str {
        let tool = self.tools.iter().find(|t| t["name"] == exposed);
        let support = tool.and_then(|t| t["execution"]["taskSupport"].as_str());
        support.unwrap_or("forbidden")
    }

    /// The URIs renamed because two servers use them.
    pub fn shared_uris(&self) -> &SharedUris {
        &self.shared_uris
    }

    /// One page of a merged list, as the result object of its `*/list` method, for a client
    /// that renders Apps or not.
    pub fn page(
        &self,
        method: Method,
        cursor: Option<&Value>,
        apps: bool,
    ) -> Result<Value, ErrorObject> {
        let items = match method {
            Method::ToolsList => self.listed_tools_for(apps),
            Method::PromptsList => &self.prompts,
            Method::ResourcesList => &self.resources,
            Method::SkillsList => &self.skills,
            _ => &self.templates,
        };
        let key = method.list_key().unwrap_or("resourceTemplates");
        let start = match cursor {
            None | Some(Value::Null) => 0,
            Some(cursor) => cursor::decode(cursor)
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
            result["nextCursor"] = json!(cursor::encode(end));
        }
        Ok(result)
    }
}

/// A listing's tools, resources and templates, as [`apps`] reads them.
fn listed(listing: &Listing) -> apps::Listed<'_> {
    (&listing.tools, &listing.resources, &listing.templates)
}

/// The tools but those only an App may call.
fn model_tools(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .filter(|t| !apps::is_app_only(t))
        .cloned()
        .collect()
}

/// An item's `name`, if it is a string.
fn named(item: &Value) -> Option<&str> {
    item.member("name").and_then(Value::as_str)
}

/// Whether a listed tool or prompt has a name: anything else (a string, a number, an object
/// without one) could never be called, so it is left out with a warning.
fn has_name(item: &Value, source: &Source<'_>, what: &str) -> bool {
    let named = item.member("name").is_some_and(Value::is_string);
    if !named {
        tracing::warn!(
            server = source.server,
            "dropped a {what} without a name: {item}"
        );
    }
    named
}

/// Two servers that expose one name: `kept` serves it, `dropped`'s item is left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Collision {
    /// "tool" or "prompt".
    pub what: &'static str,
    /// The exposed name.
    pub name: String,
    /// The server that keeps it.
    pub kept: String,
    /// The server whose item is left out.
    pub dropped: String,
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} name {:?} is exposed by both server {:?} and server {:?}: {:?} keeps it, {:?}'s is not served; give one of them a different `prefix`",
            self.what, self.name, self.kept, self.dropped, self.kept, self.dropped
        )
    }
}

/// Whether a listed tool can be served: it has a name, is not disabled by an override, and its
/// header annotations are valid (HTTP clients must drop one whose are not, and mcpx is such a
/// client of its upstreams; the catalog is one for every transport).
fn is_served_tool(tool: &Value, source: &Source<'_>) -> bool {
    if !has_name(tool, source, "tool") {
        return false;
    }
    let own_name = tool["name"].as_str().unwrap_or_default();
    if source
        .overrides
        .and_then(|o| o.get(own_name))
        .is_some_and(|o| o.disabled)
    {
        return false;
    }
    match mcpheaders::header_params(&tool["inputSchema"]) {
        Ok(_) => true,
        Err(why) => {
            tracing::warn!(server = source.server, tool = %tool["name"], "dropped a tool: {why}");
            false
        }
    }
}

/// The name an item is exposed under: its override's name, if it has one, after the prefix.
fn exposed_name(item: &Value, source: &Source<'_>) -> String {
    let name = item
        .member("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let overridden = source.overrides.and_then(|o| o.get(name));
    let shown = overridden.and_then(|o| o.name.as_deref()).unwrap_or(name);
    naming::exposed(source.prefix, shown)
}

/// Which server keeps each exposed name that several sources claim (`claims`: a source's
/// index and a name it exposes): the one `previous` routed it to, if it still claims it, else
/// the first in order.
fn keepers<'s>(
    sources: &'s [Source<'s>],
    claims: Vec<(usize, String)>,
    previous: &HashMap<String, Route>,
) -> HashMap<String, (Owner, &'s str)> {
    let mut claimants: HashMap<String, Vec<(Owner, &'s str)>> = HashMap::new();
    for (index, name) in claims {
        let source = &sources[index];
        let listed = claimants.entry(name).or_default();
        if !listed.iter().any(|(owner, _)| *owner == source.owner) {
            listed.push((source.owner, source.server));
        }
    }
    claimants
        .into_iter()
        .filter(|(_, listed)| listed.len() > 1)
        .map(|(name, listed)| {
            let earlier = previous.get(&name).map(|route| route.owner);
            let keeper = listed
                .iter()
                .find(|(owner, _)| Some(*owner) == earlier)
                .unwrap_or(&listed[0]);
            (name, *keeper)
        })
        .collect()
}

/// The collision that leaves `source`'s item named `exposed` out, if another server keeps it.
fn lost(
    keepers: &HashMap<String, (Owner, &str)>,
    exposed: &str,
    source: &Source<'_>,
    what: &'static str,
) -> Option<Collision> {
    let (owner, server) = keepers.get(exposed)?;
    (*owner != source.owner).then(|| Collision {
        what,
        name: exposed.to_owned(),
        kept: (*server).to_owned(),
        dropped: source.server.to_owned(),
    })
}

/// One tool or prompt exposed under `exposed`: (exposed name, route, exposed definition).
fn rename(item: &Value, source: &Source<'_>, exposed: String) -> (String, Route, Value) {
    let name = item
        .member("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut definition = item.clone();
    definition["name"] = json!(exposed);
    let route = Route {
        owner: source.owner,
        name: name.to_owned(),
    };
    (exposed, route, definition)
}

/// A tool override's description, title and annotation hints, written over the tool's own.
/// Tells 2025-11-25 clients (the only ones shown `execution`) of the tasks mcpx runs for a tool:
/// `always` offers one, `required` demands one. `auto` offers none, though one asked for is made:
/// 2025-11-25 has no "sync, then promote", and a client offered tasks may make every call one.
fn offer_own_tasks(policy: TaskPolicy, tool: &mut Value) {
    let support = match policy {
        TaskPolicy::Always => "optional",
        TaskPolicy::Required => "required",
        TaskPolicy::Auto | TaskPolicy::Never => return,
    };
    tool["execution"]["taskSupport"] = json!(support);
}

fn apply(changes: &ToolOverride, definition: &mut Value) {
    if let Some(description) = &changes.description {
        definition["description"] = json!(description);
    }
    if let Some(title) = &changes.title {
        definition["title"] = json!(title);
    }
    for (key, hint) in changes.hints() {
        if let Some(hint) = hint {
            if !definition["annotations"].is_object() {
                definition["annotations"] = json!({});
            }
            definition["annotations"][key] = json!(hint);
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod catalog {
        use crate::gateway::catalog::{Catalog, Listing, Owner, Source, PAGE_SIZE};
        use crate::protocol::Method;
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
            let catalog = Catalog::build(
                &[Source {
                    server: "a",
                    prefix: "a",
                    owner: Owner::Upstream(0),
                    listing: &odd,
                    overrides: None,
                    own_tasks: None,
                }],
                &Catalog::default(),
            )
            .0;
            let tools = catalog.page(Method::ToolsList, None, true).unwrap();
            assert_eq!(tools["tools"].as_array().unwrap().len(), 1);
            assert!(catalog.prompt("a__p").is_some());
        }

        #[test]
        fn tools_route_back_to_their_server_with_schemas_verbatim() {
            let a = listing(&["echo"]);
            let catalog = Catalog::build(
                &[Source {
                    server: "a",
                    prefix: "a",
                    owner: Owner::Upstream(0),
                    listing: &a,
                    overrides: None,
                    own_tasks: None,
                }],
                &Catalog::default(),
            )
            .0;
            let route = catalog.tool("a__echo").unwrap();
            assert_eq!(
                (route.owner, route.name.as_str()),
                (Owner::Upstream(0), "echo")
            );
            assert_eq!(
                catalog
                    .tools
                    .iter()
                    .find(|t| t["name"] == "a__echo")
                    .unwrap()["inputSchema"]["x-keep"],
                1
            );
        }

        /// A name two servers expose stays with its first owner: the first in order at start,
        /// and afterwards whoever had it, even when the newcomer comes first in order. The
        /// newcomer's item is left out and the collision names both.
        #[test]
        fn a_collision_keeps_the_first_owner_and_names_both_servers() {
            let (a, b) = (listing(&["echo", "a_only"]), listing(&["echo"]));
            let source = |server, owner, listing| Source {
                server,
                prefix: "",
                owner: Owner::Upstream(owner),
                listing,
                overrides: None,
                own_tasks: None,
            };
            let (first, collisions) = Catalog::build(
                &[source("a", 0, &a), source("b", 1, &b)],
                &Catalog::default(),
            );
            assert_eq!(first.tool("echo").unwrap().owner, Owner::Upstream(0));
            assert!(first.tool("a_only").is_some());
            assert_eq!(collisions.len(), 1);
            let said = collisions[0].to_string();
            assert!(
                said.contains("\"a\" keeps it") && said.contains("\"b\""),
                "{said}"
            );
            // b comes first in order now, but a had the name: a keeps it.
            let (after, collisions) =
                Catalog::build(&[source("b", 1, &b), source("a", 0, &a)], &first);
            assert_eq!(after.tool("echo").unwrap().owner, Owner::Upstream(0));
            assert_eq!(collisions[0].dropped, "b");
        }

        #[test]
        fn lists_paginate_with_opaque_cursors() {
            let names: Vec<String> = (0..PAGE_SIZE + 5).map(|i| format!("t{i:03}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let l = listing(&refs);
            let catalog = Catalog::build(
                &[Source {
                    server: "s",
                    prefix: "s",
                    owner: Owner::Upstream(0),
                    listing: &l,
                    overrides: None,
                    own_tasks: None,
                }],
                &Catalog::default(),
            )
            .0;
            let first = catalog.page(Method::ToolsList, None, true).unwrap();
            assert_eq!(first["tools"].as_array().unwrap().len(), PAGE_SIZE);
            let second = catalog
                .page(Method::ToolsList, Some(&first["nextCursor"]), true)
                .unwrap();
            assert_eq!(second["tools"].as_array().unwrap().len(), 5);
            assert!(second.get("nextCursor").is_none());
            assert!(catalog
                .page(Method::ToolsList, Some(&json!("bogus")), true)
                .is_err());
        }
    }
}
