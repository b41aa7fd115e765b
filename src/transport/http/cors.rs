//! CORS for the origins [`OriginPolicy`](super::origin::OriginPolicy) allows, so that a browser
//! client (the MCP Inspector, a web app named in `allowedOrigins`) can use `/mcp`: a preflight
//! is answered with what such a client sends (the MCP headers, `Authorization`), and every answer
//! to an allowed origin names it and exposes the headers a client must read (`Mcp-Session-Id`,
//! `WWW-Authenticate`). An origin not allowed gets no CORS header at all, so the browser keeps
//! the page from reading anything; the request itself is refused as before.

use super::{rpc_error, Body};
use crate::jsonrpc::{ErrorObject, INVALID_REQUEST};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};

/// What a browser may send, besides the CORS-safelisted headers: the MCP request headers, its
/// mirrored `Mcp-Param-*` headers, and a bearer token.
const ALLOWED_HEADERS: [&str; 8] = [
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
];

/// What a browser page may read of an answer besides the safelisted headers.
const EXPOSED: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate";

/// Whether `request` is a CORS preflight (an `OPTIONS` naming the method it is for).
pub fn is_preflight(method: &http::Method, headers: &HeaderMap) -> bool {
    method == http::Method::OPTIONS && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The answer to a preflight from `origin` (already allowed, or `None`: refused).
pub fn preflight(origin: Option<&HeaderValue>, headers: &HeaderMap) -> Response<Body> {
    let method_ok = headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .is_some_and(|m| matches!(m.as_bytes(), b"POST" | b"GET" | b"DELETE"));
    let requested = headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let headers_ok = requested
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .all(allowed_header);
    let (Some(origin), true, true) = (origin, method_ok, headers_ok) else {
        return rpc_error(
            StatusCode::FORBIDDEN,
            ErrorObject::new(
                INVALID_REQUEST,
                "Forbidden: this Origin, method or header is not allowed",
            ),
        );
    };
    let mut response = Response::new(super::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let answer = response.headers_mut();
    name_origin(answer, origin);
    answer.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    if let Ok(requested) = HeaderValue::from_str(requested) {
        if !requested.is_empty() {
            answer.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, requested);
        }
    }
    answer.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// Lets the allowed `origin` read `response`.
pub fn allow(response: &mut Response<Body>, origin: &HeaderValue) {
    let headers = response.headers_mut();
    name_origin(headers, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED),
    );
}

fn name_origin(headers: &mut HeaderMap, origin: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    // A cache must not hand one origin's answer to another.
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

fn allowed_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ALLOWED_HEADERS.contains(&name.as_str()) || name.starts_with("mcp-param-")
}

#[cfg(test)]
mod every_revision {
    mod cors {
        use crate::transport::http::cors::{allow, is_preflight, preflight};
        use http::header::{self, HeaderMap, HeaderValue};

        fn asking(method: &'static str, headers: &'static str) -> HeaderMap {
            let mut asked = HeaderMap::new();
            asked.insert(
                header::ACCESS_CONTROL_REQUEST_METHOD,
                HeaderValue::from_static(method),
            );
            asked.insert(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                HeaderValue::from_static(headers),
            );
            asked
        }

        #[test]
        fn a_preflight_for_the_mcp_headers_names_the_origin_methods_and_headers() {
            let origin = HeaderValue::from_static("https://app.example");
            let asked = asking(
                "POST",
                "content-type, mcp-protocol-version, Mcp-Param-Region, authorization",
            );
            assert!(is_preflight(&http::Method::OPTIONS, &asked));
            let answer = preflight(Some(&origin), &asked);
            assert_eq!(answer.status(), 204);
            let h = answer.headers();
            assert_eq!(
                h[header::ACCESS_CONTROL_ALLOW_ORIGIN],
                "https://app.example"
            );
            assert_eq!(h[header::ACCESS_CONTROL_ALLOW_METHODS], "GET, POST, DELETE");
            assert!(h[header::ACCESS_CONTROL_ALLOW_HEADERS]
                .to_str()
                .unwrap()
                .contains("Mcp-Param-Region"));
            assert_eq!(h[header::VARY], "Origin");
        }

        #[test]
        fn a_preflight_from_a_refused_origin_or_for_another_header_is_403() {
            let origin = HeaderValue::from_static("https://app.example");
            assert_eq!(
                preflight(None, &asking("POST", "content-type")).status(),
                403
            );
            assert_eq!(preflight(Some(&origin), &asking("PUT", "")).status(), 403);
            assert_eq!(
                preflight(Some(&origin), &asking("POST", "x-secret")).status(),
                403
            );
        }

        #[test]
        fn an_answer_to_an_allowed_origin_exposes_the_session_and_auth_headers() {
            let mut response = http::Response::new(crate::transport::http::empty());
            allow(
                &mut response,
                &HeaderValue::from_static("http://localhost:5173"),
            );
            let h = response.headers();
            assert_eq!(
                h[header::ACCESS_CONTROL_ALLOW_ORIGIN],
                "http://localhost:5173"
            );
            let exposed = h[header::ACCESS_CONTROL_EXPOSE_HEADERS].to_str().unwrap();
            assert!(exposed.contains("Mcp-Session-Id") && exposed.contains("WWW-Authenticate"));
        }
    }
}
