//! The HTTP status of a modern response, as a function of the response alone.
//!
//! Every -32602 is 400, not only the missing-`_meta` one the specification names: a status that
//! depended on which handler produced an invalid-params error would not be a function of the
//! response, and every invalid-params error is the client's.

use crate::jsonrpc::{self, Response};
use http::StatusCode;

/// 400 for the client errors, 404 for an unknown method, 200 for everything else.
pub fn modern_status(response: &Response) -> StatusCode {
    match response.error_code() {
        Some(
            jsonrpc::UNSUPPORTED_PROTOCOL_VERSION
            | jsonrpc::MISSING_CLIENT_CAPABILITY
            | jsonrpc::HEADER_MISMATCH
            | jsonrpc::INVALID_PARAMS
            | jsonrpc::INVALID_REQUEST
            | jsonrpc::PARSE_ERROR,
        ) => StatusCode::BAD_REQUEST,
        Some(jsonrpc::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod v2026_07_28 {
    mod http {
        use crate::jsonrpc::{ErrorObject, Id, Response};
        use crate::transport::http::status::modern_status;
        use serde_json::json;

        #[test]
        fn status_is_a_function_of_the_error_code() {
            for (code, status) in [
                (-32022, 400),
                (-32021, 400),
                (-32020, 400),
                (-32602, 400),
                (-32600, 400),
                (-32700, 400),
                (-32601, 404),
                (-32603, 200),
                (-1, 200),
            ] {
                let response = Response::error(Some(Id::Number(1)), ErrorObject::new(code, "x"));
                assert_eq!(modern_status(&response).as_u16(), status, "{code}");
            }
            assert_eq!(
                modern_status(&Response::result(Id::Number(1), json!({}))).as_u16(),
                200
            );
        }
    }
}
