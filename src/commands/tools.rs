//! `mcpx tools` and `mcpx call`: the catalog and one call, from the daemon running on the same
//! configuration when there is one (its server processes, its policies and audit log, as an
//! editor's `mcpx serve` gets), else from servers started for the command (`--standalone`).

use crate::admin::protocol::{Command as AdminCommand, Reply};
use crate::config::Config;
use crate::gateway::{Gateway, ViewId};
use crate::json::Member;
use crate::outbox;
use crate::transport::local::Attach;
use crate::view::ServerTools;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The daemon's catalog, if a daemon runs on the configuration at `path`.
pub fn daemons_tools(config: &Config, path: Option<&Path>) -> Option<Vec<ServerTools>> {
    let socket = &config.admin.socket;
    let Ok(Reply::Snapshot(snapshot)) = crate::admin::ask(socket, &AdminCommand::Snapshot) else {
        return None;
    };
    let ours = path.map(|p| p.display().to_string());
    if snapshot.config != ours {
        let theirs = snapshot.config.as_deref().unwrap_or("no file");
        say("tools", &format!("the daemon on {} runs another configuration ({theirs}); starting servers of its own", socket.display()));
        return None;
    }
    match crate::admin::ask(socket, &AdminCommand::Tools) {
        Ok(Reply::Tools(servers)) => Some(servers),
        _ => None,
    }
}

/// The catalog of servers started in-process.
pub async fn own_tools(gateway: &Gateway) -> Vec<ServerTools> {
    gateway.settle().await;
    gateway.tools_by_server()
}

/// Prints `servers` for people: each server's name, state and revision, then its tools.
pub fn print(servers: &[ServerTools]) {
    for server in servers {
        match &server.server {
            None => println!("mcpx (built-in)"),
            Some(name) => {
                let revision = server.revision.as_deref().unwrap_or("-");
                println!("{name} [{}, revision {revision}]", server.state);
            }
        }
        for (name, description) in &server.tools {
            println!("  {name}  {description}");
        }
    }
}

/// `tool`'s result, called through the daemon on this configuration; `None` when no daemon
/// takes it (then the caller starts servers of its own).
pub fn daemons_call(
    config: &Config,
    path: Option<&Path>,
    tool: &str,
    arguments: &Value,
) -> Option<Result<Value, String>> {
    let who = Attach::this_process(path, None);
    let stream = match crate::attach::attach(&config.local_socket(), &who) {
        Ok(stream) => stream,
        Err(e) => {
            if !e.may_pass() {
                say("call", &format!("{e}; starting servers of its own"));
            }
            return None;
        }
    };
    Some(call_over(stream, tool, arguments))
}

/// One call over an attached session: `initialize`, then `tools/call`, its answer.
fn call_over(stream: UnixStream, tool: &str, arguments: &Value) -> Result<Value, String> {
    let broken = |e: std::io::Error| format!("the daemon's connection broke: {e}");
    let mut session = Session {
        reader: BufReader::new(stream.try_clone().map_err(broken)?),
        writer: stream,
    };
    let hello = json!({"protocolVersion": crate::protocol::Revision::LATEST_LEGACY.as_str(),
        "capabilities": {}, "clientInfo": {"name": "mcpx call", "version": env!("CARGO_PKG_VERSION")}});
    session.ask(0, "initialize", hello)?;
    session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    session.ask(
        1,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// A session with the daemon, as JSON lines.
struct Session {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Session {
    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        (self.writer.write_all(&line)).map_err(|e| format!("the daemon's connection broke: {e}"))
    }

    /// Request `id`'s result (its error said as `message (code)`). What the daemon asks in
    /// between (a server's question) is refused: nobody is here to answer it.
    fn ask(&mut self, id: i64, method: &str, params: Value) -> Result<Value, String> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return Err("the daemon closed the connection before it answered".into()),
                Ok(_) => {}
                Err(e) => return Err(format!("the daemon's connection broke: {e}")),
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let (Some(asked), Some(_)) = (message.member("id"), message.member("method")) {
                let refusal = json!({"jsonrpc": "2.0", "id": asked, "error": {"code": crate::jsonrpc::METHOD_NOT_FOUND, "message": "mcpx call answers no questions"}});
                self.send(&refusal)?;
                continue;
            }
            if message.member("id") != Some(&json!(id)) {
                continue;
            }
            return match message.member("error") {
                Some(error) => Err(format!(
                    "{} ({})",
                    error["message"].as_str().unwrap_or("error"),
                    error["code"]
                )),
                None => Ok(message.member("result").cloned().unwrap_or(Value::Null)),
            };
        }
    }
}

/// `tool`'s result, called in-process as the local owner.
pub async fn own_call(
    gateway: &Arc<Gateway>,
    tool: &str,
    arguments: Value,
) -> Result<Value, String> {
    let outbound = outbox::Sender::nowhere();
    let client = gateway.open_client("cli", ViewId::EVERYTHING, outbound.clone());
    let request = crate::jsonrpc::Request {
        id: crate::jsonrpc::Id::Number(1),
        method: crate::protocol::Method::ToolsCall.as_str().into(),
        params: Some(json!({"name": tool, "arguments": arguments})),
    };
    client.set_revision(crate::protocol::Revision::LATEST_LEGACY);
    let owner = Arc::new(crate::access::Identity::of_kind(
        crate::access::Kind::LocalOwner,
    ));
    let context =
        crate::gateway::RequestContext::new(crate::cancel::Cancel::new(), outbound, owner);
    let response = gateway.handle(&client, request, &context).await;
    gateway.close_client(&client);
    response
        .outcome
        .map_err(|e| format!("{} ({})", e.message, e.code))
}

/// Prints a call's result; how the command ends: non-zero on a tool error.
pub fn print_result(result: &Value) -> ExitCode {
    println!(
        "{}",
        serde_json::to_string_pretty(result).unwrap_or_default()
    );
    match result.member("isError") == Some(&json!(true)) {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    }
}

fn say(command: &str, line: &str) {
    eprintln!("mcpx {command}: {line}");
}

/// `mcpx call`'s `--args`, which must be JSON.
pub(super) fn call_arguments(args: &str) -> Result<Value, String> {
    serde_json::from_str(args).map_err(|e| format!("--args is not JSON: {e}"))
}
