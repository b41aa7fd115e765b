//! Canonical JSON (RFC 8785's shape): members sorted by name, no whitespace, so that two values
//! that say the same thing hash the same however their writer ordered or spaced them. Numbers
//! are serde_json's shortest round-trip text, which is RFC 8785's for every integer and for
//! decimals written without an exponent; what is hashed here (tool definitions, call
//! arguments) compares equal with itself either way.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `value` as canonical JSON text.
pub fn to_string(value: &Value) -> String {
    let mut text = String::new();
    write(value, &mut text);
    text
}

/// The SHA-256 of `value`'s canonical text, in hex.
pub fn sha256(value: &Value) -> String {
    hex::encode(Sha256::digest(to_string(value).as_bytes()))
}

fn write(value: &Value, text: &mut String) {
    match value {
        Value::Object(members) => {
            // RFC 8785 sorts by UTF-16 code units; for the names MCP uses (ASCII) that is
            // byte order.
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            text.push('{');
            for (n, (name, member)) in sorted.into_iter().enumerate() {
                if n > 0 {
                    text.push(',');
                }
                text.push_str(&Value::String(name.clone()).to_string());
                text.push(':');
                write(member, text);
            }
            text.push('}');
        }
        Value::Array(items) => {
            text.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    text.push(',');
                }
                write(item, text);
            }
            text.push(']');
        }
        scalar => text.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod canonical_json {
            use crate::canonical::{sha256, to_string};
            use serde_json::json;

            #[test]
            fn member_order_and_spacing_do_not_change_the_text() {
                let a: serde_json::Value =
                    serde_json::from_str(r#"{ "b": [1, {"y": 2, "x": "é"}], "a": null }"#).unwrap();
                let b = json!({"a": null, "b": [1, {"x": "é", "y": 2}]});
                assert_eq!(to_string(&a), r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#);
                assert_eq!(sha256(&a), sha256(&b));
                assert_ne!(sha256(&a), sha256(&json!({"a": null})));
            }
        }
    }
}
