//! What a client may say of itself when it registers (RFC 7591): anyone who reaches the door
//! can register, so what is kept is normalised and bounded before it is stored or shown. Only the
//! fields mcpx reads, shows or returns are kept (others are dropped, as §2 allows); each has a
//! bound, past which the registration is refused saying which; a name is made one printable
//! line (no control or bidirectional character, at most [`MAX_NAME`] characters).

use crate::log_writer::is_bidi_control;
use serde_json::{Map, Value};

/// Why a client's metadata is refused: RFC 7591's `invalid_redirect_uri` or
/// `invalid_client_metadata`, with a description.
pub type Invalid = (&'static str, String);

/// The longest client name kept, in characters.
pub const MAX_NAME: usize = 100;

/// The longest URI.
const MAX_URI: usize = 2048;

/// The longest other text (a scope list, a software id, an address).
const MAX_TEXT: usize = 1024;

/// The most entries of a list.
const MAX_ENTRIES: usize = 16;

/// The most bytes of an inline JWK Set.
const MAX_JWKS_BYTES: usize = 16 * 1024;

/// How each kept field is bounded.
enum Kind {
    Name,
    Uri,
    Text,
    UriList,
    TextList,
    Jwks,
}

/// The fields kept.
const FIELDS: &[(&str, Kind)] = &[
    ("client_name", Kind::Name),
    ("redirect_uris", Kind::UriList),
    ("grant_types", Kind::TextList),
    ("response_types", Kind::TextList),
    ("token_endpoint_auth_method", Kind::Text),
    ("scope", Kind::Text),
    ("client_uri", Kind::Uri),
    ("logo_uri", Kind::Uri),
    ("tos_uri", Kind::Uri),
    ("policy_uri", Kind::Uri),
    ("jwks_uri", Kind::Uri),
    ("jwks", Kind::Jwks),
    ("contacts", Kind::TextList),
    ("software_id", Kind::Text),
    ("software_version", Kind::Text),
];

/// `metadata` with only the fields kept, each checked against its bound.
pub fn normalized(metadata: &Value) -> Result<Value, Invalid> {
    let Some(given) = metadata.as_object() else {
        return Err(invalid("the body is not a JSON object".into()));
    };
    let mut kept = Map::new();
    for (field, kind) in FIELDS {
        let Some(value) = given.get(*field) else {
            continue;
        };
        kept.insert((*field).to_owned(), bounded(field, kind, value)?);
    }
    Ok(Value::Object(kept))
}

/// A client's name as mcpx shows it: one printable line of at most [`MAX_NAME`] characters.
pub fn display_name(name: &str) -> String {
    let printable: String = name
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control() && !is_bidi_control(*c))
        .collect();
    let words: Vec<&str> = printable.split_whitespace().collect();
    words.join(" ").chars().take(MAX_NAME).collect()
}

fn bounded(field: &str, kind: &Kind, value: &Value) -> Result<Value, Invalid> {
    let text = |max: usize| match value.as_str() {
        Some(text) if text.chars().count() <= max => Ok(text),
        Some(_) => Err(invalid(format!("{field} is longer than {max} characters"))),
        None => Err(invalid(format!("{field} is not a string"))),
    };
    let list = |max: usize| {
        let entries = value
            .as_array()
            .ok_or_else(|| invalid(format!("{field} is not a list")))?;
        if entries.len() > MAX_ENTRIES {
            return Err(invalid(format!(
                "{field} has more than {MAX_ENTRIES} entries"
            )));
        }
        for entry in entries {
            match entry.as_str() {
                Some(text) if text.chars().count() <= max => {}
                _ => {
                    return Err(invalid(format!(
                        "each of {field} must be a string of at most {max} characters"
                    )))
                }
            }
        }
        Ok(value.clone())
    };
    match kind {
        Kind::Name => Ok(Value::String(display_name(text(MAX_TEXT)?))),
        Kind::Uri => text(MAX_URI).map(Value::from),
        Kind::Text => text(MAX_TEXT).map(Value::from),
        Kind::UriList => list(MAX_URI),
        Kind::TextList => list(MAX_TEXT),
        Kind::Jwks => match value.is_object() && value.to_string().len() <= MAX_JWKS_BYTES {
            true => Ok(value.clone()),
            false => Err(invalid(format!(
                "{field} is not a JWK Set of at most {MAX_JWKS_BYTES} bytes"
            ))),
        },
    }
}

fn invalid(description: String) -> Invalid {
    ("invalid_client_metadata", description)
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod access {
            use crate::access::builtin::registration::{display_name, normalized};
            use serde_json::json;

            #[test]
            fn registration_metadata_is_kept_normalised_and_bounded() {
                let sent = json!({"client_name": "  Evil\nINFO the owner\r allowed\u{1b}[2J \u{202e}gnp.exe ",
                    "redirect_uris": ["http://127.0.0.1/cb"], "x_whatever": {"huge": "x"}});
                let kept = normalized(&sent).unwrap();
                assert_eq!(
                    kept,
                    json!({"client_name": "Evil INFO the owner allowed[2J gnp.exe",
                        "redirect_uris": ["http://127.0.0.1/cb"]})
                );
                assert_eq!(display_name(&"n".repeat(500)).len(), 100);
                let too_many = json!({"redirect_uris": vec!["http://127.0.0.1/cb"; 17]});
                assert!(normalized(&too_many)
                    .unwrap_err()
                    .1
                    .contains("more than 16"));
                let long = json!({"scope": "s".repeat(5000)});
                assert!(normalized(&long).unwrap_err().1.contains("scope is longer"));
                assert!(normalized(&json!([1])).is_err());
            }
        }
    }
}
