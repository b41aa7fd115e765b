//! Exposed names: a tool or prompt `t` of server `NAME` is exposed as `NAME__t`.
//!
//! Clients restrict tool names to 64 characters of `[A-Za-z0-9_-]`, so a candidate outside that
//! (too long, or with other characters) is shortened deterministically: other characters become
//! `_`, the result is cut, and 8 hex digits of the SHA-256 of the unshortened candidate are
//! appended, so two different long names never collapse into one and the same name always
//! shortens the same way.

use sha2::{Digest, Sha256};

/// The longest exposed name.
pub const MAX_LEN: usize = 64;

/// Between the prefix and the upstream's own name.
pub const SEPARATOR: &str = "__";

/// The name a client sees for `name` of an upstream with `prefix` (`""` exposes bare names).
pub fn exposed(prefix: &str, name: &str) -> String {
    let candidate = if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}{SEPARATOR}{name}")
    };
    if candidate.len() <= MAX_LEN && !candidate.is_empty() && candidate.bytes().all(is_allowed) {
        return candidate;
    }
    let digest = Sha256::digest(candidate.as_bytes());
    let suffix = hex::encode(&digest[..4]);
    let mut stem: String = candidate
        .chars()
        .map(|c| {
            if c.is_ascii() && is_allowed(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect();
    stem.truncate(MAX_LEN - suffix.len() - 1);
    format!("{stem}_{suffix}")
}

fn is_allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

#[cfg(test)]
mod every_revision {
    mod naming {
        use crate::gateway::naming::{exposed, MAX_LEN};

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
