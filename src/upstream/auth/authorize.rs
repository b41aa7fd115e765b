//! One authorization code flow with PKCE, from the URL a person is sent to to the tokens its
//! code is exchanged for: run by `mcpx auth login` with a loopback redirect
//! ([`super::login`]), and by the daemon for a person of a per-identity server, whose browser
//! comes back to mcpx's public URL. The redirect's `state` and `iss` (RFC 9207) are checked,
//! and the tokens are bound to the server by RFC 8707's `resource`.

use super::discovery::{AuthServer, Challenge, Discovered};
use super::store::Credential;
use super::token_request;
use crate::config::Server;
use base64::Engine;
use sha2::{Digest, Sha256};
use url::Url;

/// A flow under way: what its redirect must carry, and how its code is exchanged.
pub struct Flow {
    state: String,
    verifier: String,
    redirect_uri: String,
    auth: AuthServer,
    /// The credential its tokens complete: the client, the server and what was asked.
    credential: Credential,
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The verifier is never printed.
        f.debug_struct("Flow")
            .field("issuer", &self.auth.issuer)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Flow {
    /// A flow for `server` (what it `challenge`d, `discovered` from it) as the client `client`,
    /// redirected to `redirect_uri`: the authorization URL to send the person to, and the flow
    /// that its redirect finishes. `previous` is an earlier login, whose scopes are asked again
    /// and whose registrations elsewhere are kept.
    pub fn begin(
        server: &Server,
        challenge: &Challenge,
        discovered: &Discovered,
        previous: Option<&Credential>,
        client: Credential,
        redirect_uri: String,
    ) -> Result<(Url, Flow), String> {
        let auth = &discovered.auth;
        let verifier = random_token(32)?;
        let state = random_token(16)?;
        let scope = scope_to_ask(server, challenge, discovered, previous);
        let mut authorize = Url::parse(&auth.authorization_endpoint)
            .map_err(|e| format!("authorization_endpoint: {e}"))?;
        {
            let mut query = authorize.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &challenge_of(&verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &discovered.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        let credential = Credential {
            server_url: server.remote_url().unwrap_or_default().to_owned(),
            issuer: auth.issuer.clone(),
            token_endpoint: auth.token_endpoint.clone(),
            revocation_endpoint: auth.revocation_endpoint.clone(),
            resource: discovered.resource.clone(),
            scope,
            // What was registered for another server is kept; this one's is in use now.
            registrations: previous
                .map(|p| p.registrations.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|(issuer, _)| *issuer != auth.issuer)
                .collect(),
            ..client
        };
        let flow = Flow {
            state,
            verifier,
            redirect_uri,
            auth: auth.clone(),
            credential,
        };
        Ok((authorize, flow))
    }

    /// The `state` its redirect must carry: what a daemon finds the flow by.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The tokens the redirect to `callback` brings: its code exchanged, once its `state` and
    /// `iss` are this flow's.
    pub async fn finish(self, callback: &Url) -> Result<Credential, String> {
        let code = check_callback(callback, &self.state, &self.auth)?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("code_verifier", self.verifier.as_str()),
            ("resource", self.credential.resource.as_str()),
        ];
        let answer = token_request(&self.credential, &form).await?;
        Ok(answer.apply(self.credential))
    }
}

/// What to ask for: the configured scopes, else the challenge's, else what the resource lists;
/// with what an earlier login was granted and what the server asked for since (a step-up asks
/// for the union); `offline_access` added where the authorization server offers it (for a
/// refresh token).
fn scope_to_ask(
    server: &Server,
    challenge: &Challenge,
    discovered: &Discovered,
    previous: Option<&Credential>,
) -> Option<String> {
    let configured = server.oauth.as_ref().and_then(|o| o.scopes.clone());
    let mut scopes: Vec<String> = match (configured, &challenge.scope) {
        (Some(scopes), _) => scopes,
        (None, Some(scope)) => scope.split_whitespace().map(str::to_owned).collect(),
        (None, None) => discovered.scopes_supported.clone(),
    };
    let earlier = previous
        .filter(|p| p.issuer == discovered.auth.issuer)
        .into_iter()
        .flat_map(|p| [&p.scope, &p.wanted_scope])
        .flatten()
        .flat_map(|s| s.split_whitespace());
    for scope in earlier {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    let offered = discovered
        .auth
        .scopes_supported
        .iter()
        .any(|s| s == "offline_access");
    if offered && !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// `bytes` random bytes, base64url without padding; without the system's randomness no secret
/// can be made, and what needed one cannot go on (an error, never a panic: the daemon makes
/// them for its callers too).
pub fn random_token(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("the system's random source failed: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf))
}

/// PKCE's S256 challenge of `verifier`.
pub fn challenge_of(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The code the callback carries, once its `state` and `iss` are what they must be.
fn check_callback(callback: &Url, state: &str, auth: &AuthServer) -> Result<String, String> {
    let param = |key: &str| {
        callback
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = param("error") {
        let detail = param("error_description").unwrap_or_default();
        return Err(format!(
            "the authorization server refused: {error} {detail}"
        ));
    }
    if param("state").as_deref() != Some(state) {
        return Err("the redirect's state is not this login's: refusing it".into());
    }
    // RFC 9207: compared as strings, whenever present; required when the server says it sends it.
    match param("iss") {
        Some(iss) if iss != auth.issuer => {
            return Err(format!(
                "the redirect says it comes from {iss:?}, not {:?}: refusing it",
                auth.issuer
            ))
        }
        None if auth.iss_parameter => return Err(
            "the authorization server promised an iss in its redirect and sent none: refusing it"
                .into(),
        ),
        _ => {}
    }
    param("code").ok_or_else(|| "the redirect carries no code".into())
}

#[cfg(test)]
mod every_revision {
    mod auth {
        use super::super::*;

        fn auth_server(iss_parameter: bool) -> AuthServer {
            AuthServer {
                issuer: "https://auth.example".into(),
                iss_parameter,
                ..AuthServer::default()
            }
        }

        #[test]
        fn the_pkce_challenge_is_s256_of_the_verifier() {
            // RFC 7636, appendix B.
            assert_eq!(
                challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
                "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
            );
        }

        #[test]
        fn a_callback_is_refused_for_a_wrong_state_or_issuer() {
            let url = |q: &str| Url::parse(&format!("http://127.0.0.1/callback?{q}")).unwrap();
            let ok = url("code=c&state=s&iss=https%3A%2F%2Fauth.example");
            assert_eq!(check_callback(&ok, "s", &auth_server(true)).unwrap(), "c");
            assert!(check_callback(&ok, "other", &auth_server(true)).is_err());
            let wrong = url("code=c&state=s&iss=https%3A%2F%2Fevil.example");
            assert!(check_callback(&wrong, "s", &auth_server(false)).is_err());
            let normalized = url("code=c&state=s&iss=https%3A%2F%2Fauth.example%2F");
            assert!(check_callback(&normalized, "s", &auth_server(true)).is_err());
            let missing = url("code=c&state=s");
            assert!(check_callback(&missing, "s", &auth_server(true)).is_err());
            assert_eq!(
                check_callback(&missing, "s", &auth_server(false)).unwrap(),
                "c"
            );
        }
    }
}
