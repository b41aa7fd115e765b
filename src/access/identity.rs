//! Who a request comes from, as far as mcpx could establish it: carried with the request through
//! the core, shown in the registry, `mcpx status` and the console, written to the audit log and
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
}

/// A person, as a per-identity server tells callers apart: one issuer's subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Person {
    /// The issuer; empty for the local `owner`.
    pub issuer: String,
    /// The subject, or [`crate::config::OWNER`].
    pub subject: String,
}

impl Person {
    /// Its subject as a `{subject}` placeholder gives it: only `[A-Za-z0-9._@-]`, so that it
    /// cannot change the path, key or argument it is put in.
    pub fn placeholder(&self) -> Result<&str, String> {
        let safe = |c: char| c.is_ascii_alphanumeric() || "._@-".contains(c);
        match !self.subject.is_empty() && self.subject.chars().all(safe) {
            true => Ok(&self.subject),
            false => Err("the caller's subject holds characters a {subject} placeholder does not take (only A-Z a-z 0-9 . _ @ -)".into()),
        }
    }
}

impl std::fmt::Display for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.issuer.as_str() {
            "" => f.write_str(&self.subject),
            issuer => write!(f, "{} ({issuer})", self.subject),
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

    /// The caller a token with `claims` stands for (a JWT's payload or an introspection answer).
    pub fn from_claims(claims: Map<String, Value>) -> Identity {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let scopes = scopes_of(&claims);
        Identity {
            kind: Kind::Bearer,
            subject: text("sub"),
            client_id: text("client_id").or_else(|| text("azp")),
            issuer: text("iss"),
            token_id: text("jti"),
            scopes,
            claims,
            token: None,
        }
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

    /// Who it is to a `credentials = "per-identity"` server: a verified token's issuer and
    /// subject, or `owner` for every local caller (stdio, an attached editor, the daemon's own
    /// token), so that a single user's setup runs one instance.
    pub fn person(&self) -> Person {
        match (&self.kind, &self.subject) {
            (Kind::Bearer, Some(subject)) => Person {
                issuer: self.issuer.clone().unwrap_or_default(),
                subject: subject.clone(),
            },
            _ => Person {
                issuer: String::new(),
                subject: crate::config::OWNER.to_owned(),
            },
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
        if self.kind == Kind::Bearer {
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
            let a = Identity::from_claims(claims(
                json!({"sub": "alice", "scope": "mcp  read", "azp": "app", "email": "a@x"}),
            ));
            assert_eq!(a.scopes, ["mcp", "read"]);
            assert_eq!(a.summary(), "alice via app");
            assert!(a.audited().get("email").is_none());
            let b = Identity::from_claims(claims(json!({"scp": ["mcp"], "client_id": "c"})));
            assert!(b.has_scope("mcp") && !b.has_scope("read"));
            assert_eq!(b.audited()["clientId"], "c");
        }
    }
}
