//! A server's listing under its guardrails ([`crate::guardrails`]): the words of each
//! definition a model reads (descriptions and titles, its schemas' too) scanned as the catalog
//! is built. A finding is masked under `redact`; under `block` the definition's words are all
//! masked and its description says it was withheld (its name stays, so it can still be called
//! and its results are guarded at the door); under `log` it is only told. Each finding is told
//! once (logged, counted, and audited as method `guardrails`), not at every rebuild.

use super::catalog::Listing;
use super::upstreams::Upstream;
use crate::audit::{AuditLog, Entry};
use crate::config::GuardrailAction as Action;
use crate::guardrails::{self, Guardrails, Report, Scope};
use crate::sync::lock;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Scans listings, and remembers what it told.
#[derive(Debug)]
pub(super) struct GuardedListings {
    guardrails: Arc<Guardrails>,
    /// `server kind name kinds` of each finding told: told again only when it changes.
    told: Mutex<HashSet<String>>,
    /// The audit log, once open.
    audit: OnceLock<Arc<AuditLog>>,
}

impl GuardedListings {
    /// The guardrails it applies.
    pub(super) fn guardrails(&self) -> &Guardrails {
        &self.guardrails
    }

    pub(super) fn new(guardrails: Arc<Guardrails>) -> GuardedListings {
        GuardedListings {
            guardrails,
            told: Mutex::default(),
            audit: OnceLock::new(),
        }
    }

    /// Audits what is found from now on to `audit`.
    pub(super) fn audit_to(&self, audit: &Arc<AuditLog>) {
        let _ = self.audit.set(Arc::clone(audit));
    }

    /// `listing`, `upstream`'s, as its guardrails let it be shown.
    pub(super) fn served(&self, upstream: &Upstream, mut listing: Listing) -> Listing {
        let policy = self.guardrails.policy(upstream.config.guardrails.as_ref());
        if policy.scans_nothing() {
            return listing;
        }
        // Withheld words are masked as redacted ones are; the description then says why.
        let masking = |action| match action {
            Action::Block => Action::Redact,
            other => other,
        };
        let masked = guardrails::Policy {
            secrets: masking(policy.secrets),
            pii: masking(policy.pii),
            ..policy
        };
        let lists = [
            ("tool", &mut listing.tools),
            ("prompt", &mut listing.prompts),
            ("resource", &mut listing.resources),
            ("template", &mut listing.templates),
            ("skill", &mut listing.skills),
            ("event", &mut listing.events),
        ];
        for (kind, items) in lists {
            for item in items.iter_mut() {
                let mut report = Report::default();
                guardrails::scan(&policy, Scope::Definition, item, &mut report);
                if report.is_empty() {
                    continue;
                }
                self.tell(&upstream.name, kind, item, &report);
                guardrails::scan(&masked, Scope::Definition, item, &mut Report::default());
                if report.blocks() {
                    item["description"] = json!(format!(
                        "[withheld by mcpx: this description holds {}]",
                        report.kinds()
                    ));
                }
            }
        }
        listing
    }

    /// Logs and counts `report`, found in `item`, a `kind` of `server`'s, unless told already.
    fn tell(&self, server: &str, kind: &str, item: &Value, report: &Report) {
        let name = ["name", "uri", "uriTemplate"]
            .iter()
            .find_map(|key| item[key].as_str())
            .unwrap_or_default();
        let kinds = report.kinds();
        if !lock(&self.told).insert(format!("{server} {kind} {name} {kinds}")) {
            return;
        }
        report.count();
        tracing::warn!(server, kind, name, %kinds, "[guardrails] found credentials or personal data in a definition");
        if let Some(audit) = self.audit.get() {
            audit.record(&Entry {
                session: 0,
                method: "guardrails",
                name: Some(&format!("{kind}:{name}")),
                upstream: Some(server),
                upstream_name: None,
                outcome: "found",
                took: Duration::ZERO,
                arguments: None,
                caller: None,
                client: None,
                instance: None,
                guardrails: Some(&report.to_json()),
                decided_by: None,
            });
        }
    }
}
