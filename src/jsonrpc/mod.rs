//! JSON-RPC 2.0 messages as MCP uses them: requests, notifications, responses and batches.
//!
//! Parsing is total: any byte string becomes either a [`Frame`] or an error [`Response`] that can be
//! written straight back (-32700 for unreadable JSON, -32600 for JSON that is not a message, with the
//! request's id whenever it could be read). Nothing here panics on input.

mod meta;
mod parse;

use meta::WithMetaEntry;
pub use meta::{serialize_with_meta, MetaEntry};
pub use parse::{
    parse_body, parse_error, parse_frame, parse_message, read, Frame, Members, Message, Parsed,
};

use crate::json::Member;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::fmt;

/// The codes JSON-RPC reserves: its own, and those for servers' errors (MCP's and mcpx's are
/// among them). Any other code is an application's.
pub const RESERVED_CODES: std::ops::RangeInclusive<i64> = -32768..=-32000;
/// Parse error: the bytes are not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid JSON-RPC message (or a batch where none is allowed).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not offered.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The parameters are wrong, including a missing modern `_meta` envelope.
pub const INVALID_PARAMS: i64 = -32602;
/// Something went wrong inside mcpx or an upstream.
pub const INTERNAL_ERROR: i64 = -32603;
/// Legacy revisions' "resource not found".
pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
/// 2026-07-28: a mirrored HTTP header is missing, malformed or disagrees with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability it did not declare.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the protocol version in `_meta` is not one mcpx serves.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// Events: the event type (or subscription) named is not found.
pub const NOT_FOUND: i64 = -32011;
/// Events: what was asked is not supported (a delivery mode, a feature); `data` says which.
pub const UNSUPPORTED: i64 = -32014;
/// mcpx's `[limits]` refused a call other than `tools/call` (whose refusal is a tool result):
/// outside the reserved range, and reading as HTTP's 429. `data` has `limit` and
/// `retryAfterMs`.
pub const RATE_LIMITED: i64 = -31429;
/// The gateway's owner cancelled the request (`mcpx-tui`, the admin socket): outside JSON-RPC's
/// reserved range, as LSP's `RequestCancelled`. `data` has `cancelledBy`, and the `server` and
/// `name` it was for.
pub const CANCELLED_BY_OWNER: i64 = -32800;
/// The `_meta` member of a tool result that says which of mcpx's `[limits]` refused the call.
pub const LIMIT_META: &str = "mcpx/limit";

/// A request id: MCP allows strings and integers, never null, and its JSON type is kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl Id {
    /// Reads an id from JSON; `None` for null, fractions, booleans and the like.
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::String(s) => Some(Id::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Id::Number),
            _ => None,
        }
    }

    /// The id as JSON, with its original type.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => Value::from(*n),
            Id::String(s) => Value::from(s.clone()),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(s) => serializer.serialize_str(s),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The `error` member of a response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A short sentence for people.
    pub message: String,
    /// Structured detail, when the code defines some.
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds structured detail.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The error as the JSON object that goes in a response.
    pub fn to_value(&self) -> Value {
        as_value(self)
    }

    /// Reads an error object; a malformed one becomes an internal error saying so.
    pub fn from_value(value: &Value) -> Self {
        let code = value.member("code").and_then(Value::as_i64);
        let message = value.member("message").and_then(Value::as_str);
        match (code, message) {
            (Some(code), Some(message)) => ErrorObject {
                code,
                message: message.to_owned(),
                data: value.member("data").cloned(),
            },
            _ => ErrorObject::new(INTERNAL_ERROR, format!("malformed error object: {value}")),
        }
    }
}

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response must carry.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The parameters, if any were sent.
    pub params: Option<Value>,
}

impl Request {
    /// The request as a JSON-RPC message.
    pub fn to_value(&self) -> Value {
        as_value(self)
    }
}

/// The messages are written straight out (`serde_json::to_writer`), with no intermediate `Value`
/// and no copy of their params or result: the form every request to an upstream and every
/// response to a client takes.
impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_call(
            serializer,
            Some(&self.id),
            &self.method,
            self.params.as_ref(),
        )
    }
}

/// A request to write out, borrowed: its params stay where they are held, in any form that
/// serializes (an upstream call's, with a modern server's envelope added as they are written).
pub struct Outgoing<'a, P> {
    /// The id the response will carry.
    pub id: &'a Id,
    /// The method name.
    pub method: &'a str,
    /// The parameters, if any.
    pub params: Option<&'a P>,
}

impl<P: Serialize> Serialize for Outgoing<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_call(serializer, Some(self.id), self.method, self.params)
    }
}

/// A request (with its id) or a notification (without one).
fn serialize_call<S: Serializer, P: Serialize>(
    serializer: S,
    id: Option<&Id>,
    method: &str,
    params: Option<&P>,
) -> Result<S::Ok, S::Error> {
    let mut message = serializer.serialize_map(None)?;
    message.serialize_entry("jsonrpc", "2.0")?;
    if let Some(id) = id {
        message.serialize_entry("id", id)?;
    }
    message.serialize_entry("method", method)?;
    if let Some(params) = params {
        message.serialize_entry("params", params)?;
    }
    message.end()
}

/// What a server sends a client besides responses: notifications, and (in the legacy revisions)
/// requests of its own, such as an upstream's elicitation carried to the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// Expects nothing.
    Notification(Notification),
    /// Expects the client's response.
    Request(Request),
}

impl Outbound {
    /// The message as JSON-RPC.
    pub fn to_value(&self) -> Value {
        as_value(self)
    }
}

impl Serialize for Outbound {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Outbound::Notification(notification) => notification.serialize(serializer),
            Outbound::Request(request) => request.serialize(serializer),
        }
    }
}

impl From<Notification> for Outbound {
    fn from(notification: Notification) -> Self {
        Outbound::Notification(notification)
    }
}

/// A notification: no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, if any were sent.
    pub params: Option<Value>,
}

impl Notification {
    /// A notification with the given parameters.
    pub fn new(method: impl Into<String>, params: Value) -> Self {
        Notification {
            method: method.into(),
            params: Some(params),
        }
    }

    /// The notification as a JSON-RPC message.
    pub fn to_value(&self) -> Value {
        as_value(self)
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_call(serializer, None, &self.method, self.params.as_ref())
    }
}

/// A response: a result or an error for one request id.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered; `None` only when that id could not be read.
    pub id: Option<Id>,
    /// What the request produced.
    pub outcome: Result<Value, ErrorObject>,
    /// An entry an object result is written with in its `_meta` (a protocol on top of JSON-RPC
    /// names its server there, say). It is written, not copied into each result: the copy, the
    /// `_meta` made for it and their hashed keys were 3% of a forwarded call.
    pub meta_entry: Option<MetaEntry>,
}

impl Response {
    /// A successful response.
    pub fn result(id: Id, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
            meta_entry: None,
        }
    }

    /// An error response; `id` is `None` when the request's id was unreadable.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
            meta_entry: None,
        }
    }

    /// The response as a JSON-RPC message.
    pub fn to_value(&self) -> Value {
        as_value(self)
    }

    /// The error code, if this is an error response.
    pub fn error_code(&self) -> Option<i64> {
        self.outcome.as_ref().err().map(|e| e.code)
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut message = serializer.serialize_map(None)?;
        message.serialize_entry("jsonrpc", "2.0")?;
        message.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Ok(result) => match self.meta_entry {
                Some(entry) => message.serialize_entry("result", &WithMetaEntry(result, entry))?,
                None => message.serialize_entry("result", result)?,
            },
            Err(error) => message.serialize_entry("error", error)?,
        }
        message.end()
    }
}

impl Serialize for ErrorObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut error = serializer.serialize_map(None)?;
        error.serialize_entry("code", &self.code)?;
        error.serialize_entry("message", &self.message)?;
        if let Some(data) = &self.data {
            error.serialize_entry("data", data)?;
        }
        error.end()
    }
}

/// A message as a `Value` tree. The messages serialize themselves (that is their one written
/// form: a response goes out with no copy of its result); this is for code that inspects them.
fn as_value(message: &impl Serialize) -> Value {
    // Serializing into a `Value` fails only for maps with keys that are not strings: none here.
    serde_json::to_value(message).unwrap_or(Value::Null)
}

/// A message as an HTTP body, written straight into bytes: `Value`'s `Display` goes through
/// `fmt`'s adapter, which was 2% of a forwarded call's CPU.
pub fn to_body(message: &impl Serialize) -> Vec<u8> {
    // Room for a typical call or answer at once: serde_json's own start (128 bytes) grows, and
    // copies, twice on the way to one.
    let mut body = Vec::with_capacity(512);
    // Serializing mcpx's messages cannot fail: their map keys are strings.
    match serde_json::to_writer(&mut body, message) {
        Ok(()) => body,
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod every_revision {
    mod jsonrpc {
        use crate::jsonrpc::parse::invalid;
        use crate::jsonrpc::*;
        use serde_json::{json, Value};

        /// A body read straight into its members reads as the same messages as through a
        /// `Value`: null ids, batches, non-objects and repeated members included.
        #[test]
        fn a_body_reads_as_the_same_messages_either_way() {
            for body in [
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"extra":1}"#,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}"#,
                r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}"#,
                r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
                r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
                r#" [{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":5}]"#,
                r#""not an object""#,
                r#"[]"#,
                r#"{"jsonrpc":"2.0","id":"\u00e9","method":"tools/call","params":{"name":"é✓😀"}}"#,
            ] {
                let value: Value = serde_json::from_str(body).unwrap();
                let frame = match value.clone() {
                    Value::Array(items) if items.is_empty() => Err(invalid(None, "empty batch")),
                    Value::Array(items) => {
                        Ok(Frame::Batch(items.into_iter().map(parse_message).collect()))
                    }
                    single => parse_message(single).map(Frame::Single),
                };
                assert_eq!(parse_frame(body.as_bytes()), frame, "{body}");
                let expected = match value {
                    Value::Array(items) => items.into_iter().map(parse_message).collect(),
                    single => vec![parse_message(single)],
                };
                assert_eq!(parse_body(body.as_bytes()), Some(expected), "{body}");
            }
            assert_eq!(parse_body(b"{not json"), None);
        }

        #[test]
        fn unreadable_json_is_parse_error_without_id() {
            // Bad syntax, and bytes that are not UTF-8 in a string and outside one.
            let bodies: [&[u8]; 3] = [
                b"{not json",
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
                b"{\"jsonrpc\":\"2.0\",\"id\":1\xc3}",
            ];
            for body in bodies {
                let err = parse_frame(body).unwrap_err();
                assert_eq!(err.id, None);
                assert_eq!(err.error_code(), Some(PARSE_ERROR));
                assert_eq!(err.to_value()["id"], Value::Null);
            }
        }

        #[test]
        fn a_request_written_straight_out_is_the_message_it_stands_for() {
            for (id, params) in [
                (
                    Id::Number(7),
                    Some(json!({"name": "t", "arguments": {"b": 1, "a": [true]}})),
                ),
                (Id::String("x\"y".into()), None),
            ] {
                let request = Request {
                    id,
                    method: "tools/call".into(),
                    params,
                };
                let written: Value =
                    serde_json::from_str(&serde_json::to_string(&request).unwrap()).unwrap();
                assert_eq!(written, request.to_value());
            }
        }

        #[test]
        fn ids_keep_their_type() {
            let Frame::Single(Message::Request(r)) =
                parse_frame(br#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#).unwrap()
            else {
                panic!("not a request")
            };
            assert_eq!(r.id.to_value(), json!("7"));
            let Frame::Single(Message::Request(r)) =
                parse_frame(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap()
            else {
                panic!("not a request")
            };
            assert_eq!(r.id.to_value(), json!(7));
        }

        #[test]
        fn null_or_fractional_id_is_invalid_request() {
            for body in [
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            ] {
                let err = parse_frame(body.as_bytes()).unwrap_err();
                assert_eq!(err.error_code(), Some(INVALID_REQUEST), "{body}");
            }
        }

        #[test]
        fn bad_shape_keeps_the_id() {
            let err = parse_frame(br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#).unwrap_err();
            assert_eq!(err.id, Some(Id::Number(3)));
            assert_eq!(err.error_code(), Some(INVALID_REQUEST));
        }

        #[test]
        fn batches_parse_element_by_element() {
            let Frame::Batch(elements) =
                parse_frame(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},5]"#).unwrap()
            else {
                panic!("not a batch")
            };
            assert!(matches!(elements[0], Ok(Message::Request(_))));
            assert!(elements[1].is_err());
            assert!(parse_frame(b"[]").is_err());
        }

        #[test]
        fn error_response_with_null_id_is_a_response() {
            let frame = parse_frame(
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            )
            .unwrap();
            assert!(matches!(
                frame,
                Frame::Single(Message::Response(Response { id: None, .. }))
            ));
        }
    }
}
