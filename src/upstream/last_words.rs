//! What a stdio server said last on its stderr, and how it ended: the reason its failed start
//! shows in `mcpx status` and the console ("exited with status 125: Cannot connect to the
//! Docker daemon …"), which otherwise only the daemon's log would tell.

use crate::sync::lock;
use std::collections::VecDeque;
use std::sync::Mutex;

/// The lines kept.
const KEPT: usize = 3;

/// The most characters of them shown.
const SHOWN: usize = 240;

/// A server's last stderr lines, their buffers reused (a server logging each call costs a
/// copy per line, never an allocation).
#[derive(Debug, Default)]
pub(super) struct LastWords {
    lines: Mutex<VecDeque<Vec<u8>>>,
}

impl LastWords {
    /// Keeps `line`, forgetting the oldest past [`KEPT`]. Blank lines say nothing.
    pub(super) fn heard(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let mut lines = lock(&self.lines);
        let mut buffer = match lines.len() >= KEPT {
            true => lines.pop_front().unwrap_or_default(),
            false => Vec::new(),
        };
        buffer.clear();
        buffer.extend_from_slice(&line[..line.len().min(SHOWN * 4)]);
        lines.push_back(buffer);
    }

    /// Why the server ended, for people: its exit status, if known, and what it said last
    /// (with `secrets` masked, on one line, cut).
    pub(super) fn ending(&self, status: Option<i32>, secrets: &[String]) -> String {
        let said = {
            let lines = lock(&self.lines);
            let texts: Vec<_> = lines.iter().map(|l| String::from_utf8_lossy(l)).collect();
            texts
                .iter()
                .map(|t| t.trim())
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let said = crate::redact::mask(&said, secrets);
        let said = crate::view::printable(&said).into_owned();
        let said = match said.char_indices().nth(SHOWN) {
            Some((cut, _)) => format!("{}…", &said[..cut]),
            None => said,
        };
        let how = match status {
            Some(code) => format!("with status {code}"),
            None => "(its stdout closed)".to_owned(),
        };
        match said.is_empty() {
            true => how,
            false => format!("{how}: {said}"),
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod supervision {
        use super::super::*;

        #[test]
        fn the_last_lines_are_kept_masked_and_cut() {
            let words = LastWords::default();
            assert_eq!(words.ending(Some(1), &[]), "with status 1");
            for line in [
                "starting",
                "",
                "token t0k3n refused",
                "Cannot connect to the Docker daemon",
                "bye",
            ] {
                words.heard(line.as_bytes());
            }
            let ending = words.ending(Some(125), &["t0k3n".into()]);
            assert_eq!(
                ending,
                "with status 125: token [redacted] refused | Cannot connect to the Docker daemon | bye"
            );
            words.heard("x".repeat(2000).as_bytes());
            let long = words.ending(None, &[]);
            assert!(
                long.starts_with("(its stdout closed): ") && long.ends_with('…'),
                "{long}"
            );
            assert!(long.chars().count() < 300, "{long}");
        }
    }
}
