//! Posting to a remote server from a background task, outside any call: a notification
//! nothing answers, over the same pool and session as the calls.

use super::Pool;
use crate::jsonrpc::{self, Notification};
use crate::upstream::auth::bearer;
use http::{HeaderMap, Method};
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::Arc;

/// What a background task needs to POST to the same server.
pub(super) struct Detached {
    pub(super) name: String,
    pub(super) pool: Arc<Pool>,
    /// A legacy server's session and revision headers, as the calls send them.
    pub(super) legacy: HeaderMap,
    pub(super) token: Option<String>,
}

impl Detached {
    /// POSTs a notification; a failure is only logged, as nothing answers a notification.
    pub(super) async fn notify(&self, method: &str, params: Option<Value>) {
        let notification = Notification {
            method: method.to_owned(),
            params,
        }
        .to_value();
        if let Err(e) = self.post(&notification, HeaderMap::new()).await {
            tracing::debug!(server = %self.name, "notification not delivered: {e}");
        }
    }

    pub(super) async fn post(&self, message: &Value, mut extra: HeaderMap) -> Result<(), String> {
        for (name, value) in &self.legacy {
            extra.insert(name, value.clone());
        }
        bearer(&mut extra, self.token.as_deref())?;
        let mut sender = self.pool.detached().await?;
        let request = self
            .pool
            .build(Method::POST, jsonrpc::to_body(message), extra)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("{}: {e}", self.name))?;
        let _ = response.into_body().collect().await;
        Ok(())
    }
}
