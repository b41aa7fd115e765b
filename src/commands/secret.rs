//! `mcpx secret`: the secrets `${keyring:NAME}` reads, kept in the desktop's keyring. A secret
//! is read from standard input, never from the command line (where `ps` shows it to every
//! user), and no command prints one. After a change every running mcpx reloads, which restarts
//! exactly the servers whose expanded values changed: those that name the secret.

use crate::admin::protocol::Command as AdminCommand;
use crate::cli::SecretAction;
use crate::config::Config;
use crate::keyring::{Keyring, SECRETS};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::process::ExitCode;

/// Runs `mcpx secret ACTION`.
pub fn run(action: &SecretAction, config: &Config) -> ExitCode {
    let outcome = smol::block_on(async {
        let keyring = Keyring::connect().await?;
        match action {
            SecretAction::Set { name } => {
                check_name(name)?;
                let value = read_secret(name)?;
                keyring.set(SECRETS, name, &value).await?;
                Ok(format!("kept {name}\n{}", reload_running(config)))
            }
            SecretAction::Rm { name } => match keyring.remove(SECRETS, name).await? {
                true => Ok(format!("forgot {name}\n{}", reload_running(config))),
                false => Err(format!("the keyring holds no secret {name}")),
            },
            SecretAction::List => Ok(list(&keyring.names(SECRETS).await?, config)),
        }
    });
    match outcome {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("mcpx secret: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A name `${keyring:NAME}` can say: no `}` to end the placeholder early, nothing invisible.
fn check_name(name: &str) -> Result<(), String> {
    let fits = |c: char| c.is_ascii_alphanumeric() || "-_.@/".contains(c);
    match !name.is_empty() && name.chars().all(fits) {
        true => Ok(()),
        false => Err(format!(
            "{:?} is not a secret's name: use letters, digits and - _ . @ /",
            crate::view::printable(name)
        )),
    }
}

/// The secret from standard input: typed without echo on a terminal, else the whole input
/// without its final line break.
fn read_secret(name: &str) -> Result<String, String> {
    let stdin = std::io::stdin();
    let text = if stdin.is_terminal() {
        let typed = read_without_echo(&stdin, &format!("{name}: "));
        eprintln!();
        typed?
    } else {
        let mut text = String::new();
        stdin
            .lock()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the secret from standard input: {e}"))?;
        text
    };
    let value = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text);
    match value.is_empty() {
        true => Err("the secret is empty".into()),
        false => Ok(value.to_owned()),
    }
}

/// One line from the terminal, asked for with `prompt` once its echo is off (so that nothing
/// typed after the prompt shows), the echo restored after.
fn read_without_echo(stdin: &std::io::Stdin, prompt: &str) -> Result<String, String> {
    use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
    let saved = tcgetattr(stdin).map_err(|e| e.to_string())?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    tcsetattr(stdin, OptionalActions::Flush, &quiet).map_err(|e| e.to_string())?;
    eprint!("{prompt}");
    let mut line = String::new();
    let read = stdin.read_line(&mut line);
    let restored = tcsetattr(stdin, OptionalActions::Flush, &saved);
    read.map_err(|e| e.to_string())?;
    restored.map_err(|e| e.to_string())?;
    Ok(line)
}

/// Each secret the keyring holds and the servers naming it, then each the servers name that
/// it lacks.
fn list(held: &[String], config: &Config) -> String {
    let named = names_by_secret(config);
    let mut text = String::new();
    for name in held {
        let users = named.get(name).map_or(String::new(), |s| s.join(", "));
        text.push_str(&format!("{name:<24} {users}\n"));
    }
    for (name, users) in named.iter().filter(|(name, _)| !held.contains(name)) {
        text.push_str(&format!("{name:<24} {} (missing)\n", users.join(", ")));
    }
    if text.is_empty() {
        text.push_str("the keyring holds no secret for mcpx\n");
    }
    text
}

/// For each `${keyring:NAME}` in `[servers]`, the servers that name it.
fn names_by_secret(config: &Config) -> BTreeMap<String, Vec<String>> {
    let mut named: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (server, settings) in &config.servers {
        let text = serde_json::to_string(settings).unwrap_or_default();
        for rest in text.split("${keyring:").skip(1) {
            if let Some((name, _)) = rest.split_once('}') {
                let users = named.entry(name.to_owned()).or_default();
                if !users.contains(server) {
                    users.push(server.clone());
                }
            }
        }
    }
    named
}

/// Has every running mcpx reload, so that the servers using a changed secret restart; what
/// each said.
fn reload_running(config: &Config) -> String {
    let running = crate::admin::running_sockets(&config.admin.socket);
    if running.is_empty() {
        return "no mcpx is running: the next one to start reads it\n".into();
    }
    let mut text = String::new();
    for socket in running {
        let said = crate::admin::done(&socket, &AdminCommand::Reload)
            .unwrap_or_else(|why| format!("not reloaded: {why}"));
        text.push_str(&format!("{}: {said}\n", socket.display()));
    }
    text
}
