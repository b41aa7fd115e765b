//! `[guardrails]` and `[servers.NAME.guardrails]`: what mcpx does with credentials and
//! personal data it finds in what a model would read, and how long a tool result may be.
//! Everything is off unless configured; a server's own setting wins over the section's.

use super::duration as humantime_serde;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What is done with a finding of a class.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Each match is replaced by a marker naming its kind (`[redacted: github-token]`).
    Redact,
    /// The whole result is withheld: a tool's becomes an `isError` result saying what was
    /// found (never the value), anything else's an error.
    Block,
    /// Only counted and audited: the result passes unchanged.
    Log,
    /// Not looked for.
    #[default]
    Off,
}

impl Action {
    /// Its name, as configured and as metrics label it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Redact => "redact",
            Action::Block => "block",
            Action::Log => "log",
            Action::Off => "off",
        }
    }
}

/// `[guardrails]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Guardrails {
    /// Credentials (keys, tokens, private keys, passwords in URLs).
    pub secrets: Action,
    /// Personal data (e-mail addresses, phone numbers, IBANs, card numbers).
    pub pii: Action,
    /// The most characters of text a tool result's content may carry; beyond it the text is
    /// cut and the whole result kept as `mcpx://results/ID` (none: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_result_chars: Option<usize>,
    /// How long a cut result stays readable.
    #[serde(with = "humantime_serde")]
    pub result_ttl: Duration,
}

impl Default for Guardrails {
    fn default() -> Self {
        Guardrails {
            secrets: Action::Off,
            pii: Action::Off,
            max_result_chars: None,
            result_ttl: Duration::from_secs(60 * 60),
        }
    }
}

/// `[servers.NAME.guardrails]`: the server's own, each key in place of the section's.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct ServerGuardrails {
    /// In place of `[guardrails] secrets`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Action>,
    /// In place of `[guardrails] pii`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pii: Option<Action>,
    /// In place of `[guardrails] maxResultChars`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_result_chars: Option<usize>,
}
