//! Supervising a `credentials = "per-identity"` server's instances ([`crate::gateway::instances`]): a live link of each person's own,
//! started by that person's first call with their own values (`{subject}`), stopped when it has
//! been idle for `perIdentity.idleTimeout`, or when `maxInstances` run and a newcomer needs the
//! place of the one idle longest. The server's catalog is listed once, by the local owner's
//! values ([`crate::config::Server::with_subject`]), never per person.

use super::Supervisor;
use crate::access::Identity;
use crate::config::{Expanded, PersonToken};
use crate::failure::Failure;
use crate::gateway::instances::{token_claims, InUse, Instance};
use crate::gateway::link::UpstreamState;
use crate::gateway::person_login;
use crate::gateway::upstreams::{Reached, Upstream};
use crate::gateway::Listing;
use crate::jsonrpc::ErrorObject;
use crate::sync::lock;
use crate::upstream::{Connection, Handshake, StartError};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Why a person's instance is not there to call.
#[derive(Debug)]
pub(in crate::gateway) enum NotStarted {
    /// The server takes each person's own login (`perIdentity.token = "login"`), and this
    /// person has none that serves: they are to sign in first.
    LoginNeeded,
    /// Anything else, said to the caller.
    Refused(ErrorObject),
}

impl Supervisor {
    /// `caller`'s own instance of `upstream` to call, started if it does not run; the call
    /// holds the returned [`InUse`] while it runs, and its audit line says what the
    /// [`Instance::audited`] value does.
    pub(in crate::gateway) async fn instance_for(
        &self,
        upstream: &Arc<Upstream>,
        caller: &Identity,
    ) -> Result<(Connection, InUse, Value), NotStarted> {
        let person = caller.person();
        let refused = |why: String| NotStarted::Refused(Failure::Refused(why).into());
        let instances = &upstream.instances;
        if let Some((instance, connection)) = instances.serving(&person) {
            return Ok((connection, instance.used(), instance.audited(false)));
        }
        // A person's concurrent first calls start one instance; another person's start waits
        // for none of it.
        let _theirs = instances.one_start_for(&person).await;
        if let Some((instance, connection)) = instances.serving(&person) {
            return Ok((connection, instance.used(), instance.audited(false)));
        }
        let subject = person
            .placeholder()
            .map_err(|e| refused(e.clone()))?
            .to_owned();
        let (name, config) = (upstream.name.clone(), upstream.config.clone());
        let mut expanded = smol::unblock(move || Expanded::for_subject(&name, &config, &subject))
            .await
            .map_err(|why| refused(format!("{}'s instance for {person}: {why}", upstream.name)))?;
        // A remote server is reached with the caller's own token for it, never theirs as sent.
        let mut expires = None;
        let mut upstream_claims = Value::Null;
        let credential = person_login::slot_key(&upstream.name, &person);
        match (
            upstream.config.remote_url(),
            upstream.config.per_identity.token,
        ) {
            (Some(url), Some(PersonToken::Exchange)) => {
                let exchanged = self
                    .upstreams
                    .exchange_for(upstream, caller, url)
                    .await
                    .map_err(|why| refused(format!("{} for {person}: {why}", upstream.name)))?;
                upstream_claims = token_claims(&exchanged.token);
                let bearer = format!("Bearer {}", exchanged.token);
                expanded.headers.insert("Authorization".into(), bearer);
                expanded.secrets.push(exchanged.token);
                expires = Some(exchanged.expires);
            }
            (Some(url), Some(PersonToken::Login)) => {
                let store = self.upstreams.credentials();
                let login = store.read(&credential).await;
                if !login.is_some_and(|c| c.server_url == *url && c.may_serve()) {
                    return Err(NotStarted::LoginNeeded);
                }
            }
            (Some(_), None) | (None, _) => {}
        }
        // Its place is taken at once, busy with this call (so that no newcomer takes it, and
        // `maxInstances` holds); only the place, not the start, is one change at a time.
        let (instance, call) = {
            let _one_change = instances.one_change().await;
            // One that exited, whose token is about to expire or whose login lapsed is started
            // again.
            if let Some(gone) = instances.of(&person) {
                instances.stop(&gone, "started again").await;
            }
            self.make_room(upstream).await.map_err(refused)?;
            let instance = Arc::new(Instance::new(person.clone(), expires, &upstream_claims));
            let call = instance.used();
            instances.keep(Arc::clone(&instance));
            (instance, call)
        };
        let started = self
            .start_instance(upstream, &instance, &expanded, &credential)
            .await;
        let connection = match started {
            Ok(connection) => connection,
            Err((e, needs_login)) => {
                instances.stop(&instance, "did not start").await;
                return Err(match needs_login {
                    true => NotStarted::LoginNeeded,
                    false => refused(format!(
                        "{}'s instance for {person} did not start: {e}",
                        upstream.name
                    )),
                });
            }
        };
        self.ledger.notify_changed();
        tracing::info!(server = %upstream.name, person = %person, "started a per-identity instance");
        Ok((connection, call, instance.audited(true)))
    }

    /// Below `maxInstances`, or the instance idle longest is stopped; an error when every one is
    /// busy.
    async fn make_room(&self, upstream: &Upstream) -> Result<(), String> {
        let instances = &upstream.instances;
        let most = upstream.config.per_identity.max_instances;
        if instances.count() < most {
            return Ok(());
        }
        let idle = instances
            .all()
            .into_iter()
            .filter(|i| i.is_idle())
            .max_by_key(|i| i.idle_for());
        let Some(idle) = idle else {
            return Err(format!(
                "{} runs its {most} per-identity instances (perIdentity.maxInstances), each busy with a call; retry when one finishes",
                upstream.name
            ));
        };
        tracing::info!(server = %upstream.name, person = %idle.person, "stopped a per-identity instance to make room");
        instances.stop(&idle, "stopped to make room").await;
        Ok(())
    }

    /// Starts `instance` with `expanded`, its login (a remote server's) in the store's
    /// `credential`: spawned under its own name (its logs, its private directory) and
    /// handshaken. An error says whether the server refused it for want of a login.
    async fn start_instance(
        &self,
        upstream: &Upstream,
        instance: &Instance,
        expanded: &Expanded,
        credential: &str,
    ) -> Result<Connection, (StartError, bool)> {
        let events = self.events.get().cloned();
        let events = events.ok_or((StartError::Failed("mcpx is still starting".into()), false))?;
        let start = upstream.next_start();
        instance.link.begin_start(start, false);
        let name = format!("{}@{}", upstream.name, instance.person.key());
        let how = Reached {
            name: &name,
            credential,
            config: &upstream.config,
            expanded,
            start,
        };
        let public = crate::upstream::child_environment::given_to_every_child();
        crate::redact::register(&crate::redact::pieces(&expanded.secrets, &public));
        let connection =
            (self.upstreams.connect_as(upstream, how, events)).map_err(|e| (e, false))?;
        instance.link.connecting(connection.clone());
        match connection
            .handshake(upstream.config.start_within(false))
            .await
        {
            Ok(handshake) => {
                self.list_once(upstream, &connection, &handshake).await;
                let first_told = upstream.era().is_none();
                instance.link.serve(handshake);
                // The catalog offers mcpx's own tasks only where the server runs none: now
                // that a handshake says which, it is merged again.
                if first_told {
                    self.publish_catalog();
                }
                Ok(connection)
            }
            Err(why) => {
                connection.stop();
                instance.link.stop(UpstreamState::down(why.clone()));
                Err((StartError::Failed(why), connection.needs_login()))
            }
        }
    }

    /// Lists `upstream`'s catalog through a person's instance, when nothing listed it yet (a
    /// remote server that only takes its callers' own tokens): once, for everyone.
    async fn list_once(&self, upstream: &Upstream, connection: &Connection, handshake: &Handshake) {
        if *lock(&upstream.listing) != Listing::default() {
            return;
        }
        match super::list_everything(connection, &handshake.capabilities).await {
            Ok(listing) => {
                tracing::info!(server = %upstream.name, tools = listing.tools.len(), "listed through its first caller's instance");
                *lock(&upstream.listing) = listing;
                self.remember_listing(upstream);
                self.publish_catalog();
            }
            Err(why) => {
                tracing::warn!(server = %upstream.name, "could not list through a caller's instance: {why}")
            }
        }
    }

    /// Stops `upstream`'s instances idle past its `idleTimeout`, for as long as it is configured.
    pub(super) fn reap_idle_instances(self: &Arc<Self>, upstream: &Arc<Upstream>) {
        let timeout = upstream.config.per_identity.idle_timeout;
        let every = (timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        let (supervisor, upstream) = (Arc::downgrade(self), Arc::clone(upstream));
        crate::runtime::spawn(async move {
            loop {
                let removed = upstream.removed_within(every).await;
                let Some(supervisor) = supervisor.upgrade() else {
                    return;
                };
                let instances = &upstream.instances;
                if removed {
                    for instance in instances.all() {
                        instances.stop(&instance, "removed").await;
                    }
                    return;
                }
                let _one_change = instances.one_change().await;
                let idle = instances.all().into_iter();
                for instance in idle.filter(|i| i.is_idle() && i.idle_for() >= timeout) {
                    tracing::info!(server = %upstream.name, person = %instance.person, "stopped a per-identity instance after {timeout:?} idle");
                    instances.stop(&instance, "idle").await;
                    supervisor.ledger.notify_changed();
                }
            }
        })
        .detach();
    }
}
