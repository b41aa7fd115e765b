//! `mcp-remote`, the stdio bridge editors without remote servers of their own run
//! (`npx -y mcp-remote URL`): mcpx speaks to remote servers itself, with their logins, so the
//! bridge becomes the `url` server it stood for, with its headers and transport.

use crate::config::{RemoteTransport, Server};
use std::collections::BTreeMap;

/// The remote server a bridge entry (`command`, `args`, its `env`) stands for, if it is one:
/// the server, and what of the bridge's options mcpx leaves behind.
pub(super) fn remote(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> Option<(Server, Vec<String>)> {
    let program = command.rsplit('/').next().unwrap_or(command);
    let rest = match program.trim_end_matches(".cmd") {
        "mcp-remote" => args,
        "npx" | "bunx" | "pnpx" => {
            let bridge = args.iter().position(|a| is_bridge(a))?;
            // Only the runner's own flags (`-y`) may come before it.
            args[..bridge]
                .iter()
                .all(|a| a.starts_with('-'))
                .then_some(())?;
            &args[bridge + 1..]
        }
        _ => return None,
    };
    let (url, options) = rest.split_first()?;
    url::Url::parse(url).ok()?;
    let mut server = Server {
        url: Some(url.clone()),
        ..Server::default()
    };
    let mut left = Vec::new();
    let mut options = options.iter();
    while let Some(option) = options.next() {
        match option.as_str() {
            "--header" => {
                let Some((name, value)) = options.next().and_then(|h| h.split_once(':')) else {
                    continue;
                };
                let value = with_env(value.trim(), env);
                server.headers.insert(name.trim().to_owned(), value);
            }
            "--transport" => match options.next().map(String::as_str) {
                Some("sse-only") => server.transport = RemoteTransport::Sse,
                Some("http-only") => server.transport = RemoteTransport::StreamableHttp,
                _ => {}
            },
            // Its own login's options: mcpx logs in itself (`mcpx auth login`).
            "--static-oauth-client-info"
            | "--static-oauth-client-metadata"
            | "--resource"
            | "--host"
            | "--auth-timeout" => {
                left.push(format!("{option} {}", options.next().map_or("", |v| v)));
            }
            "--allow-http" | "--debug" | "--silent" => {}
            other if other.parse::<u16>().is_ok() => {} // its login's callback port
            other => left.push(other.to_owned()),
        }
    }
    Some((server, left))
}

/// `mcp-remote` or `mcp-remote@VERSION`.
fn is_bridge(arg: &str) -> bool {
    arg == "mcp-remote" || arg.starts_with("mcp-remote@")
}

/// `value` with the bridge's own `${VAR}`s (its entry's `env`, which it expands in its
/// headers) put in; an unknown one is left for mcpx's environment.
fn with_env(value: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = value.to_owned();
    for (name, set) in env {
        out = out.replace(&format!("${{{name}}}"), set);
    }
    out
}

#[cfg(test)]
mod every_revision {
    mod import {
        use super::super::*;

        fn strings(words: &[&str]) -> Vec<String> {
            words.iter().map(|w| (*w).to_owned()).collect()
        }

        #[test]
        fn an_mcp_remote_bridge_becomes_its_remote_server() {
            let env = BTreeMap::from([("AUTH".to_owned(), "Bearer t0k".to_owned())]);
            let args = strings(&[
                "-y",
                "mcp-remote@0.1.29",
                "https://mcp.example.test/sse",
                "--header",
                "Authorization:${AUTH}",
                "--transport",
                "sse-only",
                "3334",
            ]);
            let (server, left) = remote("npx", &args, &env).unwrap();
            assert_eq!(server.url.as_deref(), Some("https://mcp.example.test/sse"));
            assert_eq!(server.headers["Authorization"], "Bearer t0k");
            assert_eq!(server.transport, RemoteTransport::Sse);
            assert!(left.is_empty(), "{left:?}");
            let direct = remote(
                "/usr/bin/mcp-remote",
                &strings(&["https://h.test/mcp"]),
                &env,
            );
            assert_eq!(direct.unwrap().0.url.as_deref(), Some("https://h.test/mcp"));
        }

        #[test]
        fn other_commands_are_not_bridges() {
            let none = BTreeMap::new();
            let files = strings(&["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]);
            assert!(remote("npx", &files, &none).is_none());
            // A package that only mentions it later is its own server.
            let later = strings(&["some-server", "mcp-remote", "https://h.test"]);
            assert!(remote("npx", &later, &none).is_none());
            assert!(remote("uvx", &strings(&["mcp-server-time"]), &none).is_none());
        }
    }
}
