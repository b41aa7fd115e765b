//! The server's answers: JSON (never cached), HTML pages that may not be framed, its OAuth
//! errors, and the cookie a consent form comes back with.

use super::consent;
use super::grants::GrantError;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use serde_json::{json, Value};

/// The value of cookie `name`.
pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then(|| value.to_owned())
        })
}

pub(super) fn text(status: StatusCode, body: &str) -> Response<String> {
    let mut answer = Response::new(body.to_owned());
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    answer
}

pub(super) fn json_answer(status: StatusCode, value: &Value) -> Response<String> {
    let mut answer = text(status, &value.to_string());
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer
}

pub(super) fn html(status: StatusCode, page: String) -> Response<String> {
    let mut answer = text(status, "");
    *answer.body_mut() = page;
    with_headers(
        answer,
        &[
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
    )
}

/// `answer` with `headers` set (replacing any of the same names).
pub(super) fn with_headers(
    mut answer: Response<String>,
    headers: &[(HeaderName, &'static str)],
) -> Response<String> {
    for (name, value) in headers {
        (answer.headers_mut()).insert(name, HeaderValue::from_static(value));
    }
    answer
}

pub(super) fn error_page(status: StatusCode, why: &str) -> Response<String> {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcpx</title></head><body><h1>mcpx cannot go on</h1><p>{}</p></body></html>",
        consent::escape(why)
    );
    let mut answer = html(status, page);
    let policy = HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'");
    answer
        .headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, policy);
    answer
}

pub(super) fn oauth_error(
    status: StatusCode,
    GrantError(error, description): GrantError,
) -> Response<String> {
    json_answer(
        status,
        &json!({"error": error, "error_description": description}),
    )
}
