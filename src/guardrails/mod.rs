//! Guardrails: what mcpx does with what a model would read before it reads it. The scanner
//! ([`mod@scan`]) finds credentials and personal data; [`fn@scan`] masks, withholds or only
//! counts them as the server's [`Policy`] says, in a result at the gateway's one door and
//! in a listing's descriptions as the catalog is built. Outside policies are asked through
//! [`hooks`]; results over their budget are cut by [`budget`].

pub mod budget;
mod disguise;
pub mod hooks;
mod reading;
pub mod scan;

use crate::config::{GuardrailAction as Action, Guardrails as Section, ServerGuardrails};
use crate::sync::{read, write};
use scan::{Class, Finding, Kind};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::RwLock;

/// `[guardrails]` in force (a reload replaces it).
#[derive(Debug, Default)]
pub struct Guardrails {
    section: RwLock<Section>,
    /// `[[guardrails.hooks]]`.
    pub hooks: hooks::Hooks,
}

/// What applies to one server's results: the section's settings, its own in their place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// For credentials.
    pub secrets: Action,
    /// For personal data.
    pub pii: Action,
    /// The most characters of text a tool result may carry.
    pub max_result_chars: Option<usize>,
}

impl Policy {
    fn action(&self, class: Class) -> Action {
        match class {
            Class::Secrets => self.secrets,
            Class::Pii => self.pii,
        }
    }

    /// The classes looked for.
    fn scanned(&self) -> impl Iterator<Item = Class> + '_ {
        [Class::Secrets, Class::Pii]
            .into_iter()
            .filter(|&class| self.action(class) != Action::Off)
    }

    /// Whether nothing is looked for: a result passes untouched, at no cost.
    pub fn scans_nothing(&self) -> bool {
        self.scanned().next().is_none()
    }
}

impl Guardrails {
    /// The guardrails `section` configures.
    pub fn new(section: &Section) -> Guardrails {
        let guardrails = Guardrails::default();
        guardrails.reconfigure(section);
        guardrails
    }

    /// Puts `section` in force (a reload).
    pub fn reconfigure(&self, section: &Section) {
        // Compiled now rather than by the first result scanned (a server's own setting's
        // class, by its first).
        let configured = [(Class::Secrets, section.secrets), (Class::Pii, section.pii)];
        for (class, action) in configured {
            if action != Action::Off {
                scan::prepare(class);
            }
        }
        self.hooks.reconfigure(&section.hooks);
        *write(&self.section) = section.clone();
    }

    /// What applies to a server whose own setting is `own` (none for mcpx's own).
    pub fn policy(&self, own: Option<&ServerGuardrails>) -> Policy {
        let section = read(&self.section);
        Policy {
            secrets: own.and_then(|o| o.secrets).unwrap_or(section.secrets),
            pii: own.and_then(|o| o.pii).unwrap_or(section.pii),
            max_result_chars: own
                .and_then(|o| o.max_result_chars)
                .or(section.max_result_chars),
        }
    }

    /// How long a cut result stays readable.
    pub fn result_ttl(&self) -> std::time::Duration {
        read(&self.section).result_ttl
    }
}

/// What was found in one result or listing: how many of each kind, and what was done.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    found: BTreeMap<Kind, (Action, u32)>,
}

impl Report {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Whether something found is to be withheld with all that carries it.
    pub fn blocks(&self) -> bool {
        self.found
            .values()
            .any(|(action, _)| *action == Action::Block)
    }

    /// The kinds found, named, for a message: `github-token, email`.
    pub fn kinds(&self) -> String {
        let names: Vec<&str> = self.found.keys().map(|kind| kind.name()).collect();
        names.join(", ")
    }

    /// For the audit log: each kind, what was done and how often (never a value).
    pub fn to_json(&self) -> Value {
        let each = self.found.iter().map(|(kind, (action, count))| {
            json!({"kind": kind.name(), "action": action.as_str(), "count": count})
        });
        Value::Array(each.collect())
    }

    /// Counts each finding in `mcpx_guardrail_findings_total`.
    pub fn count(&self) {
        for (kind, (action, count)) in &self.found {
            crate::metrics::guardrail_findings(kind.name(), action.as_str(), *count);
        }
    }

    fn add(&mut self, kind: Kind, action: Action) {
        self.found.entry(kind).or_insert((action, 0)).1 += 1;
    }
}

/// Where in a value the scanner reads: everything a model would, or a listing's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every string and member name of a result, its `_meta` but mcpx's and the protocol's own
    /// keys, but binary payloads (`blob`, a content item's base64 `data`) and the protocol's
    /// opaque tokens at their place (a list's `nextCursor`, a poll's and its occurrences'
    /// `cursor`, a round's `requestState`, a task's `taskId`), which clients hand back and no
    /// model reads. A member of a server's own data is read whatever its name.
    Result,
    /// A definition's `description`s and `title`s, its schemas' included: its names and URIs
    /// are what clients call it by, and stay.
    Definition,
}

/// Scans what `scope` reads of `value` under `policy`, masking where it says `redact`, and adds
/// what was found to `report`.
pub fn scan(policy: &Policy, scope: Scope, value: &mut Value, report: &mut Report) {
    if policy.scans_nothing() {
        return;
    }
    match scope {
        Scope::Result => reading::result(policy, value, report),
        Scope::Definition => words(policy, value, false, report),
    }
}

/// A definition's `description`s and `title`s (`read`: inside one).
fn words(policy: &Policy, value: &mut Value, read: bool, report: &mut Report) {
    match value {
        Value::String(text) if read => {
            if let Some(masked) = scan_text(policy, text, report) {
                *text = masked;
            }
        }
        Value::Array(items) => {
            for item in items {
                words(policy, item, read, report);
            }
        }
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                let read = read || matches!(key.as_str(), "description" | "title");
                words(policy, field, read, report);
            }
        }
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `text` with what `policy` redacts masked, if anything is; what was found added to `report`.
fn scan_text(policy: &Policy, text: &str, report: &mut Report) -> Option<String> {
    mask(policy, text, &findings(policy, text), report)
}

/// What `policy` looks for in `text`: as written, as a reader sees it (zero-width characters
/// and look-alike letters undone), and inside its runs of base64.
fn findings(policy: &Policy, text: &str) -> Vec<Finding> {
    let mut found = Vec::new();
    for class in policy.scanned() {
        scan::find(class, text, &mut found);
    }
    if let Some(seen) = disguise::plain(text) {
        let mut hidden = Vec::new();
        for class in policy.scanned() {
            scan::find(class, &seen.text, &mut hidden);
        }
        let back = hidden.into_iter().map(|f| Finding {
            span: seen.original(&f.span),
            kind: f.kind,
        });
        found.extend(back);
    }
    if policy.secrets != Action::Off {
        for (span, decoded) in disguise::base64_runs(text) {
            let mut inside = Vec::new();
            scan::find(Class::Secrets, &decoded, &mut inside);
            if let Some(first) = inside.first() {
                found.push(Finding {
                    kind: first.kind,
                    span,
                });
            }
        }
    }
    scan::disjoint(found)
}

/// `text` with the `found` that `policy` redacts masked, if any is; each added to `report`.
fn mask(policy: &Policy, text: &str, found: &[Finding], report: &mut Report) -> Option<String> {
    let mut masked = String::with_capacity(text.len());
    let mut from = 0;
    for finding in found {
        let action = policy.action(finding.kind.class());
        report.add(finding.kind, action);
        if action == Action::Redact {
            masked.push_str(&text[from..finding.span.start]);
            masked.push_str(&format!("[redacted: {}]", finding.kind.name()));
            from = finding.span.end;
        }
    }
    if from == 0 {
        return None;
    }
    masked.push_str(&text[from..]);
    Some(masked)
}

#[cfg(test)]
mod every_revision {
    mod guardrails {
        use super::super::*;

        fn policy(secrets: Action, pii: Action) -> Policy {
            Policy {
                secrets,
                pii,
                max_result_chars: None,
            }
        }

        const GITHUB: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";

        /// Redacted where a model reads; mcpx's and the protocol's `_meta`, a blob, an image's
        /// data and the protocol's opaque tokens at their place are not read.
        #[test]
        fn redaction_masks_every_string_a_model_reads_and_nothing_else() {
            let mut result = json!({
                "content": [
                    {"type": "text", "text": format!("token {GITHUB} for ada@example.org")},
                    {"type": "image", "mimeType": "image/png", "data": GITHUB},
                ],
                "structuredContent": {"nested": [format!("{GITHUB}")]},
                "_meta": {"mcpx/wholeResult": GITHUB,
                    "io.modelcontextprotocol/related-task": {"taskId": GITHUB}},
                "cursor": GITHUB,
                "requestState": GITHUB,
            });
            let mut report = Report::default();
            let redacting = policy(Action::Redact, Action::Log);
            scan(&redacting, Scope::Result, &mut result, &mut report);
            assert_eq!(
                result["content"][0]["text"],
                "token [redacted: github-token] for ada@example.org"
            );
            assert_eq!(result["content"][1]["data"], GITHUB);
            assert_eq!(
                result["structuredContent"]["nested"][0],
                "[redacted: github-token]"
            );
            assert_eq!(result["_meta"]["mcpx/wholeResult"], GITHUB);
            let related = &result["_meta"]["io.modelcontextprotocol/related-task"];
            assert_eq!(related["taskId"], GITHUB);
            assert_eq!(result["cursor"], GITHUB);
            assert_eq!(result["requestState"], GITHUB);
            assert!(!report.blocks());
            assert_eq!(
                report.to_json(),
                json!([
                    {"kind": "github-token", "action": "redact", "count": 2},
                    {"kind": "email", "action": "log", "count": 1},
                ])
            );
        }

        /// A server's own data is read whatever its members are named (a `cursor` or `taskId`
        /// of its own, its `_meta`, a member's name), and so is a secret split over two text
        /// items, hidden by zero-width characters or look-alike letters, or in base64.
        #[test]
        fn every_way_a_secret_reaches_a_model_is_read() {
            use base64::Engine;
            let encoded = base64::engine::general_purpose::STANDARD.encode(GITHUB);
            let disguised = GITHUB
                .replacen("ghp_", "gh\u{200B}p_", 1)
                .replacen('a', "а", 1);
            let mut result = json!({
                "content": [
                    {"type": "text", "text": format!("split {}", &GITHUB[..10])},
                    {"type": "text", "text": format!("{} here", &GITHUB[10..])},
                    {"type": "text", "text": format!("hidden {disguised} ")},
                    {"type": "text", "text": format!("encoded {encoded}")},
                ],
                "structuredContent": {"cursor": GITHUB, "taskId": GITHUB, (GITHUB): 1,
                    "page": {"nextCursor": GITHUB}},
                "_meta": {"com.example/echo": GITHUB},
                "events": [{"cursor": GITHUB, "data": {"cursor": GITHUB}}],
            });
            let redacting = policy(Action::Redact, Action::Off);
            scan(
                &redacting,
                Scope::Result,
                &mut result,
                &mut Report::default(),
            );
            // The occurrence's own cursor is the protocol's: it stays, and only it.
            assert_eq!(result["events"][0]["cursor"], GITHUB);
            result["events"][0]["cursor"] = Value::Null;
            let text = result.to_string();
            for piece in [&GITHUB[..10], &GITHUB[10..], &GITHUB[4..], encoded.as_str()] {
                assert!(!text.contains(piece), "{piece} in {text}");
            }
            let texts = ["split {}", "{} here", "hidden {} ", "encoded {}"]
                .map(|shape| shape.replace("{}", "[redacted: github-token]"));
            for (n, text) in texts.iter().enumerate() {
                assert_eq!(result["content"][n]["text"], *text);
            }
        }

        /// A definition's name stays; its descriptions are read, its schema's too.
        #[test]
        fn a_definitions_words_are_read_and_its_name_kept() {
            let mut tool = json!({"name": GITHUB, "description": GITHUB,
                "inputSchema": {"properties": {"a": {"description": GITHUB, "default": GITHUB}}}});
            let mut report = Report::default();
            let blocking = policy(Action::Block, Action::Off);
            scan(&blocking, Scope::Definition, &mut tool, &mut report);
            assert!(report.blocks());
            assert_eq!(report.kinds(), "github-token");
            let redacting = policy(Action::Redact, Action::Off);
            scan(
                &redacting,
                Scope::Definition,
                &mut tool,
                &mut Report::default(),
            );
            assert_eq!(tool["name"], GITHUB);
            assert_eq!(tool["description"], "[redacted: github-token]");
            let property = &tool["inputSchema"]["properties"]["a"];
            assert_eq!(property["description"], "[redacted: github-token]");
            assert_eq!(property["default"], GITHUB);
        }

        /// Off is off: nothing is read.
        #[test]
        fn off_reads_nothing() {
            let mut result = json!({"content": [{"type": "text", "text": GITHUB}]});
            let mut report = Report::default();
            scan(
                &policy(Action::Off, Action::Off),
                Scope::Result,
                &mut result,
                &mut report,
            );
            assert!(report.is_empty());
        }
    }
}
