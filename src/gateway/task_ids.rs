//! The ids of tasks as clients know them: mcpx's own, sealed. An id names the upstream and that
//! upstream's id, the start of a stdio server (a restarted child knows none of its predecessor's
//! tasks), the caller it belongs to, and when it expires. Ids of two upstreams never collide, an
//! upstream's own id never reaches the client, and a forged, foreign or expired id (or another
//! caller's) is unknown (-32602) exactly as an id nobody made.

use super::observe::TaskOrigin;
use super::upstreams::Upstream;
use super::{Client, Gateway};
use crate::access::Identity;
use crate::cluster::{now_ms, ClusterKeys, SealingKeys};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::protocol::{task, Era};
use crate::sync::lock;
use crate::view::TaskView;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The status message of a task the owner cancelled, whoever runs it.
pub(super) const CANCELLED_BY_OWNER: &str = "cancelled by the owner of the gateway";

/// What every id of mcpx's tasks starts with.
const PREFIX: &str = "mcpxt1.";

/// How long an id is honoured when its upstream set no TTL (unlimited, to it).
const LONGEST_MS: u64 = 24 * 60 * 60 * 1000;

/// Past its TTL, how long an id is still passed on: the upstream decides when it forgets.
const GRACE_MS: u64 = 60 * 1000;

/// The most ids shown again (in `related-task` `_meta`) that are remembered; the oldest go
/// first when it is reached.
const MOST_REMEMBERED: usize = 10_000;

/// What a task id of mcpx's holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sealed {
    /// The upstream, by its configured name (the same on every replica).
    s: String,
    /// The upstream's own id of the task.
    t: String,
    /// The start of the stdio server that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    g: Option<u64>,
    /// The legacy client it belongs to (a session of this process); a modern client has none,
    /// unless the task is mcpx's own (then its door's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<u64>,
    /// A task mcpx runs itself ([`super::own_tasks`]), by number: no upstream holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<u64>,
    /// Whose it is ([`Identity::owner_key`]): another caller presenting it gets what an unknown
    /// id gets.
    #[serde(default)]
    o: String,
    /// When it expires, in milliseconds since the Unix epoch.
    e: u64,
    /// The replica that holds it, when only that one can serve it (mcpx's own tasks, a stdio
    /// server's, a legacy server's, bound to mcpx's session with it), and where it is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    h: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<String>,
}

/// A task id, opened: the upstream running it and that upstream's own id, or a task of mcpx's.
pub(super) enum Opened {
    Upstream {
        upstream: Arc<Upstream>,
        own_id: String,
    },
    Own(u64),
}

/// A task passed to its upstream, as mcpx last saw it: for the `related-task` `_meta` of its
/// questions, and for the live state.
#[derive(Debug, Clone)]
pub(super) struct Passed {
    /// The id its client knows.
    pub id: String,
    expires_ms: u64,
    pub origin: TaskOrigin,
    status: String,
    /// The owner cancelled it (the admin socket): whatever ends it says so.
    by_owner: bool,
}

/// Seals task ids and remembers, while they live, how each upstream's id is shown.
#[derive(Debug)]
pub(super) struct TaskIds {
    /// `None` only when the system's random source failed at start: tasks are then refused.
    keys: Option<SealingKeys>,
    /// By upstream and its own id.
    shown: Mutex<HashMap<(usize, String), Passed>>,
    /// This replica, as the ids it seals name it.
    holder: String,
    /// Where the other replicas reach it (`[cluster]`).
    at: std::sync::OnceLock<String>,
}

impl TaskIds {
    /// Ids every replica opens when `cluster` is given (the cluster key), else this process's.
    pub(super) fn new(cluster: Option<&ClusterKeys>) -> TaskIds {
        let keys = match cluster {
            Some(keys) => Some(SealingKeys::derived(keys, b"mcpx task v1")),
            None => SealingKeys::random()
                .inspect_err(|e| tracing::error!("task ids cannot be sealed: {e}"))
                .ok(),
        };
        let mut holder = [0u8; 8];
        let _ = getrandom::fill(&mut holder);
        TaskIds {
            keys,
            shown: Mutex::default(),
            holder: hex::encode(holder),
            at: std::sync::OnceLock::new(),
        }
    }

    /// Where the other replicas reach this one: the ids it seals for tasks only it can serve
    /// say so, and a request for one that lands elsewhere is forwarded here.
    pub(super) fn reached_at(&self, address: String) {
        let _ = self.at.set(address);
    }

    /// This replica as a task's home.
    fn home(&self) -> (Option<String>, Option<String>) {
        (Some(self.holder.clone()), self.at.get().cloned())
    }

    /// The replica a request about a task goes to (`params.taskId` names one that another
    /// replica holds), if not this one.
    pub(super) fn held_elsewhere(&self, params: Option<&Value>) -> Option<String> {
        let id = params?.member("taskId")?.as_str()?;
        let sealed = self.unseal(id)?;
        (sealed.h.as_deref().is_some_and(|h| h != self.holder)).then_some(sealed.a)?
    }

    /// The number of mcpx's own task `id` names, whoever holds it (the console may cancel any).
    pub(super) fn own_number(&self, id: &str) -> Option<u64> {
        self.unseal(id).and_then(|sealed| sealed.l)
    }

    fn unseal(&self, id: &str) -> Option<Sealed> {
        let plain = self.keys.as_ref()?.open(PREFIX, id)?;
        serde_json::from_slice(&plain).ok()
    }

    /// Puts mcpx's id in place of the upstream's in a created task's result of `era`; the task,
    /// as mcpx now knows it.
    pub(super) fn seal_created(
        &self,
        result: &mut Value,
        era: Era,
        upstream: &Upstream,
        client: &Client,
        caller: &Identity,
        tool: &str,
    ) -> Result<Passed, ErrorObject> {
        let Some(task) = task::created_task_mut(result, era) else {
            return Err(ErrorObject::new(
                INTERNAL_ERROR,
                "the upstream's task has no task",
            ));
        };
        let own_id = task.member("taskId").and_then(Value::as_str);
        let own_id = own_id.ok_or_else(|| {
            ErrorObject::new(INTERNAL_ERROR, "the upstream created a task with no taskId")
        })?;
        let ttl = task::ttl_ms(task, era)
            .unwrap_or(LONGEST_MS)
            .min(LONGEST_MS);
        let stdio = !upstream.config.kind().is_remote();
        // Only this replica's child, or its session with a legacy server, knows the task.
        let (h, a) = match stdio || era == Era::Legacy {
            true => self.home(),
            false => (None, None),
        };
        let sealed = Sealed {
            h,
            a,
            s: upstream.name.clone(),
            t: own_id.to_owned(),
            g: stdio.then(|| upstream.link.generation()),
            c: (era == Era::Legacy).then_some(client.session),
            l: None,
            o: caller.owner_key(),
            e: now_ms().saturating_add(ttl).saturating_add(GRACE_MS),
        };
        let id = self.seal(&sealed)?;
        let status = task.member("status").and_then(Value::as_str);
        let passed = Passed {
            id: id.clone(),
            expires_ms: sealed.e,
            origin: TaskOrigin::new(client.session, caller, tool, &upstream.name),
            status: status.unwrap_or("working").to_owned(),
            by_owner: false,
        };
        let created = passed.clone();
        self.remember((upstream.id, sealed.t), passed);
        task["taskId"] = json!(id);
        Ok(created)
    }

    /// The id of mcpx's own task `number`, which `caller` holds through `client` for `ttl`.
    pub(super) fn seal_own(
        &self,
        number: u64,
        client: &Client,
        caller: &Identity,
        ttl: std::time::Duration,
    ) -> Result<String, ErrorObject> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let (h, a) = self.home();
        self.seal(&Sealed {
            h,
            a,
            s: String::new(),
            t: String::new(),
            g: None,
            c: Some(client.session),
            l: Some(number),
            o: caller.owner_key(),
            e: now_ms().saturating_add(ttl),
        })
    }

    fn seal(&self, sealed: &Sealed) -> Result<String, ErrorObject> {
        let keys = self.keys.as_ref().ok_or_else(|| {
            ErrorObject::new(INTERNAL_ERROR, "mcpx cannot seal task ids on this system")
        })?;
        let plain = serde_json::to_vec(sealed).unwrap_or_default();
        keys.seal(PREFIX, &plain)
            .map_err(|e| ErrorObject::new(INTERNAL_ERROR, format!("sealing a task id: {e}")))
    }

    fn remember(&self, key: (usize, String), passed: Passed) {
        let mut shown = lock(&self.shown);
        let now = now_ms();
        shown.retain(|_, p| p.expires_ms > now);
        if shown.len() >= MOST_REMEMBERED {
            let oldest = shown
                .iter()
                .min_by_key(|(_, p)| p.expires_ms)
                .map(|(k, _)| k.clone());
            oldest.map(|key| shown.remove(&key));
        }
        shown.insert(key, passed);
    }

    /// The id `client` knows for the task `own_id` of `upstream`, while it lives.
    pub(super) fn shown(&self, upstream: usize, own_id: &str) -> Option<String> {
        let shown = lock(&self.shown);
        let passed = shown.get(&(upstream, own_id.to_owned()))?;
        (passed.expires_ms > now_ms()).then(|| passed.id.clone())
    }

    /// Notes a passed task's status, as `task` (a result or notification about it) says, and
    /// puts the owner's word in its status message when the owner cancelled it (its server
    /// only knows that a client did); the task, when that status is its end, seen for the
    /// first time.
    pub(super) fn saw(&self, upstream: usize, own_id: &str, task: &mut Value) -> Option<Passed> {
        let status = task.member("status").and_then(Value::as_str)?.to_owned();
        let mut shown = lock(&self.shown);
        let passed = shown.get_mut(&(upstream, own_id.to_owned()))?;
        if passed.by_owner && status == "cancelled" {
            task["statusMessage"] = json!(CANCELLED_BY_OWNER);
        }
        let was = std::mem::replace(&mut passed.status, status.clone());
        (was != status && task::is_terminal(&status)).then(|| passed.clone())
    }

    /// Marks the passed task `own_id` of `upstream` as cancelled by the owner.
    pub(super) fn cancelling_by_owner(&self, upstream: usize, own_id: &str) {
        if let Some(passed) = lock(&self.shown).get_mut(&(upstream, own_id.to_owned())) {
            passed.by_owner = true;
        }
    }

    /// The passed tasks that live, for the live state.
    pub(super) fn passed(&self) -> Vec<TaskView> {
        let now = now_ms();
        let shown = lock(&self.shown);
        let live = shown.values().filter(|p| p.expires_ms > now);
        live.map(|p| p.origin.view(&p.id, "passed", &p.status))
            .collect()
    }

    /// The id and the session of a live passed task of `upstream`.
    pub(super) fn owner_of(&self, upstream: usize, own_id: &str) -> Option<(String, u64)> {
        let shown = lock(&self.shown);
        let passed = shown.get(&(upstream, own_id.to_owned()))?;
        (passed.expires_ms > now_ms()).then(|| (passed.id.clone(), passed.origin.session))
    }

    /// A passed task by the id its client knows: its upstream and that upstream's own id.
    pub(super) fn passed_by_id(&self, id: &str) -> Option<(usize, String, Identity)> {
        let shown = lock(&self.shown);
        let ((upstream, own_id), passed) = shown.iter().find(|(_, p)| p.id == id)?;
        Some((*upstream, own_id.clone(), passed.origin.caller.clone()))
    }

    /// What `id` names, if mcpx sealed it for `caller` through `client`, it has not expired,
    /// and the upstream that runs it still serves the start it was created in.
    pub(super) fn open(
        &self,
        id: &str,
        (client, caller): (&Client, &Identity),
        era: Era,
        gateway: &Gateway,
    ) -> Option<Opened> {
        let sealed = self.unseal(id)?;
        let elsewhere = sealed.h.as_deref().is_some_and(|h| h != self.holder);
        if sealed.e <= now_ms() || elsewhere || sealed.o != caller.owner_key() {
            return None;
        }
        if let Some(number) = sealed.l {
            return (sealed.c == Some(client.session)).then_some(Opened::Own(number));
        }
        let owner = (era == Era::Legacy).then_some(client.session);
        if sealed.c != owner {
            return None;
        }
        let upstream = gateway.supervisor.upstreams().by_name(&sealed.s)?;
        let profiles = gateway.catalogs.profiles();
        let same_start = sealed.g.is_none_or(|g| upstream.link.generation() == g);
        (same_start && profiles.sees_server(client.view, &upstream.name)).then(|| {
            Opened::Upstream {
                upstream,
                own_id: sealed.t,
            }
        })
    }
}
