//! `maxResultChars`: a tool result's text cut to a budget, so that one huge answer does not
//! flood a model's context. What is kept is the head and the tail of the text (where a
//! listing's header and a log's last lines are), a marker between them saying how much was cut
//! and where the whole is. `structuredContent` is left whole: it is data a client parses and
//! may validate against the tool's output schema, and half of a JSON value is none.

use serde_json::Value;

/// Cuts the text items of `result`'s `content` to `max` characters in all; each item cut has
/// `marker(cut)` in place of its middle. How many characters were cut (none: it fits).
pub fn cut(result: &mut Value, max: usize, marker: impl Fn(usize) -> String) -> usize {
    if text_chars(result) <= max {
        return 0;
    }
    let Some(items) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return 0;
    };
    let (mut left, mut cut_in_all) = (max, 0);
    for item in items.iter_mut() {
        let Some(text) = item_text(item) else {
            continue;
        };
        let length = text.chars().count();
        if length <= left {
            left -= length;
            continue;
        }
        let cut = length - left;
        let head: String = text.chars().take(left.div_ceil(2)).collect();
        let tail_from = length - left / 2;
        let tail: String = text.chars().skip(tail_from).collect();
        item["text"] = Value::String(format!("{head}{}{tail}", marker(cut)));
        cut_in_all += cut;
        left = 0;
    }
    cut_in_all
}

/// How many characters of text `result`'s content carries: what its budget counts.
pub fn text_chars(result: &Value) -> usize {
    let items = result.get("content").and_then(Value::as_array);
    let texts = items.into_iter().flatten().filter_map(item_text);
    texts.map(|text| text.chars().count()).sum()
}

/// The text of a content item of type `text`.
fn item_text(item: &Value) -> Option<&str> {
    (item.get("type")? == "text").then_some(())?;
    item.get("text")?.as_str()
}

/// The whole text of `result`'s content, its items' texts one after another: what a cut
/// result's resource gives.
pub fn whole_text(result: &Value) -> String {
    let items = result.get("content").and_then(Value::as_array);
    let texts = items.into_iter().flatten().filter_map(item_text);
    texts.collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod every_revision {
    mod guardrails {
        use super::super::*;
        use serde_json::json;

        /// The head and tail stay, the marker says how much went, non-text items and
        /// structured content are untouched, and a result within the budget is not touched.
        #[test]
        fn a_long_text_keeps_its_head_and_tail_within_the_budget() {
            let text = format!("HEAD{}TAIL", "é".repeat(100));
            let mut result = json!({"content": [
                {"type": "text", "text": "short"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": text},
            ], "structuredContent": {"text": text}});
            let whole = result.clone();
            let cut = cut(&mut result, 25, |n| format!("[{n} cut]"));
            assert_eq!(cut, 5 + 108 - 25);
            assert_eq!(result["content"][0]["text"], "short");
            assert_eq!(result["content"][1], whole["content"][1]);
            assert_eq!(result["content"][2]["text"], "HEADéééééé[88 cut]ééééééTAIL");
            assert_eq!(result["structuredContent"], whole["structuredContent"]);
            let mut small = whole.clone();
            assert_eq!(cut_fitting(&mut small), 0);
            assert_eq!(small, whole);
            assert_eq!(whole_text(&whole), format!("short\n{text}"));
        }

        fn cut_fitting(result: &mut Value) -> usize {
            cut(result, 1000, |_| unreachable!())
        }
    }
}
