//! Secrets masked in what a server writes: a server given a token may print it (a debug line,
//! an error quoting its own request), and mcpx logs each line of a server's stderr, to a journal
//! other administrators read. Each value its placeholders gave, and each line of a value of
//! several lines (a PEM key), is replaced there by `[redacted]`, unless every child has it
//! anyway (`${HOME}` is no secret: see [`pieces`]). A piece shorter than [`SHORTEST`] is left
//! alone: masking every `a` or `42` would garble the log while hiding nothing a guess would not
//! find.
//!
//! Past the server's stderr, a server's secret can reach mcpx's log by many paths: a log message
//! it sends (`notifications/message`, whose data goes to clients too), a line on stdout that is
//! not JSON-RPC, an error mcpx builds from its answer. So every secret a started server was
//! given is also [`register`]ed, and the log itself is written through
//! [`crate::log_writer::LogWriter`], the one door every log line leaves by; a log message's data is masked before it goes anywhere
//! ([`mask_value`]), string by string, so that JSON's escaping cannot hide a secret from the mask.

use serde_json::Value;
use std::borrow::Cow;
use std::sync::RwLock;

/// The pieces of every started server's secrets, longest first: what the log never shows.
static REGISTERED: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// The shortest piece of a secret that is masked.
pub const SHORTEST: usize = 4;

/// What stands in for a secret.
const MASK: &str = "[redacted]";

/// The pieces of `secrets` to mask, longest first (so that a secret containing another is
/// masked whole); a value among `public` (what every child is given anyway) is none.
pub fn pieces(secrets: &[String], public: &[String]) -> Vec<String> {
    let mut pieces: Vec<String> = secrets
        .iter()
        .filter(|secret| !public.contains(secret))
        .flat_map(|secret| secret.lines())
        .map(str::trim)
        .filter(|piece| piece.len() >= SHORTEST)
        .map(str::to_owned)
        .collect();
    pieces.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    pieces.dedup();
    pieces
}

/// `text` with each of `pieces` replaced by `[redacted]`.
pub fn mask<'a>(text: &'a str, pieces: &[String]) -> Cow<'a, str> {
    let mut text = Cow::Borrowed(text);
    for piece in pieces {
        if text.contains(piece.as_str()) {
            text = Cow::Owned(text.replace(piece.as_str(), MASK));
        }
    }
    text
}

/// Adds `pieces` (from [`pieces`]) to what the log and log messages never show. A secret stays
/// registered after its server is removed: masking an old value costs nothing.
pub fn register(new: &[String]) {
    let known = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    if new.iter().all(|piece| known.contains(piece)) {
        return;
    }
    drop(known);
    let mut known = REGISTERED.write().unwrap_or_else(|p| p.into_inner());
    known.extend(new.iter().cloned());
    known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    known.dedup();
}

/// `text` with every registered secret masked.
pub fn mask_registered(text: &str) -> Cow<'_, str> {
    let known = REGISTERED.read().unwrap_or_else(|p| p.into_inner());
    match known.is_empty() {
        true => Cow::Borrowed(text),
        false => Cow::Owned(mask(text, &known).into_owned()),
    }
}

/// Masks every registered secret in each string of `value`, at any depth, keys included.
pub fn mask_value(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Cow::Owned(masked) = mask_registered(text) {
                *text = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_value),
        Value::Object(members) => {
            let masked_keys = members
                .keys()
                .any(|key| matches!(mask_registered(key), Cow::Owned(_)));
            if masked_keys {
                let entries = std::mem::take(members);
                members.extend(
                    entries
                        .into_iter()
                        .map(|(key, value)| (mask_registered(&key).into_owned(), value)),
                );
            }
            members.values_mut().for_each(mask_value);
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A configured URL as mcpx names it to people (a refusal, a log line): its user, password,
/// query and fragment, where keys are put (`?key=…`, `https://user:key@…`), stand masked.
pub fn url_shown(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "(a URL that does not parse)".into();
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let _ = parsed.set_username(MASK);
        let _ = parsed.set_password(None);
    }
    if parsed.query().is_some() {
        parsed.set_query(Some(MASK));
    }
    if parsed.fragment().is_some() {
        parsed.set_fragment(Some(MASK));
    }
    parsed.to_string()
}

#[cfg(test)]
mod every_revision {
    mod secrets {
        use crate::redact::{mask, pieces, url_shown};

        #[test]
        fn a_url_is_named_without_its_user_password_query_or_fragment() {
            let shown = url_shown("https://bob:hunter2@hooks.example:8443/check?key=s3cret#frag");
            for secret in ["bob", "hunter2", "s3cret", "frag"] {
                assert!(!shown.contains(secret), "{shown}");
            }
            assert!(shown.starts_with("https://") && shown.contains("hooks.example:8443/check"));
            assert_eq!(url_shown("http://127.0.0.1:9/h"), "http://127.0.0.1:9/h");
            assert!(!url_shown("not a url ?key=s3cret").contains("s3cret"));
        }

        #[test]
        fn a_secret_and_each_line_of_a_long_one_are_masked_and_short_pieces_are_not() {
            let secrets = [
                "tok-123".to_owned(),
                "-----BEGIN KEY-----\nAAAAbbbbCCCC\n-----END KEY-----\n".to_owned(),
                "ab".to_owned(),
                "/home/me".to_owned(),
            ];
            let pieces = pieces(&secrets, &["/home/me".to_owned()]);
            assert_eq!(
                mask("auth tok-123 failed", &pieces),
                "auth [redacted] failed"
            );
            assert_eq!(
                mask("key line AAAAbbbbCCCC", &pieces),
                "key line [redacted]"
            );
            assert_eq!(mask("about ab", &pieces), "about ab");
            assert_eq!(mask("in /home/me/x", &pieces), "in /home/me/x");
            assert!(matches!(
                mask("nothing here", &pieces),
                std::borrow::Cow::Borrowed(_)
            ));
        }

        #[test]
        fn a_registered_secret_is_masked_in_every_string_of_a_value_at_any_depth() {
            crate::redact::register(&["sk-registered-0451".to_owned()]);
            let mut value = serde_json::json!({"data": {"deep": ["x sk-registered-0451 y", 7],
                "sk-registered-0451": "key"}, "logger": "l"});
            crate::redact::mask_value(&mut value);
            assert_eq!(
                value,
                serde_json::json!({"data": {"deep": ["x [redacted] y", 7],
                    "[redacted]": "key"}, "logger": "l"})
            );
        }
    }
}
