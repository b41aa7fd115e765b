//! One kind of merged list (tools, prompts, resources, templates, skills or event types): its items in the
//! order clients are shown them, each with the server that answers for it, found by its key.

use super::route::{Owner, Route};
use crate::protocol::Method;
use hashbrown::HashMap;
use serde_json::Value;

/// The kinds of list the catalog merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum List {
    Tools,
    Prompts,
    Resources,
    Templates,
    Skills,
    Events,
}

impl List {
    /// The array its `*/list` result holds.
    pub fn key(self) -> &'static str {
        match self {
            List::Tools => "tools",
            List::Prompts => "prompts",
            List::Resources => "resources",
            List::Templates => "resourceTemplates",
            List::Skills => "skills",
            List::Events => "events",
        }
    }

    pub const ALL: [List; 6] = [
        List::Tools,
        List::Prompts,
        List::Resources,
        List::Templates,
        List::Skills,
        List::Events,
    ];

    /// The list a `*/list` method pages through; `None` for a method that lists nothing.
    pub fn of(method: Method) -> Option<List> {
        match method {
            Method::ToolsList => Some(List::Tools),
            Method::PromptsList => Some(List::Prompts),
            Method::ResourcesList => Some(List::Resources),
            Method::ResourcesTemplatesList => Some(List::Templates),
            Method::SkillsList => Some(List::Skills),
            Method::EventsList => Some(List::Events),
            Method::Initialize
            | Method::Ping
            | Method::ServerDiscover
            | Method::SubscriptionsListen
            | Method::ToolsCall
            | Method::PromptsGet
            | Method::ResourcesRead
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::CompletionComplete
            | Method::LoggingSetLevel
            | Method::SamplingCreateMessage
            | Method::ElicitationCreate
            | Method::RootsList
            | Method::SkillsGet
            | Method::ResourcesDirectoryRead
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate
            | Method::EventsPoll
            | Method::EventsStream
            | Method::EventsSubscribe
            | Method::EventsUnsubscribe => None,
        }
    }
}

/// One item of a merged list.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Item {
    /// What it is found by: a tool's or prompt's exposed name, a resource's URI, a template's
    /// pattern, a skill's name.
    pub key: String,
    /// What clients are shown (renamed, overridden).
    pub shown: Value,
    /// Its server, and its name (or URI, or pattern) there.
    pub route: Route,
}

/// One kind of list, merged.
#[derive(Debug, Clone, Default)]
pub(super) struct Merged {
    items: Vec<Item>,
    /// Each key's item: the first item with it keeps it.
    by_key: HashMap<String, usize>,
}

impl Merged {
    /// Adds `shown` under `key`, answered by `route`.
    pub fn push(&mut self, key: String, shown: Value, route: Route) {
        self.by_key.entry(key.clone()).or_insert(self.items.len());
        self.items.push(Item { key, shown, route });
    }

    /// The item a key names.
    pub fn get(&self, key: &str) -> Option<&Item> {
        self.by_key.get(key).map(|&index| &self.items[index])
    }

    /// The items, in order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// What clients are shown, in order.
    pub fn shown(&self) -> impl Iterator<Item = &Value> {
        self.items.iter().map(|item| &item.shown)
    }

    /// Whether clients are shown the same list.
    pub fn shows_as(&self, other: &Merged) -> bool {
        self.shown().eq(other.shown())
    }

    /// The items `keep` admits.
    pub fn filtered(&self, keep: impl Fn(&Item) -> bool) -> Merged {
        let mut kept = Merged::default();
        for item in self.items.iter().filter(|item| keep(item)) {
            kept.push(item.key.clone(), item.shown.clone(), item.route.clone());
        }
        kept
    }

    /// Who answers for the item a key names.
    pub fn owner(&self, key: &str) -> Option<Owner> {
        self.get(key).map(|item| item.route.owner)
    }
}
