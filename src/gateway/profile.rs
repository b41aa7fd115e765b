//! Profiles: views of the merged catalog that a client chooses by its door (`mcpx serve
//! --profile NAME`, the daemon's `/mcp/NAME`).
//!
//! A profile's view is a [`Catalog`] of its own, restricted from the merged one: a name outside
//! it is unknown to its clients on every method (list, call, get, read, complete, subscribe),
//! exactly as a name no server lists, and its clients hear `list_changed` only when their own
//! view changed. Profiles are read at start; a reload applies `[servers]` only.
//!
//! An `[[auth.rules]]` rule that denies tools narrows each door it opens: a view of its own, the
//! door's with the denied names cut, which no door names; its callers are served from it, so a
//! denied tool is unknown to them by the same road.

use super::catalog::Catalog;
use super::route::Owner;
use super::search;
use crate::config::{Profile, Rule};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Which view of the catalog a client sees: everything, or one profile's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ViewId(usize);

impl ViewId {
    /// The whole merged catalog (`/mcp`, `mcpx serve` without `--profile`).
    pub const EVERYTHING: ViewId = ViewId(0);
}

/// The configured profiles, compiled.
#[derive(Debug, Default)]
pub struct Profiles {
    list: Vec<Compiled>,
    /// The view a rule's callers at a door see, by the door's view and the rule's index, for
    /// the rules that deny tools.
    narrowed: HashMap<(ViewId, usize), ViewId>,
}

#[derive(Debug)]
struct Compiled {
    /// The profile's name; for a narrowed view, its door's (empty for `/mcp`).
    name: String,
    /// Whether a door names it (a narrowed view is reached only through its rule).
    door: bool,
    /// What it is called outside this process ([`Profiles::key`]).
    key: String,
    servers: Option<Vec<String>>,
    include: Option<GlobSet>,
    exclude: GlobSet,
    search: bool,
    max_result_chars: Option<usize>,
}

impl Profiles {
    /// Compiles `[profiles]` and the views `rules` narrow them to (validated by
    /// [`crate::config::Config::parse`]).
    pub fn new(config: &BTreeMap<String, Profile>, rules: &[Rule]) -> Profiles {
        let compile = |name: &str, profile: &Profile, denied: &[String]| Compiled {
            name: name.to_owned(),
            door: denied.is_empty(),
            key: match denied {
                [] => format!("/{name}"),
                denied => format!("/{name}#deny:{}", denied.join(",")),
            },
            servers: profile.servers.clone(),
            include: (!profile.include.is_empty()).then(|| set(&profile.include)),
            exclude: set(&[&profile.exclude[..], denied].concat()),
            search: profile.search,
            max_result_chars: profile.max_result_chars,
        };
        let mut list: Vec<Compiled> = config
            .iter()
            .map(|(name, profile)| compile(name, profile, &[]))
            .collect();
        let mut narrowed = HashMap::new();
        let everything = Profile::default();
        for (index, rule) in rules.iter().enumerate() {
            if rule.deny_tools.is_empty() {
                continue;
            }
            let doors = std::iter::once(("", &everything))
                .chain(config.iter().map(|(n, p)| (n.as_str(), p)));
            for (view, (name, profile)) in doors.enumerate() {
                let opens = rule.profiles.iter().any(|p| p == "*" || p == name);
                if opens {
                    list.push(compile(name, profile, &rule.deny_tools));
                    narrowed.insert((ViewId(view), index), ViewId(list.len()));
                }
            }
        }
        Profiles { list, narrowed }
    }

    /// What the callers `rule` decides for see at the door of `view`.
    pub fn narrowed(&self, view: ViewId, rule: Option<usize>) -> ViewId {
        rule.and_then(|rule| self.narrowed.get(&(view, rule)).copied())
            .unwrap_or(view)
    }

    /// Every view: each door's, then the narrowed ones.
    pub fn all(&self) -> impl Iterator<Item = ViewId> {
        (0..=self.list.len()).map(ViewId)
    }

    /// The view a door names; an unknown name is an error that lists the known ones.
    pub fn find(&self, name: &str) -> Result<ViewId, String> {
        match self.list.iter().position(|p| p.door && p.name == name) {
            Some(i) => Ok(ViewId(i + 1)),
            None => Err(format!(
                "no profile is named {name:?}; the profiles are: {}",
                match self.names().join(", ") {
                    names if names.is_empty() => "(none configured)".to_owned(),
                    names => names,
                }
            )),
        }
    }

    /// The configured profiles' names.
    pub fn names(&self) -> Vec<String> {
        let doors = self.list.iter().filter(|p| p.door);
        doors.map(|p| p.name.clone()).collect()
    }

    /// A view's profile name; `None` for everything.
    pub fn name(&self, view: ViewId) -> Option<&str> {
        view.0
            .checked_sub(1)
            .and_then(|i| self.list.get(i))
            .map(|p| p.name.as_str())
            .filter(|name| !name.is_empty())
    }

    /// What `view` is called outside this process (where a webhook subscription made in it is
    /// kept): its door, and the tools a rule denies in it; the same after a restart with the
    /// same profiles and rules.
    pub fn key(&self, view: ViewId) -> String {
        let compiled = view.0.checked_sub(1).and_then(|i| self.list.get(i));
        compiled.map_or_else(|| "/".to_owned(), |p| p.key.clone())
    }

    /// The view [`Profiles::key`] called `key`, if there still is one.
    pub fn by_key(&self, key: &str) -> Option<ViewId> {
        match key {
            "/" => Some(ViewId::EVERYTHING),
            key => (self.list.iter().position(|p| p.key == key)).map(|i| ViewId(i + 1)),
        }
    }

    /// The budget `view`'s profile sets a tool result's text, if it sets one.
    pub fn max_result_chars(&self, view: ViewId) -> Option<usize> {
        let profile = view.0.checked_sub(1).and_then(|i| self.list.get(i))?;
        profile.max_result_chars
    }

    /// Whether `view` sees the server named `server` at all: what a profile leaves out is, to
    /// its clients, no server (for `mcpx__login` and `mcpx__upstreams` as for the catalog).
    pub fn sees_server(&self, view: ViewId, server: &str) -> bool {
        let Some(profile) = view.0.checked_sub(1).and_then(|i| self.list.get(i)) else {
            return true;
        };
        profile
            .servers
            .as_ref()
            .is_none_or(|servers| servers.iter().any(|s| s == server))
    }

    /// Every view of `all`, which becomes the first; `server_of` names an item's server.
    pub fn views(&self, all: Catalog, server_of: impl Fn(Owner) -> String) -> Views {
        let mut views = Vec::with_capacity(self.list.len() + 1);
        for profile in &self.list {
            let keep = |owner: Owner, name: Option<&str>| {
                let server = server_of(owner);
                let server_seen = profile
                    .servers
                    .as_ref()
                    .is_none_or(|servers| servers.contains(&server));
                let name_seen = name.is_none_or(|name| {
                    profile.include.as_ref().is_none_or(|i| i.is_match(name))
                        && !profile.exclude.is_match(name)
                });
                server_seen && name_seen
            };
            let view = all.restricted(keep);
            views.push(Arc::new(match profile.search {
                true => {
                    let (listed, routes) = search::tools();
                    view.searched(listed, routes)
                }
                false => view,
            }));
        }
        views.insert(0, Arc::new(all));
        Views(views)
    }
}

/// The glob set of `patterns` (each checked by the configuration's loading).
fn set(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// The catalog as each view sees it.
#[derive(Debug, Default)]
pub struct Views(Vec<Arc<Catalog>>);

impl Views {
    /// What `view` sees (everything, for a view that does not exist).
    pub fn get(&self, view: ViewId) -> Arc<Catalog> {
        let found = self.0.get(view.0).or_else(|| self.0.first());
        found.cloned().unwrap_or_default()
    }

    /// Each view with what it sees.
    pub fn iter(&self) -> impl Iterator<Item = (ViewId, &Arc<Catalog>)> {
        self.0.iter().enumerate().map(|(i, c)| (ViewId(i), c))
    }
}
