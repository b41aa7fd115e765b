//! Skills (SEP-2640) through mcpx, end to end: two FastMCP 4 servers that each have a skill
//! `review` at `skill://review/SKILL.md` (`tests/sdk/fastmcp_skills_server.py`), behind
//! `mcpx serve`, listed, got and read in both eras.

use crate::common::*;
use serde_json::{json, Value};

const SKILLS: &str = "io.modelcontextprotocol/skills";

/// A configuration with the skills servers `a` and `b`, and a profile `only-a`.
fn config() -> String {
    let python = deps::python();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/fastmcp_skills_server.py"
    );
    format!(
        "{WAIT_FOR_ALL}[servers.a]\ncommand = {python:?}\nargs = [{script:?}, \"a\"]\n\
         [servers.b]\ncommand = {python:?}\nargs = [{script:?}, \"b\"]\n\
         [profiles.only-a]\nservers = [\"a\"]\n"
    )
}

/// `mcpx serve` with the skills servers `a` and `b`.
fn two_skills_servers() -> Serve {
    Serve::start(&config())
}

/// A modern request's params declaring Skills.
fn with_skills(mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {SKILLS: {}}});
    modern(params)
}

/// The skills listed, by entry URI.
fn entries(listed: &Value) -> Vec<&str> {
    let mut uris: Vec<&str> = listed["result"]["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("no skills: {listed}"))
        .iter()
        .filter_map(|s| s["uri"].as_str())
        .collect();
    uris.sort();
    uris
}

/// Each server's skill is its own under `skill://SERVER/review/`: listed, got and its file read
/// from its server, its entry and files renamed alike.
fn each_servers_skill_is_its_own(mcpx: &mut Serve, params: impl Fn(Value) -> Value) {
    let listed = mcpx.call(1, "skills/list", params(json!({})));
    assert_eq!(
        entries(&listed),
        ["skill://a/review/SKILL.md", "skill://b/review/SKILL.md"],
        "{listed}"
    );
    for skill in listed["result"]["skills"].as_array().unwrap() {
        let entry = skill["uri"].as_str().unwrap();
        let dir = entry.trim_end_matches("SKILL.md");
        for file in skill["resources"].as_array().unwrap() {
            let uri = file["uri"].as_str().unwrap();
            assert!(uri.starts_with(dir), "{uri} is not in {dir}: {listed}");
        }
    }
    let got = mcpx.call(
        2,
        "skills/get",
        params(json!({"uri": "skill://b/review/SKILL.md"})),
    );
    let skill = &got["result"]["skill"];
    assert_eq!(skill["uri"], "skill://b/review/SKILL.md", "{got}");
    let description = skill["frontmatter"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(description.contains("team b"), "{got}");
    let read = mcpx.call(
        3,
        "resources/read",
        params(json!({"uri": "skill://a/review/checklist.md"})),
    );
    let contents = &read["result"]["contents"][0];
    assert!(
        contents["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Team a asks"),
        "{read}"
    );
    assert_eq!(contents["uri"], "skill://a/review/checklist.md", "{read}");
}

mod v2026_07_28 {
    mod skills {
        use super::super::*;

        #[test]
        fn two_servers_skills_of_one_name_stay_apart() {
            let mut mcpx = two_skills_servers();
            let discovered = mcpx.call(0, "server/discover", with_skills(json!({})));
            let extensions = &discovered["result"]["capabilities"]["extensions"];
            assert!(extensions[SKILLS].is_object(), "{discovered}");
            each_servers_skill_is_its_own(&mut mcpx, with_skills);
            // A cacheable result, as the extension defines it.
            let listed = mcpx.call(4, "skills/list", with_skills(json!({})));
            assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
            assert!(listed["result"]["ttlMs"].is_number(), "{listed}");
            assert!(listed["result"]["cacheScope"].is_string(), "{listed}");
            let unknown = mcpx.call(
                5,
                "skills/get",
                with_skills(json!({"uri": "skill://nowhere/SKILL.md"})),
            );
            assert!(unknown.get("error").is_some(), "{unknown}");
        }
    }
}

mod v2025_11_25 {
    mod skills {
        use super::super::*;

        #[test]
        fn two_servers_skills_of_one_name_stay_apart() {
            let mut mcpx = two_skills_servers();
            let init = mcpx.call(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {"extensions": {SKILLS: {}}},
                    "clientInfo": {"name": "skills-test", "version": "1"}}),
            );
            assert!(
                init["result"]["capabilities"]["extensions"][SKILLS].is_object(),
                "{init}"
            );
            mcpx.notify("notifications/initialized", json!({}));
            each_servers_skill_is_its_own(&mut mcpx, |p| p);
        }
    }
}

mod every_revision {
    mod skills {
        use super::super::*;

        /// A profile's view holds its servers' skills only, as for every other list.
        #[test]
        fn a_profile_lists_only_its_servers_skills() {
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), config()).unwrap();
            let mut mcpx = Serve::spawn(file.path(), &["--standalone", "--profile", "only-a"]);
            let listed = mcpx.call(1, "skills/list", with_skills(json!({})));
            assert_eq!(entries(&listed), ["skill://a/review/SKILL.md"], "{listed}");
            let hidden = mcpx.call(
                2,
                "skills/get",
                with_skills(json!({"uri": "skill://b/review/SKILL.md"})),
            );
            assert!(hidden.get("error").is_some(), "{hidden}");
        }

        /// A pinned server whose skill changes between two runs (its words now team b's):
        /// `skills/list` keeps the approved entry, `skills/get` and a read of its entry are
        /// refused naming the review, and `mcpx pins` shows the change.
        #[test]
        fn a_pinned_servers_changed_skill_keeps_its_approved_entry_and_is_refused() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("mcpx.toml");
            let run_as = |team: &str| {
                let script = concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/sdk/fastmcp_skills_server.py"
                );
                let text = format!(
                    "{WAIT_FOR_ALL}[admin]\nsocket = {:?}\n[pins]\nfile = {:?}\n\
                     [servers.s]\ncommand = {:?}\nargs = [{script:?}, {team:?}]\n[servers.s.pin]\n",
                    dir.path().join("admin.sock").display().to_string(),
                    dir.path().join("pins.json").display().to_string(),
                    deps::python(),
                );
                std::fs::write(&config, text).unwrap();
                Serve::with_config_file(&config)
            };
            let entry = |mcpx: &mut Serve| {
                let listed = mcpx.call(1, "skills/list", with_skills(json!({})));
                listed["result"]["skills"][0].clone()
            };
            let approved = entry(&mut run_as("a"));
            assert!(approved.to_string().contains("team a"), "{approved}");
            let mut changed = run_as("b");
            assert_eq!(entry(&mut changed), approved);
            let uri = json!({"uri": "skill://review/SKILL.md"});
            for (id, method) in [(2, "skills/get"), (3, "resources/read")] {
                let refused = changed.call(id, method, with_skills(uri.clone()));
                let message = refused["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains("mcpx pins approve s skill:skill://review/SKILL.md"),
                    "{method}: {refused}"
                );
            }
            let status = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(&config)
                .args(["pins", "status"])
                .output()
                .unwrap();
            let status = String::from_utf8_lossy(&status.stdout);
            assert!(
                status.contains("skill:skill://review/SKILL.md") && status.contains("changed"),
                "{status}"
            );
        }
    }
}
