//! MCP Apps through the gateway (ext-apps 2026-01-26): which tools a UI renders, which only an
//! App may call, the `ui://` URIs a server uses, and its tools by their own names.
//!
//! A `ui://` URI stays exactly as its server wrote it, unless two servers use the same one:
//! FastMCP gives every app server `ui://prefab/renderer.html`, and without a rename one server's
//! App would render with the other's HTML. Then each server's copy is renamed
//! ([`super::shared_uris`]) in its tools' `_meta.ui` ([`rename_in_tool`]) as everywhere else.

use super::shared_uris::UriRenames;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use hashbrown::HashMap;
use serde_json::Value;
use std::collections::BTreeSet;

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

/// Adds to `renames` the `ui://` URIs and templates a server `claimed` ([`claimed`]) that are
/// in `shared`; which of them are templates, its `templates` say.
pub fn add_renames(
    renames: &mut UriRenames,
    claimed: &BTreeSet<&str>,
    templates: &[Value],
    shared: &BTreeSet<&str>,
) {
    let is_template = |uri: &str| {
        templates
            .iter()
            .any(|t| t.member("uriTemplate").and_then(Value::as_str) == Some(uri))
    };
    for uri in claimed.intersection(shared) {
        match is_template(uri) {
            true => renames.template(uri),
            false => renames.uri(uri),
        }
    }
}

/// Renames a tool's (or a call result's) `_meta.ui.resourceUri` and flat `_meta["ui/resourceUri"]`.
pub fn rename_in_tool(renames: &UriRenames, tool: &mut Value) {
    if let Some(meta) = tool.member_mut("_meta") {
        renames.rename(
            meta.member_mut("ui")
                .and_then(|ui| ui.member_mut("resourceUri")),
        );
        renames.rename(meta.member_mut(FLAT_RESOURCE_URI));
    }
}

/// The exposed names of each tool by its server's own name, which is how an App calls it (it
/// knows nothing of prefixes).
#[derive(Debug, Clone, Default)]
pub struct BareTools(HashMap<String, Vec<String>>);

impl BareTools {
    /// Records a tool its server calls `own`, exposed as `exposed`.
    pub fn add(&mut self, own: &str, exposed: &str) {
        if own != exposed {
            self.0
                .entry(own.to_owned())
                .or_default()
                .push(exposed.to_owned());
        }
    }

    /// The exposed names of the tools that servers call `own`.
    pub fn exposed(&self, own: &str) -> &[String] {
        self.0.get(own).map_or(&[], Vec::as_slice)
    }

    /// The exposed name a `tools/call` of `name` reaches: `name` itself when `exposes` says it
    /// is one, else the tool one server calls `name` (as an App calls it); several servers' is
    /// an error naming them, none is `None`.
    pub fn called<'a>(
        &'a self,
        name: &'a str,
        exposes: impl Fn(&str) -> bool,
    ) -> Result<Option<&'a str>, ErrorObject> {
        if exposes(name) {
            return Ok(Some(name));
        }
        match self.exposed(name) {
            [] => Ok(None),
            [exposed] => Ok(Some(exposed)),
            several => Err(ErrorObject::new(
                INVALID_PARAMS,
                format!(
                    "Ambiguous tool: {name} is a tool of several servers, exposed as {}; call one of those",
                    several.join(", ")
                ),
            )),
        }
    }

    /// The tools that `keep` admits, by exposed name.
    pub fn restricted(&self, keep: impl Fn(&str) -> bool) -> BareTools {
        let kept = self.0.iter().filter_map(|(own, exposed)| {
            let kept: Vec<String> = exposed.iter().filter(|e| keep(e)).cloned().collect();
            (!kept.is_empty()).then(|| (own.clone(), kept))
        });
        BareTools(kept.collect())
    }
}

#[cfg(test)]
mod every_revision {
    mod apps {
        use crate::gateway::apps::{claimed, is_app_only, rename_in_tool, tool_ui_uris, BareTools};
        use crate::gateway::shared_uris::UriRenames;
        use serde_json::json;

        #[test]
        fn a_server_claims_the_ui_uris_it_lists_and_its_tools_name() {
            let tools = [
                json!({"name": "show", "_meta": {"ui": {"resourceUri": "ui://widget/view.html"}}}),
                json!({"name": "old", "_meta": {"ui/resourceUri": "ui://old/flat.html"}}),
                json!({"name": "web", "_meta": {"ui": {"resourceUri": "https://x/y"}}}),
                json!({"name": "plain"}),
            ];
            let resources = [
                json!({"uri": "ui://listed/only.html", "name": "only"}),
                json!({"uri": "file:///a", "name": "a"}),
            ];
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

        #[test]
        fn a_tools_ui_uris_are_renamed_in_both_keys() {
            let mut renames = UriRenames::new("b");
            renames.uri("ui://widget/view.html");
            let mut tool = json!({"name": "show", "_meta": {
                "ui": {"resourceUri": "ui://widget/view.html"},
                "ui/resourceUri": "ui://widget/view.html"}});
            rename_in_tool(&renames, &mut tool);
            assert_eq!(
                tool["_meta"]["ui"]["resourceUri"],
                "ui://b/widget/view.html"
            );
            assert_eq!(tool["_meta"]["ui/resourceUri"], "ui://b/widget/view.html");
        }

        #[test]
        fn a_bare_name_lists_every_server_that_has_it_in_the_view() {
            let mut bare = BareTools::default();
            bare.add("plain", "a__plain");
            bare.add("plain", "b__plain");
            bare.add("same", "same");
            assert_eq!(bare.exposed("plain"), ["a__plain", "b__plain"]);
            assert!(bare.exposed("same").is_empty());
            let view = bare.restricted(|e| e.starts_with("b__"));
            assert_eq!(view.exposed("plain"), ["b__plain"]);
            let exposes = |name: &str| name.contains("__");
            assert_eq!(view.called("plain", exposes).unwrap(), Some("b__plain"));
            assert_eq!(bare.called("a__plain", exposes).unwrap(), Some("a__plain"));
            assert_eq!(bare.called("nowhere", exposes).unwrap(), None);
            let ambiguous = bare.called("plain", exposes).unwrap_err();
            assert!(
                ambiguous.message.contains("a__plain, b__plain"),
                "{}",
                ambiguous.message
            );
        }
    }
}
