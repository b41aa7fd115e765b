//! Carrying a resolved request to its upstream: a modern client's retry to the call it resumes,
//! a server waiting for a login by that login first, then a place among the upstream's requests
//! in flight, the caller's progress routed back and the upstream's questions carried to the
//! client in the client's era.

use super::builtin;
use super::incoming::Incoming;
use super::login::LoginFirst;
use super::rounds::{Reach, UpstreamCall};
use super::supervision::NotStarted;
use super::tasks::ShownTasks;
use super::upstreams::Upstream;
use super::{relay, Gateway, Owner};
use crate::audit::Questions;
use crate::config::PersonToken;
use crate::failure::Failure;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::limit::Unfair;
use crate::metrics::{self, Refusal};
use crate::protocol::{envelope, extension, task, Era, ResultKind};
use crate::telemetry;
use crate::upstream::{LogSink, ProgressSink, ShowsTasks};
use serde_json::{json, Value};
use std::sync::Arc;

impl Gateway {
    /// Sends a request to the upstream that owns it: a modern client's retry to the call it
    /// resumes, a call to a server waiting for a login by that login first ([`super::login`]).
    /// `forwarded` is what the upstream is sent; `names` what the call names as resolved (the
    /// exposed tool, prompt or URI, or the task id), which a `requestState` is bound to. An
    /// error leaves by the door errors leave by ([`Gateway::error_leaving`]); a result is its
    /// caller's to send out by the one results leave by.
    pub(super) async fn forward(
        &self,
        incoming: &Incoming<'_>,
        owner: Owner,
        forwarded: Value,
        names: &str,
    ) -> Result<Value, ErrorObject> {
        let outcome = self.carry(incoming, owner, forwarded, names).await;
        outcome.map_err(|error| self.error_leaving(owner, incoming.ctx, error))
    }

    /// [`Gateway::forward`], before its error leaves.
    async fn carry(
        &self,
        incoming: &Incoming<'_>,
        owner: Owner,
        mut forwarded: Value,
        names: &str,
    ) -> Result<Value, ErrorObject> {
        if let Some(resumed) = self.resume(incoming, names) {
            return resumed.await;
        }
        let method = incoming.method;
        let per_identity = self.supervisor.upstreams().of(owner);
        if let Some(upstream) = per_identity.filter(|u| u.is_per_identity()) {
            return self
                .forward_to_own(incoming, &upstream, forwarded, names)
                .await;
        }
        // A server waiting for a login is logged in to on the way, when the client can open the
        // sign-in page; so is one that refuses mcpx's token during the call.
        // (The client's capabilities are looked at only for a `url` server: a call to a stdio
        // one, the common case, needs none of this.)
        let woken = self.supervisor.wake(owner).await;
        let login = self.login_first(incoming, owner).map(Arc::new);
        let (upstream, reach) = match (self.supervisor.upstreams().connection(owner), login) {
            (Ok((upstream, _)), Some(login)) if upstream.link.waits_for_login() => {
                (upstream, Reach::AfterLogin(login))
            }
            (Ok((upstream, connection)), login) => (upstream, Reach::Ready(connection, login)),
            (Err(_), Some(login)) if login.upstream().link.waits_for_login() => {
                (login.upstream(), Reach::AfterLogin(login))
            }
            (Err(error), _) => return Err(woken.err().unwrap_or(error)),
        };
        let span = telemetry::carry(method, names, incoming.params, &mut forwarded);
        let outcome = self
            .carry_out(incoming, &upstream, reach, forwarded, names)
            .await;
        if let Some(span) = span {
            span.end(&outcome);
        }
        outcome
    }

    /// [`Gateway::forward`] to a per-identity server: over the caller's own instance, started
    /// for them if it does not run, after they sign in where the server takes each person's
    /// own login and they have none (asked through the call where the client can open a link,
    /// else told the link in its answer).
    async fn forward_to_own(
        &self,
        incoming: &Incoming<'_>,
        upstream: &Arc<Upstream>,
        mut forwarded: Value,
        names: &str,
    ) -> Result<Value, ErrorObject> {
        let (caller, owner) = (&incoming.ctx.caller, Owner::Upstream(upstream.id));
        let login = self.login_first(incoming, owner).map(Arc::new);
        let mut _in_use = None;
        let reach = match (self.supervisor.instance_for(upstream, caller).await, login) {
            (Ok((connection, in_use, reached)), login) => {
                in_use.carries_one();
                _in_use = Some(in_use);
                let _ = incoming.ctx.learnt.instance.set(reached);
                Reach::Ready(connection, login)
            }
            (Err(NotStarted::Refused(refusal)), _) => return Err(refusal),
            (Err(NotStarted::LoginNeeded), Some(login)) => {
                let person = caller.person().to_string();
                let reached = json!({"person": person, "started": true, "signedIn": true});
                let _ = incoming.ctx.learnt.instance.set(reached);
                Reach::AfterLogin(login)
            }
            (Err(NotStarted::LoginNeeded), None) => return self.sign_in_first(incoming, upstream),
        };
        let span = telemetry::carry(incoming.method, names, incoming.params, &mut forwarded);
        let outcome = self
            .carry_out(incoming, upstream, reach, forwarded, names)
            .await;
        if let Some(span) = span {
            span.end(&outcome);
        }
        // A login that lapsed during the call, for a client that cannot be asked: the link.
        let lapsed = || {
            let instance = upstream.instances.of(&caller.person());
            let connection = instance.and_then(|i| i.link.serving().ok());
            connection.is_some_and(|c| c.needs_login())
        };
        match outcome {
            Err(_) if lapsed() => self.sign_in_first(incoming, upstream),
            outcome => outcome,
        }
    }

    /// The answer to a call from someone who must sign in to `upstream` first and whose client
    /// cannot open a link for them: the link, in a tool error (an error for other requests).
    fn sign_in_first(
        &self,
        incoming: &Incoming<'_>,
        upstream: &Upstream,
    ) -> Result<Value, ErrorObject> {
        let name = &upstream.name;
        let person = incoming.ctx.caller.person();
        let link = (self.person_logins.link(name, &person))
            .map_err(|why| Failure::Refused(format!("{name} needs you to sign in: {why}")))?;
        let text = format!("{name} needs you to sign in as yourself first: open {link} (it works once, within 10 minutes), then call again.");
        match incoming.method.result_kind() {
            ResultKind::ToolResult => {
                Ok(json!({"content": [{"type": "text", "text": text}], "isError": true}))
            }
            ResultKind::TaskResult
            | ResultKind::TaskState
            | ResultKind::Prompt
            | ResultKind::Resource
            | ResultKind::Other => Err(Failure::Refused(text).into()),
        }
    }

    /// `mcpx__login`: logs in to the server named, asking the client to open the authorization
    /// URL, when the server is waiting for a login and the client can open one.
    pub(super) async fn login_tool(
        &self,
        incoming: &Incoming<'_>,
        params: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        let client = incoming.client;
        let arguments = params.and_then(|p| p.member("arguments"));
        let name = arguments
            .and_then(|a| a.member("server"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        // A server outside the caller's view is, to it, no server at all.
        let upstream = self
            .supervisor
            .upstreams()
            .by_name(name)
            .filter(|u| self.catalogs.profiles().sees_server(client.view, &u.name))
            .ok_or_else(|| {
                ErrorObject::new(INVALID_PARAMS, format!("no server is named {name:?}"))
            })?;
        if let Some(resumed) = self.resume(incoming, builtin::LOGIN) {
            return resumed.await;
        }
        let capabilities = incoming.capabilities();
        let owner = Owner::Upstream(upstream.id);
        let login = self.login_first(incoming, owner);
        if upstream.is_per_identity() {
            return self.sign_in_tool(incoming, &upstream, login).await;
        }
        let waits = upstream.link.waits_for_login();
        let Some(login) = login.filter(|_| waits) else {
            return Ok(builtin::login_refused(
                name,
                waits,
                &upstream.link.describe(&upstream.name),
                &capabilities,
            ));
        };
        let reach = Reach::LoginOnly(Arc::new(login));
        self.carry_out(incoming, &upstream, reach, json!({}), builtin::LOGIN)
            .await
    }

    /// `mcpx__login` for a per-identity server: the caller signs in as themselves, where the
    /// server takes each person's own login and they have none.
    async fn sign_in_tool(
        &self,
        incoming: &Incoming<'_>,
        upstream: &Arc<Upstream>,
        login: Option<LoginFirst>,
    ) -> Result<Value, ErrorObject> {
        let (name, person) = (&upstream.name, incoming.ctx.caller.person());
        let said =
            |text: String| json!({"content": [{"type": "text", "text": text}], "isError": false});
        if upstream.config.per_identity.token != Some(PersonToken::Login) {
            return Ok(said(format!(
                "{name} needs no sign-in: each person's calls reach it as themselves already"
            )));
        }
        match (
            self.supervisor
                .instance_for(upstream, &incoming.ctx.caller)
                .await,
            login,
        ) {
            (Ok(_), _) => Ok(said(format!(
                "You are signed in to {name} as {person} already."
            ))),
            (Err(NotStarted::Refused(refusal)), _) => Err(refusal),
            (Err(NotStarted::LoginNeeded), Some(login)) => {
                let reach = Reach::LoginOnly(Arc::new(login));
                self.carry_out(incoming, upstream, reach, json!({}), builtin::LOGIN)
                    .await
            }
            (Err(NotStarted::LoginNeeded), None) => self.sign_in_first(incoming, upstream),
        }
    }

    /// A modern client's retry carrying mcpx's `requestState` goes to the call it resumes.
    fn resume<'a>(
        &'a self,
        incoming: &Incoming<'a>,
        names: &'a str,
    ) -> Option<impl std::future::Future<Output = Result<Value, ErrorObject>> + 'a> {
        let original = incoming.params;
        if incoming.era() != Era::Modern || !self.rounds.carries_own_state(original) {
            return None;
        }
        let (method, ctx, capabilities) = (incoming.method, incoming.ctx, incoming.capabilities());
        Some(async move {
            self.rounds
                .resume(method, names, original, &capabilities, ctx)
                .await
        })
    }

    /// Runs a call on the upstream it reaches, with the caller's progress routed back and the
    /// upstream's questions carried to the client in the client's era ([`relay`] for legacy
    /// clients, [`rounds`](super::rounds) for modern ones).
    async fn carry_out(
        &self,
        incoming: &Incoming<'_>,
        upstream: &Upstream,
        reach: Reach,
        mut forwarded: Value,
        names: &str,
    ) -> Result<Value, ErrorObject> {
        let Incoming {
            client,
            method,
            params: original,
            revision,
            ctx,
            ..
        } = *incoming;
        let foreign_state = original.and_then(|p| p.member("requestState")).is_some();
        if foreign_state && revision.era() == Era::Modern && !upstream.is_modern() {
            // Not this mcpx's (a retry carrying one was resumed before this), and a legacy
            // upstream mints none: no call can be resumed with it.
            return Err(super::request_state::failed_integrity());
        }
        let place = upstream.in_flight.take(client.session).map_err(|refused| {
            metrics::refused(Refusal::upstream_in_flight);
            Failure::Refused(match refused {
                Unfair::Full => format!(
                    "upstream {:?} already has its {} requests in flight; retry shortly",
                    upstream.name,
                    upstream.in_flight.describe()
                ),
                Unfair::OverShare(held) => format!(
                    "this client already holds {held} of upstream {:?}'s {} places, its fair share beside other clients; retry when some finish",
                    upstream.name,
                    upstream.in_flight.describe()
                ),
            })
        })?;
        let capabilities = incoming.capabilities();
        if upstream.is_modern() {
            // A modern upstream asks only for what the client can give, and is told only of
            // the extensions mcpx carries (it would cut another's results on the way back).
            forwarded["_meta"][envelope::CLIENT_CAPABILITIES] =
                extension::carried_only(&capabilities);
        }
        // Only a call to a server that runs 2025-11-25 tasks still carries `task` here.
        let asks_for_task = revision.era() == Era::Legacy && forwarded.member("task").is_some();
        let tasks = (revision.era() == Era::Legacy && task::has_tasks(revision)).then(|| {
            let shown: Arc<dyn ShowsTasks> = Arc::new(ShownTasks {
                upstream: upstream.id,
                ids: Arc::clone(&self.task_ids),
            });
            shown
        });
        // The server's guardrails, read once: its questions, log and progress messages pass them.
        let guardrails = self.guardrails.policy(upstream.config.guardrails.as_ref());
        let progress = original
            .and_then(|p| p.member("_meta"))
            .and_then(|m| m.member("progressToken"))
            .map(|token| ProgressSink {
                token: token.clone(),
                revision,
                tx: ctx.outbound.clone(),
                seen: Arc::clone(&ctx.progress_seen),
                // A 2025-11-25 task the call makes reports progress after the call has ended.
                after: asks_for_task.then(|| client.session_stream()),
                tasks: tasks.clone(),
                screen: super::results::screen(guardrails),
            });
        let call = UpstreamCall {
            reach,
            method,
            params: forwarded,
            progress,
            log: client.log_sink(Some(&ctx.outbound)).map(|sink| LogSink {
                screen: super::results::screen(guardrails),
                ..sink
            }),
            place,
            questions: self
                .observer
                .audit()
                .map(|log| Questions::new(log, client.session, &ctx.caller, &upstream.name)),
            // A stream stays open for as long as its client holds it.
            timeout: match incoming.frames {
                Some(_) => Some(crate::deadline::FOREVER),
                None => ctx.timeout,
            },
            tasks,
            frames: incoming.frames.cloned(),
            guardrails,
        };
        match revision.era() {
            Era::Legacy => relay::for_legacy_client(client, call, ctx).await,
            Era::Modern => {
                self.rounds
                    .start(call, method, names.to_owned(), &capabilities, ctx)
                    .await
            }
        }
    }
}
