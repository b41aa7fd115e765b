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
    /// Outside policies consulted on calls and results (`[[guardrails.hooks]]`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
}

/// `[[guardrails.hooks]]`: an outside policy, asked over HTTP (`url`) or by a program
/// (`command`) whether a call may go on (`phase = "request"`) or a result may leave
/// (`"response"`), in agentgateway's ExtMCP messages.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Hook {
    /// Where each message is POSTed (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A program kept running, a message a line on its stdin, its answer a line on stdout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// When it is asked.
    pub phase: HookPhase,
    /// The methods it is asked about (default: `tools/call`).
    #[serde(default = "tool_calls")]
    pub methods: Vec<String>,
    /// Globs over the exposed names (a resource's URI) it is asked about (default: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// How long an answer may take.
    #[serde(default = "five_seconds", with = "humantime_serde")]
    pub timeout: Duration,
    /// What a hook that does not answer (in time, or at all) means.
    #[serde(default)]
    pub fail_mode: FailMode,
}

/// When a hook is asked.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HookPhase {
    /// Before a call goes upstream, after mcpx's own policies: allow, deny or new arguments.
    Request,
    /// As a result leaves: allow, deny or another result.
    Response,
}

/// What a hook that does not answer means.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// The call (or result) is refused: a policy that cannot be asked does not allow.
    #[default]
    Deny,
    /// It goes on, and the failure is logged.
    Allow,
}

/// The methods hooks are asked about: those that reach a server's tool, prompt or resource.
pub const HOOKED_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

fn tool_calls() -> Vec<String> {
    vec!["tools/call".to_owned()]
}

fn five_seconds() -> Duration {
    Duration::from_secs(5)
}

impl Default for Guardrails {
    fn default() -> Self {
        Guardrails {
            secrets: Action::Off,
            pii: Action::Off,
            max_result_chars: None,
            result_ttl: Duration::from_secs(60 * 60),
            hooks: Vec::new(),
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
