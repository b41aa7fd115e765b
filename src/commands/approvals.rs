//! `mcpx approvals`: the calls that wait for your approval (`[approvals]`), in every mcpx
//! running on this configuration (the daemon and each `mcpx serve`), and your decision on one,
//! taken by the mcpx that holds it.

use crate::admin::protocol::{Command as AdminCommand, Reply};
use crate::cli::ApprovalsAction;
use crate::config::Config;
use std::process::ExitCode;

/// Runs `mcpx approvals ACTION`.
pub fn run(action: &ApprovalsAction, config: &Config) -> ExitCode {
    let running = crate::admin::running_sockets(&config.admin.socket);
    let outcome = match action {
        ApprovalsAction::List => Ok(list(&running)),
        ApprovalsAction::Approve { id } => decide(&running, id, true),
        ApprovalsAction::Deny { id } => decide(&running, id, false),
    };
    match outcome {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("mcpx approvals: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Every waiting call, a line each: what deciding it takes, who called what with what.
fn list(running: &[std::path::PathBuf]) -> String {
    use crate::view::printable as p;
    let mut text = String::new();
    for socket in running {
        let Ok(Reply::Snapshot(snapshot)) = crate::admin::ask(socket, &AdminCommand::Snapshot)
        else {
            continue;
        };
        for a in &snapshot.approvals {
            text.push_str(&format!(
                "{}  {} calls {} {} (arguments sha256 {}, waited {}s, refused in {}s)\n",
                p(&a.id),
                p(&a.caller),
                p(&a.tool),
                p(&a.arguments),
                &a.arguments_sha256[..a.arguments_sha256.len().min(12)],
                a.age_ms / 1000,
                a.ends_in_ms / 1000,
            ));
        }
    }
    match text.is_empty() {
        true => "no call waits for approval\n".to_owned(),
        false => text,
    }
}

/// Has the mcpx holding `id` approve or deny it.
fn decide(running: &[std::path::PathBuf], id: &str, approve: bool) -> Result<String, String> {
    let command = AdminCommand::DecideApproval {
        id: id.to_owned(),
        approve,
        via: "mcpx approvals".into(),
    };
    let mut refusals = Vec::new();
    for socket in running {
        match crate::admin::done(socket, &command) {
            Ok(message) => return Ok(format!("{message}\n")),
            Err(why) => refusals.push(why),
        }
    }
    match refusals.first() {
        None => Err("no mcpx is running".into()),
        Some(_) => Err(format!("no running mcpx holds a call waiting as {id}")),
    }
}
