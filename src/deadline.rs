//! Timeouts that almost never fire, kept off the reactor.
//!
//! Arming an async-io `Timer` wakes the reactor's thread every time (an eventfd write, a context
//! switch, the timerfd set again), and on the request path that costs more than the request's
//! own work: every keep-alive request arms hyper's header-read timeout, every upstream call its
//! timeout, and each is disarmed a moment later. Here those deadlines share one table and one
//! watcher task holding a single reactor `Timer`, set for the earliest deadline. Arming a
//! deadline no earlier than that one (the usual case: equal timeouts armed one after another)
//! only touches the table; an earlier one tells the watcher to set its timer again.

use crate::sync::lock;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

/// The timeout of a request that stays open for as long as its caller holds it (a listen, an
/// event stream): a hundred years.
pub const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `work`'s outcome, or "no answer within `limit`" once that passed first. For the rare,
/// long waits on another party (a handshake, a provider's keys): an async-io timer each.
pub async fn within<T>(
    limit: Duration,
    work: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    smol::future::or(work, async {
        smol::Timer::after(limit).await;
        Err(format!("no answer within {limit:?}"))
    })
    .await
}

/// A future that completes at its deadline.
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    /// Its place in the table, once polled.
    entry: Option<Key>,
}

/// A deadline and a number that tells apart deadlines at the same instant.
type Key = (Instant, u64);

/// Completes `duration` from now.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(after(duration))
}

/// The instant `duration` from now; a configured duration too long for the clock (`"1000000y"`)
/// is a century, rather than a panic.
pub fn after(duration: Duration) -> Instant {
    let now = Instant::now();
    let century = Duration::from_secs(100 * 365 * 24 * 60 * 60);
    now.checked_add(duration)
        .or_else(|| now.checked_add(century))
        .unwrap_or(now)
}

/// The wall-clock time `duration` after `then`, at most a century (FOREVER) later: a duration
/// from outside (a `ttlMs` of 2^64-1, a configured "1000000y") is neither past the clock's end
/// nor a date past year 9999, which RFC 3339 cannot write.
pub fn wall_after(then: SystemTime, duration: Duration) -> SystemTime {
    then.checked_add(duration.min(FOREVER)).unwrap_or(then)
}

/// Completes at `deadline`.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        entry: None,
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            if let Some(entry) = self.entry.take() {
                table().forget(entry);
            }
            return Poll::Ready(());
        }
        match self.entry {
            Some(entry) => table().update(entry, cx.waker()),
            None => self.entry = Some(table().arm(self.deadline, cx.waker())),
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            table().forget(entry);
        }
    }
}

/// The deadlines armed, and the watcher's.
struct Table {
    state: Mutex<State>,
    /// Tells the watcher that a deadline earlier than its timer's was armed.
    earlier: event_listener::Event,
}

#[derive(Default)]
struct State {
    waiting: BTreeMap<Key, Waker>,
    next: u64,
    /// When the watcher's timer fires; `None` while the watcher waits for a first deadline.
    watched: Option<Instant>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    static WATCHER: std::sync::Once = std::sync::Once::new();
    let table = TABLE.get_or_init(|| Table {
        state: Mutex::default(),
        earlier: event_listener::Event::new(),
    });
    WATCHER.call_once(|| crate::runtime::spawn(table.watch()).detach());
    table
}

impl Table {
    fn arm(&self, deadline: Instant, waker: &Waker) -> Key {
        let mut state = lock(&self.state);
        let key = (deadline, state.next);
        state.next += 1;
        state.waiting.insert(key, waker.clone());
        let earlier = state.watched.is_none_or(|watched| deadline < watched);
        if earlier {
            state.watched = Some(deadline);
            drop(state);
            self.earlier.notify(1);
        }
        key
    }

    fn update(&self, key: Key, waker: &Waker) {
        if let Some(held) = lock(&self.state).waiting.get_mut(&key) {
            if !held.will_wake(waker) {
                held.clone_from(waker);
            }
        }
    }

    fn forget(&self, key: Key) {
        lock(&self.state).waiting.remove(&key);
    }

    /// Wakes every sleep whose deadline has passed; the earliest deadline left, which the
    /// watcher's timer is then set for.
    fn fire(&self, now: Instant) -> Option<Instant> {
        let mut state = lock(&self.state);
        let later = state.waiting.split_off(&(now, u64::MAX));
        let due = std::mem::replace(&mut state.waiting, later);
        state.watched = state.waiting.keys().next().map(|(at, _)| *at);
        let watched = state.watched;
        drop(state);
        for (_, waker) in due {
            waker.wake();
        }
        watched
    }

    /// Sleeps until the earliest deadline (or until an earlier one is armed), wakes what is due,
    /// and again.
    async fn watch(&'static self) {
        loop {
            // Listening before reading the table: an earlier deadline armed in between is heard.
            let earlier = self.earlier.listen();
            match self.fire(Instant::now()) {
                Some(at) => {
                    smol::future::or(
                        async {
                            smol::Timer::at(at).await;
                        },
                        earlier,
                    )
                    .await
                }
                None => earlier.await,
            }
        }
    }
}

/// hyper's timer (the header-read timeout of each request on a kept-alive connection) on the
/// same table.
#[derive(Debug, Clone, Copy)]
pub struct HyperTimer;

impl hyper::rt::Sleep for Sleep {}

impl hyper::rt::Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(sleep(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(sleep_until(deadline))
    }
}

#[cfg(test)]
mod every_revision {
    mod deadline {
        use crate::deadline::{after, sleep, sleep_until, table};
        use crate::sync::lock;
        use std::time::{Duration, Instant, SystemTime};

        /// A duration from outside of 2^64-1 ms is a century of the wall clock at most: a time
        /// RFC 3339 can write, never a panic.
        #[test]
        fn a_wall_clock_time_from_outside_is_a_century_at_most() {
            let now = SystemTime::now();
            let far = crate::deadline::wall_after(now, Duration::from_millis(u64::MAX));
            assert_eq!(far.duration_since(now).unwrap(), crate::deadline::FOREVER);
            let soon = crate::deadline::wall_after(now, Duration::from_secs(5));
            assert_eq!(soon.duration_since(now).unwrap(), Duration::from_secs(5));
            assert!(humantime::format_rfc3339_seconds(far)
                .to_string()
                .starts_with("21"));
        }

        /// A configured duration too long for the clock is a long wait, not a panic.
        #[test]
        fn a_duration_past_the_clocks_end_is_a_century() {
            let far = after(Duration::MAX);
            assert!(far > Instant::now() + Duration::from_secs(50 * 365 * 24 * 60 * 60));
            drop(sleep(Duration::MAX));
        }

        #[test]
        fn sleeps_end_at_their_deadlines_in_order_whatever_order_they_are_armed_in() {
            smol::block_on(async {
                let start = Instant::now();
                let long = crate::runtime::spawn(async move {
                    sleep(Duration::from_millis(300)).await;
                    start.elapsed()
                });
                // Armed after the long one and earlier than it: the watcher must wake for it.
                smol::Timer::after(Duration::from_millis(20)).await;
                sleep(Duration::from_millis(50)).await;
                let short = start.elapsed();
                assert!(short >= Duration::from_millis(70), "{short:?}");
                assert!(short < Duration::from_millis(250), "{short:?}");
                let long = long.await;
                assert!(long >= Duration::from_millis(300), "{long:?}");
                assert!(long < Duration::from_millis(1000), "{long:?}");
            });
        }

        #[test]
        fn a_dropped_sleep_is_forgotten_and_a_past_deadline_is_ready_at_once() {
            smol::block_on(async {
                let mut armed = Box::pin(sleep(Duration::from_secs(60)));
                assert!(smol::future::poll_once(armed.as_mut()).await.is_none());
                let key = armed.entry.unwrap();
                drop(armed);
                assert!(!lock(&table().state).waiting.contains_key(&key));
                sleep_until(Instant::now() - Duration::from_secs(1)).await;
                let many: Vec<_> = (0..100)
                    .map(|i| crate::runtime::spawn(sleep(Duration::from_millis(i % 7))))
                    .collect();
                for sleeping in many {
                    sleeping.await;
                }
            });
        }
    }
}
