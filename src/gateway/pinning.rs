//! Pinned definitions at work ([`crate::pins`]): a pinned server's listing is vetted before it
//! joins the merged catalog, a call of what waits for review is refused with the command that
//! reviews it, and a decision taken on this machine (the admin socket) is put in service at
//! once, with `list_changed` for what it changes.

use super::catalog::Listing;
use super::own_events::OwnEvents;
use super::policies::Refused;
use super::results::tool_error;
use super::target::{Kind as TargetKind, Target};
use super::upstreams::Upstream;
use super::{CommandError, Gateway, Owner};
use crate::audit::{AuditLog, Entry};
use crate::config::{Pin, Server};
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::pins::{Decision, Kind, Pins, Review};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The book of pins, which servers it covers, and where its events are recorded.
#[derive(Debug)]
pub(super) struct Pinning {
    pins: Pins,
    every_server: bool,
    audit: OnceLock<Arc<AuditLog>>,
    /// Where a definition withheld for review is told, as mcpx's own event.
    own_events: OnceLock<Arc<OwnEvents>>,
}

impl Pinning {
    pub(super) fn new(config: &crate::config::Pins) -> Pinning {
        Pinning {
            pins: Pins::open(&config.file),
            every_server: config.every_server,
            audit: OnceLock::new(),
            own_events: OnceLock::new(),
        }
    }

    /// Tells `own_events` of each definition withheld for review from now on.
    pub(super) fn tell(&self, own_events: &Arc<OwnEvents>) {
        let _ = self.own_events.set(Arc::clone(own_events));
    }

    /// Records each event in `audit` from now on.
    pub(super) fn audit_to(&self, audit: &Arc<AuditLog>) {
        let _ = self.audit.set(Arc::clone(audit));
    }

    /// How `server` is pinned, if it is.
    fn policy(&self, server: &Server) -> Option<Pin> {
        server.pin.or(self.every_server.then(Pin::default))
    }

    /// What `upstream` may show of its listing: all of it when it is not pinned.
    pub(super) fn served(&self, upstream: &Upstream, listing: Listing) -> Listing {
        let Some(pin) = self.policy(&upstream.config) else {
            return listing;
        };
        let lists = [
            (Kind::Tool, listing.tools.as_slice()),
            (Kind::Prompt, listing.prompts.as_slice()),
            (Kind::Resource, listing.resources.as_slice()),
            (Kind::Template, listing.templates.as_slice()),
            (Kind::Skill, listing.skills.as_slice()),
            (Kind::Event, listing.events.as_slice()),
        ];
        let (served, events) = self.pins.vet(&upstream.name, pin, &lists);
        for (server, item, event) in &events {
            match *event {
                "baseline" => tracing::debug!(server, item, "pinned"),
                "accepted" => tracing::info!(
                    server,
                    item,
                    "a definition changed and was accepted (pin.onNew/onChange = \"accept\")"
                ),
                _ => {
                    tracing::warn!(
                        server,
                        item,
                        "{event}: held until `mcpx pins approve {server} {item}`"
                    );
                    if let Some(own_events) = self.own_events.get() {
                        own_events.pin_held(server, item, event);
                    }
                }
            }
            self.record(server, item, event);
        }
        let mut served = served.into_iter();
        let mut next = || served.next().unwrap_or_default();
        Listing {
            tools: next(),
            prompts: next(),
            resources: next(),
            templates: next(),
            skills: next(),
            events: next(),
        }
    }

    /// Why a call of `upstream`'s definition of `kind` named `name` (its own name or URI) is
    /// refused, if it is. An unpinned server costs a call no key.
    fn refusal(&self, upstream: &Upstream, kind: Kind, name: &str) -> Option<String> {
        self.policy(&upstream.config)?;
        let refused = |kind: Kind| self.pins.refusal(&upstream.name, &kind.key(name));
        // A skill's entry read as a resource is the skill used: refused as `skills/get` is.
        let skill_entry = || {
            (kind == Kind::Resource)
                .then(|| refused(Kind::Skill))
                .flatten()
        };
        refused(kind).or_else(skill_entry)
    }

    fn record(&self, server: &str, item: &str, event: &str) {
        if let Some(audit) = self.audit.get() {
            audit.record(&Entry {
                session: 0,
                method: "pin",
                name: Some(item),
                upstream: Some(server),
                upstream_name: None,
                outcome: event,
                took: Duration::ZERO,
                arguments: None,
                caller: None,
                client: None,
                instance: None,
                guardrails: None,
                decided_by: None,
            });
        }
        crate::metrics::pin_event(event);
    }

    /// How many definitions are in each state.
    pub(super) fn counts(&self) -> Vec<(String, i64)> {
        let counts = self.pins.counts();
        counts
            .into_iter()
            .map(|(state, n)| (state.to_owned(), n))
            .collect()
    }
}

impl Gateway {
    /// The refusal of a request that uses a pinned definition waiting for review (a tool, a
    /// prompt, a resource or the template it was matched by, a skill, whichever route named
    /// it): a tool result with `isError` where `as_tool_error` says the call takes one, an
    /// invalid-params error otherwise.
    pub(super) fn pins_allow(&self, target: &Target, as_tool_error: bool) -> Result<(), Refused> {
        let Owner::Upstream(_) = target.owner else {
            return Ok(());
        };
        let Some(upstream) = self.supervisor.upstreams().of(target.owner) else {
            return Ok(());
        };
        let kind = match target.kind {
            TargetKind::Tool => Kind::Tool,
            TargetKind::Prompt => Kind::Prompt,
            TargetKind::Resource => Kind::Resource,
            TargetKind::Skill => Kind::Skill,
            TargetKind::Event => Kind::Event,
        };
        let template = || {
            let template = target.template.as_deref()?;
            self.pinning.refusal(&upstream, Kind::Template, template)
        };
        let Some(message) = self
            .pinning
            .refusal(&upstream, kind, &target.own)
            .or_else(template)
        else {
            return Ok(());
        };
        // A tool's refusal is a tool error the model reads; anything else's (and a call's whose
        // client expects a task instead), a protocol error.
        Err(if as_tool_error {
            Ok(tool_error(message))
        } else {
            Err(ErrorObject::new(INVALID_PARAMS, message))
        })
    }

    /// Why a `tools/call` of `exposed` names no tool, when a pinned server lists it and mcpx
    /// withholds it (new, or changed under `onChange = "hide"`): a tool result with `isError`
    /// that says what to review, rather than "unknown tool".
    pub(super) fn withheld(&self, exposed: &str) -> Option<Value> {
        self.withheld_tool(exposed).map(tool_error)
    }

    /// Why `exposed` names no tool, when a pinned server lists it and mcpx withholds it (new,
    /// or changed under `onChange = "hide"`): the caller learns what to review, not that the
    /// tool is unknown. Only a name the catalog lacks comes here.
    fn withheld_tool(&self, exposed: &str) -> Option<String> {
        let reviews = self.pinning.pins.reviews();
        self.supervisor
            .upstreams()
            .all()
            .into_iter()
            .find_map(|upstream| {
                let server = &upstream.config;
                self.pinning.policy(server)?;
                let review = reviews.iter().find(|review| {
                    let own = review.item.strip_prefix("tool:");
                    let shown = own.map(|own| {
                        let renamed = server.tools.get(own).and_then(|o| o.name.as_deref());
                        super::naming::exposed(
                            server.prefix(&upstream.name),
                            renamed.unwrap_or(own),
                        )
                    });
                    review.server == upstream.name && shown.as_deref() == Some(exposed)
                })?;
                self.pinning.pins.refusal(&upstream.name, &review.item)
            })
    }

    /// What waits for review, for the console and `mcpx pins`.
    pub fn pin_reviews(&self) -> Vec<Review> {
        self.pinning.pins.reviews()
    }

    /// Approves or rejects what waits for review of `server` (all of it, or `item`, if it is
    /// still `sha256`), then serves the catalog the decision makes: clients hear
    /// `list_changed` for what it changed.
    pub fn decide_pins(
        &self,
        server: &str,
        item: Option<&str>,
        sha256: Option<&str>,
        decision: Decision,
    ) -> Result<String, CommandError> {
        let decided = self
            .pinning
            .pins
            .decide(server, item, sha256, decision)
            .map_err(CommandError::Upstream)?;
        let event = match decision {
            Decision::Approve => "approved",
            Decision::Reject => "rejected",
        };
        for item in &decided {
            self.pinning.record(server, item, event);
        }
        self.supervisor.publish_catalog();
        Ok(match decided.is_empty() {
            true => format!("nothing of {server} waits for review"),
            false => format!("{event} {} of {server}", decided.join(", ")),
        })
    }

    /// Serves the catalog as the book on disk says now (another process decided).
    pub fn refresh_pins(&self) -> String {
        self.supervisor.publish_catalog();
        "the pinned definitions were read again".into()
    }
}
