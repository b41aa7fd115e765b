//! The daemon's cap on open connections: past it, a new connection is answered 503 and closed,
//! so one client opening sockets without end cannot starve the others of descriptors and memory.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts open connections against `limit`.
pub(super) struct Connections {
    open: AtomicUsize,
    limit: usize,
    /// Set while full, so the log says so once per episode rather than once per refusal.
    full: AtomicBool,
}

/// One admitted connection; dropping it frees the place.
pub(super) struct Admitted(Arc<Connections>);

impl Connections {
    pub(super) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Connections {
            open: AtomicUsize::new(0),
            limit,
            full: AtomicBool::new(false),
        })
    }

    /// A place for a new connection, or `None` when `limit` are open.
    pub(super) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let admitted = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.limit).then_some(open + 1)
            })
            .is_ok();
        if admitted {
            if self.full.swap(false, Ordering::Relaxed) {
                tracing::info!("below maxConnections ({}) again", self.limit);
            }
            return Some(Admitted(Arc::clone(self)));
        }
        if !self.full.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "maxConnections ({}) reached: new connections get 503 until some close",
                self.limit
            );
        }
        None
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod every_revision {
    mod http {
        use super::super::Connections;

        #[test]
        fn past_the_limit_nothing_is_admitted_until_a_connection_closes() {
            let connections = Connections::new(2);
            let first = connections.admit().unwrap();
            let _second = connections.admit().unwrap();
            assert!(connections.admit().is_none());
            drop(first);
            assert!(connections.admit().is_some());
        }
    }
}
