//! Legacy sessions: minted by `initialize`, named by `Mcp-Session-Id`, ended by `DELETE` or by
//! idling past `transport.sessionIdleTimeout`. The table is capped (`transport.maxSessions`), so
//! a flood of `initialize` cannot grow it without bound.
//!
//! With a cluster key ([`crate::cluster`]) the id is the session, sealed: a replica that does
//! not hold it rebuilds it from the id, and idling only frees a replica's copy (the next request
//! rebuilds it). `DELETE` ends it on the replica that takes it, which remembers the id until it
//! would have expired anyway and tells its `peers`, which do the same.

use crate::access::Identity;
use crate::cancel::Cancel;
use crate::cluster::{SealedSession, Sealer};
use crate::gateway::{Client, Gateway, ViewId};
use crate::outbox;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Notifications a session's GET stream may fall behind by before it is closed.
pub const STREAM_QUEUE: usize = 16;

/// One legacy session.
#[derive(Debug)]
pub struct Session {
    /// The id the client echoes in `Mcp-Session-Id`.
    pub id: String,
    /// The gateway's view of it: negotiated revision, subscriptions.
    pub client: Arc<Client>,
    /// Notifications for the GET stream (bounded; see [`STREAM_QUEUE`]).
    pub outbound: outbox::Receiver,
    /// Fired when the session ends; its GET stream closes.
    pub ended: Cancel,
    stream_open: AtomicBool,
    last_used: Mutex<Instant>,
    /// When a sealed id's `sessionLifetime` ends: the session with it, on every replica.
    expires: Option<Instant>,
    /// Who it belongs to ([`Identity::owner_key`]): the caller that initialized it, as its
    /// sealed id says on every replica.
    owner: std::sync::OnceLock<String>,
}

impl Session {
    /// Whether `caller` may use it: the same subject of the same issuer, let in the same way as
    /// its owner. Another caller holding the id is told the session does not exist.
    pub fn belongs_to(&self, caller: &Identity) -> bool {
        let key = caller.owner_key();
        *self.owner.get_or_init(|| key.clone()) == key
    }

    /// Claims the session's one GET stream; false if one is already open.
    pub fn open_stream(&self) -> bool {
        !self.stream_open.swap(true, Ordering::AcqRel)
    }

    /// Releases the GET stream.
    pub fn close_stream(&self) {
        self.stream_open.store(false, Ordering::Release);
        self.touch();
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Idle: no request for `timeout`, and no GET stream open (a listening client is not idle).
    fn is_idle(&self, timeout: Duration) -> bool {
        !self.stream_open.load(Ordering::Acquire) && lock(&self.last_used).elapsed() >= timeout
    }

    /// Past its sealed id's lifetime.
    fn is_expired(&self) -> bool {
        self.expires.is_some_and(|at| Instant::now() >= at)
    }
}

/// Why a session could not be minted.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The table holds `transport.maxSessions` sessions already.
    Full(usize),
    /// The system's random source failed, and a guessable id is worse than none.
    NoRandomness,
}

/// The session table.
#[derive(Debug)]
pub struct Sessions {
    gateway: Arc<Gateway>,
    table: Mutex<HashMap<String, Arc<Session>>>,
    max: usize,
    idle: Duration,
    sealer: Option<Arc<Sealer>>,
    /// Sealed ids ended here, and when: refused until they would have expired.
    ended: Mutex<HashMap<String, Instant>>,
}

impl Sessions {
    /// An empty table holding at most `max` sessions, each expiring after `idle`.
    pub fn new(
        gateway: Arc<Gateway>,
        max: usize,
        idle: Duration,
        sealer: Option<Arc<Sealer>>,
    ) -> Self {
        Sessions {
            gateway,
            table: Mutex::default(),
            max,
            idle,
            sealer,
            ended: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        lock(&self.table)
    }

    /// A new gateway client for a session about to be minted (kept only if `initialize`
    /// succeeds: see [`Sessions::insert`]).
    pub fn prepare(&self, view: ViewId) -> Result<(Arc<Client>, outbox::Receiver), Refused> {
        self.sweep();
        if self.lock().len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        let (outbound, outbound_rx) = outbox::bounded(STREAM_QUEUE);
        Ok((
            self.gateway.open_client("http-session", view, outbound),
            outbound_rx,
        ))
    }

    /// Mints a session for a client that initialized (`negotiated`): its id is 128 random bits,
    /// or, with a cluster key, the session sealed.
    pub fn insert(
        &self,
        client: Arc<Client>,
        outbound: outbox::Receiver,
        negotiated: &SealedSession,
    ) -> Result<Arc<Session>, Refused> {
        let expires = self.sealer.as_ref().map(|s| Instant::now() + s.lifetime());
        let id = match &self.sealer {
            Some(sealer) => sealer.seal(negotiated).ok(),
            None => {
                let mut bytes = [0u8; 16];
                getrandom::fill(&mut bytes).ok().map(|_| hex::encode(bytes))
            }
        };
        let Some(id) = id else {
            self.gateway.close_client(&client);
            return Err(Refused::NoRandomness);
        };
        self.insert_as(id, client, outbound, expires, negotiated.owner.clone())
    }

    /// Enters a session under `id`, `owner`'s (none: its first caller's); a session already
    /// entered under it (two requests rebuilt the same sealed one at once) is kept.
    fn insert_as(
        &self,
        id: String,
        client: Arc<Client>,
        outbound: outbox::Receiver,
        expires: Option<Instant>,
        owner: Option<String>,
    ) -> Result<Arc<Session>, Refused> {
        if let Some(existing) = self.lock().get(&id).cloned() {
            self.gateway.close_client(&client);
            return Ok(existing);
        }
        // The ledger holds the signal that ends the session, so the admin can end it too.
        let ended = self.gateway.live().name_session(&client, &id);
        let session = Arc::new(Session {
            id: id.clone(),
            client,
            outbound,
            ended,
            stream_open: AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
            expires,
            owner: owner.map(std::sync::OnceLock::from).unwrap_or_default(),
        });
        let mut table = self.lock();
        if table.len() >= self.max {
            drop(table);
            self.gateway.close_client(&session.client);
            return Err(Refused::Full(self.max));
        }
        table.insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// The live session with this id minted at `view`'s door (and marks it used); `None` if
    /// unknown there, ended or expired.
    pub fn get(&self, id: &str, view: ViewId) -> Option<Arc<Session>> {
        let held = self.lock().get(id).cloned();
        let session = held.or_else(|| self.rebuild(id, view))?;
        if session.client.view != view {
            return None;
        }
        if session.ended.is_cancelled() {
            self.end(id);
            return None;
        }
        if session.is_expired() {
            // Its id no longer opens anywhere: nothing to remember it by.
            self.forget(id);
            return None;
        }
        if session.is_idle(self.idle) {
            self.forget(id);
            return self.rebuild(id, view);
        }
        session.touch();
        Some(session)
    }

    /// A sealed session this replica does not hold, rebuilt from its id; `None` without a
    /// cluster key, or for an id that does not open, ended here, or another door's.
    fn rebuild(&self, id: &str, view: ViewId) -> Option<Arc<Session>> {
        let sealer = self.sealer.as_ref()?;
        let sealed = sealer.open(id)?;
        let expires = Instant::now() + sealer.remaining(&sealed);
        if lock(&self.ended).contains_key(id)
            || sealed.profile.as_deref() != self.gateway.profile_name(view)
        {
            return None;
        }
        let revision = crate::protocol::Revision::parse(&sealed.revision)?;
        let (client, outbound) = self.prepare(view).ok()?;
        self.gateway
            .resume_session(&client, revision, sealed.capabilities, sealed.client);
        tracing::debug!("rebuilt a sealed session minted elsewhere");
        // An id minted before sessions had owners is its first caller's.
        self.insert_as(id.to_owned(), client, outbound, Some(expires), sealed.owner)
            .ok()
    }

    /// Ends a session: its GET stream closes, its requests are cancelled, and a sealed id is
    /// refused here from now on.
    pub fn end(&self, id: &str) -> Option<Arc<Session>> {
        if let Some(sealer) = &self.sealer {
            let mut ended = lock(&self.ended);
            ended.retain(|_, at| at.elapsed() < sealer.lifetime());
            ended.insert(id.to_owned(), Instant::now());
        }
        self.forget(id)
    }

    /// Ends a sealed session another replica ended: `false` for an id that does not open.
    pub fn end_sealed(&self, id: &str) -> bool {
        let opens = self.sealer.as_ref().is_some_and(|s| s.open(id).is_some());
        if opens {
            self.end(id);
        }
        opens
    }

    /// Whether session ids are sealed (a cluster key is set).
    pub fn sealed(&self) -> bool {
        self.sealer.is_some()
    }

    /// Frees this replica's copy of a session (its GET stream closes, its requests are
    /// cancelled); a sealed one may be rebuilt by its next request.
    fn forget(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.lock().remove(id)?;
        session.ended.cancel();
        self.gateway.close_client(&session.client);
        Some(session)
    }

    /// Ends every idle session.
    pub fn sweep(&self) {
        let idle: Vec<String> = self
            .lock()
            .values()
            .filter(|s| s.is_idle(self.idle) || s.is_expired() || s.ended.is_cancelled())
            .map(|s| s.id.clone())
            .collect();
        for id in idle {
            tracing::debug!(session = %id, "session expired");
            self.forget(&id);
        }
    }

    /// Ends every session (at shutdown).
    pub fn end_all(&self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            self.forget(&id);
        }
    }

    /// How often to sweep: often enough that expiry is timely, rarely enough to cost nothing.
    pub fn sweep_interval(&self) -> Duration {
        (self.idle / 2).clamp(Duration::from_millis(50), Duration::from_secs(60))
    }
}
