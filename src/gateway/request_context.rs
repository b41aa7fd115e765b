//! What a transport gives the core along with each request, and what the core learns of it
//! on the way (what it resolved to, the instance it went to, what the guardrails found) for
//! its audit line.

use crate::cancel::Cancel;
use crate::outbox;
use serde_json::Value;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// What a transport gives the core along with each request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Fires when the client cancels the request (or disconnects, where that is cancellation).
    pub cancel: Cancel,
    /// Messages that belong to this request: progress, a listen stream's notifications, and
    /// requests carried to a legacy client on an upstream's behalf.
    pub outbound: outbox::Sender,
    /// Counts the progress notifications passed back (the registry shows it).
    pub progress_seen: Arc<AtomicU64>,
    /// How long its upstream call may go unanswered, when not the server's `timeout`: a task's
    /// call runs as long as the task lives.
    pub timeout: Option<Duration>,
    /// Who sent it: whose `[limits]` budget its calls spend.
    pub caller: Arc<crate::access::Identity>,
    /// What it resolved to ([`super::target`]), once it has: what it is observed as.
    pub(super) target: std::sync::OnceLock<super::target::Target>,
    /// The person's own instance of a per-identity server it went to, for its audit line.
    pub(super) instance: std::sync::OnceLock<Value>,
    /// What `[guardrails]` found in its result, for its audit line.
    pub(super) guardrails: std::sync::OnceLock<Value>,
}

impl RequestContext {
    /// A request cancelled by `cancel`, its own messages on `outbound`, sent by `caller`, with
    /// its server's `timeout`.
    pub fn new(
        cancel: Cancel,
        outbound: outbox::Sender,
        caller: Arc<crate::access::Identity>,
    ) -> RequestContext {
        RequestContext {
            cancel,
            outbound,
            progress_seen: Arc::default(),
            timeout: None,
            caller,
            target: std::sync::OnceLock::new(),
            instance: std::sync::OnceLock::new(),
            guardrails: std::sync::OnceLock::new(),
        }
    }
}
