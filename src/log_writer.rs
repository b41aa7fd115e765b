//! The one door every line of mcpx's log leaves by (standard error, which journald reads):
//! each line masked of every registered secret ([`crate::redact`]) and made safe to read.
//!
//! Much of what mcpx logs came from someone else: a client's name and redirect URI sent to the
//! built-in authorization server by anyone who can reach it, a server's log messages and its
//! answers' errors. Any of them may hold a line break (to forge a whole line of its own: "the
//! owner allowed …"), a carriage return or terminal escape (to overwrite what a person reads),
//! or a bidirectional override (to show text reversed). So each control character inside a log
//! line, and each bidirectional formatting character, is written escaped (`\n`, `\u{1b}`,
//! `\u{202e}`): a log line is one line, and reads as what it is. On a terminal, the colours
//! mcpx's own formatter adds (`ESC [ digits m`) are kept.

use std::borrow::Cow;
use std::io::Write;

/// The log's writer: standard error, one line at a time, masked and escaped.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter {
    /// Whether lines carry the formatter's colours (stderr is a terminal).
    pub colours: bool,
}

impl Write for LogWriter {
    fn write(&mut self, event: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(event);
        let (line, end) = match text.strip_suffix('\n') {
            Some(line) => (line, "\n"),
            None => (text.as_ref(), ""),
        };
        let masked = crate::redact::mask_registered(line);
        let escaped = escape(&masked, self.colours);
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(escaped.as_bytes())?;
        stderr.write_all(end.as_bytes())?;
        Ok(event.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> LogWriter {
        *self
    }
}

/// Whether `c` changes how the text around it is displayed: the bidirectional embeddings,
/// overrides and isolates, and the directional marks.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `line` with each control and bidirectional character escaped; with `colours`, the SGR
/// sequences (`ESC [ 0-9; m`) kept as they are.
pub fn escape(line: &str, colours: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || is_bidi_control(c);
    if !line.chars().any(unsafe_char) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if colours && c == '\u{1b}' {
            if let Some(sgr) = colour_sequence(rest) {
                out.push_str(sgr);
                rest = &rest[sgr.len()..];
                continue;
            }
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push('\t'),
            c if unsafe_char(c) => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// A JSON line (the audit log's) with each bidirectional formatting character written as a JSON
/// escape (`\u202e`): the same text to a parser, and no reversed text to a person reading it.
/// serde_json already escapes control characters; bidirectional ones can only stand inside a
/// string, where the escape means the same.
pub fn escape_bidi_in_json(line: String) -> String {
    if !line.chars().any(is_bidi_control) {
        return line;
    }
    line.chars()
        .map(|c| match is_bidi_control(c) {
            true => format!("\\u{:04x}", c as u32),
            false => c.to_string(),
        })
        .collect()
}

/// The SGR sequence at the start of `text` (`ESC [`, digits and semicolons, `m`), if one is.
fn colour_sequence(text: &str) -> Option<&str> {
    let body = text.strip_prefix("\u{1b}[")?;
    let digits = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(digits) == Some(&b'm')).then(|| &text[..2 + digits + 1])
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod logging {
            use crate::log_writer::{escape, escape_bidi_in_json};

            #[test]
            fn a_line_break_escape_or_bidi_override_inside_a_line_is_escaped() {
                let forged =
                    "client Evil\n2026-12-05 INFO the owner allowed Claude\r\u{1b}[2J\u{202e}";
                assert_eq!(
                    escape(forged, false),
                    "client Evil\\n2026-12-05 INFO the owner allowed Claude\\r\\u{1b}[2J\\u{202e}"
                );
                assert_eq!(escape("plain\ttext", false), "plain\ttext");
                let json = escape_bidi_in_json("{\"client\":\"a\u{202e}b\"}".to_owned());
                assert_eq!(json, r#"{"client":"a\u202eb"}"#);
                let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
                assert_eq!(parsed["client"], "a\u{202e}b");
                // The formatter's own colours stay on a terminal; an erase does not.
                assert_eq!(
                    escape("\u{1b}[32mINFO\u{1b}[0m \u{1b}[2J", true),
                    "\u{1b}[32mINFO\u{1b}[0m \\u{1b}[2J"
                );
            }
        }
    }
}
