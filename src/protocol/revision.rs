//! The revisions of MCP that mcpx implements and the two eras they fall into: which one a client
//! speaks decides every shape mcpx writes for it.

use std::fmt;

/// The two eras of MCP: how a client and a server agree on a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: negotiated once by `initialize`, then implied.
    Legacy,
    /// 2026-07-28 and later: named in every request's `_meta`, no handshake.
    Modern,
}

/// One protocol revision that mcpx implements, oldest first, so that `<` means "older than".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// The first published revision.
    V2024_11_05,
    /// Streamable HTTP, batches, audio, tool annotations, completions capability.
    V2025_03_26,
    /// No batches; `title`, `structuredContent`, `resource_link`, elicitation.
    V2025_06_18,
    /// Icons, tasks, URL elicitation.
    V2025_11_25,
    /// Stateless: per-request `_meta`, `server/discover`, `subscriptions/listen`.
    V2026_07_28,
}

impl Revision {
    /// Every revision mcpx serves, oldest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The newest revision negotiated by `initialize`: what mcpx offers a legacy client that asked
    /// for something it does not know.
    pub const LATEST_LEGACY: Revision = Revision::V2025_11_25;

    /// The revision whose shapes answer anything that arrives before `initialize`.
    pub const OLDEST: Revision = Revision::V2024_11_05;

    /// The revision a legacy transport assumes when nothing was negotiated or named: the
    /// specification says a missing `MCP-Protocol-Version` means 2025-03-26, and that is also
    /// the batch rule before any `initialize`.
    pub const ASSUMED_WITHOUT_NEGOTIATION: Revision = Revision::V2025_03_26;

    /// The date string, as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision a date string names, if mcpx implements it.
    pub fn parse(date: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == date)
    }

    /// Which era this revision belongs to.
    pub fn era(self) -> Era {
        if self >= Revision::V2026_07_28 {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// Whether JSON-RPC batches exist: only 2025-03-26 defines them (and requires accepting them).
    pub fn allows_batches(self) -> bool {
        self == Revision::V2025_03_26
    }

    /// Every served revision's date, oldest first: the `supported` list of a -32022 error and of
    /// `server/discover`.
    pub fn all_strings() -> Vec<&'static str> {
        Revision::ALL.iter().map(|r| r.as_str()).collect()
    }

    /// The dates of the revisions negotiated by `initialize`, oldest first.
    pub fn legacy_strings() -> Vec<&'static str> {
        Revision::ALL
            .iter()
            .filter(|r| r.era() == Era::Legacy)
            .map(|r| r.as_str())
            .collect()
    }

    /// Whether a date string names a modern revision, including dates after the newest mcpx knows:
    /// a request naming one is modern and refused with -32022, never mistaken for legacy.
    pub fn date_is_modern(date: &str) -> bool {
        is_date(date) && date >= Revision::V2026_07_28.as_str()
    }
}

/// `YYYY-MM-DD` with digits where they belong, so that string order is date order.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod every_revision {
    mod protocol {
        use crate::protocol::{Era, Revision};

        #[test]
        fn dates_round_trip_and_order_is_age() {
            for r in Revision::ALL {
                assert_eq!(Revision::parse(r.as_str()), Some(r));
            }
            assert!(Revision::V2024_11_05 < Revision::V2026_07_28);
            assert_eq!(Revision::parse("2025-01-01"), None);
        }

        #[test]
        fn only_2026_07_28_is_modern() {
            assert_eq!(Revision::V2026_07_28.era(), Era::Modern);
            assert_eq!(Revision::V2025_11_25.era(), Era::Legacy);
            assert_eq!(Revision::legacy_strings().len(), 4);
        }

        #[test]
        fn later_unknown_dates_are_modern() {
            assert!(Revision::date_is_modern("2026-07-28"));
            assert!(Revision::date_is_modern("2027-01-01"));
            assert!(!Revision::date_is_modern("2025-11-25"));
            assert!(!Revision::date_is_modern("banana"));
        }

        #[test]
        fn only_2025_03_26_has_batches() {
            let with_batches: Vec<_> = Revision::ALL
                .into_iter()
                .filter(|r| r.allows_batches())
                .collect();
            assert_eq!(with_batches, vec![Revision::V2025_03_26]);
        }
    }
}
