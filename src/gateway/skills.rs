//! Skills (SEP-2640) through the gateway: every upstream's `skills/list` merged, and each skill
//! routed to its server by its `skill://` URIs (its entry, its directory, its files).
//!
//! A skill is known by its server and its URI, so two servers' `skill://review/SKILL.md` are two
//! skills; then each server's whole skill directory is renamed ([`super::shared_uris`]):
//! `skill://SERVER/review/...`, its entry and every file alike, so the last segment stays the
//! skill's name and its files stay beside `SKILL.md`.

use super::shared_uris::UriRenames;
use crate::json::Member;
use serde_json::Value;
use std::collections::BTreeSet;

/// A skill's entry URI (`skill://review/SKILL.md`).
pub fn entry(skill: &Value) -> Option<&str> {
    skill.member("uri")?.as_str()
}

/// The directory of an entry URI: all but its last segment (`skill://review/`).
pub fn dir(entry: &str) -> Option<&str> {
    entry.rfind('/').map(|at| &entry[..=at])
}

/// The directories of a server's skills.
pub fn claimed(skills: &[Value]) -> BTreeSet<&str> {
    skills.iter().filter_map(entry).filter_map(dir).collect()
}

/// A skill entry as mcpx lists it: its entry and its files' URIs renamed.
pub fn renamed(renames: &UriRenames, skill: &Value) -> Value {
    let mut skill = skill.clone();
    renames.in_item(&mut skill);
    renames.in_items(&mut skill, "resources");
    skill
}

/// What a request about the skill names, and so what routes to its server: its entry, its
/// directory and each file it lists (`resources` may be `"dynamic"`, naming none).
pub fn uris(skill: &Value) -> impl Iterator<Item = &str> {
    let files = skill
        .member("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|file| file.member("uri")?.as_str());
    let entry = entry(skill);
    entry.into_iter().chain(entry.and_then(dir)).chain(files)
}

#[cfg(test)]
mod every_revision {
    mod skills {
        use crate::gateway::skills::{claimed, dir, uris};
        use serde_json::json;

        #[test]
        fn a_skill_is_routed_by_its_entry_its_directory_and_its_files() {
            let skill = json!({"uri": "skill://review/SKILL.md", "frontmatter": {"name": "review"},
                "resources": [{"uri": "skill://review/SKILL.md"}, {"uri": "skill://review/a.md"}]});
            let named: Vec<&str> = uris(&skill).collect();
            assert_eq!(
                named,
                [
                    "skill://review/SKILL.md",
                    "skill://review/",
                    "skill://review/SKILL.md",
                    "skill://review/a.md"
                ]
            );
            let dynamic = json!({"uri": "skill://x/y/SKILL.md", "resources": "dynamic"});
            assert_eq!(uris(&dynamic).count(), 2);
            assert_eq!(dir("skill://x/y/SKILL.md"), Some("skill://x/y/"));
            let listed = [skill, dynamic];
            assert_eq!(claimed(&listed).len(), 2);
        }
    }
}
