//! Legacy sessions: minted by `initialize`, named by `Mcp-Session-Id`, ended by `DELETE` or by
//! idling past `transport.sessionIdleTimeout`. The table is capped (`transport.maxSessions`), so
//! a flood of `initialize` cannot grow it without bound.

use crate::cancel::Cancel;
use crate::gateway::{Client, Gateway, ViewId};
use crate::jsonrpc::Outbound;
use crate::sync::lock;
use async_channel::Receiver;
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
    pub outbound: Receiver<Outbound>,
    /// Fired when the session ends; its GET stream closes.
    pub ended: Cancel,
    stream_open: AtomicBool,
    last_used: Mutex<Instant>,
}

impl Session {
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
}

impl Sessions {
    /// An empty table holding at most `max` sessions, each expiring after `idle`.
    pub fn new(gateway: Arc<Gateway>, max: usize, idle: Duration) -> Self {
        Sessions {
            gateway,
            table: Mutex::default(),
            max,
            idle,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        lock(&self.table)
    }

    /// A new gateway client for a session about to be minted (kept only if `initialize`
    /// succeeds: see [`Sessions::insert`]).
    pub fn prepare(&self, view: ViewId) -> Result<(Arc<Client>, Receiver<Outbound>), Refused> {
        self.sweep();
        if self.lock().len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        let (outbound, outbound_rx) = async_channel::bounded(STREAM_QUEUE);
        Ok((
            self.gateway.open_client("http-session", view, outbound),
            outbound_rx,
        ))
    }

    /// Mints a session for a client that initialized; its id is 128 random bits.
    pub fn insert(
        &self,
        client: Arc<Client>,
        outbound: Receiver<Outbound>,
    ) -> Result<Arc<Session>, Refused> {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            self.gateway.close_client(&client);
            return Err(Refused::NoRandomness);
        }
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        // The registry holds the signal that ends the session, so the admin can end it too.
        let ended = self.gateway.name_session(&client, &id);
        let session = Arc::new(Session {
            id: id.clone(),
            client,
            outbound,
            ended,
            stream_open: AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
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
        let session = self.lock().get(id).cloned()?;
        if session.client.view != view {
            return None;
        }
        if session.is_idle(self.idle) || session.ended.is_cancelled() {
            self.end(id);
            return None;
        }
        session.touch();
        Some(session)
    }

    /// Ends a session: its GET stream closes, its requests are cancelled.
    pub fn end(&self, id: &str) -> Option<Arc<Session>> {
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
            .filter(|s| s.is_idle(self.idle) || s.ended.is_cancelled())
            .map(|s| s.id.clone())
            .collect();
        for id in idle {
            tracing::debug!(session = %id, "session expired");
            self.end(&id);
        }
    }

    /// Ends every session (at shutdown).
    pub fn end_all(&self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            self.end(&id);
        }
    }

    /// How often to sweep: often enough that expiry is timely, rarely enough to cost nothing.
    pub fn sweep_interval(&self) -> Duration {
        (self.idle / 2).clamp(Duration::from_millis(50), Duration::from_secs(60))
    }
}
