//! A task's call before it is a task, and what it reports: the first round runs as the request's
//! own until the call is promoted (then it goes on as the task's), and what the call reports goes
//! to the request until then, and where the task's reports go after.

use super::OwnTask;
use crate::gateway::Gateway;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::outbox;
use crate::sync::lock;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Carries what a task's call reports (its progress, the server's log messages): to the request
/// that started it until the call is a task; then to a 2025-11-25 client's `session` stream
/// (its progress token holds for the task's life), or, for a 2026-07-28 client, whose tasks have
/// no progress of their own, into the task's `statusMessage`. Ends with the call.
pub(super) async fn report(
    reported: outbox::Receiver,
    task: std::sync::Weak<OwnTask>,
    request: outbox::Sender,
    session: Option<outbox::Sender>,
) {
    let mut request = Some(request);
    while let Ok(message) = reported.recv().await {
        let Some(task) = task.upgrade() else {
            return;
        };
        if task.id.get().is_some() {
            // The request was answered: its stream is let go.
            request = None;
        }
        match (&request, &session) {
            (Some(request), _) => drop(request.try_send(message)),
            (None, Some(session)) => drop(session.try_send(message)),
            (None, None) => task.note_progress(&message),
        }
    }
}

/// The first round of a task's call, run before anything else.
pub(super) type FirstRound = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;

/// A task's first round before the call is promoted, when no client knows the task: should the
/// request end first (cancelled, or its id not sealed), the task is forgotten and its call
/// cancelled, and a bridged server's task, made all the same, is cancelled once it is.
pub(super) struct Unpromoted {
    pub gateway: Arc<Gateway>,
    pub number: u64,
    pub task: Arc<OwnTask>,
    /// The round; `None` once it ended or the call was promoted.
    pub round: Option<smol::Task<Result<Value, ErrorObject>>>,
    pub promoted: bool,
}

impl Unpromoted {
    /// The round's outcome, if it ends first: the task is then nobody's.
    pub(super) async fn ended(&mut self) -> Result<Value, ErrorObject> {
        let outcome = match self.round.as_mut() {
            Some(round) => round.await,
            None => Err(ErrorObject::new(INTERNAL_ERROR, "the task's call ended")),
        };
        self.round = None;
        outcome
    }

    /// The call is a task now, its first round going on, or ended with `outcome`.
    pub(super) fn promote(mut self, outcome: Option<Result<Value, ErrorObject>>) -> FirstRound {
        self.promoted = true;
        match (self.round.take(), outcome) {
            (_, Some(outcome)) => Box::pin(async move { outcome }),
            (Some(round), None) => Box::pin(round),
            (None, None) => {
                Box::pin(async { Err(ErrorObject::new(INTERNAL_ERROR, "the task's call ended")) })
            }
        }
    }
}

impl Drop for Unpromoted {
    fn drop(&mut self) {
        if self.promoted {
            return;
        }
        lock(&self.gateway.own_tasks.held).remove(&self.number);
        self.task.cancel.cancel();
        let (Some(round), Some(bridge)) = (self.round.take(), self.task.bridge.clone()) else {
            return;
        };
        // The server's task is made whatever the round's cancellation; then it is cancelled.
        let (gateway, caller) = (Arc::clone(&self.gateway), self.task.origin.caller.clone());
        crate::runtime::spawn(async move {
            let _ = round.await;
            gateway.cancel_bridged(&bridge, &caller).await;
        })
        .detach();
    }
}
