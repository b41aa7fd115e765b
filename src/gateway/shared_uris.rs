//! The URIs two servers both use, where keeping them as written would cross the wires: MCP
//! Apps' `ui://` resources ([`super::apps`]) and Skills' `skill://` directories
//! ([`super::skills`]). Any other URI keeps the first server that listed it.
//!
//! Each server's copy of a shared URI is shown as `SCHEME://SERVER/REST` ([`renamed`]): the
//! scheme stays (a host refuses an App from any other), and so does the path's end (a skill's
//! last segment is its name, and its files keep their place beside `SKILL.md`). The rename holds
//! everywhere mcpx shows the URI, and a request naming the renamed URI reaches that server under
//! its own.

use super::route::Owner;
use super::uri_template::template_matches;
use crate::json::Member;
use hashbrown::HashMap;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The URIs each server's copy of is renamed: what more than one of `claims` (server
/// `servers[i]`'s URIs) holds, and what reads as another server's rename ([`impostors`]).
pub fn shared<'a>(claims: &[BTreeSet<&'a str>], servers: &[&str]) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut shared = impostors(claims, servers);
    for uri in claims.iter().flatten() {
        if !seen.insert(*uri) {
            shared.insert(*uri);
        }
    }
    shared
}

/// What each of `claims` (server `servers[i]`'s URIs) holds that reads as another server's
/// rename (`SCHEME://OTHER/…`, OTHER the name of another of `servers`): renamed as a shared URI
/// is, so that no server's URI can pass for another's renamed one, whatever the listing order.
fn impostors<'a>(claims: &[BTreeSet<&'a str>], servers: &[&str]) -> BTreeSet<&'a str> {
    let named = |uri: &str| {
        let (_, rest) = split(uri)?;
        rest.split_once('/').map(|(server, _)| server.to_owned())
    };
    let mut found = BTreeSet::new();
    for (claimant, uris) in servers.iter().zip(claims) {
        for uri in uris {
            let other = named(uri).filter(|named| named != claimant);
            if other.is_some_and(|other| servers.contains(&other.as_str())) {
                found.insert(*uri);
            }
        }
    }
    found
}

/// The scheme of `uri`, with its `://`, and the rest.
fn split(uri: &str) -> Option<(&str, &str)> {
    let at = uri.find("://")? + 3;
    Some((&uri[..at], &uri[at..]))
}

/// What server `server`'s copy of a URI that another server also uses is shown as.
pub fn renamed(server: &str, uri: &str) -> String {
    match split(uri) {
        Some((scheme, rest)) => format!("{scheme}{server}/{rest}"),
        None => format!("{server}/{uri}"),
    }
}

/// One server's renamed URIs: exact ones, URI templates (and what they match), and directories
/// (and what is under them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UriRenames {
    server: String,
    exact: HashMap<String, String>,
    templates: Vec<String>,
    dirs: Vec<String>,
}

impl UriRenames {
    /// Renames nothing yet, for `server`.
    pub fn new(server: &str) -> UriRenames {
        UriRenames {
            server: server.to_owned(),
            ..UriRenames::default()
        }
    }

    /// Renames `uri`.
    pub fn uri(&mut self, uri: &str) {
        self.exact
            .insert(uri.to_owned(), renamed(&self.server, uri));
    }

    /// Renames `template` and every URI it matches.
    pub fn template(&mut self, template: &str) {
        self.uri(template);
        self.templates.push(template.to_owned());
    }

    /// Renames every URI under `dir` (which ends with `/`).
    pub fn dir(&mut self, dir: &str) {
        self.dirs.push(dir.to_owned());
    }

    /// Whether it renames nothing.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.dirs.is_empty()
    }

    /// Whether a URI of this server is one it renames.
    fn renames(&self, uri: &str) -> bool {
        self.exact.contains_key(uri)
            || self.templates.iter().any(|t| template_matches(t, uri))
            || self.dirs.iter().any(|dir| uri.starts_with(dir.as_str()))
    }

    /// What a URI of this server is shown as, if it is renamed.
    fn shown(&self, uri: &str) -> Option<String> {
        match self.exact.get(uri) {
            Some(shown) => Some(shown.clone()),
            None => self.renames(uri).then(|| renamed(&self.server, uri)),
        }
    }

    /// This server's own URI for one shown renamed: `None` if it is not.
    pub fn own(&self, shown: &str) -> Option<String> {
        let (scheme, rest) = split(shown)?;
        let rest = rest.strip_prefix(self.server.as_str())?.strip_prefix('/')?;
        let own = format!("{scheme}{rest}");
        self.renames(&own).then_some(own)
    }

    /// Renames the string at `value`, if it is one of these URIs.
    pub fn rename(&self, value: Option<&mut Value>) {
        if let Some(value) = value {
            if let Some(shown) = value.as_str().and_then(|uri| self.shown(uri)) {
                *value = Value::String(shown);
            }
        }
    }

    /// An item's `uri` (a resource, a read's content, a link), and, for a template, its
    /// `uriTemplate`.
    pub fn in_item(&self, item: &mut Value) {
        self.rename(item.member_mut("uri"));
        self.rename(item.member_mut("uriTemplate"));
    }

    /// Each item of the array at `key` ([`UriRenames::in_item`]), and what it embeds: a content
    /// block's `resource`, a skill's `resources`.
    pub fn in_items(&self, holder: &mut Value, key: &str) {
        if let Some(Value::Array(items)) = holder.member_mut(key) {
            for item in items {
                self.in_item(item);
                if let Some(resource) = item.member_mut("resource") {
                    self.in_item(resource);
                }
                self.in_items(item, "resources");
            }
        }
    }
}

/// Each server's renames, for the merged catalog.
#[derive(Debug, Clone, Default)]
pub struct SharedUris(HashMap<Owner, Arc<UriRenames>>);

impl SharedUris {
    /// Records `owner`'s renames.
    pub fn add(&mut self, owner: Owner, renames: UriRenames) {
        if !renames.is_empty() {
            self.0.insert(owner, Arc::new(renames));
        }
    }

    /// `owner`'s renames, if it has any.
    pub fn of(&self, owner: Owner) -> Option<&UriRenames> {
        self.0.get(&owner).map(Arc::as_ref)
    }

    /// The own URI of `owner` for one mcpx shows renamed; `None` for a URI it did not rename.
    pub fn own_uri(&self, owner: Owner, shown: &str) -> Option<String> {
        self.of(owner)?.own(shown)
    }

    /// The servers' renames that `keep` admits.
    pub fn restricted(&self, keep: impl Fn(Owner) -> bool) -> SharedUris {
        let kept = self.0.iter().filter(|(owner, _)| keep(**owner));
        SharedUris(kept.map(|(o, r)| (*o, Arc::clone(r))).collect())
    }
}

#[cfg(test)]
mod every_revision {
    mod catalog {
        use crate::gateway::route::Owner;
        use crate::gateway::shared_uris::{renamed, shared, SharedUris, UriRenames};
        use serde_json::json;
        use std::collections::BTreeSet;

        #[test]
        fn only_what_two_servers_claim_is_shared() {
            let a = BTreeSet::from(["ui://x", "skill://r/"]);
            let b = BTreeSet::from(["ui://x", "ui://y"]);
            assert_eq!(shared(&[a, b], &["a", "b"]), BTreeSet::from(["ui://x"]));
        }

        /// A server's URI that reads as another's rename is renamed itself, whichever comes
        /// first: its own name as the authority, or a name no server has, is left alone.
        #[test]
        fn a_uri_shaped_as_another_servers_rename_is_renamed() {
            let alpha =
                BTreeSet::from(["ui://zeta/w/x.html", "ui://alpha/own.html", "ui://nobody/y"]);
            let zeta = BTreeSet::from(["ui://w/x.html", "skill://alpha/r/"]);
            let found = shared(&[alpha.clone(), zeta.clone()], &["alpha", "zeta"]);
            assert_eq!(
                found,
                BTreeSet::from(["ui://zeta/w/x.html", "skill://alpha/r/"])
            );
            assert_eq!(found, shared(&[zeta, alpha], &["zeta", "alpha"]));
        }

        /// One rule for every scheme: the scheme kept, then the server, then the URI's own rest.
        #[test]
        fn a_renamed_uri_keeps_its_scheme_and_its_ending() {
            assert_eq!(
                renamed("b", "ui://widget/view.html"),
                "ui://b/widget/view.html"
            );
            assert_eq!(
                renamed("b", "skill://review/SKILL.md"),
                "skill://b/review/SKILL.md"
            );
        }

        #[test]
        fn exact_templated_and_directory_renames_go_both_ways() {
            let mut renames = UriRenames::new("b");
            renames.uri("ui://widget/view.html");
            renames.template("ui://chart/{id}.html");
            renames.dir("skill://review/");
            let mut owners = SharedUris::default();
            let owner = Owner::Upstream(2);
            owners.add(owner, renames);
            let renames = owners.of(owner).unwrap();
            let mut listed = json!({"skills": [{"uri": "skill://review/SKILL.md",
                "resources": [{"uri": "skill://review/checklist.md"}, {"uri": "skill://other/x"}]}]});
            renames.in_items(&mut listed, "skills");
            assert_eq!(listed["skills"][0]["uri"], "skill://b/review/SKILL.md");
            let files = &listed["skills"][0]["resources"];
            assert_eq!(files[0]["uri"], "skill://b/review/checklist.md");
            assert_eq!(files[1]["uri"], "skill://other/x");
            for (shown, own) in [
                ("ui://b/widget/view.html", "ui://widget/view.html"),
                ("ui://b/chart/7.html", "ui://chart/7.html"),
                (
                    "skill://b/review/checklist.md",
                    "skill://review/checklist.md",
                ),
            ] {
                assert_eq!(owners.own_uri(owner, shown).as_deref(), Some(own));
            }
            assert_eq!(owners.own_uri(owner, "skill://b/other/x"), None);
            assert_eq!(owners.own_uri(owner, "ui://widget/view.html"), None);
            assert!(owners.restricted(|o| o != owner).of(owner).is_none());
        }
    }
}
