//! The ledger: what the admin socket, `mcpx status` and the console read of the live daemon:
//! client sessions, the requests in flight on them (with the handle that cancels each), and open
//! event streams. (Tasks, parked calls and subscriptions are kept by the gateway's parts that
//! run them.)
//!
//! Every request is entered with [`Ledger::begin`] and leaves through its [`InFlightGuard`],
//! which records exactly one [`Outcome`]; a guard dropped without one counts as cancelled, so no
//! request can vanish uncounted. Every change wakes [`Ledger::changed`] listeners, which is how
//! the admin socket's `watch` stays live without polling.

use crate::access::builtin::consent::Consents;
use crate::access::Identity;
use crate::cancel::Cancel;
use crate::jsonrpc::Id;
use crate::protocol::Revision;
use crate::sync::lock;
use crate::view::{RequestView, SessionView, StreamView, Totals};
use event_listener::{Event, EventListener};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The transport of the one session every 2026-07-28 HTTP caller shares.
pub const SHARED: &str = "http";

/// Identifies a session (a client connection) in the ledger.
pub type SessionKey = u64;

/// How a request in flight ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result or an error was sent back.
    Answered,
    /// The client, the transport or the admin cancelled it; nothing was sent.
    Cancelled,
    /// It could not be answered (the transport was gone).
    Failed,
}

#[derive(Debug)]
struct Session {
    transport: &'static str,
    id: Option<String>,
    editor_pid: Option<u32>,
    profile: Option<String>,
    client: Option<Value>,
    revision: Option<Revision>,
    /// Who opened it (stdio's local owner, an attached editor, a legacy session's caller).
    caller: Option<Arc<Identity>>,
    opened: Instant,
    last_seen: Instant,
    ended: Cancel,
    /// The session every 2026-07-28 HTTP caller shares: who called through it.
    heard: crate::heard_clients::HeardClients,
}

#[derive(Debug)]
struct InFlight {
    session: SessionKey,
    id: Id,
    method: String,
    target: Option<String>,
    started: Instant,
    cancel: Cancel,
    progress: Arc<AtomicU64>,
    caller: Arc<Identity>,
}

#[derive(Debug)]
struct Stream {
    session: SessionKey,
    kind: &'static str,
    subscription: Option<Value>,
    filter: Vec<String>,
    opened: Instant,
    events: Arc<AtomicU64>,
}

#[derive(Debug, Default)]
struct State {
    next_key: u64,
    sessions: BTreeMap<SessionKey, Session>,
    in_flight: BTreeMap<u64, InFlight>,
    streams: BTreeMap<u64, Stream>,
    totals: Totals,
}

impl State {
    fn next_key(&mut self) -> u64 {
        self.next_key += 1;
        self.next_key
    }
}

/// Shared live state; clone the `Arc` to share it.
#[derive(Debug)]
pub struct Ledger {
    state: Mutex<State>,
    changed: Arc<Event>,
    /// Clients waiting on the built-in authorization server's consent page.
    consents: Arc<Consents>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Arc<Ledger> {
        let changed = Arc::new(Event::new());
        Arc::new(Ledger {
            state: Mutex::default(),
            consents: Arc::new(Consents::new(Arc::clone(&changed))),
            changed,
        })
    }

    /// The consents waiting for the owner.
    pub fn consents(&self) -> Arc<Consents> {
        Arc::clone(&self.consents)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Runs `update` on the state and wakes the watchers.
    fn update<T>(&self, update: impl FnOnce(&mut State) -> T) -> T {
        let result = update(&mut self.lock());
        self.changed.notify(usize::MAX);
        result
    }

    /// Wakes the watchers for a change kept elsewhere (an upstream's state).
    pub fn notify_changed(&self) {
        self.changed.notify(usize::MAX);
    }

    /// Completes at the next change (create it before reading, so no change is missed).
    pub fn changed(&self) -> EventListener {
        self.changed.listen()
    }

    /// Opens a session for a transport, seeing the catalog through `profile` if it names one.
    pub fn open_session(&self, transport: &'static str, profile: Option<&str>) -> SessionKey {
        self.update(|state| {
            let key = state.next_key();
            let now = Instant::now();
            let session = Session {
                transport,
                id: None,
                editor_pid: None,
                caller: None,
                profile: profile.map(str::to_owned),
                client: None,
                revision: None,
                opened: now,
                last_seen: now,
                ended: Cancel::new(),
                heard: Default::default(),
            };
            state.sessions.insert(key, session);
            key
        })
    }

    /// Records what a session's `initialize` settled.
    pub fn set_initialized(&self, session: SessionKey, revision: Revision, client: Option<Value>) {
        self.update(|state| {
            if let Some(s) = state.sessions.get_mut(&session) {
                s.revision = Some(revision);
                s.client = client;
            }
        });
    }

    /// Names a legacy HTTP session by its `Mcp-Session-Id`; returns the signal that ends it.
    pub fn name_session(&self, session: SessionKey, id: &str) -> Cancel {
        self.update(|state| match state.sessions.get_mut(&session) {
            Some(s) => {
                s.id = Some(id.to_owned());
                s.ended.clone()
            }
            None => Cancel::new(),
        })
    }

    /// Notes who a session is for: the caller that opened it.
    pub fn note_caller(&self, session: SessionKey, caller: &Arc<Identity>) {
        self.update(|state| {
            if let Some(s) = state.sessions.get_mut(&session) {
                s.caller = Some(Arc::clone(caller));
            }
        })
    }

    /// Notes which editor's `mcpx serve` an attached session serves.
    pub fn note_editor(&self, session: SessionKey, pid: u32) {
        self.update(|state| {
            if let Some(s) = state.sessions.get_mut(&session) {
                s.editor_pid = Some(pid);
            }
        })
    }

    /// Ends the session named `id`: its owner notices the signal, and its requests in flight
    /// are cancelled now. False if there is no such session.
    pub fn end_session(&self, id: &str) -> bool {
        let state = self.lock();
        let Some((key, session)) = state
            .sessions
            .iter()
            .find(|(_, s)| s.id.as_deref() == Some(id))
        else {
            return false;
        };
        session.ended.cancel();
        for request in state.in_flight.values().filter(|r| r.session == *key) {
            request.cancel.cancel();
        }
        true
    }

    /// Marks a session used now.
    pub fn touch(&self, session: SessionKey) {
        if let Some(s) = self.lock().sessions.get_mut(&session) {
            s.last_seen = Instant::now();
        }
    }

    /// Closes a session, cancelling whatever it still has in flight.
    /// Ends a session (its requests in flight are cancelled); its transport and how long it
    /// lasted, if it was open.
    pub fn close_session(&self, session: SessionKey) -> Option<(&'static str, Duration)> {
        self.update(|state| {
            let closed = state.sessions.remove(&session);
            for request in state.in_flight.values().filter(|r| r.session == session) {
                request.cancel.cancel();
            }
            closed.map(|s| (s.transport, s.opened.elapsed()))
        })
    }

    /// Who a session is, for an audit line: its transport, its legacy session id, the
    /// `clientInfo` it sent and its profile.
    pub fn who(&self, session: SessionKey) -> Value {
        let state = self.lock();
        let Some(s) = state.sessions.get(&session) else {
            return json!({ "session": session });
        };
        let mut who = json!({ "door": s.transport, "session": session });
        if let Some(id) = &s.id {
            who["sessionId"] = json!(crate::view::short_session_id(id));
        }
        if let Some(client) = &s.client {
            who["client"] = client.clone();
        }
        if let Some(profile) = &s.profile {
            who["profile"] = json!(profile);
        }
        who
    }

    /// How many sessions, legacy GET streams, listen streams and requests in flight there are.
    pub fn counts(&self) -> crate::metrics::Live {
        let state = self.lock();
        let streams = |kind: &str| state.streams.values().filter(|s| s.kind == kind).count() as i64;
        crate::metrics::Live {
            sessions: state.sessions.len() as i64,
            get_streams: streams("get"),
            listen_streams: streams("listen"),
            in_flight: state.in_flight.len() as i64,
            tasks: Vec::new(),
            sandboxes: Vec::new(),
            pins: Vec::new(),
            instances: Vec::new(),
        }
    }

    /// Enters a request; the guard must be finished with its outcome.
    pub fn begin(
        self: &Arc<Self>,
        session: SessionKey,
        (id, method, target): (Id, &str, Option<String>),
        cancel: Cancel,
        caller: Arc<Identity>,
        named: Option<&Value>,
    ) -> InFlightGuard {
        let progress = Arc::new(AtomicU64::new(0));
        let key = self.update(|state| {
            let key = state.next_key();
            if let Some(s) = state.sessions.get_mut(&session) {
                s.last_seen = Instant::now();
                if let Some(info) = named {
                    s.heard.note(info, &caller);
                }
            }
            let request = InFlight {
                session,
                id,
                method: method.to_owned(),
                target,
                started: Instant::now(),
                cancel,
                progress: Arc::clone(&progress),
                caller,
            };
            state.in_flight.insert(key, request);
            key
        });
        InFlightGuard {
            ledger: Arc::clone(self),
            key,
            progress,
            finished: false,
        }
    }

    /// Cancels the request with this JSON-RPC id on this session; false if none is in flight.
    pub fn cancel(&self, session: SessionKey, id: &Id) -> bool {
        let state = self.lock();
        let found = state
            .in_flight
            .values()
            .find(|r| r.session == session && &r.id == id);
        found.inspect(|r| r.cancel.cancel()).is_some()
    }

    /// Cancels the request with this ledger key, as the owner (its caller is answered so);
    /// false if none is in flight.
    pub fn cancel_key(&self, key: u64) -> bool {
        self.lock()
            .in_flight
            .get(&key)
            .inspect(|r| r.cancel.cancel_by_owner())
            .is_some()
    }

    /// Cancels every request in flight on a session.
    pub fn cancel_all(&self, session: SessionKey) {
        for request in self
            .lock()
            .in_flight
            .values()
            .filter(|r| r.session == session)
        {
            request.cancel.cancel();
        }
    }

    /// How many requests a session has in flight.
    pub fn in_flight_count(&self, session: SessionKey) -> usize {
        self.lock()
            .in_flight
            .values()
            .filter(|r| r.session == session)
            .count()
    }

    /// Enters an open event stream; it leaves when the guard drops.
    pub fn open_stream(
        self: &Arc<Self>,
        session: SessionKey,
        kind: &'static str,
        subscription: Option<Value>,
        filter: Vec<String>,
    ) -> StreamGuard {
        let events = Arc::new(AtomicU64::new(0));
        let key = self.update(|state| {
            let key = state.next_key();
            let stream = Stream {
                session,
                kind,
                subscription,
                filter,
                opened: Instant::now(),
                events: Arc::clone(&events),
            };
            state.streams.insert(key, stream);
            key
        });
        StreamGuard {
            ledger: Arc::clone(self),
            key,
            events,
        }
    }

    /// Sessions, streams and requests as the admin socket shows them. `subscriptions` gives a
    /// session's resource subscriptions; `upstream` names who answers a request's target.
    pub fn views(
        &self,
        subscriptions: impl Fn(SessionKey) -> Vec<String>,
        upstream: impl Fn(&str, &str) -> Option<String>,
    ) -> (Vec<SessionView>, Vec<StreamView>, Vec<RequestView>, Totals) {
        let state = self.lock();
        let ms = |since: Instant| since.elapsed().as_millis() as u64;
        // The session 2026-07-28 HTTP callers share is nobody's until one comes.
        let sessions = state
            .sessions
            .iter()
            .filter(|(_, s)| s.transport != SHARED || !s.heard.is_empty())
            .map(|(key, s)| SessionView {
                key: *key,
                transport: s.transport.to_owned(),
                id: s.id.clone(),
                editor_pid: s.editor_pid,
                profile: s.profile.clone(),
                client: s.client.clone(),
                revision: s.revision.map(|r| r.as_str().to_owned()),
                caller: s.caller.as_ref().map(|c| c.summary()),
                age_ms: ms(s.opened),
                idle_ms: ms(s.last_seen),
                subscriptions: subscriptions(*key),
                clients: s.heard.views(),
            })
            .collect();
        let streams = state
            .streams
            .values()
            .map(|s| StreamView {
                session: s.session,
                kind: s.kind.to_owned(),
                subscription: s.subscription.clone(),
                filter: s.filter.clone(),
                age_ms: ms(s.opened),
                events: s.events.load(Ordering::Relaxed),
            })
            .collect();
        let requests = state
            .in_flight
            .iter()
            .map(|(key, r)| RequestView {
                key: *key,
                session: r.session,
                transport: state
                    .sessions
                    .get(&r.session)
                    .map_or("", |s| s.transport)
                    .to_owned(),
                id: r.id.to_value(),
                method: r.method.clone(),
                target: r.target.clone(),
                upstream: r.target.as_deref().and_then(|t| upstream(&r.method, t)),
                age_ms: ms(r.started),
                progress: r.progress.load(Ordering::Relaxed),
                caller: r.caller.summary(),
            })
            .collect();
        (sessions, streams, requests, state.totals)
    }
}

/// A request's place in the ledger; finishing it (or dropping it) removes the entry.
#[derive(Debug)]
pub struct InFlightGuard {
    ledger: Arc<Ledger>,
    key: u64,
    progress: Arc<AtomicU64>,
    finished: bool,
}

impl InFlightGuard {
    /// Counts the progress notifications passed back for this request.
    pub fn progress_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.progress)
    }

    /// The request's id and what it names (a tool, a prompt, a URI), as they were noted when
    /// it began: what a request answered after its work ended is answered by.
    pub fn noted(&self) -> Option<(Id, Option<String>)> {
        let state = self.ledger.lock();
        let request = state.in_flight.get(&self.key)?;
        Some((request.id.clone(), request.target.clone()))
    }

    /// Records how the request ended.
    pub fn finish(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.ledger.update(|state| {
            state.in_flight.remove(&self.key);
            let total = match outcome {
                Outcome::Answered => &mut state.totals.answered,
                Outcome::Cancelled => &mut state.totals.cancelled,
                Outcome::Failed => &mut state.totals.failed,
            };
            *total += 1;
        });
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        // A task dropped mid-request (its executor shut down, say) was cancelled in effect.
        self.record(Outcome::Cancelled);
    }
}

/// An open event stream's place in the ledger; dropping it removes the entry.
#[derive(Debug)]
pub struct StreamGuard {
    ledger: Arc<Ledger>,
    key: u64,
    events: Arc<AtomicU64>,
}

impl StreamGuard {
    /// Counts one event sent on the stream.
    pub fn sent(&self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// The stream's event counter, for whoever sends on it.
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.events)
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.ledger.update(|state| state.streams.remove(&self.key));
    }
}

#[cfg(test)]
mod every_revision {
    mod ledger {
        use crate::cancel::Cancel;
        use crate::jsonrpc::Id;
        use crate::ledger::{Ledger, Outcome};

        fn in_flight(ledger: &Ledger) -> usize {
            ledger.views(|_| vec![], |_, _| None).2.len()
        }

        fn owner() -> std::sync::Arc<crate::access::Identity> {
            let owner = crate::access::Identity::of_kind(crate::access::Kind::LocalOwner);
            std::sync::Arc::new(owner)
        }

        #[test]
        fn every_request_ends_in_exactly_one_outcome() {
            let ledger = Ledger::new();
            let session = ledger.open_session("stdio", None);
            let cancel = Cancel::new();
            let guard = ledger.begin(
                session,
                (Id::Number(1), "tools/call", None),
                cancel.clone(),
                owner(),
                None,
            );
            assert!(ledger.cancel(session, &Id::Number(1)));
            assert!(cancel.is_cancelled());
            guard.finish(Outcome::Cancelled);
            let dropped = ledger.begin(
                session,
                (Id::Number(2), "tools/list", None),
                Cancel::new(),
                owner(),
                None,
            );
            drop(dropped);
            let (_, _, requests, totals) = ledger.views(|_| vec![], |_, _| None);
            assert!(requests.is_empty());
            assert_eq!(totals.cancelled, 2);
            assert!(!ledger.cancel(session, &Id::Number(1)));
        }

        /// Thousands of requests, cancelled at random points or left to finish, from tasks that
        /// race each other: the ledger returns to zero and every one is counted once.
        #[test]
        fn thousands_of_racing_requests_leave_nothing_behind() {
            let ledger = Ledger::new();
            let sessions: Vec<_> = (0..8).map(|_| ledger.open_session("stdio", None)).collect();
            smol::block_on(async {
                let tasks: Vec<_> = (0..4000u64)
                    .map(|i| {
                        let ledger = ledger.clone();
                        let session = sessions[(i % 8) as usize];
                        crate::runtime::spawn(async move {
                            let cancel = Cancel::new();
                            let guard = ledger.begin(
                                session,
                                (Id::Number(i as i64), "tools/call", None),
                                cancel.clone(),
                                owner(),
                                None,
                            );
                            match i % 5 {
                                0 => {
                                    ledger.cancel(session, &Id::Number(i as i64));
                                }
                                1 => drop(guard),
                                _ => {
                                    let outcome = cancel.run(smol::future::yield_now()).await;
                                    guard.finish(if outcome.is_some() {
                                        Outcome::Answered
                                    } else {
                                        Outcome::Cancelled
                                    });
                                }
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await;
                }
            });
            for session in sessions {
                ledger.close_session(session);
            }
            assert_eq!(in_flight(&ledger), 0);
            let (sessions, _, _, totals) = ledger.views(|_| vec![], |_, _| None);
            assert!(sessions.is_empty());
            assert_eq!(totals.answered + totals.cancelled + totals.failed, 4000);
        }

        #[test]
        fn streams_leave_when_their_guard_drops() {
            let ledger = Ledger::new();
            let session = ledger.open_session("http-session", None);
            let stream = ledger.open_stream(session, "get", None, vec![]);
            stream.sent();
            let (_, streams, _, _) = ledger.views(|_| vec![], |_, _| None);
            assert_eq!((streams.len(), streams[0].events), (1, 1));
            drop(stream);
            assert!(ledger.views(|_| vec![], |_, _| None).1.is_empty());
        }

        #[test]
        fn a_named_session_can_be_ended_by_its_id() {
            let ledger = Ledger::new();
            let session = ledger.open_session("http-session", None);
            let ended = ledger.name_session(session, "abc");
            assert!(ledger.end_session("abc"));
            assert!(ended.is_cancelled());
            assert!(!ledger.end_session("nope"));
        }
    }
}
