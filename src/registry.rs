//! The registry: the one place where live state is kept — sessions (each stdio process and, later,
//! each HTTP session) and the requests in flight on them, with the handle that cancels each.
//!
//! Every request is entered with [`Registry::begin`] and leaves through its [`InFlightGuard`], which
//! records exactly one [`Outcome`]; a guard dropped without one counts as cancelled, so no request
//! can vanish uncounted. The admin socket and the tests read [`Registry::snapshot`].

use crate::cancel::Cancel;
use crate::jsonrpc::Id;
use crate::protocol::Revision;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Identifies a session (a client connection) in the registry.
pub type SessionKey = u64;

/// How a request in flight ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result or an error was sent back.
    Answered,
    /// The client or the transport cancelled it; nothing was sent.
    Cancelled,
    /// It could not be answered (the transport was gone).
    Failed,
}

#[derive(Debug)]
struct Session {
    transport: &'static str,
    revision: Option<Revision>,
    opened: Instant,
}

#[derive(Debug)]
struct InFlight {
    session: SessionKey,
    id: Id,
    method: String,
    started: Instant,
    cancel: Cancel,
}

#[derive(Debug, Default)]
struct State {
    next_key: u64,
    sessions: BTreeMap<SessionKey, Session>,
    in_flight: BTreeMap<u64, InFlight>,
    answered: u64,
    cancelled: u64,
    failed: u64,
}

/// Shared live state; clone the `Arc` to share it.
#[derive(Debug, Default)]
pub struct Registry {
    state: Mutex<State>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-updated (every update is a
        // single insert or remove), so a poisoned lock is still safe to use.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for a transport.
    pub fn open_session(&self, transport: &'static str) -> SessionKey {
        let mut state = self.lock();
        state.next_key += 1;
        let key = state.next_key;
        state.sessions.insert(
            key,
            Session {
                transport,
                revision: None,
                opened: Instant::now(),
            },
        );
        key
    }

    /// Records the revision a session negotiated.
    pub fn set_revision(&self, session: SessionKey, revision: Revision) {
        if let Some(s) = self.lock().sessions.get_mut(&session) {
            s.revision = Some(revision);
        }
    }

    /// Closes a session, cancelling whatever it still has in flight.
    pub fn close_session(&self, session: SessionKey) {
        let mut state = self.lock();
        state.sessions.remove(&session);
        for request in state.in_flight.values().filter(|r| r.session == session) {
            request.cancel.cancel();
        }
    }

    /// Enters a request; the guard must be finished with its outcome.
    pub fn begin(
        self: &Arc<Self>,
        session: SessionKey,
        id: Id,
        method: &str,
        cancel: Cancel,
    ) -> InFlightGuard {
        let mut state = self.lock();
        state.next_key += 1;
        let key = state.next_key;
        state.in_flight.insert(
            key,
            InFlight {
                session,
                id,
                method: method.to_owned(),
                started: Instant::now(),
                cancel,
            },
        );
        InFlightGuard {
            registry: Arc::clone(self),
            key,
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

    /// The whole live state as JSON, for the admin socket and tests.
    pub fn snapshot(&self) -> Value {
        let state = self.lock();
        let sessions: Vec<Value> = state
            .sessions
            .iter()
            .map(|(key, s)| {
                json!({
                    "session": key,
                    "transport": s.transport,
                    "revision": s.revision.map(Revision::as_str),
                    "ageMs": s.opened.elapsed().as_millis() as u64,
                })
            })
            .collect();
        let in_flight: Vec<Value> = state
            .in_flight
            .values()
            .map(|r| {
                json!({
                    "session": r.session,
                    "id": r.id.to_value(),
                    "method": r.method,
                    "ageMs": r.started.elapsed().as_millis() as u64,
                })
            })
            .collect();
        json!({
            "sessions": sessions,
            "inFlight": in_flight,
            "totals": {"answered": state.answered, "cancelled": state.cancelled, "failed": state.failed},
        })
    }
}

/// A request's place in the registry; finishing it (or dropping it) removes the entry.
#[derive(Debug)]
pub struct InFlightGuard {
    registry: Arc<Registry>,
    key: u64,
    finished: bool,
}

impl InFlightGuard {
    /// Records how the request ended.
    pub fn finish(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let mut state = self.registry.lock();
        state.in_flight.remove(&self.key);
        match outcome {
            Outcome::Answered => state.answered += 1,
            Outcome::Cancelled => state.cancelled += 1,
            Outcome::Failed => state.failed += 1,
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        // A task dropped mid-request (its executor shut down, say) was cancelled in effect.
        self.record(Outcome::Cancelled);
    }
}

#[cfg(test)]
mod every_revision {
    mod registry {
        use crate::cancel::Cancel;
        use crate::jsonrpc::Id;
        use crate::registry::{Outcome, Registry};

        #[test]
        fn every_request_ends_in_exactly_one_outcome() {
            let registry = Registry::new();
            let session = registry.open_session("stdio");
            let cancel = Cancel::new();
            let guard = registry.begin(session, Id::Number(1), "tools/call", cancel.clone());
            assert!(registry.cancel(session, &Id::Number(1)));
            assert!(cancel.is_cancelled());
            guard.finish(Outcome::Cancelled);
            let dropped = registry.begin(session, Id::Number(2), "tools/list", Cancel::new());
            drop(dropped);
            let snapshot = registry.snapshot();
            assert_eq!(snapshot["inFlight"].as_array().unwrap().len(), 0);
            assert_eq!(snapshot["totals"]["cancelled"], 2);
            assert!(!registry.cancel(session, &Id::Number(1)));
        }
    }
}
