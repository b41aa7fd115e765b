//! Events of mcpx's own: what mcpx already hears, offered as the built-in server's event types
//! (`mcpx__…`) to clients that react but hold no stream. A server's `resources/updated` for a
//! URI, a change of the lists a caller's view shows, the end of a task of the caller's, and a
//! pinned definition that changed and waits for review are kept, in order, in one log of the
//! last [`KEPT`] occurrences; each is read only by whom it concerns (the caller's view must
//! show the resource, the view must be theirs, the task must be theirs, the view must show
//! the pinned server). A cursor is a position in the log (sealed for the client as any
//! server's is), so a poll resumes exactly after what it last had, and one older than what the
//! log still keeps is answered `truncated`. The log lives in memory: a cursor of an earlier
//! run (before a restart) reads the new log from its start, `truncated`, and every occurrence's
//! id names its run, so that none is taken for one of the same number before.

use super::catalog::Catalog;
use super::profile::{Profiles, ViewId};
use crate::access::identity::Person;
use crate::sync::lock;
use crate::upstream::ListKind;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

/// How many occurrences the log keeps.
const KEPT: usize = 1024;

/// How many resources' updates one person may listen for at once (each a subscription mcpx
/// holds at a server).
const MOST_LEASES_EACH: usize = 32;

/// How many occurrences one poll gives at most, whatever its client asks.
const MOST_PER_POLL: usize = 100;

/// How soon a client polls again, as mcpx asks it to.
pub(super) const NEXT_POLL_MS: u64 = 1000;

/// The built-in server's event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OwnEvent {
    ResourceUpdated,
    ListChanged,
    TaskEnded,
    PinHeld,
}

impl OwnEvent {
    const ALL: [OwnEvent; 4] = [
        OwnEvent::ResourceUpdated,
        OwnEvent::ListChanged,
        OwnEvent::TaskEnded,
        OwnEvent::PinHeld,
    ];

    /// Its own name (exposed as `mcpx__NAME`).
    pub fn name(self) -> &'static str {
        match self {
            OwnEvent::ResourceUpdated => "resource_updated",
            OwnEvent::ListChanged => "list_changed",
            OwnEvent::TaskEnded => "task_ended",
            OwnEvent::PinHeld => "pin_held",
        }
    }

    /// The event type its own name names.
    pub fn parse(name: &str) -> Option<OwnEvent> {
        OwnEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Its definition, as `events/list` shows it.
    fn definition(self) -> Value {
        let no_arguments =
            json!({"type": "object", "properties": {}, "additionalProperties": false});
        let string = json!({"type": "string"});
        let (description, arguments, payload) = match self {
            OwnEvent::ResourceUpdated => (
                "A resource at `uri` (or under it) changed on its server. While something listens for it (a stream, a webhook, a poll in the last five minutes), mcpx holds the server's subscription to it.",
                json!({"type": "object", "properties": {"uri": string}, "required": ["uri"], "additionalProperties": false}),
                json!({"type": "object", "properties": {"uri": string}, "required": ["uri"]}),
            ),
            OwnEvent::ListChanged => (
                "The tools, prompts, resources or event types this view lists changed: list them again.",
                no_arguments,
                json!({"type": "object", "properties": {"lists": {"type": "array", "items": {"enum": ["tools", "prompts", "resources", "events"]}}}, "required": ["lists"]}),
            ),
            OwnEvent::TaskEnded => (
                "A task of the caller's ended: completed, failed or cancelled.",
                no_arguments,
                json!({"type": "object", "properties": {"taskId": string, "tool": string, "status": {"enum": ["completed", "failed", "cancelled"]}}, "required": ["taskId", "status"]}),
            ),
            OwnEvent::PinHeld => (
                "A pinned server's definition changed (or is new) and is withheld until its owner reviews it (`mcpx pins approve`).",
                no_arguments,
                json!({"type": "object", "properties": {"server": string, "item": string, "change": string}, "required": ["server", "item", "change"]}),
            ),
        };
        json!({"name": self.name(), "description": description, "delivery": ["poll", "push"],
            "inputSchema": arguments, "payloadSchema": payload})
    }
}

/// The built-in server's event types, as its listing holds them.
pub(super) fn definitions() -> Vec<Value> {
    OwnEvent::ALL
        .into_iter()
        .map(OwnEvent::definition)
        .collect()
}

/// Whom an occurrence concerns.
#[derive(Debug)]
enum Audience {
    /// Whoever's view can read the resource.
    Readers,
    View(ViewId),
    Person(Person),
    /// Whoever's view shows the server named.
    Server(String),
}

#[derive(Debug)]
struct Occurrence {
    position: u64,
    event: OwnEvent,
    audience: Audience,
    at: SystemTime,
    data: Value,
}

/// Who reads the log: their person, their view, that view's catalog and the profiles.
pub(super) struct Reader<'a> {
    pub person: &'a Person,
    pub view: ViewId,
    pub catalog: &'a Catalog,
    pub profiles: &'a Profiles,
}

impl Reader<'_> {
    /// Whether `occurrence` concerns this reader, asking with `arguments`.
    fn hears(&self, occurrence: &Occurrence, arguments: &Value) -> bool {
        match &occurrence.audience {
            Audience::Readers => {
                let uri = occurrence.data["uri"].as_str().unwrap_or_default();
                let asked = arguments["uri"].as_str().unwrap_or_default();
                covers(asked, uri) && self.catalog.resource_route(uri).is_some()
            }
            Audience::View(view) => *view == self.view,
            Audience::Person(person) => person == self.person,
            Audience::Server(server) => self.profiles.sees_server(self.view, server),
        }
    }
}

/// Whether a subscription to `asked` covers `uri`: the same URI, or one under it.
pub(super) fn covers(asked: &str, uri: &str) -> bool {
    !asked.is_empty()
        && (uri == asked || uri.starts_with(&format!("{}/", asked.trim_end_matches('/'))))
}

/// What one read of the log gives.
#[derive(Debug, PartialEq)]
pub(super) struct Read {
    /// The occurrences, as the extension shows them (named by their own names).
    pub events: Vec<Value>,
    /// Where the next read starts.
    pub cursor: Value,
    /// Whether the log no longer keeps what came after the cursor read from.
    pub truncated: bool,
    /// Whether more is there already.
    pub has_more: bool,
}

/// The log.
#[derive(Debug)]
pub(super) struct OwnEvents {
    /// This run's number: in every cursor and occurrence id.
    run: u64,
    log: Mutex<VecDeque<Occurrence>>,
    /// The position of the last occurrence kept (0: none yet).
    last: Mutex<u64>,
    /// Notified at each new occurrence.
    arrived: event_listener::Event,
    /// Until when someone listens for each resource's updates, by URI (a client's own URIs:
    /// std's SipHash).
    leases: Mutex<std::collections::HashMap<String, Instant>>,
    /// Each person's leases, by URI: bounded, so that one person polling for many URIs cannot
    /// make mcpx hold a subscription at the servers for each.
    leases_of: Mutex<std::collections::HashMap<Person, std::collections::HashMap<String, Instant>>>,
}

impl Default for OwnEvents {
    fn default() -> OwnEvents {
        OwnEvents {
            run: fastrand::u64(..),
            log: Mutex::default(),
            last: Mutex::default(),
            arrived: event_listener::Event::new(),
            leases: Mutex::default(),
            leases_of: Mutex::default(),
        }
    }
}

impl OwnEvents {
    /// The cursor after `position` in this run's log.
    fn cursor(&self, position: u64) -> Value {
        json!(format!("{:x}.{position}", self.run))
    }

    fn add(&self, event: OwnEvent, audience: Audience, data: Value) {
        let mut last = lock(&self.last);
        *last += 1;
        let occurrence = Occurrence {
            position: *last,
            event,
            audience,
            at: SystemTime::now(),
            data,
        };
        let mut log = lock(&self.log);
        if log.len() == KEPT {
            log.pop_front();
        }
        log.push_back(occurrence);
        drop((log, last));
        self.arrived.notify(usize::MAX);
    }

    /// A server said the resource at `uri` (as clients see it) changed.
    pub(super) fn resource_updated(&self, uri: &str) {
        self.add(
            OwnEvent::ResourceUpdated,
            Audience::Readers,
            json!({"uri": uri}),
        );
    }

    /// What `view` lists changed, in `kinds`.
    pub(super) fn lists_changed(&self, view: ViewId, kinds: &[ListKind]) {
        let lists: Vec<&str> = kinds.iter().map(|k| list_name(*k)).collect();
        self.add(
            OwnEvent::ListChanged,
            Audience::View(view),
            json!({"lists": lists}),
        );
    }

    /// `person`'s task `task_id` (as their client knows it), of `tool`, ended `status`.
    pub(super) fn task_ended(&self, person: Person, task_id: &str, tool: &str, status: &str) {
        let data = json!({"taskId": task_id, "tool": tool, "status": status});
        self.add(OwnEvent::TaskEnded, Audience::Person(person), data);
    }

    /// `server`'s pinned `item` changed (`change`) and is withheld for review.
    pub(super) fn pin_held(&self, server: &str, item: &str, change: &str) {
        let data = json!({"server": server, "item": item, "change": change});
        self.add(OwnEvent::PinHeld, Audience::Server(server.to_owned()), data);
    }

    /// `person` listens for `uri`'s updates until `until`, unless they listen for
    /// [`MOST_LEASES_EACH`] other URIs already (the error says so); whether no one did.
    pub(super) fn lease_for(
        &self,
        person: &Person,
        uri: &str,
        until: Instant,
    ) -> Result<bool, String> {
        {
            let mut leases_of = lock(&self.leases_of);
            let now = Instant::now();
            leases_of.retain(|_, theirs| {
                theirs.retain(|_, ends| *ends > now);
                !theirs.is_empty()
            });
            let theirs = leases_of.entry(person.clone()).or_default();
            if !theirs.contains_key(uri) && theirs.len() >= MOST_LEASES_EACH {
                return Err(format!(
                    "you listen for the updates of {MOST_LEASES_EACH} resources already, the most one caller may; this one's are not carried until one of those lapses"
                ));
            }
            let ends = theirs.entry(uri.to_owned()).or_insert(until);
            *ends = (*ends).max(until);
        }
        Ok(self.lease(uri, until))
    }

    /// Someone listens for `uri`'s updates until `until` (or later): whether no one did.
    fn lease(&self, uri: &str, until: Instant) -> bool {
        let mut leases = lock(&self.leases);
        match leases.get_mut(uri) {
            Some(held) => {
                *held = (*held).max(until);
                false
            }
            None => {
                leases.insert(uri.to_owned(), until);
                true
            }
        }
    }

    /// Until when someone listens for `uri`'s updates; none (and forgotten) once that passed.
    pub(super) fn lease_ends(&self, uri: &str) -> Option<Instant> {
        let mut leases = lock(&self.leases);
        let until = leases.get(uri).copied().filter(|u| *u > Instant::now());
        if until.is_none() {
            leases.remove(uri);
        }
        until
    }

    /// `occurrence` as the extension shows it, its cursor where a read resumes after it.
    fn shown(&self, occurrence: &Occurrence) -> Value {
        let position = occurrence.position;
        json!({"eventId": format!("mcpx-{:x}-{position}", self.run),
            "name": occurrence.event.name(),
            "timestamp": humantime::format_rfc3339_millis(occurrence.at).to_string(),
            "data": occurrence.data, "cursor": self.cursor(position)})
    }

    /// Fires at the next occurrence.
    pub(super) fn arrived(&self) -> event_listener::EventListener {
        self.arrived.listen()
    }

    /// What `reader` asking for `event` with `arguments` hears after `cursor` (`null`: from
    /// now), at most `max`; an error for a cursor that is not one of the log's.
    pub(super) fn read(
        &self,
        reader: &Reader<'_>,
        event: OwnEvent,
        arguments: &Value,
        cursor: &Value,
        max: Option<u64>,
    ) -> Result<Read, String> {
        let log = lock(&self.log);
        let last = *lock(&self.last);
        let not_ours = || "the cursor is not one of mcpx's".to_owned();
        let (after, before_restart) = match cursor {
            Value::Null => (last, false),
            Value::String(at) => {
                let (run, position) = at.split_once('.').ok_or_else(not_ours)?;
                let run = u64::from_str_radix(run, 16).map_err(|_| not_ours())?;
                let position: u64 = position.parse().map_err(|_| not_ours())?;
                match run == self.run {
                    true if position <= last => (position, false),
                    true => return Err(not_ours()),
                    // What came after it in the earlier run is gone.
                    false => (0, true),
                }
            }
            _ => return Err(not_ours()),
        };
        let oldest = log.front().map_or(last + 1, |o| o.position);
        let truncated = before_restart || after + 1 < oldest;
        let most = max.map_or(MOST_PER_POLL, |m| (m as usize).clamp(1, MOST_PER_POLL));
        let mut events = Vec::new();
        let mut reached = after;
        let mut has_more = false;
        for occurrence in log.iter().filter(|o| o.position > after) {
            if !(occurrence.event == event && reader.hears(occurrence, arguments)) {
                reached = occurrence.position;
                continue;
            }
            if events.len() == most {
                has_more = true;
                break;
            }
            reached = occurrence.position;
            events.push(occurrence);
        }
        Ok(Read {
            events: events.iter().map(|o| self.shown(o)).collect(),
            cursor: self.cursor(reached),
            truncated,
            has_more,
        })
    }
}

/// A list's name in a `list_changed` occurrence.
fn list_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
        ListKind::Events => "events",
    }
}

#[cfg(test)]
mod v2026_07_28 {
    mod events {
        use super::super::*;

        fn person(subject: &str) -> Person {
            Person::Caller {
                issuer: "https://idp".into(),
                subject: subject.into(),
            }
        }

        #[test]
        fn one_person_listens_for_a_bounded_number_of_resources_and_no_one_else_is_held() {
            let events = OwnEvents::default();
            let (alice, bob) = (person("alice"), person("bob"));
            let until = Instant::now() + std::time::Duration::from_secs(60);
            for n in 0..MOST_LEASES_EACH {
                let first = events.lease_for(&alice, &format!("file:///{n}"), until);
                assert_eq!(first, Ok(true));
            }
            let past = events.lease_for(&alice, "file:///one-more", until);
            assert!(past.unwrap_err().contains("the most one caller may"));
            assert_eq!(
                events.lease_for(&alice, "file:///0", until),
                Ok(false),
                "hers again"
            );
            assert_eq!(events.lease_for(&bob, "file:///one-more", until), Ok(true));
        }

        #[test]
        fn each_reads_only_what_concerns_them_from_where_they_were() {
            let events = OwnEvents::default();
            let (catalog, profiles) = (Catalog::default(), Profiles::default());
            let (alice, bob) = (person("alice"), person("bob"));
            let reader = |person| Reader {
                person,
                view: ViewId::EVERYTHING,
                catalog: &catalog,
                profiles: &profiles,
            };
            let none = json!({});
            let start = events.read(
                &reader(&alice),
                OwnEvent::TaskEnded,
                &none,
                &Value::Null,
                None,
            );
            let start = start.unwrap().cursor;
            events.task_ended(bob.clone(), "t1", "a__slow", "completed");
            events.lists_changed(ViewId::EVERYTHING, &[ListKind::Tools]);
            events.task_ended(alice.clone(), "t2", "a__slow", "failed");
            let read = events
                .read(&reader(&alice), OwnEvent::TaskEnded, &none, &start, None)
                .unwrap();
            assert_eq!(read.events.len(), 1, "{read:?}");
            assert_eq!(read.events[0]["data"]["taskId"], "t2");
            assert_eq!(read.cursor, events.cursor(3));
            assert!(!read.truncated && !read.has_more);
            // Bob's own, read from the same place; and nothing again from where he got to.
            let read = events.read(&reader(&bob), OwnEvent::TaskEnded, &none, &start, None);
            let read = read.unwrap();
            assert_eq!(read.events[0]["data"]["taskId"], "t1");
            let again = events.read(
                &reader(&bob),
                OwnEvent::TaskEnded,
                &none,
                &read.cursor,
                None,
            );
            assert_eq!(again.unwrap().events, Vec::<Value>::new());
            let changed = events.read(&reader(&bob), OwnEvent::ListChanged, &none, &start, None);
            assert_eq!(
                changed.unwrap().events[0]["data"]["lists"],
                json!(["tools"])
            );
            // A cursor the log never gave is refused.
            for forged in [events.cursor(99), json!("o1"), json!(7)] {
                let read = events.read(&reader(&bob), OwnEvent::TaskEnded, &none, &forged, None);
                assert!(read.is_err(), "{forged}");
            }
            // One of an earlier run (before a restart) reads this run's from its start, told
            // that what came after it then is gone.
            let earlier = OwnEvents::default();
            let before = earlier.cursor(1);
            let read = events.read(&reader(&alice), OwnEvent::TaskEnded, &none, &before, None);
            let read = read.unwrap();
            assert!(read.truncated);
            assert_eq!(read.events[0]["data"]["taskId"], "t2");
            assert_ne!(
                earlier.shown(&Occurrence {
                    position: 3,
                    event: OwnEvent::TaskEnded,
                    audience: Audience::Readers,
                    at: SystemTime::now(),
                    data: Value::Null,
                })["eventId"],
                read.events[0]["eventId"]
            );
        }

        #[test]
        fn a_cursor_older_than_the_log_is_told_truncated_and_reads_are_bounded() {
            let events = OwnEvents::default();
            let (catalog, profiles) = (Catalog::default(), Profiles::default());
            let owner = person("owner");
            let reader = Reader {
                person: &owner,
                view: ViewId::EVERYTHING,
                catalog: &catalog,
                profiles: &profiles,
            };
            let none = json!({});
            for n in 0..KEPT + 5 {
                events.task_ended(owner.clone(), &format!("t{n}"), "x", "completed");
            }
            let read = events.read(
                &reader,
                OwnEvent::TaskEnded,
                &none,
                &events.cursor(1),
                Some(3),
            );
            let read = read.unwrap();
            assert!(read.truncated && read.has_more);
            assert_eq!(read.events.len(), 3);
            assert_eq!(read.events[0]["data"]["taskId"], "t5");
            assert_eq!(read.cursor, read.events[2]["cursor"]);
        }

        #[test]
        fn a_resource_subscription_covers_what_is_under_it() {
            assert!(covers("file:///a", "file:///a"));
            assert!(covers("file:///a/", "file:///a/b"));
            assert!(!covers("file:///a", "file:///ab"));
            assert!(!covers("", "file:///a"));
        }
    }
}
