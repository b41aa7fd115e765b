//! A client's request on its way through the gateway: built once in dispatch from what was
//! sent and who sent it, and what every step after reads (routing, the policies, carrying it
//! upstream) instead of the separate values it was made from.

use super::{Client, RequestContext};
use crate::jsonrpc::Id;
use crate::protocol::{envelope, Era, Extensions, Method, Revision};
use crate::upstream::FrameSink;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// One request, as the gateway answers it.
#[derive(Clone, Copy)]
pub(super) struct Incoming<'a> {
    /// The client session it came on.
    pub client: &'a Arc<Client>,
    pub method: Method,
    /// Its params as sent: its `_meta` (progress token, `requestState`, capabilities) is read
    /// here even when the call itself is unwrapped from `mcpx__call_tool`.
    pub params: Option<&'a Value>,
    /// The client's revision for this request.
    pub revision: Revision,
    /// The extensions mcpx carries that the client negotiated for it.
    pub extensions: Extensions,
    /// Its cancellation, its own messages, and who sent it.
    pub ctx: &'a RequestContext,
    /// Its JSON-RPC id, where dispatch knows it: a stream's frames name it.
    pub id: Option<&'a Id>,
    /// Where the frames of the stream it opens upstream go (`events/stream`).
    pub frames: Option<&'a FrameSink>,
}

impl<'a> Incoming<'a> {
    /// A request of `client` for `method`, with the extensions it negotiated.
    pub fn new(
        client: &'a Arc<Client>,
        method: Method,
        params: Option<&'a Value>,
        revision: Revision,
        ctx: &'a RequestContext,
    ) -> Incoming<'a> {
        let extensions = match revision.era() {
            Era::Modern => Extensions::declared_in(envelope::client_capabilities(params)),
            Era::Legacy => client.extensions(),
        };
        Incoming {
            client,
            method,
            params,
            revision,
            extensions,
            ctx,
            id: None,
            frames: None,
        }
    }

    /// The same request, known by its JSON-RPC `id`.
    pub fn with_id(self, id: &'a Id) -> Incoming<'a> {
        Incoming {
            id: Some(id),
            ..self
        }
    }

    pub fn era(&self) -> Era {
        self.revision.era()
    }

    /// What the client can answer: declared per request in the modern era (borrowed from the
    /// request), at `initialize` in the legacy one.
    pub fn capabilities(&self) -> Cow<'a, Value> {
        match self.era() {
            Era::Modern => {
                let declared = envelope::client_capabilities(self.params);
                declared.map_or_else(|| Cow::Owned(json!({})), Cow::Borrowed)
            }
            Era::Legacy => Cow::Owned(self.client.capabilities()),
        }
    }
}
