//! Canonical JSON (RFC 8785): members sorted by name, no whitespace, and each number written
//! one way (ECMAScript's shortest form: `0`, `0.0`, `0e0` and `-0` are all `0`), so that two
//! values that say the same thing hash the same however their writer spelled them.
//!
//! Pinned definitions are hashed with numbers as serde_json writes them ([`Numbers::AsRead`]):
//! the books on disk were recorded so, and a new spelling of their floats would flag every such
//! definition as changed. A definition is compared with itself, which either form does.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// How numbers are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// RFC 8785: one text per value.
    Rfc8785,
    /// serde_json's shortest round-trip text (`1.0` stays `1.0`): the pins' hash.
    AsRead,
}

/// `value` as canonical JSON text.
pub fn to_string(value: &Value, numbers: Numbers) -> String {
    let mut text = String::new();
    write(value, numbers, &mut text);
    text
}

/// The SHA-256 of `value`'s canonical text, in hex.
pub fn sha256(value: &Value, numbers: Numbers) -> String {
    hex::encode(Sha256::digest(to_string(value, numbers).as_bytes()))
}

/// RFC 8785 §3.2.2.3: an integer or a double as ECMAScript's `Number.prototype.toString` writes
/// it.
fn write_number(number: &serde_json::Number, text: &mut String) {
    if number.is_i64() || number.is_u64() {
        text.push_str(&number.to_string());
        return;
    }
    let Some(float) = number.as_f64().filter(|f| f.is_finite()) else {
        text.push_str(&number.to_string());
        return;
    };
    if float == 0.0 {
        // -0 too.
        text.push('0');
        return;
    }
    // The shortest digits that round-trip, and where the point goes.
    let scientific = format!("{:e}", float.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let point = exponent.parse::<i32>().unwrap_or(0) + 1;
    let count = digits.len() as i32;
    if float < 0.0 {
        text.push('-');
    }
    match point {
        p if count <= p && p <= 21 => {
            text.push_str(&digits);
            text.extend(std::iter::repeat_n('0', (p - count) as usize));
        }
        p if 0 < p && p <= 21 => {
            text.push_str(&digits[..p as usize]);
            text.push('.');
            text.push_str(&digits[p as usize..]);
        }
        p if -6 < p && p <= 0 => {
            text.push_str("0.");
            text.extend(std::iter::repeat_n('0', (-p) as usize));
            text.push_str(&digits);
        }
        p => {
            text.push_str(&digits[..1]);
            if count > 1 {
                text.push('.');
                text.push_str(&digits[1..]);
            }
            let e = p - 1;
            text.push_str(&format!("e{}{e}", if e > 0 { "+" } else { "" }));
        }
    }
}

fn write(value: &Value, numbers: Numbers, text: &mut String) {
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
                write(member, numbers, text);
            }
            text.push('}');
        }
        Value::Array(items) => {
            text.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    text.push(',');
                }
                write(item, numbers, text);
            }
            text.push(']');
        }
        Value::Number(number) if numbers == Numbers::Rfc8785 => write_number(number, text),
        scalar => text.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod canonical_json {
            use crate::canonical::{sha256, to_string, Numbers};
            use serde_json::json;

            #[test]
            fn member_order_and_spacing_do_not_change_the_text() {
                let a: serde_json::Value =
                    serde_json::from_str(r#"{ "b": [1, {"y": 2, "x": "é"}], "a": null }"#).unwrap();
                let b = json!({"a": null, "b": [1, {"x": "é", "y": 2}]});
                for numbers in [Numbers::Rfc8785, Numbers::AsRead] {
                    let text = to_string(&a, numbers);
                    assert_eq!(text, r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#);
                    assert_eq!(sha256(&a, numbers), sha256(&b, numbers));
                    assert_ne!(sha256(&a, numbers), sha256(&json!({"a": null}), numbers));
                }
            }

            #[test]
            fn numbers_are_written_as_rfc_8785_writes_them() {
                let cases = [
                    ("0", "0"),
                    ("0.0", "0"),
                    ("0e0", "0"),
                    ("-0", "0"),
                    ("-0.0", "0"),
                    ("1.0", "1"),
                    ("1e2", "100"),
                    ("1.5", "1.5"),
                    ("-2.25", "-2.25"),
                    ("0.000001", "0.000001"),
                    ("0.0000001", "1e-7"),
                    ("1e21", "1e+21"),
                    ("1.5e300", "1.5e+300"),
                    ("1e20", "100000000000000000000"),
                    ("4.5e-10", "4.5e-10"),
                    ("18446744073709551615", "18446744073709551615"),
                ];
                for (written, canonical) in cases {
                    let value: serde_json::Value = serde_json::from_str(written).unwrap();
                    assert_eq!(to_string(&value, Numbers::Rfc8785), canonical, "{written}");
                }
                assert_eq!(to_string(&json!(1.0), Numbers::AsRead), "1.0");
            }
        }
    }
}
