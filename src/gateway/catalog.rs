//! The merged catalog: every upstream's tools, prompts, resources, templates, skills and event
//! types under one roof.
//!
//! Tools and prompts are renamed ([`naming::exposed`]) and routed back by their exposed name; their
//! schemas are kept verbatim. Resources keep their URIs (but for the `ui://` and `skill://` URIs
//! two servers share, [`shared_uris`]) and are routed to the server that listed them or whose tool
//! names them as its UI, or failing that to the server whose template matches. Order is the
//! configuration's server order, then each server's own order, so `tools/list` is deterministic.

use super::apps::{self, BareTools};
use super::collisions::{keepers, lost, Claimant, Collision};
use super::cursor;
use super::event_types;
use super::merged::{List, Merged};
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
    /// `events/list` (Events), from a server that declares it.
    #[serde(default)]
    pub events: Vec<Value>,
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
    /// Whether mcpx relays its own webhooks to clients, so its webhook-only event types are
    /// carried.
    pub relays_webhooks: bool,
}

impl<'a> Source<'a> {
    /// It as a claimant of exposed names.
    fn claimant(&self) -> Claimant<'a> {
        (self.owner, self.server)
    }
}

/// The merged catalog.
#[derive(Debug, Default)]
pub struct Catalog {
    /// The merged lists, by kind ([`List`] as an index).
    lists: [Merged; 6],
    /// URIs a server answers for that no `resources/list` need hold: its tools' UI resources
    /// (an App's HTML may be left out of the list) and its skills' files.
    named_uris: HashMap<String, Owner>,
    /// The tools a client that cannot render Apps is shown: all but the App-only ones.
    model_tools: Vec<Value>,
    /// Tools by their servers' own names, as Apps call them ([`apps`]).
    bare_tools: BareTools,
    /// The URIs renamed because two servers use them ([`shared_uris`]).
    shared_uris: SharedUris,
    /// The `Mcp-Param-*` headers a call of each exposed tool carries.
    tool_header_params: HashMap<String, Vec<HeaderParam>>,
    /// A search profile's: what `tools/list` shows instead, and how it is searched.
    search: Option<Search>,
}

/// What a search profile adds to a catalog.
#[derive(Debug)]
struct Search {
    /// What `tools/list` shows: the search and call tools.
    listed: Vec<Value>,
    /// What `mcpx__search_tools` asks.
    index: Arc<ToolIndex>,
    /// The search and call tools' routes.
    routes: HashMap<String, Route>,
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
        let events: Vec<Vec<&Value>> = sources
            .iter()
            .map(|s| {
                let named = s.listing.events.iter();
                named.filter(|e| has_name(e, s, "event type")).collect()
            })
            .collect();
        let claims = |items: &[Vec<&Value>], exposed: fn(&Value, &Source<'_>) -> String| {
            let named = items.iter().enumerate().flat_map(move |(i, listed)| {
                let source = &sources[i];
                listed
                    .iter()
                    .map(move |item| (source.claimant(), exposed(item, source)))
            });
            named.collect::<Vec<_>>()
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
        let tool_keepers = keepers(claims(&tools, exposed_name), previous.list(List::Tools));
        let prompt_keepers = keepers(claims(&prompts, exposed_name), previous.list(List::Prompts));
        let event_keepers = keepers(
            claims(&events, |event, source| {
                event_types::exposed(event, source.prefix)
            }),
            previous.list(List::Events),
        );
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
                if let Some(collision) =
                    lost(&tool_keepers, &exposed_name, source.claimant(), "tool")
                {
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
                    catalog.name_uri(uri, source.owner);
                }
                // No App is served by mcpx's own server: its tools keep their prefix.
                if source.owner != Owner::Builtin {
                    catalog.bare_tools.add(own_name, &exposed.0);
                }
                catalog
                    .tool_header_params
                    .insert(exposed.0.clone(), header_params);
                catalog.lists[List::Tools as usize].push(exposed.0, exposed.2, exposed.1);
            }
            for prompt in prompts[index].iter().copied() {
                let exposed_name = exposed_name(prompt, source);
                if let Some(collision) =
                    lost(&prompt_keepers, &exposed_name, source.claimant(), "prompt")
                {
                    collisions.push(collision);
                    continue;
                }
                let exposed = rename(prompt, source, exposed_name);
                catalog.lists[List::Prompts as usize].push(exposed.0, exposed.2, exposed.1);
            }
            let (resources, templates) = (&source.listing.resources, &source.listing.templates);
            for (list, key, listed) in [
                (List::Resources, "uri", resources),
                (List::Templates, "uriTemplate", templates),
            ] {
                for item in listed {
                    let Some(own) = item.member(key).and_then(Value::as_str) else {
                        continue;
                    };
                    let mut shown = item.clone();
                    renames.in_item(&mut shown);
                    let shown_key = shown[key].as_str().unwrap_or(own).to_owned();
                    let route = Route::new(source.owner, own);
                    catalog.lists[list as usize].push(shown_key, shown, route);
                }
            }
            for skill in &source.listing.skills {
                let skill = skills::renamed(&renames, skill);
                for uri in skills::uris(&skill) {
                    catalog.name_uri(uri, source.owner);
                }
                let name = named(&skill).unwrap_or_default().to_owned();
                let route = Route::new(source.owner, &name);
                catalog.lists[List::Skills as usize].push(name, skill, route);
            }
            for event in events[index].iter().copied() {
                let exposed = event_types::exposed(event, source.prefix);
                if let Some(collision) = lost(&event_keepers, &exposed, source.claimant(), "event")
                {
                    collisions.push(collision);
                    continue;
                }
                if let Some(shown) = event_types::shown(event, &exposed, source.relays_webhooks) {
                    let route = Route::new(source.owner, named(event).unwrap_or_default());
                    catalog.lists[List::Events as usize].push(exposed, shown, route);
                }
            }
            catalog.shared_uris.add(source.owner, renames);
        }
        catalog.model_tools = model_tools(catalog.list(List::Tools).shown());
        (catalog, collisions)
    }

    /// One merged list.
    fn list(&self, list: List) -> &Merged {
        &self.lists[list as usize]
    }

    /// Notes that `owner` answers for `uri`, unless another server named it first.
    fn name_uri(&mut self, uri: &str, owner: Owner) {
        self.named_uris.entry(uri.to_owned()).or_insert(owner);
    }

    /// The kinds of list in which `other` differs from this catalog as its clients see it: what
    /// they must hear `list_changed` for (templates announce as resources).
    pub fn differences(&self, other: &Catalog) -> Vec<ListKind> {
        let differs = |list: List| !self.list(list).shows_as(other.list(list));
        let mut kinds = Vec::new();
        if self.listed_tools_for(true) != other.listed_tools_for(true) {
            kinds.push(ListKind::Tools);
        }
        if differs(List::Prompts) {
            kinds.push(ListKind::Prompts);
        }
        if differs(List::Resources) || differs(List::Templates) {
            kinds.push(ListKind::Resources);
        }
        if differs(List::Events) {
            kinds.push(ListKind::Events);
        }
        kinds
    }

    /// What `tools/list` shows: to a client that cannot render Apps (`apps` false), no tool
    /// only an App may call.
    fn listed_tools_for(&self, apps: bool) -> Vec<&Value> {
        match (&self.search, apps) {
            (Some(search), _) => search.listed.iter().collect(),
            (None, true) => self.list(List::Tools).shown().collect(),
            (None, false) => self.model_tools.iter().collect(),
        }
    }

    /// How many tools can be called, how many `tools/list` shows, and how many prompts.
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.list(List::Tools).len(),
            self.listed_tools_for(true).len(),
            self.list(List::Prompts).len(),
        )
    }

    /// The part of this catalog that `keep` admits, by owner and exposed name (resources and
    /// skills, which have no exposed name, by owner alone); the rest is unknown to it, exactly
    /// as a name no server lists.
    pub fn restricted(&self, keep: impl Fn(Owner, Option<&str>) -> bool) -> Catalog {
        let lists = List::ALL.map(|list| {
            self.list(list).filtered(|item| {
                let name = match list {
                    List::Tools | List::Prompts | List::Events => Some(item.key.as_str()),
                    List::Templates => named(&item.shown),
                    List::Resources | List::Skills => None,
                };
                keep(item.route.owner, name)
            })
        });
        let tools = &lists[List::Tools as usize];
        Catalog {
            model_tools: model_tools(tools.shown()),
            bare_tools: self.bare_tools.restricted(|e| tools.get(e).is_some()),
            shared_uris: self.shared_uris.restricted(|owner| keep(owner, None)),
            tool_header_params: self
                .tool_header_params
                .iter()
                .filter(|(name, _)| tools.get(name).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            named_uris: self
                .named_uris
                .iter()
                .filter(|(_, owner)| keep(**owner, None))
                .map(|(uri, owner)| (uri.clone(), *owner))
                .collect(),
            lists,
            search: None,
        }
    }

    /// This catalog behind search: `tools/list` shows `listed` (the search and call tools,
    /// which `routes` routes), while every tool stays callable and is found by
    /// `mcpx__search_tools`.
    pub fn searched(mut self, listed: Vec<Value>, routes: Vec<(String, Route)>) -> Catalog {
        let tools: Vec<Value> = self.list(List::Tools).shown().cloned().collect();
        self.search = Some(Search {
            listed,
            index: Arc::new(ToolIndex::new(&tools)),
            routes: routes.into_iter().collect(),
        });
        self
    }

    /// The search index, in a search profile.
    pub fn search_index(&self) -> Option<&ToolIndex> {
        self.search.as_ref().map(|search| search.index.as_ref())
    }

    /// The route of an exposed tool name.
    pub fn tool(&self, exposed: &str) -> Option<&Route> {
        let listed = self.list(List::Tools).get(exposed).map(|item| &item.route);
        let search = || self.search.as_ref()?.routes.get(exposed);
        listed.or_else(search)
    }

    /// The `Mcp-Param-*` headers a call of this tool must carry (by the name the call gives:
    /// exposed, or its server's own, [`Catalog::called_tool`]).
    pub fn tool_header_params(&self, called: &str) -> Option<&[HeaderParam]> {
        let exposed = self.called_tool(called).ok().flatten()?;
        self.tool_header_params.get(exposed).map(Vec::as_slice)
    }

    /// The route of an exposed prompt name.
    pub fn prompt(&self, exposed: &str) -> Option<&Route> {
        let item = self.list(List::Prompts).get(exposed);
        item.map(|item| &item.route)
    }

    /// Which server answers for an exposed event type's name, and its own name there.
    pub fn event(&self, exposed: &str) -> Option<&Route> {
        let item = self.list(List::Events).get(exposed);
        item.map(|item| &item.route)
    }

    /// Whether the exposed event type is shown with the delivery `mode`.
    pub fn event_offers(&self, exposed: &str, mode: &str) -> bool {
        let item = self.list(List::Events).get(exposed);
        let modes = item.and_then(|item| item.shown["delivery"].as_array());
        modes.is_some_and(|modes| modes.iter().any(|m| m == mode))
    }

    /// Which server answers for a resource URI ([`Catalog::resource_route`]).
    pub fn resource_owner(&self, uri: &str) -> Option<Owner> {
        self.resource_route(uri).map(|(owner, _)| owner)
    }

    /// Which server answers for a resource URI: the one that listed it (or named it, as a
    /// tool's UI or a skill's file), else the first whose template matches it (and that
    /// template, as shown).
    pub fn resource_route(&self, uri: &str) -> Option<(Owner, Option<&str>)> {
        let listed = self.list(List::Resources).owner(uri);
        if let Some(owner) = listed.or_else(|| self.named_uris.get(uri).copied()) {
            return Some((owner, None));
        }
        let templates = self.list(List::Templates).items();
        let matching = templates.iter().find(|t| template_matches(&t.key, uri));
        matching.map(|t| (t.route.owner, Some(t.key.as_str())))
    }

    /// Which server listed a resource template.
    pub fn template_owner(&self, uri_template: &str) -> Option<Owner> {
        self.list(List::Templates).owner(uri_template)
    }

    /// The exposed name a `tools/call` of `name` reaches ([`BareTools::called`]).
    pub fn called_tool<'a>(&'a self, name: &'a str) -> Result<Option<&'a str>, ErrorObject> {
        let exposes = |exposed: &str| self.tool(exposed).is_some();
        self.bare_tools.called(name, exposes)
    }

    /// What the exposed tool's 2025-11-25 `execution.taskSupport` says (`forbidden` when it says
    /// nothing).
    pub fn task_support(&self, exposed: &str) -> &str {
        let tool = self.list(List::Tools).get(exposed).map(|item| &item.shown);
        let support = tool.and_then(|t| t["execution"]["taskSupport"].as_str());
        support.unwrap_or("forbidden")
    }

    /// The URIs renamed because two servers use them.
    pub fn shared_uris(&self) -> &SharedUris {
        &self.shared_uris
    }

    /// One page of a merged list, as the result object of its `*/list` method, for a client
    /// that renders Apps or not.
    pub(super) fn page(
        &self,
        list: List,
        cursor: Option<&Value>,
        apps: bool,
    ) -> Result<Value, ErrorObject> {
        let items = match list {
            List::Tools => self.listed_tools_for(apps),
            List::Prompts | List::Resources | List::Templates | List::Skills | List::Events => {
                self.list(list).shown().collect()
            }
        };
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
        let mut result = json!({ list.key(): items[start..end] });
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
fn model_tools<'a>(tools: impl Iterator<Item = &'a Value>) -> Vec<Value> {
    tools.filter(|t| !apps::is_app_only(t)).cloned().collect()
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
        use crate::gateway::merged::List;
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
                    relays_webhooks: false,
                }],
                &Catalog::default(),
            )
            .0;
            let tools = catalog.page(List::Tools, None, true).unwrap();
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
                    relays_webhooks: false,
                }],
                &Catalog::default(),
            )
            .0;
            let route = catalog.tool("a__echo").unwrap();
            assert_eq!(
                (route.owner, route.name.as_str()),
                (Owner::Upstream(0), "echo")
            );
            let tools = catalog.page(List::Tools, None, true).unwrap();
            let echo = tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "a__echo");
            assert_eq!(echo.unwrap()["inputSchema"]["x-keep"], 1);
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
                relays_webhooks: false,
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
                    relays_webhooks: false,
                }],
                &Catalog::default(),
            )
            .0;
            let first = catalog.page(List::Tools, None, true).unwrap();
            assert_eq!(first["tools"].as_array().unwrap().len(), PAGE_SIZE);
            let second = catalog
                .page(List::Tools, Some(&first["nextCursor"]), true)
                .unwrap();
            assert_eq!(second["tools"].as_array().unwrap().len(), 5);
            assert!(second.get("nextCursor").is_none());
            assert!(catalog
                .page(List::Tools, Some(&json!("bogus")), true)
                .is_err());
        }
    }
}
