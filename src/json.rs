//! Looking members up in JSON objects. With `preserve_order` (which keeps a tool schema's
//! properties in the order its server wrote them), serde_json's objects are `IndexMap`s whose
//! lookups hash the key with SipHash: about 330 instructions each, and a forwarded call made 44
//! of them, 12% of its work (docs/performance.md). MCP's objects have a handful of members, and
//! comparing the key with each of them costs a fraction of hashing it once.

use serde_json::{Map, Value};

/// Up to this many members, an object is scanned; a larger one is looked up by its hash.
const SCANNED_UP_TO: usize = 8;

/// A member of a JSON object by name: `None` when there is no such member or the value is not
/// an object. Use it instead of serde_json's `get`, which always hashes.
pub trait Member {
    /// The member named `key`.
    fn member(&self, key: &str) -> Option<&Value>;
    /// The member named `key`, to change it in place.
    fn member_mut(&mut self, key: &str) -> Option<&mut Value>;
}

impl Member for Map<String, Value> {
    fn member(&self, key: &str) -> Option<&Value> {
        if self.len() > SCANNED_UP_TO {
            return self.get(key);
        }
        self.iter()
            .find_map(|(name, value)| (name == key).then_some(value))
    }

    fn member_mut(&mut self, key: &str) -> Option<&mut Value> {
        if self.len() > SCANNED_UP_TO {
            return self.get_mut(key);
        }
        self.iter_mut()
            .find_map(|(name, value)| (name == key).then_some(value))
    }
}

impl Member for Value {
    fn member(&self, key: &str) -> Option<&Value> {
        self.as_object()?.member(key)
    }

    fn member_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_object_mut()?.member_mut(key)
    }
}

#[cfg(test)]
mod every_revision {
    mod json {
        use crate::json::*;
        use serde_json::json;
        use serde_json::{Map, Value};

        /// An object too large to scan: `k0` to `k19`, then `more`.
        fn large(more: &str) -> Value {
            (0..20)
                .map(|i| (format!("k{i}"), json!(i)))
                .chain([(more.to_owned(), json!(2))])
                .collect::<Map<_, _>>()
                .into()
        }

        /// Scanned or hashed, a lookup finds what serde_json's `get` finds.
        #[test]
        fn a_member_is_what_get_finds_in_small_and_large_objects() {
            let small = json!({"a": 1, "b": {"c": 2}, "": 3});
            let large = large("b");
            for (object, keys) in [
                (&small, vec!["a", "b", "", "c", "A"]),
                (&large, vec!["k0", "k19", "b", "k20", "k"]),
            ] {
                for key in keys {
                    assert_eq!(object.member(key), object.get(key), "{key:?} in {object}");
                }
            }
            assert_eq!(json!([1, 2]).member("0"), None);
            assert_eq!(json!("text").member("text"), None);
        }

        #[test]
        fn a_member_changed_in_place_is_the_objects_own() {
            for mut object in [json!({"a": 1, "b": 2}), large("b")] {
                *object.member_mut("b").unwrap() = json!("changed");
                assert_eq!(object["b"], "changed");
                assert_eq!(object.member_mut("missing"), None);
            }
        }
    }
}
