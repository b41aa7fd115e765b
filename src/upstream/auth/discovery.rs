//! Finding a server's authorization server, in the order the MCP authorization specification
//! gives: the protected resource metadata (RFC 9728) named by the `WWW-Authenticate` challenge,
//! else at its well-known URLs (path-aware first); then the authorization server's metadata
//! (RFC 8414, then OpenID Connect discovery, path-aware forms first). A server without resource
//! metadata is a 2025-03-26 server: its origin is its authorization server, with metadata at the
//! origin's well-known URL or, failing that, the default endpoints.

use crate::json::Member;
use crate::net::client::{fetch, Fetched};
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value;
use url::Url;

/// What a `WWW-Authenticate: Bearer …` challenge says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    /// Where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes the request needs.
    pub scope: Option<String>,
    /// The error code (`invalid_token`, `insufficient_scope`).
    pub error: Option<String>,
}

/// Reads the Bearer challenge's parameters (RFC 6750 §3): `key=value` or `key="value"`, comma
/// separated. `None` when the header names another scheme.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let rest = header.trim();
    let scheme_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    if !rest[..scheme_end].eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut challenge = Challenge::default();
    let mut rest = rest[scheme_end..].trim_start();
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => text.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => text.push(c),
                }
            }
            value = text;
            rest = quoted[end..].trim_start();
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_owned();
            rest = &rest[end..];
        }
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        match key.as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            "error" => challenge.error = Some(value),
            _ => {}
        }
    }
    Some(challenge)
}

/// The Bearer challenge of a response's `WWW-Authenticate`; an empty one when it has none.
pub fn challenge_of<B>(response: &http::Response<B>) -> Challenge {
    response
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_challenge)
        .unwrap_or_default()
}

/// An authorization server, as its metadata describes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthServer {
    /// Its issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens become access tokens.
    pub token_endpoint: String,
    /// Where clients register themselves (RFC 7591), if it offers that.
    pub registration_endpoint: Option<String>,
    /// Where tokens are revoked (RFC 7009), if it offers that.
    pub revocation_endpoint: Option<String>,
    /// The scopes it knows.
    pub scopes_supported: Vec<String>,
    /// Its PKCE methods; `None` when the metadata does not say (a login then refuses it).
    pub code_challenge_methods: Option<Vec<String>>,
    /// How clients may authenticate at its token endpoint.
    pub token_auth_methods: Vec<String>,
    /// It accepts a client metadata document's URL as a client id.
    pub client_id_metadata_documents: bool,
    /// It sends `iss` in authorization responses (RFC 9207).
    pub iss_parameter: bool,
    /// Where its signing keys are (a JWK Set), for verifying the access tokens it issues.
    pub jwks_uri: Option<String>,
    /// Where its tokens are introspected (RFC 7662).
    pub introspection_endpoint: Option<String>,
}

impl AuthServer {
    fn from_metadata(value: &Value) -> Option<AuthServer> {
        let text = |key: &str| value.member(key).and_then(Value::as_str).map(str::to_owned);
        let list = |key: &str| {
            value.member(key).and_then(Value::as_array).map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        };
        let flag = |key: &str| value.member(key).and_then(Value::as_bool) == Some(true);
        Some(AuthServer {
            issuer: text("issuer")?,
            authorization_endpoint: text("authorization_endpoint")?,
            token_endpoint: text("token_endpoint")?,
            registration_endpoint: text("registration_endpoint"),
            revocation_endpoint: text("revocation_endpoint"),
            scopes_supported: list("scopes_supported").unwrap_or_default(),
            code_challenge_methods: list("code_challenge_methods_supported"),
            token_auth_methods: list("token_endpoint_auth_methods_supported").unwrap_or_default(),
            client_id_metadata_documents: flag("client_id_metadata_document_supported"),
            iss_parameter: flag("authorization_response_iss_parameter_supported"),
            jwks_uri: text("jwks_uri"),
            introspection_endpoint: text("introspection_endpoint"),
        })
    }
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The RFC 8707 resource to ask tokens for.
    pub resource: String,
    /// The scopes the resource metadata lists.
    pub scopes_supported: Vec<String>,
    /// Its authorization server.
    pub auth: AuthServer,
}

/// GETs `url` and reads it as JSON, if it answers 200 with JSON.
async fn json_at(url: &str) -> Result<Option<Value>, String> {
    let Fetched { status, body, .. } = fetch(Method::GET, url, HeaderMap::new(), None).await?;
    if status != StatusCode::OK {
        return Ok(None);
    }
    Ok(serde_json::from_slice(&body).ok())
}

/// `https://host/.well-known/NAME/path` and, with `append`, `https://host/path/.well-known/NAME`;
/// for a URL without a path, `https://host/.well-known/NAME` alone.
fn well_known(base: &Url, name: &str, append: bool) -> Vec<String> {
    let origin = base.origin().ascii_serialization();
    let path = base.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![format!("{origin}/.well-known/{name}")];
    }
    let mut urls = vec![format!("{origin}/.well-known/{name}{path}")];
    if append {
        urls.push(format!("{origin}{path}/.well-known/{name}"));
    }
    urls
}

/// Discovers how `server_url` is authorized, given the challenge it answered with (if any).
pub async fn discover(server_url: &str, challenge: &Challenge) -> Result<Discovered, String> {
    let server = Url::parse(server_url).map_err(|e| format!("{server_url:?}: {e}"))?;
    let mut candidates: Vec<String> = challenge.resource_metadata.iter().cloned().collect();
    candidates.extend(well_known(&server, "oauth-protected-resource", false));
    if !server.path().trim_end_matches('/').is_empty() {
        let root = format!(
            "{}/.well-known/oauth-protected-resource",
            server.origin().ascii_serialization()
        );
        candidates.push(root);
    }
    let mut metadata = None;
    for candidate in &candidates {
        if let Some(found) = json_at(candidate).await? {
            metadata = Some(found);
            break;
        }
    }
    let Some(metadata) = metadata else {
        return legacy_discovery(&server).await;
    };
    let resource = metadata
        .member("resource")
        .and_then(Value::as_str)
        .unwrap_or(server_url)
        .to_owned();
    if !resource_covers(&resource, &server) {
        return Err(format!(
            "the server's resource metadata names the resource {resource:?}, not {server_url:?}: refusing to send it tokens"
        ));
    }
    let issuer = metadata
        .member("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|servers| servers.first())
        .and_then(Value::as_str)
        .ok_or("the server's resource metadata names no authorization server")?
        .to_owned();
    let scopes_supported = metadata
        .member("scopes_supported")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let auth = auth_server(&issuer).await?;
    Ok(Discovered {
        resource,
        scopes_supported,
        auth,
    })
}

/// Whether tokens for `resource` may go to `server`: the same origin, and the server's path at
/// or below the resource's.
fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    let (mine, theirs) = (
        resource.path().trim_end_matches('/'),
        server.path().trim_end_matches('/'),
    );
    resource.origin() == server.origin()
        && (theirs == mine || theirs.starts_with(&format!("{mine}/")))
}

/// The metadata of the authorization server `issuer`, whose `issuer` must be that very string.
pub async fn auth_server(issuer: &str) -> Result<AuthServer, String> {
    let base = Url::parse(issuer).map_err(|e| format!("issuer {issuer:?}: {e}"))?;
    let mut candidates = well_known(&base, "oauth-authorization-server", false);
    candidates.extend(well_known(&base, "openid-configuration", true));
    for candidate in &candidates {
        let Some(metadata) = json_at(candidate).await? else {
            continue;
        };
        let found = AuthServer::from_metadata(&metadata)
            .ok_or_else(|| format!("{candidate} is not authorization server metadata"))?;
        if found.issuer != issuer {
            return Err(format!(
                "the authorization server at {candidate} calls itself {:?}, not {issuer:?}: refusing it",
                found.issuer
            ));
        }
        return Ok(found);
    }
    Err(format!("no authorization server metadata for {issuer}"))
}

/// A 2025-03-26 server: its origin authorizes, described by its metadata or, without any, by
/// the default endpoints `/authorize`, `/token` and `/register`.
async fn legacy_discovery(server: &Url) -> Result<Discovered, String> {
    let origin = server.origin().ascii_serialization();
    let metadata = json_at(&format!("{origin}/.well-known/oauth-authorization-server")).await?;
    let auth = match metadata.as_ref().and_then(AuthServer::from_metadata) {
        Some(auth) => auth,
        // 2025-03-26's defaults, which come with its rule that every server supports PKCE.
        None => AuthServer {
            issuer: origin.clone(),
            authorization_endpoint: format!("{origin}/authorize"),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            code_challenge_methods: Some(vec!["S256".into()]),
            ..AuthServer::default()
        },
    };
    Ok(Discovered {
        resource: server.as_str().to_owned(),
        scopes_supported: Vec::new(),
        auth,
    })
}

#[cfg(test)]
mod every_revision {
    mod auth {
        use super::super::*;

        #[test]
        fn a_bearer_challenge_gives_its_metadata_url_scope_and_error() {
            let challenge = parse_challenge(
                r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource""#,
            )
            .unwrap();
            assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
            assert_eq!(challenge.scope.as_deref(), Some("files:read files:write"));
            assert_eq!(
                challenge.resource_metadata.as_deref(),
                Some("https://mcp.example/.well-known/oauth-protected-resource")
            );
            let bare = parse_challenge("bearer realm=mcp, error=invalid_token").unwrap();
            assert_eq!(bare.error.as_deref(), Some("invalid_token"));
            assert!(parse_challenge("Basic realm=x").is_none());
        }

        #[test]
        fn well_known_urls_are_path_aware_first() {
            let url = Url::parse("https://auth.example/tenant1").unwrap();
            assert_eq!(
                well_known(&url, "openid-configuration", true),
                [
                    "https://auth.example/.well-known/openid-configuration/tenant1",
                    "https://auth.example/tenant1/.well-known/openid-configuration"
                ]
            );
            let root = Url::parse("https://auth.example/").unwrap();
            assert_eq!(
                well_known(&root, "oauth-authorization-server", true),
                ["https://auth.example/.well-known/oauth-authorization-server"]
            );
        }

        #[test]
        fn tokens_go_only_to_the_resource_named_or_below_it() {
            let server = Url::parse("https://mcp.example/api/mcp").unwrap();
            assert!(resource_covers("https://mcp.example/api/mcp", &server));
            assert!(resource_covers("https://mcp.example/api", &server));
            assert!(resource_covers("https://mcp.example/", &server));
            assert!(!resource_covers("https://mcp.example/other", &server));
            assert!(!resource_covers("https://evil.example/api/mcp", &server));
        }
    }
}
