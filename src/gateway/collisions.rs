//! Two servers exposing one name (a tool's, a prompt's, an event type's): a call would go to the
//! wrong server, so the name's first owner keeps it and the newcomer's item is left out, each
//! such collision reported, naming both.

use super::merged::Merged;
use super::route::Owner;
use hashbrown::HashMap;

/// A server as a claimant of names: who answers for it, and its configured name.
pub(super) type Claimant<'s> = (Owner, &'s str);

/// Two servers that expose one name: `kept` serves it, `dropped`'s item is left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Collision {
    /// "tool", "prompt" or "event".
    pub what: &'static str,
    /// The exposed name.
    pub name: String,
    /// The server that keeps it.
    pub kept: String,
    /// The server whose item is left out.
    pub dropped: String,
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} name {:?} is exposed by both server {:?} and server {:?}: {:?} keeps it, {:?}'s is not served; give one of them a different `prefix`",
            self.what, self.name, self.kept, self.dropped, self.kept, self.dropped
        )
    }
}

/// Which server keeps each exposed name that several claim (`claims`: a claimant and a name it
/// exposes): the one `previous` routed it to, if it still claims it, else the first in order.
pub(super) fn keepers<'s>(
    claims: impl IntoIterator<Item = (Claimant<'s>, String)>,
    previous: &Merged,
) -> HashMap<String, Claimant<'s>> {
    let mut claimants: HashMap<String, Vec<Claimant<'s>>> = HashMap::new();
    for (claimant, name) in claims {
        let listed = claimants.entry(name).or_default();
        if !listed.iter().any(|(owner, _)| *owner == claimant.0) {
            listed.push(claimant);
        }
    }
    claimants
        .into_iter()
        .filter(|(_, listed)| listed.len() > 1)
        .map(|(name, listed)| {
            let earlier = previous.owner(&name);
            let keeper = listed
                .iter()
                .find(|(owner, _)| Some(*owner) == earlier)
                .unwrap_or(&listed[0]);
            (name, *keeper)
        })
        .collect()
}

/// The collision that leaves `claimant`'s item named `exposed` out, if another server keeps it.
pub(super) fn lost(
    keepers: &HashMap<String, Claimant<'_>>,
    exposed: &str,
    (owner, server): Claimant<'_>,
    what: &'static str,
) -> Option<Collision> {
    let (kept_by, kept) = keepers.get(exposed)?;
    (*kept_by != owner).then(|| Collision {
        what,
        name: exposed.to_owned(),
        kept: (*kept).to_owned(),
        dropped: server.to_owned(),
    })
}
