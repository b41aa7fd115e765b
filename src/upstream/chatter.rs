//! How much an upstream may say besides its answers: its log messages and other notifications
//! (progress aside, which belongs to a call and is bounded where it is queued), and, in a bucket
//! of their own, its stderr lines. Each is copied into mcpx's log and may go to every client, so
//! an upstream that floods them would fill the disk. A token bucket admits a burst and then a
//! steady rate; what it refuses is dropped and counted, and the count is logged once in a while,
//! not once per message.
//!
//! What is dropped costs the read and nothing else: the reader is never paused. Real servers
//! log a stderr line per request (FastMCP, the Python SDK, most Node servers), and a reader that
//! slowed down over budget made such a server wait on its own stderr pipe, and every call with it.

use crate::sync::lock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The steady rate admitted, per second.
pub const PER_SECOND: f64 = 200.0;

/// How many may come at once after a quiet spell.
const BURST: f64 = 1000.0;

/// How often, at most, the count of what was dropped is logged.
const SUMMARY_EVERY: Duration = Duration::from_secs(5);

/// One upstream's allowance for one kind of chatter.
#[derive(Debug)]
pub struct Chatter {
    server: String,
    /// What is counted, for the summary: "stderr lines", say.
    what: &'static str,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled: Instant,
    dropped: u64,
    dropping_since: Option<Instant>,
    summarised: Option<Instant>,
}

impl Chatter {
    /// A full allowance for the server `server`'s `what` (a plural: "stderr lines").
    pub fn new(server: &str, what: &'static str) -> Chatter {
        Chatter {
            server: server.to_owned(),
            what,
            state: Mutex::new(State {
                tokens: BURST,
                refilled: Instant::now(),
                dropped: 0,
                dropping_since: None,
                summarised: None,
            }),
        }
    }

    /// Whether one more message or line may be passed on now; when not, it is counted.
    pub fn admit(&self) -> bool {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> bool {
        let mut state = lock(&self.state);
        let earned = now.saturating_duration_since(state.refilled).as_secs_f64() * PER_SECOND;
        state.tokens = (state.tokens + earned).min(BURST);
        state.refilled = now;
        if state.tokens < 1.0 {
            state.dropped += 1;
            state.dropping_since.get_or_insert(now);
            return false;
        }
        state.tokens -= 1.0;
        let due = state
            .summarised
            .is_none_or(|at| now.saturating_duration_since(at) >= SUMMARY_EVERY);
        if state.dropped > 0 && due {
            let since = state.dropping_since.map_or(Duration::ZERO, |s| now - s);
            tracing::warn!(
                server = %self.server,
                "upstream said too much: {} {} dropped over {:.1?} (more than {PER_SECOND} a second)",
                state.dropped,
                self.what,
                since
            );
            state.dropped = 0;
            state.dropping_since = None;
            state.summarised = Some(now);
        }
        true
    }
}

#[cfg(test)]
mod every_revision {
    mod chatter {
        use crate::upstream::chatter::{Chatter, BURST, PER_SECOND};
        use std::time::{Duration, Instant};

        #[test]
        fn a_burst_then_the_steady_rate_is_admitted_and_the_rest_dropped() {
            let chatter = Chatter::new("noisy", "stderr lines");
            let start = Instant::now();
            let chatter = &chatter;
            let passed = |at| move |_: &u32| chatter.admit_at(at);
            let burst = (0..5000).filter(passed(start)).count();
            assert_eq!(burst, BURST as usize);
            let later = start + Duration::from_secs(1);
            let steady = (0..5000).filter(passed(later)).count();
            assert_eq!(steady, PER_SECOND as usize);
            assert_eq!(
                chatter.state.lock().unwrap().dropped,
                4800,
                "counted since the summary"
            );
        }
    }
}
