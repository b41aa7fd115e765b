//! Logging through the gateway, for legacy clients: mcpx declares `logging`; `logging/setLevel`
//! sets the least severe level a client takes, and passes the least severe level any client
//! asked for to the upstreams that log; an upstream's `notifications/message` reaches the
//! client whose call it came during (on that call's stream: stdout, the POST's event stream),
//! else every legacy client whose level admits it (stdout, the GET stream), tagged with the
//! upstream as its `logger` ([`crate::upstream::LogSink`]). 2026-07-28 removed protocol logging:
//! modern clients get none, and mcpx's own log keeps every message either way.

use super::upstreams::Upstreams;
use super::{Client, Gateway};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::protocol::{Era, Method};
use crate::upstream::{log_severity, Caller, LOG_LEVELS};
use serde_json::{json, Value};
use std::sync::Arc;

impl Gateway {
    /// `logging/setLevel`: the client's level, and the upstreams told the least severe level
    /// any client takes (they filter at the source; mcpx filters per client).
    pub(super) fn set_log_level(
        &self,
        client: &Client,
        params: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        let level = params
            .and_then(|p| p.member("level"))
            .and_then(Value::as_str);
        let severity = level.and_then(log_severity).ok_or_else(|| {
            let levels = LOG_LEVELS.join(", ");
            ErrorObject::new(
                INVALID_PARAMS,
                format!("Invalid params: level must be one of {levels}"),
            )
        })?;
        client.set_log_level(severity);
        let least = self
            .clients
            .all()
            .iter()
            .filter(|c| c.revision().is_some_and(|r| r.era() == Era::Legacy))
            .map(|c| c.log_level())
            .min()
            .unwrap_or(severity);
        let supervisor = Arc::clone(&self.supervisor);
        crate::runtime::spawn(async move {
            let upstreams = supervisor.upstreams();
            upstreams.tell_log_level(LOG_LEVELS[least as usize]).await
        })
        .detach();
        Ok(json!({}))
    }
}

impl Upstreams {
    /// Sends `logging/setLevel` to every serving legacy upstream that declared `logging`.
    pub(super) async fn tell_log_level(&self, level: &str) {
        for upstream in self.all() {
            let logs = upstream.link.with_handshake(|h| {
                h.is_some_and(|h| {
                    h.revision.era() == Era::Legacy && h.capabilities.member("logging").is_some()
                })
            });
            let connection = upstream.link.connection();
            if let (true, Some(connection)) = (logs, connection) {
                let params = Some(json!({ "level": level }));
                let cancel = crate::cancel::Cancel::new();
                let told = connection
                    .request(
                        Method::LoggingSetLevel.as_str(),
                        params,
                        &cancel,
                        Caller::default(),
                    )
                    .await;
                if let Err(e) = told {
                    tracing::debug!(server = %upstream.name, "logging/setLevel refused: {}", e.message);
                }
            }
        }
    }
}
