//! Logging in from the editor: a call to a server that needs a login, from a client that
//! declared URL-mode elicitation, logs in on the way instead of failing.
//!
//! mcpx runs the same flow as `mcpx auth login`, but instead of opening a browser it asks the
//! client to open the authorization URL: an `elicitation/create` in `url` mode, carried like any
//! upstream question (a request to a legacy client, an `InputRequiredResult` for a modern one,
//! whose retry says the person is done). The redirect comes back to mcpx's own loopback
//! listener; mcpx keeps the tokens, tells a 2025-11-25 client the elicitation is complete, starts
//! the server with them, and the call goes on. One login runs per server: a second call waits
//! for it and goes on with its tokens.

use super::incoming::Incoming;
use super::upstreams::Upstream;
use super::{Gateway, Owner};
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Notification};
use crate::outbox;
use crate::protocol::method::Question;
use crate::protocol::{Era, Notice};
use crate::sync::lock;
use crate::upstream::asks::Ask;
use crate::upstream::auth::login;
use crate::upstream::auth::store::Credential;
use crate::upstream::Connection;
use async_channel::Sender;
use serde_json::{json, Value};
use std::sync::Arc;

/// A call's way to an upstream that needs a login first: one waiting for a login, or one whose
/// last answer refused mcpx's token.
pub(super) struct LoginFirst {
    gateway: Arc<Gateway>,
    upstream: Arc<Upstream>,
    owner: Owner,
    /// A legacy client's channel for this request: it is told when the login is complete
    /// (2026-07-28 has no such notification; its retry is the completion).
    legacy: Option<outbox::Sender>,
}

impl Gateway {
    /// The login a `method` call to `owner` can run when its server needs one: a `url` server,
    /// and a client (which declared `capabilities`, asked only then) that can open a URL for
    /// the person.
    pub(super) fn login_first(&self, incoming: &Incoming<'_>, owner: Owner) -> Option<LoginFirst> {
        let (method, revision, ctx) = (incoming.method, incoming.revision, incoming.ctx);
        let Owner::Upstream(id) = owner else {
            return None;
        };
        let upstream = self.supervisor.upstreams().get(id)?;
        if upstream.config.url.is_none() || !method.may_ask() {
            return None;
        }
        incoming.capabilities()["elicitation"].member("url")?;
        let gateway = self.me.upgrade()?;
        let legacy = (revision.era() == Era::Legacy).then(|| ctx.outbound.clone());
        Some(LoginFirst {
            gateway,
            upstream,
            owner,
            legacy,
        })
    }
}

impl LoginFirst {
    /// The upstream it logs in to.
    pub(super) fn upstream(&self) -> Arc<Upstream> {
        Arc::clone(&self.upstream)
    }

    /// Logs in, asking the person through `asks`, and starts the server: its connection, or why
    /// not.
    pub(super) async fn connect(&self, asks: &Sender<Ask>) -> Result<Connection, ErrorObject> {
        let _one_login = self.upstream.logging_in.lock().await;
        // A login that finished while this call waited serves it too.
        if !self.upstream.link.waits_for_login() {
            if let Ok((_, connection)) = self.gateway.supervisor.upstreams().connection(self.owner)
            {
                return Ok(connection);
            }
        }
        let name = &self.upstream.name;
        let refused = |why: String| Failure::Refused(format!("logging in to {name} failed: {why}"));
        let credential = self.log_in(asks).await.map_err(refused)?;
        let store = self.gateway.supervisor.upstreams().credentials();
        store.keep(name, Some(credential)).await.map_err(refused)?;
        tracing::info!(server = %name, "logged in from the client");
        self.gateway
            .restart_upstream(name)
            .await
            .map_err(|e| refused(e.to_string()))?;
        self.gateway
            .supervisor
            .upstreams()
            .connection(self.owner)
            .map(|(_, c)| c)
    }

    /// What `mcpx__login` answers once logged in.
    pub(super) fn outcome(&self) -> Value {
        let name = &self.upstream.name;
        let tools = lock(&self.upstream.listing).tools.len();
        let text = format!("Logged in to {name}; it serves {tools} tools.");
        json!({"content": [{"type": "text", "text": text}], "isError": false})
    }

    /// The flow of `mcpx auth login`, with the client as the browser.
    async fn log_in(&self, asks: &Sender<Ask>) -> Result<Credential, String> {
        let (name, config) = (&self.upstream.name, &self.upstream.config);
        let expanded = self.upstream.expanded.as_ref().map_err(Clone::clone)?;
        let server = crate::config::ServerSettings { config, expanded };
        let url = server.url.as_deref().unwrap_or_default();
        let challenge = login::probe(url).await?.unwrap_or_default();
        let store = self.gateway.supervisor.upstreams().credentials();
        let previous = store.read(name).await.filter(|c| c.server_url == url);
        let (opened, to_open) = async_channel::bounded(1);
        let flow = login::login(name, server, &challenge, previous.as_ref(), |url| {
            let _ = opened.try_send(url.to_owned());
        });
        let elicitation_id = login::random_token(16)?;
        let person = async {
            let url = to_open.recv().await.map_err(|e| e.to_string())?;
            let mut params = json!({
                "mode": "url",
                "message": format!("{name} needs you to sign in; mcpx keeps the tokens and goes on with your request."),
                "url": url,
            });
            if self.legacy.is_some() {
                params["elicitationId"] = json!(elicitation_id);
            }
            let (ask, answer) = Ask::new(Question::Elicitation, params);
            asks.send(ask)
                .await
                .map_err(|_| "the request ended".to_owned())?;
            let answer = answer.recv().await.map_err(|_| "the request ended")?;
            match answer.map_err(|e| e.message)? {
                // Accepted: the person is on the page; the redirect ends the flow.
                result if result["action"] == "accept" => smol::future::pending().await,
                result => Err(format!("the person chose {}", result["action"])),
            }
        };
        let credential = smol::future::or(flow, person).await?;
        if let Some(outbound) = &self.legacy {
            let done = json!({ "elicitationId": elicitation_id });
            let complete = Notification::new(Notice::ElicitationComplete, done);
            let _ = outbound.try_send(complete);
        }
        Ok(credential)
    }
}
