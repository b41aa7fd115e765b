//! A cancellation signal that many tasks can wait on and anyone holding it can fire.
//!
//! It is an `async-channel` that never carries a message: firing closes it, and every waiter's
//! `recv` then returns at once. Closing is idempotent, so firing twice is harmless.

use async_channel::{Receiver, Sender};
use std::future::Future;

/// A cloneable cancellation signal.
#[derive(Debug, Clone)]
pub struct Cancel {
    tx: Sender<()>,
    rx: Receiver<()>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel::new()
    }
}

impl Cancel {
    /// A signal that has not fired.
    pub fn new() -> Self {
        let (tx, rx) = async_channel::bounded(1);
        Cancel { tx, rx }
    }

    /// Fires the signal; every waiter wakes.
    pub fn cancel(&self) {
        self.tx.close();
    }

    /// Whether the signal has fired.
    pub fn is_cancelled(&self) -> bool {
        self.tx.is_closed()
    }

    /// Completes once the signal fires.
    pub async fn cancelled(&self) {
        // Nothing is ever sent, so `recv` only returns when the channel closes.
        let _ = self.rx.recv().await;
    }

    /// A guard that fires the signal when dropped: ties a request to the lifetime of whatever
    /// holds the guard (hyper drops a response future when its client goes away).
    pub fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }

    /// Runs `work` unless the signal fires first; `None` means it was cancelled.
    pub async fn run<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        use smol::future::FutureExt;
        async { Some(work.await) }
            .or(async {
                self.cancelled().await;
                None
            })
            .await
    }
}

/// Fires its [`Cancel`] when dropped; see [`Cancel::on_drop`].
#[derive(Debug)]
pub struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod every_revision {
    mod cancel {
        use crate::cancel::Cancel;

        #[test]
        fn firing_wakes_the_waiter_and_stops_the_work() {
            smol::block_on(async {
                let cancel = Cancel::new();
                let other = cancel.clone();
                smol::spawn(async move { other.cancel() }).detach();
                let outcome = cancel.run(smol::future::pending::<()>()).await;
                assert_eq!(outcome, None);
                assert!(cancel.is_cancelled());
            });
        }
    }
}
