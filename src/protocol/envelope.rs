//! The modern (2026-07-28) per-request envelope: `params._meta` must name the protocol version and
//! the client's capabilities on every request, because there is no handshake to remember them.

use super::{Era, Revision};
use crate::json::Member;
use crate::jsonrpc::{
    serialize_with_meta, ErrorObject, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION,
};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// `_meta` key: the revision a modern request is written in.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the capabilities a modern client declares, on every request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's `Implementation`, which a modern client SHOULD send on every request.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the listen request a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a valid modern envelope tells the server about one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<'a> {
    /// The client's capabilities for this request alone, borrowed: every modern request is
    /// checked (twice over HTTP), and most checks want only the verdict.
    pub client_capabilities: &'a Value,
}

/// The protocol version a request's `_meta` names, if any.
pub fn declared_version(params: Option<&Value>) -> Option<&Value> {
    params?.member("_meta")?.member(PROTOCOL_VERSION)
}

/// Which era a request was written in: modern exactly when its `_meta` names a protocol version.
pub fn era_of(params: Option<&Value>) -> Era {
    if declared_version(params).is_some() {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// A modern request's `clientCapabilities`, as its `_meta` declares them.
pub fn client_capabilities(params: Option<&Value>) -> Option<&Value> {
    params?.member("_meta")?.member(CLIENT_CAPABILITIES)
}

/// The `clientInfo` a modern request carries in its `_meta`, if any.
pub fn client_info(params: Option<&Value>) -> Option<&Value> {
    params?.member("_meta")?.member(CLIENT_INFO)
}

/// Checks a modern request's envelope: missing fields are -32602, and a version mcpx does not
/// serve is -32022 listing every revision it does (a dual-era client learns from the list that
/// `initialize` would work too).
pub fn check(params: Option<&Value>) -> Result<Envelope<'_>, ErrorObject> {
    let meta = params
        .and_then(|p| p.member("_meta"))
        .filter(|m| m.is_object())
        .ok_or_else(|| {
            ErrorObject::new(
                INVALID_PARAMS,
                "Invalid params: a 2026-07-28 request needs params._meta",
            )
        })?;
    let version = meta
        .member(PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ErrorObject::new(
                INVALID_PARAMS,
                format!("Invalid params: _meta needs a string {PROTOCOL_VERSION:?}"),
            )
        })?;
    let client_capabilities = meta
        .member(CLIENT_CAPABILITIES)
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            ErrorObject::new(
                INVALID_PARAMS,
                format!("Invalid params: _meta needs an object {CLIENT_CAPABILITIES:?}"),
            )
        })?;
    if Revision::parse(version).map(Revision::era) != Some(Era::Modern) {
        return Err(unsupported_version(version, Revision::all_strings()));
    }
    Ok(Envelope {
        client_capabilities,
    })
}

/// A request's params with the modern envelope added, as mcpx sends them to a 2026-07-28
/// upstream. The capabilities are the ones the gateway put there (those of the client the call
/// is for, whose input the upstream may ask for), or none.
pub fn wrap(params: Option<Value>) -> Value {
    serde_json::to_value(Wrapped(params.as_ref())).unwrap_or_default()
}

/// [`wrap`]'s params as they are serialized: the envelope is written with them, not copied into
/// them, so a forwarded call's body is written straight from the params the gateway holds.
pub struct Wrapped<'a>(pub Option<&'a Value>);

impl Serialize for Wrapped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let params = match self.0 {
            None => None,
            Some(Value::Object(params)) => Some(params),
            // Not an object, so no `_meta` to carry the envelope: passed on as it is.
            Some(other) => return other.serialize(serializer),
        };
        serialize_with_meta(serializer, params, WrappedMeta)
    }
}

/// A forwarded `_meta` (anything but an object counts as none) with mcpx's envelope.
struct WrappedMeta<'a>(Option<&'a Map<String, Value>>);

impl Serialize for WrappedMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let mut has_capabilities = false;
        for (key, value) in self.0.into_iter().flatten() {
            if key != PROTOCOL_VERSION && key != CLIENT_INFO {
                has_capabilities |= key == CLIENT_CAPABILITIES;
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry(PROTOCOL_VERSION, Revision::V2026_07_28.as_str())?;
        // mcpx is the client of the upstream (a caller's own clientInfo is not passed on).
        map.serialize_entry(CLIENT_INFO, &MCPX)?;
        if !has_capabilities {
            map.serialize_entry(CLIENT_CAPABILITIES, &*OWN_CAPABILITIES)?;
        }
        map.end()
    }
}

/// What a request of mcpx's own declares: it can answer no input, and takes every extension it
/// carries.
static OWN_CAPABILITIES: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| json!({ "extensions": super::extension::declared_by_mcpx() }));

/// An MCP `Implementation`: a client's or server's name and version.
#[derive(Serialize)]
pub struct Implementation {
    name: &'static str,
    version: &'static str,
}

/// mcpx, as the client of its upstreams and the server of its clients.
pub const MCPX: Implementation = Implementation {
    name: "mcpx",
    version: env!("CARGO_PKG_VERSION"),
};

/// A -32022 error naming what was asked for and what is served.
pub fn unsupported_version(requested: &str, supported: Vec<&str>) -> ErrorObject {
    ErrorObject::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {requested}"),
    )
    .with_data(json!({ "supported": supported, "requested": requested }))
}

#[cfg(test)]
mod v2026_07_28 {
    mod envelope {
        use crate::jsonrpc::{INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION};
        use crate::protocol::envelope::{check, wrap, CLIENT_CAPABILITIES};
        use serde_json::json;

        #[test]
        fn missing_meta_is_invalid_params() {
            assert_eq!(check(None).unwrap_err().code, INVALID_PARAMS);
            assert_eq!(check(Some(&json!({}))).unwrap_err().code, INVALID_PARAMS);
        }

        #[test]
        fn missing_protocol_version_or_capabilities_is_invalid_params() {
            let no_caps =
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
            assert_eq!(check(Some(&no_caps)).unwrap_err().code, INVALID_PARAMS);
            let no_version = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}});
            assert_eq!(check(Some(&no_version)).unwrap_err().code, INVALID_PARAMS);
        }

        #[test]
        fn unsupported_version_is_32022_with_supported_and_requested() {
            for version in ["2099-01-01", "2025-11-25"] {
                let p = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                    "io.modelcontextprotocol/clientCapabilities": {}}});
                let e = check(Some(&p)).unwrap_err();
                assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
                let data = e.data.unwrap();
                assert_eq!(data["requested"], version);
                assert_eq!(data["supported"].as_array().unwrap().len(), 5);
            }
        }

        /// A legacy client's call can carry any `_meta`; a modern upstream must still get an
        /// envelope (a number here once panicked the gateway).
        #[test]
        fn wrapping_for_a_modern_upstream_survives_any_meta() {
            for meta in [json!(5), json!(null), json!([1]), json!({"k": 1})] {
                let wrapped = wrap(Some(json!({"name": "t", "_meta": meta})));
                assert!(check(Some(&wrapped)).is_ok(), "{wrapped}");
            }
            let kept = wrap(Some(json!({"_meta": {CLIENT_CAPABILITIES: {"roots": {}}}})));
            assert_eq!(kept["_meta"][CLIENT_CAPABILITIES], json!({"roots": {}}));
        }

        #[test]
        fn valid_envelope_passes_capabilities() {
            let p = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
            assert_eq!(
                check(Some(&p)).unwrap().client_capabilities,
                &json!({"elicitation": {}})
            );
        }
    }
}
