//! Token exchange (RFC 8693) at the identity provider: a caller's access token becomes a token
//! of its own for one upstream (the upstream's resource as its audience), so that the caller
//! reaches a per-identity remote server as themselves, and their own token never reaches it.
//! mcpx authenticates as `[auth.external] clientId` with its `clientSecret` (HTTP Basic).

use super::identity::AccessToken;
use super::issuer::{Issuer, FETCH_TIMEOUT};
use crate::config::External;
use crate::deadline::within;
use crate::net::client::fetch;
use base64::Engine;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::Value;
use std::time::{Duration, Instant};

const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// How long an exchanged token without `expires_in` is used.
const UNSTATED_LIFETIME: Duration = Duration::from_secs(300);

/// The provider's token endpoint, and who mcpx is there.
#[derive(Debug)]
pub struct Exchanger {
    issuer: Issuer,
    client_id: String,
    client_secret: Option<String>,
}

/// A token had by exchange.
pub struct Exchanged {
    /// The token the upstream is sent.
    pub token: String,
    /// When it stops being good.
    pub expires: Instant,
}

/// What the upstream's token is to be: for whom (its audience), with which scopes.
pub struct Asked<'a> {
    /// The upstream's resource (its URL), or `perIdentity.audience`.
    pub audience: &'a str,
    /// `perIdentity.scopes`.
    pub scopes: &'a [String],
}

impl Exchanger {
    /// The exchanger `[auth.external]` describes, with its `clientSecret` expanded; `None`
    /// without an issuer or a `clientId`.
    pub fn new(external: &External, secret: Option<String>) -> Option<Exchanger> {
        Some(Exchanger {
            issuer: Issuer::new(external.issuer.clone()?, None, None),
            client_id: external.client_id.clone()?,
            client_secret: secret,
        })
    }

    /// `subject`'s token exchanged for one `asked` describes; an error says why, never a token.
    pub async fn exchange(
        &self,
        subject: &AccessToken,
        asked: Asked<'_>,
    ) -> Result<Exchanged, String> {
        let endpoint = self.issuer.token_endpoint().await?;
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", GRANT)
                .append_pair("subject_token", subject.expose())
                .append_pair("subject_token_type", ACCESS_TOKEN)
                .append_pair("requested_token_type", ACCESS_TOKEN)
                .append_pair("audience", asked.audience)
                .append_pair("resource", asked.audience);
            if !asked.scopes.is_empty() {
                form.append_pair("scope", &asked.scopes.join(" "));
            }
            form.finish()
        };
        let mut headers = HeaderMap::new();
        let pair = format!(
            "{}:{}",
            self.client_id,
            self.client_secret.as_deref().unwrap_or("")
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(pair);
        if let Ok(value) = HeaderValue::try_from(format!("Basic {basic}")) {
            headers.insert(http::header::AUTHORIZATION, value);
        }
        let body = Some(("application/x-www-form-urlencoded", form));
        let answer = within(FETCH_TIMEOUT, fetch(Method::POST, &endpoint, headers, body)).await?;
        let said: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        if answer.status != StatusCode::OK {
            let error = said["error"].as_str().unwrap_or("no error code");
            let description = said["error_description"].as_str().unwrap_or_default();
            return Err(format!(
                "the identity provider refused the token exchange ({} {error}{}{description})",
                answer.status.as_u16(),
                if description.is_empty() { "" } else { ": " },
            ));
        }
        let token = said["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or("the identity provider's exchange answer holds no access_token")?;
        let lifetime = said["expires_in"]
            .as_u64()
            .map_or(UNSTATED_LIFETIME, Duration::from_secs);
        Ok(Exchanged {
            token: token.to_owned(),
            expires: Instant::now() + lifetime,
        })
    }
}
