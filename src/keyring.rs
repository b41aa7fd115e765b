//! The desktop's keyring: the freedesktop Secret Service (GNOME Keyring, KWallet, KeePassXC),
//! reached over the D-Bus session bus by `secret-service` on async-io, so on mcpx's own
//! executor. `${keyring:NAME}` reads from it, `mcpx secret` writes to it, and with
//! `[auth] credentialsStore = "keyring"` the upstream OAuth tokens live in it.
//!
//! An item is found by its attributes: `service` (mcpx's, or the tokens' own) and `username`
//! (the secret's name), the convention of the `keyring` crate and `secret-tool`, so
//! `secret-tool lookup service mcpx username NAME` reads what `mcpx secret set NAME` wrote.
//! No error here ever quotes a secret.

use crate::deadline::within;
use secret_service::{EncryptionType, Error, Item, SearchItemsResult, SecretService};
use std::collections::HashMap;
use std::time::Duration;

/// The `service` attribute of the secrets `${keyring:NAME}` names.
pub const SECRETS: &str = "mcpx";

/// How long the keyring may take to answer one question. A bus without a keyring says so at
/// once; this bounds one that hangs.
const PATIENCE: Duration = Duration::from_secs(5);

/// How long a locked keyring's unlock may take: the desktop asks its user for the password, who
/// needs longer than a machine; where nobody sees the prompt, this bounds the wait.
const UNLOCK_PATIENCE: Duration = Duration::from_secs(60);

/// A session with the keyring, encrypted end to end (Diffie-Hellman), as its own items are.
pub struct Keyring {
    service: SecretService<'static>,
}

impl Keyring {
    /// Opens a session; an error says that no keyring answers and why.
    pub async fn connect() -> Result<Keyring, String> {
        Keyring::connect_within(PATIENCE).await
    }

    /// As [`Keyring::connect`], giving up after `patience`: `credentialsStore = "auto"` asks
    /// briefly, so that a machine without a desktop session starts without waiting.
    pub async fn connect_within(patience: Duration) -> Result<Keyring, String> {
        let connect = async {
            SecretService::connect(EncryptionType::Dh)
                .await
                .map_err(explain)
        };
        let service = within(patience, connect)
            .await
            .map_err(|reason| format!("no keyring answers on the session bus: {reason}"))?;
        Ok(Keyring { service })
    }

    /// The secret `name` of `service`, if it holds one. A locked item is unlocked first, which
    /// may ask the desktop's user.
    pub async fn get(&self, service: &str, name: &str) -> Result<Option<String>, String> {
        let found = within(PATIENCE, self.search(attributes(service, name))).await?;
        let item = match (found.unlocked.first(), found.locked.first()) {
            (Some(item), _) => item,
            (None, Some(item)) => {
                let unlock = async { item.unlock().await.map_err(explain) };
                within(UNLOCK_PATIENCE, unlock).await?;
                item
            }
            (None, None) => return Ok(None),
        };
        let secret = within(PATIENCE, async { item.get_secret().await.map_err(explain) }).await?;
        String::from_utf8(secret)
            .map(Some)
            .map_err(|_| format!("the keyring's {service}/{name} is not text"))
    }

    /// Keeps `value` as the secret `name` of `service`, replacing what it held.
    pub async fn set(&self, service: &str, name: &str, value: &str) -> Result<(), String> {
        let collection = within(PATIENCE, async {
            self.service.get_any_collection().await.map_err(explain)
        })
        .await?;
        let unlock = async { collection.ensure_unlocked().await.map_err(explain) };
        within(UNLOCK_PATIENCE, unlock).await?;
        within(PATIENCE, async {
            let label = format!("{service}: {name}");
            collection
                .create_item(
                    &label,
                    attributes(service, name),
                    value.as_bytes(),
                    true,
                    "text/plain",
                )
                .await
                .map_err(explain)?;
            Ok(())
        })
        .await
    }

    /// Forgets the secret `name` of `service`; whether there was one.
    pub async fn remove(&self, service: &str, name: &str) -> Result<bool, String> {
        within(PATIENCE, async {
            let found = self.search(attributes(service, name)).await?;
            let items: Vec<_> = found.unlocked.iter().chain(&found.locked).collect();
            for item in &items {
                item.delete().await.map_err(explain)?;
            }
            Ok(!items.is_empty())
        })
        .await
    }

    /// The names of every secret of `service`, sorted (their values are not read).
    pub async fn names(&self, service: &str) -> Result<Vec<String>, String> {
        within(PATIENCE, async {
            let found = self.search(HashMap::from([("service", service)])).await?;
            let mut names = Vec::new();
            for item in found.unlocked.iter().chain(&found.locked) {
                let attributes = item.get_attributes().await.map_err(explain)?;
                names.extend(attributes.get("username").cloned());
            }
            names.sort();
            names.dedup();
            Ok(names)
        })
        .await
    }
}

impl Keyring {
    /// The items `attributes` find, unlocked and locked.
    async fn search(
        &self,
        attributes: HashMap<&str, &str>,
    ) -> Result<SearchItemsResult<Item<'_>>, String> {
        self.service.search_items(attributes).await.map_err(explain)
    }
}

/// Whether a keyring answers here, for `mcpx doctor`: how many secrets it holds for mcpx, or
/// why none answers.
pub fn doctor_line() -> String {
    smol::block_on(async {
        let keyring = match Keyring::connect_within(Duration::from_secs(2)).await {
            Ok(keyring) => keyring,
            Err(reason) => {
                return format!("{reason} (${{keyring:}} fails here: use ${{file:}} or ${{cred:}})")
            }
        };
        match keyring.names(SECRETS).await {
            Ok(names) => format!("answers; it holds {} secret(s) for mcpx", names.len()),
            Err(reason) => format!("answers, but cannot be searched: {reason}"),
        }
    })
}

/// What finds the secret `name` of `service`.
fn attributes<'a>(service: &'a str, name: &'a str) -> HashMap<&'a str, &'a str> {
    HashMap::from([("service", service), ("username", name)])
}

/// A Secret Service error, said so that a person knows what to do.
fn explain(error: Error) -> String {
    match error {
        Error::Unavailable => {
            "no Secret Service on the session bus (no desktop session, or no keyring daemon)".into()
        }
        Error::Locked | Error::Prompt | Error::PromptDisconnected => {
            "the keyring is locked: unlock it (log in to the desktop, or `gnome-keyring-daemon --unlock`)".into()
        }
        other => other.to_string(),
    }
}

/// The keyring as a configuration being loaded reads it: one session, opened at the first
/// `${keyring:NAME}` (a configuration that names none never touches the bus), and each name
/// read once. Loading is synchronous, so each read blocks until the keyring answers: call it
/// off the executor (`smol::unblock`) or before it starts.
#[derive(Default)]
pub struct Reader {
    session: std::cell::OnceCell<Result<Keyring, String>>,
    read: std::cell::RefCell<HashMap<String, Result<String, String>>>,
}

impl Reader {
    /// The secret `${keyring:NAME}` names, or why there is none.
    pub fn read(&self, name: &str) -> Result<String, String> {
        if let Some(known) = self.read.borrow().get(name) {
            return known.clone();
        }
        let session = self
            .session
            .get_or_init(|| smol::block_on(Keyring::connect()));
        let value = match session {
            Ok(keyring) => match smol::block_on(keyring.get(SECRETS, name)) {
                Ok(Some(value)) => Ok(value),
                Ok(None) => Err(format!(
                    "${{keyring:{name}}}: the keyring holds no such secret (`mcpx secret set {name}`)"
                )),
                Err(reason) => Err(format!("${{keyring:{name}}}: {reason}")),
            },
            Err(reason) => Err(format!(
                "${{keyring:{name}}}: {reason}; where no desktop session runs, use ${{file:PATH}} or ${{cred:NAME}}"
            )),
        };
        self.read
            .borrow_mut()
            .insert(name.to_owned(), value.clone());
        value
    }
}
