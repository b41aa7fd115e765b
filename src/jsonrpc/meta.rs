//! A result written with one more `_meta` entry, as a protocol on JSON-RPC may ask (MCP's
//! 2026-07-28 names its server there): written as the result goes out, never copied into it.

use crate::json::Member;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One `_meta` entry, written in place of one of the same name: a key and its JSON, serialized
/// once.
#[derive(Debug, Clone, Copy)]
pub struct MetaEntry {
    /// The entry's key.
    pub key: &'static str,
    /// The entry's value, as JSON text.
    pub value: &'static RawValue,
}

impl PartialEq for MetaEntry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.value.get() == other.value.get()
    }
}

/// Writes `object` (none: `{}`) with its `_meta` replaced by what `meta` makes of it, last; a
/// `_meta` that is not an object counts as none.
pub fn serialize_with_meta<'a, S: Serializer, M: Serialize>(
    serializer: S,
    object: Option<&'a Map<String, Value>>,
    meta: impl FnOnce(Option<&'a Map<String, Value>>) -> M,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    for (key, value) in object.into_iter().flatten() {
        if key != "_meta" {
            map.serialize_entry(key, value)?;
        }
    }
    let own = object
        .and_then(|o| o.member("_meta"))
        .and_then(Value::as_object);
    map.serialize_entry("_meta", &meta(own))?;
    map.end()
}

/// A result written with one more `_meta` entry; anything but an object is written as it is.
pub(super) struct WithMetaEntry<'a>(pub &'a Value, pub MetaEntry);

impl Serialize for WithMetaEntry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(result) = self.0 else {
            return self.0.serialize(serializer);
        };
        serialize_with_meta(serializer, Some(result), |own| MetaWithEntry(own, self.1))
    }
}

/// A result's `_meta` (or none) with one entry put last in place of one of its name.
struct MetaWithEntry<'a>(Option<&'a Map<String, Value>>, MetaEntry);

impl Serialize for MetaWithEntry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.0.into_iter().flatten() {
            if key != self.1.key {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry(self.1.key, self.1.value)?;
        map.end()
    }
}
