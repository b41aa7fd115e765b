//! Sandboxed stdio upstreams, end to end: the fixture's `hostile` tool tries what an untrusted
//! server might, once sandboxed and once unsandboxed (the control), behind a real daemon. A
//! layer this machine cannot apply makes its test print why and return, never pass silently.

use crate::common::deps;
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A config with the hostile fixture twice: `open` unsandboxed, `boxed` with `sandbox` (TOML
/// keys of `[servers.boxed.sandbox]`).
fn open_and_boxed(sandbox: &str) -> String {
    let fixture = fixture_bin();
    format!(
        "[servers.open]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\n\
         [servers.boxed]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\n\
         [servers.boxed.sandbox]\n{sandbox}\n"
    )
}

/// What `SERVER__hostile` reports for `args`.
pub(crate) fn try_as(daemon: &Daemon, server: &str, args: Value) -> Value {
    let reply = daemon
        .modern(
            1,
            "tools/call",
            json!({"name": format!("{server}__hostile"), "arguments": args}),
        )
        .json();
    let report = reply["result"]["structuredContent"].clone();
    assert!(report.is_object(), "no report from {server}: {reply}");
    report
}

/// The daemon's one view of `name` in `mcpx__upstreams`.
pub(crate) fn upstream(daemon: &Daemon, name: &str) -> Value {
    let report = daemon
        .modern(
            9,
            "tools/call",
            json!({"name": "mcpx__upstreams", "arguments": {}}),
        )
        .json();
    report["result"]["structuredContent"]["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no upstream {name}: {report}"))
}

/// Whether an outcome is a refusal by the sandbox: EACCES (Landlock) or EPERM (seccomp).
fn refused(outcome: &Value) -> bool {
    let text = outcome.as_str().unwrap_or_default();
    text.starts_with("error 13:") || text.starts_with("error 1:")
}

/// A daemon started with `config` and `env`, its upstreams ready.
fn ready(config: &str, env: &[(&str, &str)]) -> Daemon {
    let daemon = Daemon::start_with_env(config, "", env);
    assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
    daemon
}

/// Why the kernel here cannot run `layer`'s test, if it cannot: the missing entry of the
/// server's own report.
fn missing_layer(daemon: &Daemon, server: &str, layer: &str) -> Option<String> {
    let view = upstream(daemon, server);
    view["sandbox"]["missing"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|m| m.starts_with(layer))
        .map(str::to_owned)
}

mod every_revision {
    pub mod sandbox {
        use super::super::*;

        #[test]
        fn a_sandboxed_server_cannot_read_a_planted_ssh_key_which_the_control_can() {
            let home = tempfile::tempdir().unwrap();
            let key = home.path().join(".ssh/id_rsa");
            std::fs::create_dir_all(key.parent().unwrap()).unwrap();
            std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
            let home_dir = home.path().display().to_string();
            let daemon = ready(&open_and_boxed(""), &[("HOME", &home_dir)]);
            if let Some(why) = missing_layer(&daemon, "boxed", "filesystem") {
                eprintln!("SKIPPED: this kernel cannot confine files: {why}");
                return;
            }
            let read = json!({"read": key.display().to_string()});
            assert_eq!(try_as(&daemon, "open", read.clone())["read"], "ok");
            let boxed = try_as(&daemon, "boxed", read);
            assert!(refused(&boxed["read"]), "{boxed}");
        }

        #[test]
        fn a_sandboxed_server_writes_only_under_its_allowlist() {
            let dir = tempfile::tempdir().unwrap();
            let allowed = dir.path().join("allowed");
            std::fs::create_dir(&allowed).unwrap();
            let config =
                open_and_boxed(&format!("fsWrite = [{:?}]", allowed.display().to_string()));
            let daemon = ready(&config, &[]);
            if let Some(why) = missing_layer(&daemon, "boxed", "filesystem") {
                eprintln!("SKIPPED: this kernel cannot confine files: {why}");
                return;
            }
            let inside = allowed.join("notes.txt").display().to_string();
            let outside = dir.path().join("escaped.txt").display().to_string();
            assert_eq!(
                try_as(&daemon, "boxed", json!({"write": inside}))["write"],
                "ok"
            );
            let escaped = try_as(&daemon, "boxed", json!({"write": outside.clone()}));
            assert!(refused(&escaped["write"]), "{escaped}");
            assert!(!Path::new(&outside).exists());
            // The control writes there: the refusal is the sandbox's, not the file system's.
            assert_eq!(
                try_as(&daemon, "open", json!({"write": outside}))["write"],
                "ok"
            );
        }

        #[test]
        fn network_none_refuses_a_loopback_connection_and_udp_which_the_control_makes() {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let daemon = ready(&open_and_boxed("network = \"none\""), &[]);
            let attempt = json!({"connect": port, "udp": true});
            let open = try_as(&daemon, "open", attempt.clone());
            assert_eq!(open["connect"], "ok", "{open}");
            assert_eq!(open["udp"], "ok", "{open}");
            let boxed = try_as(&daemon, "boxed", attempt);
            assert!(refused(&boxed["connect"]), "{boxed}");
            assert!(refused(&boxed["udp"]), "{boxed}");
        }

        #[test]
        fn a_sandboxed_server_runs_under_its_rlimits() {
            let daemon = ready(&open_and_boxed("nofile = 77\nmemory = \"256M\""), &[]);
            let limits = try_as(&daemon, "boxed", json!({}))["limits"]
                .as_str()
                .unwrap()
                .to_owned();
            let row = |name: &str| {
                let line = limits.lines().find(|l| l.starts_with(name)).unwrap();
                line[name.len()..]
                    .split_whitespace()
                    .take(2)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            };
            assert_eq!(row("Max open files"), ["77", "77"], "{limits}");
            assert_eq!(row("Max core file size"), ["0", "0"], "{limits}");
            assert_eq!(row("Max data size"), ["268435456", "268435456"], "{limits}");
            // Never the address space: Node reserves far more than it uses.
            assert_eq!(
                row("Max address space"),
                ["unlimited", "unlimited"],
                "{limits}"
            );
        }

        /// `memory` and `pids` are the limits of the server's own cgroup where mcpx has a
        /// delegated one; elsewhere `pids` is reported missing saying why, and memory is
        /// `RLIMIT_DATA`: never a silent pass.
        #[test]
        fn memory_and_pids_are_its_cgroups_limits_or_reported_missing_with_why() {
            let sandbox = "memory = \"256M\"\npids = 64\nonUnavailable = \"warn\"";
            let daemon = ready(&open_and_boxed(sandbox), &[]);
            let report = upstream(&daemon, "boxed")["sandbox"].clone();
            let lines = |key: &str| -> Vec<String> {
                let lines = report[key].as_array().cloned().unwrap_or_default();
                lines
                    .iter()
                    .filter_map(|l| l.as_str().map(str::to_owned))
                    .collect()
            };
            let (enforced, missing) = (lines("enforced"), lines("missing"));
            match enforced.iter().find(|l| l.starts_with("cgroup: ")) {
                Some(cgroup) => {
                    assert!(cgroup.contains("memory.max 268435456"), "{cgroup}");
                    assert!(cgroup.contains("pids.max 64"), "{cgroup}");
                    let seen = try_as(&daemon, "boxed", json!({}))["cgroup"].clone();
                    assert!(seen.as_str().unwrap().contains("/server-boxed-"), "{seen}");
                }
                None => {
                    let why = missing
                        .iter()
                        .find(|l| l.starts_with("pids 64: no cgroup ("));
                    let why = why.unwrap_or_else(|| panic!("{report}"));
                    assert!(
                        enforced
                            .iter()
                            .any(|l| l.starts_with("memory: RLIMIT_DATA per process (no cgroup: ")),
                        "{report}"
                    );
                    println!("no delegated cgroup here, as the server's report says: {why}");
                }
            }
        }

        #[test]
        fn network_loopback_hides_the_hosts_loopback_but_keeps_its_own() {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let config = open_and_boxed("network = \"loopback\"\nonUnavailable = \"warn\"");
            let daemon = ready(&config, &[]);
            if let Some(why) = missing_layer(&daemon, "boxed", "network") {
                eprintln!("SKIPPED: no private network namespace here: {why}");
                return;
            }
            let boxed = try_as(&daemon, "boxed", json!({"connect": port, "listen": true}));
            // Its 127.0.0.1 is its own: nobody listens on the test's port there.
            assert_eq!(
                boxed["connect"].as_str().unwrap()[..9],
                *"error 111",
                "{boxed}"
            );
            assert_eq!(boxed["listen"], "ok", "{boxed}");
            let open = try_as(&daemon, "open", json!({"connect": port}));
            assert_eq!(open["connect"], "ok");
        }

        #[test]
        fn on_unavailable_fail_refuses_to_start_and_warn_starts_degraded() {
            let fixture = fixture_bin();
            let config = format!(
                "[daemon]\nmetrics = true\n\
                 [servers.strict]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\nsandbox = {{}}\n\
                 [servers.lenient]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\n\
                 sandbox = {{ onUnavailable = \"warn\" }}\n"
            );
            let daemon = Daemon::start_with_env(
                &config.replace("[daemon]\nmetrics = true\n", ""),
                "metrics = true",
                &[("MCPX_SANDBOX_ASSUME_MISSING", "landlock")],
            );
            let degraded = |name: &str| {
                metric_sample(
                    &daemon.metrics(),
                    "mcpx_sandbox_degraded",
                    &[("upstream", name)],
                )
            };
            assert!(
                eventually(|| upstream(&daemon, "lenient")["state"] == "ready"),
                "{}",
                daemon.stderr()
            );
            let lenient = upstream(&daemon, "lenient");
            assert!(
                lenient["sandbox"]["missing"][0]
                    .as_str()
                    .unwrap()
                    .starts_with("filesystem"),
                "{lenient}"
            );
            assert_eq!(degraded("lenient"), 1.0);
            // The layers that could be applied still are.
            let boxed = try_as(&daemon, "lenient", json!({"udp": true}));
            assert!(refused(&boxed["udp"]), "{boxed}");
            // The strict one never runs: its state says it failed, and why.
            assert!(eventually(|| upstream(&daemon, "strict")["state"]
                .as_str()
                .unwrap()
                .starts_with("failed")));
            let strict = upstream(&daemon, "strict");
            assert!(strict["sandbox"]["missing"][0]
                .as_str()
                .unwrap()
                .contains("Landlock"));
            assert!(
                daemon.log_shows("sandbox: not started, because onUnavailable"),
                "{}",
                daemon.stderr()
            );
            let call = daemon
                .modern(
                    2,
                    "tools/call",
                    json!({"name": "strict__hostile", "arguments": {}}),
                )
                .json();
            assert!(call.get("error").is_some(), "{call}");
        }

        #[test]
        fn a_confined_server_shows_in_status_and_its_metric_is_zero() {
            let fixture = fixture_bin();
            let config = format!("[servers.boxed]\ncommand = {fixture:?}\nsandbox = {{}}\n");
            let daemon = Daemon::start(&config, "metrics = true");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let degraded = metric_sample(
                &daemon.metrics(),
                "mcpx_sandbox_degraded",
                &[("upstream", "boxed")],
            );
            if degraded != 0.0 {
                eprintln!(
                    "SKIPPED: this kernel lacks a layer: {}",
                    upstream(&daemon, "boxed")
                );
                return;
            }
            let status = std::process::Command::new(mcpx_bin())
                .args(["--config"])
                .arg(daemon.config_path())
                .arg("status")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&status.stdout);
            assert!(text.contains("sandbox confined: "), "{text}");
            assert!(text.contains("filesystem: landlock v"), "{text}");
        }

        /// A real Python server (`mcp-server-time` from PyPI) under the default sandbox: its
        /// interpreter, its virtual environment (the command's prefix) and the time zone data
        /// are all it needs.
        #[test]
        fn a_real_python_server_works_in_the_default_sandbox() {
            let command = deps::mcp_server_time();
            let config = format!(
                "[servers.time]\ncommand = {command:?}\nargs = [\"--local-timezone\", \"UTC\"]\nsandbox = {{}}\n"
            );
            let daemon = Daemon::start(&config, "");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let answer = daemon
                .modern(
                    1,
                    "tools/call",
                    json!({"name": "time__get_current_time", "arguments": {"timezone": "Europe/Paris"}}),
                )
                .json();
            assert_eq!(answer["result"]["isError"], false, "{answer}");
            let text = answer["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("Europe/Paris"), "{text}");
        }

        /// The npm reference filesystem server, run by Node 24, confined to one folder: it
        /// reads what it is given and writes there, and nothing else of the user's is readable.
        #[test]
        fn the_npm_filesystem_server_works_sandboxed_to_one_folder() {
            let node = deps::node();
            let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/node_modules");
            let server = modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
            let folder = tempfile::tempdir().unwrap();
            let folder = folder.path().canonicalize().unwrap().display().to_string();
            let config = format!(
                "[servers.fs]\ncommand = {node:?}\nargs = [{:?}, {folder:?}]\n\
                 [servers.fs.sandbox]\nfsRead = [\"system\", {:?}]\nfsWrite = [{folder:?}]\n",
                server.display().to_string(),
                modules.display().to_string()
            );
            let daemon = Daemon::start(&config, "");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let call = |id, name: &str, arguments: Value| {
                daemon
                    .modern(
                        id,
                        "tools/call",
                        json!({"name": name, "arguments": arguments}),
                    )
                    .json()
            };
            let note = format!("{folder}/note.txt");
            let wrote = call(
                1,
                "fs__write_file",
                json!({"path": note, "content": "boxed"}),
            );
            assert_ne!(wrote["result"]["isError"], true, "{wrote}");
            let read = call(2, "fs__read_text_file", json!({"path": note}));
            let text = read["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert_eq!(text, "boxed", "{read}");
        }

        #[test]
        fn doctor_reports_what_this_kernel_enforces() {
            let nobody = tempfile::tempdir().unwrap();
            let output = std::process::Command::new(mcpx_bin())
                .arg("doctor")
                .env(
                    "DBUS_SESSION_BUS_ADDRESS",
                    format!("unix:path={}", nobody.path().join("bus").display()),
                )
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(text.contains("keyring: no keyring answers"), "{text}");
            assert!(text.contains("sandbox with network = \"none\":"), "{text}");
            assert!(
                text.contains("sandbox with network = \"loopback\":"),
                "{text}"
            );
            assert!(text.contains("cgroup: "), "{text}");
            let landlock = text.contains("enforced  filesystem: landlock v");
            assert_eq!(output.status.success(), landlock, "{text}");
        }
    }
}
