//! The token, revocation and registration endpoints, and how a client proves it is itself
//! there.

use super::answers::{json_answer, oauth_error};
use super::assertion::{claimed_client, JWT_BEARER};
use super::clients::{Authentication, Client};
use super::grants::GrantError;
use super::{form, AuthServer, Request};
use crate::metrics;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use serde_json::{json, Value};
use std::collections::HashMap;

impl AuthServer {
    /// `POST /oauth/token`.
    pub(super) async fn token(&self, request: &Request<'_>) -> Response<String> {
        let posted = form(request.body);
        let client = match self.authenticated(request.headers, &posted).await {
            Ok(client) => client,
            Err(error) => {
                tracing::info!("refused a token request: {}", error.1);
                metrics::authorization("refused");
                return oauth_error(StatusCode::UNAUTHORIZED, error);
            }
        };
        let granted = match posted.get("grant_type").map(String::as_str) {
            Some("authorization_code") => self.grants.exchange(&client.id, &posted),
            Some("refresh_token") => self.grants.refresh(&client.id, &posted),
            Some(other) => Err(GrantError(
                "unsupported_grant_type",
                format!("{other:?} is not a grant this server takes"),
            )),
            None => Err(GrantError(
                "invalid_request",
                "grant_type is required".into(),
            )),
        };
        match granted {
            Ok(tokens) => {
                metrics::authorization(match posted.get("grant_type").map(String::as_str) {
                    Some("refresh_token") => "refreshed",
                    _ => "token",
                });
                let mut answer = json_answer(StatusCode::OK, &tokens);
                answer
                    .headers_mut()
                    .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
                answer
            }
            Err(error) => {
                tracing::info!("refused a token request of {}: {}", client.id, error.1);
                metrics::authorization("refused");
                oauth_error(StatusCode::BAD_REQUEST, error)
            }
        }
    }

    /// `POST /oauth/revoke` (RFC 7009): 200 whatever the token was.
    pub(super) async fn revoke(&self, request: &Request<'_>) -> Response<String> {
        let posted = form(request.body);
        let client = match self.authenticated(request.headers, &posted).await {
            Ok(client) => client,
            Err(error) => return oauth_error(StatusCode::UNAUTHORIZED, error),
        };
        if let Some(token) = posted.get("token") {
            self.grants.revoke(&client.id, token);
        }
        json_answer(StatusCode::OK, &json!({}))
    }

    /// The client a token or revocation request comes from, authenticated as it registered.
    async fn authenticated(
        &self,
        headers: &HeaderMap,
        posted: &HashMap<String, String>,
    ) -> Result<Client, GrantError> {
        let invalid = |why: String| GrantError("invalid_client", why);
        if headers.contains_key(header::AUTHORIZATION) || posted.contains_key("client_secret") {
            return Err(invalid(
                "this server issues no client secrets: authenticate with none or private_key_jwt"
                    .into(),
            ));
        }
        let assertion = posted.get("client_assertion");
        let id = match (assertion, posted.get("client_id")) {
            (Some(assertion), named) => {
                if posted.get("client_assertion_type").map(String::as_str) != Some(JWT_BEARER) {
                    return Err(invalid(format!(
                        "client_assertion_type must be {JWT_BEARER}"
                    )));
                }
                let claimed = claimed_client(assertion)
                    .ok_or_else(|| invalid("the client assertion names no client".into()))?;
                if named.is_some_and(|named| *named != claimed) {
                    return Err(invalid("client_id is not the assertion's".into()));
                }
                claimed
            }
            (None, Some(named)) => named.clone(),
            (None, None) => return Err(invalid("client_id is required".into())),
        };
        let client = self
            .clients
            .find(&id)
            .await
            .map_err(|e| invalid(e.to_string()))?;
        match (&client.authentication, assertion) {
            (Authentication::None, None) => Ok(client),
            (Authentication::None, Some(_)) => Err(invalid(
                "this client is public: it sends no assertion".into(),
            )),
            (Authentication::PrivateKeyJwt { .. }, None) => Err(invalid(
                "this client authenticates with private_key_jwt: send client_assertion".into(),
            )),
            (Authentication::PrivateKeyJwt { .. }, Some(assertion)) => {
                let audiences = [
                    format!("{}/oauth/token", self.issuer),
                    format!("{}/token", self.issuer),
                    self.issuer.clone(),
                ];
                (self
                    .assertions
                    .check(&self.clients, &client, assertion, &audiences)
                    .await)
                    .map_err(invalid)?;
                Ok(client)
            }
        }
    }

    /// `POST /oauth/register` (RFC 7591).
    pub(super) fn register(&self, body: &[u8]) -> Response<String> {
        let metadata: Value = match serde_json::from_slice(body) {
            Ok(metadata) => metadata,
            Err(e) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    GrantError(
                        "invalid_client_metadata",
                        format!("the body is not JSON: {e}"),
                    ),
                )
            }
        };
        match self.clients.register(metadata) {
            Ok(registered) => {
                tracing::info!("a client registered: {}", registered["client_id"]);
                metrics::authorization("registered");
                json_answer(StatusCode::CREATED, &registered)
            }
            Err((error, why)) => oauth_error(StatusCode::BAD_REQUEST, GrantError(error, why)),
        }
    }
}
