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
    /// Counts the progress notifications passed back (the ledger shows it).
    pub progress_seen: Arc<AtomicU64>,
    /// How long its upstream call may go unanswered, when not the server's `timeout`: a task's
    /// call runs as long as the task lives.
    pub timeout: Option<Duration>,
    /// Who sent it: whose `[limits]` budget its calls spend.
    pub caller: Arc<crate::access::Identity>,
    /// What the core learns of it on the way, shared by every part of its work (a promoted
    /// call's rounds, a bridged task's making): what its audit line says.
    pub(super) learnt: Arc<Learnt>,
}

/// What the core learns of a request on the way, for its audit line.
#[derive(Debug, Default)]
pub(super) struct Learnt {
    /// What it resolved to ([`super::target`]), once it has: what it is observed as.
    pub target: std::sync::OnceLock<super::target::Target>,
    /// The person's own instance of a per-identity server it went to.
    pub instance: std::sync::OnceLock<Value>,
    /// What `[guardrails]` found in its result.
    pub guardrails: std::sync::OnceLock<Value>,
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
            learnt: Arc::default(),
        }
    }

    /// A part of this request's work that runs under `cancel`, reports to `outbound` and may
    /// take `timeout`: the same caller's, and what it learns is this request's (never a copy
    /// made by hand, whose findings no audit line would read).
    pub(super) fn part(
        &self,
        cancel: Cancel,
        outbound: outbox::Sender,
        timeout: Option<Duration>,
    ) -> RequestContext {
        RequestContext {
            cancel,
            outbound,
            progress_seen: Arc::clone(&self.progress_seen),
            timeout,
            caller: Arc::clone(&self.caller),
            learnt: Arc::clone(&self.learnt),
        }
    }
}
