//! The one configuration file: `$XDG_CONFIG_HOME/mcpx/config.toml` unless `--config` names another.
//!
//! Every key has a default, so mcpx runs with no file at all. A file that does not parse or names
//! an impossible upstream is an error that names the file, the line and the key, and mcpx does not
//! start: a gateway that silently drops half its servers is worse than one that refuses.

mod approvals;
mod auth;
mod cluster;
mod daemon;
mod duration;
mod events;
mod guardrails;
mod limits;
mod load;
mod observe;
mod pins;
mod profile;
mod sandbox;
mod server;
mod settings;
mod tasks;

pub use approvals::Approvals;
pub use auth::{
    state_dir, Alg, Auth, AuthMode, Builtin, CredentialsStore, External, Introspection, Rule,
};
pub use cluster::Cluster;
pub use daemon::{Admin, Daemon, Transport};
pub use events::Events;
pub use guardrails::{
    Action as GuardrailAction, FailMode, Guardrails, Hook, HookPhase, ServerGuardrails,
};
pub use limits::{Limits, LoopGuard, Rate, ToolLimit};
pub use observe::{Audit, Telemetry};
pub use pins::{OnChange, OnNew, Pin, Pins};
pub use profile::Profile;
pub use sandbox::{
    parse_size, private_tmp_of, Network, OnUnavailable, Sandbox, PRIVATE_TMP, SYSTEM,
};
pub use server::{
    Credentials, OAuth, PerIdentity, PersonToken, RemoteSpec, RemoteTransport, Server, ServerKind,
    Start, StdioSpec, ToolOverride, UpstreamEra, DEFAULT_MAX_IN_FLIGHT, DEFAULT_UPSTREAM_TIMEOUT,
    OWNER,
};
pub use settings::{Expanded, ServerSettings, Settings};
pub use tasks::{TaskPolicy, Tasks};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The name of the built-in server, which no configured server may take.
pub const BUILTIN_SERVER: &str = "mcpx";

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The HTTP daemon.
    pub daemon: Daemon,
    /// Transport behaviour shared by stdio and HTTP.
    pub transport: Transport,
    /// The admin socket that `mcpx-tui` attaches to.
    pub admin: Admin,
    /// Logins to remote servers.
    pub auth: Auth,
    /// Upstream servers by name, in name order (so the merged catalog's order is stable).
    pub servers: BTreeMap<String, Server>,
    /// Views of the catalog that a client chooses by its door (`mcpx serve --profile NAME`,
    /// `/mcp/NAME`).
    pub profiles: BTreeMap<String, Profile>,
    /// The audit log.
    pub audit: Audit,
    /// Traces.
    pub telemetry: Telemetry,
    /// Several daemons behind one proxy.
    pub cluster: Cluster,
    /// The tasks mcpx runs itself.
    pub tasks: Tasks,
    /// Webhook delivery of event types.
    pub events: Events,
    /// How often one caller may call.
    pub limits: Limits,
    /// Where pinned definitions are kept, and whether every server is pinned.
    pub pins: Pins,
    /// What is done with credentials and personal data in what a model reads.
    pub guardrails: Guardrails,
    /// The tools whose calls a person approves.
    pub approvals: Approvals,
}

/// The default configuration path, if the platform has a configuration directory.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "mcpx").map(|d| d.config_dir().join("config.toml"))
}

impl Config {
    /// Where the daemon takes editors' `mcpx serve`: `[daemon] localSocket`, else beside the
    /// admin socket: `serve.sock` for the usual `admin.sock`, `NAME.serve.sock` for an admin
    /// socket `NAME.sock`, so that daemons whose admin sockets share a directory do not share it.
    pub fn local_socket(&self) -> PathBuf {
        if let Some(path) = &self.daemon.local_socket {
            return path.clone();
        }
        let admin = &self.admin.socket;
        let stem = admin
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("admin");
        match stem {
            "admin" => admin.with_file_name("serve.sock"),
            other => admin.with_file_name(format!("{other}.serve.sock")),
        }
    }
}

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a wrong key or value.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the problem.
        line: usize,
        /// What is wrong and which key.
        message: String,
    },
}

#[cfg(test)]
mod every_revision {
    mod config {
        use crate::config::{Config, ServerKind};
        use std::time::Duration;

        #[test]
        fn no_file_means_every_default() {
            let c = Config::parse("").unwrap();
            assert_eq!(c.daemon.address.to_string(), "127.0.0.1:7777");
            assert_eq!(c.transport.stdio_drain, Duration::from_secs(5));
            assert_eq!(c.transport.sse_keep_alive, Duration::from_secs(15));
            assert_eq!(
                c.local_socket(),
                c.admin.socket.with_file_name("serve.sock")
            );
            // Daemons whose admin sockets share a directory get a local socket each.
            let named = Config::parse("[admin]\nsocket = \"/run/m/old.sock\"\n").unwrap();
            let expected = std::path::PathBuf::from("/run/m/old.serve.sock");
            assert_eq!(named.local_socket(), expected);
            assert!(c.servers.is_empty());
        }

        #[test]
        fn keys_use_their_documented_spellings() {
            let c = Config::parse(
                r#"
[daemon]
address = "127.0.0.1:9000"
[transport]
allowedOrigins = ["https://app.example"]
sseKeepAlive = "2s"
stdioDrain = "250ms"
[admin]
socket = "/tmp/x.sock"
[servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }
prefix = ""
[servers.remote]
url = "https://example.test/mcp"
headers = { Authorization = "Bearer x" }
"#,
            )
            .unwrap();
            assert_eq!(c.transport.allowed_origins, vec!["https://app.example"]);
            assert_eq!(c.transport.stdio_drain, Duration::from_millis(250));
            let ServerKind::Stdio(time) = c.servers["time"].kind() else {
                panic!("time is a program")
            };
            assert_eq!(time.command, "mcp-server-time");
            assert_eq!(c.servers["time"].prefix("time"), "");
            assert_eq!(
                c.servers["remote"].remote_url(),
                Some("https://example.test/mcp")
            );
        }

        #[test]
        fn an_unknown_key_names_its_line_and_key() {
            let (line, message) =
                Config::parse("[transport]\n\nstdioDrian = \"1s\"\n").unwrap_err();
            assert_eq!(line, 3);
            assert!(message.contains("stdioDrian"), "{message}");
        }

        #[test]
        fn a_bad_duration_names_its_line() {
            let (line, message) =
                Config::parse("[transport]\nsseKeepAlive = \"soon\"\n").unwrap_err();
            assert_eq!(line, 2);
            assert!(message.contains("soon"), "{message}");
        }

        #[test]
        fn a_per_identity_server_says_how_each_person_is_reached() {
            let stdio = "[servers.x]\ncommand = \"a\"\ncredentials = \"per-identity\"\n";
            assert!(Config::parse(stdio).is_ok());
            let said = |text: &str| Config::parse(text).unwrap_err().1;
            assert!(said(&format!(
                "{stdio}[servers.x.perIdentity]\ntoken = \"exchange\"\n"
            ))
            .contains("url"));
            assert!(said(&format!(
                "{stdio}[servers.x.perIdentity]\nmaxInstances = 0\n"
            ))
            .contains("at least 1"));
            let remote = "[servers.y]\nurl = \"http://h\"\ncredentials = \"per-identity\"\n";
            assert!(said(remote).contains("perIdentity.token"));
            let login = format!("{remote}[servers.y.perIdentity]\ntoken = \"login\"\n");
            assert!(said(&login).contains("publicUrl"));
            let public = "[auth]\npublicUrl = \"https://m\"\n";
            assert!(Config::parse(&format!("{public}{login}")).is_ok());
            let exchange = format!("{remote}[servers.y.perIdentity]\ntoken = \"exchange\"\n");
            assert!(said(&exchange).contains("clientId"));
            let external = "[auth]\nmode = \"external\"\npublicUrl = \"https://m\"\n[auth.external]\nissuer = \"https://idp\"\nclientId = \"m\"\n";
            assert!(Config::parse(&format!("{external}{exchange}")).is_ok());
            let shared =
                "[servers.z]\ncommand = \"a\"\n[servers.z.perIdentity]\nmaxInstances = 2\n";
            assert!(said(shared).contains("credentials"));
        }

        #[test]
        fn a_server_needs_exactly_one_of_command_and_url() {
            let (line, message) = Config::parse("\n[servers.x]\nargs = []\n").unwrap_err();
            assert_eq!(line, 2);
            assert!(message.contains("servers.x"), "{message}");
            assert!(Config::parse("[servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n").is_err());
        }

        /// Every key mcpx reads is documented in mcpx.toml(5).
        #[test]
        fn every_key_is_in_the_man_page() {
            let mut config = Config::parse(concat!(
                "[servers.a]\ncommand = \"x\"\nprefix = \"p\"\ncwd = \"/\"\nargs = [\"1\"]\n",
                "env = { K = \"v\" }\ninheritEnv = true\ntimeout = \"1s\"\nmaxInFlight = 8\n",
                "era = \"legacy\"\nstart = \"lazy\"\nidleTimeout = \"10m\"\ntasks = \"never\"\n",
                "[servers.a.tools.t]\nname = \"n\"\ndescription = \"d\"\ntitle = \"t\"\n",
                "disabled = true\nreadOnlyHint = true\ndestructiveHint = false\n",
                "idempotentHint = true\nopenWorldHint = false\ntasks = \"always\"\n",
                "[servers.b]\nurl = \"http://h\"\nheaders = { H = \"v\" }\n",
                "oauth = { clientId = \"c\" }\ntransport = \"sse\"\n",
                "[servers.c]\ncommand = \"x\"\ncredentials = \"per-identity\"\n",
                "[servers.c.perIdentity]\nmaxInstances = 2\nidleTimeout = \"1m\"\n",
                "[servers.d]\nurl = \"http://h\"\ncredentials = \"per-identity\"\n",
                "[servers.d.perIdentity]\ntoken = \"exchange\"\naudience = \"a\"\nscopes = [\"s\"]\n",
                "[profiles.p]\nservers = [\"a\"]\ninclude = [\"a__*\"]\nexclude = [\"x\"]\n",
                "search = true\n",
                "[audit]\npath = \"/a\"\n",
                "[telemetry]\notlpEndpoint = \"http://c:4318\"\n",
                "[cluster]\nkeyFile = \"/k\"\npreviousKeyFile = \"/p\"\n",
                "[tasks]\npromoteAfter = \"2s\"\nttl = \"1h\"\nmaxPerClient = 9\nmaxResultBytes = 99\n",
                "[auth]\nmode = \"external\"\npublicUrl = \"https://m.example\"\n",
                "[auth.external]\nissuer = \"https://idp\"\njwksUri = \"https://idp/k\"\n",
                "clientId = \"x\"\nclientSecret = \"y\"\n",
                "[auth.external.introspection]\nendpoint = \"https://idp/i\"\nclientId = \"c\"\n",
                "clientSecret = \"s\"\n",
                "[[auth.rules]]\nsubject = \"s\"\nclientId = \"c\"\nissuer = \"i\"\nscopes = [\"x\"]\n",
                "claims = { g = \"v\" }\nprofiles = [\"p\"]\ndenyTools = [\"t\"]\nstepUp = { t = \"w\" }\n",
            ))
            .unwrap();
            config.admin.socket = "/s".into();
            config.daemon.token = Some("t".into());
            let page =
                std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/mcpx.toml.5"))
                    .unwrap();
            let tables = toml::Value::try_from(&config).unwrap();
            let mut keys = Vec::new();
            for (table, value) in tables.as_table().unwrap() {
                for (key, value) in value.as_table().unwrap() {
                    match table.as_str() {
                        // Keys of each `[servers.NAME]`, `[servers.NAME.tools.TOOL]` and
                        // `[profiles.NAME]`.
                        "servers" | "profiles" => {
                            for (key, value) in value.as_table().unwrap() {
                                keys.push(key.clone());
                                if key == "tools" {
                                    for tool in value.as_table().unwrap().values() {
                                        keys.extend(tool.as_table().unwrap().keys().cloned());
                                    }
                                }
                                if key == "perIdentity" {
                                    keys.extend(value.as_table().unwrap().keys().cloned());
                                }
                            }
                        }
                        // `[auth.external]`, its introspection table and each `[[auth.rules]]`.
                        "auth" => {
                            let nested = match value {
                                toml::Value::Array(rules) => rules.iter().collect(),
                                table @ toml::Value::Table(_) => vec![table],
                                _ => {
                                    keys.push(key.clone());
                                    Vec::new()
                                }
                            };
                            for (key, value) in nested.iter().filter_map(|v| v.as_table()).flatten()
                            {
                                keys.push(key.clone());
                                let inner = value.as_table().filter(|_| key == "introspection");
                                keys.extend(inner.into_iter().flatten().map(|(k, _)| k.clone()));
                            }
                        }
                        _ => keys.push(key.clone()),
                    }
                }
            }
            for key in keys {
                assert!(
                    page.contains(&format!("\\fB{key}\\fR")),
                    "mcpx.toml(5) does not document {key}"
                );
            }
        }

        #[test]
        fn external_auth_needs_its_provider_and_public_origin_and_takes_no_hmac() {
            let base = "[auth]\nmode = \"external\"\npublicUrl = \"https://m.example\"\n[auth.external]\nissuer = \"https://idp\"\n";
            assert!(Config::parse(base).is_ok());
            let exposed = format!("[daemon]\naddress = \"0.0.0.0:7777\"\n{base}");
            assert!(
                Config::parse(&exposed).is_ok(),
                "tokens guard an exposed door"
            );
            for (text, key, line) in [
                (
                    "[auth]\nmode = \"external\"\n[auth.external]\nissuer = \"https://idp\"\n",
                    "auth.publicUrl",
                    2,
                ),
                (
                    "[auth]\nmode = \"external\"\npublicUrl = \"https://m.example\"\n",
                    "auth.external.issuer",
                    2,
                ),
                (
                    "[auth]\npublicUrl = \"https://m.example/mcp\"\n",
                    "must be an origin",
                    2,
                ),
                (
                    &format!("{base}algorithms = [\"RS256\", \"HS256\"]\n"),
                    "HMAC never",
                    6,
                ),
                (
                    &format!("{base}[[auth.rules]]\nprofiles = [\"nope\"]\n"),
                    "auth.rules[0]",
                    6,
                ),
                ("[auth]\nmode = \"builtin\"\n", "auth.publicUrl", 2),
                ("[auth]\nmode = \"none\"\n", "unknown variant", 2),
            ] {
                let (at, message) = Config::parse(text).unwrap_err();
                assert!(message.contains(key), "{text}: {message}");
                assert_eq!(at, line, "{text}: {message}");
            }
        }

        #[test]
        fn a_non_loopback_address_needs_a_token() {
            let (line, message) =
                Config::parse("[daemon]\naddress = \"0.0.0.0:7777\"\n").unwrap_err();
            assert_eq!(line, 2);
            assert!(message.contains("daemon.token"), "{message}");
            assert!(Config::parse("[daemon]\naddress = \"0.0.0.0:7777\"\ntoken = \"t\"\n").is_ok());
            assert!(Config::parse("[daemon]\naddress = \"[::1]:7777\"\n").is_ok());
        }

        #[test]
        fn a_cap_or_interval_of_zero_is_refused_naming_its_key_and_line() {
            for (text, key, line) in [
                ("[daemon]\nmaxConnections = 0\n", "daemon.maxConnections", 2),
                (
                    "[transport]\n\nsseKeepAlive = \"0s\"\n",
                    "transport.sseKeepAlive",
                    3,
                ),
                (
                    "[transport]\nmaxInFlightPerClient = 0\n",
                    "transport.maxInFlightPerClient",
                    2,
                ),
                (
                    "[servers.a]\ncommand = \"x\"\nmaxInFlight = 0\n",
                    "servers.a.maxInFlight",
                    3,
                ),
                (
                    "[servers.a]\ncommand = \"x\"\ntimeout = \"0ms\"\n",
                    "servers.a.timeout",
                    3,
                ),
                // The same key under another table first: the line is the one that is zero.
                (
                    "[servers.a]\ncommand = \"x\"\ntimeout = \"5s\"\n[servers.b]\ncommand = \"y\"\ntimeout = \"0s\"\n",
                    "servers.b.timeout",
                    6,
                ),
                (
                    "[daemon]\nreadTimeout = \"5s\"\n[servers.a]\ncommand = \"x\"\nmaxInFlight = 0\n",
                    "servers.a.maxInFlight",
                    5,
                ),
                ("servers.a.command = \"x\"\nservers.a.maxInFlight = 0\n", "servers.a.maxInFlight", 2),
            ] {
                let (at, message) = Config::parse(text).unwrap_err();
                assert!(message.contains(key), "{message}");
                assert_eq!(at, line, "{text}");
            }
            assert!(Config::parse("[transport]\nstdioDrain = \"0s\"\n").is_ok());
        }

        #[test]
        fn the_builtin_name_is_reserved() {
            assert!(Config::parse("[servers.mcpx]\ncommand = \"a\"\n").is_err());
        }

        /// `__` is the prefix's separator: a server name or prefix that holds it is refused.
        #[test]
        fn a_server_name_or_prefix_with_the_separator_is_refused() {
            for text in [
                "[servers.a__b]\ncommand = \"x\"\n",
                "[servers.a]\ncommand = \"x\"\nprefix = \"p__q\"\n",
            ] {
                let (_, message) = Config::parse(text).unwrap_err();
                assert!(message.contains("`__`"), "{message}");
            }
            assert!(Config::parse("[servers.a__b]\ncommand = \"x\"\nprefix = \"ab\"\n").is_ok());
        }
    }
}
