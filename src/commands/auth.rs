//! `mcpx auth login | status | logout`: a person's logins to remote servers, kept in the
//! credentials file (`[auth] credentials`). A login tells a running mcpx at once, which restarts
//! the server with the new tokens; without one, supervision's next try picks them up.

use crate::admin::protocol::{Command as AdminCommand, Reply};
use crate::cli::AuthAction;
use crate::config::{Config, Server, ServerSettings, Settings};
use crate::net::client::fetch;
use crate::upstream::auth::login::{self, open_in_browser};
use crate::upstream::auth::store::{now_secs, person_of_key, Credential, Store};
use http::{HeaderMap, Method};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// Runs one `mcpx auth` command; `path` is the configuration file in use, if any.
pub fn run(action: &AuthAction, settings: &Settings, path: Option<&Path>) -> ExitCode {
    let config = &settings.config;
    let store = Store::configured(&config.auth);
    let outcome = match action {
        AuthAction::Login { name } => remote(config, name).and_then(|server| {
            let expanded = settings.server(name)?;
            let server = ServerSettings {
                config: server,
                expanded: &expanded,
            };
            smol::block_on(log_in(name, server, &store))?;
            tell_running_mcpx(config, path, name);
            Ok(())
        }),
        AuthAction::Status => status(config, &store),
        AuthAction::Logout {
            name,
            identity,
            issuer,
        } => key_of(&store, name, identity.as_deref(), issuer.as_deref())
            .and_then(|(key, whose)| smol::block_on(log_out(&key, &whose, &store))),
        AuthAction::Approve { code } => approve(config, code),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpx auth: {e}");
            ExitCode::FAILURE
        }
    }
}

/// How long `mcpx import` waits for a remote server to say whether it needs a login.
const PROBE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// For `mcpx import`: a sentence for each remote server that answers without a token by asking
/// for a login, or that could not be asked (all asked at once, each for a few seconds).
pub fn logins_needed(servers: &BTreeMap<String, Server>) -> Vec<String> {
    let probes = servers.iter().filter_map(|(name, server)| {
        let url = server.remote_url()?.to_owned();
        let name = name.clone();
        Some(crate::runtime::spawn(async move {
            match crate::deadline::within(PROBE_PATIENCE, login::probe(&url)).await {
                Ok(Some(_)) => Some(format!(
                    "{name}: needs a login: run `mcpx auth login {name}` once it is configured"
                )),
                Ok(None) => None,
                Err(e) => Some(format!(
                    "{name}: could not ask whether it needs a login ({e})"
                )),
            }
        }))
    });
    let probes: Vec<_> = probes.collect();
    smol::block_on(async {
        let mut notes = Vec::new();
        for probe in probes {
            notes.extend(probe.await);
        }
        notes
    })
}

/// The configured remote server `name`.
fn remote<'c>(config: &'c Config, name: &str) -> Result<&'c Server, String> {
    match config.servers.get(name) {
        Some(server) if server.kind().is_remote() => Ok(server),
        Some(_) => Err(format!(
            "{name:?} is a command server: only `url` servers log in"
        )),
        None => Err(format!("no server {name:?} in [servers]")),
    }
}

async fn log_in(name: &str, server: ServerSettings<'_>, store: &Store) -> Result<(), String> {
    let url = server.remote_url().unwrap_or_default();
    let challenge = login::probe(url).await?.unwrap_or_default();
    let previous = store.get(name).filter(|c| c.server_url == url);
    let credential =
        login::login(name, server, &challenge, previous.as_ref(), open_in_browser).await?;
    let scope = credential
        .scope
        .clone()
        .unwrap_or_else(|| "no scope".into());
    store.put(name, Some(credential))?;
    eprintln!(
        "Logged in to {name} ({scope}); tokens kept in {}",
        store.path().display()
    );
    Ok(())
}

/// Asks every running mcpx on this configuration (the daemon, and each `mcpx serve` beside it)
/// to start the server again now, with the new tokens.
fn tell_running_mcpx(config: &Config, path: Option<&Path>, name: &str) {
    let ours = path.map(|p| p.display().to_string());
    let restart = AdminCommand::RestartUpstream {
        name: name.to_owned(),
    };
    let told = crate::admin::running_sockets(&config.admin.socket)
        .into_iter()
        .filter(
            |socket| match crate::admin::ask(socket, &AdminCommand::Snapshot) {
                Ok(Reply::Snapshot(snapshot)) => snapshot.config == ours,
                _ => false,
            },
        )
        .filter(|socket| matches!(crate::admin::ask(socket, &restart), Ok(Reply::Done { .. })))
        .count();
    match told {
        0 => eprintln!("No running mcpx to tell: it will use the login when it starts."),
        1 => eprintln!("The running mcpx is using the new login."),
        n => eprintln!("The {n} running mcpx processes are using the new login."),
    }
}

/// `mcpx auth approve CODE`: the daemon's consent page showing CODE may continue.
fn approve(config: &Config, code: &str) -> Result<(), String> {
    let command = AdminCommand::ApproveConsent {
        code: code.to_owned(),
    };
    let message = crate::admin::done(&config.admin.socket, &command)?;
    eprintln!("{message}");
    Ok(())
}

fn status(config: &Config, store: &Store) -> Result<(), String> {
    let credentials = store.load()?;
    for (name, server) in &config.servers {
        let Some(url) = server.remote_url() else {
            continue;
        };
        let own = credentials.get(name).filter(|c| c.server_url == url);
        println!("{name}: {}", described(own));
        // Each person's own login, by identity.
        for (key, credential) in &credentials {
            let Some((server, issuer, subject)) = person_of_key(key) else {
                continue;
            };
            if server == *name && credential.server_url == *url {
                println!("  {subject} ({issuer}): {}", described(Some(credential)));
            }
        }
    }
    Ok(())
}

/// A login's line: where, as which client, what it may do and until when (never a token).
fn described(credential: Option<&Credential>) -> String {
    let Some(credential) = credential else {
        return "not logged in".to_owned();
    };
    let expiry = match credential.expires_at {
        Some(at) if at <= now_secs() => "expired".to_owned(),
        Some(at) => format!("expires in {}s", at - now_secs()),
        None => "no expiry given".to_owned(),
    };
    let refresh = match credential.refresh_token {
        Some(_) => "refreshable",
        None => "not refreshable",
    };
    format!(
        "logged in at {} as client {}; scopes: {}; {expiry}, {refresh}",
        credential.issuer,
        credential.client_id,
        credential.scope.as_deref().unwrap_or("-")
    )
}

/// The store's key of the login to forget, and whose it is in words: the server's own, or the
/// person `identity`'s (of `issuer`, needed only where two providers' people share a subject).
fn key_of(
    store: &Store,
    name: &str,
    identity: Option<&str>,
    issuer: Option<&str>,
) -> Result<(String, String), String> {
    let Some(identity) = identity else {
        return Ok((name.to_owned(), name.to_owned()));
    };
    let keys: Vec<_> = (store.load()?.into_keys())
        .filter_map(|key| person_of_key(&key).map(|named| (key, named)))
        .filter(|(_, (server, from, subject))| {
            server == name && subject == identity && issuer.is_none_or(|i| i == from)
        })
        .collect();
    match keys.as_slice() {
        [] => Err(format!("{identity} has no login of their own to {name:?}")),
        [(key, (_, from, _))] => Ok((key.clone(), format!("{name} for {identity} ({from})"))),
        _ => Err(format!("{identity} has logins to {name:?} from several identity providers: name one with --issuer")),
    }
}

/// Forgets the login kept under `key` (`whose`, in words), revoking it first where it can be.
async fn log_out(key: &str, whose: &str, store: &Store) -> Result<(), String> {
    let Some(credential) = store.get(key) else {
        return Err(format!("not logged in to {whose:?}"));
    };
    if let Some(endpoint) = &credential.revocation_endpoint {
        // RFC 7009: the refresh token first, since revoking it ends the access tokens too.
        let token = credential
            .refresh_token
            .as_deref()
            .unwrap_or(&credential.access_token);
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token)
            .append_pair("client_id", &credential.client_id);
        let body = form.finish();
        let revoked = fetch(
            Method::POST,
            endpoint,
            HeaderMap::new(),
            Some(("application/x-www-form-urlencoded", body)),
        )
        .await;
        if let Err(e) = revoked {
            eprintln!("(revoking at {endpoint} failed: {e}; forgetting the tokens anyway)");
        }
    }
    store.put(key, None)?;
    eprintln!("Logged out of {whose}.");
    Ok(())
}
