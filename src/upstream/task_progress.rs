//! The progress of a 2025-11-25 server's tasks, past the request that made them. The task goes on
//! reporting progress under that request's token until it ends (the specification keeps the token
//! valid for the task's life), so a request that made a task leaves its progress sink in place,
//! pointed at the client's session stream (its own has ended), until the server says the task
//! ended (in a `tasks/*` answer or `notifications/tasks/status`) or its TTL passes.

use super::ProgressSink;
use crate::json::Member;
use crate::protocol::{task, Notice};
use crate::sync::lock;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a task's progress is kept when the server set no TTL.
const LONGEST: Duration = Duration::from_secs(24 * 60 * 60);

/// The progress sinks of live tasks, by the server's task id.
#[derive(Debug, Default)]
pub struct KeptProgress(Mutex<HashMap<String, Kept>>);

#[derive(Debug)]
struct Kept {
    /// The token the server reports the task's progress under (mcpx's own).
    token: String,
    sink: ProgressSink,
    until: Instant,
}

impl KeptProgress {
    /// A request ended: `method`, about the task `about` names (its params' `taskId`), with
    /// progress to `sink` under `token`, and its answer when it succeeded. A task it made keeps
    /// the sink, if the sink says where to; a task it shows ended drops its own.
    pub fn request_ended(
        &self,
        method: &str,
        about: Option<&str>,
        sink: Option<(String, ProgressSink)>,
        answered: Option<&Value>,
    ) {
        // Most requests neither make a task nor ask about one: they cost no lock.
        let keeps = sink.as_ref().is_some_and(|(_, sink)| sink.after.is_some());
        if !keeps && about.is_none() {
            return;
        }
        let mut kept = lock(&self.0);
        let now = Instant::now();
        kept.retain(|_, k| k.until > now);
        // `tasks/result` answers only once the task has ended.
        let ended = answered.and_then(ended_in);
        let ended = ended.or(about.filter(|_| method == "tasks/result" && answered.is_some()));
        if let Some(id) = ended {
            kept.remove(id);
        }
        let Some((token, mut sink)) = sink else {
            return;
        };
        let made = answered.and_then(created);
        let (Some((id, ttl)), Some(after)) = (made, sink.after.take()) else {
            return;
        };
        sink.tx = after;
        let until = now + ttl.min(LONGEST);
        kept.insert(id.to_owned(), Kept { token, sink, until });
    }

    /// Progress that no request in flight takes: forwarded if a kept task's (then `true`).
    pub fn forward(&self, token: &str, params: Value) -> bool {
        let kept = lock(&self.0);
        let Some(task) = kept
            .values()
            .find(|k| k.token == token && k.until > Instant::now())
        else {
            return false;
        };
        task.sink.forward(params);
        true
    }

    /// The server's notification `method`: a status that ends a task drops its sink.
    pub fn heard(&self, method: &str, params: &Value) {
        if method == Notice::TasksStatus {
            if let Some(id) = ended_in(params) {
                lock(&self.0).remove(id);
            }
        }
    }
}

/// The task a `tasks/*` request names (its `taskId`), for [`KeptProgress::request_ended`].
pub fn named_by<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    method.strip_prefix("tasks/")?;
    params?.member("taskId")?.as_str()
}

/// The task a 2025-11-25 `tools/call` made, and how long it lives.
fn created(result: &Value) -> Option<(&str, Duration)> {
    let made = result.member("task")?;
    let id = made.member("taskId")?.as_str()?;
    let ttl = made.member("ttl").and_then(Value::as_u64);
    Some((id, ttl.map_or(LONGEST, Duration::from_millis)))
}

/// The task a message of the server's (a `tasks/*` answer, a status notification) says ended.
fn ended_in(message: &Value) -> Option<&str> {
    let status = message.member("status")?.as_str()?;
    task::is_terminal(status).then_some(())?;
    message.member("taskId")?.as_str()
}

#[cfg(test)]
mod v2025_11_25 {
    mod tasks {
        use crate::outbox;
        use crate::protocol::Revision;
        use crate::upstream::task_progress::KeptProgress;
        use crate::upstream::ProgressSink;
        use serde_json::json;

        /// A sink is kept for the task its request made, pointed where its `after` says, and
        /// dropped when the task is seen ended; a request that made no task, or whose sink says
        /// nowhere to go after it, keeps nothing.
        #[test]
        fn a_tasks_progress_is_kept_until_it_ends() {
            let (request, _request_rx) = outbox::bounded(8);
            let (session, session_rx) = outbox::bounded(8);
            let sink = |after: Option<outbox::Sender>| ProgressSink {
                token: json!("p1"),
                revision: Revision::V2025_11_25,
                tx: request.clone(),
                seen: Default::default(),
                after,
                tasks: None,
                screen: None,
            };
            let kept = KeptProgress::default();
            let made = json!({"task": {"taskId": "t1", "status": "working", "ttl": 60000}});
            kept.request_ended(
                "tools/call",
                None,
                Some(("mcpx-1".into(), sink(None))),
                Some(&made),
            );
            assert!(!kept.forward("mcpx-1", json!({"progress": 1})));
            let plain = json!({"content": []});
            let after = Some(session.clone());
            kept.request_ended(
                "tools/call",
                None,
                Some(("mcpx-2".into(), sink(after.clone()))),
                Some(&plain),
            );
            assert!(!kept.forward("mcpx-2", json!({"progress": 1})));
            kept.request_ended(
                "tools/call",
                None,
                Some(("mcpx-3".into(), sink(after))),
                Some(&made),
            );
            assert!(kept.forward("mcpx-3", json!({"progress": 1})));
            assert!(session_rx.try_recv().is_some());
            kept.heard(
                "notifications/tasks/status",
                &json!({"taskId": "t1", "status": "working"}),
            );
            assert!(kept.forward("mcpx-3", json!({"progress": 2})));
            kept.request_ended("tasks/result", Some("t1"), None, Some(&plain));
            assert!(!kept.forward("mcpx-3", json!({"progress": 3})));
        }
    }
}
