//! A `credentials = "per-identity"` server's instances: a live link of each person's own,
//! started by that person's first call with their own values (`{subject}`), stopped when it has
//! been idle for `perIdentity.idleTimeout`, or when `maxInstances` run and a newcomer needs the
//! place of the one idle longest. The server's catalog is listed once, by the local owner's
//! values ([`crate::config::Server::with_subject`]), never per person.

use super::Supervisor;
use crate::access::identity::Person;
use crate::access::Identity;
use crate::config::Expanded;
use crate::failure::Failure;
use crate::gateway::link::{Link, UpstreamState};
use crate::gateway::upstreams::{Reached, Upstream, STOP_GRACE};
use crate::gateway::Listing;
use crate::jsonrpc::ErrorObject;
use crate::sync::lock;
use crate::upstream::{Connection, Handshake, StartError};
use crate::view::InstanceView;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One person's instance.
#[derive(Debug)]
pub(in crate::gateway) struct Instance {
    pub person: Person,
    pub link: Link,
    /// Held by each call on it: the instance is idle when only it holds this.
    calls: Arc<()>,
    last_used: Mutex<Instant>,
    /// When the token it was started with (a remote server's, by exchange) stops being good.
    expires: Option<Instant>,
    /// Whom the server knows it as, by its exchanged token: the subject, and who acts.
    upstream_subject: Option<String>,
    act: Option<Value>,
}

/// The claims of an exchanged token, if it is a JWT (read, not verified: only for the audit
/// line; the server verifies it).
fn token_claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload);
    bytes
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// How long before its token expires an instance is started again with a fresh one.
const RENEW_BEFORE: Duration = Duration::from_secs(30);

impl Instance {
    /// What a call's audit line says of it: whose it is, whether the call `started` it, and
    /// whom the server knows it as.
    fn audited(&self, started: bool) -> Value {
        let mut audited = json!({"person": self.person.to_string(), "started": started});
        if let Some(subject) = &self.upstream_subject {
            audited["upstreamSubject"] = json!(subject);
        }
        if let Some(act) = &self.act {
            audited["act"] = act.clone();
        }
        audited
    }

    /// Whether its token (if it has one) is good for a call yet.
    fn token_is_good(&self) -> bool {
        self.expires
            .is_none_or(|expires| expires > Instant::now() + RENEW_BEFORE)
    }

    fn is_idle(&self) -> bool {
        Arc::strong_count(&self.calls) == 1
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }
}

/// A call on an instance: the instance is busy while it is held.
#[derive(Debug)]
pub(in crate::gateway) struct InUse {
    _held: Arc<()>,
}

/// One server's running instances, by person.
#[derive(Debug, Default)]
pub(in crate::gateway) struct Instances {
    running: Mutex<HashMap<Person, Arc<Instance>>>,
    /// Held while one is started or stopped, so that a person's concurrent first calls start
    /// one instance and `maxInstances` is never passed.
    changing: smol::lock::Mutex<()>,
}

impl Instances {
    fn serving(&self, person: &Person) -> Option<(Arc<Instance>, Connection)> {
        let instance = lock(&self.running).get(person).cloned()?;
        let connection = instance.link.serving().ok()?;
        instance.token_is_good().then_some((instance, connection))
    }

    /// The instance a link's start names.
    pub(in crate::gateway) fn by_start(&self, start: u64) -> Option<Arc<Instance>> {
        let running = lock(&self.running);
        running
            .values()
            .find(|i| i.link.generation() == start)
            .cloned()
    }

    /// Forgets `instance` and stops its process.
    pub(in crate::gateway) async fn stop(&self, instance: &Instance, why: &str) {
        lock(&self.running).remove(&instance.person);
        if let Some(connection) = instance.link.stop(UpstreamState::down(why.into())) {
            connection.shutdown(STOP_GRACE).await;
        }
    }

    /// The people whose instances run, and where each stands.
    pub(in crate::gateway) fn views(&self) -> Vec<InstanceView> {
        let running = lock(&self.running);
        let mut views: Vec<_> = running
            .values()
            .map(|i| InstanceView {
                person: i.person.to_string(),
                state: i.link.describe(&i.person.subject),
            })
            .collect();
        views.sort_by(|a, b| a.person.cmp(&b.person));
        views
    }

    /// Every instance.
    pub(in crate::gateway) fn all(&self) -> Vec<Arc<Instance>> {
        lock(&self.running).values().cloned().collect()
    }
}

impl Supervisor {
    /// `caller`'s own instance of `upstream` to call, started if it does not run; the call
    /// holds the returned [`InUse`] while it runs, and its audit line says what the
    /// [`Instance::audited`] value does.
    pub(in crate::gateway) async fn instance_for(
        &self,
        upstream: &Arc<Upstream>,
        caller: &Identity,
    ) -> Result<(Connection, InUse, Value), ErrorObject> {
        let person = caller.person();
        let refused = |why: String| -> ErrorObject { Failure::Refused(why).into() };
        let instances = &upstream.instances;
        let used = |instance: &Instance| {
            *lock(&instance.last_used) = Instant::now();
            InUse {
                _held: Arc::clone(&instance.calls),
            }
        };
        if let Some((instance, connection)) = instances.serving(&person) {
            return Ok((connection, used(&instance), instance.audited(false)));
        }
        let _one_change = instances.changing.lock().await;
        if let Some((instance, connection)) = instances.serving(&person) {
            return Ok((connection, used(&instance), instance.audited(false)));
        }
        // One that exited, or whose token is about to expire, is started again.
        let gone = lock(&instances.running).get(&person).cloned();
        if let Some(gone) = gone {
            instances.stop(&gone, "started again").await;
        }
        self.make_room(upstream).await.map_err(refused)?;
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
        if let Some(url) = upstream.config.url.as_deref() {
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
        let instance = Arc::new(Instance {
            person: person.clone(),
            link: Link::default(),
            calls: Arc::new(()),
            last_used: Mutex::new(Instant::now()),
            expires,
            upstream_subject: upstream_claims["sub"].as_str().map(str::to_owned),
            act: upstream_claims.get("act").cloned(),
        });
        let call = used(&instance);
        let connection = self
            .start_instance(upstream, &instance, &expanded)
            .await
            .map_err(|e| {
                refused(format!(
                    "{}'s instance for {person} did not start: {e}",
                    upstream.name
                ))
            })?;
        lock(&instances.running).insert(person.clone(), Arc::clone(&instance));
        self.registry.notify_changed();
        tracing::info!(server = %upstream.name, person = %person, "started a per-identity instance");
        Ok((connection, call, instance.audited(true)))
    }

    /// Below `maxInstances`, or the instance idle longest is stopped; an error when every one is
    /// busy.
    async fn make_room(&self, upstream: &Upstream) -> Result<(), String> {
        let instances = &upstream.instances;
        let most = upstream.config.per_identity.max_instances;
        if lock(&instances.running).len() < most {
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

    /// Starts `instance` with `expanded`: spawned under its own name (its logs, its private
    /// directory) and handshaken.
    async fn start_instance(
        &self,
        upstream: &Upstream,
        instance: &Instance,
        expanded: &Expanded,
    ) -> Result<Connection, StartError> {
        let events = self
            .events
            .get()
            .cloned()
            .ok_or_else(|| StartError::Failed("mcpx is still starting".into()))?;
        let start = upstream.next_start();
        instance.link.begin_start(start);
        let name = format!("{}@{}", upstream.name, instance.person.subject);
        let how = Reached {
            name: &name,
            config: &upstream.config,
            expanded,
            start,
        };
        let public = crate::upstream::child_environment::given_to_every_child();
        crate::redact::register(&crate::redact::pieces(&expanded.secrets, &public));
        let connection = self.upstreams.connect_as(upstream, how, events)?;
        instance.link.connecting(connection.clone());
        match connection.handshake().await {
            Ok(handshake) => {
                self.list_once(upstream, &connection, &handshake).await;
                instance.link.serve(handshake);
                Ok(connection)
            }
            Err(why) => {
                connection.stop();
                instance.link.stop(UpstreamState::down(why.clone()));
                Err(StartError::Failed(why))
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
                let _one_change = instances.changing.lock().await;
                let idle = instances.all().into_iter();
                for instance in idle.filter(|i| i.is_idle() && i.idle_for() >= timeout) {
                    tracing::info!(server = %upstream.name, person = %instance.person, "stopped a per-identity instance after {timeout:?} idle");
                    instances.stop(&instance, "idle").await;
                    supervisor.registry.notify_changed();
                }
            }
        })
        .detach();
    }
}
