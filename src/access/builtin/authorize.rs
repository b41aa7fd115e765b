//! The authorization endpoint: a request checked, its consent page, the owner's answer, and
//! the redirect back to the client with a code (or an error), its `state` and `iss`.

use super::answers::{cookie, error_page, html, text};
use super::clients::NotFound;
use super::consent::{self, Asked, Full, Refused, Waiting, COOKIE};
use super::{form, AuthServer, Request};
use crate::metrics;
use http::{header, HeaderValue, Response, StatusCode};
use std::collections::HashMap;

impl AuthServer {
    /// `GET /oauth/authorize`: the request checked, then its consent page. What is wrong
    /// with the client or its redirect URI is told on a page (a redirect there could aim at
    /// anyone); the rest goes back to the client.
    pub(super) async fn authorize(
        &self,
        asked: &HashMap<String, String>,
        door_exists: &(dyn Fn(&str) -> bool + Sync),
    ) -> Response<String> {
        let Some(client_id) = asked.get("client_id") else {
            return error_page(StatusCode::BAD_REQUEST, "The request names no client_id.");
        };
        let client = match self.clients.find(client_id).await {
            Ok(client) => client,
            Err(why) => {
                match &why {
                    NotFound::Unfetched(fetch) => {
                        self.consents.unfetched_document(client_id, fetch)
                    }
                    NotFound::Refused(_) => {
                        tracing::info!(why = %why, "refused an authorization request")
                    }
                }
                return error_page(
                    StatusCode::BAD_REQUEST,
                    &format!("This client is not one mcpx can serve: {why}."),
                );
            }
        };
        let Some(redirect_uri) = client.redirect(asked.get("redirect_uri").map(String::as_str))
        else {
            return error_page(
                StatusCode::BAD_REQUEST,
                "The redirect_uri is not one the client registered.",
            );
        };
        let state = asked.get("state").cloned();
        let back = |error: &str, description: &str| {
            let params = [("error", error), ("error_description", description)];
            self.back_to(&redirect_uri, &params, state.as_deref(), StatusCode::FOUND)
        };
        if asked.get("response_type").map(String::as_str) != Some("code") {
            return back(
                "unsupported_response_type",
                "only response_type=code is supported",
            );
        }
        let challenge = asked
            .get("code_challenge")
            .filter(|c| (43..=128).contains(&c.len()));
        let (Some(challenge), Some("S256")) = (
            challenge,
            asked.get("code_challenge_method").map(String::as_str),
        ) else {
            return back(
                "invalid_request",
                "PKCE with code_challenge_method=S256 is required",
            );
        };
        let resource = match asked.get("resource") {
            None => format!("{}/mcp", self.issuer),
            Some(resource) => {
                let door = resource
                    .strip_prefix(&self.issuer)
                    .filter(|door| door_exists(door));
                match door {
                    Some(_) => resource.clone(),
                    None => return back("invalid_target", "resource is not a door of this mcpx"),
                }
            }
        };
        let scopes: Vec<String> = match asked.get("scope") {
            None => self.default_scopes.clone(),
            Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
        };
        if let Some(unknown) = scopes.iter().find(|s| !self.grantable.contains(s)) {
            return back(
                "invalid_scope",
                &format!("the scope {unknown:?} is not one this server grants"),
            );
        }
        let asked = Asked {
            client,
            redirect_uri,
            state,
            challenge: challenge.clone(),
            scopes,
            resource,
        };
        match self.consents.open(asked) {
            Ok(waiting) => {
                // The client's name and what it asks are anyone's words: quoted fields.
                tracing::info!(
                    client = ?waiting.asked.client.name,
                    resource = ?waiting.asked.resource,
                    "a client asks to reach a resource: its consent page waits (approve with `mcpx auth approve {}`)",
                    waiting.code
                );
                self.consent_page(StatusCode::OK, &waiting, None, true)
            }
            Err(full @ (Full::Client(_) | Full::Room(_))) => {
                metrics::authorization("waiting_room_full");
                error_page(
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!("The owner cannot be asked now: {full}. Try again later."),
                )
            }
            Err(e @ Full::NoRandomness(_)) => {
                error_page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
            }
        }
    }

    /// `POST /oauth/authorize`: the owner's answer on the consent page.
    pub(super) fn decide(&self, request: &Request<'_>) -> Response<String> {
        let origin = request
            .headers
            .get(header::ORIGIN)
            .map(HeaderValue::as_bytes);
        if origin.is_some_and(|o| o != self.issuer.as_bytes()) {
            return error_page(
                StatusCode::FORBIDDEN,
                "The consent form was sent from another site.",
            );
        }
        let posted = form(request.body);
        let field = |name: &str| posted.get(name).map_or("", String::as_str);
        let cookie = cookie(request.headers, COOKIE);
        let waiting = match self
            .consents
            .find(field("request"), cookie.as_deref(), field("csrf"))
        {
            Ok(waiting) => waiting,
            Err(Refused::Forged) => {
                return error_page(
                    StatusCode::FORBIDDEN,
                    "This consent form does not belong to this browser.",
                )
            }
            Err(_) => {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "This request is no longer waiting: start again from the app.",
                )
            }
        };
        let state = waiting.asked.state.as_deref();
        if field("decision") != "allow" {
            self.consents.close(&waiting.request);
            tracing::info!(client = ?waiting.asked.client.name, "the owner denied a client");
            metrics::authorization("denied");
            let params = [
                ("error", "access_denied"),
                ("error_description", "the owner denied the request"),
            ];
            return self.back_to(
                &waiting.asked.redirect_uri,
                &params,
                state,
                StatusCode::SEE_OTHER,
            );
        }
        let secret = posted.get("secret").map(String::as_str);
        match self
            .consents
            .approved(&waiting, secret, self.owner_secret.as_deref())
        {
            Ok(()) => {}
            Err(Refused::Locked(left)) => {
                metrics::authorization("locked");
                let notice = format!("Too many wrong secrets: the secret is refused for {} s more. Approving on the host still works.", left.as_secs().max(1));
                return self.consent_page(
                    StatusCode::TOO_MANY_REQUESTS,
                    &waiting,
                    Some(&notice),
                    false,
                );
            }
            Err(_) => {
                let wrong = secret.is_some_and(|s| !s.is_empty());
                if wrong {
                    metrics::authorization("secret_refused");
                }
                let notice = match wrong {
                    true => "That is not the owner secret.",
                    false => "Not approved yet: approve it on the host first.",
                };
                return self.consent_page(StatusCode::FORBIDDEN, &waiting, Some(notice), false);
            }
        }
        self.consents.close(&waiting.request);
        let asked = waiting.asked;
        let (redirect_uri, client_id) = (asked.redirect_uri.clone(), asked.client.id.clone());
        tracing::info!(
            client = ?asked.client.name,
            client_id = ?client_id,
            resource = ?asked.resource,
            "the owner allowed a client to reach a resource"
        );
        self.clients.consented(&client_id);
        metrics::authorization("consented");
        let state = asked.state.clone();
        match self.grants.code(asked) {
            Ok(code) => self.back_to(
                &redirect_uri,
                &[("code", &code)],
                state.as_deref(),
                StatusCode::SEE_OTHER,
            ),
            Err(e) => error_page(StatusCode::INTERNAL_SERVER_ERROR, &e),
        }
    }

    /// The consent page, with its security headers (and its cookie when `fresh`).
    fn consent_page(
        &self,
        status: StatusCode,
        waiting: &Waiting,
        notice: Option<&str>,
        fresh: bool,
    ) -> Response<String> {
        let mut answer = html(
            status,
            consent::page(waiting, self.owner_secret.is_some(), notice),
        );
        let headers = answer.headers_mut();
        let redirect = redirect_source(&waiting.asked.redirect_uri);
        let policy = format!("default-src 'none'; style-src 'unsafe-inline'; form-action 'self' {redirect}; frame-ancestors 'none'; base-uri 'none'");
        if let Ok(policy) = HeaderValue::try_from(policy) {
            headers.insert(header::CONTENT_SECURITY_POLICY, policy);
        }
        if fresh {
            let cookie = format!(
                "{COOKIE}={}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=600",
                waiting.cookie
            );
            if let Ok(cookie) = HeaderValue::try_from(cookie) {
                headers.insert(header::SET_COOKIE, cookie);
            }
        }
        answer
    }

    /// The redirect to the client with `params`, its `state` and the issuer (RFC 9207).
    fn back_to(
        &self,
        redirect_uri: &str,
        params: &[(&str, &str)],
        state: Option<&str>,
        status: StatusCode,
    ) -> Response<String> {
        let Ok(mut url) = url::Url::parse(redirect_uri) else {
            return error_page(StatusCode::BAD_REQUEST, "The redirect_uri is not a URL.");
        };
        {
            let mut query = url.query_pairs_mut();
            for (name, value) in params {
                query.append_pair(name, value);
            }
            if let Some(state) = state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", &self.issuer);
        }
        let mut answer = text(status, "");
        if let Ok(location) = HeaderValue::try_from(url.as_str()) {
            answer.headers_mut().insert(header::LOCATION, location);
        }
        answer
    }
}

/// The CSP source a form may go on to: the redirect URI's origin, or its scheme.
fn redirect_source(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.origin().ascii_serialization(),
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => String::new(),
    }
}
