//! `mcpx import`: editors' MCP server configurations as `[servers.*]` tables.
//!
//! Claude Desktop and Cursor keep servers under `mcpServers`; VS Code under `servers` in
//! `.vscode/mcp.json`, or under `mcp.servers` in its user `settings.json` (which allows comments
//! and trailing commas, so files are read as JSONC). What mcpx cannot carry over (VS Code's
//! `${input:…}` prompts, `envFile`) is reported, never silently dropped. Remote servers come with
//! their transport (`"type": "sse"` is HTTP+SSE; Windsurf's `serverUrl` is a `url`), an
//! `mcp-remote` bridge as the remote server it stood for ([`bridge`]), and the command then
//! asks each whether it needs a login, and says so. No credential is carried over in plain
//! text ([`credentials`]); mcpx's own entry in the editor's file is left where it is.

mod bridge;
mod credentials;

pub use credentials::{Keep, Secret};

use crate::config::{Config, RemoteTransport, Server, BUILTIN_SERVER};
use crate::json::Member;
use credentials::Taking;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The converted servers, the credentials taken out of them, and what could not be converted.
#[derive(Debug, Default, PartialEq)]
pub struct Imported {
    /// Converted servers by name.
    pub servers: BTreeMap<String, Server>,
    /// By server: the credentials its placeholders name, to be kept before it is configured.
    pub secrets: BTreeMap<String, Vec<Secret>>,
    /// One sentence per thing left out or needing a hand.
    pub notes: Vec<String>,
}

/// Converts an editor's configuration file's text, each credential in it replaced by the
/// placeholder `keep` gives for its name. An error names the problem; nothing was converted
/// then.
pub fn import(text: &str, keep: Keep<'_>) -> Result<Imported, String> {
    let root: Value = jsonc_parser::parse_to_serde_value(text, &Default::default())
        .map_err(|e| format!("not JSON: {e}"))?;
    let servers = root
        .member("mcpServers")
        .or_else(|| root.member("servers"))
        .or_else(|| root.member("mcp").and_then(|m| m.member("servers")))
        .and_then(Value::as_object)
        .ok_or("no MCP servers found: expected `mcpServers` (Claude Desktop, Cursor), `servers` (.vscode/mcp.json) or `mcp.servers` (VS Code settings)")?;
    let mut imported = Imported::default();
    for (name, entry) in servers {
        let mut taking = Taking::new(name, keep);
        match convert(name, entry, &mut taking, &mut imported.notes) {
            Ok(Some(server)) => {
                imported.servers.insert(name.clone(), server);
                if !taking.taken.is_empty() {
                    imported.secrets.insert(name.clone(), taking.taken);
                }
            }
            // mcpx's own entry: the editor launches mcpx, which is what it should go on doing.
            Ok(None) => {}
            Err(why) => imported.notes.push(format!("{name}: not imported: {why}")),
        }
    }
    Ok(imported)
}

/// One entry as a server, or `None` when it is mcpx itself.
fn convert(
    name: &str,
    entry: &Value,
    taking: &mut Taking<'_>,
    notes: &mut Vec<String>,
) -> Result<Option<Server>, String> {
    let entry = entry.as_object().ok_or("not an object")?;
    let command = match entry.member("command") {
        None => None,
        Some(command) => Some(command.as_str().ok_or("`command` is not a string")?),
    };
    if command.is_some_and(is_mcpx) {
        return Ok(None);
    }
    if name == BUILTIN_SERVER {
        return Err(format!(
            "the name {BUILTIN_SERVER:?} is mcpx's own; import it under another name"
        ));
    }
    if entry.member("envFile").is_some() {
        notes.push(format!(
            "{name}: envFile is not carried over; copy its variables into `env`"
        ));
    }
    let strings = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match entry.member(key) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    v.as_str()
                        .map(|v| (k.clone(), v.to_owned()))
                        .ok_or(format!("`{key}.{k}` is not a string"))
                })
                .collect(),
            Some(_) => Err(format!("`{key}` is not an object")),
        }
    };
    let mut server = if let Some(command) = command {
        let args: Vec<String> = match entry.member("args") {
            None => Vec::new(),
            Some(Value::Array(args)) => args
                .iter()
                .map(|a| {
                    a.as_str()
                        .map(str::to_owned)
                        .ok_or("an argument is not a string")
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`args` is not a list".into()),
        };
        let env = strings("env")?;
        if let Some((server, left)) = bridge::remote(command, &args, &env) {
            let url = server.remote_url().unwrap_or_default();
            let mut said = format!("{name}: was an mcp-remote bridge; mcpx reaches {url} itself (if it asks for a login: `mcpx auth login {name}`)");
            if !left.is_empty() {
                said.push_str(&format!("; left behind: {}", left.join(" ")));
            }
            notes.push(said);
            server
        } else {
            Server {
                command: Some(command.to_owned()),
                args: taking.args(args),
                env: env
                    .into_iter()
                    .map(|(k, v)| (k.clone(), taking.env(&k, v)))
                    .collect(),
                cwd: entry.member("cwd").and_then(Value::as_str).map(Into::into),
                ..Server::default()
            }
        }
    } else if let Some(url) = entry.member("url").or_else(|| entry.member("serverUrl")) {
        let mut server = Server {
            url: Some(url.as_str().ok_or("`url` is not a string")?.to_owned()),
            headers: strings("headers")?.into_iter().collect(),
            ..Server::default()
        };
        let kind = entry.member("type").or_else(|| entry.member("transport"));
        if kind.and_then(Value::as_str) == Some("sse") {
            server.transport = RemoteTransport::Sse;
        }
        server
    } else {
        return Err("neither `command` nor `url`".into());
    };
    if let Some(url) = server.url.take() {
        let (url, basic) = taking.url(&url)?;
        server.url = Some(url);
        let headers = std::mem::take(&mut server.headers);
        server.headers = (headers.into_iter())
            .map(|(k, v)| (k.clone(), taking.header(&k, v)))
            .collect();
        if let Some(basic) = basic {
            server
                .headers
                .entry("Authorization".into())
                .or_insert(basic);
        }
    }
    if mentions_editor_variable(entry) {
        notes.push(format!("{name}: uses editor variables like ${{input:…}} or ${{workspaceFolder}}; replace them with values by hand"));
    }
    Ok(Some(server))
}

/// Whether `command` launches mcpx (`mcpx`, its path, or this very program).
fn is_mcpx(command: &str) -> bool {
    let program = std::path::Path::new(command);
    let this = std::env::current_exe().ok();
    program.file_name().is_some_and(|n| n == "mcpx") || this.is_some_and(|this| this == program)
}

fn mentions_editor_variable(entry: &Map<String, Value>) -> bool {
    let shown = Value::Object(entry.clone()).to_string();
    [
        "${input:",
        "${workspaceFolder",
        "${userHome",
        "${config:",
        "${command:",
    ]
    .iter()
    .any(|v| shown.contains(v))
}

/// The `[servers.*]` tables as TOML text.
pub fn to_toml(servers: &BTreeMap<String, Server>) -> String {
    #[derive(Serialize)]
    struct Tables<'a> {
        servers: &'a BTreeMap<String, Server>,
    }
    toml::to_string(&Tables { servers }).unwrap_or_default()
}

/// A configuration with imported servers added.
#[derive(Debug, PartialEq)]
pub struct Merged {
    /// The configuration's text, with them.
    pub text: String,
    /// The servers added, by name.
    pub added: Vec<String>,
    /// Each one left out, and why.
    pub skipped: Vec<(String, String)>,
}

/// `existing` (a configuration file's text) with those of `servers` it has no name for
/// appended; or why nothing can be: a configuration that does not load, or a result that would
/// not. Nothing is written on an error.
pub fn merge(existing: &str, servers: &BTreeMap<String, Server>) -> Result<Merged, String> {
    let current = Config::parse(existing).map_err(|(line, message)| {
        format!("the configuration does not load (line {line}): {message}")
    })?;
    let (taken, new): (BTreeMap<_, _>, BTreeMap<_, _>) = servers
        .iter()
        .map(|(name, server)| (name.clone(), server.clone()))
        .partition(|(name, _)| current.servers.contains_key(name));
    let skipped = taken
        .into_keys()
        .map(|name| {
            let why = format!("already configured in [servers.{name}]; remove that or rename this one in the editor's file to import it");
            (name, why)
        })
        .collect();
    let mut text = existing.to_owned();
    if !new.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&to_toml(&new));
    }
    Config::parse(&text).map_err(|(line, message)| {
        format!("the merged configuration would not load (line {line}): {message}")
    })?;
    Ok(Merged {
        text,
        added: new.into_keys().collect(),
        skipped,
    })
}

#[cfg(test)]
mod every_revision {
    mod import {
        use crate::config::{Config, RemoteTransport, ServerKind};
        use crate::import::{import as import_with, merge, to_toml, Imported};

        fn keyring(name: &str) -> String {
            format!("${{keyring:{name}}}")
        }

        fn import(text: &str) -> Result<Imported, String> {
            import_with(text, &keyring)
        }

        #[test]
        fn claude_desktop_servers_convert() {
            let imported = import(r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "1"}}}}"#).unwrap();
            let files = &imported.servers["files"];
            assert!(matches!(files.kind(), ServerKind::Stdio(s) if s.command == "npx"));
            assert_eq!(files.args.len(), 3);
            assert!(imported.notes.is_empty());
            let config = Config::parse(&to_toml(&imported.servers)).unwrap();
            assert_eq!(config.servers["files"], *files);
        }

        #[test]
        fn vscode_mcp_json_with_comments_converts_and_reports_what_it_cannot() {
            let text = r#"{
              // VS Code allows comments and trailing commas
              "inputs": [{"id": "key", "type": "promptString"}],
              "servers": {
                "time": {"type": "stdio", "command": "mcp-server-time", "envFile": "${workspaceFolder}/.env",},
                "remote": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${input:key}"}},
                "old": {"type": "sse", "url": "https://example.test/sse"},
              },
            }"#;
            let imported = import(text).unwrap();
            assert_eq!(
                imported.servers.keys().collect::<Vec<_>>(),
                vec!["old", "remote", "time"]
            );
            assert_eq!(imported.servers["old"].transport, RemoteTransport::Sse);
            assert_eq!(imported.servers["remote"].transport, RemoteTransport::Auto);
            let notes = imported.notes.join("\n");
            assert!(notes.contains("envFile"), "{notes}");
            assert!(notes.contains("remote: uses editor variables"), "{notes}");
        }

        #[test]
        fn vscode_settings_and_cursor_shapes_convert() {
            assert!(import(r#"{"mcp": {"servers": {"a": {"command": "x"}}}}"#)
                .unwrap()
                .servers
                .contains_key("a"));
            assert!(import(r#"{"mcpServers": {"b": {"url": "https://h/mcp"}}}"#)
                .unwrap()
                .servers
                .contains_key("b"));
            let windsurf = import(r#"{"mcpServers": {"w": {"serverUrl": "https://h/sse"}}}"#);
            let windsurf = &windsurf.unwrap().servers["w"];
            assert_eq!(windsurf.url.as_deref(), Some("https://h/sse"));
        }

        #[test]
        fn a_broken_file_names_the_problem() {
            assert!(import("{\"mcpServers\": ")
                .unwrap_err()
                .contains("not JSON"));
            assert!(import("{}").unwrap_err().contains("no MCP servers"));
        }

        #[test]
        fn merge_refuses_a_name_already_configured_and_keeps_the_rest() {
            let imported = import(r#"{"mcpServers": {"time": {"command": "t"}}}"#).unwrap();
            let existing = "# my settings\n[transport]\nstdioDrain = \"1s\"\n";
            let merged = merge(existing, &imported.servers).unwrap();
            assert!(merged.text.starts_with(existing));
            assert_eq!(merged.added, ["time"]);
            let config = Config::parse(&merged.text).unwrap();
            assert!(config.servers.contains_key("time"));
            let both =
                import(r#"{"mcpServers": {"time": {"command": "t2"}, "new": {"command": "n"}}}"#);
            let again = merge(&merged.text, &both.unwrap().servers).unwrap();
            assert_eq!(again.added, ["new"]);
            assert_eq!(again.skipped.len(), 1);
            assert_eq!(again.skipped[0].0, "time");
            assert!(
                again.skipped[0].1.contains("already configured"),
                "{again:?}"
            );
            let config = Config::parse(&again.text).unwrap();
            assert_eq!(config.servers["time"].command.as_deref(), Some("t"));
        }

        #[test]
        fn no_credential_is_carried_over_in_plain_text() {
            let text = r#"{"mcpServers": {
                "gh": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret1", "LOG": "info"}},
                "api": {"url": "https://h.test/mcp", "headers": {"Authorization": "Bearer sekrit2", "Accept": "x"}}
            }}"#;
            let imported = import(text).unwrap();
            let shown = to_toml(&imported.servers);
            assert!(
                !shown.contains("ghp_secret1") && !shown.contains("sekrit2"),
                "{shown}"
            );
            assert!(
                shown.contains("${keyring:gh-GITHUB_PERSONAL_ACCESS_TOKEN}"),
                "{shown}"
            );
            assert!(
                shown.contains("Bearer ${keyring:api-Authorization}"),
                "{shown}"
            );
            assert_eq!(imported.servers["gh"].env["LOG"], "info");
            let kept: Vec<_> = imported
                .secrets
                .values()
                .flatten()
                .map(|s| s.value.as_str())
                .collect();
            assert_eq!(kept, ["sekrit2", "ghp_secret1"]);
        }

        #[test]
        fn mcpxs_own_entry_is_left_out_without_a_word() {
            let text = r#"{"mcpServers": {"mcpx": {"command": "/usr/bin/mcpx", "args": ["serve"]},
                "gateway": {"command": "mcpx", "args": ["serve"]}, "t": {"command": "t"}}}"#;
            let imported = import(text).unwrap();
            assert_eq!(imported.servers.keys().collect::<Vec<_>>(), ["t"]);
            assert!(imported.notes.is_empty(), "{:?}", imported.notes);
            // Another server under mcpx's name is named for what to do.
            let other = import(r#"{"mcpServers": {"mcpx": {"command": "other"}}}"#).unwrap();
            assert!(other.notes[0].contains("another name"), "{:?}", other.notes);
        }

        #[test]
        fn an_mcp_remote_entry_becomes_a_remote_server_with_its_header_kept_out() {
            let text = r#"{"mcpServers": {"linear": {"command": "npx",
                "args": ["-y", "mcp-remote", "https://mcp.linear.test/sse", "--header", "Authorization:${AUTH}"],
                "env": {"AUTH": "Bearer lin_api_1"}}}}"#;
            let imported = import(text).unwrap();
            let linear = &imported.servers["linear"];
            assert_eq!(linear.url.as_deref(), Some("https://mcp.linear.test/sse"));
            assert_eq!(linear.command, None);
            assert_eq!(
                linear.headers["Authorization"],
                "Bearer ${keyring:linear-Authorization}"
            );
            assert_eq!(imported.secrets["linear"][0].value, "lin_api_1");
            assert!(
                imported.notes[0].contains("mcpx auth login linear"),
                "{:?}",
                imported.notes
            );
        }
    }
}
