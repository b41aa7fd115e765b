//! MCP Apps through the gateway (ext-apps 2026-01-26): which tools a UI renders, which only an
//! App may call, and the `ui://` URIs that two servers both use.
//!
//! A `ui://` URI stays exactly as its server wrote it (hosts refuse any other scheme), unless two
//! servers use the same one: FastMCP gives every app server `ui://prefab/renderer.html`, and
//! without a rename one server's App would render with the other's HTML. Then each of those
//! servers' copy becomes `ui://SERVER/REST` ([`renamed`]), everywhere mcpx shows it (its tools'
//! `_meta.ui`, `resources/list`, a read's contents, a call's content and `_meta.ui`), and a read
//! of the renamed URI goes to that server under its own.

use super::route::Owner;
use super::uri_template::template_matches;
use crate::json::Member;
use hashbrown::HashMap;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The scheme of an App's resources.
const UI_SCHEME: &str = "ui://";

/// The deprecated flat key some SDKs still write beside `_meta.ui.resourceUri`.
const FLAT_RESOURCE_URI: &str = "ui/resourceUri";

/// The `ui://` URIs a tool names: `_meta.ui.resourceUri` and the flat `_meta["ui/resourceUri"]`.
pub fn tool_ui_uris(tool: &Value) -> impl Iterator<Item = &str> {
    let meta = tool.member("_meta");
    let nested = meta.and_then(|m| m.member("ui")?.member("resourceUri"));
    let flat = meta.and_then(|m| m.member(FLAT_RESOURCE_URI));
    [nested, flat]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|uri| uri.starts_with(UI_SCHEME))
}

/// Whether only an App may call the tool: its `_meta.ui.visibility` leaves out the model. A
/// client that cannot render Apps is not shown it.
pub fn is_app_only(tool: &Value) -> bool {
    let visibility = tool
        .member("_meta")
        .and_then(|m| m.member("ui")?.member("visibility"))
        .and_then(Value::as_array);
    visibility.is_some_and(|v| !v.iter().any(|who| who == "model"))
}

/// What a server lists: its tools, resources and resource templates.
pub type Listed<'a> = (&'a [Value], &'a [Value], &'a [Value]);

/// The `ui://` URIs and URI templates a server uses: those it lists as resources and templates,
/// and those its tools name (a UI resource may be left out of `resources/list`).
pub fn claimed<'a>((tools, resources, templates): Listed<'a>) -> BTreeSet<&'a str> {
    let ui = |key: &'static str| {
        move |item: &'a Value| {
            item.member(key)?
                .as_str()
                .filter(|uri| uri.starts_with(UI_SCHEME))
        }
    };
    let listed = resources.iter().filter_map(ui("uri"));
    let templated = templates.iter().filter_map(ui("uriTemplate"));
    let named = tools.iter().flat_map(tool_ui_uris);
    listed.chain(templated).chain(named).collect()
}

/// The `ui://` URIs that more than one server claims (each server's [`claimed`] set).
pub fn shared<'a>(claims: &[BTreeSet<&'a str>]) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut shared = BTreeSet::new();
    for uri in claims.iter().flatten() {
        if !seen.insert(*uri) {
            shared.insert(*uri);
        }
    }
    shared
}

/// What server `server`'s copy of a `ui://` URI that another server also uses is shown as.
pub fn renamed(server: &str, uri: &str) -> String {
    let rest = uri.strip_prefix(UI_SCHEME).unwrap_or(uri);
    format!("{UI_SCHEME}{server}/{rest}")
}

/// One server's renamed `ui://` URIs and URI templates, its own to the one mcpx shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UiRenames {
    /// What every renamed URI of this server starts with: `ui://SERVER/`.
    prefix: String,
    renames: HashMap<String, String>,
    /// Its own templates that are renamed: a URI one of them matches is renamed too.
    templates: Vec<String>,
}

impl UiRenames {
    /// The renames of `server`, which lists `listed`, of those of its URIs and templates that
    /// are in `shared`.
    pub fn of(server: &str, listed: Listed<'_>, shared: &BTreeSet<&str>) -> UiRenames {
        let templates = listed
            .2
            .iter()
            .filter_map(|t| t.member("uriTemplate")?.as_str());
        let templates = templates.filter(|t| shared.contains(t));
        UiRenames {
            prefix: renamed(server, ""),
            renames: claimed(listed)
                .into_iter()
                .filter(|uri| shared.contains(uri))
                .map(|uri| (uri.to_owned(), renamed(server, uri)))
                .collect(),
            templates: templates.map(str::to_owned).collect(),
        }
    }

    /// Whether it renames nothing.
    pub fn is_empty(&self) -> bool {
        self.renames.is_empty()
    }

    /// What a URI of this server is shown as: renamed if it, or a renamed template matching
    /// it, is shared with another server.
    fn shown(&self, uri: &str) -> Option<String> {
        if let Some(shown) = self.renames.get(uri) {
            return Some(shown.clone());
        }
        let templated = self.templates.iter().any(|t| template_matches(t, uri));
        templated.then(|| format!("{}{}", self.prefix, &uri[UI_SCHEME.len()..]))
    }

    /// This server's own URI for one shown as renamed: `None` if it is not.
    fn own(&self, shown: &str) -> Option<String> {
        let rest = shown.strip_prefix(&self.prefix)?;
        let own = format!("{UI_SCHEME}{rest}");
        let renamed = self.renames.contains_key(&own)
            || self.templates.iter().any(|t| template_matches(t, &own));
        renamed.then_some(own)
    }

    /// Renames the string at `value`, if it is one of these URIs.
    fn rename(&self, value: Option<&mut Value>) {
        if let Some(value) = value {
            if let Some(shown) = value.as_str().and_then(|uri| self.shown(uri)) {
                *value = Value::String(shown);
            }
        }
    }

    /// A template as listed: its `uriTemplate`.
    pub fn in_template(&self, template: &mut Value) {
        self.rename(template.member_mut("uriTemplate"));
    }

    /// A tool as listed: its `_meta.ui.resourceUri` and flat `_meta["ui/resourceUri"]`.
    pub fn in_tool(&self, tool: &mut Value) {
        if let Some(meta) = tool.member_mut("_meta") {
            self.rename(
                meta.member_mut("ui")
                    .and_then(|ui| ui.member_mut("resourceUri")),
            );
            self.rename(meta.member_mut(FLAT_RESOURCE_URI));
        }
    }

    /// A resource as listed, or a read's content item: its `uri`.
    pub fn in_resource(&self, resource: &mut Value) {
        self.rename(resource.member_mut("uri"));
    }

    /// A result of this server: a read's `contents`, a call's `content` blocks (a link's `uri`,
    /// an embedded resource's) and its `_meta.ui`.
    pub fn in_result(&self, result: &mut Value) {
        for key in ["contents", "content"] {
            if let Some(Value::Array(items)) = result.member_mut(key) {
                for item in items {
                    self.in_resource(item);
                    if let Some(resource) = item.member_mut("resource") {
                        self.in_resource(resource);
                    }
                }
            }
        }
        self.in_tool(result);
    }
}

/// What the merged catalog keeps for Apps: each server's renamed `ui://` URIs, and its tools by
/// the server's own names, which is how an App calls them (it knows nothing of prefixes).
#[derive(Debug, Clone, Default)]
pub struct AppRoutes {
    renames: HashMap<Owner, Arc<UiRenames>>,
    /// A server's own tool name to the names it is exposed under.
    bare_tools: HashMap<String, Vec<String>>,
}

impl AppRoutes {
    /// Records `owner`'s renames.
    pub fn add_renames(&mut self, owner: Owner, renames: UiRenames) {
        if !renames.is_empty() {
            self.renames.insert(owner, Arc::new(renames));
        }
    }

    /// Records a tool its server calls `own`, exposed as `exposed`.
    pub fn add_tool(&mut self, own: &str, exposed: &str) {
        if own != exposed {
            self.bare_tools
                .entry(own.to_owned())
                .or_default()
                .push(exposed.to_owned());
        }
    }

    /// `owner`'s renames, if it has any.
    pub fn renames(&self, owner: Owner) -> Option<&UiRenames> {
        self.renames.get(&owner).map(Arc::as_ref)
    }

    /// The own URI of `owner` for one mcpx shows renamed; `None` for a URI it did not rename.
    pub fn own_uri(&self, owner: Owner, shown: &str) -> Option<String> {
        self.renames(owner)?.own(shown)
    }

    /// The exposed names of the tools that servers call `own`.
    pub fn bare_tool(&self, own: &str) -> &[String] {
        self.bare_tools.get(own).map_or(&[], Vec::as_slice)
    }

    /// The part that a view keeps: the servers `keep_owner` admits, the tools `keep_tool` does.
    pub fn restricted(
        &self,
        keep_owner: impl Fn(Owner) -> bool,
        keep_tool: impl Fn(&str) -> bool,
    ) -> AppRoutes {
        let bare_tools = self.bare_tools.iter().filter_map(|(own, exposed)| {
            let kept: Vec<String> = exposed.iter().filter(|e| keep_tool(e)).cloned().collect();
            (!kept.is_empty()).then(|| (own.clone(), kept))
        });
        AppRoutes {
            renames: self
                .renames
                .iter()
                .filter(|(owner, _)| keep_owner(**owner))
                .map(|(owner, renames)| (*owner, Arc::clone(renames)))
                .collect(),
            bare_tools: bare_tools.collect(),
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod apps {
        use crate::gateway::apps::{
            claimed, is_app_only, renamed, tool_ui_uris, AppRoutes, UiRenames,
        };
        use crate::gateway::route::Owner;
        use serde_json::{json, Value};
        use std::collections::BTreeSet;

        /// A server's tools and resources.
        fn listing() -> (Vec<Value>, Vec<Value>) {
            (
                vec![
                    json!({"name": "show", "_meta": {"ui": {"resourceUri": "ui://widget/view.html"}}}),
                    json!({"name": "old", "_meta": {"ui/resourceUri": "ui://old/flat.html"}}),
                    json!({"name": "web", "_meta": {"ui": {"resourceUri": "https://x/y"}}}),
                    json!({"name": "plain"}),
                ],
                vec![
                    json!({"uri": "ui://listed/only.html", "name": "only"}),
                    json!({"uri": "file:///a", "name": "a"}),
                ],
            )
        }

        #[test]
        fn a_server_claims_the_ui_uris_it_lists_and_its_tools_name() {
            let (tools, resources) = listing();
            let templates = [json!({"uriTemplate": "ui://chart/{id}.html", "name": "chart"})];
            let uris: Vec<&str> = claimed((&tools, &resources, &templates))
                .into_iter()
                .collect();
            assert_eq!(
                uris,
                [
                    "ui://chart/{id}.html",
                    "ui://listed/only.html",
                    "ui://old/flat.html",
                    "ui://widget/view.html"
                ]
            );
            let rendered = |tool: usize| tool_ui_uris(&tools[tool]).count();
            assert_eq!([0, 1, 2, 3].map(rendered), [1, 1, 0, 0]);
        }

        #[test]
        fn only_a_visibility_without_the_model_is_app_only() {
            let tool =
                |visibility| json!({"name": "t", "_meta": {"ui": {"visibility": visibility}}});
            assert!(is_app_only(&tool(json!(["app"]))));
            assert!(!is_app_only(&tool(json!(["model", "app"]))));
            assert!(!is_app_only(&tool(json!(["model"]))));
            assert!(!is_app_only(&json!({"name": "t"})));
        }

        /// One rule: `ui://` kept, then the server's name, then the URI's own path, so the
        /// resource's last segment is unchanged.
        #[test]
        fn only_shared_uris_are_renamed_everywhere_they_appear() {
            assert_eq!(
                renamed("b", "ui://widget/view.html"),
                "ui://b/widget/view.html"
            );
            let (tools, resources) = listing();
            let shared = BTreeSet::from(["ui://widget/view.html", "ui://old/flat.html"]);
            let renames = UiRenames::of("b", (&tools, &resources, &[]), &shared);
            let mut tool = tools[0].clone();
            renames.in_tool(&mut tool);
            assert_eq!(
                tool["_meta"]["ui"]["resourceUri"],
                "ui://b/widget/view.html"
            );
            let mut old = tools[1].clone();
            renames.in_tool(&mut old);
            assert_eq!(old["_meta"]["ui/resourceUri"], "ui://b/old/flat.html");
            let mut only = resources[0].clone();
            renames.in_resource(&mut only);
            assert_eq!(only["uri"], "ui://listed/only.html");
            let mut read = json!({"contents": [{"uri": "ui://widget/view.html", "text": "<p>"}]});
            renames.in_result(&mut read);
            assert_eq!(read["contents"][0]["uri"], "ui://b/widget/view.html");
            let mut call = json!({
                "content": [
                    {"type": "resource_link", "uri": "ui://widget/view.html", "name": "v"},
                    {"type": "resource", "resource": {"uri": "ui://old/flat.html", "text": ""}},
                    {"type": "text", "text": "ui://widget/view.html"},
                ],
                "_meta": {"ui": {"resourceUri": "ui://widget/view.html"}},
            });
            renames.in_result(&mut call);
            assert_eq!(call["content"][0]["uri"], "ui://b/widget/view.html");
            assert_eq!(
                call["content"][1]["resource"]["uri"],
                "ui://b/old/flat.html"
            );
            // Text is the server's own words.
            assert_eq!(call["content"][2]["text"], "ui://widget/view.html");
            assert_eq!(
                call["_meta"]["ui"]["resourceUri"],
                "ui://b/widget/view.html"
            );
        }

        /// A shared template is renamed as a URI is, and so is every URI it matches: listed,
        /// read back, and routed to the server's own.
        #[test]
        fn a_shared_template_renames_what_it_matches() {
            let templates = [json!({"uriTemplate": "ui://chart/{id}.html", "name": "chart"})];
            let shared = BTreeSet::from(["ui://chart/{id}.html", "ui://widget/view.html"]);
            let (tools, resources) = listing();
            let renames = UiRenames::of("b", (&tools, &resources, &templates), &shared);
            let mut template = templates[0].clone();
            renames.in_template(&mut template);
            assert_eq!(template["uriTemplate"], "ui://b/chart/{id}.html");
            let mut read = json!({"contents": [{"uri": "ui://chart/7.html", "text": "<p>"}]});
            renames.in_result(&mut read);
            assert_eq!(read["contents"][0]["uri"], "ui://b/chart/7.html");
            let mut routes = AppRoutes::default();
            let owner = Owner::Upstream(3);
            routes.add_renames(owner, renames);
            let own = |shown| routes.own_uri(owner, shown);
            assert_eq!(
                own("ui://b/chart/7.html").as_deref(),
                Some("ui://chart/7.html")
            );
            assert_eq!(
                own("ui://b/widget/view.html").as_deref(),
                Some("ui://widget/view.html")
            );
            // Not renamed: its own URIs, and whatever another server's rename looks like.
            assert_eq!(own("ui://listed/only.html"), None);
            assert_eq!(own("ui://b/listed/only.html"), None);
            assert_eq!(
                routes.own_uri(Owner::Upstream(4), "ui://b/chart/7.html"),
                None
            );
        }
    }
}
