//! What MCP itself defines, independent of transport: the revisions and their eras
//! ([`Revision`], [`Era`]), the modern per-request `_meta` envelope ([`envelope`]), and how a result
//! is shaped for a client of a given revision ([`shape`]).

pub mod envelope;
mod revision;
pub mod shape;

pub use revision::{Era, Revision};
