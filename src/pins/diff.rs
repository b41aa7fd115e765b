//! A change of definition as a person reviews it: member by member, a description word by
//! word (`[-old-]{+new+}`, as `git diff --word-diff` writes it), anything else as lines of
//! its pretty JSON, `-` approved and `+` listed now.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use std::fmt::Write;

/// What changed from `approved` to `seen` (either may be absent: a new or a removed item).
pub fn render(approved: Option<&Value>, seen: Option<&Value>) -> String {
    let empty = serde_json::Map::new();
    let members = |v: Option<&Value>| v.and_then(Value::as_object).unwrap_or(&empty).clone();
    let (before, after) = (members(approved), members(seen));
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    let mut text = String::new();
    for name in names {
        let (old, new) = (before.get(name), after.get(name));
        if old == new {
            continue;
        }
        let _ = writeln!(text, "{name}:");
        match (old.and_then(Value::as_str), new.and_then(Value::as_str)) {
            (Some(old), Some(new)) => {
                let _ = writeln!(text, "  {}", words(old, new));
            }
            _ => text.push_str(&lines(old, new)),
        }
    }
    if text.is_empty() {
        text.push_str("(no difference)\n");
    }
    text
}

/// `approved` beside `seen`, as pretty JSON in two columns of `width` characters: a line
/// only one side has is marked `-` (approved) or `+` (listed now), with the other side blank.
pub fn side_by_side(approved: Option<&Value>, seen: Option<&Value>, width: usize) -> String {
    let pretty = |v: Option<&Value>| {
        v.map(|v| serde_json::to_string_pretty(v).unwrap_or_default() + "\n")
            .unwrap_or_default()
    };
    let (old, new) = (pretty(approved), pretty(seen));
    let fit = |line: &str| {
        let line = line.trim_end_matches('\n');
        let cut: String = line.chars().take(width).collect();
        format!("{cut:<width$}")
    };
    let mut text = format!("{:<width$} | {}\n", "  approved", "  listed now");
    for change in TextDiff::from_lines(&old, &new).iter_all_changes() {
        let line = fit(change.value());
        let _ = match change.tag() {
            ChangeTag::Equal => writeln!(text, "  {line} |   {}", line.trim_end()),
            ChangeTag::Delete => writeln!(text, "- {line} |"),
            ChangeTag::Insert => writeln!(text, "  {:<width$} | + {}", "", line.trim_end()),
        };
    }
    text
}

/// `old` to `new`, word by word; a run of removed or added words is marked once.
fn words(old: &str, new: &str) -> String {
    let diff = TextDiff::from_words(old, new);
    let mut runs: Vec<(ChangeTag, String)> = Vec::new();
    for change in diff.iter_all_changes() {
        match runs.last_mut() {
            Some((tag, run)) if *tag == change.tag() => run.push_str(change.value()),
            _ => runs.push((change.tag(), change.value().to_owned())),
        }
    }
    let mut text = String::new();
    for (tag, run) in runs {
        let _ = match tag {
            ChangeTag::Equal => write!(text, "{run}"),
            ChangeTag::Delete => write!(text, "[-{run}-]"),
            ChangeTag::Insert => write!(text, "{{+{run}+}}"),
        };
    }
    text
}

/// `old` to `new` as lines of pretty JSON, each marked.
fn lines(old: Option<&Value>, new: Option<&Value>) -> String {
    let pretty = |v: Option<&Value>| {
        v.map(|v| serde_json::to_string_pretty(v).unwrap_or_default() + "\n")
            .unwrap_or_default()
    };
    let (old, new) = (pretty(old), pretty(new));
    let diff = TextDiff::from_lines(&old, &new);
    let mut text = String::new();
    for change in diff.iter_all_changes() {
        let mark = match change.tag() {
            ChangeTag::Equal => ' ',
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
        };
        let _ = write!(text, "  {mark} {}", change.value());
        if !change.value().ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod pins {
            use crate::pins::diff::render;
            use serde_json::json;

            #[test]
            fn a_description_is_word_diffed_and_other_members_line_diffed() {
                let before = json!({"name": "t", "description": "Reads a file.",
                    "annotations": {"readOnlyHint": true}});
                let after = json!({"name": "t", "description": "Reads a file and uploads it.",
                    "annotations": {"readOnlyHint": false}});
                let text = render(Some(&before), Some(&after));
                assert!(
                    text.contains("Reads a [-file.-]{+file and uploads it.+}"),
                    "{text}"
                );
                assert!(text.contains("-   \"readOnlyHint\": true"), "{text}");
                assert!(text.contains("+   \"readOnlyHint\": false"), "{text}");
                assert!(
                    !text.contains("name:"),
                    "unchanged members are not shown: {text}"
                );
            }
        }
    }
}
