//! The disguises a secret can wear past a pattern: zero-width characters inside it, letters
//! from another script that look like ASCII (a Cyrillic `а` in `ghp_`), full-width forms, or
//! base64 of it. The scanner reads a text also as a reader would see it ([`plain`]), with a map
//! back to the text's own bytes so that what is masked is the original's, and reads inside runs
//! of base64 ([`base64_runs`]), masking a run whole when what it decodes to holds a secret.

use base64::Engine;
use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// A text as a reader sees it, and where each of its bytes came from.
#[derive(Debug)]
pub struct Plain {
    /// The text, zero-width characters dropped and look-alike letters read as ASCII.
    pub text: String,
    /// For each byte of `text`, the range of the original's bytes it stands for.
    from: Vec<Range<usize>>,
}

impl Plain {
    /// The original's bytes that `span` of the plain text stands for.
    pub fn original(&self, span: &Range<usize>) -> Range<usize> {
        match (
            self.from.get(span.start),
            span.end.checked_sub(1).and_then(|e| self.from.get(e)),
        ) {
            (Some(first), Some(last)) => first.start..last.end,
            _ => 0..0,
        }
    }
}

/// `text` as a reader sees it, or `None` when that is `text` itself: an ASCII text (the usual
/// case) costs one look at its bytes, any other with nothing to undo one at its characters; only
/// a disguised one is copied, with its map.
pub fn plain(text: &str) -> Option<Plain> {
    let disguised = |c: char| is_invisible(c) || look_alike(c).is_some();
    if text.is_ascii() || !text.chars().any(disguised) {
        return None;
    }
    let mut plain = Plain {
        text: String::with_capacity(text.len()),
        from: Vec::with_capacity(text.len()),
    };
    for (at, c) in text.char_indices() {
        let original = at..at + c.len_utf8();
        if is_invisible(c) {
            continue;
        }
        let seen = look_alike(c).unwrap_or(c);
        let before = plain.text.len();
        plain.text.push(seen);
        for _ in before..plain.text.len() {
            plain.from.push(original.clone());
        }
    }
    Some(plain)
}

/// Characters that show as nothing: a secret split by them reads whole.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'
    )
}

/// The ASCII letter or sign that `c` looks like, if it is one of the look-alikes a secret's
/// shape can be hidden by: full-width forms, and the Cyrillic and Greek letters drawn as Latin.
fn look_alike(c: char) -> Option<char> {
    if ('\u{FF01}'..='\u{FF5E}').contains(&c) {
        return char::from_u32(c as u32 - 0xFF01 + 0x21);
    }
    const TABLE: &[(char, char)] = &[
        ('а', 'a'),
        ('е', 'e'),
        ('о', 'o'),
        ('р', 'p'),
        ('с', 'c'),
        ('у', 'y'),
        ('х', 'x'),
        ('і', 'i'),
        ('ј', 'j'),
        ('ѕ', 's'),
        ('ԁ', 'd'),
        ('һ', 'h'),
        ('ԛ', 'q'),
        ('ԝ', 'w'),
        ('А', 'A'),
        ('В', 'B'),
        ('Е', 'E'),
        ('К', 'K'),
        ('М', 'M'),
        ('Н', 'H'),
        ('О', 'O'),
        ('Р', 'P'),
        ('С', 'C'),
        ('Т', 'T'),
        ('Х', 'X'),
        ('Ѕ', 'S'),
        ('І', 'I'),
        ('Ј', 'J'),
        ('α', 'a'),
        ('ο', 'o'),
        ('ν', 'v'),
        ('ι', 'i'),
        ('κ', 'k'),
        ('ρ', 'p'),
        ('τ', 't'),
        ('Α', 'A'),
        ('Β', 'B'),
        ('Ε', 'E'),
        ('Ζ', 'Z'),
        ('Η', 'H'),
        ('Ι', 'I'),
        ('Κ', 'K'),
        ('Μ', 'M'),
        ('Ν', 'N'),
        ('Ο', 'O'),
        ('Ρ', 'P'),
        ('Τ', 'T'),
        ('Υ', 'Y'),
        ('Χ', 'X'),
    ];
    TABLE.iter().find(|(from, _)| *from == c).map(|(_, to)| *to)
}

/// Runs long enough to be base64 of a credential (the shortest shape the scanner knows is about
/// 20 characters, 27 or more in base64), standard or URL-safe, padded or not.
static BASE64_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)[A-Za-z0-9+/_-]{24,}={0,2}").expect("a valid pattern"));

/// Each run of base64 in `text` that decodes to UTF-8 text: where it is, and what it says.
pub fn base64_runs(text: &str) -> Vec<(Range<usize>, String)> {
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    BASE64_RUN
        .find_iter(text)
        .filter_map(|run| {
            let bytes = engines.iter().find_map(|e| e.decode(run.as_str()).ok())?;
            let decoded = String::from_utf8(bytes).ok()?;
            Some((run.range(), decoded))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod guardrails {
            use crate::guardrails::disguise::{base64_runs, plain};

            #[test]
            fn a_text_is_read_without_what_hides_its_shape_and_maps_back_to_its_bytes() {
                let text = "key: gh\u{200B}p_аb";
                let seen = plain(text).unwrap();
                assert_eq!(seen.text, "key: ghp_ab");
                let at = seen.text.find("ghp_ab").unwrap();
                let original = seen.original(&(at..seen.text.len()));
                assert_eq!(&text[original], "gh\u{200B}p_аb");
                assert!(plain("plain ascii").is_none());
                assert!(plain("naïve café").is_none(), "nothing to change");
            }

            #[test]
            fn base64_of_text_is_read_and_of_bytes_is_not() {
                use base64::Engine;
                let encoded =
                    base64::engine::general_purpose::STANDARD.encode("token ghp_0123456789");
                let text = format!("see {encoded} here");
                let runs = base64_runs(&text);
                assert_eq!(runs.len(), 1);
                assert_eq!(runs[0].1, "token ghp_0123456789");
                assert_eq!(&text[runs[0].0.clone()], encoded);
                let binary = base64::engine::general_purpose::STANDARD.encode([0xff_u8; 30]);
                assert!(base64_runs(&binary).is_empty());
            }
        }
    }
}
