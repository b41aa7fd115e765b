//! Reading JSON-RPC: any byte string becomes a [`Frame`] (or, read whole, [`Parsed`]) or an
//! error [`Response`] that can be written straight back. Nothing here panics on input.

use super::{ErrorObject, Id, Notification, Request, Response, INVALID_REQUEST, PARSE_ERROR};

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

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

pub(super) fn invalid(id: Option<Id>, why: &str) -> Box<Response> {
    Box::new(Response::error(
        id,
        ErrorObject::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
    ))
}
