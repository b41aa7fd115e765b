//! JSON-RPC 2.0 messages as MCP uses them: requests, notifications, responses and batches.
//!
//! Parsing is total: any byte string becomes either a [`Frame`] or an error [`Response`] that can be
//! written straight back (-32700 for unreadable JSON, -32600 for JSON that is not a message, with the
//! request's id whenever it could be read). Nothing here panics on input.

mod meta;

use meta::WithMetaEntry;
pub use meta::{serialize_with_meta, MetaEntry};

use crate::json::Member;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
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
/// mcpx's `[limits]` refused a call other than `tools/call` (whose refusal is a tool result):
/// outside the reserved range, and reading as HTTP's 429. `data` has `limit` and
/// `retryAfterMs`.
pub const RATE_LIMITED: i64 = -31429;
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

/// One JSON-RPC message of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Expects a response.
    Request(Request),
    /// Expects nothing.
    Notification(Notification),
    /// Answers an earlier request.
    Response(Response),
}

/// What one frame (a stdio line, an HTTP body) holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// One message.
    Single(Message),
    /// A JSON array; each element either parsed or already answered with an error.
    Batch(Vec<Result<Message, Box<Response>>>),
}

/// Parses a frame. An error is the response to send back as it stands (boxed: it is the rare
/// path, and this keeps the common one small).
pub fn parse_frame(bytes: &[u8]) -> Result<Frame, Box<Response>> {
    read(bytes).map_err(parse_error)?.into_frame()
}

/// The -32700 answer to a body that is not JSON.
pub fn parse_error(e: serde_json::Error) -> Box<Response> {
    Box::new(Response::error(
        None,
        ErrorObject::new(PARSE_ERROR, format!("Parse error: {e}")),
    ))
}

/// JSON read as messages are, before it is judged: the front door looks at it (its era, its
/// trace headers) before it becomes a [`Frame`].
#[derive(Debug)]
// Not boxed: it lives on the stack from the read to the frame, and the one message is the
// common case a box would cost an allocation on.
#[allow(clippy::large_enum_variant)]
pub enum Parsed {
    /// A JSON array: its elements, each still to be read.
    Batch(Vec<Value>),
    /// One object's JSON-RPC members.
    One(Members),
    /// JSON that is neither: the -32600 answer.
    Neither(Box<Response>),
}

/// Reads JSON as messages. A single message's members are read straight from the bytes, without
/// building its object (a map of hashed keys) first; a batch, JSON that is not an object, or one
/// that repeats a member goes through a `Value`, so either way it reads the same. The error is
/// the JSON's.
pub fn read(bytes: &[u8]) -> Result<Parsed, serde_json::Error> {
    let batch = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    match std::str::from_utf8(bytes) {
        // Checked once as a whole, the JSON is read as text: read as bytes, serde_json checks
        // every string it reads on its own (2% of a forwarded call).
        Ok(text) => read_from(batch, || serde_json::de::StrRead::new(text)),
        // Not UTF-8, so not JSON either: serde_json says where.
        Err(_) => read_from(batch, || serde_json::de::SliceRead::new(bytes)),
    }
}

fn read_from<'a, R: serde_json::de::Read<'a>>(
    batch: bool,
    source: impl Fn() -> R,
) -> Result<Parsed, serde_json::Error> {
    if !batch {
        if let Ok(members) = deserialize::<Members, R>(source()) {
            return Ok(Parsed::One(members));
        }
    }
    Ok(match deserialize(source())? {
        Value::Array(items) => Parsed::Batch(items),
        Value::Object(object) => Parsed::One(Members::of(object)),
        _ => Parsed::Neither(invalid(None, "a message must be a JSON object")),
    })
}

/// What `serde_json::from_str` and `from_slice` do, for either source.
fn deserialize<'a, T: Deserialize<'a>, R: serde_json::de::Read<'a>>(
    source: R,
) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::new(source);
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

impl Parsed {
    /// A frame: a batch (not empty), or one message.
    pub fn into_frame(self) -> Result<Frame, Box<Response>> {
        match self {
            Parsed::Batch(items) if items.is_empty() => Err(invalid(None, "empty batch")),
            Parsed::Batch(items) => {
                Ok(Frame::Batch(items.into_iter().map(parse_message).collect()))
            }
            single => single.into_message().map(Frame::Single),
        }
    }

    /// One message (an array is not one).
    pub fn into_message(self) -> Result<Message, Box<Response>> {
        match self {
            Parsed::One(members) => members.into_message(),
            Parsed::Batch(_) => Err(invalid(None, "a message must be a JSON object")),
            Parsed::Neither(rejection) => Err(rejection),
        }
    }

    /// Each message: a batch's elements, or the one.
    pub fn into_messages(self) -> Vec<Result<Message, Box<Response>>> {
        match self {
            Parsed::Batch(items) => items.into_iter().map(parse_message).collect(),
            single => vec![single.into_message()],
        }
    }

    /// The params of the one message it is, if it is one.
    pub fn params(&self) -> Option<&Value> {
        match self {
            Parsed::One(members) => members.params.as_ref(),
            _ => None,
        }
    }

    /// The params of its `tools/call` requests, a batch's included.
    pub fn tool_calls(&self) -> Vec<Option<&Value>> {
        fn call<'v>(
            method: Option<&Value>,
            params: Option<&'v Value>,
        ) -> Option<Option<&'v Value>> {
            (method.and_then(Value::as_str) == Some("tools/call")).then_some(params)
        }
        match self {
            Parsed::One(m) => call(m.method.as_ref(), m.params.as_ref())
                .into_iter()
                .collect(),
            Parsed::Batch(items) => items
                .iter()
                .filter_map(|item| call(item.get("method"), item.get("params")))
                .collect(),
            Parsed::Neither(_) => Vec::new(),
        }
    }
}

/// Reads one message from JSON. An error is the -32600 response to send back.
pub fn parse_message(value: Value) -> Result<Message, Box<Response>> {
    let Value::Object(object) = value else {
        return Err(invalid(None, "a message must be a JSON object"));
    };
    Members::of(object).into_message()
}

/// The messages of a body: one object or a batch. `None`: not JSON.
pub fn parse_body(bytes: &[u8]) -> Option<Vec<Result<Message, Box<Response>>>> {
    read(bytes).ok().map(Parsed::into_messages)
}

/// The members of a message object that JSON-RPC defines; the others are ignored. Each is
/// `Some` when present, `null` included (a null id is told from a missing one).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Members {
    #[serde(deserialize_with = "present")]
    jsonrpc: Option<Value>,
    #[serde(deserialize_with = "present")]
    id: Option<Value>,
    #[serde(deserialize_with = "present")]
    method: Option<Value>,
    #[serde(deserialize_with = "present")]
    params: Option<Value>,
    #[serde(deserialize_with = "present")]
    result: Option<Value>,
    #[serde(deserialize_with = "present")]
    error: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl Members {
    /// Whether it names a method: a request or a notification, not a response.
    pub fn names_method(&self) -> bool {
        self.method.is_some()
    }

    /// Its params, to add to (the front door adopts trace headers into them).
    pub fn params_mut(&mut self) -> &mut Option<Value> {
        &mut self.params
    }

    /// Takes the object apart in one pass: removing each member by name would hash every key
    /// again, on every message mcpx reads.
    fn of(object: Map<String, Value>) -> Self {
        let mut members = Members::default();
        for (key, value) in object {
            let slot = match key.as_str() {
                "jsonrpc" => &mut members.jsonrpc,
                "id" => &mut members.id,
                "method" => &mut members.method,
                "params" => &mut members.params,
                "result" => &mut members.result,
                "error" => &mut members.error,
                _ => continue,
            };
            *slot = Some(value);
        }
        members
    }

    /// What the members make: a request, a notification or a response, or the -32600 answer.
    fn into_message(self) -> Result<Message, Box<Response>> {
        let id = match &self.id {
            None => None,
            Some(raw) => match Id::from_value(raw) {
                Some(id) => Some(id),
                None if raw.is_null() && self.error.is_some() && self.method.is_none() => None,
                None => return Err(invalid(None, "id must be a string or an integer")),
            },
        };
        if self.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
            return Err(invalid(id, "jsonrpc must be \"2.0\""));
        }
        if let Some(method) = self.method {
            let Value::String(method) = method else {
                return Err(invalid(id, "method must be a string"));
            };
            let params = self.params;
            if params
                .as_ref()
                .is_some_and(|p| !p.is_object() && !p.is_array())
            {
                return Err(invalid(id, "params must be an object or an array"));
            }
            return Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None if self.id.is_some() => return Err(invalid(None, "id must not be null")),
                None => Message::Notification(Notification { method, params }),
            });
        }
        match (self.result, self.error) {
            (Some(result), None) if id.is_some() => Ok(Message::Response(Response {
                id,
                outcome: Ok(result),
                meta_entry: None,
            })),
            (None, Some(error)) => Ok(Message::Response(Response {
                id,
                outcome: Err(ErrorObject::from_value(&error)),
                meta_entry: None,
            })),
            _ => Err(invalid(id, "not a request, notification or response")),
        }
    }
}

fn invalid(id: Option<Id>, why: &str) -> Box<Response> {
    Box::new(Response::error(
        id,
        ErrorObject::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
    ))
}

#[cfg(test)]
mod every_revision {
    mod jsonrpc {
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
