//! Server-sent events as a remote upstream sends them: bytes in, in chunks cut anywhere, and the
//! type and `data` of each complete event out.
//!
//! Lines may end in CRLF, LF or a bare CR (the SSE grammar allows all three); a leading byte-order
//! mark is skipped; comments and unknown fields are ignored. An event may not grow past
//! a bound, so an upstream that never ends one cannot make mcpx buffer without end.

/// An event that grew past the bound before it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTooLarge {
    /// The bound, in bytes.
    pub limit: usize,
}

impl std::fmt::Display for EventTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an event grew past {} bytes", self.limit)
    }
}

/// One event that carried data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Its type (`event:`), `message` when it names none.
    pub kind: String,
    /// Its `data` lines joined by LF.
    pub data: String,
}

/// Splits one event stream into its events.
#[derive(Debug)]
pub struct EventStream {
    /// The unfinished event, its line endings already made LF.
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no blank line, so each byte is scanned once.
    scanned: usize,
    /// The last byte pushed was a CR, so an LF that follows belongs to it.
    after_cr: bool,
    /// Nothing has been pushed yet (a byte-order mark may come).
    at_start: bool,
    limit: usize,
    /// The last event id the server gave (`id:`), to resume the stream from.
    last_event_id: Option<String>,
    /// How long the server asked a client to wait before reconnecting (`retry:`).
    retry: Option<std::time::Duration>,
}

impl EventStream {
    /// A stream whose events may each take up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        EventStream {
            buffer: Vec::new(),
            scanned: 0,
            after_cr: false,
            at_start: true,
            limit,
            last_event_id: None,
            retry: None,
        }
    }

    /// The last event id the server gave, if any: where a resumed stream starts after.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection delay the server asked for, if any.
    pub fn retry(&self) -> Option<std::time::Duration> {
        self.retry
    }

    /// Takes the next bytes of the stream; returns each event with data they complete, in
    /// order, or the error once an unfinished event is past the bound.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Sent>, EventTooLarge> {
        let mut events = Vec::new();
        for &byte in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => continue,
                b'\r' => self.buffer.push(b'\n'),
                other => self.buffer.push(other),
            }
            if self.at_start {
                self.skip_byte_order_mark();
            }
            if byte == b'\n' || byte == b'\r' {
                self.take_complete_events(&mut events);
            }
            if self.buffer.len() > self.limit {
                return Err(EventTooLarge { limit: self.limit });
            }
        }
        Ok(events)
    }

    /// Drops a byte-order mark at the very start, however the chunks cut it.
    fn skip_byte_order_mark(&mut self) {
        const MARK: &[u8] = b"\xEF\xBB\xBF";
        if self.buffer == MARK {
            self.buffer.clear();
            self.at_start = false;
        } else if !MARK.starts_with(&self.buffer) {
            self.at_start = false;
        }
    }

    /// Moves the event a blank line has just ended, if any, out of the buffer.
    fn take_complete_events(&mut self, events: &mut Vec<Sent>) {
        let Some(at) = self.buffer[self.scanned..]
            .windows(2)
            .position(|w| w == b"\n\n")
            .map(|p| p + self.scanned)
        else {
            self.scanned = self.buffer.len().saturating_sub(1);
            return;
        };
        let event: Vec<u8> = self.buffer.drain(..at + 2).collect();
        self.scanned = 0;
        let kind = self.note_fields(&event[..at]);
        if let Some(data) = data_of(&event[..at]) {
            let kind = kind.unwrap_or_else(|| "message".to_owned());
            events.push(Sent { kind, data });
        }
    }

    /// Remembers an event's `id` (one without NUL, as the SSE rules say) and `retry` (digits
    /// only, in milliseconds), which apply whether or not the event carries data; returns its
    /// type, if it names one.
    fn note_fields(&mut self, event: &[u8]) -> Option<String> {
        let mut kind = None;
        let text = String::from_utf8_lossy(event);
        for line in text.split('\n') {
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    self.retry = value.parse().ok().map(std::time::Duration::from_millis)
                }
                "event" if !value.is_empty() => kind = Some(value.to_owned()),
                _ => {}
            }
        }
        kind
    }
}

/// The `data` lines of one event joined by LF, or `None` if it has none.
fn data_of(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let data: Vec<&str> = text
        .split('\n')
        .filter_map(|line| match line.split_once(':') {
            Some(("data", value)) => Some(value.strip_prefix(' ').unwrap_or(value)),
            None if line == "data" => Some(""),
            _ => None,
        })
        .collect();
    (!data.is_empty()).then(|| data.join("\n"))
}

#[cfg(test)]
mod every_revision {
    mod http_upstream {
        use crate::upstream::event_stream::{EventStream, EventTooLarge, Sent};

        /// The data of the events `bytes` complete.
        fn data(stream: &mut EventStream, bytes: &[u8]) -> Vec<String> {
            let events = stream.push(bytes).unwrap();
            events.into_iter().map(|event| event.data).collect()
        }

        #[test]
        fn an_events_id_and_retry_are_remembered_with_or_without_data() {
            let mut stream = EventStream::new(1024);
            stream
                .push(b"id: 7\nretry: 1500\ndata: x\n\nid: 8\n\nretry: soon\n\n")
                .unwrap();
            assert_eq!(stream.last_event_id(), Some("8"));
            assert_eq!(stream.retry(), Some(std::time::Duration::from_millis(1500)));
        }

        #[test]
        fn event_streams_split_into_data_across_chunks() {
            let mut stream = EventStream::new(1024);
            assert!(stream
                .push(b"event: message\ndata: {\"a\"")
                .unwrap()
                .is_empty());
            assert_eq!(
                stream
                    .push(b":1}\n\n: keep-alive\n\ndata: 2\r\n\r\n")
                    .unwrap(),
                vec![
                    Sent {
                        kind: "message".into(),
                        data: "{\"a\":1}".into()
                    },
                    Sent {
                        kind: "message".into(),
                        data: "2".into()
                    }
                ]
            );
        }

        #[test]
        fn an_events_type_comes_with_its_data() {
            let mut stream = EventStream::new(1024);
            let events = stream
                .push(b"event: endpoint\ndata: /message?sessionId=1\n\ndata: {}\n\n")
                .unwrap();
            let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
            assert_eq!(kinds, ["endpoint", "message"]);
            assert_eq!(events[0].data, "/message?sessionId=1");
        }

        #[test]
        fn every_line_ending_the_grammar_allows_ends_a_line() {
            let whole = b"\xEF\xBB\xBFdata:a\rdata: b\r\n\r\ndata\n\ndata: c\r\r";
            let mut stream = EventStream::new(1024);
            assert_eq!(data(&mut stream, whole), ["a\nb", "", "c"]);
            // The same bytes one at a time, a CRLF cut in two included.
            let mut stream = EventStream::new(1024);
            let one_by_one: Vec<String> = whole
                .iter()
                .flat_map(|b| data(&mut stream, &[*b]))
                .collect();
            assert_eq!(one_by_one, ["a\nb", "", "c"]);
        }

        #[test]
        fn an_event_that_never_ends_is_refused_at_its_bound() {
            let mut stream = EventStream::new(64);
            assert!(stream.push(&[b'x'; 60]).unwrap().is_empty());
            assert_eq!(stream.push(&[b'x'; 10]), Err(EventTooLarge { limit: 64 }));
        }
    }
}
