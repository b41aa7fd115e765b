//! Upstreams started when needed (`start = "lazy"`), end to end against the real binary: the
//! upstream's process is looked for among the daemon's children at each step.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

/// The processes the daemon `parent` runs whose command line contains `marker`.
fn children_running(parent: u32, marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // The fields after the parenthesised command: state, then the parent's pid.
            let ppid = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .count()
}

/// A daemon whose lazy server `lazy` (the fixture, working in `work`) stops after `idle`; its
/// catalogs are kept under `cache`.
fn daemon(cache: &Path, work: &Path, idle: &str) -> Daemon {
    let config = format!(
        "[servers.lazy]\ncommand = {:?}\ncwd = {:?}\nstart = \"lazy\"\nidleTimeout = \"{idle}\"\n",
        fixture_bin(),
        work.display().to_string()
    );
    Daemon::start_with_env(&config, "", &[("XDG_CACHE_HOME", cache.to_str().unwrap())])
}

fn state(daemon: &Daemon) -> String {
    let report = daemon
        .modern(
            90,
            "tools/call",
            json!({"name": "mcpx__upstreams", "arguments": {}}),
        )
        .json();
    report["result"]["structuredContent"]["upstreams"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn echo(daemon: &Daemon, text: &str) -> Value {
    daemon
        .modern(
            1,
            "tools/call",
            json!({"name": "lazy__echo", "arguments": {"text": text}}),
        )
        .json()
}

fn lists_echo(daemon: &Daemon) -> bool {
    let list = daemon.modern(2, "tools/list", json!({})).json();
    list["result"]["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "lazy__echo"))
}

mod every_revision {
    pub mod lazy {
        use super::super::*;

        /// With no cached catalog the server runs once to learn it and is stopped; it is listed
        /// while stopped, started by the first call, stopped after `idleTimeout`, started again
        /// by the next call; a later daemon lists it from the cache without starting it at all.
        #[test]
        fn a_lazy_server_runs_only_while_calls_need_it() {
            let (cache, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let fixture = "fixture-upstream";
            {
                let first = daemon(cache.path(), work.path(), "1s");
                assert!(first.log_shows("lazy: started once to learn its catalog"));
                assert!(eventually(|| children_running(first.pid(), fixture) == 0));
                assert!(lists_echo(&first), "listed while stopped");
                assert_eq!(state(&first), "idle (lazy)");
                assert_eq!(
                    echo(&first, "woken")["result"]["content"][0]["text"],
                    "woken"
                );
                assert_eq!(children_running(first.pid(), fixture), 1);
                assert_eq!(state(&first), "ready");
                assert!(
                    eventually(|| children_running(first.pid(), fixture) == 0),
                    "stopped after idleTimeout"
                );
                assert_eq!(state(&first), "idle (lazy)");
                assert_eq!(
                    echo(&first, "again")["result"]["content"][0]["text"],
                    "again"
                );
                assert_eq!(children_running(first.pid(), fixture), 1);
            }
            let second = daemon(cache.path(), work.path(), "1s");
            assert!(second.log_shows("lazy: listed from its last run"));
            assert!(lists_echo(&second));
            assert_eq!(
                children_running(second.pid(), fixture),
                0,
                "not started to be listed"
            );
            assert_eq!(state(&second), "idle (lazy)");
            assert_eq!(
                echo(&second, "cached")["result"]["content"][0]["text"],
                "cached"
            );
        }

        /// A call that lasts longer than `idleTimeout` is not cut short: nothing in flight is
        /// stopped.
        #[test]
        fn a_lazy_server_is_not_stopped_with_a_call_in_flight() {
            let (cache, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let daemon = daemon(cache.path(), work.path(), "300ms");
            assert!(daemon.log_shows("lazy: started once to learn its catalog"));
            assert!(eventually(|| children_running(
                daemon.pid(),
                "fixture-upstream"
            ) == 0));
            // The learning run's stop is one mcpx asked for; an exit during the call would not be.
            assert!(daemon.log_shows("upstream stopped"));
            let exits = |d: &Daemon| d.stderr().matches("upstream exited").count();
            let slow = daemon
                .modern(
                    1,
                    "tools/call",
                    json!({"name": "lazy__sleep", "arguments": {"ms": 2000}}),
                )
                .json();
            assert_eq!(slow["result"]["isError"], false, "{slow}");
            assert_eq!(exits(&daemon), 0, "{}", daemon.stderr());
            assert!(
                eventually(|| children_running(daemon.pid(), "fixture-upstream") == 0),
                "stopped once idle"
            );
        }

        /// A lazy server that cannot be started fails its caller with an error that says so,
        /// and is tried again by the next call.
        #[test]
        fn a_failed_lazy_start_is_a_clear_error() {
            let (cache, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let missing = work.path().join("gone");
            std::fs::create_dir(&missing).unwrap();
            let daemon = daemon(cache.path(), &missing, "10m");
            assert!(daemon.log_shows("lazy: started once to learn its catalog"));
            std::fs::remove_dir(&missing).unwrap();
            let failed = echo(&daemon, "x");
            let message = failed["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("could not be started"), "{failed}");
            std::fs::create_dir(&missing).unwrap();
            assert_eq!(
                echo(&daemon, "back")["result"]["content"][0]["text"],
                "back"
            );
        }
    }
}
