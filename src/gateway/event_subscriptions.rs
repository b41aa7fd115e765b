//! Webhook delivery bridged by mcpx (`events/subscribe`): a client asks for an event type's
//! occurrences at its callback, and mcpx, not the server, holds the server's delivery for the
//! subscription's life (polling it, or holding its stream) and POSTs each occurrence to the
//! callback, signed with the client's secret ([`super::webhooks`]). The server never learns
//! the callback or the secret.
//!
//! A subscription is known by an id derived from who holds it, the callback, the event type and
//! its arguments: asking again refreshes it (a new lifetime, maybe a new secret), never makes a
//! second. It ends when its lifetime passes unrefreshed, on `events/unsubscribe`, or when its
//! server ends the stream for good. The daemon keeps them, with where each is in its server's
//! occurrences, in a file ([`super::event_store`]), and resumes them when it starts again; any
//! other mcpx process keeps its clients' in memory, for its own life.

use super::event_cursors::EventCursors;
use super::event_store::{Held, Record, Store};
use super::profile::ViewId;
use super::route::Owner;
use super::webhooks::{Callback, Secret};
use crate::access::Identity;
use crate::cancel::Cancel;
use crate::config::Events as EventsConfig;
use crate::jsonrpc::ErrorObject;
use crate::sync::lock;
use crate::view::EventSubscriptionView;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The shortest lifetime a subscription is given, whatever its client asks.
const MIN_TTL: Duration = Duration::from_secs(1);

/// How soon mcpx polls again when the server does not say (`nextPollMs`), and the bounds it
/// keeps a server's word within.
const POLL_EVERY: Duration = Duration::from_secs(5);
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(60));

/// One webhook subscription.
#[derive(Debug)]
pub(super) struct Subscription {
    pub id: String,
    pub holder: Arc<Identity>,
    /// The view it was made in (what its holder may hear of mcpx's own events), and that
    /// view's key ([`super::profile::Profiles::key`]).
    pub view: ViewId,
    view_key: String,
    /// The event type: who serves it, its own name there, its exposed name.
    pub owner: Owner,
    pub own: String,
    pub exposed: String,
    pub server: String,
    pub arguments: Value,
    pub url: String,
    /// How mcpx has its occurrences from the server.
    pub held: Held,
    /// The server's own cursor: where its delivery is.
    cursor: Mutex<Value>,
    secret: Mutex<Secret>,
    /// Where mcpx relays the server's own webhooks: the secret the server signs them with.
    pub relay_secret: Option<Secret>,
    /// When the server's own subscription (a relay's) is next refreshed.
    relay_refresh: Mutex<Option<SystemTime>>,
    ends_at: Mutex<SystemTime>,
    /// Fired when it ends (unsubscribed, expired, or its server ended it).
    pub ended: Cancel,
    /// What its callback took and did not, and why the last was not.
    delivered: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Subscription {
    /// Whether it is still to be delivered.
    pub fn live(&self) -> bool {
        !self.ended.is_cancelled() && SystemTime::now() < *lock(&self.ends_at)
    }

    /// When it ends unless refreshed.
    pub fn ends_at(&self) -> SystemTime {
        *lock(&self.ends_at)
    }

    /// The subscription `id`, as `asked`, ending at `ends_at`.
    fn of(id: String, asked: Asked<'_>, ends_at: SystemTime) -> Subscription {
        Subscription {
            id,
            holder: Arc::clone(asked.holder),
            view: asked.view,
            view_key: asked.view_key,
            owner: asked.owner,
            own: asked.own.to_owned(),
            exposed: asked.exposed.to_owned(),
            server: asked.server.to_owned(),
            arguments: asked.arguments.clone(),
            url: asked.url.to_owned(),
            held: asked.held,
            cursor: Mutex::new(asked.cursor),
            secret: Mutex::new(asked.secret),
            relay_secret: asked.relay_secret,
            relay_refresh: Mutex::default(),
            ends_at: Mutex::new(ends_at),
            ended: Cancel::new(),
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            last_error: Mutex::default(),
        }
    }

    /// Tells the callback that occurrences were skipped (the server's answer said `truncated`):
    /// a signed `{"type": "gap", "cursor"}`, the cursor sealed, where delivery goes on from.
    pub async fn deliver_gap(
        &self,
        cursor: &Value,
        cursors: &EventCursors,
        loopback_ok: bool,
    ) -> Result<(), String> {
        let sealed = cursors.seal(&self.server, &self.exposed, cursor)?;
        let control = json!({"type": "gap", "cursor": sealed});
        self.deliver_control("gap", control, loopback_ok).await
    }

    /// Tells the callback that its server ended the subscription for good (`error` says why):
    /// a signed `{"type": "terminated", "error"}`, after which nothing more comes.
    pub async fn deliver_terminated(&self, error: &ErrorObject, loopback_ok: bool) {
        let error = json!({"code": error.code, "message": error.message});
        let control = json!({"type": "terminated", "error": error});
        let told = self.deliver_control("end", control, loopback_ok).await;
        if let Err(why) = told {
            tracing::warn!(subscription = %self.id, "an ended subscription's callback was not told: {why}");
        }
    }

    /// Delivers `control` (what is not an occurrence), as a message named by `kind` and its
    /// content.
    async fn deliver_control(
        &self,
        kind: &str,
        control: Value,
        loopback_ok: bool,
    ) -> Result<(), String> {
        let digest = hex_digest(&[&self.id, &control.to_string()]);
        let message = format!("{kind}_{}", &digest[..32]);
        let (secret, loopback_ok) = self.callback(loopback_ok);
        let callback = Callback {
            url: &self.url,
            subscription: &self.id,
            secret: &secret,
            loopback_ok,
        };
        callback.deliver(&message, &control).await
    }

    /// What the store keeps of it.
    fn record(&self) -> Record {
        let person = self.holder.person();
        let ends_at = self
            .ends_at()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Record {
            id: self.id.clone(),
            issuer: person.issuer().to_owned(),
            subject: person.subject().to_owned(),
            server: self.server.clone(),
            own: self.own.clone(),
            exposed: self.exposed.clone(),
            arguments: self.arguments.clone(),
            url: self.url.clone(),
            secret: lock(&self.secret).to_whsec(),
            ends_at: ends_at.as_secs(),
            held: self.held,
            relay_secret: self.relay_secret.as_ref().map(Secret::to_whsec),
            cursor: lock(&self.cursor).clone(),
            view: Some(self.view_key.clone()),
        }
    }

    /// When the server's own subscription (a relay's) is next to be refreshed, if it is.
    pub fn relay_refresh(&self) -> Option<SystemTime> {
        *lock(&self.relay_refresh)
    }

    /// Notes when the server's own subscription (a relay's) is next to be refreshed.
    pub fn relay_refresh_at(&self, at: Option<SystemTime>) {
        *lock(&self.relay_refresh) = at;
    }

    /// Where its delivery is now.
    pub fn cursor(&self) -> Value {
        lock(&self.cursor).clone()
    }

    /// Notes how a delivery went.
    pub fn delivered(&self, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.delivered.fetch_add(1, Ordering::Relaxed),
            Err(why) => {
                *lock(&self.last_error) = Some(why);
                self.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }

    /// It as `mcpx status` shows it.
    fn view(&self) -> EventSubscriptionView {
        let origin = url::Url::parse(&self.url).map(|u| u.origin().ascii_serialization());
        let left = self
            .ends_at()
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        EventSubscriptionView {
            id: self.id.clone(),
            person: self.holder.person().to_string(),
            event: self.exposed.clone(),
            callback: origin.unwrap_or_default(),
            ends_in_ms: u64::try_from(left.as_millis()).unwrap_or(u64::MAX),
            delivered: self.delivered.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            last_error: lock(&self.last_error).clone(),
        }
    }

    /// Its callback, as of now (a refresh may have changed the secret).
    fn callback(&self, loopback_ok: bool) -> (Secret, bool) {
        (lock(&self.secret).clone(), loopback_ok)
    }

    /// Delivers `occurrence` (as its server wrote it) to the callback: renamed, its cursor
    /// sealed, as a message named by its `eventId`.
    pub async fn deliver(
        &self,
        mut occurrence: Value,
        cursors: &EventCursors,
        loopback_ok: bool,
    ) -> Result<(), String> {
        let fields =
            (occurrence.as_object_mut()).ok_or("the server's occurrence is not an object")?;
        fields.insert("name".into(), json!(self.exposed));
        if let Some(cursor) = fields.get_mut("cursor") {
            *cursor = cursors.seal(&self.server, &self.exposed, cursor)?;
        }
        // The message is the occurrence: its `webhook-id` is its `eventId` (what callbacks
        // deduplicate by, and check against the body), the same on every try.
        let message = match occurrence["eventId"].as_str() {
            Some(event_id) if !event_id.is_empty() => event_id.to_owned(),
            _ => format!(
                "msg_{}",
                &hex_digest(&[&self.id, &occurrence.to_string()])[..32]
            ),
        };
        let (secret, loopback_ok) = self.callback(loopback_ok);
        let callback = Callback {
            url: &self.url,
            subscription: &self.id,
            secret: &secret,
            loopback_ok,
        };
        callback.deliver(&message, &occurrence).await
    }
}

/// The hex SHA-256 of `parts`, each ended by a NUL (so no two lists of parts share one).
fn hex_digest(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hex::encode(hash.finalize())
}

/// What a subscribe asks for.
pub(super) struct Asked<'a> {
    pub holder: &'a Arc<Identity>,
    pub view: ViewId,
    pub view_key: String,
    pub owner: Owner,
    pub own: &'a str,
    pub exposed: &'a str,
    pub server: &'a str,
    pub arguments: &'a Value,
    pub url: &'a str,
    pub secret: Secret,
    pub ttl: Option<Duration>,
    /// How mcpx has its occurrences from the server, and from where.
    pub held: Held,
    pub cursor: Value,
    /// Where mcpx relays the server's own webhooks: the secret the server is to sign them with.
    pub relay_secret: Option<Secret>,
}

/// The subscriptions mcpx delivers, by id.
#[derive(Debug)]
pub(super) struct EventSubscriptions {
    config: EventsConfig,
    by_id: Mutex<HashMap<String, Arc<Subscription>>>,
    /// The file this process keeps them in, once opened (none: another process keeps it).
    store: OnceLock<Option<Store>>,
    /// Whether this process keeps them there: the daemon does; an editor's `mcpx serve`, or
    /// `mcpx call`, keeps its own in memory, for its own life.
    keeper: AtomicBool,
    /// The public URL under which servers POST the webhooks mcpx relays
    /// ([`super::event_relay`]), once this process is the daemon and has one: none, and
    /// webhook-only event types are not carried.
    relay_base: OnceLock<String>,
    public_url: Option<String>,
}

/// A subscribe's outcome: the subscription, and whether it is new (its delivery is to start).
pub(super) enum Subscribed {
    New(Arc<Subscription>),
    Refreshed(Arc<Subscription>),
}

impl EventSubscriptions {
    /// Subscriptions as `config` bounds them, for a process reached at `public_url` (`[auth]
    /// publicUrl`), if it is.
    pub(super) fn new(config: &EventsConfig, public_url: Option<&str>) -> EventSubscriptions {
        EventSubscriptions {
            config: config.clone(),
            public_url: public_url.map(str::to_owned),
            by_id: Mutex::default(),
            store: OnceLock::new(),
            keeper: AtomicBool::new(false),
            relay_base: OnceLock::new(),
        }
    }

    /// Makes this process the one that keeps subscriptions in `[events] store`, and, where it
    /// is reached at a public URL, the one that relays servers' own webhooks: whether it does.
    pub(super) fn become_keeper(&self) -> bool {
        self.keeper.store(true, Ordering::Release);
        let Some(public_url) = &self.public_url else {
            return false;
        };
        let _ = (self.relay_base).set(public_url.trim_end_matches('/').to_owned());
        true
    }

    /// The public URL under which servers POST the webhooks mcpx relays, if it relays them.
    pub(super) fn relay_base(&self) -> Option<&str> {
        self.relay_base.get().map(String::as_str)
    }

    /// The live subscription `id`, if mcpx relays its server's webhooks.
    pub(super) fn relayed(&self, id: &str) -> Option<Arc<Subscription>> {
        let by_id = lock(&self.by_id);
        let found = by_id.get(id).filter(|s| s.live() && s.held == Held::Relay);
        found.cloned()
    }

    /// Whether the subscription `id` is held (and live).
    pub(super) fn holds(&self, id: &str) -> bool {
        lock(&self.by_id).get(id).is_some_and(|s| s.live())
    }

    /// Whether a callback may be on loopback over `http://`.
    pub(super) fn loopback_ok(&self) -> bool {
        self.config.allow_loopback_callbacks
    }

    /// The id of `holder`'s subscription to `exposed` with `arguments` at `url`.
    pub(super) fn id_of(holder: &Identity, exposed: &str, arguments: &Value, url: &str) -> String {
        let person = holder.person();
        let arguments = crate::canonical::to_string(arguments, crate::canonical::Numbers::Rfc8785);
        let who = [person.issuer(), person.subject()];
        let digest = hex_digest(&[who[0], who[1], exposed, &arguments, url]);
        format!("mcpxs_{}", &digest[..32])
    }

    /// Subscribes as `asked`, or refreshes the subscription it names; an error when the holder
    /// holds as many as they may.
    pub(super) fn subscribe(&self, asked: Asked<'_>) -> Result<Subscribed, String> {
        let id = Self::id_of(asked.holder, asked.exposed, asked.arguments, asked.url);
        let ttl = asked
            .ttl
            .unwrap_or(self.config.default_ttl)
            .clamp(MIN_TTL, self.config.max_ttl.max(MIN_TTL));
        let ends_at = crate::deadline::wall_after(SystemTime::now(), ttl);
        let mut by_id = lock(&self.by_id);
        by_id.retain(|_, s| s.live());
        if let Some(held) = by_id.get(&id) {
            *lock(&held.secret) = asked.secret;
            *lock(&held.ends_at) = ends_at;
            let held = Arc::clone(held);
            drop(by_id);
            self.save();
            return Ok(Subscribed::Refreshed(held));
        }
        self.room_in(&by_id, asked.holder)?;
        let subscription = Arc::new(Subscription::of(id.clone(), asked, ends_at));
        by_id.insert(id, Arc::clone(&subscription));
        drop(by_id);
        self.save();
        Ok(Subscribed::New(subscription))
    }

    /// Whether `holder` may hold one more subscription: an error naming the limit when they
    /// hold `events.maxPerCaller`, asked before their callback is sent anything.
    pub(super) fn room_for(&self, holder: &Identity) -> Result<(), String> {
        self.room_in(&lock(&self.by_id), holder)
    }

    fn room_in(
        &self,
        by_id: &HashMap<String, Arc<Subscription>>,
        holder: &Identity,
    ) -> Result<(), String> {
        let person = holder.person();
        let theirs = by_id
            .values()
            .filter(|s| s.live() && s.holder.person() == person);
        let held = theirs.count();
        match held >= self.config.max_per_caller {
            true => Err(format!(
                "{person} holds {held} event subscriptions, events.maxPerCaller"
            )),
            false => Ok(()),
        }
    }

    /// Ends the subscription `id`, if `holder` holds it: whether there was one.
    pub(super) fn unsubscribe(&self, id: &str, holder: &Identity) -> bool {
        let mut by_id = lock(&self.by_id);
        let held = by_id
            .get(id)
            .is_some_and(|s| s.holder.person() == holder.person());
        if let Some(ended) = held.then(|| by_id.remove(id)).flatten() {
            ended.ended.cancel();
        }
        drop(by_id);
        self.save();
        held
    }

    /// Every live subscription, as `mcpx status` shows them, by id.
    pub(super) fn views(&self) -> Vec<EventSubscriptionView> {
        let by_id = lock(&self.by_id);
        let mut views: Vec<_> = by_id
            .values()
            .filter(|s| s.live())
            .map(|s| s.view())
            .collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    /// Forgets `id` (its delivery ended).
    pub(super) fn forget(&self, id: &str) {
        if let Some(ended) = lock(&self.by_id).remove(id) {
            ended.ended.cancel();
        }
        self.save();
    }

    /// Notes that `subscription`'s delivery is at `cursor` now.
    pub(super) fn moved(&self, subscription: &Subscription, cursor: Value) {
        *lock(&subscription.cursor) = cursor;
        self.save();
    }

    /// Opens the store (`[events] store`), if this process can keep it, and takes back what it
    /// kept: each live subscription, with the owner its server `owner_of` names now (one whose
    /// server is gone is dropped).
    pub(super) fn resume(
        &self,
        owner_of: impl Fn(&str) -> Option<Owner>,
        view_of: impl Fn(&str) -> Option<ViewId>,
    ) -> Vec<Arc<Subscription>> {
        // Opened when there is something to take back, or keep.
        if !self.keeper.load(Ordering::Acquire) || !self.config.store.exists() {
            return Vec::new();
        }
        let Some(store) = self.store() else {
            return Vec::new();
        };
        let records = store.load().unwrap_or_else(|why| {
            tracing::warn!("event subscriptions were not resumed: {why}");
            Vec::new()
        });
        let now = SystemTime::now();
        let mut resumed = Vec::new();
        let mut by_id = lock(&self.by_id);
        for record in records {
            let ends_at =
                crate::deadline::wall_after(UNIX_EPOCH, Duration::from_secs(record.ends_at));
            let (Some(owner), Ok(secret)) =
                (owner_of(&record.server), Secret::parse(&record.secret))
            else {
                continue;
            };
            let relay_secret = match record.relay_secret.as_deref().map(Secret::parse) {
                None => None,
                Some(Ok(secret)) => Some(secret),
                Some(Err(_)) => continue,
            };
            if ends_at <= now {
                continue;
            }
            // What mcpx's own events tell depends on the view: one no longer known tells none.
            let view = match (record.view.as_deref().and_then(&view_of), owner) {
                (Some(view), _) => view,
                (None, Owner::Builtin) => continue,
                (None, Owner::Upstream(_)) => ViewId::EVERYTHING,
            };
            let holder = Arc::new(record.holder());
            let asked = Asked {
                holder: &holder,
                view,
                view_key: record.view.clone().unwrap_or_default(),
                owner,
                own: &record.own,
                exposed: &record.exposed,
                server: &record.server,
                arguments: &record.arguments,
                url: &record.url,
                secret,
                ttl: None,
                held: record.held,
                cursor: record.cursor.clone(),
                relay_secret,
            };
            let subscription = Arc::new(Subscription::of(record.id.clone(), asked, ends_at));
            by_id.insert(record.id, Arc::clone(&subscription));
            resumed.push(subscription);
        }
        resumed
    }

    /// The store, opened the first time it is needed; none when another process keeps it.
    fn store(&self) -> Option<&Store> {
        let store = self
            .store
            .get_or_init(|| match Store::open(&self.config.store) {
                Ok(store) => store,
                Err(why) => {
                    tracing::warn!("event subscriptions are kept in memory only: {why}");
                    None
                }
            });
        store.as_ref()
    }

    /// Keeps every live subscription in the store, if this process keeps it.
    fn save(&self) {
        let nothing = lock(&self.by_id).is_empty() && self.store.get().is_none();
        if nothing || !self.keeper.load(Ordering::Acquire) {
            return;
        }
        let Some(store) = self.store() else {
            return;
        };
        let records: Vec<Record> = {
            let by_id = lock(&self.by_id);
            let mut records: Vec<Record> = by_id
                .values()
                .filter(|s| s.live())
                .map(|s| s.record())
                .collect();
            records.sort_by(|a, b| a.id.cmp(&b.id));
            records
        };
        if let Err(why) = store.save(&records) {
            tracing::warn!("event subscriptions could not be kept: {why}");
        }
    }
}

/// How long to wait before the next poll, as the server's answer says.
pub(super) fn next_poll(answer: &Value) -> Duration {
    if answer["hasMore"] == json!(true) {
        return Duration::ZERO;
    }
    let said = answer["nextPollMs"].as_u64().map(Duration::from_millis);
    said.unwrap_or(POLL_EVERY)
        .clamp(POLL_BOUNDS.0, POLL_BOUNDS.1)
}

#[cfg(test)]
mod v2026_07_28 {
    mod events {
        use super::super::*;
        use crate::access::identity::Kind;

        fn config() -> EventsConfig {
            EventsConfig {
                max_per_caller: 2,
                ..EventsConfig::default()
            }
        }

        fn asked<'a>(holder: &'a Arc<Identity>, url: &'a str, arguments: &'a Value) -> Asked<'a> {
            Asked {
                holder,
                view: ViewId::EVERYTHING,
                view_key: "/".into(),
                owner: Owner::Builtin,
                own: "ticks",
                exposed: "a__ticks",
                server: "a",
                arguments,
                url,
                secret: Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap(),
                ttl: None,
                held: Held::Poll,
                cursor: Value::Null,
                relay_secret: None,
            }
        }

        #[test]
        fn asking_again_refreshes_one_subscription_and_each_caller_has_a_cap() {
            let subscriptions = EventSubscriptions::new(&config(), None);
            let owner = Arc::new(Identity::of_kind(Kind::LocalOwner));
            let none = json!({});
            let first = subscriptions.subscribe(asked(&owner, "https://a.example/h", &none));
            let again = subscriptions.subscribe(asked(&owner, "https://a.example/h", &none));
            let (Ok(Subscribed::New(first)), Ok(Subscribed::Refreshed(again))) = (first, again)
            else {
                panic!("not one subscription refreshed");
            };
            assert_eq!(first.id, again.id);
            // Arguments in another order are the same arguments.
            let a = json!({"x": 1, "y": 2});
            let b = json!({"y": 2, "x": 1});
            assert_eq!(
                EventSubscriptions::id_of(&owner, "a__ticks", &a, "u"),
                EventSubscriptions::id_of(&owner, "a__ticks", &b, "u")
            );
            let second = subscriptions.subscribe(asked(&owner, "https://b.example/h", &none));
            assert!(matches!(second, Ok(Subscribed::New(_))));
            let third = subscriptions.subscribe(asked(&owner, "https://c.example/h", &none));
            assert!(third.is_err());
            assert!(subscriptions.unsubscribe(&first.id, &owner));
            assert!(first.ended.is_cancelled() && !first.live());
            assert!(!subscriptions.unsubscribe(&first.id, &owner));
        }

        #[test]
        fn a_poll_loop_follows_the_servers_pace_within_bounds() {
            assert_eq!(
                next_poll(&json!({"hasMore": true, "nextPollMs": 5000})),
                Duration::ZERO
            );
            assert_eq!(
                next_poll(&json!({"nextPollMs": 250})),
                Duration::from_millis(250)
            );
            assert_eq!(next_poll(&json!({"nextPollMs": 1})), POLL_BOUNDS.0);
            assert_eq!(next_poll(&json!({"nextPollMs": 10_000_000})), POLL_BOUNDS.1);
            assert_eq!(next_poll(&json!({})), POLL_EVERY);
        }
    }
}
