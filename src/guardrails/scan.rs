//! The scanner: well-known credential shapes and personal data, found in a string by patterns
//! compiled once. Each class is first one search of a text by all its patterns at once (an
//! alternation: the credentials' each start with a literal, so the engine's prefilter skips
//! from one candidate to the next, at a tenth of what a `RegexSet` of them costs); only a text
//! that matches is searched again by each pattern, for where and what, and a match a checksum
//! can disprove (a card number's Luhn digit, an IBAN's mod 97) is dropped.

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// What the scanner looks for: credentials, or personal data (configured apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// `[guardrails] secrets`.
    Secrets,
    /// `[guardrails] pii`.
    Pii,
}

/// A kind of finding, named as the marker, the audit log and the metric name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An AWS access key id (`AKIA…`).
    AwsAccessKey,
    /// An AWS secret access key, where it is labelled as one.
    AwsSecretKey,
    /// A GitHub token (`ghp_…`, `github_pat_…`).
    GithubToken,
    /// A GitLab personal access token (`glpat-…`).
    GitlabToken,
    /// A Slack token (`xox…`) or incoming webhook URL.
    SlackToken,
    /// A Google API key (`AIza…`).
    GoogleApiKey,
    /// A Stripe key (`sk_live_…`).
    StripeKey,
    /// An OpenAI-style key (`sk-…`, Anthropic's `sk-ant-…` too).
    OpenaiKey,
    /// A JSON Web Token.
    Jwt,
    /// A PEM private key.
    PrivateKey,
    /// The token after `Bearer`.
    BearerToken,
    /// The password in a URL's `user:password@`.
    BasicAuthUrl,
    /// An e-mail address.
    Email,
    /// A phone number (international, or North American).
    Phone,
    /// An IBAN whose check digits hold.
    Iban,
    /// A payment card number whose Luhn digit holds.
    CardNumber,
}

impl Kind {
    /// Its name: `github-token`, `email`, …
    pub fn name(self) -> &'static str {
        match self {
            Kind::AwsAccessKey => "aws-access-key",
            Kind::AwsSecretKey => "aws-secret-key",
            Kind::GithubToken => "github-token",
            Kind::GitlabToken => "gitlab-token",
            Kind::SlackToken => "slack-token",
            Kind::GoogleApiKey => "google-api-key",
            Kind::StripeKey => "stripe-key",
            Kind::OpenaiKey => "openai-key",
            Kind::Jwt => "jwt",
            Kind::PrivateKey => "private-key",
            Kind::BearerToken => "bearer-token",
            Kind::BasicAuthUrl => "basic-auth-url",
            Kind::Email => "email",
            Kind::Phone => "phone",
            Kind::Iban => "iban",
            Kind::CardNumber => "card-number",
        }
    }

    /// The class whose setting decides what is done with it.
    pub fn class(self) -> Class {
        match self {
            Kind::AwsAccessKey
            | Kind::AwsSecretKey
            | Kind::GithubToken
            | Kind::GitlabToken
            | Kind::SlackToken
            | Kind::GoogleApiKey
            | Kind::StripeKey
            | Kind::OpenaiKey
            | Kind::Jwt
            | Kind::PrivateKey
            | Kind::BearerToken
            | Kind::BasicAuthUrl => Class::Secrets,
            Kind::Email | Kind::Phone | Kind::Iban | Kind::CardNumber => Class::Pii,
        }
    }
}

/// One thing found: its kind and the bytes to mask (a labelled secret's value alone, where the
/// pattern has a `secret` group: `Bearer` and a URL's user stay readable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What it is.
    pub kind: Kind,
    /// Where it is.
    pub span: Range<usize>,
}

/// A check a match must pass, where a checksum can disprove one.
type Check = fn(&str) -> bool;

/// One compiled class: all its patterns as one, and each with its kind and checksum.
struct Patterns {
    any: Regex,
    each: Vec<(Kind, Regex, Option<Check>)>,
}

/// Compiled ASCII-only (`(?-u)`, see [`compile`]): what they find is ASCII, and Unicode's
/// `\d`, `\s` and `\b` only make the automata larger.
const SECRETS: &[(Kind, &str)] = &[
    (
        Kind::AwsAccessKey,
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b)",
    ),
    (
        Kind::AwsSecretKey,
        r#"(?i)aws_?secret(?:_?access)?_?key["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+]{40})(?-u:\b)"#,
    ),
    (
        Kind::GithubToken,
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})(?-u:\b)",
    ),
    (Kind::GitlabToken, r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20,}"),
    (
        Kind::SlackToken,
        r"(?-u:\b)xox[abposr]-[A-Za-z0-9\-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]+",
    ),
    (Kind::GoogleApiKey, r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}"),
    (
        Kind::StripeKey,
        r"(?-u:\b)(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{24,}(?-u:\b)",
    ),
    (
        Kind::OpenaiKey,
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_\-]{32,}",
    ),
    (
        Kind::Jwt,
        r"(?-u:\b)eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
    ),
    (
        Kind::PrivateKey,
        // Its body's line breaks may be escaped (`\n`: a key inside JSON text).
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[A-Za-z0-9+/=\s\\]*(?:-----END [A-Z0-9 ]*PRIVATE KEY-----)?",
    ),
    (
        Kind::BearerToken,
        r"(?i)(?-u:\b)bearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)",
    ),
    (
        Kind::BasicAuthUrl,
        // From `://`: a pattern that starts with a literal lets the set skip ahead to it.
        r"://[A-Za-z0-9._~%!$&'()*+,;=\-]+:(?P<secret>[A-Za-z0-9._~%!$&'()*+,;=\-]+)@",
    ),
];

const PII: &[(Kind, &str)] = &[
    (
        Kind::Email,
        r"(?-u:\b)[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}(?-u:\b)",
    ),
    (
        Kind::Phone,
        r"(?:\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{1,4}(?:[ .\-]?\d{2,4}){2,4}|\(\d{3}\) ?\d{3}-\d{4}|(?-u:\b)\d{3}-\d{3}-\d{4})(?-u:\b)",
    ),
    (
        Kind::Iban,
        r"(?-u:\b)[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?-u:\b)",
    ),
    (
        Kind::CardNumber,
        r"(?-u:\b)[2-6](?:[ \-]?\d){12,18}(?-u:\b)",
    ),
];

fn compile(patterns: &[(Kind, &str)]) -> Patterns {
    let ascii = |pattern: &str| format!("(?-u){pattern}");
    // Without its groups: it only says whether any pattern matches.
    let alternatives = patterns
        .iter()
        .map(|(_, p)| format!("(?:{})", p.replace("(?P<secret>", "(?:")));
    let any = Regex::new(&ascii(&alternatives.collect::<Vec<_>>().join("|")));
    let any = any.expect("the scanner's patterns");
    let each = patterns
        .iter()
        .map(|&(kind, pattern)| {
            let check: Option<Check> = match kind {
                Kind::CardNumber => Some(luhn),
                Kind::Iban => Some(iban),
                Kind::Phone => Some(phone_digits),
                _ => None,
            };
            (
                kind,
                Regex::new(&ascii(pattern)).expect("a scanner pattern"),
                check,
            )
        })
        .collect();
    Patterns { any, each }
}

static SECRET_PATTERNS: LazyLock<Patterns> = LazyLock::new(|| compile(SECRETS));
static PII_PATTERNS: LazyLock<Patterns> = LazyLock::new(|| compile(PII));

/// Compiles the classes now, so that the first result scanned does not pay for it.
pub fn prepare(class: Class) {
    LazyLock::force(patterns(class));
}

fn patterns(class: Class) -> &'static LazyLock<Patterns> {
    match class {
        Class::Secrets => &SECRET_PATTERNS,
        Class::Pii => &PII_PATTERNS,
    }
}

/// What of `class` is in `text`, added to `found`.
pub fn find(class: Class, text: &str, found: &mut Vec<Finding>) {
    let patterns = patterns(class);
    if !patterns.any.is_match(text) {
        return;
    }
    for (kind, regex, check) in &patterns.each {
        // Captures cost a slower engine: only a labelled secret's pattern asks for them.
        let labelled = regex.capture_names().flatten().any(|name| name == "secret");
        let mut keep = |whole: regex::Match<'_>, masked: regex::Match<'_>| {
            if check.is_none_or(|check| check(whole.as_str())) {
                let span = masked.range();
                found.push(Finding { kind: *kind, span });
            }
        };
        match labelled {
            true => {
                for captures in regex.captures_iter(text) {
                    let whole = captures.get(0).expect("a match has its whole");
                    keep(whole, captures.name("secret").unwrap_or(whole));
                }
            }
            false => regex.find_iter(text).for_each(|whole| keep(whole, whole)),
        }
    }
}

/// `findings` in order, each overlapping an earlier (or a longer one starting with it) dropped:
/// what is masked, once.
pub fn disjoint(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by_key(|f| (f.span.start, std::cmp::Reverse(f.span.end)));
    let mut kept: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        match kept.last() {
            Some(last) if finding.span.start < last.span.end => {}
            _ => kept.push(finding),
        }
    }
    kept
}

fn digits(text: &str) -> impl DoubleEndedIterator<Item = u32> + '_ {
    text.chars().filter_map(|c| c.to_digit(10))
}

/// A card number's check digit (Luhn), over 13 to 19 digits.
fn luhn(text: &str) -> bool {
    let count = digits(text).count();
    if !(13..=19).contains(&count) {
        return false;
    }
    let sum: u32 = digits(text)
        .rev()
        .enumerate()
        .map(|(i, d)| match i % 2 {
            1 if d * 2 > 9 => d * 2 - 9,
            1 => d * 2,
            _ => d,
        })
        .sum();
    sum % 10 == 0
}

/// An IBAN's check digits (ISO 13616: mod 97 of the rearranged number is 1), 15 to 34 long.
fn iban(text: &str) -> bool {
    let compact: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let rearranged = compact[4..].iter().chain(&compact[..4]);
    let mut remainder = 0u32;
    for c in rearranged {
        let value = match c.to_digit(36) {
            Some(value) => value,
            None => return false,
        };
        remainder = match value {
            0..=9 => (remainder * 10 + value) % 97,
            _ => (remainder * 100 + value) % 97,
        };
    }
    remainder == 1
}

/// A phone number has 7 to 15 digits (E.164).
fn phone_digits(text: &str) -> bool {
    (7..=15).contains(&digits(text).count())
}

#[cfg(test)]
mod every_revision {
    mod guardrails {
        use super::super::*;

        fn kinds(class: Class, text: &str) -> Vec<(Kind, String)> {
            let mut found = Vec::new();
            find(class, text, &mut found);
            let found = disjoint(found);
            found
                .into_iter()
                .map(|f| (f.kind, text[f.span].to_owned()))
                .collect()
        }

        /// Each credential shape is found, and only its value where it has a label.
        #[test]
        fn each_credential_shape_is_found() {
            let github = format!("ghp_{}", "a1B2".repeat(9));
            let cases = [
                ("key AKIAIOSFODNN7EXAMPLE here", Kind::AwsAccessKey, "AKIAIOSFODNN7EXAMPLE"),
                (
                    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                    Kind::AwsSecretKey,
                    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                ),
                (&format!("token: {github}."), Kind::GithubToken, &github),
                ("glpat-abcdefghij0123456789", Kind::GitlabToken, "glpat-abcdefghij0123456789"),
                ("xoxb-1234567890-abcdefgh", Kind::SlackToken, "xoxb-1234567890-abcdefgh"),
                (
                    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
                    Kind::GoogleApiKey,
                    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
                ),
                (
                    "sk_live_0123456789abcdefghijklmn",
                    Kind::StripeKey,
                    "sk_live_0123456789abcdefghijklmn",
                ),
                (
                    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
                    Kind::OpenaiKey,
                    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
                ),
                (
                    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl",
                    Kind::Jwt,
                    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl",
                ),
                (
                    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\nAAA=\n-----END RSA PRIVATE KEY-----\nafter",
                    Kind::PrivateKey,
                    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\nAAA=\n-----END RSA PRIVATE KEY-----",
                ),
                (
                    r#"{"key":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}"#,
                    Kind::PrivateKey,
                    r"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
                ),
                (
                    "Authorization: Bearer abcdef0123456789abcdef",
                    Kind::BearerToken,
                    "abcdef0123456789abcdef",
                ),
                ("https://user:hunter2@example.com/x", Kind::BasicAuthUrl, "hunter2"),
            ];
            for (text, kind, value) in cases {
                assert_eq!(
                    kinds(Class::Secrets, text),
                    [(kind, value.to_owned())],
                    "{text}"
                );
            }
        }

        /// Personal data is found, a number a checksum disproves is not.
        #[test]
        fn personal_data_is_found_and_checksums_hold() {
            let cases = [
                ("mail ada@example.org now", Kind::Email, "ada@example.org"),
                ("call +44 20 7946 0958", Kind::Phone, "+44 20 7946 0958"),
                ("call (415) 555-2671", Kind::Phone, "(415) 555-2671"),
                (
                    "IBAN GB82 WEST 1234 5698 7654 32",
                    Kind::Iban,
                    "GB82 WEST 1234 5698 7654 32",
                ),
                (
                    "card 4111 1111 1111 1111",
                    Kind::CardNumber,
                    "4111 1111 1111 1111",
                ),
            ];
            for (text, kind, value) in cases {
                assert_eq!(
                    kinds(Class::Pii, text),
                    [(kind, value.to_owned())],
                    "{text}"
                );
            }
            for text in [
                "card 4111 1111 1111 1112",
                "IBAN GB83 WEST 1234 5698 7654 32",
                "version 2024-11-05, 1234 items",
                "nothing here",
            ] {
                assert_eq!(kinds(Class::Pii, text), [], "{text}");
            }
        }

        /// Ordinary text is left alone: no false finding in prose, ids and hashes.
        #[test]
        fn ordinary_text_has_no_secrets() {
            for text in [
                "The quick brown fox jumps over the lazy dog.",
                "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "task-4f1c2b  skill://fs/SKILL.md  file:///tmp/a.txt",
                "Bearer",
            ] {
                assert_eq!(kinds(Class::Secrets, text), [], "{text}");
            }
        }
    }
}
