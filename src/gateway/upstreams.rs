//! The gateway's upstreams: what it knows of each configured server.
//!
//! Each is an [`Upstream`] with a stable id (what the catalog routes to), its live connection,
//! its state, its backoff and its last listing; callers reach its connection only while it
//! serves. Starting, reviving, waking and swapping them is the [`super::supervision`]'s.

use super::{Listing, Owner};
use crate::cancel::Cancel;
use crate::config::{
    Expanded, Launch, RemoteTransport, Server, ServerSettings, Settings, BUILTIN_SERVER,
    DEFAULT_MAX_IN_FLIGHT,
};
use crate::failure::Failure;
use crate::jsonrpc::ErrorObject;
use crate::limit::FairLimit;
use crate::protocol::{task, Era, Extension, Extensions};
use crate::sync::{lock, read, write};
use crate::upstream::auth::store::Store;
use crate::upstream::client::FirstTry;
use crate::upstream::http::HttpUpstream;
use crate::upstream::sse::SseUpstream;
use crate::upstream::stdio::{Spawning, StdioUpstream};
use crate::upstream::{Connection, Event, Handshake, ListKind, StartError};
use crate::view::UpstreamView;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The first restart's delay; each failure in a row doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest delay between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Exits within this window count towards a crash loop.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// This many exits within the window is a crash loop.
const CRASH_LOOP: usize = 5;
/// How long an upstream gets to exit once its stdin closes, at a restart or removal.
pub(super) const STOP_GRACE: Duration = Duration::from_millis(500);

/// Where an upstream stands.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamState {
    /// Starting or handshaking.
    Starting,
    /// Serving.
    Ready,
    /// A remote server that refuses mcpx until a person logs in; supervision keeps trying, so
    /// the login's tokens are picked up without a restart.
    NeedsLogin {
        /// What to run.
        how: String,
    },
    /// Its configuration cannot work as written (an unset `${VAR}`, a `url` that is not one):
    /// not started again until a reload changes it.
    Misconfigured {
        /// What is wrong, by key.
        reason: String,
    },
    /// A `start = "lazy"` server not running: listed from its last run's catalog, started by
    /// the first request that needs it.
    Idle,
    /// Not serving; supervision starts it again at `next`.
    Down {
        /// Why it is down: its start failed, or its process exited.
        reason: String,
        /// When the next start is due.
        next: Instant,
        /// Whether it crashed so often that its catalog was withdrawn.
        crash_looping: bool,
    },
}

impl UpstreamState {
    pub(super) fn describe(&self) -> String {
        match self {
            UpstreamState::Starting => "starting".into(),
            UpstreamState::Ready => "ready".into(),
            UpstreamState::Idle => "idle (lazy)".into(),
            UpstreamState::NeedsLogin { how } => format!("needs-login: {how}"),
            UpstreamState::Misconfigured { reason } => {
                format!("misconfigured: {reason}")
            }
            UpstreamState::Down {
                reason,
                next,
                crash_looping,
            } => {
                let wait = next.saturating_duration_since(Instant::now()).as_secs_f64();
                let looping = if *crash_looping {
                    " (crash loop: tools withdrawn)"
                } else {
                    ""
                };
                format!("failed: {reason}; next start in {wait:.1}s{looping}")
            }
        }
    }
}

/// Restart pacing for one upstream.
#[derive(Debug, Default)]
pub(super) struct Backoff {
    failures_in_a_row: u32,
    recent_exits: VecDeque<Instant>,
}

impl Backoff {
    /// Records a failure; returns the delay before the next start and whether it is looping.
    pub(super) fn failed(&mut self) -> (Duration, bool) {
        let now = Instant::now();
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        self.recent_exits.push_back(now);
        while self
            .recent_exits
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.recent_exits.pop_front();
        }
        let looping = self.recent_exits.len() >= CRASH_LOOP;
        let exponent = self.failures_in_a_row.saturating_sub(1).min(16);
        let delay = if looping {
            MAX_BACKOFF
        } else {
            (FIRST_BACKOFF * 2u32.pow(exponent)).min(MAX_BACKOFF)
        };
        // Jitter, so that servers that died together do not all come back at once.
        (delay.mul_f64(0.8 + fastrand::f64() * 0.4), looping)
    }

    pub(super) fn succeeded(&mut self) {
        self.failures_in_a_row = 0;
    }
}

/// One configured upstream and what mcpx knows of it.
#[derive(Debug)]
pub(super) struct Upstream {
    /// Never reused, so a route to a removed server can never reach its replacement.
    pub(super) id: usize,
    pub(super) name: String,
    /// `[servers.NAME]` as written.
    pub(super) config: Server,
    /// Its `${VAR}`s expanded, or why that could not be done (then it cannot start).
    pub(super) expanded: Result<Expanded, String>,
    pub(super) state: Mutex<UpstreamState>,
    pub(super) handshake: Mutex<Option<Handshake>>,
    pub(super) connection: Mutex<Option<Connection>>,
    pub(super) listing: Mutex<Listing>,
    /// Counts starts; an event from an older start is about a process that is gone.
    pub(super) generation: AtomicU64,
    /// Counts starts after the first (after a crash, or asked for), whether they served or not.
    pub(super) restarts: AtomicU64,
    pub(super) backoff: Mutex<Backoff>,
    /// Whether its child exits on mcpx's `server/discover` probe (`era = "auto"`), found now
    /// or in an earlier run: it is then asked `initialize` first.
    pub(super) exited_on_discover: AtomicBool,
    /// Fired when the upstream is removed by a reload: supervision stops reviving it.
    pub(super) removed: Cancel,
    /// Whether a supervision loop is already reviving it (there must be one at most).
    pub(super) reviving: AtomicBool,
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
    /// What its sandbox enforced at its last start, as the helper reported it.
    pub(super) sandbox_report: Arc<Mutex<Option<crate::sandbox::Report>>>,
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

    /// Whether mcpx speaks 2026-07-28 to it.
    pub(super) fn is_modern(&self) -> bool {
        lock(&self.handshake)
            .as_ref()
            .is_some_and(|h| h.revision.era() == Era::Modern)
    }

    /// The generation of tasks it runs on `tools/call`, if any: the Tasks extension (2026-07-28)
    /// or 2025-11-25's `tasks.requests.tools.call`.
    pub(super) fn runs_tasks(&self) -> Option<Era> {
        let handshake = lock(&self.handshake);
        let handshake = handshake.as_ref()?;
        let era = handshake.revision.era();
        let runs = match era {
            Era::Modern => {
                Extensions::declared_in(Some(&handshake.capabilities)).contains(Extension::Tasks)
            }
            Era::Legacy => {
                task::has_tasks(handshake.revision)
                    && task::serves_tool_tasks(&handshake.capabilities)
            }
        };
        runs.then_some(era)
    }

    /// Whether it declared `resources.subscribe`.
    pub(super) fn supports_subscribe(&self) -> bool {
        lock(&self.handshake)
            .as_ref()
            .is_some_and(|h| h.capabilities["resources"]["subscribe"] == json!(true))
    }

    /// Its state as people read it. A server whose process just ended is still `Ready` until
    /// supervision hears of it, but its calls already fail: it reads as exited at once.
    pub(super) fn describe_state(&self) -> String {
        let state = lock(&self.state).clone();
        let alive = lock(&self.connection)
            .as_ref()
            .is_some_and(Connection::is_alive);
        let needs_login = lock(&self.connection)
            .as_ref()
            .is_some_and(Connection::needs_login);
        match state {
            UpstreamState::Ready if !alive => "exited; restarting".into(),
            UpstreamState::Ready if needs_login => {
                format!("needs-login: run `mcpx auth login {}`", self.name)
            }
            state => state.describe(),
        }
    }

    fn view(&self) -> UpstreamView {
        let handshake = lock(&self.handshake).clone();
        let listing = lock(&self.listing);
        // A failed state quotes the server's own answer, and its server info is its own words:
        // neither shows a secret a server was given.
        let mut server_info = handshake
            .as_ref()
            .map_or(Value::Null, |h| h.server_info.clone());
        crate::redact::mask_value(&mut server_info);
        UpstreamView {
            name: self.name.clone(),
            state: crate::redact::mask_registered(&self.describe_state()).into_owned(),
            revision: handshake.as_ref().map(|h| h.revision.as_str().to_owned()),
            server_info,
            tools: listing.tools.len(),
            prompts: listing.prompts.len(),
            resources: listing.resources.len(),
            restarts: self.restarts.load(Ordering::Relaxed),
            sandbox: lock(&self.sandbox_report).clone(),
        }
    }
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
            state: Mutex::new(UpstreamState::Starting),
            handshake: Mutex::new(None),
            connection: Mutex::new(None),
            listing: Mutex::default(),
            generation: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            backoff: Mutex::default(),
            removed: Cancel::new(),
            reviving: AtomicBool::new(false),
            exited_on_discover: AtomicBool::new(false),
            transport: Mutex::new(config.transport),
            logging_in: smol::lock::Mutex::new(()),
            waking: smol::lock::Mutex::new(()),
            last_needed: Mutex::new(Instant::now()),
            sandbox_report: Arc::default(),
            relisting: Mutex::default(),
            listening: Default::default(),
            in_flight: FairLimit::new(
                format!("servers.{name}.maxInFlight"),
                config.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            ),
        })
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
        let credentials = || self.credentials();
        let (name, index) = (upstream.name.as_str(), upstream.id);
        let misconfigured = |reason: &String| StartError::Misconfigured(reason.clone());
        let expanded = upstream.expanded.as_ref().map_err(misconfigured)?;
        let public = crate::upstream::child_environment::given_to_every_child();
        crate::redact::register(&crate::redact::pieces(&expanded.secrets, &public));
        let config = ServerSettings { config, expanded };
        Ok(match (config.launch(), config.transport) {
            (Launch::Stdio(_), _) => {
                let how = Spawning {
                    launcher: self.launcher.as_deref(),
                    max_message_bytes: self.max_message_bytes,
                    // One that exits on `server/discover` is asked `initialize` first, which a
                    // server that turns out modern answers with the versions it speaks.
                    first_try: match upstream.exited_on_discover.load(Ordering::Relaxed) {
                        true => FirstTry::Initialize,
                        false => FirstTry::Discover,
                    },
                    sandbox_report: &upstream.sandbox_report,
                };
                Connection::Stdio(StdioUpstream::spawn(
                    name, index, generation, config, &how, events,
                )?)
            }
            (Launch::Http(_), RemoteTransport::Sse) => Connection::Sse(
                SseUpstream::new(name, index, generation, config, credentials(), events)
                    .map_err(StartError::Misconfigured)?,
            ),
            (Launch::Http(_), _) => Connection::Http(
                HttpUpstream::new(name, index, config, credentials(), events)
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
        let ready = *lock(&upstream.state) == UpstreamState::Ready;
        let connection = lock(&upstream.connection)
            .clone()
            .filter(|c| ready && c.is_alive());
        match connection {
            Some(connection) => Ok((upstream, connection)),
            None => Err(Failure::Refused(format!(
                "upstream {:?} is not serving ({})",
                upstream.name,
                lock(&upstream.state).describe()
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

#[cfg(test)]
mod every_revision {
    mod supervision {
        use super::super::{Backoff, CRASH_LOOP, FIRST_BACKOFF, MAX_BACKOFF};

        #[test]
        fn backoff_doubles_with_jitter_and_is_capped() {
            let mut backoff = Backoff::default();
            let (first, _) = backoff.failed();
            assert!(
                first >= FIRST_BACKOFF.mul_f64(0.8) && first <= FIRST_BACKOFF.mul_f64(1.2),
                "{first:?}"
            );
            let (second, _) = backoff.failed();
            assert!(second >= FIRST_BACKOFF.mul_f64(1.6), "{second:?}");
            backoff.succeeded();
            let (again, _) = backoff.failed();
            assert!(
                again <= FIRST_BACKOFF.mul_f64(1.2 * 2.0),
                "a success did not reset the backoff: {again:?}"
            );
        }

        #[test]
        fn a_crash_loop_is_damped_to_the_longest_backoff() {
            let mut backoff = Backoff::default();
            let mut last = (Default::default(), false);
            for _ in 0..CRASH_LOOP {
                backoff.succeeded();
                last = backoff.failed();
            }
            assert!(last.1, "five exits within a minute are a crash loop");
            assert!(last.0 >= MAX_BACKOFF.mul_f64(0.8));
        }
    }
}
