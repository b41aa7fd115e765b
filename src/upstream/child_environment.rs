//! The environment a child upstream starts with. mcpx's environment may hold secrets meant for
//! one server (written into its `env` as `${VAR}`), so a child gets only a small safe set plus
//! what its own `env` says, unless its `inheritEnv` asks for everything. A sandboxed server gets
//! less still: no proxies, no XDG directories (they point at sockets and caches outside its
//! sandbox), and its private temporary directory as `TMPDIR` (and as `HOME` for a person's own
//! instance of a per-identity server). A person's own instance without a sandbox gets a home and
//! a `TMPDIR` of its own too ([`PersonHome`]), so that it never shares the user's files.

use crate::config::{Credentials, ServerSettings};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Passed to every child: what programs need to find themselves, the user's files, the locale,
/// certificates and the network's proxy. Anything else must be named in the server's `env`.
const SAFE_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "TZ",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// Prefixes of families passed whole: locale categories and the XDG base directories.
const SAFE_PREFIXES: &[&str] = &["LC_", "XDG_"];

/// What a sandboxed server gets of mcpx's environment (and `LC_*`).
const SANDBOXED_VARIABLES: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "TERM", "TZ", "LANG", "LANGUAGE",
];

/// A person's own instance's home when it runs without a sandbox: 0700 under mcpx's state
/// directory, kept between its runs, with its `TMPDIR` inside.
#[derive(Debug)]
pub struct PersonHome(PathBuf);

impl PersonHome {
    /// Instance `name`'s (`server@person`), made if it is not there yet.
    pub fn of(name: &str) -> Result<PersonHome, String> {
        PersonHome::under(&crate::config::state_dir(), name)
    }

    /// Instance `name`'s under the state directory `state`.
    fn under(state: &Path, name: &str) -> Result<PersonHome, String> {
        let home = state.join("instances").join(name);
        let tmp = home.join("tmp");
        crate::private_file::create_dir(&tmp)
            .map_err(|e| format!("cannot make its private home {}: {e}", home.display()))?;
        crate::private_file::make_private(&home);
        Ok(PersonHome(home))
    }
}

/// The whole environment a child upstream starts with; `sandbox_tmp` is a sandboxed server's
/// private temporary directory, `person_home` an unsandboxed person's own instance's home.
pub fn for_child(
    server: ServerSettings<'_>,
    sandbox_tmp: Option<&Path>,
    person_home: Option<&PersonHome>,
) -> Vec<(OsString, OsString)> {
    let passed = |name: &str| match sandbox_tmp {
        Some(_) => SANDBOXED_VARIABLES.contains(&name) || name.starts_with("LC_"),
        None => server.inherit_env || is_safe(name),
    };
    let mut variables: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(passed))
        .collect();
    if let Some(tmp) = sandbox_tmp {
        variables.push(("TMPDIR".into(), tmp.into()));
        // A person's own instance keeps nothing in the user's home: its private directory is
        // its home too.
        if server.credentials == Credentials::PerIdentity {
            variables.retain(|(name, _)| name != "HOME");
            variables.push(("HOME".into(), tmp.into()));
        }
    }
    if let Some(PersonHome(home)) = person_home {
        variables.retain(|(name, _)| name != "HOME" && name != "TMPDIR");
        variables.push(("HOME".into(), home.into()));
        variables.push(("TMPDIR".into(), home.join("tmp").into()));
    }
    for (name, value) in &server.expanded.env {
        variables.retain(|(existing, _)| existing != name.as_str());
        variables.push((name.into(), value.into()));
    }
    variables
}

/// The values of mcpx's variables that every child is given: no secret, though a placeholder
/// may name one (`${HOME}`).
pub fn given_to_every_child() -> Vec<String> {
    std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(is_safe))
        .filter_map(|(_, value)| value.into_string().ok())
        .collect()
}

fn is_safe(name: &str) -> bool {
    SAFE_VARIABLES.contains(&name) || SAFE_PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod every_revision {
    mod environment {
        use crate::config::{Config, Settings};
        use crate::upstream::child_environment::for_child;
        use crate::upstream::child_environment::PersonHome;
        use std::ffi::OsString;

        /// The environment of `[servers.s]` in `config`, its `${VAR}`s from mcpx's environment.
        fn child(config: &str) -> Vec<(OsString, OsString)> {
            let settings = Settings::from_environment(Config::parse(config).unwrap());
            let expanded = settings.server("s").unwrap();
            let server = crate::config::ServerSettings {
                config: &settings.config.servers["s"],
                expanded: &expanded,
            };
            for_child(
                server,
                server
                    .sandbox
                    .as_ref()
                    .map(|_| std::path::Path::new("/run/t")),
                None,
            )
        }

        fn names(child: &[(OsString, OsString)]) -> Vec<String> {
            child
                .iter()
                .map(|(name, _)| name.clone().into_string().unwrap())
                .collect()
        }

        #[test]
        fn a_child_gets_the_safe_set_and_its_own_env_but_not_mcpx_secrets() {
            std::env::set_var("MCPX_TEST_SECRET", "hunter2");
            std::env::set_var("LC_TIME", "C");
            let child = child(
                "[servers.s]\ncommand = \"x\"\nenv = { TOKEN = \"${MCPX_TEST_SECRET}\", PATH = \"/opt/bin\" }\n",
            );
            let names = names(&child);
            assert!(!names.contains(&"MCPX_TEST_SECRET".into()));
            assert!(names.contains(&"LC_TIME".into()));
            assert!(child.contains(&("TOKEN".into(), "hunter2".into())));
            // The server's own value replaces the inherited one rather than repeating it.
            assert_eq!(names.iter().filter(|n| *n == "PATH").count(), 1);
            assert!(child.contains(&("PATH".into(), "/opt/bin".into())));
        }

        #[test]
        fn a_sandboxed_child_gets_neither_proxies_nor_xdg_but_its_own_tmpdir() {
            std::env::set_var("XDG_RUNTIME_DIR", "/run/user/1");
            std::env::set_var("HTTPS_PROXY", "http://user:pw@proxy");
            let child = child("[servers.s]\ncommand = \"x\"\nenv = { K = \"v\" }\nsandbox = {}\n");
            let names = names(&child);
            assert!(!names.contains(&"XDG_RUNTIME_DIR".into()));
            assert!(!names.contains(&"HTTPS_PROXY".into()));
            assert!(names.contains(&"PATH".into()));
            assert!(child.contains(&("TMPDIR".into(), "/run/t".into())));
            assert!(child.contains(&("K".into(), "v".into())));
        }

        #[test]
        fn a_sandboxed_per_identity_child_has_its_private_directory_as_home() {
            let child = child(
                "[servers.s]\ncommand = \"x\"\ncredentials = \"per-identity\"\nsandbox = {}\n",
            );
            assert!(child.contains(&("HOME".into(), "/run/t".into())));
            assert_eq!(names(&child).iter().filter(|n| *n == "HOME").count(), 1);
        }

        #[test]
        fn an_unsandboxed_per_identity_child_gets_a_private_home_and_tmpdir_of_its_own() {
            let state = tempfile::tempdir().unwrap();
            let home = PersonHome::under(state.path(), "s@alice~0123").unwrap();
            let settings = Settings::from_environment(
                Config::parse("[servers.s]\ncommand = \"x\"\ncredentials = \"per-identity\"\n")
                    .unwrap(),
            );
            let expanded = settings.server("s").unwrap();
            let server = crate::config::ServerSettings {
                config: &settings.config.servers["s"],
                expanded: &expanded,
            };
            let child = for_child(server, None, Some(&home));
            let value = |name: &str| {
                let mut values = child.iter().filter(|(n, _)| n == name);
                let (_, value) = values.next().unwrap();
                assert!(values.next().is_none(), "{name} twice");
                std::path::PathBuf::from(value)
            };
            let (home, tmp) = (value("HOME"), value("TMPDIR"));
            assert!(home.starts_with(state.path()) && home.ends_with("s@alice~0123"));
            assert_eq!(tmp, home.join("tmp"));
            use std::os::unix::fs::PermissionsExt;
            for dir in [&home, &tmp] {
                let mode = std::fs::metadata(dir).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o700, "{}", dir.display());
            }
        }

        #[test]
        fn inherit_env_passes_everything() {
            std::env::set_var("MCPX_TEST_INHERITED", "yes");
            let child = child("[servers.s]\ncommand = \"x\"\ninheritEnv = true\n");
            assert!(names(&child).contains(&"MCPX_TEST_INHERITED".into()));
        }
    }
}
