//! What a 2026-07-28 upstream's `subscriptions/listen`s were acknowledged for, as the listens
//! kept open to it ([`super::supervision`]) learn it: a client's `resources/subscribe` is
//! answered once the upstream listens for that URI, so that a change the client causes right
//! after is not missed.

use crate::sync::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How long a new listen's acknowledgement is waited for before the old one is let go anyway
/// (a server that never acknowledges would otherwise hold two listens open), and a client's
/// subscription for the listen that covers it.
pub(super) const ACK_PATIENCE: Duration = Duration::from_secs(10);

/// An upstream's listens: the acknowledgements it sent (`notifications/subscriptions/
/// acknowledged`; each listen gets exactly one, first, so when as many came as listens were
/// opened, the newest is acknowledged), and the URIs the newest acknowledged one covers.
#[derive(Debug, Default)]
pub(super) struct Listening {
    acks: AtomicU64,
    covered: Mutex<Vec<String>>,
    changed: event_listener::Event,
}

impl Listening {
    /// One more acknowledgement.
    pub(super) fn heard(&self) {
        self.acks.fetch_add(1, Ordering::AcqRel);
        self.changed.notify(usize::MAX);
    }

    /// How many came.
    pub(super) fn acks(&self) -> u64 {
        self.acks.load(Ordering::Acquire)
    }

    /// Waits until at least `count` acknowledgements came.
    pub(super) async fn reach(&self, count: u64) {
        self.until(|| self.acks() >= count).await
    }

    /// The newest acknowledged listen covers `uris`.
    pub(super) fn cover(&self, uris: Vec<String>) {
        *lock(&self.covered) = uris;
        self.changed.notify(usize::MAX);
    }

    /// Whether a listen covers `uri` within `patience` (a server that never acknowledges, or
    /// refuses to listen, is not waited for longer).
    pub(super) async fn covers(&self, uri: &str, patience: Duration) -> bool {
        let covered = || lock(&self.covered).iter().any(|u| u == uri);
        smol::future::or(
            async {
                self.until(covered).await;
                true
            },
            async {
                smol::Timer::after(patience).await;
                false
            },
        )
        .await
    }

    async fn until(&self, holds: impl Fn() -> bool) {
        loop {
            let listener = self.changed.listen();
            if holds() {
                return;
            }
            listener.await;
        }
    }
}
