//! The gateway's upstreams: what it knows of each configured server.
//!
//! Each is an [`Upstream`] with a stable id (what the catalog routes to), its configuration and
//! last listing, and its live [`Link`]; callers reach its connection only while it serves.
//! Starting, reviving, waking and swapping them is the [`super::supervision`]'s.

use super::instances::Instances;
use super::link::Link;
use super::{Listing, Owner};
use crate::access::exchange::{Asked, Exchanged, Exchanger};
use crate::access::Identity;
use crate::cancel::Cancel;
use crate::config::{
    AuthMode, Credentials, Expanded, RemoteSpec, RemoteTransport, Server, ServerKind,
    ServerSettings, Settings, BUILTIN_SERVER, DEFAULT_MAX_IN_FLIGHT,
};
use crate::failure::Failure;
use crate::jsonrpc::ErrorObject;
use crate::limit::FairLimit;
use crate::protocol::Era;
use crate::sync::{lock, read, write};
use crate::upstream::auth::store::{Slot, Store};
use crate::upstream::client::FirstTry;
use crate::upstream::http::HttpUpstream;
use crate::upstream::sse::SseUpstream;
use crate::upstream::stdio::{Spawning, StdioUpstream};
use crate::upstream::{Connection, Event, LinkId, ListKind, StartError};
use crate::view::UpstreamView;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// One configured upstream: what it is (its configuration, its catalog, its policies) and its
/// live link ([`Link`]).
#[derive(Debug)]
pub(super) struct Upstream {
    /// Never reused, so a route to a removed server can never reach its replacement.
    pub(super) id: usize,
    pub(super) name: String,
    /// `[servers.NAME]` as written.
    pub(super) config: Server,
    /// Its `${VAR}`s expanded, or why that could not be done (then it cannot start).
    pub(super) expanded: Result<Expanded, String>,
    /// What it listed last.
    pub(super) listing: Mutex<Listing>,
    /// Its connection, its state and how its starts are paced.
    pub(super) link: Link,
    /// Counts the starts of all its links: an event names the link by its start.
    starts: AtomicU64,
    /// Each person's own instance, for a `credentials = "per-identity"` server.
    pub(super) instances: Instances,
    /// Whether its child exits on mcpx's `server/discover` probe (`era = "auto"`), found now
    /// or in an earlier run: it is then asked `initialize` first.
    pub(super) exited_on_discover: AtomicBool,
    /// Fired when the upstream is removed by a reload: supervision stops reviving it.
    pub(super) removed: Cancel,
    /// The catalogs being listed again after a `list_changed`, each with whether another came
    /// meanwhile (see `Supervisor::list_changed`).
    pub(super) relisting: Mutex<hashbrown::HashMap<ListKind, bool>>,
    /// What its `subscriptions/listen`s were acknowledged for (2026-07-28).
    pub(super) listening: super::listens_held::Listening,
    /// Its requests in flight, against `maxInFlight`, shared fairly among its clients.
    pub(super) in_flight: Arc<FairLimit>,
    /// The HTTP transport a `url` server speaks, once its first start found it: restarts use it.
    pub(super) transport: Mutex<RemoteTransport>,
    /// Held while a client's call logs in to it ([`super::login`]): one login at a time.
    pub(super) logging_in: smol::lock::Mutex<()>,
    /// Held while a lazy server is started or stopped: one at a time.
    pub(super) waking: smol::lock::Mutex<()>,
    /// When a request last needed it (lazy servers: what `idleTimeout` counts from).
    pub(super) last_needed: Mutex<Instant>,
}

impl Upstream {
    /// Waits `delay`; true if the upstream was removed by a reload meanwhile (then at once).
    pub(super) async fn removed_within(&self, delay: Duration) -> bool {
        smol::future::or(
            async {
                self.removed.cancelled().await;
                true
            },
            async {
                smol::Timer::after(delay).await;
                false
            },
        )
        .await
    }

    /// The next start of any of its links.
    pub(super) fn next_start(&self) -> u64 {
        self.starts.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether each caller reaches it over a link of their own.
    pub(super) fn is_per_identity(&self) -> bool {
        self.config.credentials == Credentials::PerIdentity
    }

    /// Whether mcpx speaks 2026-07-28 to it.
    pub(super) fn is_modern(&self) -> bool {
        self.era() == Some(Era::Modern)
    }

    /// The era its last handshake spoke ([`Upstream::known`]).
    pub(super) fn era(&self) -> Option<Era> {
        self.known(Link::era)
    }

    /// The generation of tasks it runs on `tools/call`, if any ([`Upstream::known`]).
    pub(super) fn runs_tasks(&self) -> Option<Era> {
        self.known(Link::runs_tasks)
    }

    /// What its last handshake says (`read`): its own link's, or, where that has none (a
    /// per-identity server, whose own link is stopped once its catalog is listed, or listed from
    /// the cache), one of its instances'. What the server speaks and offers is the same for
    /// every person.
    fn known<R>(&self, read: impl Fn(&Link) -> Option<R>) -> Option<R> {
        read(&self.link).or_else(|| self.instances.all().iter().find_map(|i| read(&i.link)))
    }

    pub(super) fn view(&self) -> UpstreamView {
        let handshake = self.link.handshake();
        let listing = lock(&self.listing);
        // A failed state quotes the server's own answer, and its server info is its own words:
        // neither shows a secret a server was given.
        let mut server_info = handshake
            .as_ref()
            .map_or(Value::Null, |h| h.server_info.clone());
        crate::redact::mask_value(&mut server_info);
        let instances = self.instances.views();
        let mut state = self.link.describe(&self.name);
        // A per-identity server's own link rests once its catalog is listed: what runs is
        // people's instances.
        if self.is_per_identity() && matches!(self.link.state(), super::link::UpstreamState::Idle) {
            state = match instances.len() {
                0 => "idle: no person's instance runs".to_owned(),
                1 => "serving 1 person".to_owned(),
                n => format!("serving {n} people"),
            };
        }
        UpstreamView {
            name: self.name.clone(),
            state: crate::redact::mask_registered(&state).into_owned(),
            revision: handshake.as_ref().map(|h| h.revision.as_str().to_owned()),
            server_info,
            tools: listing.tools.len(),
            prompts: listing.prompts.len(),
            resources: listing.resources.len(),
            restarts: self.link.restarts(),
            sandbox: self.link.sandbox(),
            instances,
        }
    }
}

/// How one link to an upstream is opened: the name it goes by (its logs, its private
/// directory), its configuration and values, and which start of the upstream it is.
pub(super) struct Reached<'a> {
    pub name: &'a str,
    /// Where its login's credential is kept (a `url` server's): the server's name, or one
    /// person's key ([`crate::upstream::auth::store::person_key`]).
    pub credential: &'a str,
    pub config: &'a Server,
    pub expanded: &'a Expanded,
    pub start: u64,
}

/// The configured upstreams, in configuration (name) order, and how each is reached.
#[derive(Debug)]
pub(super) struct Upstreams {
    pub(super) list: RwLock<Vec<Arc<Upstream>>>,
    next_id: AtomicUsize,
    /// The program that starts upstream processes so that they die with mcpx (see
    /// [`crate::upstream::stdio`]); `None` starts them directly.
    launcher: Option<PathBuf>,
    /// `transport.maxMessageBytes`, which bounds what upstreams send as well as what clients do.
    max_message_bytes: usize,
    /// `auth.credentials` and `auth.credentialsStore`: where remote servers' tokens are kept.
    credentials: Store,
    /// Where a caller's token becomes theirs for a per-identity remote server.
    exchanger: Option<Exchanger>,
}

impl Upstreams {
    pub(super) fn from_settings(settings: &Settings, launcher: Option<PathBuf>) -> Self {
        let config = &settings.config;
        let upstreams = Upstreams {
            list: RwLock::default(),
            next_id: AtomicUsize::new(0),
            launcher,
            max_message_bytes: config.transport.max_message_bytes,
            credentials: Store::configured(&config.auth),
            // One that cannot be made has stopped the daemon's start already ([`crate::access`]).
            exchanger: (config.auth.mode == AuthMode::External)
                .then(|| Exchanger::new(settings).ok().flatten())
                .flatten(),
        };
        let list = settings
            .config
            .servers
            .iter()
            .map(|(name, server)| upstreams.make(name, server, settings.server(name)))
            .collect();
        *write(&upstreams.list) = list;
        upstreams
    }

    pub(super) fn make(
        &self,
        name: &str,
        config: &Server,
        expanded: Result<Expanded, String>,
    ) -> Arc<Upstream> {
        Arc::new(Upstream {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            name: name.to_owned(),
            config: config.clone(),
            expanded,
            listing: Mutex::default(),
            link: Link::default(),
            starts: AtomicU64::new(0),
            instances: Instances::default(),
            removed: Cancel::new(),
            exited_on_discover: AtomicBool::new(false),
            transport: Mutex::new(config.transport),
            logging_in: smol::lock::Mutex::new(()),
            waking: smol::lock::Mutex::new(()),
            last_needed: Mutex::new(Instant::now()),
            relisting: Mutex::default(),
            listening: Default::default(),
            in_flight: FairLimit::new(
                format!("servers.{name}.maxInFlight"),
                config.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            ),
        })
    }

    /// `caller`'s own token for the per-identity remote server `upstream` at `url`, had by
    /// exchanging theirs at the identity provider.
    pub(super) async fn exchange_for(
        &self,
        upstream: &Upstream,
        caller: &Identity,
        url: &str,
    ) -> Result<Exchanged, String> {
        let token = caller.token.as_ref().ok_or_else(|| {
            format!("{} reaches each caller as themselves, by exchanging the token they showed at the identity provider; this caller showed none", upstream.name)
        })?;
        let exchanger = self
            .exchanger
            .as_ref()
            .ok_or("no token exchange is configured ([auth.external] clientId)")?;
        let per_identity = &upstream.config.per_identity;
        let asked = Asked {
            audience: per_identity.audience.as_deref().unwrap_or(url),
            scopes: &per_identity.scopes,
        };
        exchanger.exchange(token, asked).await
    }

    /// The store of remote servers' tokens.
    pub(super) fn credentials(&self) -> Store {
        self.credentials.clone()
    }

    /// A connection to the server as `config` says to reach it (nothing is sent yet).
    pub(super) fn connect(
        &self,
        upstream: &Upstream,
        config: &Server,
        generation: u64,
        events: async_channel::Sender<Event>,
    ) -> Result<Connection, StartError> {
        let misconfigured = |reason: &String| StartError::Misconfigured(reason.clone());
        let expanded = upstream.expanded.as_ref().map_err(misconfigured)?;
        let how = Reached {
            name: &upstream.name,
            credential: &upstream.name,
            config,
            expanded,
            start: generation,
        };
        self.connect_as(upstream, how, events)
    }

    /// A connection to the server as `how` says (a per-identity instance's own name and
    /// values, or the server's).
    pub(super) fn connect_as(
        &self,
        upstream: &Upstream,
        how: Reached<'_>,
        events: async_channel::Sender<Event>,
    ) -> Result<Connection, StartError> {
        let Reached {
            name,
            credential,
            config,
            expanded,
            start,
        } = how;
        let link = LinkId {
            upstream: upstream.id,
            start,
        };
        let public = crate::upstream::child_environment::given_to_every_child();
        crate::redact::register(&crate::redact::pieces(&expanded.secrets, &public));
        let config = ServerSettings { config, expanded };
        let credentials = || Slot {
            store: self.credentials(),
            key: credential.to_owned(),
        };
        Ok(match config.kind() {
            ServerKind::Stdio(_) => {
                let how = Spawning {
                    launcher: self.launcher.as_deref(),
                    max_message_bytes: self.max_message_bytes,
                    // One that exits on `server/discover` is asked `initialize` first, which a
                    // server that turns out modern answers with the versions it speaks.
                    first_try: match upstream.exited_on_discover.load(Ordering::Relaxed) {
                        true => FirstTry::Initialize,
                        false => FirstTry::Discover,
                    },
                    sandbox_report: upstream.link.sandbox_report(),
                };
                Connection::Stdio(StdioUpstream::spawn(name, link, config, &how, events)?)
            }
            ServerKind::Remote(RemoteSpec {
                transport: RemoteTransport::Sse,
                ..
            }) => Connection::Sse(
                SseUpstream::new(name, link, config, credentials(), events)
                    .map_err(StartError::Misconfigured)?,
            ),
            ServerKind::Remote(_) => Connection::Http(
                HttpUpstream::new(name, link, config, credentials(), events)
                    .map_err(StartError::Misconfigured)?,
            ),
        })
    }

    pub(super) fn all(&self) -> Vec<Arc<Upstream>> {
        read(&self.list).clone()
    }

    pub(super) fn get(&self, id: usize) -> Option<Arc<Upstream>> {
        read(&self.list).iter().find(|u| u.id == id).cloned()
    }

    pub(super) fn by_name(&self, name: &str) -> Option<Arc<Upstream>> {
        self.all().into_iter().find(|u| u.name == name)
    }

    /// The upstream that answers for `owner`; `None` for the built-in server or one removed.
    pub(super) fn of(&self, owner: Owner) -> Option<Arc<Upstream>> {
        match owner {
            Owner::Upstream(id) => self.get(id),
            Owner::Builtin => None,
        }
    }

    /// The live connection of an upstream, or the error its callers get.
    pub(super) fn connection(
        &self,
        owner: Owner,
    ) -> Result<(Arc<Upstream>, Connection), ErrorObject> {
        let Owner::Upstream(id) = owner else {
            return Err(Failure::Refused("the built-in server has no connection".into()).into());
        };
        let upstream = self.get(id).ok_or_else(|| {
            Failure::Refused("that upstream was removed from the configuration".into())
        })?;
        // Installed before its handshake (so a stop can reach it), but nobody else's request
        // goes to a server before it has been initialized and listed.
        match upstream.link.serving() {
            Ok(connection) => Ok((upstream, connection)),
            Err(state) => Err(Failure::Refused(format!(
                "upstream {:?} is not serving ({})",
                upstream.name,
                state.describe()
            ))
            .into()),
        }
    }

    /// Each configured upstream's name, state, revision and catalog size.
    pub(super) fn summaries(&self) -> Vec<UpstreamView> {
        self.all().iter().map(|u| u.view()).collect()
    }

    /// The configured name of who answers for `owner`.
    pub(super) fn name_of(&self, owner: Owner) -> String {
        match owner {
            Owner::Builtin => BUILTIN_SERVER.to_owned(),
            Owner::Upstream(id) => self.get(id).map(|u| u.name.clone()).unwrap_or_default(),
        }
    }
}
