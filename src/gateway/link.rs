//! The live link to one upstream: the connection in service, the handshake that opened it,
//! where it stands and which start made it, behind one private lock so that they change
//! together (nobody sees one start's connection beside another's handshake); and how its starts
//! are paced (backoff, restarts, one revival at a time). What the server *is* (its
//! configuration, its catalog, its policies) is its [`super::upstreams::Upstream`]'s.

use crate::protocol::{task, Era, Extension, Extensions};
use crate::sync::lock;
use crate::upstream::{Connection, Handshake};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The first restart's delay; each failure in a row doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest delay between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Exits within this window count towards a crash loop.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// This many exits within the window is a crash loop.
const CRASH_LOOP: usize = 5;
/// How long an upstream gets to exit once its stdin closes, at a restart or removal.
pub(super) const STOP_GRACE: Duration = Duration::from_millis(500);

/// Where an upstream stands.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamState {
    /// Starting or handshaking, since `since`; `first` when nothing of it is known yet (no
    /// catalog cached, never served), which gets `firstStartTimeout`.
    Starting { since: Instant, first: bool },
    /// Serving.
    Ready,
    /// A remote server that refuses mcpx until a person logs in; supervision keeps trying, so
    /// the login's tokens are picked up without a restart.
    NeedsLogin {
        /// What to run.
        how: String,
    },
    /// Its configuration cannot work as written (an unset `${VAR}`, a `url` that is not one):
    /// not started again until a reload changes it.
    Misconfigured {
        /// What is wrong, by key.
        reason: String,
    },
    /// A `start = "lazy"` server not running: listed from its last run's catalog, started by
    /// the first request that needs it.
    Idle,
    /// Not serving; supervision starts it again at `next`.
    Down {
        /// Why it is down: its start failed, or its process exited.
        reason: String,
        /// When the next start is due.
        next: Instant,
        /// Whether it crashed so often that its catalog was withdrawn.
        crash_looping: bool,
    },
}

impl UpstreamState {
    /// Starting from now (again: not a first start).
    pub(super) fn starting() -> UpstreamState {
        UpstreamState::Starting {
            since: Instant::now(),
            first: false,
        }
    }

    /// Down for `reason`, to be started again as its backoff says.
    pub(super) fn down(reason: String) -> UpstreamState {
        UpstreamState::Down {
            reason,
            next: Instant::now(),
            crash_looping: false,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            UpstreamState::Starting { since, first } => {
                let first = if *first { " (first start)" } else { "" };
                format!("starting for {} s{first}", since.elapsed().as_secs())
            }
            UpstreamState::Ready => "ready".into(),
            UpstreamState::Idle => "idle (lazy)".into(),
            UpstreamState::NeedsLogin { how } => format!("needs-login: {how}"),
            UpstreamState::Misconfigured { reason } => {
                format!("misconfigured: {reason}")
            }
            UpstreamState::Down {
                reason,
                next,
                crash_looping,
            } => {
                let wait = next.saturating_duration_since(Instant::now()).as_secs_f64();
                let looping = if *crash_looping {
                    " (crash loop: tools withdrawn)"
                } else {
                    ""
                };
                format!("failed: {reason}; next start in {wait:.1}s{looping}")
            }
        }
    }
}

/// Restart pacing for one upstream.
#[derive(Debug, Default)]
struct Backoff {
    failures_in_a_row: u32,
    recent_exits: VecDeque<Instant>,
}

impl Backoff {
    /// Records a failure; returns the delay before the next start and whether it is looping.
    fn failed(&mut self) -> (Duration, bool) {
        let now = Instant::now();
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        self.recent_exits.push_back(now);
        while self
            .recent_exits
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.recent_exits.pop_front();
        }
        let looping = self.recent_exits.len() >= CRASH_LOOP;
        let exponent = self.failures_in_a_row.saturating_sub(1).min(16);
        let delay = if looping {
            MAX_BACKOFF
        } else {
            (FIRST_BACKOFF * 2u32.pow(exponent)).min(MAX_BACKOFF)
        };
        // Jitter, so that servers that died together do not all come back at once.
        (delay.mul_f64(0.8 + fastrand::f64() * 0.4), looping)
    }

    fn succeeded(&mut self) {
        self.failures_in_a_row = 0;
    }
}

/// What changes together when a link starts, serves or stops.
#[derive(Debug)]
struct Live {
    state: UpstreamState,
    handshake: Option<Handshake>,
    /// Installed before its handshake, so that a stop can reach it; served only when ready.
    connection: Option<Connection>,
    /// Counts starts; an event from an older start is about a process that is gone.
    generation: u64,
}

/// The live link to one upstream.
#[derive(Debug)]
pub(super) struct Link {
    live: Mutex<Live>,
    /// Counts starts after the first (after a crash, or asked for), whether they served or not.
    restarts: AtomicU64,
    backoff: Mutex<Backoff>,
    /// Whether a supervision loop is already reviving it (there must be one at most).
    reviving: AtomicBool,
    /// What its sandbox enforced at its last start, as the helper reported it.
    sandbox_report: Arc<Mutex<Option<crate::sandbox::Report>>>,
}

impl Default for Link {
    fn default() -> Link {
        Link {
            live: Mutex::new(Live {
                state: UpstreamState::starting(),
                handshake: None,
                connection: None,
                generation: 0,
            }),
            restarts: AtomicU64::new(0),
            backoff: Mutex::default(),
            reviving: AtomicBool::new(false),
            sandbox_report: Arc::default(),
        }
    }
}

impl Link {
    /// Begins its start number `start` (its upstream's next: unique among all its links),
    /// `first` if nothing of it is known yet.
    pub fn begin_start(&self, start: u64, first: bool) {
        let mut live = lock(&self.live);
        live.generation = start;
        live.state = UpstreamState::Starting {
            since: Instant::now(),
            first,
        };
    }

    /// Holds the connection a start is opening (so that a stop reaches it).
    pub fn connecting(&self, connection: Connection) {
        lock(&self.live).connection = Some(connection);
    }

    /// The start succeeded: it serves, as `handshake` says.
    pub fn serve(&self, handshake: Handshake) {
        let mut live = lock(&self.live);
        live.handshake = Some(handshake);
        live.state = UpstreamState::Ready;
        drop(live);
        lock(&self.backoff).succeeded();
    }

    /// Stops serving, now in `state`; returns the connection to stop, if there was one.
    pub fn stop(&self, state: UpstreamState) -> Option<Connection> {
        let mut live = lock(&self.live);
        live.state = state;
        live.connection.take()
    }

    /// Its serving connection of `generation` ended (`reason`: "exited with status 1: …",
    /// "disconnected: …"): down, and true, if it was still serving.
    pub fn exited(&self, generation: u64, reason: &str) -> bool {
        let mut live = lock(&self.live);
        if live.state != UpstreamState::Ready || live.generation != generation {
            return false;
        }
        live.connection = None;
        live.state = UpstreamState::down(reason.to_owned());
        true
    }

    pub fn state(&self) -> UpstreamState {
        lock(&self.live).state.clone()
    }

    /// Sets where it stands, keeping its connection.
    pub fn set_state(&self, state: UpstreamState) {
        lock(&self.live).state = state;
    }

    pub fn is_ready(&self) -> bool {
        lock(&self.live).state == UpstreamState::Ready
    }

    /// The current start's generation.
    pub fn generation(&self) -> u64 {
        lock(&self.live).generation
    }

    /// Whether the start of `generation` is the one serving.
    pub fn serves(&self, generation: u64) -> bool {
        let live = lock(&self.live);
        live.generation == generation && live.state == UpstreamState::Ready
    }

    /// Its connection, serving or being opened.
    pub fn connection(&self) -> Option<Connection> {
        lock(&self.live).connection.clone()
    }

    /// Its connection, if it serves and is alive; else where it stands.
    pub fn serving(&self) -> Result<Connection, UpstreamState> {
        let live = lock(&self.live);
        let alive = live.connection.as_ref().filter(|c| c.is_alive());
        match (&live.state, alive) {
            (UpstreamState::Ready, Some(connection)) => Ok(connection.clone()),
            (state, _) => Err(state.clone()),
        }
    }

    /// The handshake its last serving start made.
    pub fn handshake(&self) -> Option<Handshake> {
        lock(&self.live).handshake.clone()
    }

    /// Reads its last handshake without copying it.
    pub fn with_handshake<R>(&self, read: impl FnOnce(Option<&Handshake>) -> R) -> R {
        read(lock(&self.live).handshake.as_ref())
    }

    /// The era its last handshake spoke.
    pub fn era(&self) -> Option<Era> {
        self.with_handshake(|h| h.map(|h| h.revision.era()))
    }

    /// The generation of tasks it runs on `tools/call`, if any: the Tasks extension (2026-07-28)
    /// or 2025-11-25's `tasks.requests.tools.call`.
    pub fn runs_tasks(&self) -> Option<Era> {
        self.with_handshake(|handshake| {
            let handshake = handshake?;
            let era = handshake.revision.era();
            let runs = match era {
                Era::Modern => Extensions::declared_in(Some(&handshake.capabilities))
                    .contains(Extension::Tasks),
                Era::Legacy => {
                    task::has_tasks(handshake.revision)
                        && task::serves_tool_tasks(&handshake.capabilities)
                }
            };
            runs.then_some(era)
        })
    }

    /// Whether it declared `resources.subscribe`.
    pub fn supports_subscribe(&self) -> bool {
        self.with_handshake(|h| {
            h.is_some_and(|h| h.capabilities["resources"]["subscribe"] == json!(true))
        })
    }

    /// Where it stands as people read it. A server whose process just ended is still `Ready`
    /// until supervision hears of it, but its calls already fail: it reads as exited at once.
    pub fn describe(&self, name: &str) -> String {
        let live = lock(&self.live);
        let alive = live.connection.as_ref().is_some_and(Connection::is_alive);
        let needs_login = live
            .connection
            .as_ref()
            .is_some_and(Connection::needs_login);
        match &live.state {
            UpstreamState::Ready if !alive => "exited; restarting".into(),
            UpstreamState::Ready if needs_login => {
                format!("needs-login: run `mcpx auth login {name}`")
            }
            state => state.describe(),
        }
    }

    /// Whether it waits for a person to log in: it refused to start without one, or its last
    /// answer refused mcpx's token.
    pub fn waits_for_login(&self) -> bool {
        let live = lock(&self.live);
        let refused = live
            .connection
            .as_ref()
            .is_some_and(Connection::needs_login);
        refused || matches!(live.state, UpstreamState::NeedsLogin { .. })
    }

    /// A failure to pace: the delay before the next start, and whether it is crash looping,
    /// which a down link's state then shows.
    pub fn paced_after_failure(&self) -> (Duration, bool) {
        let (delay, looping) = lock(&self.backoff).failed();
        if let UpstreamState::Down {
            next,
            crash_looping,
            ..
        } = &mut lock(&self.live).state
        {
            *next = Instant::now() + delay;
            *crash_looping = looping;
        }
        (delay, looping)
    }

    /// Counts a start after the first.
    pub fn restarted(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// The one revival of this link: `None` while another is under way.
    pub fn revival(&self) -> Option<Revival<'_>> {
        let taken = self.reviving.swap(true, Ordering::AcqRel);
        (!taken).then_some(Revival(&self.reviving))
    }

    /// Where its sandbox's report of its next start goes.
    pub fn sandbox_report(&self) -> &Arc<Mutex<Option<crate::sandbox::Report>>> {
        &self.sandbox_report
    }

    /// What its sandbox enforced at its last start.
    pub fn sandbox(&self) -> Option<crate::sandbox::Report> {
        lock(&self.sandbox_report).clone()
    }
}

/// A revival under way; another may begin once it is dropped.
pub(super) struct Revival<'a>(&'a AtomicBool);

impl Drop for Revival<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod every_revision {
    mod supervision {
        use super::super::{Backoff, CRASH_LOOP, FIRST_BACKOFF, MAX_BACKOFF};

        #[test]
        fn backoff_doubles_with_jitter_and_is_capped() {
            let mut backoff = Backoff::default();
            let (first, _) = backoff.failed();
            assert!(
                first >= FIRST_BACKOFF.mul_f64(0.8) && first <= FIRST_BACKOFF.mul_f64(1.2),
                "{first:?}"
            );
            let (second, _) = backoff.failed();
            assert!(second >= FIRST_BACKOFF.mul_f64(1.6), "{second:?}");
            backoff.succeeded();
            let (again, _) = backoff.failed();
            assert!(
                again <= FIRST_BACKOFF.mul_f64(1.2 * 2.0),
                "a success did not reset the backoff: {again:?}"
            );
        }

        #[test]
        fn a_crash_loop_is_damped_to_the_longest_backoff() {
            let mut backoff = Backoff::default();
            let mut last = (Default::default(), false);
            for _ in 0..CRASH_LOOP {
                backoff.succeeded();
                last = backoff.failed();
            }
            assert!(last.1, "five exits within a minute are a crash loop");
            assert!(last.0 >= MAX_BACKOFF.mul_f64(0.8));
        }
    }
}
