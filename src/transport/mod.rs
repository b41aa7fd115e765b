//! Front doors: each turns bytes into requests for the gateway core and writes back what it says.
//! [`stdio`] serves one client over stdin and stdout; [`local`] serves editors' attached
//! `mcpx serve` processes with the same stdio transport on the daemon's local socket.

pub mod http;
pub mod local;
pub mod stdio;

use crate::jsonrpc::{ErrorObject, Id, Response, INTERNAL_ERROR};

/// The answer to a request mcpx itself ends because it is shutting down: every request gets
/// exactly one answer, and a call cut short by mcpx must not look like one the client cancelled.
pub(crate) fn shutting_down(id: Id) -> Response {
    Response::error(
        Some(id),
        ErrorObject::new(INTERNAL_ERROR, "mcpx is shutting down"),
    )
}
