//! The daemon's endpoints beside MCP's doors: `/healthz`, the protected resource metadata
//! (RFC 9728), the built-in authorization server's, a person's sign-in to a per-identity server,
//! servers' webhooks mcpx relays, and `/metrics`.

use super::reply::{empty, json_response, plain, Body};
use super::{Caller, FrontDoor};
use crate::access::builtin::{self, consent, AuthServer};
use crate::gateway::event_relay::{self, Relayed};
use crate::gateway::person_login::{self, Page};
use crate::metrics;
use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;

impl FrontDoor {
    /// `GET /healthz`, for load balancers and probes: 200 while the daemon serves. Without
    /// the daemon's token (where it has one) it says only that; with it, each upstream's state.
    pub(super) fn health(&self, caller: Caller, headers: &HeaderMap) -> Response<Body> {
        let authorization = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
        let trusted = caller == Caller::Trusted && self.options.gate.trusts_probe(authorization);
        let mut health = serde_json::json!({ "status": "ok" });
        if trusted {
            let upstreams: serde_json::Map<String, Value> = self
                .gateway
                .summaries()
                .into_iter()
                .map(|u| (u.name, Value::String(u.state)))
                .collect();
            health["upstreams"] = Value::Object(upstreams);
        }
        let mut response = json_response(StatusCode::OK, &health);
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-store"),
        );
        response
    }

    /// `GET /.well-known/oauth-protected-resource[/mcp[/NAME]]` (RFC 9728): public, so any
    /// origin may read it.
    pub(super) fn resource_metadata(&self, path: &str, method: &Method) -> Response<Body> {
        let door_exists = |door: &str| self.door(door).is_ok();
        let mut response = match self.options.gate.metadata(path, door_exists) {
            None => plain(
                StatusCode::NOT_FOUND,
                "no protected resource is described here\n",
            ),
            Some(_) if method == Method::OPTIONS => {
                let mut answer = Response::new(empty());
                *answer.status_mut() = StatusCode::NO_CONTENT;
                let allow = http::HeaderValue::from_static("GET, OPTIONS");
                answer
                    .headers_mut()
                    .insert(header::ACCESS_CONTROL_ALLOW_METHODS, allow);
                answer
            }
            Some(document) if method == Method::GET => json_response(StatusCode::OK, &document),
            Some(_) => plain(StatusCode::METHOD_NOT_ALLOWED, "this metadata takes GET\n"),
        };
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            http::HeaderValue::from_static("*"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            http::HeaderValue::from_static("mcp-protocol-version"),
        );
        response
    }

    /// A request to the built-in authorization server, its body read whole (a form or a
    /// registration: small).
    pub(super) async fn authorization(
        &self,
        server: &AuthServer,
        request: Request<Incoming>,
    ) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let bytes = match self
            .read_body(&parts.headers, body, builtin::MAX_BODY)
            .await
        {
            Ok(bytes) => bytes,
            Err(refusal) => return *refusal,
        };
        let door_exists = |door: &str| self.door(door).is_ok();
        let asked = builtin::Request {
            method: &parts.method,
            path: parts.uri.path(),
            query: parts.uri.query(),
            headers: &parts.headers,
            body: &bytes,
        };
        let (head, text) = server.answer(asked, &door_exists).await.into_parts();
        Response::from_parts(head, Full::new(Bytes::from(text)).boxed())
    }

    /// `/upstreams/login[/callback]`: a person's sign-in to a per-identity server, in their
    /// browser ([`crate::gateway::person_login`]): GET the link's page, POST its confirmation,
    /// GET the authorization server's redirect back.
    pub(super) async fn person_login(&self, request: Request<Incoming>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let form = match parts.method {
            Method::GET => None,
            Method::POST if parts.uri.path() == person_login::START => {
                match self.read_body(&parts.headers, body, 4096).await {
                    Ok(bytes) => Some(bytes),
                    Err(refusal) => return *refusal,
                }
            }
            _ => return plain(StatusCode::METHOD_NOT_ALLOWED, "this page takes GET\n"),
        };
        let cookies = parts.headers.get(header::COOKIE);
        let asked = person_login::Asked {
            path: parts.uri.path(),
            query: parts.uri.query(),
            form: form.as_deref(),
            cookies: cookies.and_then(|c| c.to_str().ok()),
        };
        let html = |status: StatusCode, body: String| {
            let page = format!("<!doctype html><meta charset=utf-8><title>mcpx</title>{body}");
            let mut response = Response::new(Full::new(Bytes::from(page)).boxed());
            *response.status_mut() = status;
            let html = http::HeaderValue::from_static("text/html; charset=utf-8");
            response.headers_mut().insert(header::CONTENT_TYPE, html);
            response
        };
        let page = |status, text: &str| html(status, format!("<p>{}", consent::escape(text)));
        let mut response = match self.gateway.person_login_page(asked).await {
            Page::Confirm {
                text,
                ticket,
                set_cookie,
            } => {
                let form = format!(
                    "<p>{}<form method=post action=\"{}\"><input type=hidden name=ticket value=\"{}\"><button>Continue</button></form>",
                    consent::escape(&text),
                    person_login::START,
                    consent::escape(&ticket)
                );
                let mut response = html(StatusCode::OK, form);
                let cookie = set_cookie.and_then(|c| http::HeaderValue::try_from(c).ok());
                if let Some(cookie) = cookie {
                    response.headers_mut().insert(header::SET_COOKIE, cookie);
                }
                response
            }
            Page::Redirect(to) => match http::HeaderValue::try_from(to) {
                Ok(location) => {
                    let mut response = Response::new(empty());
                    *response.status_mut() = StatusCode::SEE_OTHER;
                    response.headers_mut().insert(header::LOCATION, location);
                    response
                }
                Err(_) => page(
                    StatusCode::BAD_GATEWAY,
                    "the authorization server's address cannot be sent",
                ),
            },
            Page::Done(text) => page(StatusCode::OK, &text),
            Page::Refused(text) => page(StatusCode::BAD_REQUEST, &text),
        };
        // The link is a capability: never cached, never sent on as a referrer, never framed.
        let headers = response.headers_mut();
        for (name, value) in [
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ] {
            headers.insert(name, http::HeaderValue::from_static(value));
        }
        response
    }

    /// `POST /events/webhooks/ID`: a server's webhook to mcpx, for a client's subscription mcpx
    /// relays ([`crate::gateway::event_relay`]). Signed by the server, not sent with mcpx's
    /// token: the signature is the credential.
    pub(super) async fn relayed_webhook(&self, request: Request<Incoming>) -> Response<Body> {
        if request.method() != Method::POST {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "a webhook takes POST\n");
        }
        let (parts, body) = request.into_parts();
        let id = (parts.uri.path())
            .strip_prefix(event_relay::PATH)
            .unwrap_or_default();
        let bytes = match (self.read_body(&parts.headers, body, event_relay::MAX_BODY)).await {
            Ok(bytes) => bytes,
            Err(refusal) => return *refusal,
        };
        match self.gateway.relay_webhook(id, &parts.headers, &bytes).await {
            Relayed::Echo(answer) => json_response(StatusCode::OK, &answer),
            Relayed::Taken => {
                let mut taken = Response::new(empty());
                *taken.status_mut() = StatusCode::NO_CONTENT;
                taken
            }
            Relayed::Refused(status) => {
                let mut refused = Response::new(empty());
                *refused.status_mut() = status;
                refused
            }
        }
    }

    /// `GET /metrics`: the Prometheus text format.
    pub(super) fn metrics(&self, method: &Method) -> Response<Body> {
        if method != Method::GET {
            let mut refusal = plain(StatusCode::METHOD_NOT_ALLOWED, "/metrics takes GET\n");
            refusal
                .headers_mut()
                .insert(header::ALLOW, http::HeaderValue::from_static("GET"));
            return refusal;
        }
        let text = self.gateway.metrics().unwrap_or_default();
        let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static(metrics::CONTENT_TYPE),
        );
        response
    }
}
