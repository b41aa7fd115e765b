//! What MCP itself defines, independent of transport: the revisions and their eras
//! ([`Revision`], [`Era`]), the methods and what each is ([`Method`]), the modern per-request
//! `_meta` envelope ([`envelope`]), and how a result is shaped for a client of a given revision
//! ([`shape`]).

pub mod envelope;
pub mod method;
mod revision;
pub mod shape;

pub use method::Method;
pub use revision::{Era, Revision};
