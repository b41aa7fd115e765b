//! A cancellation signal that many tasks can wait on and anyone holding it can fire.
//!
//! A flag and an [`Event`]: firing sets the flag and wakes every waiter; firing twice is
//! harmless. Every request makes one, so it costs one allocation, plus the event's list only if
//! somebody waits (a channel, the obvious alternative, costs several, and more when dropped).

use event_listener::{Event, EventListener};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// A cloneable cancellation signal.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<Signal>);

#[derive(Debug, Default)]
struct Signal {
    fired: AtomicBool,
    /// Whether the owner fired it (the admin socket), not the request's own client: a request
    /// its client cancelled ends without an answer, one the owner cancelled is answered so.
    by_owner: AtomicBool,
    waiters: Event,
}

impl Cancel {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Fires the signal; every waiter wakes.
    pub fn cancel(&self) {
        if !self.0.fired.swap(true, Ordering::AcqRel) {
            self.0.waiters.notify(usize::MAX);
        }
    }

    /// Fires the signal as the owner's doing, unless it has fired already (a client's own
    /// cancel that came first stays the client's).
    pub fn cancel_by_owner(&self) {
        if !self.is_cancelled() {
            self.0.by_owner.store(true, Ordering::Release);
        }
        self.cancel();
    }

    /// Whether the owner fired it ([`Cancel::cancel_by_owner`]).
    pub fn by_owner(&self) -> bool {
        self.0.by_owner.load(Ordering::Acquire)
    }

    /// Whether the signal has fired.
    pub fn is_cancelled(&self) -> bool {
        self.0.fired.load(Ordering::Acquire)
    }

    /// Completes once the signal fires.
    pub async fn cancelled(&self) {
        while !self.is_cancelled() {
            let listener = self.0.waiters.listen();
            // Fired between the check and the listening: the notification was missed.
            if self.is_cancelled() {
                return;
            }
            listener.await;
        }
    }

    /// A guard that fires the signal when dropped: ties a request to the lifetime of whatever
    /// holds the guard (hyper drops a response future when its client goes away).
    pub fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }

    /// Runs `work` unless the signal fires first; `None` means it was cancelled.
    pub fn run<F: Future>(&self, work: F) -> Run<'_, F> {
        Run {
            cancel: self,
            listener: None,
            work,
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Cancel::run`]'s future. A struct, not an `async fn`: an `async fn` taking `work` holds
    /// it twice more (the argument, and the future it is moved into to be raced), and `work` is
    /// often an upstream exchange of kilobytes, copied on every call.
    #[derive(Debug)]
    pub struct Run<'a, F> {
        cancel: &'a Cancel,
        listener: Option<EventListener>,
        #[pin]
        work: F,
    }
}

impl<F: Future> Future for Run<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The work first: finished work is not thrown away because the signal fired as well.
        if let Poll::Ready(out) = this.work.poll(cx) {
            return Poll::Ready(Some(out));
        }
        loop {
            if this.cancel.is_cancelled() {
                return Poll::Ready(None);
            }
            match this.listener {
                Some(listener) => {
                    ready!(Pin::new(listener).poll(cx));
                    *this.listener = None;
                }
                // Checked again before waiting: fired between the check and the listening, the
                // notification would be missed.
                None => *this.listener = Some(this.cancel.0.waiters.listen()),
            }
        }
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
                crate::runtime::spawn(async move { other.cancel() }).detach();
                let outcome = cancel.run(smol::future::pending::<()>()).await;
                assert_eq!(outcome, None);
                assert!(cancel.is_cancelled());
            });
        }

        #[test]
        fn a_fired_signal_stays_fired_and_firing_again_is_harmless() {
            smol::block_on(async {
                let cancel = Cancel::new();
                cancel.cancel();
                cancel.cancel();
                cancel.cancelled().await;
                assert!(cancel.clone().is_cancelled());
            });
        }
    }
}
