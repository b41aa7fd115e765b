//! Results cut to `maxResultChars` ([`crate::guardrails::budget`]), kept whole for a while as
//! resources of mcpx's own, `mcpx://results/ID`: read with `resources/read` by the identity
//! whose call it answered, and by nobody else (to anyone else it is a resource no server
//! has). The id is 128 random bits. What is kept is bounded: each for `[guardrails]
//! resultTtl`, and [`MAX_KEPT_BYTES`] in all, the oldest going first.

use crate::access::identity::Person;
use crate::sync::lock;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The URIs kept results are read by.
pub(super) const PREFIX: &str = "mcpx://results/";

/// How many bytes of text the kept results may hold in all.
const MAX_KEPT_BYTES: usize = 256 << 20;

/// The kept results.
#[derive(Debug, Default)]
pub(super) struct KeptResults {
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    by_id: HashMap<String, Kept>,
    /// Ids, oldest first: what goes when the bytes run out.
    order: VecDeque<String>,
    bytes: usize,
}

#[derive(Debug)]
struct Kept {
    person: Person,
    text: String,
    until: Instant,
}

impl KeptResults {
    /// Keeps `text`, the whole of a result `person`'s call got, for `ttl`: its URI; `None`
    /// when no id can be drawn (the system's random source failed).
    pub(super) fn keep(&self, person: Person, text: String, ttl: Duration) -> Option<String> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).ok()?;
        let id = hex::encode(id);
        let mut held = lock(&self.held);
        let now = Instant::now();
        held.bytes += text.len();
        held.order.push_back(id.clone());
        let until = crate::deadline::after(ttl);
        held.by_id.insert(
            id.clone(),
            Kept {
                person,
                text,
                until,
            },
        );
        // The oldest go first: those whose time is up, then as many as the bytes need.
        while let Some(oldest) = held.order.front().cloned() {
            let over = held.bytes > MAX_KEPT_BYTES && oldest != id;
            let expired = held.by_id.get(&oldest).is_none_or(|kept| kept.until <= now);
            if !over && !expired {
                break;
            }
            held.order.pop_front();
            if let Some(gone) = held.by_id.remove(&oldest) {
                held.bytes -= gone.text.len();
            }
        }
        Some(format!("{PREFIX}{id}"))
    }

    /// `resources/read`'s answer for `uri`, when it is a kept result of `person`'s.
    pub(super) fn read(&self, person: &Person, uri: &str) -> Option<Value> {
        let id = uri.strip_prefix(PREFIX)?;
        let held = lock(&self.held);
        let kept = held.by_id.get(id)?;
        if kept.person != *person || kept.until <= Instant::now() {
            return None;
        }
        let text = kept.text.clone();
        Some(json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}))
    }
}

#[cfg(test)]
mod every_revision {
    mod guardrails {
        use super::super::*;

        fn person(subject: &str) -> Person {
            Person::Caller {
                issuer: "https://issuer".into(),
                subject: subject.into(),
            }
        }

        /// A kept result is its caller's alone, and is gone when its time is.
        #[test]
        fn a_kept_result_is_read_by_its_caller_alone_until_it_expires() {
            let kept = KeptResults::default();
            let uri = kept
                .keep(person("alice"), "whole".into(), Duration::from_secs(60))
                .unwrap();
            assert!(
                uri.starts_with(PREFIX) && uri.len() == PREFIX.len() + 32,
                "{uri}"
            );
            let read = kept.read(&person("alice"), &uri).unwrap();
            assert_eq!(read["contents"][0]["text"], "whole");
            assert_eq!(kept.read(&person("bob"), &uri), None);
            assert_eq!(kept.read(&person("alice"), &format!("{uri}0")), None);
            let gone = kept
                .keep(person("alice"), "brief".into(), Duration::ZERO)
                .unwrap();
            assert_eq!(kept.read(&person("alice"), &gone), None);
        }
    }
}
