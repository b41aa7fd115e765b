//! Multi-round calls for modern clients: a legacy upstream's question, mid-call, becomes an
//! `InputRequiredResult`, and the client's retry with `inputResponses` resumes the same call.
//!
//! 2026-07-28 has no server-to-client requests. So when a legacy upstream asks for sampling,
//! elicitation or roots during a `tools/call`, `prompts/get` or `resources/read`, the upstream
//! call is parked (still running, its question unanswered) and the client gets the question in
//! `inputRequests` with a signed `requestState` ([`super::request_state`]) naming the parked call.
//! The retry hands the answers to the upstream and waits on the same call again: for its result,
//! or its next question. A parked call nobody resumes is cancelled upstream when its state
//! expires; a state is good for one retry. A modern upstream's own `InputRequiredResult` needs
//! none of this: it passes through, and the retry goes back to the upstream by name.

use super::login::LoginFirst;
use super::request_state::{self, Claims, Signer};
use super::RequestContext;
use crate::cancel::Cancel;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY};
use crate::limit::FairHeld;
use crate::protocol::Method;
use crate::sync::lock;
use crate::upstream::asks::Ask;
use crate::upstream::{Caller, Connection, LogSink, ProgressSink};
use async_channel::{Receiver, Sender};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime};

/// How a call reaches its upstream.
#[derive(Clone)]
pub(super) enum Reach {
    /// Its live connection, and the login to run should the server refuse mcpx's token.
    Ready(Connection, Option<Arc<LoginFirst>>),
    /// By a login first, the person asked through the call's questions.
    AfterLogin(Arc<LoginFirst>),
    /// Nothing to call: the login is the request (`mcpx__login`), and its outcome the result.
    LoginOnly(Arc<LoginFirst>),
}

/// An upstream call the gateway makes for a client, as often as input rounds need.
pub(super) struct UpstreamCall {
    /// The upstream.
    pub reach: Reach,
    /// The method, as the upstream sees it.
    pub method: Method,
    /// The params, as the upstream sees them.
    pub params: Value,
    /// Where its progress goes.
    pub progress: Option<ProgressSink>,
    /// Where the upstream's log messages during it go (legacy clients).
    pub log: Option<LogSink>,
    /// Its place under the upstream's `maxInFlight`, held while it runs or waits.
    pub place: FairHeld,
    /// Where the questions it puts to a legacy client are recorded (the audit log).
    pub questions: Option<crate::audit::Questions>,
    /// How long the upstream may take to answer, when not its `timeout`.
    pub timeout: Option<std::time::Duration>,
    /// How the upstream's task ids are shown to a 2025-11-25 client, in its questions.
    pub tasks: Option<Arc<dyn crate::upstream::ShowsTasks>>,
    /// Where its stream's frames go (`events/stream`).
    pub frames: Option<crate::upstream::FrameSink>,
    /// The server's guardrails, which its questions to a 2025-11-25 client pass as its results
    /// do (a 2026-07-28 client's come in a result).
    pub guardrails: crate::guardrails::Policy,
}

impl UpstreamCall {
    /// The call with `params` as a future owning all it needs (it may outlive the client request
    /// that started it), cancelled by `cancel`; the server's questions arrive on `asks`. The
    /// params are given apart so that a call run once hands over its own instead of a copy.
    pub fn run(
        &self,
        params: Value,
        cancel: Cancel,
        asks: Sender<Ask>,
    ) -> impl Future<Output = Result<Value, ErrorObject>> + Send + 'static {
        let (reach, method) = (self.reach.clone(), self.method);
        let (progress, timeout) = (self.progress.clone(), self.timeout);
        let (log, frames) = (self.log.clone(), self.frames.clone());
        async move {
            let (connection, login) = match reach {
                Reach::Ready(connection, login) => (connection, login),
                // Boxed: a login holds a whole upstream start, too big for a task's stack.
                Reach::AfterLogin(login) => {
                    let connected = cancel.run(Box::pin(login.connect(&asks))).await;
                    (connected.ok_or(Failure::Cancelled)??, None)
                }
                Reach::LoginOnly(login) => {
                    let connected = cancel.run(Box::pin(login.connect(&asks))).await;
                    connected.ok_or(Failure::Cancelled)??;
                    return Ok(login.outcome());
                }
            };
            let caller = Caller {
                progress,
                asks: Some(asks.clone()),
                log,
                timeout,
                frames,
            };
            // Kept for a retry only where a login could be run.
            let retry = login.map(|login| (login, params.clone(), caller.clone()));
            let reply = connection
                .request(method.as_str(), Some(params), &cancel, caller)
                .await;
            match retry {
                Some((login, params, caller)) if reply.is_err() && connection.needs_login() => {
                    let connected = cancel.run(Box::pin(login.connect(&asks))).await;
                    let connection = connected.ok_or(Failure::Cancelled)??;
                    connection
                        .request(method.as_str(), Some(params), &cancel, caller)
                        .await
                }
                _ => reply,
            }
        }
    }
}

/// The calls waiting for a modern client's input.
#[derive(Debug)]
pub struct Rounds {
    parked: Mutex<HashMap<u64, Parked>>,
    next: AtomicU64,
    /// `None` when the system gave no randomness for a key: then no call is parked.
    signer: Option<Signer>,
    /// This process, as its states name it: random, so that a state outlives no restart.
    holder: String,
    /// Where other replicas reach this process, once it serves HTTP.
    at: OnceLock<String>,
    /// How long a parked call waits for its retry.
    wait: Duration,
}

/// An upstream call waiting for the client's input.
struct Parked {
    /// The upstream call; `None` once it finished.
    call: Option<Running>,
    /// Cancels the upstream call.
    cancel: Cancel,
    /// The server's further questions.
    asks: Receiver<Ask>,
    /// Questions sent to the client and not answered yet, by their `inputRequests` key.
    open: BTreeMap<String, Ask>,
    asked: u64,
    method: Method,
    target: String,
    /// The caller whose call it is ([`crate::access::Identity::owner_key`]): only its retry
    /// resumes it.
    caller: String,
    _place: FairHeld,
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked")
            .field("method", &self.method)
            .field("target", &self.target)
            .field("open", &self.open.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Drop for Parked {
    /// However a parked call is let go (expired, cancelled, superseded), the upstream is told:
    /// the call runs on to send its cancellation rather than being dropped mid-call.
    fn drop(&mut self) {
        self.cancel.cancel();
        match self.call.take() {
            Some(Running::Here(call)) => crate::runtime::spawn(call).detach(),
            Some(Running::Away(task)) => task.detach(),
            None => {}
        }
    }
}

type Reply = Result<Value, ErrorObject>;

/// Where an upstream call runs: in the client request's own task while that waits on it (no
/// task of its own on the hot path), in a task of its own once it is parked between rounds.
enum Running {
    Here(std::pin::Pin<Box<dyn Future<Output = Reply> + Send>>),
    Away(smol::Task<Reply>),
}

impl Running {
    /// Lets the call run on without the request that was driving it.
    fn detach_from_request(self) -> Running {
        match self {
            Running::Here(call) => Running::Away(crate::runtime::spawn(call)),
            away => away,
        }
    }
}

impl Future for Running {
    type Output = Reply;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Reply> {
        match &mut *self {
            Running::Here(call) => call.as_mut().poll(cx),
            Running::Away(task) => std::pin::Pin::new(task).poll(cx),
        }
    }
}

/// What waiting on a call produced.
enum Next {
    Finished(Result<Value, ErrorObject>),
    Asked(Ask),
    Cancelled,
}

impl Rounds {
    /// Parked calls wait `wait` for their retry; states are signed by `signer` (a cluster's
    /// shared one), else under a key of this process's own.
    pub fn new(wait: Duration, signer: Option<Signer>) -> Arc<Rounds> {
        let mut holder = [0u8; 8];
        let _ = getrandom::fill(&mut holder);
        Arc::new(Rounds {
            parked: Mutex::default(),
            next: AtomicU64::new(1),
            signer: signer.or_else(Signer::new),
            holder: hex::encode(holder),
            at: OnceLock::new(),
            wait,
        })
    }

    /// Whether `params` carry a `requestState` this mcpx (or its cluster) signed; any other is
    /// a modern upstream's (another mcpx's among them), for the upstream to resume.
    pub fn carries_own_state(&self, params: Option<&Value>) -> bool {
        self.own_state(params).is_some()
    }

    fn own_state<'p>(&self, params: Option<&'p Value>) -> Option<&'p str> {
        let signer = self.signer.as_ref()?;
        params
            .and_then(|p| p.member("requestState"))
            .and_then(Value::as_str)
            .filter(|state| signer.owns(state))
    }

    /// Tells where other replicas reach this process, for the states it signs from now on.
    pub fn reached_at(&self, address: String) {
        let _ = self.at.set(address);
    }

    /// Where the call a retry's `requestState` resumes is held, when another replica holds it:
    /// the address to forward the retry to. `None` for a call held here, and for a state that
    /// does not verify (refused here, never forwarded).
    pub fn held_elsewhere(&self, params: Option<&Value>) -> Option<String> {
        let claims = self
            .signer
            .as_ref()?
            .verify(self.own_state(params)?, SystemTime::now())
            .ok()?;
        (claims.holder != self.holder)
            .then_some(claims.at)
            .flatten()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Parked>> {
        lock(&self.parked)
    }

    /// How many calls wait for input.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    /// Runs `call` for a modern client that declared `capabilities`: its result, or an
    /// `InputRequiredResult` when the upstream asks something mid-call.
    pub(super) async fn start(
        self: &Arc<Self>,
        mut call: UpstreamCall,
        method: Method,
        target: String,
        capabilities: &Value,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let cancel = Cancel::new();
        let (asks_tx, asks) = async_channel::unbounded();
        let params = std::mem::take(&mut call.params);
        let running = Running::Here(Box::pin(call.run(params, cancel.clone(), asks_tx)));
        let parked = Parked {
            call: Some(running),
            cancel,
            asks,
            open: BTreeMap::new(),
            asked: 0,
            method,
            target,
            caller: ctx.caller.owner_key(),
            _place: call.place,
        };
        self.drive(parked, capabilities, ctx).await
    }

    /// A retry carrying mcpx's `requestState`: the answers go to the waiting upstream call,
    /// which is then waited on again.
    pub(super) async fn resume(
        self: &Arc<Self>,
        method: Method,
        target: &str,
        params: Option<&Value>,
        capabilities: &Value,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let state = self.own_state(params).unwrap_or_default();
        let signer = self.signer.as_ref().ok_or_else(no_randomness)?;
        let claims = signer.verify(state, SystemTime::now())?;
        if claims.method != method.as_str() || claims.target != target {
            return Err(ErrorObject::new(
                crate::jsonrpc::INVALID_PARAMS,
                format!(
                    "Invalid params: this requestState belongs to {} {}, not {method} {target}",
                    claims.method, claims.target
                ),
            ));
        }
        // Another caller's state is, to this one, a state of no call: it neither answers the
        // call nor ends it.
        let caller = ctx.caller.owner_key();
        let held_here = claims.holder == self.holder;
        let parked = held_here
            .then(|| {
                let mut parked = self.lock();
                let theirs = parked.get(&claims.call).is_some_and(|p| p.caller == caller);
                theirs.then(|| parked.remove(&claims.call)).flatten()
            })
            .flatten();
        let mut parked = parked.ok_or_else(|| {
            ErrorObject::new(
                crate::jsonrpc::INVALID_PARAMS,
                "Invalid params: this requestState was used already, or its call ended; call again without it",
            )
        })?;
        let responses = params
            .and_then(|p| p.member("inputResponses"))
            .and_then(Value::as_object);
        let answered: Vec<String> = parked
            .open
            .keys()
            .filter(|key| {
                responses
                    .and_then(|r| r.member(key))
                    .is_some_and(Value::is_object)
            })
            .cloned()
            .collect();
        for key in answered {
            if let (Some(ask), Some(response)) = (
                parked.open.remove(&key),
                responses.and_then(|r| r.member(&key)),
            ) {
                ask.answer(Ok(response.clone()));
            }
        }
        if !parked.open.is_empty() {
            // Some answers are missing: ask for them again rather than fail (the specification's
            // SHOULD).
            return self.park(parked);
        }
        self.drive(parked, capabilities, ctx).await
    }

    /// Waits on a call until it finishes, asks, or the client cancels.
    async fn drive(
        self: &Arc<Self>,
        mut parked: Parked,
        capabilities: &Value,
        ctx: &RequestContext,
    ) -> Result<Value, ErrorObject> {
        let mut asked = Vec::new();
        loop {
            let next = match parked.call.as_mut() {
                None => Next::Finished(Err(ErrorObject::new(INTERNAL_ERROR, "the call ended"))),
                Some(call) => {
                    let finished = async { Next::Finished(call.await) };
                    let ask = async {
                        match parked.asks.recv().await {
                            Ok(ask) => Next::Asked(ask),
                            // Only the finished call closes it; its result is next.
                            Err(_) => smol::future::pending().await,
                        }
                    };
                    let cancelled = async {
                        ctx.cancel.cancelled().await;
                        Next::Cancelled
                    };
                    smol::future::or(finished, smol::future::or(ask, cancelled)).await
                }
            };
            match next {
                Next::Finished(outcome) => {
                    parked.call = None;
                    return outcome;
                }
                Next::Cancelled => {
                    return Err(Failure::Cancelled.into());
                }
                Next::Asked(ask) if !parked.method.may_ask() => {
                    // Only three methods may return InputRequiredResult: here the question
                    // cannot reach the client, and the upstream learns so at once.
                    let error = ErrorObject::new(
                        METHOD_NOT_FOUND,
                        format!(
                            "{} cannot reach a 2026-07-28 client during {}",
                            ask.question, parked.method
                        ),
                    );
                    ask.answer(Err(error));
                }
                Next::Asked(ask) => {
                    asked.push(ask);
                    // Questions asked together go out together.
                    while let Ok(more) = parked.asks.try_recv() {
                        asked.push(more);
                    }
                    if let Some(refused) = asked.iter().find(|a| !a.allowed_by(capabilities)) {
                        let needed = refused.required_capability();
                        return Err(ErrorObject::new(
                            MISSING_CLIENT_CAPABILITY,
                            format!(
                                "Missing required client capability: the upstream asks for {}, which this request's clientCapabilities do not declare",
                                refused.question
                            ),
                        )
                        .with_data(json!({ "requiredCapabilities": needed })));
                    }
                    for ask in asked.drain(..) {
                        parked.asked += 1;
                        let key = format!("{}-{}", ask.question.short_name(), parked.asked);
                        parked.open.insert(key, ask);
                    }
                    return self.park(parked);
                }
            }
        }
    }

    /// Parks a call whose questions are open; the `InputRequiredResult` that asks them.
    fn park(self: &Arc<Self>, mut parked: Parked) -> Result<Value, ErrorObject> {
        parked.call = parked.call.take().map(Running::detach_from_request);
        let signer = self.signer.as_ref().ok_or_else(no_randomness)?;
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let state = signer
            .sign(&Claims {
                holder: self.holder.clone(),
                at: self.at.get().cloned(),
                call: number,
                method: parked.method.as_str().to_owned(),
                target: parked.target.clone(),
                expires_ms: request_state::expiry(SystemTime::now(), self.wait),
            })
            .ok_or_else(no_randomness)?;
        let requests: Map<String, Value> = parked
            .open
            .iter()
            .map(|(key, ask)| (key.clone(), ask.input_request()))
            .collect();
        self.lock().insert(number, parked);
        let rounds: Weak<Rounds> = Arc::downgrade(self);
        let wait = self.wait;
        crate::runtime::spawn(async move {
            smol::Timer::after(wait).await;
            if let Some(rounds) = rounds.upgrade() {
                if let Some(expired) = rounds.lock().remove(&number) {
                    tracing::info!(
                        "a {} of {} waited {wait:?} for the client's input; cancelled",
                        expired.method,
                        expired.target
                    );
                }
            }
        })
        .detach();
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
    }
}

fn no_randomness() -> ErrorObject {
    ErrorObject::new(
        INTERNAL_ERROR,
        "the system's random source failed at start, so mcpx cannot protect a requestState",
    )
}
