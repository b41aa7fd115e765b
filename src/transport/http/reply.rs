//! The responses the front door writes itself: JSON, plain text, the empty and the too large.

use crate::jsonrpc::{self, ErrorObject, Response as RpcResponse, INVALID_REQUEST};
use crate::metrics::{self, Refusal};
use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use std::convert::Infallible;

/// The body of every response mcpx sends.
pub type Body = BoxBody<Bytes, Infallible>;

pub(super) fn too_large(limit: usize) -> Response<Body> {
    metrics::refused(Refusal::too_large);
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorObject::new(
            INVALID_REQUEST,
            format!("Invalid Request: the body exceeds {limit} bytes"),
        ),
    )
}

/// A plain-text response, for what is not MCP at all.
pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A JSON response.
pub(super) fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    // Written straight from the message: a result is never copied into a `Value` to be sent.
    let bytes = jsonrpc::to_body(body);
    metrics::sent(metrics::Door::http, bytes.len());
    let mut response = Response::new(Full::new(Bytes::from(bytes)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// An id-less JSON-RPC error with an explicit status.
pub(super) fn rpc_error(status: StatusCode, error: ErrorObject) -> Response<Body> {
    json_response(status, &RpcResponse::error(None, error))
}

/// A body with nothing in it.
pub(super) fn empty() -> Body {
    Full::new(Bytes::new()).boxed()
}

/// 202 with no body: a notification was accepted.
pub(super) fn accepted() -> Response<Body> {
    let mut response = Response::new(empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}
