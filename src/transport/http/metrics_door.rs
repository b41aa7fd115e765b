//! Who reads `GET /metrics`. Its series name every server, tool and client, and count every
//! refusal: a team's gateway does not show them to each member. With `[daemon] metricsToken`
//! set only its bearer reads them (Prometheus's `authorization.credentials_file`); a daemon
//! that admits a team (`[auth] mode = "external"` or `"builtin"`) refuses them without it;
//! one that only admits its owner lets in whom `/mcp` does.

use crate::config::{AuthMode, Settings};
use subtle::ConstantTimeEq;

/// How `/metrics` is entered.
#[derive(Debug, Clone)]
pub enum MetricsAccess {
    /// As `/mcp` is: the daemon's own user, or `daemon.token`.
    AsMcp,
    /// Only with this bearer token.
    Token(String),
    /// Not at all: a team's daemon with no `metricsToken`.
    Closed,
}

/// What a request for `/metrics` gets.
#[derive(Debug, PartialEq)]
pub enum Entry {
    /// Served.
    Open,
    /// Decided as `/mcp` is.
    AsMcp,
    /// Refused: no credential, or the wrong one (401).
    Unauthorized,
    /// Refused: nothing would let it in (403, saying how to open it).
    Closed,
}

impl MetricsAccess {
    /// What `settings` say; an error names an unset placeholder or an empty token.
    pub fn from_settings(settings: &Settings) -> Result<MetricsAccess, String> {
        match settings.metrics_token.clone()? {
            Some(token) => Ok(MetricsAccess::Token(token)),
            None => match settings.config.auth.mode {
                AuthMode::Token => Ok(MetricsAccess::AsMcp),
                AuthMode::External | AuthMode::Builtin => Ok(MetricsAccess::Closed),
            },
        }
    }

    /// Whether a request with this `Authorization` header enters.
    pub fn entry(&self, authorization: Option<&[u8]>) -> Entry {
        match self {
            MetricsAccess::AsMcp => Entry::AsMcp,
            MetricsAccess::Closed => Entry::Closed,
            MetricsAccess::Token(token) => {
                let presented = authorization.and_then(|value| {
                    let (scheme, rest) = value.split_at_checked(7)?;
                    scheme.eq_ignore_ascii_case(b"bearer ").then_some(rest)
                });
                match presented {
                    Some(presented) if bool::from(presented.ct_eq(token.as_bytes())) => Entry::Open,
                    _ => Entry::Unauthorized,
                }
            }
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod metrics {
        use super::super::*;

        #[test]
        fn only_the_metrics_token_enters_when_one_is_set() {
            let access = MetricsAccess::Token("m3tr1cs".into());
            assert_eq!(access.entry(Some(b"Bearer m3tr1cs")), Entry::Open);
            assert_eq!(access.entry(Some(b"bearer m3tr1cs")), Entry::Open);
            assert_eq!(access.entry(Some(b"Bearer m3tr1c")), Entry::Unauthorized);
            assert_eq!(access.entry(Some(b"Basic m3tr1cs")), Entry::Unauthorized);
            assert_eq!(access.entry(None), Entry::Unauthorized);
            assert_eq!(
                MetricsAccess::Closed.entry(Some(b"Bearer x")),
                Entry::Closed
            );
        }
    }
}
