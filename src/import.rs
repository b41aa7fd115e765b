//! `mcpx import`: editors' MCP server configurations as `[servers.*]` tables.
//!
//! Claude Desktop and Cursor keep servers under `mcpServers`; VS Code under `servers` in
//! `.vscode/mcp.json`, or under `mcp.servers` in its user `settings.json` (which allows comments
//! and trailing commas, so files are read as JSONC). What mcpx cannot carry over (VS Code's
//! `${input:…}` prompts, `envFile`) is reported, never silently dropped. Remote servers come with
//! their transport (`"type": "sse"` is HTTP+SSE; Windsurf's `serverUrl` is a `url`), and the
//! command then asks each whether it needs a login, and says so.

use crate::config::{Config, RemoteTransport, Server, BUILTIN_SERVER};
use crate::json::Member;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The converted servers, and what could not be converted.
#[derive(Debug, Default, PartialEq)]
pub struct Imported {
    /// Converted servers by name.
    pub servers: BTreeMap<String, Server>,
    /// One sentence per thing left out or needing a hand.
    pub notes: Vec<String>,
}

/// Converts an editor's configuration file's text. An error names the problem; nothing was
/// converted then.
pub fn import(text: &str) -> Result<Imported, String> {
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
        match convert(name, entry, &mut imported.notes) {
            Ok(server) => {
                imported.servers.insert(name.clone(), server);
            }
            Err(why) => imported.notes.push(format!("{name}: not imported: {why}")),
        }
    }
    Ok(imported)
}

fn convert(name: &str, entry: &Value, notes: &mut Vec<String>) -> Result<Server, String> {
    let entry = entry.as_object().ok_or("not an object")?;
    if name == BUILTIN_SERVER {
        return Err(format!(
            "the name {BUILTIN_SERVER:?} is mcpx's own; rename it"
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
    let mut server = Server::default();
    if let Some(command) = entry.member("command") {
        server.command = Some(
            command
                .as_str()
                .ok_or("`command` is not a string")?
                .to_owned(),
        );
        server.args = match entry.member("args") {
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
        server.env = strings("env")?.into_iter().collect();
        server.cwd = entry.member("cwd").and_then(Value::as_str).map(Into::into);
    } else if let Some(url) = entry.member("url").or_else(|| entry.member("serverUrl")) {
        server.url = Some(url.as_str().ok_or("`url` is not a string")?.to_owned());
        server.headers = strings("headers")?.into_iter().collect();
        let kind = entry.member("type").or_else(|| entry.member("transport"));
        if kind.and_then(Value::as_str) == Some("sse") {
            server.transport = RemoteTransport::Sse;
        }
    } else {
        return Err("neither `command` nor `url`".into());
    }
    if mentions_editor_variable(entry) {
        notes.push(format!("{name}: uses editor variables like ${{input:…}} or ${{workspaceFolder}}; replace them with values by hand"));
    }
    Ok(server)
}

fn mentions_editor_variable(entry: &Map<String, Value>) -> bool {
    Value::Object(entry.clone()).to_string().contains("${")
}

/// The `[servers.*]` tables as TOML text.
pub fn to_toml(servers: &BTreeMap<String, Server>) -> String {
    #[derive(Serialize)]
    struct Tables<'a> {
        servers: &'a BTreeMap<String, Server>,
    }
    toml::to_string(&Tables { servers }).unwrap_or_default()
}

/// `existing` (a configuration file's text) with `servers` appended, or why not: a name that is
/// already configured, or a result that would not load. Nothing is written on an error.
pub fn merge(existing: &str, servers: &BTreeMap<String, Server>) -> Result<String, String> {
    let current = Config::parse(existing).map_err(|(line, message)| {
        format!("the configuration does not load (line {line}): {message}")
    })?;
    let taken: Vec<&String> = servers
        .keys()
        .filter(|name| current.servers.contains_key(*name))
        .collect();
    if !taken.is_empty() {
        return Err(format!(
            "already configured: {taken:?}; remove them from the import or the configuration first"
        ));
    }
    let mut merged = existing.to_owned();
    if !merged.is_empty() && !merged.ends_with('\n') {
        merged.push('\n');
    }
    merged.push_str(&to_toml(servers));
    Config::parse(&merged).map_err(|(line, message)| {
        format!("the merged configuration would not load (line {line}): {message}")
    })?;
    Ok(merged)
}

#[cfg(test)]
mod every_revision {
    mod import {
        use crate::config::{Config, Launch, RemoteTransport};
        use crate::import::{import, merge, to_toml};

        #[test]
        fn claude_desktop_servers_convert() {
            let imported = import(r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "1"}}}}"#).unwrap();
            let files = &imported.servers["files"];
            assert_eq!(files.launch(), Launch::Stdio("npx"));
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
            assert!(merged.starts_with(existing));
            assert!(Config::parse(&merged).unwrap().servers.contains_key("time"));
            assert!(merge(&merged, &imported.servers)
                .unwrap_err()
                .contains("already configured"));
        }
    }
}
