//! Front doors: each turns bytes into requests for the gateway core and writes back what it says.
//! [`stdio`] serves one client over stdin and stdout; [`local`] serves editors' attached
//! `mcpx serve` processes with the same stdio transport on the daemon's local socket.

pub mod http;
pub mod local;
pub mod stdio;
