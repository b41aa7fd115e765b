//! The label sets mcpx's metrics are kept by, and [`Known`], the family that finds a label set
//! seen before without allocating it.

use super::{Door, EventDelivery, EventOutcome, PassedOn, Refusal};
use crate::failure::Outcome;
use crate::sync::{read, write};
use hashbrown::Equivalent;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::family::Family;
use std::hash::Hash;
use std::sync::RwLock;

/// One finished operation of mcpx's own server: a request a client sent. Borrowed, so that
/// counting a label set seen before allocates nothing.
#[derive(Debug, Clone, Copy, Hash)]
pub struct ServerOperation<'a> {
    /// The JSON-RPC method (one of MCP's, else `other`).
    pub method: &'static str,
    /// The tool or prompt named, as exposed; `unknown` for a name no server lists; empty for
    /// other methods.
    pub name: &'a str,
    /// The server that answered (`mcpx` for the built-in one); empty when none did.
    pub upstream: &'a str,
    /// How it ended.
    pub outcome: Outcome,
    /// `legacy` or `modern`.
    pub era: &'static str,
}

/// [`ServerOperation`] as the registry keeps it. Its fields and their order are
/// `ServerOperation`'s, so that both hash alike.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ServerOperationLabels {
    pub(super) method: &'static str,
    pub(super) name: String,
    pub(super) upstream: String,
    pub(super) outcome: Outcome,
    pub(super) era: &'static str,
}

impl From<&ServerOperation<'_>> for ServerOperationLabels {
    fn from(o: &ServerOperation<'_>) -> Self {
        ServerOperationLabels {
            method: o.method,
            name: o.name.to_owned(),
            upstream: o.upstream.to_owned(),
            outcome: o.outcome,
            era: o.era,
        }
    }
}

impl Equivalent<ServerOperationLabels> for ServerOperation<'_> {
    fn equivalent(&self, key: &ServerOperationLabels) -> bool {
        self.method == key.method
            && self.name == key.name
            && self.upstream == key.upstream
            && self.outcome == key.outcome
            && self.era == key.era
    }
}

/// One finished request of mcpx's to an upstream.
#[derive(Debug, Clone, Copy, Hash)]
pub struct ClientOperation<'a> {
    /// The JSON-RPC method.
    pub method: &'static str,
    /// The upstream's configured name.
    pub upstream: &'a str,
    /// How it ended.
    pub outcome: Outcome,
}

/// [`ClientOperation`] as the registry keeps it, hashing alike.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ClientOperationLabels {
    pub(super) method: &'static str,
    pub(super) upstream: String,
    pub(super) outcome: Outcome,
}

impl From<&ClientOperation<'_>> for ClientOperationLabels {
    fn from(o: &ClientOperation<'_>) -> Self {
        ClientOperationLabels {
            method: o.method,
            upstream: o.upstream.to_owned(),
            outcome: o.outcome,
        }
    }
}

impl Equivalent<ClientOperationLabels> for ClientOperation<'_> {
    fn equivalent(&self, key: &ClientOperationLabels) -> bool {
        self.method == key.method && self.upstream == key.upstream && self.outcome == key.outcome
    }
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        use std::fmt::Write;
        write!(encoder, "{self}")
    }
}

/// A family of metrics whose label sets are found borrowed. prometheus-client's [`Family`]
/// takes an owned label set and hashes it with std's SipHash on every use: for a forwarded call,
/// the label strings to allocate and the hashing were 2k of its 4k instructions of counting.
/// Label sets seen before are found here with foldhash, and nothing is allocated.
pub(super) struct Known<L, M> {
    pub(super) family: Family<L, M, fn() -> M>,
    pub(super) seen: RwLock<hashbrown::HashMap<L, M>>,
}

impl<L: Clone + Hash + Eq, M: Clone> Known<L, M> {
    pub(super) fn new(constructor: fn() -> M) -> Self {
        Known {
            family: Family::new_with_constructor(constructor),
            seen: RwLock::default(),
        }
    }

    /// Runs `update` on the metric of `labels`, made on first use.
    pub(super) fn update<Q>(&self, labels: &Q, update: impl FnOnce(&M))
    where
        Q: Hash + Equivalent<L>,
        L: for<'q> From<&'q Q>,
    {
        if let Some(metric) = read(&self.seen).get(labels) {
            return update(metric);
        }
        let owned = L::from(labels);
        let metric = self.family.get_or_create_owned(&owned);
        update(&metric);
        write(&self.seen).insert(owned, metric);
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct TransportLabel {
    pub(super) transport: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct UpstreamLabel {
    pub(super) upstream: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct KindLabel {
    pub(super) kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct TaskLabel {
    pub(super) kind: String,
    pub(super) state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RefusalLabel {
    pub(super) reason: Refusal,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct DoorLabel {
    pub(super) door: Door,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PinStateLabel {
    pub(super) state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PinEventLabel {
    pub(super) event: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct LimitLabel {
    pub(super) limit: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ToleratedLabel {
    pub(super) what: &'static str,
    pub(super) method: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct FindingLabel {
    pub(super) kind: &'static str,
    pub(super) action: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct AuthFailureLabel {
    pub(super) reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct AuthorizationLabel {
    pub(super) event: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct EventLabel {
    pub(super) server: String,
    pub(super) delivery: EventDelivery,
    pub(super) outcome: EventOutcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PassedOnLabel {
    pub(super) kind: PassedOn,
    pub(super) outcome: &'static str,
}

#[cfg(test)]
mod every_revision {
    mod metrics {
        use super::super::*;
        use prometheus_client::metrics::counter::Counter;

        #[test]
        fn a_label_set_seen_borrowed_counts_on_the_metric_its_owned_form_made() {
            let known = Known::<ClientOperationLabels, Counter>::new(Counter::default);
            let seen = |upstream, outcome| ClientOperation {
                method: "tools/call",
                upstream,
                outcome,
            };
            let configured = String::from("gh");
            known.update(&seen(&configured, Outcome::Ok), |c| {
                c.inc();
            });
            known.update(&seen("gh", Outcome::Ok), |c| {
                c.inc();
            });
            known.update(&seen("gh", Outcome::Error(-32603)), |c| {
                c.inc();
            });
            assert_eq!(read(&known.seen).len(), 2, "one metric per label set");
            let ok = ClientOperationLabels::from(&seen("gh", Outcome::Ok));
            assert_eq!(known.family.get_or_create(&ok).get(), 2);
        }
    }
}
