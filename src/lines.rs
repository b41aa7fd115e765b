//! Newline-delimited input read under a cap, so that nobody on the other end of a pipe (a client on
//! stdin, an upstream's stdout or stderr) can make mcpx hold more than the cap in memory: a longer
//! line is read past in buffer-sized pieces, never held whole.

use crate::jsonrpc::Id;
use smol::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// What one read gave.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// The input ended.
    Eof,
    /// A whole line, without its newline, in the caller's buffer.
    Line,
    /// A line longer than the cap, read past. The buffer holds its first `cap + 1` bytes, and
    /// `length` is how long it was (without its newline).
    TooLong {
        /// The line's whole length in bytes.
        length: u64,
    },
}

/// Reads one line of at most `cap` bytes into `buf` (cleared first, newline dropped). A longer
/// line is read to its end without being kept; `past_cap` sees all of its bytes in order (those
/// already in `buf` first), so a caller can still learn something from it in constant memory. A
/// read error ends the input, as a closed pipe does.
pub async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    buf: &mut Vec<u8>,
    cap: usize,
    mut past_cap: impl FnMut(&[u8]),
) -> Read {
    buf.clear();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    match input.take(limit).read_until(b'\n', buf).await {
        Ok(0) | Err(_) => return Read::Eof,
        Ok(_) => {}
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Read::Line;
    }
    if buf.len() <= cap {
        // The last line, without a newline before EOF.
        return Read::Line;
    }
    past_cap(buf);
    let mut length = buf.len() as u64;
    loop {
        let chunk = match input.fill_buf().await {
            Ok([]) | Err(_) => return Read::TooLong { length },
            Ok(chunk) => chunk,
        };
        let (taken, ended) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (at, true),
            None => (chunk.len(), false),
        };
        past_cap(&chunk[..taken]);
        length += taken as u64;
        input.consume(taken + usize::from(ended));
        if ended {
            return Read::TooLong { length };
        }
    }
}

/// Finds the top-level `"id"` of a JSON-RPC message fed to it in pieces, holding nothing but the
/// id itself: how an answer too long to read is still matched to the request it answers, wherever
/// in the object its id stands.
#[derive(Debug, Default)]
pub struct IdScanner {
    /// How deep in objects and arrays the byte being read is (1: the message's own members).
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The first bytes of the string at depth 1 being read, and its length so far.
    key: [u8; 2],
    key_length: usize,
    /// The last thing read at depth 1 was the string `"id"`: a `:` now starts its value.
    after_id_key: bool,
    /// The id's value, while it is being read.
    value: Option<Vec<u8>>,
    found: Option<Id>,
}

/// The longest id value read: ids are numbers or short strings.
const MAX_ID_BYTES: usize = 256;

impl IdScanner {
    /// Reads the next piece of the message.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&byte, rest)) = bytes.split_first() {
            if self.found.is_some() {
                return;
            }
            // Most of a long message is the inside of strings: skip to the next quote or
            // backslash at once (the first two bytes of a string are still read one by one, in
            // case it is the key `"id"`).
            if self.in_string && !self.escaped && self.value.is_none() && self.key_length >= 2 {
                let plain = memchr::memchr2(b'"', b'\\', bytes).unwrap_or(bytes.len());
                if plain > 0 {
                    self.key_length = self.key_length.saturating_add(plain);
                    bytes = &bytes[plain..];
                    continue;
                }
            }
            self.step(byte);
            bytes = rest;
        }
    }

    /// The message's id, once it has been read whole.
    pub fn id(&self) -> Option<&Id> {
        self.found.as_ref()
    }

    fn step(&mut self, byte: u8) {
        if let Some(value) = &mut self.value {
            let ends_value = !self.in_string && self.depth == 1 && matches!(byte, b',' | b'}');
            if ends_value {
                let id = serde_json::from_slice(value)
                    .ok()
                    .and_then(|v| Id::from_value(&v));
                self.value = None;
                self.found = id;
                return;
            }
            if value.len() < MAX_ID_BYTES {
                value.push(byte);
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                self.after_id_key = self.depth == 1
                    && self.value.is_none()
                    && self.key_length == 2
                    && &self.key == b"id";
            } else if self.key_length < self.key.len() {
                self.key[self.key_length] = byte;
                self.key_length += 1;
            } else {
                self.key_length += 1;
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                self.key_length = 0;
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.after_id_key => self.value = Some(Vec::new()),
            _ => {}
        }
        if !byte.is_ascii_whitespace() && byte != b'"' {
            self.after_id_key = false;
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod lines {
        use crate::jsonrpc::Id;
        use crate::lines::{read_line, IdScanner, Read};

        fn scan(text: &str) -> Option<Id> {
            // Every split point must give the same answer as one piece.
            let whole = {
                let mut scanner = IdScanner::default();
                scanner.feed(text.as_bytes());
                scanner.id().cloned()
            };
            for at in 0..=text.len() {
                let mut scanner = IdScanner::default();
                scanner.feed(&text.as_bytes()[..at]);
                scanner.feed(&text.as_bytes()[at..]);
                assert_eq!(scanner.id(), whole.as_ref(), "split at {at} of {text}");
            }
            whole
        }

        #[test]
        fn the_top_level_id_is_found_wherever_it_stands() {
            assert_eq!(
                scan(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
                Some(Id::Number(7))
            );
            assert_eq!(
                scan(
                    r#"{"result":{"id":1,"x":[{"id":2}],"s":"\"id\":3"},"jsonrpc":"2.0","id" : 42 }"#
                ),
                Some(Id::Number(42))
            );
            assert_eq!(
                scan(r#"{"result":"a \\\" \"id\": 5","id":"a,b}"}"#),
                Some(Id::String("a,b}".into()))
            );
        }

        #[test]
        fn a_message_without_a_top_level_id_has_none() {
            assert_eq!(scan(r#"{"method":"id","params":{"id":1}}"#), None);
            assert_eq!(scan(r#"{"idx":1,"method":"m"}"#), None);
            assert_eq!(scan(r#"{"method":"id","params":{}}"#), None);
        }

        #[test]
        fn a_line_over_the_cap_is_read_past_and_the_next_line_is_whole() {
            let input = format!("{}\nnext\n", "x".repeat(100_000));
            let mut input = smol::io::BufReader::with_capacity(1024, input.as_bytes());
            let mut buf = Vec::new();
            let mut seen = 0usize;
            let read = smol::block_on(read_line(&mut input, &mut buf, 10, |b| seen += b.len()));
            assert_eq!(read, Read::TooLong { length: 100_000 });
            assert_eq!(seen, 100_000);
            assert_eq!(buf.len(), 11);
            let read = smol::block_on(read_line(&mut input, &mut buf, 10, |_| panic!()));
            assert_eq!((read, buf.as_slice()), (Read::Line, &b"next"[..]));
            let read = smol::block_on(read_line(&mut input, &mut buf, 10, |_| panic!()));
            assert_eq!(read, Read::Eof);
        }
    }
}
