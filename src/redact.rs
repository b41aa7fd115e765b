//! Secrets masked in what a server writes: a server given a token may print it (a debug line,
//! an error quoting its own request), and mcpx logs each line of a server's stderr, to a journal
//! other administrators read. Each value its placeholders gave, and each line of a value of
//! several lines (a PEM key), is replaced there by `[redacted]`, unless every child has it
//! anyway (`${HOME}` is no secret: see [`pieces`]). A piece shorter than [`SHORTEST`] is left
//! alone: masking every `a` or `42` would garble the log while hiding nothing a guess would not
//! find.

use std::borrow::Cow;

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

#[cfg(test)]
mod every_revision {
    mod secrets {
        use crate::redact::{mask, pieces};

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
    }
}
