//! `mcpx import`: an editor's servers into mcpx's configuration, with no credential written
//! into it. Printed, each credential shows as the `${keyring:NAME}` it would be kept as;
//! with `--write`, each is kept in the desktop's keyring, or where none answers in a file only
//! its owner reads, before `config.toml` (rewritten 0600) names it.

use super::auth;
use crate::import::{Imported, Merged, Secret};
use crate::keyring::{Keyring, SECRETS};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// How long the keyring may take to say it is there: a machine without a desktop session says
/// so at once, or never.
const KEYRING_PATIENCE: Duration = Duration::from_secs(3);

/// Where the imported credentials are kept.
enum Store {
    Keyring(Keyring),
    /// A 0700 directory of 0600 files, one a secret, read by `${file:PATH}`.
    Files(PathBuf),
}

impl Store {
    /// The keyring, if one answers; else `secrets/` beside the configuration file.
    fn for_config(config: &Path) -> (Store, Option<String>) {
        match smol::block_on(Keyring::connect_within(KEYRING_PATIENCE)) {
            Ok(keyring) => (Store::Keyring(keyring), None),
            Err(why) => {
                let dir = config.parent().unwrap_or(Path::new(".")).join("secrets");
                (Store::Files(dir), Some(why))
            }
        }
    }

    fn placeholder(&self, name: &str) -> String {
        match self {
            Store::Keyring(_) => format!("${{keyring:{name}}}"),
            Store::Files(dir) => format!("${{file:{}}}", dir.join(name).display()),
        }
    }

    fn keep(&self, secret: &Secret) -> Result<(), String> {
        match self {
            Store::Keyring(keyring) => {
                smol::block_on(keyring.set(SECRETS, &secret.name, &secret.value))
            }
            Store::Files(dir) => {
                crate::private_file::write_whole(&dir.join(&secret.name), secret.value.as_bytes())
            }
        }
    }

    fn said(&self) -> String {
        match self {
            Store::Keyring(_) => "in the keyring".into(),
            Store::Files(dir) => format!("in files only you can read, in {}", dir.display()),
        }
    }
}

/// Runs `mcpx import FILE [--write]` against the configuration at `config` (else the default).
pub fn run(file: &Path, write: bool, config: Option<&Path>) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => return fail(format!("cannot read {}: {e}", file.display())),
    };
    if !write {
        let keyring = |name: &str| format!("${{keyring:{name}}}");
        let imported = match crate::import::import(&text, &keyring) {
            Ok(imported) => imported,
            Err(why) => return fail(format!("{}: {why}", file.display())),
        };
        report(&imported);
        for (server, secrets) in &imported.secrets {
            for Secret { name, place, .. } in secrets {
                say(&format!("{server}: {place} is a credential, shown as ${{keyring:{name}}}: `mcpx import --write` keeps it there (or `mcpx secret set {name}`)"));
            }
        }
        print!("{}", crate::import::to_toml(&imported.servers));
        return ExitCode::SUCCESS;
    }
    let Some(target) = config
        .map(Path::to_owned)
        .or_else(crate::config::default_path)
    else {
        return fail("no configuration directory; name the file with --config".into());
    };
    let (store, no_keyring) = Store::for_config(&target);
    let imported = match crate::import::import(&text, &|name| store.placeholder(name)) {
        Ok(imported) => imported,
        Err(why) => return fail(format!("{}: {why}", file.display())),
    };
    report(&imported);
    let existing = std::fs::read_to_string(&target).unwrap_or_default();
    let merged = match crate::import::merge(&existing, &imported.servers) {
        Ok(merged) => merged,
        Err(why) => return fail(format!("{}: {why}; nothing was written", target.display())),
    };
    for (name, why) in &merged.skipped {
        say(&format!("{name}: skipped: {why}"));
    }
    let kept = match keep_secrets(&store, &imported, &merged) {
        Ok(kept) => kept,
        Err(why) => return fail(format!("{why}; nothing was written")),
    };
    if let Err(why) = crate::private_file::write_whole(&target, merged.text.as_bytes()) {
        return fail(why);
    }
    let added = match merged.added.is_empty() {
        true => "added no server".to_owned(),
        false => format!("added {}", merged.added.join(", ")),
    };
    say(&format!(
        "{added} to {} (readable by you only)",
        target.display()
    ));
    if !kept.is_empty() {
        let why = no_keyring.map_or(String::new(), |why| format!(" ({why})"));
        say(&format!(
            "kept {} credential(s) {}{why}: {}",
            kept.len(),
            store.said(),
            kept.join(", ")
        ));
    }
    ExitCode::SUCCESS
}

/// Keeps the credentials of each server `merged` added; their names.
fn keep_secrets(
    store: &Store,
    imported: &Imported,
    merged: &Merged,
) -> Result<Vec<String>, String> {
    let mut kept = Vec::new();
    for name in &merged.added {
        for secret in imported.secrets.get(name).into_iter().flatten() {
            store
                .keep(secret)
                .map_err(|why| format!("cannot keep {name}'s {}: {why}", secret.place))?;
            kept.push(secret.name.clone());
        }
    }
    Ok(kept)
}

/// What the conversion noted, and which remote servers need a login.
fn report(imported: &Imported) {
    for note in imported
        .notes
        .iter()
        .chain(&auth::logins_needed(&imported.servers))
    {
        say(note);
    }
}

fn say(line: &str) {
    eprintln!("mcpx import: {line}");
}

fn fail(message: String) -> ExitCode {
    say(&message);
    ExitCode::from(2)
}
