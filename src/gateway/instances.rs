//! A `credentials = "per-identity"` server's instances, by person: each a live [`Link`] of
//! their own, whether a call is on it, when it was last used, and (for a remote server) when
//! its exchanged token stops being good and whom the server knows it as. Starting and stopping
//! them is supervision's ([`super::supervision`]).

use super::link::{Link, UpstreamState, STOP_GRACE};
use crate::access::identity::Person;
use crate::sync::lock;
use crate::upstream::Connection;
use crate::view::InstanceView;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One person's instance.
#[derive(Debug)]
pub(super) struct Instance {
    pub person: Person,
    pub link: Link,
    /// Held by each call on it: the instance is idle when only it holds this.
    calls: Arc<()>,
    last_used: Mutex<Instant>,
    /// When it was made, and how many requests were carried to it since.
    made: Instant,
    carried: Arc<AtomicU64>,
    /// When the token it was started with (a remote server's, by exchange) stops being good.
    expires: Option<Instant>,
    /// Whom the server knows it as, by its exchanged token: the subject, and who acts.
    upstream_subject: Option<String>,
    act: Option<Value>,
}

/// The claims of an exchanged token, if it is a JWT (read, not verified: only for the audit
/// line; the server verifies it).
pub(super) fn token_claims(token: &str) -> Value {
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
    /// `person`'s instance, not started yet: its token (if it has one) good until `expires`,
    /// whose `claims` (the exchanged token's) say whom the server knows it as.
    pub(super) fn new(person: Person, expires: Option<Instant>, claims: &Value) -> Instance {
        Instance {
            person,
            link: Link::default(),
            calls: Arc::new(()),
            last_used: Mutex::new(Instant::now()),
            made: Instant::now(),
            carried: Arc::default(),
            expires,
            upstream_subject: claims["sub"].as_str().map(str::to_owned),
            act: claims.get("act").cloned(),
        }
    }

    /// A call on it, from now.
    pub(super) fn used(&self) -> InUse {
        *lock(&self.last_used) = Instant::now();
        InUse {
            _held: Arc::clone(&self.calls),
            carried: Arc::clone(&self.carried),
        }
    }

    /// What a call's audit line says of it: whose it is, whether the call `started` it, and
    /// whom the server knows it as.
    pub(super) fn audited(&self, started: bool) -> Value {
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

    pub(super) fn is_idle(&self) -> bool {
        Arc::strong_count(&self.calls) == 1
    }

    pub(super) fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }
}

/// A call on an instance: the instance is busy while it is held.
#[derive(Debug)]
pub(super) struct InUse {
    _held: Arc<()>,
    carried: Arc<AtomicU64>,
}

impl InUse {
    /// A client's request is carried to it (not a handshake or listing made on its way).
    pub(super) fn carries_one(&self) {
        self.carried.fetch_add(1, Ordering::Relaxed);
    }
}

/// One server's running instances, by person.
#[derive(Debug, Default)]
pub(super) struct Instances {
    running: Mutex<HashMap<Person, Arc<Instance>>>,
    /// Held while one's place is taken or one is stopped, so that `maxInstances` is never
    /// passed.
    changing: smol::lock::Mutex<()>,
    /// Held while a person's instance starts, by person: their concurrent first calls start
    /// one, and no one else's start waits on it.
    starting: Mutex<HashMap<Person, Arc<smol::lock::Mutex<()>>>>,
}

impl Instances {
    pub(super) fn serving(&self, person: &Person) -> Option<(Arc<Instance>, Connection)> {
        let instance = lock(&self.running).get(person).cloned()?;
        let connection = instance.link.serving().ok()?;
        let good = instance.token_is_good() && !connection.needs_login();
        good.then_some((instance, connection))
    }

    /// The instance a link's start names.
    pub(super) fn by_start(&self, start: u64) -> Option<Arc<Instance>> {
        let running = lock(&self.running);
        running
            .values()
            .find(|i| i.link.generation() == start)
            .cloned()
    }

    /// Forgets `instance` and stops its process.
    pub(super) async fn stop(&self, instance: &Instance, why: &str) {
        lock(&self.running).remove(&instance.person);
        if let Some(connection) = instance.link.stop(UpstreamState::down(why.into())) {
            connection.shutdown(STOP_GRACE).await;
        }
    }

    /// The people whose instances run, and where each stands.
    pub(super) fn views(&self) -> Vec<InstanceView> {
        let running = lock(&self.running);
        let mut views: Vec<_> = running
            .values()
            .map(|i| InstanceView {
                person: i.person.to_string(),
                state: i.link.describe(i.person.subject()),
                age_ms: i.made.elapsed().as_millis() as u64,
                idle_ms: lock(&i.last_used).elapsed().as_millis() as u64,
                requests: i.carried.load(Ordering::Relaxed),
            })
            .collect();
        views.sort_by(|a, b| a.person.cmp(&b.person));
        views
    }

    /// `person`'s instance, if one is kept (serving or not).
    pub(super) fn of(&self, person: &Person) -> Option<Arc<Instance>> {
        lock(&self.running).get(person).cloned()
    }

    /// Keeps `instance` as its person's.
    pub(super) fn keep(&self, instance: Arc<Instance>) {
        lock(&self.running).insert(instance.person.clone(), instance);
    }

    /// How many are kept.
    pub(super) fn count(&self) -> usize {
        lock(&self.running).len()
    }

    /// One start or stop at a time: held while one is made or stopped.
    pub(super) async fn one_change(&self) -> smol::lock::MutexGuard<'_, ()> {
        self.changing.lock().await
    }

    /// `person`'s start at a time: held while theirs is started.
    pub(super) async fn one_start_for(&self, person: &Person) -> smol::lock::MutexGuardArc<()> {
        let theirs = {
            let mut starting = lock(&self.starting);
            // The locks no one holds or waits on go.
            starting.retain(|_, held| Arc::strong_count(held) > 1);
            Arc::clone(starting.entry(person.clone()).or_default())
        };
        theirs.lock_arc().await
    }

    /// Every instance.
    pub(super) fn all(&self) -> Vec<Arc<Instance>> {
        lock(&self.running).values().cloned().collect()
    }
}
