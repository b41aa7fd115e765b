//! What mcpx takes from its own environment: `${VAR}` in configured values, and the variables a
//! child upstream gets. mcpx's environment may hold secrets meant for one server (expanded into
//! its `env` or `headers`), so a child gets only a small safe set plus what its own `env` says,
//! unless its `inheritEnv` asks for everything.

use crate::config::Server;
use std::ffi::OsString;

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

/// Expands `${VAR}` from mcpx's environment in a configured value.
pub fn expand(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or("an unclosed ${")?;
        let name = &rest[start + 2..start + end];
        out.push_str(
            &std::env::var(name)
                .map_err(|_| format!("${{{name}}} is not set in mcpx's environment"))?,
        );
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The whole environment a child upstream starts with.
pub fn for_child(server: &Server) -> Result<Vec<(OsString, OsString)>, String> {
    let mut variables: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| server.inherit_env || name.to_str().is_some_and(is_safe))
        .collect();
    for (name, value) in &server.env {
        let value = expand(value).map_err(|e| format!("env.{name}: {e}"))?;
        variables.retain(|(existing, _)| existing != name.as_str());
        variables.push((name.into(), value.into()));
    }
    Ok(variables)
}

fn is_safe(name: &str) -> bool {
    SAFE_VARIABLES.contains(&name) || SAFE_PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod every_revision {
    mod environment {
        use crate::config::Server;
        use crate::environment::{expand, for_child};
        use std::collections::BTreeMap;

        #[test]
        fn values_expand_the_environment() {
            std::env::set_var("MCPX_TEST_TOKEN", "s3cret");
            assert_eq!(
                expand("Bearer ${MCPX_TEST_TOKEN}").unwrap(),
                "Bearer s3cret"
            );
            assert!(expand("${MCPX_TEST_UNSET_VARIABLE}")
                .unwrap_err()
                .contains("MCPX_TEST_UNSET_VARIABLE"));
            assert!(expand("${UNCLOSED").is_err());
            assert_eq!(expand("plain").unwrap(), "plain");
        }

        fn names(server: &Server) -> Vec<String> {
            for_child(server)
                .unwrap()
                .into_iter()
                .map(|(name, _)| name.into_string().unwrap())
                .collect()
        }

        #[test]
        fn a_child_gets_the_safe_set_and_its_own_env_but_not_mcpx_secrets() {
            std::env::set_var("MCPX_TEST_SECRET", "hunter2");
            std::env::set_var("LC_TIME", "C");
            let server = Server {
                env: BTreeMap::from([
                    ("TOKEN".into(), "${MCPX_TEST_SECRET}".into()),
                    ("PATH".into(), "/opt/bin".into()),
                ]),
                ..Server::default()
            };
            let child = for_child(&server).unwrap();
            let names = names(&server);
            assert!(!names.contains(&"MCPX_TEST_SECRET".into()));
            assert!(names.contains(&"LC_TIME".into()));
            assert!(child.contains(&("TOKEN".into(), "hunter2".into())));
            // The server's own value replaces the inherited one rather than repeating it.
            assert_eq!(names.iter().filter(|n| *n == "PATH").count(), 1);
            assert!(child.contains(&("PATH".into(), "/opt/bin".into())));
        }

        #[test]
        fn inherit_env_passes_everything() {
            std::env::set_var("MCPX_TEST_INHERITED", "yes");
            let server = Server {
                inherit_env: true,
                ..Server::default()
            };
            assert!(names(&server).contains(&"MCPX_TEST_INHERITED".into()));
        }

        #[test]
        fn an_unset_variable_in_env_names_the_key() {
            let server = Server {
                env: BTreeMap::from([("K".into(), "${MCPX_TEST_NEVER_SET}".into())]),
                ..Server::default()
            };
            let error = for_child(&server).unwrap_err();
            assert!(
                error.contains("env.K") && error.contains("MCPX_TEST_NEVER_SET"),
                "{error}"
            );
        }
    }
}
