//! Tasks mcpx runs itself: a 2026-07-28 client that declared the Tasks extension gets a task for
//! a long call to a server that runs no tasks of its own (`[servers.NAME] tasks`, `[tasks]`).
//!
//! The call starts as any call does; one that ends (or asks its first question) within
//! `promoteAfter` is answered as it is, and one still running then becomes a task ("sync, then
//! promote", as SEP-2663 allows: the server decides). The task's call runs on in the background
//! under the task's TTL, its own cancellation and none of the request that started it. A question
//! the upstream asks (an `InputRequiredResult` round, or a legacy server's request, which mcpx
//! turns into one) becomes the task's `input_required` with its `inputRequests`, keyed per round
//! so that no key is used twice; `tasks/update` answers them, and once a round is answered whole
//! the call is retried with the answers, as a client would. The outcome is kept until the TTL
//! ends; `tasks/cancel` cancels the call upstream.
//!
//! A 2025-11-25 client that asks for a task (`params.task`) of such a server gets one at once
//! ([`legacy`]); its call runs as a 2026-07-28 client's would, so that its questions are rounds
//! too, which that client answers on `tasks/result`. Where the server runs tasks of the other
//! generation, the task's call runs the server's task ([`super::bridged_tasks`]).

mod first_round;
mod legacy;
mod promoting;

pub(in crate::gateway) use promoting::Promotion;

use super::bridged_tasks::Bridge;
use super::observe::TaskOrigin;
use super::target::Target;
use super::Client;
use crate::access::Identity;
use crate::cancel::Cancel;
use crate::config;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::protocol::{task, Notice};
use crate::sync::lock;
use crate::view::TaskView;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often a client is asked to poll.
const POLL_INTERVAL_MS: u64 = 1000;

/// The tasks mcpx holds, by number.
#[derive(Debug)]
pub(super) struct OwnTasks {
    settings: config::Tasks,
    next: AtomicU64,
    held: Mutex<HashMap<u64, Arc<OwnTask>>>,
    /// Bytes of outcomes held, against `maxResultBytes`.
    stored: AtomicUsize,
}

/// One task of mcpx's.
#[derive(Debug)]
pub(super) struct OwnTask {
    /// Whose it is and what it runs.
    origin: TaskOrigin,
    /// The caller it belongs to ([`crate::access::Identity::owner_key`]): `maxPerClient`
    /// counts each caller's at a door apart.
    caller: String,
    /// Its id, once the call became a task (until then, no client knows of it).
    id: std::sync::OnceLock<String>,
    created_at: String,
    expires: Instant,
    /// How long it is kept, as it says.
    ttl_ms: u64,
    /// Cancels its call.
    cancel: Cancel,
    state: Mutex<State>,
    /// Where a round's answers go to the call waiting for them.
    answers: async_channel::Sender<Map<String, Value>>,
    /// The server's task of the other generation it runs, if bridged ([`super::bridged_tasks`]).
    bridge: Option<Arc<Bridge>>,
    /// Told of every change of its state: a 2025-11-25 `tasks/result` waits on it, and what
    /// reports changes (status notifications, a listen's `notifications/tasks`) listens.
    changed: event_listener::Event,
    /// Held by the `tasks/result` asking its questions, so that no two ask them.
    asking: smol::lock::Mutex<()>,
}

#[derive(Debug)]
struct State {
    status: &'static str,
    updated_at: String,
    outcome: Option<Result<Value, ErrorObject>>,
    /// The bytes its outcome holds of `maxResultBytes`.
    bytes: usize,
    round: Option<Round>,
    rounds: u32,
    /// How many times it changed, for those reporting its changes.
    changes: u64,
    /// What its call last reported of its progress.
    progress: Option<String>,
}

impl State {
    /// Marks a change, made now.
    fn touch(&mut self) {
        self.updated_at = now();
        self.changes += 1;
    }
}

/// A task just made: its number, itself, and where its rounds' answers arrive.
struct Admitted {
    number: u64,
    task: Arc<OwnTask>,
    answers: async_channel::Receiver<Map<String, Value>>,
}

/// A round of questions the call waits on.
#[derive(Debug)]
struct Round {
    /// Its input requests by the keys the client sees (`ROUND.KEY`).
    asked: Map<String, Value>,
    /// The answers so far, by the upstream's keys.
    answered: Map<String, Value>,
}

impl OwnTasks {
    pub(super) fn new(settings: &config::Tasks) -> OwnTasks {
        OwnTasks {
            settings: settings.clone(),
            next: AtomicU64::new(1),
            held: Mutex::default(),
            stored: AtomicUsize::new(0),
        }
    }

    /// How long calls may run before they become tasks.
    pub(super) fn promote_after(&self) -> Duration {
        self.settings.promote_after
    }

    /// A new task of `caller`'s through `client`, calling `target` (through its server's own
    /// task, when `bridged`), kept `ttl`, if the caller holds fewer than `maxPerClient` there.
    fn admit(
        &self,
        (client, caller): (&Client, &Identity),
        target: &Target,
        server: &str,
        bridged: Option<Bridge>,
        ttl: Duration,
    ) -> Result<Admitted, ErrorObject> {
        self.purge();
        let origin = TaskOrigin::new(client.session, caller, &target.exposed, server);
        let caller = caller.owner_key();
        let mut held = lock(&self.held);
        let owned = held
            .values()
            .filter(|t| t.origin.session == client.session && t.caller == caller)
            .count();
        if owned >= self.settings.max_per_client {
            return Err(ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "this client already holds {owned} tasks, tasks.maxPerClient; one can be created when one expires"
                ),
            ));
        }
        let (answers, waiting) = async_channel::unbounded();
        let now = now();
        let task = Arc::new(OwnTask {
            origin,
            caller,
            id: std::sync::OnceLock::new(),
            created_at: now.clone(),
            expires: crate::deadline::after(ttl),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            cancel: Cancel::new(),
            state: Mutex::new(State {
                status: "working",
                updated_at: now,
                outcome: None,
                bytes: 0,
                round: None,
                rounds: 0,
                changes: 0,
                progress: None,
            }),
            answers,
            bridge: bridged.map(Arc::new),
            changed: event_listener::Event::new(),
            asking: smol::lock::Mutex::new(()),
        });
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        held.insert(number, Arc::clone(&task));
        Ok(Admitted {
            number,
            task,
            answers: waiting,
        })
    }

    /// Forgets the tasks past their TTL, and what their outcomes held.
    fn purge(&self) {
        let now = Instant::now();
        let mut held = lock(&self.held);
        held.retain(|_, task| {
            let live = task.expires > now;
            if !live {
                task.cancel.cancel();
                let bytes = lock(&task.state).bytes;
                self.stored.fetch_sub(bytes, Ordering::Relaxed);
            }
            live
        });
    }

    /// Task `number`, if `client` holds it and it has not expired.
    pub(super) fn get(&self, number: u64, client: &Client) -> Option<Arc<OwnTask>> {
        self.purge();
        let held = lock(&self.held);
        held.get(&number)
            .filter(|t| t.origin.session == client.session)
            .cloned()
    }

    /// The tasks that clients know of, for the live state.
    pub(super) fn views(&self) -> Vec<TaskView> {
        self.purge();
        let held = lock(&self.held);
        let known = held
            .values()
            .filter_map(|task| Some((task.id.get()?, task)));
        known
            .map(|(id, task)| task.origin.view(id, task.kind(), lock(&task.state).status))
            .collect()
    }

    /// Task `number`, whoever holds it (the admin socket's cancel).
    pub(super) fn any(&self, number: u64) -> Option<Arc<OwnTask>> {
        lock(&self.held).get(&number).cloned()
    }

    /// Keeps a task's outcome, unless it would pass `maxResultBytes` (then the task fails
    /// saying so); a cancelled task keeps none.
    fn finish(&self, task: &OwnTask, outcome: Result<Value, ErrorObject>) {
        let bytes = serde_json::to_vec(&outcome.as_ref().ok()).map_or(0, |b| b.len());
        let room = self.settings.max_result_bytes;
        let fits = self.stored.fetch_add(bytes, Ordering::Relaxed) + bytes <= room;
        let mut state = lock(&task.state);
        let cancelled = state.status == "cancelled";
        if !fits || cancelled {
            self.stored.fetch_sub(bytes, Ordering::Relaxed);
        }
        if cancelled {
            return;
        }
        let outcome = match fits {
            true => outcome,
            false => Err(ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "the task's result ({bytes} bytes) would pass tasks.maxResultBytes ({room})"
                ),
            )),
        };
        state.bytes = if fits { bytes } else { 0 };
        state.status = if outcome.is_ok() {
            "completed"
        } else {
            "failed"
        };
        state.outcome = Some(outcome);
        state.round = None;
        state.touch();
        drop(state);
        task.changed.notify(usize::MAX);
    }
}

impl OwnTask {
    /// What the live state calls it.
    fn kind(&self) -> &'static str {
        match self.bridge {
            Some(_) => "bridged",
            None => "own",
        }
    }

    /// The task as `tasks/get` shows it (the extension's `DetailedTask`), its outcome inlined.
    pub(super) fn detailed(&self, id: &str) -> Value {
        let state = lock(&self.state);
        let mut task = json!({
            "taskId": id,
            "status": state.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": state.updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        });
        if let Some(progress) = &state.progress {
            task["statusMessage"] = json!(progress);
        }
        match (&state.outcome, &state.round) {
            (Some(Ok(result)), _) => task["result"] = result.clone(),
            (Some(Err(error)), _) => {
                task["error"] = json!({"code": error.code, "message": error.message});
                task["statusMessage"] = json!(error.message);
            }
            (None, Some(round)) => task["inputRequests"] = Value::Object(round.unanswered()),
            (None, None) => {}
        }
        task
    }

    /// What its call reported, kept when it is progress (its message, else how far it is).
    fn note_progress(&self, message: &crate::jsonrpc::Outbound) {
        let crate::jsonrpc::Outbound::Notification(progress) = message else {
            return;
        };
        if progress.method != Notice::Progress {
            return;
        }
        let params = progress.params.as_ref();
        let said = params
            .and_then(|p| p.member("message"))
            .and_then(Value::as_str);
        let done = params.and_then(|p| p.member("progress"));
        let of = params.and_then(|p| p.member("total"));
        let noted = match (said, done, of) {
            (Some(said), _, _) => said.to_owned(),
            (None, Some(done), Some(of)) => format!("{done} of {of}"),
            (None, Some(done), None) => format!("{done}"),
            (None, None, _) => return,
        };
        // Not a change of state: nobody is told, a poll sees it.
        lock(&self.state).progress = Some(noted);
    }

    /// What the task says it is doing (its `statusMessage`), until its next progress.
    pub(super) fn says(&self, said: &str) {
        lock(&self.state).progress = Some(said.to_owned());
    }

    /// The call asks a round of questions: the task waits for their answers.
    fn ask(&self, questions: &Value) {
        let mut state = lock(&self.state);
        state.rounds += 1;
        let number = state.rounds;
        let requests = questions.member("inputRequests").and_then(Value::as_object);
        let asked = requests
            .into_iter()
            .flatten()
            .map(|(key, request)| (format!("{number}.{key}"), request.clone()))
            .collect();
        state.round = Some(Round {
            asked,
            answered: Map::new(),
        });
        state.status = "input_required";
        state.touch();
        drop(state);
        self.changed.notify(usize::MAX);
    }

    /// `tasks/update`: the answers to this round's questions that it asked; once all are in, the
    /// call is retried with them. Others (an earlier round's, unknown keys) are ignored.
    pub(super) fn update(&self, responses: Option<&Value>) {
        let mut state = lock(&self.state);
        let Some(round) = state.round.as_mut() else {
            return;
        };
        for (key, answer) in responses.and_then(Value::as_object).into_iter().flatten() {
            if round.asked.contains_key(key) {
                round
                    .answered
                    .insert(own_key(key).to_owned(), answer.clone());
            }
        }
        if round.answered.len() < round.asked.len() {
            return;
        }
        let answered = std::mem::take(&mut round.answered);
        state.round = None;
        state.status = "working";
        state.touch();
        drop(state);
        let _ = self.answers.try_send(answered);
        self.changed.notify(usize::MAX);
    }

    /// Tells `tell` of each change of its state from now on (from this call, not from the
    /// future's first poll), until it has ended.
    pub(super) fn report_changes(
        self: Arc<Self>,
        tell: impl Fn(&OwnTask) + Send + 'static,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut seen = lock(&self.state).changes;
        async move {
            loop {
                let changed = self.changed.listen();
                let (changes, status) = {
                    let state = lock(&self.state);
                    (state.changes, state.status)
                };
                if changes != seen {
                    seen = changes;
                    tell(&self);
                }
                if task::is_terminal(status) {
                    return;
                }
                changed.await;
            }
        }
    }

    /// `tasks/cancel`: the call is cancelled upstream and the task ends cancelled, unless it
    /// ended already.
    pub(super) fn cancel(&self) {
        self.cancel_saying(None);
    }

    /// Cancels it as the gateway's owner (the admin socket): its status message says so.
    pub(super) fn cancel_by_owner(&self) {
        self.cancel_saying(Some(super::task_ids::CANCELLED_BY_OWNER));
    }

    fn cancel_saying(&self, said: Option<&str>) {
        let mut state = lock(&self.state);
        if state.outcome.is_none() {
            state.status = "cancelled";
            state.round = None;
            if let Some(said) = said {
                state.progress = Some(said.to_owned());
            }
            state.touch();
        }
        drop(state);
        self.cancel.cancel();
        self.changed.notify(usize::MAX);
    }
}

impl Round {
    /// Its questions not answered yet, by the keys the client sees.
    fn unanswered(&self) -> Map<String, Value> {
        let open = self.asked.iter();
        open.filter(|(key, _)| !self.answered.contains_key(own_key(key)))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect()
    }
}

/// The upstream's key of a key the client sees (`ROUND.KEY`).
fn own_key(shown: &str) -> &str {
    shown.split_once('.').map_or(shown, |(_, key)| key)
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod v2026_07_28 {
    mod own_tasks {
        use crate::gateway::own_tasks::OwnTasks;
        use crate::gateway::Client;
        use serde_json::json;
        use std::time::Duration;

        /// The tool `s__t`, `t` on its server.
        fn a_tool() -> crate::gateway::target::Target {
            crate::gateway::target::Target {
                kind: crate::gateway::target::Kind::Tool,
                owner: crate::gateway::Owner::Upstream(0),
                own: "t".into(),
                exposed: "s__t".into(),
                template: None,
            }
        }

        /// A round answered in part keeps only its unanswered questions; answered whole, it goes
        /// to the call as the upstream's keys, and the next round's keys are new.
        #[test]
        fn a_round_is_answered_key_by_key_and_keys_are_never_reused() {
            let tasks = OwnTasks::new(&crate::config::Tasks::default());
            let client = Client::new(
                1,
                Default::default(),
                crate::outbox::Sender::nowhere(),
                None,
            );
            let caller = crate::access::Identity::of_kind(crate::access::Kind::LocalOwner);
            let admitted = tasks
                .admit(
                    (&client, &caller),
                    &a_tool(),
                    "s",
                    None,
                    Duration::from_secs(1),
                )
                .unwrap();
            let task = &admitted.task;
            let question = json!({"method": "elicitation/create", "params": {}});
            task.ask(&json!({"inputRequests": {"a": question, "b": question}}));
            let shown = task.detailed("t");
            assert_eq!(shown["status"], "input_required");
            let keys: Vec<&String> = shown["inputRequests"].as_object().unwrap().keys().collect();
            assert_eq!(keys, ["1.a", "1.b"]);
            task.update(Some(
                &json!({"1.a": {"action": "accept"}, "2.b": {"action": "accept"}}),
            ));
            let shown = task.detailed("t");
            assert_eq!(shown["inputRequests"], json!({"1.b": question}));
            assert!(admitted.answers.try_recv().is_err());
            task.update(Some(&json!({"1.b": {"action": "decline"}})));
            let answered = admitted.answers.try_recv().unwrap();
            assert_eq!(
                answered,
                *json!({"a": {"action": "accept"}, "b": {"action": "decline"}})
                    .as_object()
                    .unwrap()
            );
            assert_eq!(task.detailed("t")["status"], "working");
            task.ask(&json!({"inputRequests": {"a": question}}));
            assert_eq!(
                task.detailed("t")["inputRequests"],
                json!({"2.a": question})
            );
        }

        #[test]
        fn a_caller_past_max_per_client_is_refused_by_name_and_another_caller_is_not() {
            use crate::access::{Identity, Kind};
            let settings = crate::config::Tasks {
                max_per_client: 1,
                ..Default::default()
            };
            let tasks = OwnTasks::new(&settings);
            let client = || {
                Client::new(
                    1,
                    Default::default(),
                    crate::outbox::Sender::nowhere(),
                    None,
                )
            };
            let (door, other_door) = (
                client(),
                Client::new(
                    2,
                    Default::default(),
                    crate::outbox::Sender::nowhere(),
                    None,
                ),
            );
            let bearer = |sub: &str| {
                let claims = serde_json::json!({"sub": sub, "iss": "https://idp"});
                Identity::from_claims(claims.as_object().cloned().unwrap(), "https://idp").unwrap()
            };
            let (alice, bob) = (bearer("alice"), bearer("bob"));
            let target = a_tool();
            let admit = |client: &Client, caller: &Identity| {
                tasks.admit((client, caller), &target, "s", None, Duration::from_secs(1))
            };
            let _held = admit(&door, &alice).unwrap();
            let refused = admit(&door, &alice).err().unwrap();
            assert!(
                refused.message.contains("tasks.maxPerClient"),
                "{}",
                refused.message
            );
            // Bob at the same door (one modern client for every caller) has his own budget,
            // and so has a client of another session.
            assert!(admit(&door, &bob).is_ok());
            let local = Identity::of_kind(Kind::LocalOwner);
            assert!(admit(&other_door, &local).is_ok());
        }
    }
}
