//! The cursor of a merged list's page: the offset of the page's first item, opaque to clients.

use base64::Engine;
use serde_json::Value;

/// The cursor of the page that starts at `offset`.
pub fn encode(offset: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("mcpx:{offset}"))
}

/// The offset a cursor names; `None` for one mcpx did not write.
pub fn decode(cursor: &Value) -> Option<usize> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(cursor.as_str()?)
        .ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("mcpx:")?
        .parse()
        .ok()
}

#[cfg(test)]
mod every_revision {
    mod catalog {
        use crate::gateway::cursor::{decode, encode};
        use serde_json::json;

        #[test]
        fn a_cursor_is_its_offset_and_nothing_else_decodes() {
            assert_eq!(decode(&json!(encode(200))), Some(200));
            assert_eq!(decode(&json!("bogus")), None);
            assert_eq!(decode(&json!(5)), None);
        }
    }
}
