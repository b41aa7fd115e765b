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
    }
}
