//! The configuration as used: the file as written with every placeholder expanded, once, when
//! it is loaded (at start and at each reload): `${VAR}` and `${env:VAR}` from mcpx's environment,
//! `${file:PATH}`, `${cred:NAME}` (systemd credentials) and `${keyring:NAME}` (the desktop's
//! keyring). The parts of mcpx take their values from here and
//! expand nothing themselves, so a value means the same thing everywhere it is read.
//!
//! A value whose variable is unset is kept as the reason, for the part that needs it to refuse:
//! a server stays down saying which key names which variable while the others run, and the
//! daemon does not start on an unusable token.

use super::{Config, ConfigError, Credentials, Server, OWNER};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The configuration as written ([`Settings::config`]) and what its `${VAR}`s expand to.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// The file as written: what a reload compares, where every other key is read.
    #[serde(skip)]
    pub config: Config,
    /// Each server's expanded values, by name, or why they could not be expanded.
    pub servers: BTreeMap<String, Result<Expanded, String>>,
    /// `daemon.token`.
    pub daemon_token: Result<Option<String>, String>,
    /// `daemon.metricsToken`.
    pub metrics_token: Result<Option<String>, String>,
    /// `auth.external.introspection.clientSecret`.
    pub introspection_secret: Result<Option<String>, String>,
    /// `auth.external.clientSecret`: mcpx's at the provider's token endpoint.
    pub exchange_secret: Result<Option<String>, String>,
    /// `auth.external.clientKey`: its private key there instead, as PEM text.
    pub exchange_key: Result<Option<String>, String>,
    /// `auth.builtin.ownerSecret`.
    pub owner_secret: Result<Option<String>, String>,
    /// `cluster.advertise`.
    pub cluster_advertise: Result<Option<String>, String>,
    /// `cluster.peers`.
    pub cluster_peers: Result<Vec<String>, String>,
}

/// A server's values that may name placeholders, expanded. They hold its secrets, so its
/// `Debug` shows only which keys are set, never a value.
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct Expanded {
    /// `args`: the command's arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `env`: added to the child's environment.
    pub env: BTreeMap<String, String>,
    /// `headers`: sent with every request to a `url` server.
    pub headers: BTreeMap<String, String>,
    /// `oauth.clientSecret`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// What each of its placeholders gave: masked in the lines the server writes to its stderr
    /// before mcpx logs them ([`crate::redact`]).
    #[serde(skip)]
    pub secrets: Vec<String>,
}

impl std::fmt::Debug for Expanded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expanded")
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("client_secret", &self.client_secret.is_some())
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// Where placeholders take their values.
pub struct Sources<'a> {
    /// The environment: `${VAR}`, `${env:VAR}`, and the `HOME` and `CREDENTIALS_DIRECTORY`
    /// that `${file:~/…}` and `${cred:NAME}` read.
    pub variable: &'a dyn Fn(&str) -> Option<String>,
    /// `${keyring:NAME}`: the secret, or why there is none.
    pub keyring: &'a dyn Fn(&str) -> Result<String, String>,
}

/// One server as used: its keys as written, and its `${VAR}`s expanded. It reads as the
/// [`Server`] it stands for; what names a variable is taken from [`ServerSettings::expanded`].
#[derive(Debug, Clone, Copy)]
pub struct ServerSettings<'a> {
    /// `[servers.NAME]` as written.
    pub config: &'a Server,
    /// Its `env`, `headers` and `oauth.clientSecret`, expanded.
    pub expanded: &'a Expanded,
}

impl std::ops::Deref for ServerSettings<'_> {
    type Target = Server;

    fn deref(&self) -> &Server {
        self.config
    }
}

impl Settings {
    /// Loads the file as [`Config::load`] does and expands it from mcpx's environment.
    pub fn load(explicit: Option<&Path>) -> Result<(Settings, Option<PathBuf>), ConfigError> {
        let (config, path) = Config::load(explicit)?;
        Ok((Settings::from_environment(config), path))
    }

    /// `config` expanded from mcpx's environment and the desktop's keyring. It blocks while
    /// the keyring answers, if the file names a `${keyring:…}`.
    pub fn from_environment(config: Config) -> Settings {
        let keyring = crate::keyring::Reader::default();
        let sources = Sources {
            variable: &|name| std::env::var(name).ok(),
            keyring: &|name| keyring.read(name),
        };
        Settings::expand_from(config, &sources)
    }

    /// `config` expanded with `variable` as the environment and no keyring.
    pub fn expand(config: Config, variable: &dyn Fn(&str) -> Option<String>) -> Settings {
        let keyring = |name: &str| Err(format!("${{keyring:{name}}}: no keyring is read here"));
        Settings::expand_from(
            config,
            &Sources {
                variable,
                keyring: &keyring,
            },
        )
    }

    /// `config` expanded from `sources`.
    pub fn expand_from(config: Config, sources: &Sources<'_>) -> Settings {
        let expand_noting = |key: &str, value: &str, secrets: &RefCell<Vec<String>>| {
            expand(value, sources, secrets).map_err(|reason| format!("{key}: {reason}"))
        };
        let expand = |key: &str, value: &str| expand_noting(key, value, &RefCell::default());
        let optional = |key: &str, value: &Option<String>| {
            value.as_deref().map(|v| expand(key, v)).transpose()
        };
        let servers = config
            .servers
            .iter()
            .map(|(name, server)| {
                let secrets = RefCell::default();
                // A per-identity server's catalog is listed by the local owner's instance.
                let server = &match server.credentials {
                    Credentials::PerIdentity => server.with_subject(OWNER),
                    Credentials::Shared => server.clone(),
                };
                let expanded = Expanded::of(server, &|key, value| {
                    expand_noting(&format!("servers.{name}.{key}"), value, &secrets)
                });
                let secrets = secrets.into_inner();
                (name.clone(), expanded.map(|e| Expanded { secrets, ..e }))
            })
            .collect();
        let daemon_token =
            optional("daemon.token", &config.daemon.token).and_then(|token| match token {
                Some(token) if token.is_empty() => Err("daemon.token is empty".to_owned()),
                token => Ok(token),
            });
        let metrics_token =
            optional("daemon.metricsToken", &config.daemon.metrics_token).and_then(|token| {
                match token {
                    Some(token) if token.is_empty() => {
                        Err("daemon.metricsToken is empty".to_owned())
                    }
                    token => Ok(token),
                }
            });
        let introspection = config.auth.external.introspection.as_ref();
        let introspection_secret = optional(
            "auth.external.introspection.clientSecret",
            &introspection.and_then(|i| i.client_secret.clone()),
        );
        let exchange_secret = optional(
            "auth.external.clientSecret",
            &config.auth.external.client_secret,
        );
        let exchange_key = optional("auth.external.clientKey", &config.auth.external.client_key);
        let owner_secret = optional(
            "auth.builtin.ownerSecret",
            &config.auth.builtin.owner_secret,
        )
        .and_then(|secret| match secret {
            Some(secret) if secret.is_empty() => {
                Err("auth.builtin.ownerSecret is empty".to_owned())
            }
            secret => Ok(secret),
        });
        Settings {
            servers,
            daemon_token,
            metrics_token,
            introspection_secret,
            exchange_secret,
            exchange_key,
            owner_secret,
            cluster_advertise: optional("cluster.advertise", &config.cluster.advertise),
            cluster_peers: config
                .cluster
                .peers
                .iter()
                .map(|peer| expand("cluster.peers", peer))
                .collect(),
            config,
        }
    }

    /// The expanded values of server `name`, or the reason it cannot start.
    pub fn server(&self, name: &str) -> Result<Expanded, String> {
        self.servers
            .get(name)
            .cloned()
            .unwrap_or_else(|| Err(format!("no server {name:?} is configured")))
    }

    /// Where the other replicas reach this daemon, listening on `bound`: `cluster.advertise`,
    /// else `bound` unless that is a wildcard, which names no one host.
    pub fn advertised(&self, bound: SocketAddr) -> Result<Option<String>, String> {
        match &self.cluster_advertise {
            Ok(None) => Ok((!bound.ip().is_unspecified()).then(|| bound.to_string())),
            advertised => advertised.clone(),
        }
    }
}

impl Expanded {
    /// The values of `server` (`[servers.NAME]`) as the person `subject` runs it
    /// ([`Server::with_subject`]), expanded from mcpx's environment and the keyring: it blocks
    /// while the keyring answers.
    pub fn for_subject(name: &str, server: &Server, subject: &str) -> Result<Expanded, String> {
        let server = server.with_subject(subject);
        let keyring = crate::keyring::Reader::default();
        let sources = Sources {
            variable: &|variable| std::env::var(variable).ok(),
            keyring: &|key| keyring.read(key),
        };
        let secrets = RefCell::default();
        let expanded = Expanded::of(&server, &|key, value| {
            expand(value, &sources, &secrets)
                .map_err(|reason| format!("servers.{name}.{key}: {reason}"))
        })?;
        Ok(Expanded {
            secrets: secrets.into_inner(),
            ..expanded
        })
    }

    /// `server`'s values, each through `expand(key, value)`.
    fn of(
        server: &Server,
        expand: &dyn Fn(&str, &str) -> Result<String, String>,
    ) -> Result<Expanded, String> {
        let each = |table: &str, values: &BTreeMap<String, String>| {
            values
                .iter()
                .map(|(name, value)| Ok((name.clone(), expand(&format!("{table}.{name}"), value)?)))
                .collect::<Result<BTreeMap<_, _>, String>>()
        };
        let client_secret = server
            .oauth
            .as_ref()
            .and_then(|o| o.client_secret.as_deref());
        let args = server.args.iter().enumerate();
        Ok(Expanded {
            args: args
                .map(|(index, arg)| expand(&format!("args[{index}]"), arg))
                .collect::<Result<_, _>>()?,
            env: each("env", &server.env)?,
            headers: each("headers", &server.headers)?,
            client_secret: client_secret
                .map(|secret| expand("oauth.clientSecret", secret))
                .transpose()?,
            // What `expand` noted, which the caller holds.
            secrets: Vec::new(),
        })
    }
}

/// Expands each placeholder in `value`: `${VAR}` or `${env:VAR}` from the environment,
/// `${file:PATH}` from a file only its owner may read, `${cred:NAME}` from the systemd
/// credential NAME (`$CREDENTIALS_DIRECTORY/NAME`, `LoadCredential=`), `${keyring:NAME}` from
/// the keyring. What each gave is noted in `secrets`. An error never quotes a value.
fn expand(
    value: &str,
    sources: &Sources<'_>,
    secrets: &RefCell<Vec<String>>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or("an unclosed ${")?;
        let placeholder = &rest[start + 2..start + end];
        let resolved = resolve(placeholder, sources)?;
        out.push_str(&resolved);
        secrets.borrow_mut().push(resolved);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value one placeholder (what stands between `${` and `}`) names.
fn resolve(placeholder: &str, sources: &Sources<'_>) -> Result<String, String> {
    let variable = sources.variable;
    if let Some(path) = placeholder.strip_prefix("file:") {
        let path = match path.strip_prefix("~/") {
            Some(rest) => Path::new(&variable("HOME").unwrap_or_default()).join(rest),
            None => PathBuf::from(path),
        };
        return secret_file(&path, "${file:…}");
    }
    if let Some(name) = placeholder.strip_prefix("cred:") {
        let directory = variable("CREDENTIALS_DIRECTORY").ok_or_else(|| {
            format!("${{cred:{name}}} needs $CREDENTIALS_DIRECTORY: run mcpx under systemd with LoadCredential={name}:…")
        })?;
        if name.is_empty() || name.contains('/') {
            return Err(format!("${{cred:{name}}} is not a credential's name"));
        }
        return secret_file(&Path::new(&directory).join(name), "${cred:…}");
    }
    if let Some(name) = placeholder.strip_prefix("keyring:") {
        return (sources.keyring)(name);
    }
    // `${env:NAME}` says where the value is; `${NAME}` is the same.
    let name = placeholder.strip_prefix("env:").unwrap_or(placeholder);
    variable(name).ok_or_else(|| format!("${{{name}}} is not set in mcpx's environment"))
}

/// A secret kept in the file at `path`, without its final line break. Refused when its group
/// or others may read it: a secret that every local user can read is no secret.
fn secret_file(path: &Path, kind: &str) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let metadata = std::fs::metadata(path).map_err(|e| format!("{kind} {shown}: {e}"))?;
    if metadata.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{kind} {shown} may be read by others (mode {:o}): chmod 600 it",
            metadata.permissions().mode() & 0o777
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{kind} {shown}: {e}"))?;
    Ok(text.strip_suffix('\n').unwrap_or(&text).to_owned())
}

#[cfg(test)]
mod every_revision {
    mod secrets {
        use crate::config::settings::Sources;
        use crate::config::{Config, Settings};
        use std::os::unix::fs::PermissionsExt;

        /// A config whose server `a` takes `placeholder` in its env, and `b` names nothing.
        fn expanded_with(placeholder: &str, variable: &dyn Fn(&str) -> Option<String>) -> Settings {
            let text = format!(
                "[servers.a]\ncommand = \"x\"\nenv = {{ K = {placeholder:?} }}\n[servers.b]\ncommand = \"x\"\n"
            );
            Settings::expand(Config::parse(&text).unwrap(), variable)
        }

        #[test]
        fn a_file_only_its_owner_reads_resolves_for_the_server_that_names_it() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("token");
            std::fs::write(&path, "s3cret\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let settings = expanded_with(&format!("${{file:{}}}", path.display()), &|_| None);
            assert_eq!(settings.server("a").unwrap().env["K"], "s3cret");
            assert!(settings.server("b").unwrap().env.is_empty());
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let settings = expanded_with(&format!("${{file:{}}}", path.display()), &|_| None);
            let reason = settings.server("a").unwrap_err();
            assert!(
                reason.contains("servers.a.env.K") && reason.contains("chmod 600"),
                "{reason}"
            );
            assert!(!reason.contains("s3cret"), "{reason}");
        }

        #[test]
        fn a_systemd_credential_resolves_from_the_credentials_directory() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("api-key");
            std::fs::write(&path, "k-123").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
            let directory = dir.path().display().to_string();
            let variable =
                move |name: &str| (name == "CREDENTIALS_DIRECTORY").then(|| directory.clone());
            let settings = expanded_with("${cred:api-key}", &variable);
            assert_eq!(settings.server("a").unwrap().env["K"], "k-123");
            let outside = expanded_with("${cred:api-key}", &|_| None);
            assert!(outside.server("a").unwrap_err().contains("LoadCredential="));
        }

        #[test]
        fn a_keyring_secret_resolves_in_env_args_and_headers_of_the_server_that_names_it() {
            let text =
                "[servers.a]\ncommand = \"x\"\nargs = [\"--key=${keyring:api-key}\", \"plain\"]\n\
                        env = { K = \"${keyring:api-key}\" }\n\
                        [servers.h]\nurl = \"https://h.example/mcp\"\n\
                        headers = { Authorization = \"Bearer ${keyring:h-token}\" }\n\
                        [servers.b]\ncommand = \"x\"\nenv = { K = \"${keyring:absent}\" }\n";
            let asked = std::cell::RefCell::new(Vec::new());
            let keyring = |name: &str| {
                asked.borrow_mut().push(name.to_owned());
                match name {
                    "api-key" => Ok("k-123".to_owned()),
                    "h-token" => Ok("t-456".to_owned()),
                    _ => Err(format!(
                        "${{keyring:{name}}}: the keyring holds no such secret"
                    )),
                }
            };
            let sources = Sources {
                variable: &|_| None,
                keyring: &keyring,
            };
            let settings = Settings::expand_from(Config::parse(text).unwrap(), &sources);
            let a = settings.server("a").unwrap();
            assert_eq!(a.args, ["--key=k-123", "plain"]);
            assert_eq!(a.env["K"], "k-123");
            assert!(a.headers.is_empty());
            assert_eq!(
                settings.server("h").unwrap().headers["Authorization"],
                "Bearer t-456"
            );
            let reason = settings.server("b").unwrap_err();
            assert!(
                reason.contains("servers.b.env.K") && reason.contains("absent"),
                "{reason}"
            );
            assert_eq!(*asked.borrow(), ["api-key", "api-key", "absent", "h-token"]);
            assert!(!format!("{a:?}").contains("k-123"), "{a:?}");
        }
    }

    mod config {
        use crate::config::{Config, Settings};
        use std::path::Path;

        /// The environment every golden file is expanded with.
        fn variable(name: &str) -> Option<String> {
            match name {
                "TOKEN" => Some("s3cret".into()),
                "HOST" => Some("replica-1.internal".into()),
                "EMPTY" => Some(String::new()),
                _ => None,
            }
        }

        /// Each `golden/NAME.toml` expands to `golden/NAME.json`; `MCPX_BLESS=1` rewrites them.
        #[test]
        fn settings_match_their_golden_files() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config/golden");
            let mut checked = 0;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "toml") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let config = Config::parse(&text).unwrap_or_else(|e| panic!("{path:?}: {e:?}"));
                let settings = Settings::expand(config, &variable);
                let actual = serde_json::to_string_pretty(&settings).unwrap() + "\n";
                let golden = path.with_extension("json");
                if std::env::var_os("MCPX_BLESS").is_some() {
                    std::fs::write(&golden, &actual).unwrap();
                }
                let expected = std::fs::read_to_string(&golden).unwrap_or_default();
                assert_eq!(actual, expected, "{path:?} no longer expands to {golden:?}");
                checked += 1;
            }
            assert!(checked >= 3, "only {checked} golden files in {dir:?}");
        }

        #[test]
        fn an_unclosed_or_unset_variable_names_its_key() {
            let config = Config::parse(
                "[servers.a]\ncommand = \"x\"\nenv = { K = \"${UNCLOSED\" }\n[servers.b]\ncommand = \"x\"\n",
            )
            .unwrap();
            let settings = Settings::expand(config, &variable);
            let reason = settings.server("a").unwrap_err();
            assert!(reason.contains("servers.a.env.K"), "{reason}");
            assert!(reason.contains("unclosed"), "{reason}");
            assert!(settings.server("b").is_ok());
            assert!(settings.server("c").unwrap_err().contains("\"c\""));
        }

        #[test]
        fn advertised_defaults_to_the_bound_address_unless_it_is_a_wildcard() {
            let settings = Settings::expand(Config::default(), &variable);
            let bound = "127.0.0.1:7777".parse().unwrap();
            assert_eq!(
                settings.advertised(bound).unwrap().unwrap(),
                "127.0.0.1:7777"
            );
            let wildcard = "0.0.0.0:7777".parse().unwrap();
            assert_eq!(settings.advertised(wildcard).unwrap(), None);
            let config = Config::parse("[cluster]\nadvertise = \"${HOST}:7777\"\n").unwrap();
            let settings = Settings::expand(config, &variable);
            assert_eq!(
                settings.advertised(wildcard).unwrap().unwrap(),
                "replica-1.internal:7777"
            );
        }

        #[test]
        fn settings_from_the_process_environment_read_it() {
            // PATH is set wherever the tests run; nothing here sets a variable.
            let path = std::env::var("PATH").unwrap();
            let config =
                Config::parse("[servers.a]\ncommand = \"x\"\nenv = { P = \"${PATH}\" }\n").unwrap();
            let settings = Settings::from_environment(config);
            assert_eq!(settings.server("a").unwrap().env["P"], path);
        }

        #[test]
        fn an_owner_secret_is_expanded_from_env_placeholders_and_may_not_be_empty() {
            let config = Config::parse(
                "[auth]\nmode = \"builtin\"\npublicUrl = \"https://m.example\"\n\
                 [auth.builtin]\nownerSecret = \"${env:HOST}-pw\"\n",
            )
            .unwrap();
            let settings = Settings::expand(config.clone(), &variable);
            assert_eq!(
                settings.owner_secret.unwrap().unwrap(),
                "replica-1.internal-pw"
            );
            let unset = Settings::expand(config, &|_| None);
            assert!(unset.owner_secret.unwrap_err().contains("${HOST}"));
            let empty = Config::parse("[auth.builtin]\nownerSecret = \"\"\n").unwrap();
            let settings = Settings::expand(empty, &variable);
            assert!(settings.owner_secret.unwrap_err().contains("empty"));
        }
    }
}
