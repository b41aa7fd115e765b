//! Who cancelled a request decides what its client hears. Its own client (`notifications/
//! cancelled`, a closed stream or connection) asked for no answer, and gets none, as the
//! specification says; the owner (`mcpx-tui`, the admin socket, later the web console) cancelled
//! a request its client is still waiting on, which gets one error saying so
//! ([`CANCELLED_BY_OWNER`]) on the route it listens on. One that finished while the cancel was
//! on its way gets its real answer, never both.

use super::{Gateway, RequestContext};
use crate::failure::Failure;
use crate::jsonrpc::{ErrorObject, Id, Response, CANCELLED_BY_OWNER};
use serde_json::json;

/// Whether `response` is the answer to a request the owner cancelled.
pub(super) fn is_owners(response: &Response) -> bool {
    matches!(&response.outcome, Err(e) if e.code == CANCELLED_BY_OWNER)
}

impl Gateway {
    /// What a request's client is sent, once its work ended with `answered` (`None`: cancelled
    /// before it finished): nothing when its own client cancelled it; its real answer when it
    /// finished first; and one error saying so when the owner cancelled it, to the id (and
    /// naming what it asked for, if not resolved yet) that `noted` gives.
    pub(super) fn answer_after(
        &self,
        context: &RequestContext,
        answered: Option<Response>,
        noted: impl FnOnce() -> Option<(Id, Option<String>)>,
    ) -> Option<Response> {
        let cancel = &context.cancel;
        let cancelled_here =
            |r: &Response| matches!(&r.outcome, Err(e) if *e == Failure::Cancelled.into());
        match answered {
            Some(response) if !cancel.is_cancelled() => Some(response),
            Some(response) if cancel.by_owner() && !cancelled_here(&response) => Some(response),
            Some(_) | None if cancel.by_owner() => {
                let (id, named) = noted()?;
                let target = context.learnt.target.get();
                let server = target.map(|t| self.supervisor.upstreams().name_of(t.owner));
                // Not resolved yet: the name it was sent with.
                let name = target.map(|t| t.exposed.clone()).or(named);
                let error = ErrorObject::new(
                    CANCELLED_BY_OWNER,
                    "Request cancelled by the owner of the gateway",
                )
                .with_data(json!({"cancelledBy": "owner", "server": server, "name": name}));
                Some(Response::error(Some(id), error))
            }
            Some(_) | None => None,
        }
    }
}
