//! What knows sockets and HTTP but no MCP: the transports and upstreams build on it, and it
//! imports nothing of theirs.

pub mod client;
pub mod hyper_io;
pub mod peer_process;
pub mod peer_user;
pub mod private_socket;
pub mod public;
pub mod tcp;
