//! `mcpx status` and `mcpx reload`: a running mcpx asked over its admin socket.

use std::path::Path;
use std::process::ExitCode;

/// `mcpx reload`: asks the daemon to re-read its configuration. A file it refuses exits 2, as
/// `mcpx` itself does on a file it cannot use.
pub(super) fn reload(socket: &Path) -> ExitCode {
    use crate::admin::protocol::{Command, Refusal, Reply};
    match crate::admin::ask(socket, &Command::Reload) {
        Ok(Reply::Done { message }) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Ok(Reply::Error { message, kind }) => {
            eprintln!("mcpx reload: {message}");
            match kind {
                Refusal::InvalidConfig => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
        Ok(other) => {
            eprintln!("mcpx reload: unexpected reply: {other:?}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("mcpx reload: no mcpx answers on {} ({e})", socket.display());
            ExitCode::FAILURE
        }
    }
}

/// `mcpx status`: one snapshot from the admin socket, as text or JSON.
pub(super) fn status(json: bool, socket: &Path) -> ExitCode {
    use crate::admin::protocol::{Command as AdminCommand, Reply};
    match crate::admin::ask(socket, &AdminCommand::Snapshot) {
        Ok(Reply::Snapshot(snapshot)) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&snapshot).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(Reply::Snapshot(snapshot)) => {
            print!("{}", crate::admin::describe(&snapshot));
            ExitCode::SUCCESS
        }
        Ok(other) => {
            eprintln!("mcpx status: unexpected reply: {other:?}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("mcpx status: no mcpx answers on {} ({e}); is the daemon running? (systemctl --user status mcpx)", socket.display());
            ExitCode::FAILURE
        }
    }
}
