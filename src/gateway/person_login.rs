//! A person's own login to a `perIdentity.token = "login"` server, run by the daemon for them.
//!
//! A call from a person without a login there is answered with a link to mcpx's own page,
//! `{publicUrl}/upstreams/login?ticket=…`: in a URL elicitation where the client can open one
//! ([`super::login`]), else in the call's error. The ticket is random, names the server and the
//! person, and is good once, for ten minutes. Opening it starts the authorization code flow at
//! the server's authorization server ([`crate::upstream::auth::authorize`]), whose redirect
//! comes back to `{publicUrl}/upstreams/login/callback`; the tokens are kept in that person's
//! own slot of the credentials store (server, issuer, subject), refreshed there for them alone,
//! and the calls waiting on that login go on.
//!
//! The link is a capability: whoever opens it signs in for that person. So it is shown only to
//! the person's own client, in the answer to their own authenticated request; it lives briefly
//! and works once, and the page the flow ends on names the person and the server.

use super::Gateway;
use crate::access::identity::Person;
use crate::config::{PersonToken, ServerSettings};
use crate::sync::lock;
use crate::upstream::auth::authorize::{random_token, Flow};
use crate::upstream::auth::login;
use crate::upstream::auth::store::{person_key, Registration};
use async_channel::{Receiver, Sender};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where a person's sign-in link leads: mcpx's page that starts the flow.
pub const START: &str = "/upstreams/login";
/// Where the authorization server sends the person back.
pub const CALLBACK: &str = "/upstreams/login/callback";

/// How long a link, and then a flow, waits for the person.
const PATIENCE: Duration = Duration::from_secs(600);
/// How many links and flows may wait at once: a caller asking again and again makes old ones
/// go first, never memory grow.
const MOST_WAITING: usize = 4096;
/// How many of them one person may have waiting: past it, their own oldest goes first, never
/// anyone else's (one person asking again and again cannot push out everyone's links).
const MOST_WAITING_EACH: usize = 16;

/// The key of `person`'s login to `server` in the credentials store: the local owner's is the
/// server's own (what `mcpx auth login SERVER` writes), anyone else's their own.
pub fn slot_key(server: &str, person: &Person) -> String {
    match person {
        Person::Owner => server.to_owned(),
        Person::Caller { issuer, subject } => person_key(server, issuer, subject),
    }
}

/// The cookie that tells one browser from another: a sign-in begun in one completes only in it.
pub const BROWSER_COOKIE: &str = "mcpx_signin";

/// What a person's browser asks of a sign-in page.
#[derive(Debug)]
pub struct Asked<'a> {
    /// [`START`] or [`CALLBACK`].
    pub path: &'a str,
    /// The URL's query.
    pub query: Option<&'a str>,
    /// A form's body: the person's confirmation, POSTed to [`START`].
    pub form: Option<&'a [u8]>,
    /// Its `Cookie` header.
    pub cookies: Option<&'a str>,
}

/// What the person's browser is answered.
#[derive(Debug, PartialEq)]
pub enum Page {
    /// Whose sign-in the link begins, for the person to confirm (a form POSTing `ticket` back
    /// to [`START`]); `set_cookie`, a `Set-Cookie` value, names the browser if it had no name.
    Confirm {
        /// What the page says.
        text: String,
        /// The link's ticket, still unused.
        ticket: String,
        /// The browser's new name, when it had none.
        set_cookie: Option<String>,
    },
    /// Go on to the authorization server.
    Redirect(String),
    /// Signed in: the page says for whom and where.
    Done(String),
    /// Not signed in: the page says why.
    Refused(String),
}

/// A server's name, and a person: whose login to what.
type Whose = (String, Person);

/// Something waiting for its person: a link's ticket, or a flow under way.
#[derive(Debug)]
struct Waiting<T> {
    server: String,
    person: Person,
    until: Instant,
    what: T,
}

/// The logins under way, and who waits for them.
#[derive(Debug, Default)]
pub struct PersonLogins {
    /// `[auth] publicUrl`, where the links and the redirect point.
    public_url: Option<String>,
    tickets: Mutex<HashMap<String, Waiting<()>>>,
    /// By the flow's `state`: the flow, and the name of the browser that began it.
    flows: Mutex<HashMap<String, Waiting<(Flow, String)>>>,
    /// mcpx's registrations for its public redirect, by server, then issuer: one for everyone.
    registrations: Mutex<HashMap<String, BTreeMap<String, Registration>>>,
    /// The calls waiting on a person's login to a server.
    waiters: Mutex<HashMap<Whose, Vec<Sender<()>>>>,
}

/// `waiting` less what has waited too long, with room for one more.
fn pruned<T>(waiting: &mut HashMap<String, Waiting<T>>) {
    let now = Instant::now();
    waiting.retain(|_, w| w.until > now);
    while waiting.len() >= MOST_WAITING {
        let oldest = waiting.iter().min_by_key(|(_, w)| w.until);
        let Some(oldest) = oldest.map(|(key, _)| key.clone()) else {
            return;
        };
        waiting.remove(&oldest);
    }
}

impl PersonLogins {
    /// None under way; links and the redirect point at `public_url`.
    pub fn new(public_url: Option<String>) -> PersonLogins {
        PersonLogins {
            public_url,
            ..PersonLogins::default()
        }
    }

    /// A fresh link for `person` to sign in to `server` with.
    pub fn link(&self, server: &str, person: &Person) -> Result<String, String> {
        let public = (self.public_url.as_deref()).ok_or("auth.publicUrl is not set")?;
        let ticket = random_token(32)?;
        let mut tickets = lock(&self.tickets);
        pruned(&mut tickets);
        let theirs = |w: &Waiting<()>| w.person == *person;
        while tickets.values().filter(|w| theirs(w)).count() >= MOST_WAITING_EACH {
            let oldest = tickets
                .iter()
                .filter(|(_, w)| theirs(w))
                .min_by_key(|(_, w)| w.until);
            let Some(oldest) = oldest.map(|(key, _)| key.clone()) else {
                break;
            };
            tickets.remove(&oldest);
        }
        let waiting = Waiting {
            server: server.to_owned(),
            person: person.clone(),
            until: Instant::now() + PATIENCE,
            what: (),
        };
        tickets.insert(ticket.clone(), waiting);
        Ok(format!("{public}{START}?ticket={ticket}"))
    }

    /// What is told when `person`'s login to `server` is done.
    pub fn waiter(&self, server: &str, person: &Person) -> Receiver<()> {
        let (done, waiter) = async_channel::bounded(1);
        let key = (server.to_owned(), person.clone());
        let mut waiters = lock(&self.waiters);
        let list = waiters.entry(key).or_default();
        list.retain(|w| !w.is_closed());
        list.push(done);
        waiter
    }

    /// Tells whoever waits that `person`'s login to `server` is done.
    fn done(&self, server: &str, person: &Person) {
        let key = (server.to_owned(), person.clone());
        for waiter in lock(&self.waiters).remove(&key).unwrap_or_default() {
            let _ = waiter.try_send(());
        }
    }

    /// The ticket's server and person, leaving it unused.
    fn peek_ticket(&self, ticket: &str) -> Option<(String, Person)> {
        let tickets = lock(&self.tickets);
        let waiting = tickets.get(ticket)?;
        (waiting.until > Instant::now()).then(|| (waiting.server.clone(), waiting.person.clone()))
    }

    /// The ticket's server and person, once: a link works one time.
    fn take_ticket(&self, ticket: &str) -> Option<(String, Person)> {
        let taken = lock(&self.tickets).remove(ticket)?;
        (taken.until > Instant::now()).then_some((taken.server, taken.person))
    }

    fn keep_flow(&self, server: String, person: Person, flow: Flow, browser: String) {
        let mut flows = lock(&self.flows);
        pruned(&mut flows);
        let state = flow.state().to_owned();
        let until = Instant::now() + PATIENCE;
        flows.insert(
            state,
            Waiting {
                server,
                person,
                until,
                what: (flow, browser),
            },
        );
    }

    fn take_flow(&self, state: &str) -> Option<Waiting<(Flow, String)>> {
        let taken = lock(&self.flows).remove(state)?;
        (taken.until > Instant::now()).then_some(taken)
    }
}

/// What a link that cannot be used is answered.
const UNKNOWN_LINK: &str =
    "this sign-in link is unknown, used or expired: ask again from your client, which gets a new one";

/// The value of the cookie `name` in a request's `Cookie` header.
fn cookie(header: Option<&str>, name: &str) -> Option<String> {
    let pairs = header.unwrap_or_default().split(';');
    pairs
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// The value of `key` in the query `query`.
fn param(query: Option<&str>, key: &str) -> Option<String> {
    let pairs = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes());
    pairs
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

impl Gateway {
    /// The page a person's browser `asked` for: a link's page that says whose sign-in it
    /// begins (GET [`START`]), the sign-in begun once they confirm (its POST), or its end (GET
    /// [`CALLBACK`]).
    pub async fn person_login_page(&self, asked: Asked<'_>) -> Page {
        let browser = cookie(asked.cookies, BROWSER_COOKIE);
        let outcome = match (asked.path, asked.form) {
            (START, None) => self.confirm_person_login(asked.query, browser),
            (START, Some(form)) => {
                let form = std::str::from_utf8(form).ok();
                self.start_person_login(form, browser).await
            }
            (CALLBACK, _) => self.finish_person_login(asked.query, browser).await,
            _ => Err("there is no such page".into()),
        };
        outcome.unwrap_or_else(Page::Refused)
    }

    /// The link's page: whose sign-in to what it begins, for the person to confirm; the link
    /// stays unused (a preview that fetches it spends nothing), and the browser is given a name
    /// if it has none, which the sign-in it begins will be bound to.
    fn confirm_person_login(
        &self,
        query: Option<&str>,
        browser: Option<String>,
    ) -> Result<Page, String> {
        let ticket = param(query, "ticket").unwrap_or_default();
        let (server, person) = self
            .person_logins
            .peek_ticket(&ticket)
            .ok_or(UNKNOWN_LINK)?;
        let set_cookie = match browser {
            Some(_) => None,
            None => {
                let public = self.person_logins.public_url.as_deref().unwrap_or_default();
                let secure = match public.starts_with("https://") {
                    true => "; Secure",
                    false => "",
                };
                Some(format!(
                    "{BROWSER_COOKIE}={}; Path={START}; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
                    random_token(32)?,
                    PATIENCE.as_secs()
                ))
            }
        };
        Ok(Page::Confirm {
            text: format!("This link signs in to {server} as {person}: what you allow there is done for {person}'s calls through mcpx. Continue only if you are {person}; if not, close this page."),
            ticket,
            set_cookie,
        })
    }

    /// The link's ticket taken, confirmed in the browser it named: its flow begun, bound to
    /// that browser, and the person sent to the authorization server. A browser without a
    /// name (a form POSTed from another site carries no `SameSite=Lax` cookie) begins nothing.
    async fn start_person_login(
        &self,
        form: Option<&str>,
        browser: Option<String>,
    ) -> Result<Page, String> {
        let logins = &self.person_logins;
        let browser =
            browser.ok_or("open the sign-in link itself in your browser, then continue there")?;
        let ticket = param(form, "ticket").unwrap_or_default();
        let (server, person) = logins.take_ticket(&ticket).ok_or(UNKNOWN_LINK)?;
        let upstream = self.supervisor.upstreams().by_name(&server);
        let upstream = upstream
            .filter(|u| u.config.per_identity.token == Some(PersonToken::Login))
            .ok_or_else(|| format!("{server} no longer takes each person's own login"))?;
        let expanded = upstream.expanded.as_ref().map_err(Clone::clone)?;
        let settings = ServerSettings {
            config: &upstream.config,
            expanded,
        };
        let store = self.supervisor.upstreams().credentials();
        let previous = store.read(&slot_key(&server, &person)).await;
        let public = logins.public_url.as_deref().unwrap_or_default();
        let redirect_uri = format!("{public}{CALLBACK}");
        let registered = lock(&logins.registrations)
            .get(&server)
            .cloned()
            .unwrap_or_default();
        let begun = login::begin_elsewhere(
            &server,
            settings,
            previous.as_ref(),
            &redirect_uri,
            &registered,
        )
        .await;
        let (authorize, flow, made) =
            begun.map_err(|why| format!("signing in to {server} cannot start: {why}"))?;
        if let Some((issuer, registration)) = made {
            let mut registrations = lock(&logins.registrations);
            registrations
                .entry(server.clone())
                .or_default()
                .insert(issuer, registration);
        }
        // The browser that began it is the one that may finish it: a flow begun by one person
        // and its authorization page sent to another (login CSRF) completes for no one.
        logins.keep_flow(server, person, flow, browser);
        Ok(Page::Redirect(authorize.to_string()))
    }

    /// The authorization server's redirect: the code exchanged, the person's tokens kept, a
    /// stale instance of theirs stopped, and their waiting calls told.
    async fn finish_person_login(
        &self,
        query: Option<&str>,
        browser: Option<String>,
    ) -> Result<Page, String> {
        let state = param(query, "state").unwrap_or_default();
        let flow = self
            .person_logins
            .take_flow(&state)
            .ok_or("this sign-in is unknown, finished or expired: ask again from your client")?;
        let Waiting {
            server,
            person,
            what: (flow, began_in),
            ..
        } = flow;
        let (server, person) = (&server, &person);
        if !browser.is_some_and(|browser| crate::access::same_secret(&browser, &began_in)) {
            tracing::warn!(%server, %person, "a sign-in came back to a browser that did not begin it; nothing was kept");
            return Err(format!(
                "this sign-in to {server} was begun for {person} in another browser: nothing was kept. If you are {person}, ask again from your client and open its link here."
            ));
        }
        let public = self.person_logins.public_url.as_deref();
        let callback = format!(
            "{}{CALLBACK}?{}",
            public.unwrap_or_default(),
            query.unwrap_or_default()
        );
        let callback = url::Url::parse(&callback).map_err(|e| e.to_string())?;
        let credential = (flow.finish(&callback).await)
            .map_err(|why| format!("signing in to {server} failed: {why}"))?;
        let store = self.supervisor.upstreams().credentials();
        store
            .keep(&slot_key(server, person), Some(credential))
            .await
            .map_err(|why| format!("the login to {server} could not be kept: {why}"))?;
        if let Some(upstream) = self.supervisor.upstreams().by_name(server) {
            if let Some(stale) = upstream.instances.of(person) {
                upstream.instances.stop(&stale, "signed in again").await;
            }
        }
        tracing::info!(%server, %person, "a person signed in to a per-identity server");
        self.person_logins.done(server, person);
        Ok(Page::Done(format!(
            "Signed in to {server} for {person}. You can close this page: your request goes on."
        )))
    }
}

#[cfg(test)]
mod every_revision {
    mod team {
        use super::super::*;

        fn alice() -> Person {
            Person::Caller {
                issuer: "https://idp".into(),
                subject: "alice".into(),
            }
        }

        #[test]
        fn the_owner_signs_in_as_the_server_and_anyone_else_as_themselves() {
            assert_eq!(slot_key("gh", &Person::Owner), "gh");
            assert_ne!(slot_key("gh", &alice()), "gh");
            let named_owner = Person::Caller {
                issuer: "https://idp".into(),
                subject: crate::config::OWNER.into(),
            };
            assert_ne!(slot_key("gh", &named_owner), "gh");
        }

        #[test]
        fn a_link_works_once_and_names_its_person_and_server() {
            let logins = PersonLogins::new(Some("https://mcp.example".into()));
            let link = logins.link("gh", &alice()).unwrap();
            let ticket = link
                .strip_prefix(&format!("https://mcp.example{START}?ticket="))
                .unwrap();
            assert_eq!(logins.take_ticket(ticket), Some(("gh".into(), alice())));
            assert_eq!(logins.take_ticket(ticket), None);
            assert_eq!(logins.take_ticket("made-up"), None);
            assert!(PersonLogins::default().link("gh", &alice()).is_err());
        }

        #[test]
        fn one_person_asking_without_end_never_pushes_out_anothers_link() {
            let logins = PersonLogins::new(Some("https://mcp.example".into()));
            let bobs = logins.link(
                "gh",
                &Person::Caller {
                    issuer: "https://idp".into(),
                    subject: "bob".into(),
                },
            );
            for _ in 0..MOST_WAITING + 10 {
                logins.link("gh", &alice()).unwrap();
            }
            let alices = lock(&logins.tickets)
                .values()
                .filter(|w| w.person == alice())
                .count();
            assert_eq!(alices, MOST_WAITING_EACH);
            let ticket = bobs.unwrap().split("ticket=").nth(1).unwrap().to_owned();
            assert!(
                logins.peek_ticket(&ticket).is_some(),
                "bob's link was pushed out"
            );
        }

        #[test]
        fn links_asked_for_without_end_keep_memory_bounded() {
            let logins = PersonLogins::new(Some("https://mcp.example".into()));
            for _ in 0..MOST_WAITING + 10 {
                logins.link("gh", &alice()).unwrap();
            }
            assert!(lock(&logins.tickets).len() <= MOST_WAITING);
        }

        #[test]
        fn a_finished_login_tells_each_of_its_waiters_and_no_one_elses() {
            let logins = PersonLogins::default();
            let (first, second) = (logins.waiter("gh", &alice()), logins.waiter("gh", &alice()));
            let bob = Person::Caller {
                issuer: "https://idp".into(),
                subject: "bob".into(),
            };
            let others = logins.waiter("gh", &bob);
            logins.done("gh", &alice());
            assert!(first.try_recv().is_ok() && second.try_recv().is_ok());
            assert!(others.try_recv().is_err());
        }
    }
}
