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
//!
//! A per-identity server that takes each person's own login (`perIdentity.token = "login"`)
//! asks the same way, with a link to mcpx's own page instead ([`super::person_login`]): the
//! person signs in as themselves, their own instance starts, and their call goes on.

use super::incoming::Incoming;
use super::instances::InUse;
use super::supervision::NotStarted;
use super::upstreams::Upstream;
use super::{Gateway, Owner};
use crate::access::Identity;
use crate::config::PersonToken;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Notification};
use crate::outbox;
use crate::protocol::method::Question;
use crate::protocol::{Era, Notice};
use crate::sync::lock;
use crate::upstream::asks::Ask;
use crate::upstream::auth::authorize::random_token;
use crate::upstream::auth::login;
use crate::upstream::auth::store::Credential;
use crate::upstream::Connection;
use async_channel::Sender;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// A call's way to an upstream that needs a login first: one waiting for a login, or one whose
/// last answer refused mcpx's token.
pub(super) struct LoginFirst {
    gateway: Arc<Gateway>,
    upstream: Arc<Upstream>,
    owner: Owner,
    /// A legacy client's channel for this request: it is told when the login is complete
    /// (2026-07-28 has no such notification; its retry is the completion).
    legacy: Option<outbox::Sender>,
    /// For a server each person signs in to as themselves: the caller.
    person: Option<PersonFirst>,
}

/// A person's own login first: who signs in, and the call's hold on their instance once it
/// runs (so it is not stopped as idle under the call).
struct PersonFirst {
    caller: Arc<Identity>,
    held: Mutex<Option<InUse>>,
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
        if !upstream.config.kind().is_remote() || !method.may_ask() {
            return None;
        }
        let person = match (
            upstream.is_per_identity(),
            upstream.config.per_identity.token,
        ) {
            (false, _) => None,
            (true, Some(PersonToken::Login)) => Some(PersonFirst {
                caller: ctx.caller.clone(),
                held: Mutex::default(),
            }),
            // Exchanged tokens need nobody to sign in.
            (true, Some(PersonToken::Exchange) | None) => return None,
        };
        incoming.capabilities()["elicitation"].member("url")?;
        let gateway = self.me.upgrade()?;
        let legacy = (revision.era() == Era::Legacy).then(|| ctx.outbound.clone());
        Some(LoginFirst {
            gateway,
            upstream,
            owner,
            legacy,
            person,
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
        if let Some(person) = &self.person {
            return self.connect_person(person, asks).await;
        }
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

    /// The caller's own instance of a per-identity server, after they sign in if they have to.
    async fn connect_person(
        &self,
        person: &PersonFirst,
        asks: &Sender<Ask>,
    ) -> Result<Connection, ErrorObject> {
        let (supervisor, name) = (&self.gateway.supervisor, &self.upstream.name);
        let refused = |why: String| Failure::Refused(format!("signing in to {name} failed: {why}"));
        let mut asked = false;
        let (connection, in_use, _) = loop {
            match supervisor
                .instance_for(&self.upstream, &person.caller)
                .await
            {
                Ok(started) => break started,
                Err(NotStarted::Refused(refusal)) => return Err(refusal),
                Err(NotStarted::LoginNeeded) if asked => {
                    return Err(refused("the login did not take".into()).into())
                }
                Err(NotStarted::LoginNeeded) => {
                    self.sign_in(person, asks).await.map_err(refused)?;
                    asked = true;
                }
            }
        };
        *lock(&person.held) = Some(in_use);
        Ok(connection)
    }

    /// Sends the person to mcpx's own sign-in page for this server, and waits until they are
    /// back signed in.
    async fn sign_in(&self, person: &PersonFirst, asks: &Sender<Ask>) -> Result<(), String> {
        let name = &self.upstream.name;
        let who = person.caller.person();
        let logins = &self.gateway.person_logins;
        let link = logins.link(name, &who)?;
        let done = logins.waiter(name, &who);
        let message = format!("{name} needs you to sign in as yourself; mcpx keeps your tokens for you alone and goes on with your request.");
        let signed_in = async { done.recv().await.map_err(|e| e.to_string()) };
        self.ask_to_open(asks, async { Ok(link) }, message, signed_in)
            .await
    }

    /// What `mcpx__login` answers once logged in.
    pub(super) fn outcome(&self) -> Value {
        let name = &self.upstream.name;
        let tools = lock(&self.upstream.listing).tools.len();
        let text = match &self.person {
            Some(person) => format!(
                "Signed in to {name} as {}; it serves {tools} tools.",
                person.caller.person()
            ),
            None => format!("Logged in to {name}; it serves {tools} tools."),
        };
        json!({"content": [{"type": "text", "text": text}], "isError": false})
    }

    /// The flow of `mcpx auth login`, with the client as the browser.
    async fn log_in(&self, asks: &Sender<Ask>) -> Result<Credential, String> {
        let (name, config) = (&self.upstream.name, &self.upstream.config);
        let expanded = self.upstream.expanded.as_ref().map_err(Clone::clone)?;
        let server = crate::config::ServerSettings { config, expanded };
        let url = server.remote_url().unwrap_or_default();
        let challenge = login::probe(url).await?.unwrap_or_default();
        let store = self.gateway.supervisor.upstreams().credentials();
        let previous = store.read(name).await.filter(|c| c.server_url == url);
        let (opened, to_open) = async_channel::bounded(1);
        let flow = login::login(name, server, &challenge, previous.as_ref(), |url| {
            let _ = opened.try_send(url.to_owned());
        });
        let url = async { to_open.recv().await.map_err(|e| e.to_string()) };
        let message = format!(
            "{name} needs you to sign in; mcpx keeps the tokens and goes on with your request."
        );
        self.ask_to_open(asks, url, message, flow).await
    }

    /// Asks the client to open `url` (once it is known) for the person, in a URL elicitation
    /// saying `message`, and waits for what `done` brings when the person has finished on the
    /// page; an error if they decline. A legacy client is then told the elicitation is complete.
    async fn ask_to_open<T>(
        &self,
        asks: &Sender<Ask>,
        url: impl Future<Output = Result<String, String>>,
        message: String,
        done: impl Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        let elicitation_id = random_token(16)?;
        let person = async {
            let url = url.await?;
            let mut params = json!({"mode": "url", "message": message, "url": url});
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
        let outcome = smol::future::or(done, person).await?;
        if let Some(outbound) = &self.legacy {
            let done = json!({ "elicitationId": elicitation_id });
            let complete = Notification::new(Notice::ElicitationComplete, done);
            let _ = outbound.try_send(complete);
        }
        Ok(outcome)
    }
}
