//! The user's credentials for remote servers: one JSON file (`[auth] credentials`, by default
//! under the XDG state directory), mode 0600 in a directory of mode 0700, written whole to a
//! temporary file and renamed over the old one, so a crash never leaves half a file and no other
//! user can read a token. Tokens are never logged: [`Credential`]'s `Debug` hides them.
//!
//! With `[auth] credentialsStore = "keyring"` (or `"auto"` and a keyring answering) each
//! server's credential is an item of the desktop's keyring instead (service
//! `mcpx-credentials`, username the server's name). The file is still read for the servers the
//! keyring lacks, and a credential written to the keyring leaves the file, so switching stores
//! loses no login. The keyring is asked only at a login, a connect and a refresh, never per
//! request, and async code asks through [`Store::read`] and [`Store::keep`], off the executor.

use crate::config::{Auth, CredentialsStore};
use crate::keyring::Keyring;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What mcpx holds for one server after a login.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    /// The server's URL when it was logged in to: a changed URL needs a new login.
    pub server_url: String,
    /// The authorization server that issued the tokens.
    pub issuer: String,
    /// Where tokens are refreshed.
    pub token_endpoint: String,
    /// Where tokens are revoked, if the server offers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// How the client authenticates at the token endpoint: `none`, `client_secret_basic` or
    /// `client_secret_post`.
    pub token_auth_method: String,
    /// The client id mcpx used (registered, pre-registered or a metadata document's URL).
    pub client_id: String,
    /// Its secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The RFC 8707 resource the tokens are for.
    pub resource: String,
    /// The scopes granted (space-separated), if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// A scope a server asked for beyond those granted (403 `insufficient_scope`), for the next
    /// login to ask for as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wanted_scope: Option<String>,
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the epoch, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// How long the access token lived when issued, in seconds, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<u64>,
    /// mcpx's registrations at authorization servers other than `issuer`, by issuer: made when
    /// the server moved to another one (SEP-2352: credentials belong to the server that issued
    /// them), for the next login there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub registrations: BTreeMap<String, Registration>,
}

/// mcpx as a client registered (RFC 7591) at one authorization server.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    /// The client id the server gave.
    pub client_id: String,
    /// Its secret, if the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint.
    pub token_auth_method: String,
    /// The loopback redirect registered: a login binds its port again to use this client.
    pub redirect_uri: String,
}

impl Registration {
    /// The client part of a credential, for a login with this registration.
    pub fn as_client(&self) -> Credential {
        Credential {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            token_auth_method: self.token_auth_method.clone(),
            ..Credential::default()
        }
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never printed.
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens and secrets are never printed.
        f.debug_struct("Credential")
            .field("server_url", &self.server_url)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// Whether the access token expires within `margin_secs` (or has).
    pub fn expires_within(&self, margin_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|at| now_secs().saturating_add(margin_secs) >= at)
    }

    /// Whether it can serve a request: its access token is good yet, or a refresh token can
    /// renew it.
    pub fn may_serve(&self) -> bool {
        self.refresh_token.is_some() || !self.expires_within(0)
    }

    /// Whether it is time to refresh: within a minute of expiry, or within a quarter of its
    /// lifetime for a token that lives less than four minutes (so a short-lived token is not
    /// refreshed on every request).
    pub fn due_for_refresh(&self) -> bool {
        let margin = self.lifetime.map_or(60, |lifetime| (lifetime / 4).min(60));
        self.expires_within(margin)
    }
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The `service` of the keyring items that hold credentials.
const KEYRING_SERVICE: &str = "mcpx-credentials";

/// How briefly `credentialsStore = "auto"` waits for a keyring before settling on the file.
const AUTO_PATIENCE: Duration = Duration::from_millis(200);

/// Where the credentials are kept: the file, and maybe the keyring.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
    kind: CredentialsStore,
    /// For `auto`: whether a keyring answered, once asked.
    keyring_answers: Arc<OnceLock<bool>>,
}

impl Store {
    /// The file store at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Store {
        Store::with_kind(path, CredentialsStore::File)
    }

    /// The store `[auth]` configures.
    pub fn configured(auth: &Auth) -> Store {
        Store::with_kind(&auth.credentials, auth.credentials_store)
    }

    fn with_kind(path: impl Into<PathBuf>, kind: CredentialsStore) -> Store {
        Store {
            path: path.into(),
            kind,
            keyring_answers: Arc::default(),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every credential, by server name: the file's, and the keyring's over them.
    pub fn load(&self) -> Result<BTreeMap<String, Credential>, String> {
        let mut all = self.load_file()?;
        if let Some(keyring) = self.keyring()? {
            smol::block_on(async {
                for server in keyring.names(KEYRING_SERVICE).await? {
                    if let Some(credential) = keyring_get(&keyring, &server).await? {
                        all.insert(server, credential);
                    }
                }
                Ok::<_, String>(())
            })?;
        }
        Ok(all)
    }

    /// The credential for `server`, if any.
    pub fn get(&self, server: &str) -> Option<Credential> {
        let from_keyring = self.keyring().and_then(|keyring| match keyring {
            Some(keyring) => smol::block_on(keyring_get(&keyring, server)),
            None => Ok(None),
        });
        match from_keyring {
            Ok(Some(credential)) => Some(credential),
            Ok(None) => self.load_file().ok()?.remove(server),
            Err(e) => {
                tracing::warn!(server, "the keyring's credential cannot be read: {e}");
                None
            }
        }
    }

    /// Sets (or, with `None`, forgets) the credential for `server`.
    pub fn put(&self, server: &str, credential: Option<Credential>) -> Result<(), String> {
        if let Some(keyring) = self.keyring()? {
            smol::block_on(async {
                match &credential {
                    Some(credential) => {
                        let text = serde_json::to_string(credential).map_err(|e| e.to_string())?;
                        keyring.set(KEYRING_SERVICE, server, &text).await
                    }
                    None => keyring.remove(KEYRING_SERVICE, server).await.map(drop),
                }
            })?;
            // Kept in the keyring now: a copy left in the file would outlive a logout.
            let mut file = self.load_file()?;
            return match file.remove(server) {
                Some(_) => self.write_file(&file),
                None => Ok(()),
            };
        }
        let mut all = self.load_file()?;
        match credential {
            Some(credential) => all.insert(server.to_owned(), credential),
            None => all.remove(server),
        };
        self.write_file(&all)
    }

    /// [`Store::get`] from async code: a keyring's answer is waited for on a blocking thread,
    /// not on the executor.
    pub async fn read(&self, server: &str) -> Option<Credential> {
        let (store, server) = (self.clone(), server.to_owned());
        smol::unblock(move || store.get(&server)).await
    }

    /// [`Store::put`] from async code, as [`Store::read`].
    pub async fn keep(&self, server: &str, credential: Option<Credential>) -> Result<(), String> {
        let (store, server) = (self.clone(), server.to_owned());
        smol::unblock(move || store.put(&server, credential)).await
    }

    /// A session with the keyring when the credentials are kept there; an error when they
    /// must be and no keyring answers.
    fn keyring(&self) -> Result<Option<Keyring>, String> {
        match self.kind {
            CredentialsStore::File => Ok(None),
            CredentialsStore::Keyring => smol::block_on(Keyring::connect())
                .map(Some)
                .map_err(|e| format!("credentialsStore = \"keyring\": {e}")),
            // Asked once: a keyring that answered is then used as `"keyring"` is, so that a
            // slow answer later is an error rather than a token quietly written to the file.
            CredentialsStore::Auto => match self.keyring_answers.get() {
                Some(false) => Ok(None),
                Some(true) => smol::block_on(Keyring::connect()).map(Some),
                None => {
                    let keyring = smol::block_on(Keyring::connect_within(AUTO_PATIENCE)).ok();
                    let _ = self.keyring_answers.set(keyring.is_some());
                    Ok(keyring)
                }
            },
        }
    }

    /// Every credential the file holds; an absent file holds none.
    fn load_file(&self) -> Result<BTreeMap<String, Credential>, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} is not a credentials file: {e}", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(format!("cannot read {}: {e}", self.path.display())),
        }
    }

    fn write_file(&self, all: &BTreeMap<String, Credential>) -> Result<(), String> {
        let text = serde_json::to_vec_pretty(all).map_err(|e| e.to_string())?;
        crate::private_file::write_whole(&self.path, &text)
    }
}

/// Where one login's credential is kept: the store, and its key there (a server's name for
/// the server's own login, [`person_key`] for one person's login to a per-identity server).
#[derive(Debug, Clone)]
pub struct Slot {
    /// The store.
    pub store: Store,
    /// The credential's key in it.
    pub key: String,
}

impl Slot {
    /// [`Store::get`] of this slot.
    pub fn get(&self) -> Option<Credential> {
        self.store.get(&self.key)
    }

    /// [`Store::put`] of this slot.
    pub fn put(&self, credential: Option<Credential>) -> Result<(), String> {
        self.store.put(&self.key, credential)
    }

    /// [`Store::read`] of this slot.
    pub async fn read(&self) -> Option<Credential> {
        self.store.read(&self.key).await
    }

    /// [`Store::keep`] of this slot.
    pub async fn keep(&self, credential: Option<Credential>) -> Result<(), String> {
        self.store.keep(&self.key, credential).await
    }
}

/// The key of `subject`'s (of `issuer`) own login to the per-identity server `server`: the three
/// as a JSON array, which no server's name can be mistaken for (names never start with `[`)
/// and which no issuer or subject, whatever it holds, can make equal to another person's.
pub fn person_key(server: &str, issuer: &str, subject: &str) -> String {
    serde_json::json!([server, issuer, subject]).to_string()
}

/// The server, issuer and subject a [`person_key`] names; `None` for a server's own key.
pub fn person_of_key(key: &str) -> Option<(String, String, String)> {
    if !key.starts_with('[') {
        return None;
    }
    serde_json::from_str(key).ok()
}

/// The credential the keyring holds for `server`.
async fn keyring_get(keyring: &Keyring, server: &str) -> Result<Option<Credential>, String> {
    match keyring.get(KEYRING_SERVICE, server).await? {
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("the keyring's credential of {server} is not one: {e}")),
        None => Ok(None),
    }
}

#[cfg(test)]
mod every_revision {
    mod auth {
        use super::super::*;
        use std::os::unix::fs::PermissionsExt;

        #[test]
        fn credentials_are_written_0600_in_a_0700_directory_and_read_back() {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::new(dir.path().join("mcpx/credentials.json"));
            assert!(store.get("s").is_none());
            let credential = Credential {
                access_token: "secret-token".into(),
                ..Credential::default()
            };
            store.put("s", Some(credential.clone())).unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(store.path()), 0o600);
            assert_eq!(mode(store.path().parent().unwrap()), 0o700);
            assert_eq!(store.get("s"), Some(credential.clone()));
            assert!(!format!("{credential:?}").contains("secret-token"));
            store.put("s", None).unwrap();
            assert!(store.get("s").is_none());
        }

        #[test]
        fn a_persons_login_is_kept_apart_from_the_servers_and_from_every_other_persons() {
            let key = person_key("gh", "https://idp", "alice");
            let named = ("gh".into(), "https://idp".into(), "alice".into());
            assert_eq!(person_of_key(&key), Some(named));
            assert_eq!(person_of_key("gh"), None);
            // Whatever an issuer or subject holds, two people's keys differ.
            assert_ne!(
                person_key("gh", "https://a\",\"b", "c"),
                person_key("gh", "https://a", "b\",\"c")
            );
            let dir = tempfile::tempdir().unwrap();
            let store = Store::new(dir.path().join("credentials.json"));
            let slot = Slot {
                store: store.clone(),
                key,
            };
            let alice = Credential {
                access_token: "alice-token".into(),
                ..Credential::default()
            };
            slot.put(Some(alice.clone())).unwrap();
            assert_eq!(slot.get(), Some(alice));
            assert!(store.get("gh").is_none());
        }
    }
}
