//! The attacker's tests of the sandbox: a hostile fixture server, under each network mode,
//! tries every socket, `/proc` file and privilege it can name: mcpx's admin socket (status,
//! a pin approval, a consent approval), the socket attached editors use, a session bus, another
//! process's environment; and a socket the configuration allows, which it reaches. The same
//! server unsandboxed is the control: what it reaches shows the refusal is the sandbox's.

use crate::common::http::*;
use crate::common::*;
use crate::sandbox::{try_as, upstream};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

/// A listener at `path` that answers each line with `heard: LINE`, for as long as the test runs.
fn echo_socket(path: &Path) -> PathBuf {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut line).is_ok() {
                let _ = writeln!(&stream, "heard: {}", line.trim_end());
            }
        }
    });
    path.to_path_buf()
}

/// The report's `enforced` and `missing` lines for server `name`.
fn sandbox_report(daemon: &Daemon, name: &str) -> Value {
    upstream(daemon, name)["sandbox"].clone()
}

/// Whether a Unix socket outcome is the sandbox's refusal: `EPERM` from seccomp's refusal to
/// make the socket, `EACCES` from Landlock, `ENOENT` where a mount namespace hid it.
fn refused(outcome: &Value) -> bool {
    let text = outcome.as_str().unwrap_or_default();
    ["error 1:", "error 13:", "error 2:"]
        .iter()
        .any(|e| text.starts_with(e))
}

/// A runtime directory as a user session has one: mcpx's admin and serve sockets in
/// `mcpx/`, the session bus at `bus`.
struct Session {
    runtime: tempfile::TempDir,
    allowed_dir: tempfile::TempDir,
}

impl Session {
    fn new() -> Session {
        let session = Session {
            runtime: tempfile::tempdir().unwrap(),
            allowed_dir: tempfile::tempdir().unwrap(),
        };
        echo_socket(&session.bus());
        echo_socket(&session.allowed());
        session
    }

    fn bus(&self) -> PathBuf {
        self.runtime.path().join("bus")
    }

    fn allowed(&self) -> PathBuf {
        self.allowed_dir.path().join("allowed.sock")
    }

    fn admin(&self) -> PathBuf {
        self.runtime.path().join("mcpx/admin.sock")
    }

    /// The daemon, `open` unsandboxed and one `boxed-MODE` server per network mode, each also
    /// allowed `allowed.sock` when `allow`.
    fn daemon(&self, allow: bool) -> Daemon {
        let fixture = fixture_bin();
        let runtime = self.runtime.path().display().to_string();
        let mut config = format!(
            "[admin]\nsocket = {:?}\n\
             [servers.open]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\n",
            self.admin().display().to_string()
        );
        for mode in ["none", "loopback", "tcp", "any"] {
            let unix = match allow {
                true => format!(
                    "unixSockets = [{:?}]\n",
                    self.allowed().display().to_string()
                ),
                false => String::new(),
            };
            config.push_str(&format!(
                "[servers.boxed-{mode}]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\n\
                 [servers.boxed-{mode}.sandbox]\nnetwork = {mode:?}\n{unix}\
                 onUnavailable = \"warn\"\n"
            ));
        }
        let daemon = Daemon::start_with_env(&config, "", &[("XDG_RUNTIME_DIR", &runtime)]);
        assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
        daemon
    }
}

/// Why `server`'s sandbox cannot hold Unix sockets here, if it cannot.
fn unix_layer_missing(daemon: &Daemon, server: &str) -> Option<String> {
    let report = sandbox_report(daemon, server);
    report["missing"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|m| m.starts_with("unix sockets"))
        .map(str::to_owned)
}

/// What a hostile server asks of mcpx's admin socket: to read, and to approve for a person.
fn admin_lines() -> Vec<Value> {
    vec![
        json!({"cmd": "snapshot"}),
        json!({"cmd": "decide-pins", "server": "open", "decision": "approve"}),
        json!({"cmd": "approve-consent", "code": "ABCD-EFGH"}),
    ]
}

/// A daemon in front of the pinned server `pulled` (the hostile fixture, whose description
/// changes after its first call), its pins under `dir`, once the change waits for review.
fn rug_pulled(dir: &std::path::Path) -> Daemon {
    let config = format!(
        "[pins]\nfile = {:?}\n\
         [servers.pulled]\ncommand = {:?}\n\
         args = [\"--hostile\", \"--rug-pull\", \"description:1\"]\n\
         [servers.pulled.pin]\n",
        dir.join("pins.json").display().to_string(),
        fixture_bin()
    );
    let daemon = Daemon::start(&config, "");
    assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
    let echo = json!({"name": "pulled__echo", "arguments": {"text": "hi"}});
    daemon.modern(2, "tools/call", echo).json();
    assert!(eventually(
        || pins_of(&daemon, &["status"]).contains("changed")
    ));
    daemon
}

/// What `mcpx pins ARGS` on `daemon`'s configuration printed.
fn pins_of(daemon: &Daemon, args: &[&str]) -> String {
    let output = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(daemon.config_path())
        .arg("pins")
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

mod every_revision {
    pub mod sandbox {
        use super::super::*;

        #[test]
        fn a_sandboxed_server_reaches_no_unix_socket_in_any_network_mode() {
            let session = Session::new();
            let daemon = session.daemon(false);
            let serve_socket = daemon.local_socket();
            let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "escapee", "version": "1"}}});
            let targets: Vec<(PathBuf, String)> = admin_lines()
                .into_iter()
                .map(|line| (session.admin(), line.to_string()))
                .chain([
                    (serve_socket.clone(), initialize.to_string()),
                    (session.bus(), "AUTH EXTERNAL".into()),
                    (session.allowed(), "hello".into()),
                ])
                .collect();
            // The control reaches every one of them: each exists and answers.
            for (path, line) in &targets {
                let args = json!({"unix": path.display().to_string(), "say": line});
                let open = try_as(&daemon, "open", args);
                assert!(
                    open["unix"].as_str().unwrap().starts_with("ok: "),
                    "{path:?}: {open}"
                );
            }
            for mode in ["none", "loopback", "tcp", "any"] {
                let server = format!("boxed-{mode}");
                if let Some(why) = unix_layer_missing(&daemon, &server) {
                    panic!("{server}: no layer keeps unix sockets away here: {why}");
                }
                for (path, line) in &targets {
                    let args = json!({"unix": path.display().to_string(), "say": line});
                    let boxed = try_as(&daemon, &server, args);
                    assert!(refused(&boxed["unix"]), "{server}, {path:?}: {boxed}");
                }
                let report = sandbox_report(&daemon, &server);
                assert!(
                    report["enforced"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|l| l == "unix sockets: none (seccomp)"),
                    "{report}"
                );
            }
        }

        #[test]
        fn an_allowlisted_unix_socket_is_reachable_and_no_other() {
            let session = Session::new();
            let daemon = session.daemon(true);
            let serve_socket = daemon.local_socket();
            for mode in ["none", "loopback", "tcp", "any"] {
                let server = format!("boxed-{mode}");
                if let Some(why) = unix_layer_missing(&daemon, &server) {
                    eprintln!("SKIPPED: {server}: this kernel cannot name allowed sockets: {why}");
                    continue;
                }
                let allowed = json!({"unix": session.allowed().display().to_string(), "say": "hi"});
                assert_eq!(
                    try_as(&daemon, &server, allowed)["unix"],
                    "ok: heard: hi",
                    "{server}: {}",
                    sandbox_report(&daemon, &server)
                );
                for path in [session.admin(), serve_socket.clone(), session.bus()] {
                    let args = json!({"unix": path.display().to_string(), "say": "{}"});
                    let boxed = try_as(&daemon, &server, args);
                    assert!(refused(&boxed["unix"]), "{server}, {path:?}: {boxed}");
                }
                let line = sandbox_report(&daemon, &server)["enforced"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|l| l.starts_with("unix sockets: only "))
                    .map(str::to_owned);
                let line = line.unwrap_or_else(|| panic!("{}", sandbox_report(&daemon, &server)));
                println!("{server}: {line}");
            }
        }

        /// CI runs as root: there the sandbox must drop every capability, or `CAP_SYS_PTRACE`
        /// reads any process's environment. As a user the same holds, by other means.
        #[test]
        fn a_sandboxed_server_holds_no_capability_and_reads_no_other_process_environment() {
            let session = Session::new();
            let daemon = session.daemon(false);
            let open = try_as(&daemon, "open", json!({}));
            let sibling = open["pid"].as_u64().unwrap();
            let supervisor = open["ppid"].as_u64().unwrap();
            let environ = |pid: u64| format!("/proc/{pid}/environ");
            for mode in ["none", "loopback", "tcp", "any"] {
                let server = format!("boxed-{mode}");
                let me = try_as(&daemon, &server, json!({}));
                assert_eq!(me["capEff"], "0000000000000000", "{server}: {me}");
                assert_eq!(me["noNewPrivs"], "1", "{server}: {me}");
                for pid in [u64::from(daemon.pid()), sibling, supervisor] {
                    let tried = try_as(&daemon, &server, json!({"read": environ(pid)}));
                    assert!(
                        tried["read"].as_str().unwrap().starts_with("error "),
                        "{server} read {}: {tried}",
                        environ(pid)
                    );
                }
                let root = format!("/proc/{}/root{}", daemon.pid(), session.admin().display());
                let args = json!({"unix": root, "say": "{\"cmd\":\"snapshot\"}"});
                let through_proc = try_as(&daemon, &server, args);
                assert!(
                    through_proc["unix"].as_str().unwrap().starts_with("error "),
                    "{server}: {through_proc}"
                );
            }
            // mcpx itself is not dumpable: even its own user's other processes need
            // CAP_SYS_PTRACE for its environment, and the control (root in CI) still has it.
            let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.pid()));
            assert!(status.is_ok());
            let stat = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("stat -c %u /proc/{}/environ", daemon.pid()))
                .output()
                .unwrap();
            // An undumpable process's /proc files belong to root.
            assert_eq!(String::from_utf8_lossy(&stat.stdout).trim(), "0");
        }

        /// A server's process that leaves its tree (it kills its supervisor, so that it would be
        /// re-parented to init) is adopted by mcpx, still its descendant: its `mcpx pins approve`
        /// of its own server's change is refused, mcpx kills the stray, and the change waits
        /// for its owner.
        #[test]
        fn a_stray_that_killed_its_supervisor_cannot_approve_its_servers_change() {
            let dir = tempfile::tempdir().unwrap();
            let daemon = rug_pulled(dir.path());
            let pins = |args: &[&str]| pins_of(&daemon, args);
            let approve = format!(
                "sleep 1; exec {:?} --config {:?} pins approve pulled",
                mcpx_bin().display().to_string(),
                daemon.config_path().display().to_string()
            );
            let tried = try_as(&daemon, "pulled", json!({"stray": approve}));
            assert_eq!(tried["supervisorKilled"], true, "{tried}");
            let stray = tried["stray"].as_u64().unwrap_or_else(|| panic!("{tried}"));
            let runs = || {
                std::fs::read_to_string(format!("/proc/{stray}/stat"))
                    .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
            };
            assert!(eventually(|| !runs()), "the stray still runs");
            assert!(
                pins(&["status"]).contains("changed"),
                "{}",
                pins(&["status"])
            );
            // The owner, from outside mcpx's process tree, still approves.
            pins(&["approve", "pulled"]);
            assert!(eventually(|| !pins(&["status"]).contains("changed")));
        }

        /// An unsandboxed server has its user's trust, but the approvals mcpx asks of a person
        /// are not taken from it: a pinned server approving its own rug pull over the admin
        /// socket is refused, while its owner's `mcpx pins approve` goes through.
        #[test]
        fn an_upstream_server_cannot_approve_its_own_change_over_the_admin_socket() {
            let dir = tempfile::tempdir().unwrap();
            let daemon = rug_pulled(dir.path());
            let text = std::fs::read_to_string(daemon.config_path()).unwrap();
            let admin = mcpx::config::Config::parse(&text).unwrap().admin.socket;
            let pins = |args: &[&str]| pins_of(&daemon, args);
            for line in admin_lines().into_iter().skip(1) {
                let args = json!({"unix": admin.display().to_string(), "say": line.to_string()});
                let tried = try_as(&daemon, "pulled", args);
                let answer = tried["unix"].as_str().unwrap();
                assert!(answer.contains("\"kind\":\"from-an-upstream\""), "{answer}");
            }
            // Reading is not refused: the server has its user's trust for that.
            let args =
                json!({"unix": admin.display().to_string(), "say": admin_lines()[0].to_string()});
            let snapshot = try_as(&daemon, "pulled", args);
            assert!(snapshot["unix"]
                .as_str()
                .unwrap()
                .contains("\"type\":\"snapshot\""));
            assert!(
                pins(&["status"]).contains("changed"),
                "{}",
                pins(&["status"])
            );
            // The owner, from outside mcpx's process tree, approves.
            let approved = pins(&["approve", "pulled"]);
            assert!(
                eventually(|| !pins(&["status"]).contains("changed")),
                "{approved}"
            );
        }
    }
}
