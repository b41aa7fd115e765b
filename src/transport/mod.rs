//! Front doors: each turns bytes into requests for the gateway core and writes back what it says.
//! [`stdio`] serves one client over stdin and stdout.

pub mod http;
pub mod stdio;
