//! Pinned definitions, end to end: `mcpx serve` in front of the fixture started with
//! `--rug-pull KIND:N`, which changes `echo`'s definition after N calls and announces it, and
//! the real `mcpx pins` commands on the same configuration file.

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A configuration pinning the fixture, which pulls the rug `pull` (`KIND:N`), with its book
/// and admin socket in `dir`; its path.
fn pinned_config(dir: &Path, pull: &str) -> PathBuf {
    let path = dir.join("mcpx.toml");
    let text = format!(
        "[admin]\nsocket = {:?}\n[pins]\nfile = {:?}\n{}args = [\"--rug-pull\", {pull:?}]\n[servers.fixture.pin]\n",
        dir.join("admin.sock").display().to_string(),
        dir.join("pins.json").display().to_string(),
        fixture_config(""),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `mcpx pins ARGS` on `config`: whether it succeeded, and what it printed.
fn pins(config: &Path, args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .arg("pins")
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// `fixture__echo`'s definition as `serve` lists it, if it does.
fn listed_echo(serve: &mut Serve, id: i64, name: &str) -> Option<Value> {
    let listed = serve.call(id, "tools/list", json!({}));
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
}

fn echo(serve: &mut Serve, id: i64) -> Value {
    let params = json!({"name": "fixture__echo", "arguments": {"text": "hi"}});
    serve.call(id, "tools/call", params)["result"].clone()
}

/// After the poisoned description was approved: `serve`'s client heard `list_changed`, and
/// lists the new text (asked with `id`).
fn serves_the_approved_change(serve: &mut Serve, id: i64) {
    // However busy the machine, the announcement comes: nothing else is waited for.
    while serve.next()["method"] != "notifications/tools/list_changed" {}
    let now = listed_echo(serve, id, "fixture__echo").unwrap();
    assert!(now["description"].as_str().unwrap().contains("id_rsa"));
}

/// Waits until `mcpx pins status` says `expected` (the fixture's change was seen).
fn status_shows(config: &Path, expected: &str) -> bool {
    eventually(|| pins(config, &["status"]).1.contains(expected))
}

/// `mcpx serve` (speaking `revision`) in front of a pinned fixture that pulls the rug `pull`
/// after one call, which was made and whose change `mcpx pins status` shows: the directory of
/// its files, its configuration, and it.
fn changed_after_one_call(pull: &str, revision: &str) -> (tempfile::TempDir, PathBuf, Serve) {
    let dir = tempfile::tempdir().unwrap();
    let config = pinned_config(dir.path(), pull);
    let mut serve = Serve::with_config_file(&config);
    serve.initialize(revision);
    assert_eq!(echo(&mut serve, 1)["isError"], false);
    assert!(status_shows(&config, "changed"), "{}", serve.stderr());
    (dir, config, serve)
}

mod every_revision {
    pub mod pins {
        use super::super::*;

        #[test]
        fn a_changed_description_is_not_served_and_its_calls_are_refused_until_approved() {
            let dir = tempfile::tempdir().unwrap();
            let config = pinned_config(dir.path(), "description:2");
            let mut serve = Serve::with_config_file(&config);
            serve.initialize("2025-06-18");
            let approved = listed_echo(&mut serve, 1, "fixture__echo").unwrap();
            assert_eq!(echo(&mut serve, 2)["isError"], false);
            assert_eq!(echo(&mut serve, 3)["isError"], false);
            assert!(status_shows(&config, "tool:echo"), "{}", serve.stderr());
            let (_, status) = pins(&config, &["status"]);
            assert!(status.contains("changed"), "{status}");
            // The poisoned text never reaches the client.
            assert_eq!(listed_echo(&mut serve, 4, "fixture__echo"), Some(approved));
            let refused = echo(&mut serve, 5);
            assert_eq!(refused["isError"], true, "{refused}");
            let why = refused["content"][0]["text"].as_str().unwrap();
            assert!(why.contains("mcpx pins approve fixture tool:echo"), "{why}");
            let (shown, diff) = pins(&config, &["diff", "fixture", "echo"]);
            assert!(shown, "{diff}");
            assert!(diff.contains("{+") && diff.contains("id_rsa"), "{diff}");
            let (approved_now, said) = pins(&config, &["approve", "fixture", "echo"]);
            assert!(approved_now, "{said}");
            serves_the_approved_change(&mut serve, 6);
            assert_eq!(echo(&mut serve, 7)["isError"], false);
            assert!(pins(&config, &["status"]).1.contains("nothing waits"));
        }

        #[test]
        fn a_flip_of_read_only_hint_alone_is_a_change() {
            let (_dir, config, mut serve) = changed_after_one_call("readonly:1", "2025-11-25");
            let listed = listed_echo(&mut serve, 2, "fixture__echo").unwrap();
            assert_eq!(listed["annotations"]["readOnlyHint"], true);
            assert_eq!(echo(&mut serve, 3)["isError"], true);
            let (_, diff) = pins(&config, &["diff", "fixture"]);
            assert!(diff.contains("\"readOnlyHint\": false"), "{diff}");
        }

        #[test]
        fn a_rename_shows_as_new_and_waits_for_approval() {
            let dir = tempfile::tempdir().unwrap();
            let config = pinned_config(dir.path(), "rename:1");
            let mut serve = Serve::with_config_file(&config);
            serve.initialize("2025-06-18");
            assert_eq!(echo(&mut serve, 1)["isError"], false);
            assert!(status_shows(&config, "tool:echo2"), "{}", serve.stderr());
            assert!(pins(&config, &["status"]).1.contains("new"));
            assert_eq!(listed_echo(&mut serve, 2, "fixture__echo2"), None);
            let params = json!({"name": "fixture__echo2", "arguments": {"text": "hi"}});
            let held = serve.call(4, "tools/call", params)["result"].clone();
            assert_eq!(held["isError"], true, "{held}");
            let why = held["content"][0]["text"].as_str().unwrap();
            assert!(why.contains("waits for approval"), "{why}");
            let (rejected, said) = pins(&config, &["reject", "fixture", "echo2"]);
            assert!(rejected, "{said}");
            assert!(status_shows(&config, "rejected"));
            assert_eq!(listed_echo(&mut serve, 3, "fixture__echo2"), None);
        }

        /// Under tmux: the console's Pins view shows the change side by side, and `a`, `y`
        /// approve it; the client then hears `list_changed` and lists the new definition.
        #[test]
        fn the_console_approves_a_change_from_its_pins_view() {
            use crate::common::console::{open_console, screen_shows, tmux};
            let (dir, _config, mut serve) = changed_after_one_call("description:1", "2025-06-18");
            let socket = dir.path().join(format!("serve-{}.sock", serve.pid()));
            let name = open_console("pins", "", &socket, (160, 40));
            screen_shows(&name, "7 Pins (1)");
            tmux(&["send-keys", "-t", &name, "7"]);
            screen_shows(&name, "tool:echo");
            tmux(&["send-keys", "-t", &name, "Enter"]);
            screen_shows(&name, "listed now");
            tmux(&["send-keys", "-t", &name, "a"]);
            screen_shows(&name, "(y/n)");
            tmux(&["send-keys", "-t", &name, "y"]);
            screen_shows(&name, "approved tool:echo of fixture");
            tmux(&["kill-session", "-t", &name]);
            serves_the_approved_change(&mut serve, 2);
        }

        /// On a terminal, `mcpx pins approve` shows the change it would approve and asks: no
        /// approves nothing, yes approves exactly what was shown.
        #[test]
        fn on_a_terminal_approve_shows_the_change_and_asks_first() {
            use crate::common::console::{open_terminal, screen_shows, tmux};
            let (_dir, config, mut serve) = changed_after_one_call("description:1", "2025-06-18");
            let approve = |answer: &str| {
                let command = format!(
                    "{} --config {} pins approve fixture echo; echo exit=$?; sleep 60",
                    mcpx_bin().display(),
                    config.display()
                );
                let name = open_terminal(&format!("mcpx-pins-{answer}"), &command, (200, 50));
                screen_shows(&name, "[y/N]");
                screen_shows(&name, "id_rsa");
                tmux(&["send-keys", "-t", &name, answer, "Enter"]);
                let after = screen_shows(&name, "exit=");
                tmux(&["kill-session", "-t", &name]);
                after
            };
            let declined = approve("n");
            assert!(declined.contains("nothing approved"), "{declined}");
            assert!(pins(&config, &["status"]).1.contains("changed"));
            let approved = approve("y");
            assert!(approved.contains("exit=0"), "{approved}");
            serves_the_approved_change(&mut serve, 2);
        }
    }
}
