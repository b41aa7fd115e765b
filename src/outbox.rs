//! The queue of what goes to one client besides answers: notifications, and mcpx's own requests
//! (an upstream's question carried to a legacy client).
//!
//! It is bounded: a client that stops reading must not grow the daemon while an upstream keeps
//! talking. When it is full, what matters least gives way, so that what a client reads once it
//! catches up is still true: a newer progress report replaces the older one for the same token
//! still waiting, a log message is dropped (and counted; the count is told as one warning once
//! there is room), and a notification identical to one waiting (a `list_changed`, an `updated`)
//! is absorbed by it. What cannot give way (another notification when nothing can be dropped)
//! marks the queue overflowed: its transport then ends the stream or connection, as it does for a
//! client too far behind on a GET stream. A request of mcpx's own waits for room; how many of those
//! can wait is capped where they are made.

use crate::cancel::Cancel;
use crate::jsonrpc::{Notification, Outbound};
use crate::protocol::Notice;
use crate::sync::lock;
use event_listener::Event;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How many messages a client's queue holds: enough for any client that reads, little enough
/// that one that does not costs at most a few hundred kilobytes.
pub const CAPACITY: usize = 256;

/// A bounded queue of `capacity` messages, and its two ends.
pub fn bounded(capacity: usize) -> (Sender, Receiver) {
    let shared = Arc::new(Shared {
        capacity: capacity.max(1),
        state: Mutex::default(),
        senders: AtomicUsize::new(1),
        queued: Event::new(),
        room: Event::new(),
        overflowed: Cancel::new(),
    });
    (Sender(Arc::clone(&shared)), Receiver(shared))
}

#[derive(Debug)]
struct Shared {
    capacity: usize,
    state: Mutex<State>,
    senders: AtomicUsize,
    /// Wakes the receiver: a message was queued, or the last sender went.
    queued: Event,
    /// Wakes a request waiting for room, or for the receiver to go.
    room: Event,
    overflowed: Cancel,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Outbound>,
    /// Log messages dropped since the last count was told.
    dropped_logs: u64,
    receiver_gone: bool,
}

/// How a full queue took a message.
enum Room {
    /// Something that mattered less gave way.
    Made,
    /// An identical message already waits: the new one adds nothing.
    Absorbed,
}

/// Why a message was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotQueued {
    /// Nobody reads the queue any more.
    Closed,
    /// The queue was full and the message was dropped (a log message, or a progress report
    /// with nothing older to replace).
    Dropped,
    /// The queue was full of what cannot be dropped: it is marked overflowed.
    Overflowed,
}

/// The sending end; cloned for every producer.
#[derive(Debug)]
pub struct Sender(Arc<Shared>);

impl Clone for Sender {
    fn clone(&self) -> Self {
        self.0.senders.fetch_add(1, Ordering::Relaxed);
        Sender(Arc::clone(&self.0))
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if self.0.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.queued.notify(usize::MAX);
        }
    }
}

impl Sender {
    /// A sender whose messages go nowhere: for a client that has no stream of its own.
    pub fn nowhere() -> Sender {
        bounded(1).0
    }

    /// Queues a notification without waiting, making room as the module says when full.
    pub fn try_send(&self, message: impl Into<Outbound>) -> Result<(), NotQueued> {
        let message = message.into();
        let shared = &self.0;
        let mut state = lock(&shared.state);
        if state.receiver_gone {
            return Err(NotQueued::Closed);
        }
        if state.queue.len() >= shared.capacity {
            match state.make_room(&message) {
                Ok(Room::Made) => {}
                Ok(Room::Absorbed) => return Ok(()),
                Err(NotQueued::Overflowed) => {
                    shared.overflowed.cancel();
                    return Err(NotQueued::Overflowed);
                }
                Err(refused) => return Err(refused),
            }
        }
        state.queue.push_back(message);
        drop(state);
        shared.queued.notify(1);
        Ok(())
    }

    /// Queues a request of mcpx's own, waiting for room; fails once nobody reads the queue.
    pub async fn send(&self, message: impl Into<Outbound>) -> Result<(), NotQueued> {
        let message = message.into();
        let shared = &self.0;
        loop {
            let listener = shared.room.listen();
            {
                let mut state = lock(&shared.state);
                if state.receiver_gone {
                    return Err(NotQueued::Closed);
                }
                if state.queue.len() < shared.capacity {
                    state.queue.push_back(message);
                    drop(state);
                    shared.queued.notify(1);
                    return Ok(());
                }
            }
            listener.await;
        }
    }
}

impl State {
    /// Makes room for `message` in a full queue, or says why not.
    fn make_room(&mut self, message: &Outbound) -> Result<Room, NotQueued> {
        let Outbound::Notification(notification) = message else {
            return Err(NotQueued::Overflowed);
        };
        if notification.method == Notice::Message {
            self.dropped_logs += 1;
            return Err(NotQueued::Dropped);
        }
        if let Some(token) = progress_token(notification) {
            let older = self.queue.iter().position(|queued| match queued {
                Outbound::Notification(queued) => progress_token(queued) == Some(token),
                Outbound::Request(_) => false,
            });
            if let Some(older) = older.or_else(|| self.oldest_log()) {
                self.forget(older);
                return Ok(Room::Made);
            }
            return Err(NotQueued::Dropped);
        }
        if self.queue.iter().any(|queued| queued == message) {
            return Ok(Room::Absorbed);
        }
        match self.oldest_log() {
            Some(log) => {
                self.forget(log);
                Ok(Room::Made)
            }
            None => Err(NotQueued::Overflowed),
        }
    }

    fn oldest_log(&self) -> Option<usize> {
        self.queue.iter().position(
            |queued| matches!(queued, Outbound::Notification(n) if n.method == Notice::Message),
        )
    }

    /// Removes the message at `at`, counting it if it was a log message.
    fn forget(&mut self, at: usize) {
        if let Some(Outbound::Notification(n)) = self.queue.remove(at) {
            if n.method == Notice::Message {
                self.dropped_logs += 1;
            }
        }
    }

    /// Takes the next message; once there is room, the count of dropped log messages is queued
    /// as one warning of mcpx's own.
    fn take(&mut self, capacity: usize) -> Option<Outbound> {
        let next = self.queue.pop_front()?;
        if self.dropped_logs > 0 && self.queue.len() < capacity {
            let told = std::mem::take(&mut self.dropped_logs);
            self.queue.push_back(dropped_logs_warning(told).into());
        }
        Some(next)
    }
}

fn progress_token(notification: &Notification) -> Option<&Value> {
    if notification.method != Notice::Progress {
        return None;
    }
    notification.params.as_ref()?.get("progressToken")
}

/// The warning that stands for `count` log messages a client did not read in time.
fn dropped_logs_warning(count: u64) -> Notification {
    Notification::new(
        Notice::Message,
        json!({
            "level": "warning",
            "logger": "mcpx",
            "data": format!("mcpx dropped {count} log message(s) that this client was not reading fast enough"),
        }),
    )
}

/// The receiving end: one per queue.
#[derive(Debug)]
pub struct Receiver(Arc<Shared>);

/// The queue has no message and never will: every sender is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

impl Receiver {
    /// The next message, waiting for one; `Err` once every sender is gone and the queue is empty.
    pub async fn recv(&self) -> Result<Outbound, Closed> {
        loop {
            let listener = self.0.queued.listen();
            if let Some(message) = self.try_recv() {
                return Ok(message);
            }
            if self.0.senders.load(Ordering::Acquire) == 0 {
                return Err(Closed);
            }
            listener.await;
        }
    }

    /// The next message if one waits.
    pub fn try_recv(&self) -> Option<Outbound> {
        let next = lock(&self.0.state).take(self.0.capacity);
        if next.is_some() {
            self.0.room.notify(1);
        }
        next
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        lock(&self.0.state).queue.is_empty()
    }

    /// Fires when a message could not be queued and nothing could give way: the transport ends
    /// this client's stream or connection.
    pub fn overflowed(&self) -> &Cancel {
        &self.0.overflowed
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.receiver_gone = true;
        state.queue.clear();
        drop(state);
        self.0.room.notify(usize::MAX);
    }
}

#[cfg(test)]
mod every_revision {
    mod outbox {
        use crate::jsonrpc::{Id, Notification, Outbound, Request};
        use crate::outbox::{bounded, NotQueued};
        use serde_json::json;

        fn progress(token: &str, step: u64) -> Notification {
            Notification::new(
                "notifications/progress",
                json!({"progressToken": token, "progress": step}),
            )
        }

        fn log(n: u64) -> Notification {
            Notification::new("notifications/message", json!({"level": "info", "data": n}))
        }

        fn drain(rx: &crate::outbox::Receiver) -> Vec<Outbound> {
            std::iter::from_fn(|| rx.try_recv()).collect()
        }

        #[test]
        fn a_full_queue_keeps_only_the_latest_progress_per_token() {
            let (tx, rx) = bounded(4);
            for step in 0..1000 {
                tx.try_send(progress("a", step)).unwrap();
                tx.try_send(progress("b", step)).unwrap();
            }
            let left = drain(&rx);
            assert_eq!(left.len(), 4);
            assert!(left.contains(&progress("a", 999).into()));
            assert!(left.contains(&progress("b", 999).into()));
        }

        #[test]
        fn dropped_log_messages_are_counted_and_told_once_there_is_room() {
            let (tx, rx) = bounded(3);
            for n in 0..10 {
                let sent = tx.try_send(log(n));
                assert_eq!(sent.is_ok(), n < 3, "{n}: {sent:?}");
            }
            let first = rx.try_recv().unwrap();
            assert_eq!(first, log(0).into());
            let left = drain(&rx);
            let Outbound::Notification(warning) = left.last().unwrap() else {
                panic!("{left:?}")
            };
            assert_eq!(warning.params.as_ref().unwrap()["logger"], "mcpx");
            let said = warning.params.as_ref().unwrap()["data"].as_str().unwrap();
            assert!(said.contains("dropped 7 log"), "{said}");
            assert_eq!(left.len(), 3, "{left:?}");
        }

        #[test]
        fn a_repeat_of_a_waiting_notification_is_absorbed() {
            let (tx, rx) = bounded(2);
            let changed = Notification::new("notifications/tools/list_changed", json!({}));
            tx.try_send(changed.clone()).unwrap();
            tx.try_send(progress("a", 1)).unwrap();
            for _ in 0..100 {
                tx.try_send(changed.clone()).unwrap();
            }
            assert_eq!(drain(&rx).len(), 2);
            assert!(!rx.overflowed().is_cancelled());
        }

        #[test]
        fn what_cannot_give_way_marks_the_queue_overflowed() {
            let (tx, rx) = bounded(2);
            for uri in ["a", "b"] {
                tx.try_send(Notification::new(
                    "notifications/resources/updated",
                    json!({ "uri": uri }),
                ))
                .unwrap();
            }
            let third = Notification::new("notifications/resources/updated", json!({"uri": "c"}));
            assert_eq!(tx.try_send(third), Err(NotQueued::Overflowed));
            assert!(rx.overflowed().is_cancelled());
        }

        #[test]
        fn a_request_waits_for_room_and_fails_once_nobody_reads() {
            let (tx, rx) = bounded(1);
            tx.try_send(progress("a", 1)).unwrap();
            let request = Request {
                id: Id::String("mcpx-1".into()),
                method: "roots/list".into(),
                params: None,
            };
            let waiting = crate::runtime::spawn({
                let tx = tx.clone();
                let request = request.clone();
                async move { tx.send(Outbound::Request(request)).await }
            });
            smol::block_on(async {
                assert_eq!(rx.recv().await.unwrap(), progress("a", 1).into());
                waiting.await.unwrap();
                assert_eq!(rx.recv().await.unwrap(), Outbound::Request(request.clone()));
            });
            tx.try_send(progress("a", 2)).unwrap();
            drop(rx);
            let sent = smol::block_on(tx.send(Outbound::Request(request)));
            assert_eq!(sent, Err(NotQueued::Closed));
        }

        #[test]
        fn the_receiver_ends_when_every_sender_is_gone() {
            let (tx, rx) = bounded(4);
            tx.try_send(log(1)).unwrap();
            let other = tx.clone();
            drop(tx);
            drop(other);
            smol::block_on(async {
                assert!(rx.recv().await.is_ok());
                assert!(rx.recv().await.is_err());
            });
        }
    }
}
