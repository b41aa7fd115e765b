//! What MCP itself defines, independent of transport: the revisions and their eras
//! ([`Revision`], [`Era`]), the methods and what each is ([`Method`]), the notifications ([`Notice`]), the modern per-request
//! `_meta` envelope ([`envelope`]), the schema's object definitions ([`definition`]), the
//! extensions mcpx carries ([`extension`]), and how a result is shaped for a client of a given
//! revision and extensions ([`shape`]), and tasks as each generation writes them ([`task`]).

pub mod definition;
pub mod envelope;
pub mod extension;
pub mod method;
pub mod notification;
mod revision;
pub mod shape;
pub mod task;

pub use extension::{Extension, Extensions};
pub use method::{Method, ResultKind};
pub use notification::Notice;
pub use revision::{Era, Revision};
