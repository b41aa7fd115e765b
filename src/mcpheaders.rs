//! The 2026-07-28 mirrored headers: `Mcp-Name` and `Mcp-Param-*`, their value encoding, and the
//! `x-mcp-header` annotations that declare the latter.
//!
//! The rules live here, apart from the HTTP server, because both sides use them: the server
//! checks what a client sent against the body, and the client side (remote upstreams) renders
//! the same headers from a body. Values that are not plain header-safe text travel as
//! `=?base64?…?=` with strict, padded standard Base64.

use crate::json::Member;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::HeaderName;
use serde_json::Value;
use std::borrow::Cow;

/// `MCP-Protocol-Version`. The names are `HeaderName`s made at compile time: a lookup by `&str`
/// parses and classifies the name again at each call.
pub const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`, the method a 2026-07-28 request's body names.
pub const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`, the tool, prompt or resource a 2026-07-28 request names.
pub const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
/// `Mcp-Session-Id`, a legacy session.
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// Opens an encoded value.
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// Closes an encoded value.
pub const SENTINEL_SUFFIX: &str = "?=";
/// Where a tool's input schema names a parameter's header.
pub const ANNOTATION: &str = "x-mcp-header";
/// Every parameter header starts with this.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The largest integer a header may carry, and its negation the smallest (JSON's safe range).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Whether bytes may stand in a header value here: visible ASCII, space and tab.
pub fn is_header_safe(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// Renders text as a header value: plain when it is all visible ASCII or inner spaces and does
/// not look like an encoded value itself, else the Base64 sentinel form.
pub fn encode(text: &str) -> String {
    let visible = text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = text.starts_with([' ', '\t']) || text.ends_with([' ', '\t']);
    let looks_encoded = text.starts_with(SENTINEL_PREFIX) && text.ends_with(SENTINEL_SUFFIX);
    let plain = visible && !padded && !looks_encoded;
    if plain {
        text.to_owned()
    } else {
        format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            STANDARD.encode(text.as_bytes())
        )
    }
}

/// Why a header value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// Bytes outside visible ASCII, space and tab.
    UnsafeBytes,
    /// Inside correct markers, not strict padded Base64 of UTF-8.
    BadBase64,
}

/// Reads a header value (already stripped of surrounding whitespace): decodes the sentinel form
/// strictly; anything without both exact markers is literal text (borrowed, as most headers are).
pub fn decode(value: &[u8]) -> Result<Cow<'_, str>, Malformed> {
    if !is_header_safe(value) {
        return Err(Malformed::UnsafeBytes);
    }
    // Header-safe bytes are ASCII, hence UTF-8.
    let text = std::str::from_utf8(value).map_err(|_| Malformed::UnsafeBytes)?;
    let inner = text
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX));
    match inner {
        None => Ok(Cow::Borrowed(text)),
        Some(encoded) => {
            let bytes = STANDARD.decode(encoded).map_err(|_| Malformed::BadBase64)?;
            String::from_utf8(bytes)
                .map(Cow::Owned)
                .map_err(|_| Malformed::BadBase64)
        }
    }
}

/// A parameter's text form: strings as they are, integers in decimal, booleans `true`/`false`.
/// `None` for null (no header is sent) and for types that cannot be headers.
pub fn param_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => n
            .as_i64()
            .filter(|i| in_safe_range(*i))
            .map(|i| i.to_string()),
        _ => None,
    }
}

/// Whether a header's (decoded) text equals a body value: integers compare numerically, so
/// `42.0` equals `42`; everything else compares as text, case-sensitively.
pub fn param_matches(header: &str, body: &Value) -> bool {
    match body {
        Value::Number(n) => {
            let parsed: Option<f64> = header.trim().parse().ok();
            match (parsed, n.as_f64()) {
                (Some(h), Some(b)) => h == b,
                _ => false,
            }
        }
        other => param_text(other).is_some_and(|text| text == header),
    }
}

/// One `x-mcp-header` annotation: the header's name part and where the value sits in the
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// `X` of `Mcp-Param-X`.
    pub name: String,
    /// Property names from the root of the arguments to the value.
    pub path: Vec<String>,
}

impl HeaderParam {
    /// The full header name, lowercase.
    pub fn header_name(&self) -> String {
        format!("{PARAM_HEADER_PREFIX}{}", self.name.to_ascii_lowercase())
    }

    /// The value in the arguments, if present and not null.
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        let value = self
            .path
            .iter()
            .try_fold(arguments, |v, key| v.member(key))?;
        (!value.is_null()).then_some(value)
    }
}

/// Every `x-mcp-header` annotation of a tool's input schema, or why the tool is invalid (a tool
/// with an invalid annotation must be dropped from `tools/list`).
///
/// Annotations count only where every step from the root is a `properties` key; the name must be
/// an RFC 9110 token, unique ignoring case; the property must be an integer, string or boolean.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut found)?;
    reject_unreachable(input_schema, false)?;
    let mut seen = std::collections::HashSet::new();
    for param in &found {
        if !seen.insert(param.name.to_ascii_lowercase()) {
            return Err(format!(
                "{ANNOTATION} {:?} appears twice (names are case-insensitive)",
                param.name
            ));
        }
    }
    Ok(found)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    if let Some(annotation) = schema.member(ANNOTATION) {
        let name = annotation.as_str().filter(|n| is_token(n)).ok_or_else(|| {
            format!(
                "{ANNOTATION} {annotation} at {} is not a valid header name",
                path.join(".")
            )
        })?;
        if path.is_empty() {
            return Err(format!(
                "{ANNOTATION} {name:?} annotates the arguments object itself"
            ));
        }
        let kind = schema.member("type").and_then(Value::as_str);
        if !matches!(kind, Some("integer" | "string" | "boolean")) {
            return Err(format!("{ANNOTATION} {name:?} is on a property of type {kind:?}; only integer, string and boolean can be headers"));
        }
        found.push(HeaderParam {
            name: name.to_owned(),
            path: path.clone(),
        });
    }
    if let Some(Value::Object(properties)) = schema.member("properties") {
        for (key, property) in properties {
            path.push(key.clone());
            collect(property, path, found)?;
            path.pop();
        }
    }
    Ok(())
}

/// Keywords through which an annotation is not reachable by a `properties` path.
const UNREACHABLE_VIA: [&str; 15] = [
    "items",
    "prefixItems",
    "additionalProperties",
    "patternProperties",
    "contains",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// An annotation anywhere below a keyword other than `properties` makes the tool invalid.
fn reject_unreachable(schema: &Value, below_other_keyword: bool) -> Result<(), String> {
    match schema {
        Value::Object(map) => {
            if below_other_keyword && map.member(ANNOTATION).is_some() {
                return Err(format!("{ANNOTATION} is reachable only through items, composition, conditionals or $ref"));
            }
            for (key, child) in map {
                let below = below_other_keyword || UNREACHABLE_VIA.contains(&key.as_str());
                if key == "properties" {
                    if let Value::Object(properties) = child {
                        for property in properties.values() {
                            reject_unreachable(property, below)?;
                        }
                    }
                } else if key != ANNOTATION {
                    reject_unreachable(child, below)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| reject_unreachable(item, below_other_keyword)),
        _ => Ok(()),
    }
}

/// An RFC 9110 token: one or more of the `tchar` characters.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers against its arguments. `header` looks a header
/// up by lowercase name. An error says what disagrees.
pub fn check_params<'h>(
    params: &[HeaderParam],
    arguments: &Value,
    header: impl Fn(&str) -> Option<&'h [u8]>,
) -> Result<(), String> {
    for param in params {
        let name = param.header_name();
        match (header(&name), param.value_in(arguments)) {
            (None, None) => {}
            (Some(_), None) => return Err(format!("{name} is present but the argument is absent")),
            (None, Some(_)) => return Err(format!("{name} is missing for a present argument")),
            (Some(raw), Some(body)) => {
                let text = decode(raw).map_err(|e| format!("{name} is malformed: {e:?}"))?;
                if !param_matches(&text, body) {
                    return Err(format!("{name} differs from the argument"));
                }
            }
        }
    }
    Ok(())
}

/// Whether an integer is within the range a header may carry.
fn in_safe_range(value: i64) -> bool {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&value)
}

#[cfg(test)]
mod v2026_07_28 {
    mod mcpheaders {
        use crate::mcpheaders::*;
        use serde_json::{json, Value};

        fn cases() -> Value {
            let path = format!(
                "{}/tests/spec/header-cases.json",
                env!("CARGO_MANIFEST_DIR")
            );
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        }

        /// Every value-encoding row valid under 2026-07-28 encodes as the table says, and decodes
        /// back to the value.
        #[test]
        fn value_encoding_matches_every_current_row() {
            for case in cases()["value_encoding"].as_array().unwrap() {
                if case["valid_under_2026_07_28"] != true {
                    continue;
                }
                let text = param_text(&case["value"]).unwrap();
                let encoded = encode(&text);
                assert_eq!(encoded, case["expected_header_value"], "{}", case["id"]);
                let decoded = decode(encoded.as_bytes()).unwrap();
                assert!(param_matches(&decoded, &case["value"]), "{}", case["id"]);
            }
        }

        #[test]
        fn server_decoding_is_strict_and_markers_exact() {
            for case in cases()["server_base64_decoding"].as_array().unwrap() {
                let decoded = decode(case["header_value"].as_str().unwrap().as_bytes());
                match case["expected"].as_str().unwrap() {
                    "reject" => assert_eq!(decoded, Err(Malformed::BadBase64), "{}", case["id"]),
                    _ => assert_eq!(*decoded.unwrap(), case["decoded"], "{}", case["id"]),
                }
            }
        }

        #[test]
        fn mcp_name_rows_encode_and_decode() {
            for case in cases()["mcp_name"].as_array().unwrap() {
                let value = case["value"].as_str().unwrap();
                let header = case["expected_header"]
                    .as_str()
                    .unwrap()
                    .strip_prefix("Mcp-Name: ")
                    .unwrap();
                assert_eq!(encode(value), header, "{}", case["id"]);
                assert_eq!(decode(header.as_bytes()).unwrap(), value, "{}", case["id"]);
            }
        }

        #[test]
        fn annotation_validity_matches_every_current_row() {
            for case in cases()["x_mcp_header_annotation_validity"]
                .as_array()
                .unwrap()
            {
                let schema = if let Some(names) = case.get("annotations").and_then(Value::as_array)
                {
                    let properties: serde_json::Map<String, Value> = names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| {
                            (
                                format!("p{i}"),
                                json!({"type": "string", "x-mcp-header": n}),
                            )
                        })
                        .collect();
                    json!({"type": "object", "properties": properties})
                } else if let Some(property) = case["property_schema"].as_object() {
                    let mut property = property.clone();
                    property.insert("x-mcp-header".into(), json!("P"));
                    json!({"type": "object", "properties": {"p": property}})
                } else {
                    continue; // prose rows are covered by the path tests below
                };
                let valid = header_params(&schema).is_ok();
                assert_eq!(valid, case["expected"] == "valid", "{}", case["id"]);
            }
        }

        #[test]
        fn annotations_reach_only_through_properties() {
            let nested = json!({"type": "object", "properties": {"loc": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}});
            assert_eq!(
                header_params(&nested).unwrap()[0].path,
                vec!["loc", "region"]
            );
            for via in [
                json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string", "x-mcp-header": "R"}}}}),
                json!({"type": "object", "anyOf": [{"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}]}),
                json!({"type": "object", "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}}),
            ] {
                assert!(header_params(&via).is_err(), "{via}");
            }
        }

        #[test]
        fn null_and_missing_arguments_expect_no_header() {
            let params = header_params(&json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}})).unwrap();
            let none = |_: &str| None;
            assert!(check_params(&params, &json!({"region": null}), none).is_ok());
            assert!(check_params(&params, &json!({}), none).is_ok());
            assert!(check_params(&params, &json!({"region": "us-west1"}), none).is_err());
            let present = |name: &str| (name == "mcp-param-region").then_some(&b"us-west1"[..]);
            assert!(check_params(&params, &json!({"region": "us-west1"}), present).is_ok());
            assert!(check_params(&params, &json!({}), present).is_err());
        }

        #[test]
        fn integers_compare_numerically_and_booleans_as_words() {
            assert!(param_matches("42.0", &json!(42)));
            assert!(!param_matches("43", &json!(42)));
            assert!(param_matches("true", &json!(true)));
            assert!(!param_matches("True", &json!(true)));
        }
    }
}
