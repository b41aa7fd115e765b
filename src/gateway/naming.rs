//! Exposed names: a tool or prompt `t` of server `NAME` is exposed as `NAME__t`.
//!
//! Clients restrict tool names to 64 characters of `[A-Za-z0-9_-]`, so a candidate outside that
//! (too long, or with other characters) is shortened deterministically: other characters become
//! `_`, the result is cut, and 8 hex digits of the SHA-256 of the unshortened candidate are
//! appended, so two different long names never collapse into one and the same name always
//! shortens the same way. An event type no model API sees, and events are named with dots
//! (`ticket.created`, CloudEvents' `com.example.ticket.created`): its name keeps `.`, `:` and
//! `/` too, and up to [`MAX_EVENT_LEN`] characters ([`exposed_event`]).

use sha2::{Digest, Sha256};

/// The longest exposed name.
pub const MAX_LEN: usize = 64;

/// The longest exposed event type name: a bound, not a rule of any client's.
pub const MAX_EVENT_LEN: usize = 256;

/// Between the prefix and the upstream's own name.
pub const SEPARATOR: &str = "__";

/// The name a client sees for `name` of an upstream with `prefix` (`""` exposes bare names).
pub fn exposed(prefix: &str, name: &str) -> String {
    shaped(prefix, name, MAX_LEN, is_allowed)
}

/// The name a client sees for the event type `name` of an upstream with `prefix`: as a tool's,
/// but keeping the characters event types are named with.
pub fn exposed_event(prefix: &str, name: &str) -> String {
    shaped(prefix, name, MAX_EVENT_LEN, |b| {
        is_allowed(b) || b".:/".contains(&b)
    })
}

/// `prefix__name`, shortened to `max` characters of those `allowed` where it is not one.
fn shaped(prefix: &str, name: &str, max: usize, allowed: fn(u8) -> bool) -> String {
    let candidate = if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}{SEPARATOR}{name}")
    };
    if candidate.len() <= max && !candidate.is_empty() && candidate.bytes().all(allowed) {
        return candidate;
    }
    let digest = Sha256::digest(candidate.as_bytes());
    let suffix = hex::encode(&digest[..4]);
    let mut stem: String = candidate
        .chars()
        .map(|c| {
            if c.is_ascii() && allowed(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect();
    stem.truncate(max - suffix.len() - 1);
    format!("{stem}_{suffix}")
}

fn is_allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

#[cfg(test)]
mod every_revision {
    mod naming {
        use crate::gateway::naming::{exposed, exposed_event, MAX_EVENT_LEN, MAX_LEN};

        #[test]
        fn event_types_keep_their_dots_and_odd_ones_still_shorten() {
            assert_eq!(
                exposed_event("alpha", "ticket.created"),
                "alpha__ticket.created"
            );
            assert_eq!(
                exposed_event("ce", "com.example:orders/v1.created"),
                "ce__com.example:orders/v1.created"
            );
            let odd = exposed_event("srv", "with space\u{1b}");
            assert!(!odd.contains(' ') && !odd.contains('\u{1b}'), "{odd}");
            assert!(exposed_event("s", &"e".repeat(400)).len() <= MAX_EVENT_LEN);
        }

        #[test]
        fn tools_are_prefixed_with_their_server() {
            assert_eq!(
                exposed("time", "get_current_time"),
                "time__get_current_time"
            );
        }

        #[test]
        fn an_empty_prefix_exposes_bare_names() {
            assert_eq!(exposed("", "echo"), "echo");
        }

        #[test]
        fn long_or_odd_names_shorten_deterministically_within_64() {
            let long = "x".repeat(100);
            let a = exposed("server", &long);
            assert!(a.len() <= MAX_LEN, "{a}");
            assert_eq!(a, exposed("server", &long));
            assert_ne!(a, exposed("server", &format!("{long}y")));
            let odd = exposed("srv", "dotted.name with space");
            assert!(
                odd.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{odd}"
            );
        }
    }
}
