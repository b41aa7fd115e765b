//! Secrets, end to end: `mcpx serve` in front of the fixture started with
//! `--show-environment` (its tool `environment` reports the variables and arguments it was
//! started with), its secrets written as each placeholder kind. `${keyring:…}` is read from a
//! real Secret Service: gnome-keyring on a private session bus, both started by the test.

use crate::common::deps::{dbus_daemon, gnome_keyring_daemon};
use crate::common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A session bus of its own with gnome-keyring on it, unlocked; both stop when it is dropped.
pub(crate) struct SessionKeyring {
    pub(crate) address: String,
    bus: Child,
    keyring: Child,
}

impl SessionKeyring {
    /// Starts both with their files under `dir`.
    pub(crate) fn start(dir: &Path) -> SessionKeyring {
        let home = dir.join("keyring-home");
        std::fs::create_dir_all(home.join("run")).unwrap();
        std::fs::set_permissions(home.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let socket = dir.join("bus");
        let config = dir.join("session.conf");
        std::fs::write(
            &config,
            format!(
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
                 \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n\
                 <busconfig><type>session</type><listen>unix:path={}</listen><auth>EXTERNAL</auth>\
                 <policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>\
                 <allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n",
                socket.display()
            ),
        )
        .unwrap();
        let bus = Command::new(dbus_daemon())
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(
            eventually(|| socket.exists()),
            "the session bus did not start"
        );
        let address = format!("unix:path={}", socket.display());
        let mut keyring = gnome_keyring_daemon()
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The login keyring's password, on standard input, which is then closed.
        std::io::Write::write_all(&mut keyring.stdin.take().unwrap(), b"pw").unwrap();
        let session = SessionKeyring {
            address,
            bus,
            keyring,
        };
        assert!(
            eventually(|| session.secret(None, &["list"], None).0),
            "gnome-keyring did not come up: {}",
            session.secret(None, &["list"], None).1
        );
        session
    }

    /// `mcpx secret ARGS` on `config` (or none), on this bus, `input` on its standard input:
    /// whether it succeeded, and what it printed.
    fn secret(&self, config: Option<&Path>, args: &[&str], input: Option<&str>) -> (bool, String) {
        let mut command = Command::new(mcpx_bin());
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let mut child = command
            .arg("secret")
            .args(args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, input.unwrap_or_default().as_bytes()).unwrap();
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.success(), text)
    }
}

impl Drop for SessionKeyring {
    fn drop(&mut self) {
        let _ = self.keyring.kill();
        let _ = self.bus.kill();
        let _ = self.keyring.wait();
        let _ = self.bus.wait();
    }
}

/// A file holding `text` with `mode`.
fn secret_file(path: &Path, text: &str, mode: u32) -> PathBuf {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_owned()
}

/// What server `server`'s `environment` tool reports of `names` (asked with `id`): its
/// variables and its arguments.
fn environment(serve: &mut Serve, id: i64, server: &str, names: &[&str]) -> (Value, Value) {
    let params = json!({"name": format!("{server}__environment"), "arguments": {"names": names}});
    let result = serve.call(id, "tools/call", params)["result"].clone();
    assert_ne!(result["isError"], true, "{result}");
    let reported = &result["structuredContent"];
    (reported["variables"].clone(), reported["arguments"].clone())
}

/// `mcpx status --json` of the `mcpx serve` with pid `pid` whose sockets are in `dir`.
fn status(dir: &Path, pid: u32) -> String {
    let output = Command::new(mcpx_bin())
        .args(["status", "--json", "--socket"])
        .arg(dir.join(format!("serve-{pid}.sock")))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

mod every_revision {
    pub mod secrets {
        use super::super::*;

        const NAMES: [&str; 6] = [
            "FROM_ENV",
            "FROM_FILE",
            "FROM_CRED",
            "FROM_KEYRING",
            "MCPX_TEST_ENV_SECRET",
            "CREDENTIALS_DIRECTORY",
        ];

        /// `${env:}`, `${file:}`, `${cred:}` and `${keyring:}` each reach the server that names
        /// them (in `env`, and in `args`) and no other; none appears in mcpx's debug log (not
        /// even where the server prints them), its status or its audit log; `mcpx secret set`
        /// restarts only the server that uses it.
        #[test]
        fn each_placeholder_kind_resolves_for_its_server_only_and_is_never_logged() {
            let dir = tempfile::tempdir().unwrap();
            let keyring = SessionKeyring::start(dir.path());
            let (kept, said) = keyring.secret(None, &["set", "kr"], Some("from-keyring-9d4\n"));
            assert!(kept, "{said}");
            let doctor = Command::new(mcpx_bin())
                .arg("doctor")
                .env("DBUS_SESSION_BUS_ADDRESS", &keyring.address)
                .output()
                .unwrap();
            let doctor = String::from_utf8_lossy(&doctor.stdout);
            assert!(
                doctor.contains("keyring: answers; it holds 1 secret(s) for mcpx"),
                "{doctor}"
            );
            let file = secret_file(&dir.path().join("file-secret"), "from-file-5f1\n", 0o600);
            let credentials = dir.path().join("credentials");
            std::fs::create_dir(&credentials).unwrap();
            secret_file(&credentials.join("api"), "from-cred-7a2", 0o400);
            let audit = dir.path().join("audit.jsonl");
            let config = dir.path().join("mcpx.toml");
            let fixture = fixture_bin();
            std::fs::write(
                &config,
                format!(
                    "[admin]\nsocket = {:?}\n[audit]\npath = {:?}\nkeyFile = {:?}\n\
                     [servers.holder]\ncommand = {fixture:?}\n\
                     args = [\"--show-environment\", \"--label=${{keyring:kr}}\"]\n\
                     env = {{ FROM_ENV = \"${{env:MCPX_TEST_ENV_SECRET}}\", FROM_FILE = \"${{file:{}}}\", \
                     FROM_CRED = \"${{cred:api}}\", FROM_KEYRING = \"${{keyring:kr}}\" }}\n\
                     [servers.bystander]\ncommand = {fixture:?}\nargs = [\"--show-environment\"]\n",
                    dir.path().join("admin.sock").display().to_string(),
                    audit.display().to_string(),
                    dir.path().join("audit.key").display().to_string(),
                    file.display(),
                ),
            )
            .unwrap();
            let mut command = serve_command(&config, &[]);
            command
                .env("MCPX_LOG", "debug")
                .env("DBUS_SESSION_BUS_ADDRESS", &keyring.address)
                .env("CREDENTIALS_DIRECTORY", &credentials)
                .env("MCPX_TEST_ENV_SECRET", "from-env-3c9");
            let mut serve = Serve::from_command(command);
            serve.initialize("2025-06-18");

            let (variables, arguments) = environment(&mut serve, 1, "holder", &NAMES);
            assert_eq!(
                variables,
                json!({"FROM_ENV": "from-env-3c9", "FROM_FILE": "from-file-5f1",
                       "FROM_CRED": "from-cred-7a2", "FROM_KEYRING": "from-keyring-9d4",
                       "MCPX_TEST_ENV_SECRET": null, "CREDENTIALS_DIRECTORY": null})
            );
            assert_eq!(
                arguments,
                json!(["--show-environment", "--label=from-keyring-9d4"])
            );
            let (variables, arguments) = environment(&mut serve, 2, "bystander", &NAMES);
            assert!(
                variables.as_object().unwrap().values().all(Value::is_null),
                "{variables}"
            );
            assert_eq!(arguments, json!(["--show-environment"]));

            // A new value restarts the server that names it, and only that one.
            let (kept, said) =
                keyring.secret(Some(&config), &["set", "kr"], Some("from-keyring-e81"));
            assert!(kept, "{said}");
            assert!(
                said.contains("started [holder]") && said.contains("unchanged [bystander]"),
                "{said}"
            );
            let (variables, _) = environment(&mut serve, 3, "holder", &["FROM_KEYRING"]);
            assert_eq!(variables["FROM_KEYRING"], "from-keyring-e81");
            let (listed, said) = keyring.secret(Some(&config), &["list"], None);
            assert!(listed, "{said}");
            assert!(
                said.lines()
                    .any(|l| l.starts_with("kr ") && l.ends_with("holder")),
                "{said}"
            );

            let secrets = [
                "from-env-3c9",
                "from-file-5f1",
                "from-cred-7a2",
                "from-keyring-9d4",
                "from-keyring-e81",
            ];
            let shown = status(dir.path(), serve.pid());
            let audited = std::fs::read_to_string(&audit).unwrap();
            assert!(audited.contains("holder__environment"), "{audited}");
            // The masked lines are read from mcpx's stderr as they come: wait for the last.
            let masked = [
                "FROM_KEYRING=[redacted]",
                "FROM_ENV=[redacted]",
                r#"{"name":"FROM_FILE","value":"[redacted]"}"#,
                "debug: FROM_CRED=[redacted]",
            ];
            eventually(|| masked.iter().all(|line| serve.stderr().contains(line)));
            let log = serve.stderr();
            assert!(log.contains("DEBUG"), "not a debug log: {log}");
            // What the server itself printed is masked before mcpx logs it.
            assert!(log.contains("FROM_KEYRING=[redacted]"), "{log}");
            assert!(log.contains("FROM_ENV=[redacted]"), "{log}");
            // So is what it sent as a log message, at any depth, and a line on its stdout.
            assert!(
                log.contains(r#"{"name":"FROM_FILE","value":"[redacted]"}"#),
                "{log}"
            );
            assert!(log.contains("debug: FROM_CRED=[redacted]"), "{log}");
            for secret in secrets {
                assert!(!log.contains(secret), "{secret} in the log: {log}");
                assert!(!shown.contains(secret), "{secret} in the status: {shown}");
                assert!(!audited.contains(secret), "{secret} in the audit log");
                assert!(!said.contains(secret), "{secret} in `mcpx secret list`");
            }
        }

        /// A changed file secret restarts, at `mcpx reload`, only the server that names it; a
        /// file others may read keeps that server down, saying which key and why, never the
        /// value, while the others run.
        #[test]
        fn a_changed_file_secret_restarts_only_the_servers_that_use_it() {
            use mcpx::admin::protocol::{Command::Reload, Reply};
            let dir = tempfile::tempdir().unwrap();
            let file = secret_file(&dir.path().join("token"), "first-a41\n", 0o600);
            let config = dir.path().join("mcpx.toml");
            let fixture = fixture_bin();
            std::fs::write(
                &config,
                format!(
                    "[admin]\nsocket = {:?}\n\
                     [servers.holder]\ncommand = {fixture:?}\nargs = [\"--show-environment\"]\n\
                     env = {{ TOKEN = \"${{file:{}}}\" }}\n\
                     [servers.bystander]\ncommand = {fixture:?}\nargs = [\"--show-environment\"]\n",
                    dir.path().join("admin.sock").display().to_string(),
                    file.display(),
                ),
            )
            .unwrap();
            let mut serve = Serve::with_config_file(&config);
            serve.initialize("2025-11-25");
            let (variables, _) = environment(&mut serve, 1, "holder", &["TOKEN"]);
            assert_eq!(variables["TOKEN"], "first-a41");
            let socket = dir.path().join(format!("serve-{}.sock", serve.pid()));
            // What `mcpx reload` asks the daemon, asked of this `mcpx serve`.
            let reload = || match mcpx::admin::ask(&socket, &Reload).unwrap() {
                Reply::Done { message } => message,
                other => panic!("{other:?}"),
            };
            secret_file(&file, "second-b52\n", 0o600);
            let said = reload();
            assert!(
                said.contains("started [holder]") && said.contains("unchanged [bystander]"),
                "{said}"
            );
            let (variables, _) = environment(&mut serve, 2, "holder", &["TOKEN"]);
            assert_eq!(variables["TOKEN"], "second-b52");

            secret_file(&file, "third-c63\n", 0o644);
            let said = reload();
            assert!(said.contains("unchanged [bystander]"), "{said}");
            let shown = status(dir.path(), serve.pid());
            assert!(shown.contains("servers.holder.env.TOKEN"), "{shown}");
            assert!(shown.contains("chmod 600"), "{shown}");
            assert!(!shown.contains("third-c63") && !serve.stderr().contains("third-c63"));
            let (variables, _) = environment(&mut serve, 3, "bystander", &["TOKEN"]);
            assert_eq!(variables["TOKEN"], Value::Null);
        }

        /// On a terminal, `mcpx secret set` asks for the secret without echoing it, and a
        /// server naming it then gets what was typed.
        #[test]
        fn on_a_terminal_a_secret_is_typed_without_echo() {
            use crate::common::console::{open_terminal, screen_shows, tmux};
            let dir = tempfile::tempdir().unwrap();
            let keyring = SessionKeyring::start(dir.path());
            let command = format!(
                "env DBUS_SESSION_BUS_ADDRESS={} {} secret set typed; echo exit=$?; sleep 60",
                keyring.address,
                mcpx_bin().display()
            );
            let session = open_terminal("mcpx-secret-set", &command, (120, 20));
            screen_shows(&session, "typed:");
            tmux(&["send-keys", "-t", &session, "typed-value-0c7", "Enter"]);
            let after = screen_shows(&session, "exit=");
            tmux(&["kill-session", "-t", &session]);
            assert!(
                after.contains("exit=0") && after.contains("kept typed"),
                "{after}"
            );
            assert!(!after.contains("typed-value-0c7"), "echoed: {after}");

            let config = dir.path().join("mcpx.toml");
            std::fs::write(
                &config,
                format!(
                    "[admin]\nsocket = {:?}\n[servers.holder]\ncommand = {:?}\n\
                     args = [\"--show-environment\"]\nenv = {{ TYPED = \"${{keyring:typed}}\" }}\n",
                    dir.path().join("admin.sock").display().to_string(),
                    fixture_bin(),
                ),
            )
            .unwrap();
            let mut command = serve_command(&config, &[]);
            command.env("DBUS_SESSION_BUS_ADDRESS", &keyring.address);
            let mut serve = Serve::from_command(command);
            serve.initialize("2025-06-18");
            let (variables, _) = environment(&mut serve, 1, "holder", &["TYPED"]);
            assert_eq!(variables["TYPED"], "typed-value-0c7");
        }

        /// `mcpx import --write` of a Claude Desktop file with a token in `env` and another in
        /// a header, where no keyring answers: neither is in `config.toml` (rewritten 0600,
        /// keeping what it held), each is in a 0600 file beside it, and the server starts with
        /// its token. A name already configured is skipped and said; mcpx's own entry is left
        /// out without a word.
        #[test]
        fn import_keeps_tokens_out_of_the_configuration_where_no_keyring_answers() {
            let dir = tempfile::tempdir().unwrap();
            let config = dir.path().join("mcpx.toml");
            secret_file(&config, "[servers.taken]\ncommand = \"mine\"\n", 0o644);
            let editor = claude_desktop_file(dir.path());
            let (written, said) = import(&config, &editor, "unix:path=/nonexistent/bus");
            assert!(written, "{said}");
            let text = std::fs::read_to_string(&config).unwrap();
            assert!(
                !text.contains("tok-env-1a2") && !text.contains("tok-hdr-3b4"),
                "{text}"
            );
            assert!(
                text.starts_with("[servers.taken]\ncommand = \"mine\""),
                "{text}"
            );
            assert!(
                text.contains("[servers.holder]") && text.contains("[servers.remote]"),
                "{text}"
            );
            let mode = std::fs::metadata(&config).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            assert!(
                said.contains("taken: skipped: already configured"),
                "{said}"
            );
            assert!(
                !said.contains("mcpx:") && !said.contains("\"mcpx\""),
                "{said}"
            );
            assert!(!said.contains("tok-"), "{said}");
            let secrets = dir.path().join("secrets");
            for (name, value) in [
                ("holder-API_TOKEN", "tok-env-1a2"),
                ("remote-Authorization", "tok-hdr-3b4"),
            ] {
                let file = secrets.join(name);
                assert_eq!(std::fs::read_to_string(&file).unwrap(), value);
                let mode = std::fs::metadata(&file).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{name}");
            }
            assert!(text.contains("Bearer ${file:"), "{text}");
            let mut serve = Serve::from_command(serve_command(&config, &[]));
            serve.initialize("2025-11-25");
            let (variables, _) = environment(&mut serve, 1, "holder", &["API_TOKEN", "MODE"]);
            assert_eq!(
                variables,
                json!({"API_TOKEN": "tok-env-1a2", "MODE": "plain"})
            );
        }

        /// Where a keyring answers, `mcpx import --write` keeps the tokens in it: the
        /// configuration names them as `${keyring:…}`, and the server starts with its own.
        #[test]
        fn import_keeps_tokens_in_the_keyring_where_one_answers() {
            let dir = tempfile::tempdir().unwrap();
            let keyring = SessionKeyring::start(dir.path());
            let config = dir.path().join("mcpx.toml");
            let editor = claude_desktop_file(dir.path());
            let (written, said) = import(&config, &editor, &keyring.address);
            assert!(written, "{said}");
            assert!(
                said.contains("kept 2 credential(s) in the keyring"),
                "{said}"
            );
            let text = std::fs::read_to_string(&config).unwrap();
            assert!(!text.contains("tok-"), "{text}");
            assert!(text.contains("${keyring:holder-API_TOKEN}"), "{text}");
            assert!(
                text.contains("Bearer ${keyring:remote-Authorization}"),
                "{text}"
            );
            let (listed, names) = keyring.secret(Some(&config), &["list"], None);
            assert!(listed && names.contains("holder-API_TOKEN"), "{names}");
            let mut command = serve_command(&config, &[]);
            command.env("DBUS_SESSION_BUS_ADDRESS", &keyring.address);
            let mut serve = Serve::from_command(command);
            serve.initialize("2025-11-25");
            let (variables, _) = environment(&mut serve, 1, "holder", &["API_TOKEN"]);
            assert_eq!(variables["API_TOKEN"], "tok-env-1a2");
        }
    }
}

/// A Claude Desktop file in `dir`: the fixture with a token in `env`, a remote server with one
/// in a header, a server under a name `[servers.taken]` may hold, and mcpx's own entry.
fn claude_desktop_file(dir: &Path) -> PathBuf {
    let editor = dir.join("claude_desktop_config.json");
    let file = json!({"mcpServers": {
        "holder": {"command": fixture_bin(), "args": ["--show-environment"],
                   "env": {"API_TOKEN": "tok-env-1a2", "MODE": "plain"}},
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer tok-hdr-3b4"}},
        "taken": {"command": "theirs"},
        "mcpx": {"command": "mcpx", "args": ["serve"]},
    }});
    std::fs::write(&editor, file.to_string()).unwrap();
    editor
}

/// `mcpx --config CONFIG import EDITOR --write` with the session bus at `bus`: whether it
/// succeeded, and what it said.
fn import(config: &Path, editor: &Path, bus: &str) -> (bool, String) {
    let output = Command::new(mcpx_bin())
        .arg("--config")
        .arg(config)
        .arg("import")
        .arg(editor)
        .arg("--write")
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), said)
}
