//! The observer: what a finished request leaves behind, its line in the metrics, and in the audit
//! log for the methods that act on an upstream (`tools/call`, `prompts/get`, `resources/read`).
//! It owns the audit log; the gateway tells it where a call went ([`Gateway::observed`]).
//!
//! A call is observed as what it resolved to ([`super::target`]): through `mcpx__call_tool`, by
//! a server's own name or a renamed URI, it is the call of what ran. Nothing is gathered when neither metrics nor the audit log want it.

use super::RequestContext;
use super::{search, Client, Gateway};
use crate::audit::{AuditLog, Entry};
use crate::json::Member;
use crate::jsonrpc::{Request, Response};
use crate::ledger::Ledger;
use crate::metrics::{self, ServerOperation};
use crate::protocol::{envelope, Era, Method};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The metrics and the audit log, as one request's end feeds them.
#[derive(Debug)]
pub(super) struct Observer {
    /// `[audit]`, opened by [`Observer::open_audit`] when it has a path.
    audit: OnceLock<Arc<AuditLog>>,
    /// `[audit]` as configured.
    config: crate::config::Audit,
    /// Where the metrics' live counts come from.
    ledger: Arc<Ledger>,
}

/// Where an observed call went: its server's name and the name (or URI) it has there.
pub(super) struct Destination<'a> {
    server: String,
    own_name: &'a str,
}

/// What is kept of a request until it finishes.
pub(super) struct Observation {
    started: Instant,
    /// `None` for a method mcpx does not know.
    method: Option<Method>,
    /// What it names: the tool or prompt name, or the resource URI ([`Method::target`]).
    name: Option<String>,
    era: Era,
    /// The arguments, when the audit log records this request.
    arguments: Option<Value>,
    /// Who sent it.
    caller: Arc<crate::access::Identity>,
    /// The `clientInfo` a 2026-07-28 request carries, when the audit log records it.
    client: Option<Value>,
    /// The person's own instance of a per-identity server it went to ([`crate::audit::Entry`]).
    instance: Option<Value>,
    /// What `[guardrails]` found in its result ([`crate::audit::Entry`]).
    guardrails: Option<Value>,
}

impl Observer {
    /// An observer of `[audit]` (not opened yet) and the ledger's counts.
    pub(super) fn new(config: &crate::config::Audit, ledger: Arc<Ledger>) -> Observer {
        Observer {
            audit: OnceLock::new(),
            config: config.clone(),
            ledger,
        }
    }

    /// Opens `[audit] path`, if set.
    pub(super) fn open_audit(&self) -> Result<(), String> {
        let Some(path) = &self.config.path else {
            return Ok(());
        };
        let log = AuditLog::open(&self.config, Arc::clone(&self.ledger))
            .map_err(|e| format!("cannot open the audit log {}: {e}", path.display()))?;
        let _ = self.audit.set(log);
        Ok(())
    }

    /// Reopens the audit log at its path (SIGHUP: logrotate moved it away).
    pub(super) fn reopen_audit(&self) {
        if let Some(audit) = self.audit.get() {
            audit.reopen();
        }
    }

    /// The audit log, when it is open: a call's questions to a legacy client are recorded there.
    pub(super) fn audit(&self) -> Option<&Arc<AuditLog>> {
        self.audit.get()
    }

    /// The metrics in the Prometheus text format, with `tasks` counted by kind and state, each
    /// sandboxed server's (name, degraded) and the pinned definitions by state; `None` when
    /// they are off.
    pub(super) fn metrics(
        &self,
        tasks: &[crate::view::TaskView],
        fill: impl FnOnce(&mut metrics::Live),
    ) -> Option<String> {
        let mut live = self.ledger.counts();
        fill(&mut live);
        let mut counted: std::collections::BTreeMap<(String, String), i64> = Default::default();
        for task in tasks {
            *counted
                .entry((task.kind.clone(), task.status.clone()))
                .or_default() += 1;
        }
        live.tasks = counted.into_iter().collect();
        metrics::render(live)
    }

    /// What to keep of `request` to observe it when it finishes; `None` when nothing would.
    pub(super) fn observation(
        &self,
        request: &Request,
        caller: Arc<crate::access::Identity>,
    ) -> Option<Observation> {
        let method = Method::parse(&request.method);
        let audited = self.audit.get().is_some() && method.is_some_and(Method::is_audited);
        if !audited && !metrics::enabled() {
            return None;
        }
        let params = request.params.as_ref();
        let (name, arguments) = method.map_or((None, None), |m| search::call_target(m, params));
        Some(Observation {
            started: Instant::now(),
            method,
            name: name.map(str::to_owned),
            era: envelope::era_of(params),
            arguments: arguments.filter(|_| audited).cloned(),
            caller,
            client: envelope::client_info(params).filter(|_| audited).cloned(),
            instance: None,
            guardrails: None,
        })
    }

    /// Counts and records a finished request of `session` that went to `destination` (none:
    /// answered by mcpx, or naming what no server lists); `answer` is `None` when it was
    /// cancelled.
    fn record(
        &self,
        session: u64,
        seen: &Observation,
        destination: Option<Destination<'_>>,
        answer: Option<&Response>,
    ) {
        let took = seen.started.elapsed();
        let outcome = crate::failure::Outcome::of(answer.map(|r| &r.outcome));
        let name = seen.name.as_deref();
        let method = seen.method;
        let server = destination.as_ref().map(|d| d.server.as_str());
        if metrics::enabled() {
            // A name no server lists is one label value, however many were tried.
            let named = matches!(method, Some(Method::ToolsCall | Method::PromptsGet));
            let name_label = match (named, &destination) {
                (true, Some(_)) => name.unwrap_or_default(),
                (true, None) => "unknown",
                (false, _) => "",
            };
            let labels = ServerOperation {
                method: metrics::method_label(method),
                name: name_label,
                upstream: server.unwrap_or_default(),
                outcome,
                era: match seen.era {
                    Era::Legacy => "legacy",
                    Era::Modern => "modern",
                },
            };
            metrics::server_operation(&labels, took);
        }
        let Some((audit, method)) = self.audit.get().zip(method.filter(|m| m.is_audited())) else {
            return;
        };
        audit.record(&Entry {
            session,
            method: method.as_str(),
            name,
            upstream: server,
            upstream_name: destination.as_ref().map(|d| d.own_name),
            outcome: &outcome.to_string(),
            took,
            arguments: seen.arguments.as_ref(),
            caller: Some(&seen.caller),
            client: seen.client.as_ref(),
            instance: seen.instance.as_ref(),
            guardrails: seen.guardrails.as_ref(),
            // Cancelled and yet answered: the owner cancelled it ([`super::owner_cancel`]).
            decided_by: (outcome == crate::failure::Outcome::Cancelled && answer.is_some())
                .then_some("owner"),
        });
        // A modern client is asked its questions in the call's result: a line for each.
        let asked = answer
            .and_then(|r| r.outcome.as_ref().ok())
            .and_then(|result| result.member("inputRequests"))
            .and_then(Value::as_object);
        for question in asked.into_iter().flat_map(|q| q.values()) {
            audit.record(&Entry {
                session,
                method: question["method"].as_str().unwrap_or_default(),
                name,
                upstream: server,
                upstream_name: None,
                outcome: "asked",
                took: Duration::ZERO,
                arguments: None,
                caller: Some(&seen.caller),
                client: seen.client.as_ref(),
                instance: None,
                guardrails: None,
                decided_by: None,
            });
        }
    }
}

impl Gateway {
    /// Hands a finished request of `client` to the observer, with what `context` learnt of it:
    /// what it resolved to (none: answered by mcpx, or naming nothing the caller reaches), the
    /// person's instance it went to, what the guardrails found; `answer` is `None` when it was
    /// cancelled.
    pub(super) fn observed(
        &self,
        client: &Client,
        mut seen: Observation,
        context: &RequestContext,
        answer: Option<&Response>,
    ) {
        let resolved = context.learnt.target.get();
        seen.instance = context.learnt.instance.get().cloned();
        seen.guardrails = context.learnt.guardrails.get().cloned();
        let destination = resolved.map(|target| Destination {
            server: self.supervisor.upstreams().name_of(target.owner),
            own_name: &target.own,
        });
        // Observed as what it called, whichever name or route it was sent by.
        if let Some(target) = resolved {
            seen.name = Some(target.exposed.clone());
        }
        self.observer
            .record(client.session, &seen, destination, answer);
    }
}

/// Whose a task is and what it runs, alike for a task mcpx runs and one it passed to its
/// server: what the audit log and the live state say of it.
#[derive(Debug, Clone)]
pub(super) struct TaskOrigin {
    /// The client session it belongs to.
    pub session: u64,
    /// The tool called, as exposed, and the server that runs it.
    pub tool: String,
    pub server: String,
    pub created: Instant,
    /// Who made it.
    pub caller: crate::access::Identity,
}

impl TaskOrigin {
    /// A task created now, of `caller`'s call of `tool` on `server` in `session`.
    pub(super) fn new(
        session: u64,
        caller: &crate::access::Identity,
        tool: &str,
        server: &str,
    ) -> TaskOrigin {
        TaskOrigin {
            session,
            tool: tool.to_owned(),
            server: server.to_owned(),
            created: Instant::now(),
            caller: caller.clone(),
        }
    }

    /// The task `id` as the live state shows it: `kind` says who runs it.
    pub(super) fn view(&self, id: &str, kind: &str, status: &str) -> crate::view::TaskView {
        crate::view::TaskView {
            id: id.to_owned(),
            kind: kind.to_owned(),
            tool: self.tool.clone(),
            server: self.server.clone(),
            session: self.session,
            status: status.to_owned(),
            age_ms: self.created.elapsed().as_millis() as u64,
        }
    }
}

impl Observer {
    /// Records the end of `caller`'s call of `tool` held for approval: `approved`, `denied`
    /// (each `by` whom), `timeout` or `cancelled`.
    pub(super) fn approval(
        &self,
        caller: &crate::access::Identity,
        tool: &str,
        outcome: &str,
        by: &str,
    ) {
        if let Some(log) = self.audit.get() {
            log.record(&Entry {
                session: 0,
                method: "approval",
                name: Some(tool),
                upstream: None,
                upstream_name: None,
                outcome,
                took: Duration::ZERO,
                arguments: None,
                caller: Some(caller),
                client: None,
                instance: None,
                guardrails: None,
                decided_by: Some(by),
            });
        }
    }

    /// Records a task's creation (`created`) or end (`completed`, `failed`, `cancelled`) in
    /// the audit log, when there is one, with how long it lasted and what `[guardrails]` found
    /// in its result.
    pub(super) fn task(&self, origin: &TaskOrigin, outcome: &str, guardrails: Option<&Value>) {
        if let Some(log) = self.audit.get() {
            log.record(&Entry {
                session: origin.session,
                method: "task",
                name: Some(&origin.tool),
                upstream: Some(&origin.server),
                upstream_name: None,
                outcome,
                took: origin.created.elapsed(),
                arguments: None,
                caller: Some(&origin.caller),
                client: None,
                instance: None,
                guardrails,
                decided_by: None,
            });
        }
    }
}
