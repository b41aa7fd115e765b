//! A cap on how many of something are held at once (connections, requests in flight to an
//! upstream). Past it the caller refuses the newcomer with its transport's error; the log says
//! once when the cap is reached and once when there is room again, not once per refusal.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts what is held against `max`.
#[derive(Debug)]
pub struct Limit {
    /// The configuration key, as the log and the errors name it.
    name: String,
    max: usize,
    held: AtomicUsize,
    full: AtomicBool,
}

/// One place taken; dropping it gives the place back.
#[derive(Debug)]
pub struct Held(Arc<Limit>);

impl Limit {
    /// A cap of `max`, named `name` (for example `maxConnections`).
    pub fn new(name: impl Into<String>, max: usize) -> Arc<Self> {
        Arc::new(Limit {
            name: name.into(),
            max,
            held: AtomicUsize::new(0),
            full: AtomicBool::new(false),
        })
    }

    /// A place, or `None` when `max` are held.
    pub fn take(self: &Arc<Self>) -> Option<Held> {
        let taken = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max).then_some(held + 1)
            })
            .is_ok();
        if taken {
            if self.full.swap(false, Ordering::Relaxed) {
                tracing::info!("below {} ({}) again", self.name, self.max);
            }
            return Some(Held(Arc::clone(self)));
        }
        if !self.full.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{} ({}) reached: more are refused until some finish",
                self.name,
                self.max
            );
        }
        None
    }

    /// How many places are held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// How the refusal names the cap: `maxConnections (16384)`.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.max)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A cap shared fairly among callers (an upstream's `maxInFlight` among its clients): one
/// caller alone may hold all but a quarter of it, so that the next caller finds room; with
/// others holding places, each may hold an equal part.
#[derive(Debug)]
pub struct FairLimit {
    limit: Arc<Limit>,
    by_caller: std::sync::Mutex<hashbrown::HashMap<u64, usize>>,
}

/// Why a [`FairLimit`] refused a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfair {
    /// Every place is held.
    Full,
    /// The caller holds its share (this many) while others want theirs.
    OverShare(usize),
}

/// One caller's place in a [`FairLimit`]; dropping it gives the place back.
#[derive(Debug)]
pub struct FairHeld {
    _held: Held,
    limit: Arc<FairLimit>,
    caller: u64,
}

impl FairLimit {
    /// A cap of `max`, named `name`.
    pub fn new(name: impl Into<String>, max: usize) -> Arc<Self> {
        Arc::new(FairLimit {
            limit: Limit::new(name, max),
            by_caller: Default::default(),
        })
    }

    /// A place for `caller`, or why not.
    pub fn take(self: &Arc<Self>, caller: u64) -> Result<FairHeld, Unfair> {
        let mut by_caller = crate::sync::lock(&self.by_caller);
        let mine = by_caller.get(&caller).copied().unwrap_or(0);
        let others = by_caller.len() - usize::from(mine > 0);
        let max = self.limit.max;
        let share = match others {
            0 => max - max / 4,
            others => max / (others + 1),
        };
        let held = self.limit.take().ok_or(Unfair::Full)?;
        if mine >= share.max(1) {
            return Err(Unfair::OverShare(mine));
        }
        *by_caller.entry(caller).or_default() += 1;
        Ok(FairHeld {
            _held: held,
            limit: Arc::clone(self),
            caller,
        })
    }

    /// How many places are held now.
    pub fn held(&self) -> usize {
        self.limit.held()
    }

    /// How the refusal names the cap.
    pub fn describe(&self) -> String {
        self.limit.describe()
    }
}

impl Drop for FairHeld {
    fn drop(&mut self) {
        let mut by_caller = crate::sync::lock(&self.limit.by_caller);
        if let hashbrown::hash_map::Entry::Occupied(mut held) = by_caller.entry(self.caller) {
            *held.get_mut() -= 1;
            if *held.get() == 0 {
                held.remove();
            }
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod limits {
        use crate::limit::Limit;

        #[test]
        fn past_the_cap_nothing_is_taken_until_a_place_is_given_back() {
            let limit = Limit::new("maxThings", 2);
            let first = limit.take().unwrap();
            let _second = limit.take().unwrap();
            assert!(limit.take().is_none());
            drop(first);
            assert!(limit.take().is_some());
            assert_eq!(limit.describe(), "maxThings (2)");
        }

        #[test]
        fn one_caller_alone_leaves_a_quarter_and_callers_together_get_equal_parts() {
            use crate::limit::{FairLimit, Unfair};
            let limit = FairLimit::new("maxInFlight", 8);
            let a: Vec<_> = std::iter::from_fn(|| limit.take(1).ok()).collect();
            assert_eq!(a.len(), 6, "alone, all but a quarter");
            assert_eq!(limit.take(1).unwrap_err(), Unfair::OverShare(6));
            let b: Vec<_> = std::iter::from_fn(|| limit.take(2).ok()).collect();
            assert_eq!(b.len(), 2, "the rest, for the next caller");
            assert_eq!(limit.take(3).unwrap_err(), Unfair::Full);
            drop(a);
            // Two callers now: the first may hold half.
            let a: Vec<_> = std::iter::from_fn(|| limit.take(1).ok()).collect();
            assert_eq!(a.len(), 4);
            drop(b);
            assert_eq!(limit.held(), 4);
        }
    }
}
