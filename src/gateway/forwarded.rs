//! What of a client's request goes upstream: its params without the modern envelope and the
//! progress token, which are each connection's own business.

use serde_json::{json, Map, Value};

/// The client's params as an upstream should see them: the modern envelope and the progress
/// token are the upstream connection's own business, so they are removed here, and a `_meta`
/// that is not an object (no schema allows one) is dropped rather than passed on.
pub(super) fn forwardable(params: Option<&Value>) -> Value {
    let Some(Value::Object(params)) = params else {
        return json!({});
    };
    // Copied field by field, so that the envelope mcpx drops is never copied.
    let mut forwarded = Map::with_capacity(params.len());
    for (key, value) in params {
        let value = match (key.as_str(), value) {
            ("_meta", Value::Object(meta)) => {
                let kept: Map<String, Value> = meta
                    .iter()
                    .filter(|(key, _)| {
                        *key != "progressToken" && !key.starts_with("io.modelcontextprotocol/")
                    })
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                if kept.is_empty() {
                    continue;
                }
                Value::Object(kept)
            }
            ("_meta", _) => continue,
            _ => value.clone(),
        };
        forwarded.insert(key.clone(), value);
    }
    Value::Object(forwarded)
}

#[cfg(test)]
mod every_revision {
    mod gateway {
        use crate::gateway::forwarded::forwardable;
        use serde_json::json;

        /// The gateway writes into a forwarded `_meta` (the client's capabilities, for a modern
        /// upstream), so whatever a client sent there must leave an object or nothing.
        #[test]
        fn forwarded_params_carry_an_object_meta_or_none() {
            for meta in [json!(5), json!("x"), json!([]), json!(null), json!({})] {
                let forwarded = forwardable(Some(&json!({"name": "t", "_meta": meta})));
                assert!(forwarded.get("_meta").is_none(), "{forwarded}");
            }
            let kept = forwardable(Some(&json!({"_meta": {"progressToken": 1, "trace": "t",
                "io.modelcontextprotocol/protocolVersion": "2026-07-28"}})));
            assert_eq!(kept["_meta"], json!({"trace": "t"}));
        }
    }
}
