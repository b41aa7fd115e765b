//! The 2026-07-28 HTTP clients heard from. They share one session of the ledger (stateless,
//! they open none), but each names itself (`clientInfo`) on every request: `mcpx status` and the
//! console show them by that name and by who called, as a legacy session shows its own.

use crate::access::Identity;
use crate::json::Member;
use crate::view::HeardClient;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// The most kept: past it, the one heard from longest ago gives way.
const MOST: usize = 32;

/// The clients heard from, each with its caller.
#[derive(Debug, Default)]
pub struct HeardClients {
    heard: Vec<Heard>,
}

#[derive(Debug)]
struct Heard {
    name: String,
    version: String,
    caller: Arc<Identity>,
    requests: u64,
    last: Instant,
}

impl HeardClients {
    /// A request of `caller`'s from the client `info` names.
    pub fn note(&mut self, info: &Value, caller: &Arc<Identity>) {
        let text = |key: &str| info.member(key).and_then(Value::as_str).unwrap_or("-");
        let (name, version) = (text("name"), text("version"));
        let now = Instant::now();
        let same = |h: &Heard| {
            h.name == name
                && h.version == version
                && (Arc::ptr_eq(&h.caller, caller) || *h.caller == **caller)
        };
        if let Some(heard) = self.heard.iter_mut().find(|h| same(h)) {
            heard.requests += 1;
            heard.last = now;
            return;
        }
        if self.heard.len() >= MOST {
            let oldest = (0..self.heard.len()).min_by_key(|&i| self.heard[i].last);
            oldest.map(|i| self.heard.swap_remove(i));
        }
        // What a client names itself is cut: it is shown, not trusted.
        let cut = |text: &str| text.chars().take(64).collect::<String>();
        self.heard.push(Heard {
            name: cut(name),
            version: cut(version),
            caller: Arc::clone(caller),
            requests: 1,
            last: now,
        });
    }

    /// Whether anyone came.
    pub fn is_empty(&self) -> bool {
        self.heard.is_empty()
    }

    /// As the admin socket shows them, the latest first.
    pub fn views(&self) -> Vec<HeardClient> {
        let mut views: Vec<_> = self
            .heard
            .iter()
            .map(|h| HeardClient {
                name: h.name.clone(),
                version: h.version.clone(),
                caller: h.caller.summary(),
                requests: h.requests,
                idle_ms: h.last.elapsed().as_millis() as u64,
            })
            .collect();
        views.sort_by_key(|v| v.idle_ms);
        views
    }
}

#[cfg(test)]
mod every_revision {
    mod ledger {
        use super::super::*;
        use crate::access::Kind;
        use serde_json::json;

        #[test]
        fn clients_are_counted_by_name_and_caller_and_bounded() {
            let mut heard = HeardClients::default();
            let owner = Arc::new(Identity::of_kind(Kind::LocalOwner));
            let token = Arc::new(Identity::of_kind(Kind::DaemonToken));
            let codex = json!({"name": "codex", "version": "0.9"});
            heard.note(&codex, &owner);
            heard.note(&codex, &Arc::new(Identity::of_kind(Kind::LocalOwner)));
            heard.note(&codex, &token);
            let views = heard.views();
            assert_eq!(views.len(), 2);
            let owners = views.iter().find(|v| v.caller == "local owner").unwrap();
            assert_eq!((owners.name.as_str(), owners.requests), ("codex", 2));
            for n in 0..40 {
                heard.note(&json!({"name": format!("c{n}")}), &owner);
            }
            assert_eq!(heard.views().len(), MOST);
        }
    }
}
