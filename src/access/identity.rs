//! Who a request comes from, as far as mcpx could establish it: carried with the request through
//! the core, shown in the ledger, `mcpx status` and the console, written to the audit log and
//! matched by `[[auth.rules]]`. Never the token itself.

use serde_json::{json, Map, Value};

/// How the caller was let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `mcpx serve` on stdio, or the HTTP door's own user on a daemon without a token.
    LocalOwner,
    /// An editor's `mcpx serve --attach` on the daemon's local socket.
    AttachedEditor,
    /// The static `daemon.token`.
    DaemonToken,
    /// An access token from the authorization server.
    Bearer,
    /// An access token from mcpx's own authorization server (`mode = "builtin"`), which grants
    /// only the owner, through a client they consented to.
    OwnerGrant,
}

/// A person, as a per-identity server, kept results, tasks and sign-ins tell callers apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Person {
    /// The local owner: every caller let in without a provider's token (stdio, an attached
    /// editor, the daemon's own token) and the holders of mcpx's own authorization server's
    /// grants. No token can name it: a token's subject `owner` is someone else.
    Owner,
    /// A verified token's caller.
    Caller {
        /// The issuer that vouched for the token (never empty).
        issuer: String,
        /// The token's subject (never empty).
        subject: String,
    },
}

/// What the owner's `{subject}` is, and what no caller's may be.
const OWNER_SUBJECT: &str = crate::config::OWNER;

impl Person {
    /// The issuer that vouched for it; empty for the owner.
    pub fn issuer(&self) -> &str {
        match self {
            Person::Owner => "",
            Person::Caller { issuer, .. } => issuer,
        }
    }

    /// Its subject; the owner's is `owner`.
    pub fn subject(&self) -> &str {
        match self {
            Person::Owner => OWNER_SUBJECT,
            Person::Caller { subject, .. } => subject,
        }
    }

    /// Its subject as a `{subject}` placeholder gives it: only `[A-Za-z0-9._@-]`, never `.` or
    /// `..`, and a caller's never the owner's `owner`, so that it cannot change the path, key or
    /// argument it is put in, nor name the owner's.
    pub fn placeholder(&self) -> Result<&str, String> {
        let subject = self.subject();
        let safe = |c: char| c.is_ascii_alphanumeric() || "._@-".contains(c);
        if subject.is_empty() || !subject.chars().all(safe) {
            return Err("the caller's subject holds characters a {subject} placeholder does not take (only A-Z a-z 0-9 . _ @ -)".into());
        }
        if subject == "." || subject == ".." {
            return Err(format!("the caller's subject {subject:?} would name a directory other than their own in a {{subject}} placeholder"));
        }
        match self {
            Person::Caller { .. } if subject == OWNER_SUBJECT => Err(format!(
                "the caller's subject {OWNER_SUBJECT:?} is the local owner's {{subject}}: a token cannot be given the owner's values"
            )),
            _ => Ok(subject),
        }
    }

    /// A name for it in a path or an instance's name, distinct for every (issuer, subject):
    /// `owner` for the owner, else the subject's safe letters, `~` and a digest of both, so it
    /// is never empty, `.`, `..` or holds `/`, and the same subject from two issuers differs.
    pub fn key(&self) -> String {
        use sha2::{Digest, Sha256};
        let Person::Caller { issuer, subject } = self else {
            return OWNER_SUBJECT.to_owned();
        };
        let mut digest = Sha256::new();
        for part in [issuer, subject] {
            digest.update(part.len().to_be_bytes());
            digest.update(part.as_bytes());
        }
        let hex: String = digest.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let safe = |c: &char| c.is_ascii_alphanumeric() || "._@-".contains(*c);
        let readable: String = subject.chars().filter(safe).take(48).collect();
        format!("{readable}~{hex}")
    }
}

impl std::fmt::Display for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Person::Owner => f.write_str(OWNER_SUBJECT),
            Person::Caller { issuer, subject } => write!(f, "{subject} ({issuer})"),
        }
    }
}

/// A caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// How it was let in.
    pub kind: Kind,
    /// The token's `sub`.
    pub subject: Option<String>,
    /// The token's `client_id` (RFC 9068), `azp` (OpenID) or introspected `client_id`.
    pub client_id: Option<String>,
    /// The token's issuer.
    pub issuer: Option<String>,
    /// The token's `jti`, for the audit log.
    pub token_id: Option<String>,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// Every claim, for `[[auth.rules]]` matching on one (`groups`, `email`, ...).
    pub claims: Map<String, Value>,
    /// The token it showed, kept only to be exchanged for a per-identity server's own.
    pub token: Option<AccessToken>,
}

/// A caller's access token: exchanged at its provider for a token of a per-identity server's
/// (RFC 8693), never logged or shown, never sent to an upstream as it is.
#[derive(Clone, PartialEq)]
pub struct AccessToken(String);

impl AccessToken {
    /// The token itself, for the exchange's `subject_token`.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken([redacted])")
    }
}

impl Identity {
    /// A caller let in without a token.
    pub fn of_kind(kind: Kind) -> Identity {
        Identity {
            kind,
            subject: None,
            client_id: None,
            issuer: None,
            token_id: None,
            scopes: Vec::new(),
            claims: Map::new(),
            token: None,
        }
    }

    /// The caller a token with `claims` stands for (a JWT's payload or an introspection answer),
    /// vouched for by `issuer` where the claims name none (introspection); an error when it names
    /// no subject, as a non-empty string, for it to be told apart by.
    pub fn from_claims(claims: Map<String, Value>, issuer: &str) -> Result<Identity, String> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let subject = match claims.get("sub") {
            Some(Value::String(sub)) if !sub.is_empty() => sub.clone(),
            Some(Value::String(_)) => return Err("the token's subject (sub) is empty".into()),
            Some(_) => return Err("the token's subject (sub) is not a string".into()),
            None => return Err("the token names no subject (sub)".into()),
        };
        let scopes = scopes_of(&claims);
        Ok(Identity {
            kind: Kind::Bearer,
            subject: Some(subject),
            client_id: text("client_id").or_else(|| text("azp")),
            issuer: text("iss").or_else(|| Some(issuer.to_owned())),
            token_id: text("jti"),
            scopes,
            claims,
            token: None,
        })
    }

    /// This caller, holding `token`, the one it was verified by.
    pub fn holding(self, token: &str) -> Identity {
        Identity {
            token: Some(AccessToken(token.to_owned())),
            ..self
        }
    }

    /// Who owns what this caller opens (a legacy session): how it was let in, its issuer and
    /// subject, as a short digest that a sealed session id can carry without naming anyone.
    pub fn owner_key(&self) -> String {
        use base64::Engine;
        use sha2::{Digest, Sha256};
        let mut digest = Sha256::new();
        for part in [
            format!("{:?}", self.kind).as_str(),
            self.issuer.as_deref().unwrap_or(""),
            self.subject.as_deref().unwrap_or(""),
        ] {
            digest.update(part.len().to_be_bytes());
            digest.update(part.as_bytes());
        }
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest.finalize()[..16])
    }

    /// Who it is to a `credentials = "per-identity"` server, kept results and tasks: a verified
    /// token's issuer and subject, or the owner for every local caller (stdio, an attached
    /// editor, the daemon's own token) and mcpx's own grants, so that a single user's setup runs
    /// one instance.
    pub fn person(&self) -> Person {
        match (&self.kind, &self.subject) {
            (Kind::Bearer, Some(subject)) => Person::Caller {
                issuer: self.issuer.clone().unwrap_or_default(),
                subject: subject.clone(),
            },
            // Never made ([`Identity::from_claims`] refuses a token without a subject); were one,
            // it would be a person of its own, whom a `{subject}` refuses.
            (Kind::Bearer, None) => Person::Caller {
                issuer: self.issuer.clone().unwrap_or_default(),
                subject: String::new(),
            },
            (Kind::LocalOwner | Kind::AttachedEditor | Kind::DaemonToken | Kind::OwnerGrant, _) => {
                Person::Owner
            }
        }
    }

    /// Whether it was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// One line for people: `alice via claude (https://idp)`, `local owner`, ...
    pub fn summary(&self) -> String {
        match self.kind {
            Kind::LocalOwner => "local owner".into(),
            Kind::AttachedEditor => "attached editor".into(),
            Kind::DaemonToken => "daemon token".into(),
            Kind::OwnerGrant => match &self.client_id {
                Some(client) => format!("owner via {client}"),
                None => "owner".into(),
            },
            Kind::Bearer => {
                let mut line = self.subject.clone().unwrap_or_else(|| "(no sub)".into());
                if let Some(client) = &self.client_id {
                    line.push_str(&format!(" via {client}"));
                }
                line
            }
        }
    }

    /// What the audit log records of it: never the token, nor claims beyond these.
    pub fn audited(&self) -> Value {
        let kind = match self.kind {
            Kind::LocalOwner => "local owner",
            Kind::AttachedEditor => "attached editor",
            Kind::DaemonToken => "daemon token",
            Kind::Bearer => "bearer",
            Kind::OwnerGrant => "owner grant",
        };
        let mut audited = json!({ "kind": kind });
        let fields = [
            ("sub", &self.subject),
            ("clientId", &self.client_id),
            ("iss", &self.issuer),
            ("jti", &self.token_id),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                audited[name] = json!(value);
            }
        }
        if matches!(self.kind, Kind::Bearer | Kind::OwnerGrant) {
            audited["scopes"] = json!(self.scopes);
        }
        audited
    }
}

/// The scopes in `scope` (RFC 9068, a space-separated string) or `scp` (Entra, Okta: a string
/// or a list).
fn scopes_of(claims: &Map<String, Value>) -> Vec<String> {
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => words(s),
        (None, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod every_revision {
    mod identity {
        use super::super::*;

        #[test]
        fn scopes_come_from_scope_or_scp_and_the_audit_line_holds_no_claims_beyond_its_own() {
            let claims = |v: Value| v.as_object().cloned().unwrap();
            let a = Identity::from_claims(
                claims(json!({"sub": "alice", "scope": "mcp  read", "azp": "app", "email": "a@x"})),
                "https://idp",
            )
            .unwrap();
            assert_eq!(a.scopes, ["mcp", "read"]);
            assert_eq!(a.summary(), "alice via app");
            assert!(a.audited().get("email").is_none());
            let b = Identity::from_claims(
                claims(json!({"sub": "b", "scp": ["mcp"], "client_id": "c"})),
                "https://idp",
            )
            .unwrap();
            assert!(b.has_scope("mcp") && !b.has_scope("read"));
            assert_eq!(b.audited()["clientId"], "c");
            assert_eq!(b.issuer.as_deref(), Some("https://idp"));
        }

        #[test]
        fn a_token_without_a_string_subject_is_nobody() {
            let claims = |v: Value| v.as_object().cloned().unwrap();
            for bad in [
                json!({}),
                json!({"sub": 7}),
                json!({"sub": ""}),
                json!({"sub": null}),
            ] {
                assert!(
                    Identity::from_claims(claims(bad.clone()), "https://idp").is_err(),
                    "{bad}"
                );
            }
        }

        #[test]
        fn no_token_is_the_owner_and_every_person_has_a_key_of_its_own() {
            let caller = |issuer: &str, subject: &str| Person::Caller {
                issuer: issuer.into(),
                subject: subject.into(),
            };
            let claims = json!({"sub": "owner"}).as_object().cloned().unwrap();
            let named_owner = Identity::from_claims(claims, "https://idp").unwrap();
            assert_ne!(named_owner.person(), Person::Owner);
            assert!(named_owner.person().placeholder().is_err());
            assert_ne!(named_owner.person().key(), Person::Owner.key());
            assert_eq!(Person::Owner.placeholder(), Ok("owner"));
            for dots in [".", ".."] {
                let person = caller("https://idp", dots);
                assert!(person.placeholder().is_err());
                assert!(!matches!(person.key().as_str(), "." | ".." | ""));
            }
            let keys = [
                caller("https://a", "alice"),
                caller("https://b", "alice"),
                caller("https://a", "al/ice"),
                caller("https://a", "al?ice"),
            ]
            .map(|p| p.key());
            for (i, key) in keys.iter().enumerate() {
                assert!(!key.contains('/'), "{key}");
                assert!(keys[i + 1..].iter().all(|other| other != key), "{keys:?}");
            }
            assert!(keys[0].starts_with("alice~"));
        }
    }
}
