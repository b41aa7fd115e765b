//! How much an upstream may say besides its answers: its log messages, its other notifications
//! (progress aside, which belongs to a call and is bounded where it is queued) and its stderr
//! lines. Each is copied into mcpx's log and may go to every client, so an upstream that floods
//! them would fill the disk and slow every other upstream's calls. A token bucket per upstream
//! admits a burst and then a steady rate; what it refuses is dropped and counted, and the count
//! is logged once in a while, not once per message. Over its allowance, a stdio upstream is
//! also read more slowly ([`OVER_BUDGET_PAUSE`] every [`PAUSE_EVERY`] messages dropped), so that
//! its flood costs it time instead of costing everyone else a core.

use crate::sync::lock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The steady rate admitted, per second.
pub const PER_SECOND: f64 = 200.0;

/// How many may come at once after a quiet spell.
const BURST: f64 = 1000.0;

/// How long reading waits every [`PAUSE_EVERY`] messages dropped: a flood is then read at most
/// about 16,000 messages a second, a few percent of a core.
pub const OVER_BUDGET_PAUSE: Duration = Duration::from_millis(1);
const PAUSE_EVERY: u64 = 16;

/// What to do with one message or line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Pass it on.
    Pass,
    /// Drop it.
    Drop,
    /// Drop it, and wait this long before reading on.
    DropAndWait(Duration),
}

/// How often, at most, the count of what was dropped is logged.
const SUMMARY_EVERY: Duration = Duration::from_secs(5);

/// One upstream's allowance.
#[derive(Debug)]
pub struct Chatter {
    server: String,
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
    /// A full allowance for the server `server`.
    pub fn new(server: &str) -> Chatter {
        Chatter {
            server: server.to_owned(),
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
    pub fn admit(&self) -> Verdict {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Verdict {
        let mut state = lock(&self.state);
        let earned = now.saturating_duration_since(state.refilled).as_secs_f64() * PER_SECOND;
        state.tokens = (state.tokens + earned).min(BURST);
        state.refilled = now;
        if state.tokens < 1.0 {
            state.dropped += 1;
            state.dropping_since.get_or_insert(now);
            return match state.dropped % PAUSE_EVERY {
                0 => Verdict::DropAndWait(OVER_BUDGET_PAUSE),
                _ => Verdict::Drop,
            };
        }
        state.tokens -= 1.0;
        let due = state
            .summarised
            .is_none_or(|at| now.saturating_duration_since(at) >= SUMMARY_EVERY);
        if state.dropped > 0 && due {
            let since = state.dropping_since.map_or(Duration::ZERO, |s| now - s);
            tracing::warn!(
                server = %self.server,
                "upstream said too much: {} log message(s), notification(s) or stderr line(s) dropped over {:.1?} (more than {PER_SECOND} a second)",
                state.dropped,
                since
            );
            state.dropped = 0;
            state.dropping_since = None;
            state.summarised = Some(now);
        }
        Verdict::Pass
    }
}

#[cfg(test)]
mod every_revision {
    mod chatter {
        use crate::upstream::chatter::{Chatter, Verdict, BURST, PER_SECOND};
        use std::time::{Duration, Instant};

        #[test]
        fn a_burst_then_the_steady_rate_is_admitted_and_the_rest_dropped() {
            let chatter = Chatter::new("noisy");
            let start = Instant::now();
            let chatter = &chatter;
            let passed = |at| move |_: &u32| chatter.admit_at(at) == Verdict::Pass;
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
