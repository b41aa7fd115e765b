//! The owner's consent, never silent: each authorization request waits on a page that names
//! the client, the host its code goes back to, the door and the scopes it asks, until the owner
//! approves it there with the owner secret (compared in constant time), or on the host with the
//! code the page shows (`mcpx auth approve CODE`, or the console).
//!
//! What a stranger does can never lock the owner out. Wrong secrets lock the request they were
//! tried on, and the client that asked (across its requests), for longer and longer; never
//! another client's page, so the owner's own page takes the right secret whatever strangers
//! tried. The waiting room holds a few requests per client and a bounded number in all; when
//! either is full the newcomer is refused, and no waiting request is ever pushed out for it. The page's form is bound to the browser that opened it: a `__Host-`
//! cookie and a CSRF token, both random per request; it may not be framed.

use super::clients::Client;
use crate::access::same_secret;
use crate::sync::lock;
use crate::upstream::auth::authorize::random_token;
use crate::view::ConsentView;
use event_listener::Event;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cookie that binds a consent form to its browser.
pub const COOKIE: &str = "__Host-mcpx-consent";

/// How long a request waits for the owner.
const PATIENCE: Duration = Duration::from_secs(600);

/// The most requests waiting at once; past it, new ones are refused.
const MAX_WAITING: usize = 64;

/// The most requests of one client waiting at once; past it, its new ones are refused.
const MAX_WAITING_PER_CLIENT: usize = 8;

/// Failed owner secrets allowed on one request before it locks.
const FREE_FAILURES: u32 = 5;

/// Failed owner secrets allowed across one client's requests before the client locks: a
/// stranger's guesses are bounded by what it can register, not by how many pages it opens.
const FREE_CLIENT_FAILURES: u32 = 20;

/// The most clients whose unfetchable documents `mcpx status` shows.
const MAX_UNFETCHED: usize = 16;

/// The most clients whose failures are remembered; the ones no longer locked go first.
const MAX_THROTTLED_CLIENTS: usize = 4096;

/// How long the page stays locked at the first lock; each lock after doubles it.
const FIRST_LOCK: Duration = Duration::from_secs(30);

/// The longest the page stays locked after failures.
const MAX_LOCK: Duration = Duration::from_secs(900);

/// Letters of an approval code: no 0/O, 1/I/L, so it reads back without doubt.
const CODE_LETTERS: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// What a client asks: the authorization request, checked.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The client.
    pub client: Client,
    /// Where the code goes.
    pub redirect_uri: String,
    /// The client's `state`, returned with the code.
    pub state: Option<String>,
    /// The PKCE S256 challenge.
    pub challenge: String,
    /// The scopes asked (and granted on consent).
    pub scopes: Vec<String>,
    /// The door (an RFC 8707 resource).
    pub resource: String,
}

/// A request waiting for the owner.
#[derive(Debug, Clone)]
pub struct Waiting {
    /// Names it in the form.
    pub request: String,
    /// The value of [`COOKIE`] its browser holds.
    pub cookie: String,
    /// The form's CSRF token.
    pub csrf: String,
    /// The code that approves it on the host.
    pub code: String,
    /// What it asks.
    pub asked: Asked,
    opened: Instant,
    approved: bool,
    /// Wrong owner secrets tried on this request.
    failures: Throttle,
}

/// Wrong owner secrets, and the lock they earned.
#[derive(Debug, Clone, Copy, Default)]
pub struct Throttle {
    failures: u32,
    until: Option<Instant>,
}

impl Throttle {
    /// How long it stays locked, if it is.
    pub fn locked(&self) -> Option<Duration> {
        let until = self.until?;
        until.checked_duration_since(Instant::now())
    }

    /// Counts a failure; how long it now locks, past `free` failures (doubling each time).
    pub fn fail(&mut self, free: u32) -> Option<Duration> {
        self.failures += 1;
        if self.failures < free {
            return None;
        }
        let doubling = 1u32 << (self.failures - free).min(10);
        let lock_for = (FIRST_LOCK * doubling).min(MAX_LOCK);
        self.until = Some(Instant::now() + lock_for);
        Some(lock_for)
    }
}

/// The requests waiting, and the locks wrong owner secrets earned.
#[derive(Debug)]
pub struct Consents {
    waiting: Mutex<VecDeque<Waiting>>,
    /// By client id.
    client_failures: Mutex<HashMap<String, Throttle>>,
    /// Clients whose metadata document could not be fetched, lately: id, why, when.
    unfetched: Mutex<VecDeque<(String, String, Instant)>>,
    /// The ledger's: the console redraws when a request comes or goes.
    changed: Arc<Event>,
}

/// Why a form was not taken.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// No such request waits (it expired, or was answered).
    Gone,
    /// The cookie or the CSRF token is not the request's.
    Forged,
    /// Not approved: no secret, a wrong one, or none configured and no code approved.
    NotApproved,
    /// Too many wrong secrets: the page is locked this long.
    Locked(Duration),
}

/// Why a request cannot wait for the owner.
#[derive(Debug, PartialEq)]
pub enum Full {
    /// Its client already has this many requests waiting.
    Client(usize),
    /// This many requests wait already.
    Room(usize),
    /// No randomness for its tokens.
    NoRandomness(String),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Client(n) => write!(
                f,
                "this client already has {n} requests waiting for the owner"
            ),
            Full::Room(n) => write!(f, "{n} requests already wait for the owner"),
            Full::NoRandomness(why) => f.write_str(why),
        }
    }
}

impl Consents {
    /// No request waiting; `changed` is notified whenever that changes.
    pub fn new(changed: Arc<Event>) -> Consents {
        Consents {
            waiting: Mutex::default(),
            client_failures: Mutex::default(),
            unfetched: Mutex::default(),
            changed,
        }
    }

    /// `asked` waits for the owner from now: its form's cookie, token and code are fresh.
    /// Refused when its client, or the room, is full: nothing waiting is pushed out for it.
    pub fn open(&self, asked: Asked) -> Result<Waiting, Full> {
        let fresh = |t: Result<String, String>| t.map_err(Full::NoRandomness);
        let waiting = Waiting {
            request: fresh(random_token(32))?,
            cookie: fresh(random_token(32))?,
            csrf: fresh(random_token(32))?,
            code: fresh(approval_code())?,
            asked,
            opened: Instant::now(),
            approved: false,
            failures: Throttle::default(),
        };
        let mut all = lock(&self.waiting);
        all.retain(|w| w.opened.elapsed() < PATIENCE);
        let client = &waiting.asked.client.id;
        let of_client = all.iter().filter(|w| &w.asked.client.id == client).count();
        if of_client >= MAX_WAITING_PER_CLIENT {
            return Err(Full::Client(of_client));
        }
        if all.len() >= MAX_WAITING {
            return Err(Full::Room(all.len()));
        }
        all.push_back(waiting.clone());
        drop(all);
        self.changed.notify(usize::MAX);
        Ok(waiting)
    }

    /// The owner approves the request whose page shows `code` (any case, dash or not); the
    /// client's name.
    pub fn approve(&self, code: &str) -> Option<String> {
        let wanted = normalized(code);
        let mut all = lock(&self.waiting);
        let waiting = all
            .iter_mut()
            .find(|w| w.opened.elapsed() < PATIENCE && normalized(&w.code) == wanted)?;
        waiting.approved = true;
        let name = waiting.asked.client.name.clone();
        drop(all);
        self.changed.notify(usize::MAX);
        Some(name)
    }

    /// The request `request` of the form, if its browser's `cookie` and `csrf` are the
    /// request's.
    pub fn find(
        &self,
        request: &str,
        cookie: Option<&str>,
        csrf: &str,
    ) -> Result<Waiting, Refused> {
        let all = lock(&self.waiting);
        let waiting = all
            .iter()
            .find(|w| w.request == request && w.opened.elapsed() < PATIENCE)
            .ok_or(Refused::Gone)?;
        let bound = cookie.is_some_and(|c| same_secret(c, &waiting.cookie));
        match bound && same_secret(csrf, &waiting.csrf) {
            true => Ok(waiting.clone()),
            false => Err(Refused::Forged),
        }
    }

    /// Whether `waiting` is approved: on the host, or by `secret` matching the owner's. A
    /// wrong secret counts towards the lock of this request and of its client; while either
    /// holds, no secret is even compared.
    pub fn approved(
        &self,
        waiting: &Waiting,
        secret: Option<&str>,
        owner: Option<&str>,
    ) -> Result<(), Refused> {
        let mut all = lock(&self.waiting);
        let Some(stored) = all.iter_mut().find(|w| w.request == waiting.request) else {
            return Err(Refused::Gone);
        };
        if stored.approved {
            return Ok(());
        }
        let (Some(secret), Some(owner)) = (secret.filter(|s| !s.is_empty()), owner) else {
            return Err(Refused::NotApproved);
        };
        let client = &stored.asked.client.id;
        let mut clients = lock(&self.client_failures);
        let client_lock = clients.get(client).and_then(Throttle::locked);
        if let Some(left) = stored.failures.locked().max(client_lock) {
            return Err(Refused::Locked(left));
        }
        if same_secret(secret, owner) {
            stored.failures = Throttle::default();
            return Ok(());
        }
        let request_lock = stored.failures.fail(FREE_FAILURES);
        if clients.len() >= MAX_THROTTLED_CLIENTS {
            clients.retain(|_, throttle| throttle.locked().is_some());
        }
        let of_client = clients.entry(client.clone()).or_default();
        let client_lock = of_client.fail(FREE_CLIENT_FAILURES);
        tracing::warn!(
            client_id = ?client,
            "a wrong owner secret on a consent page ({} on this request, {} by this client)",
            stored.failures.failures,
            of_client.failures
        );
        match request_lock.max(client_lock) {
            Some(lock_for) => Err(Refused::Locked(lock_for)),
            None => Err(Refused::NotApproved),
        }
    }

    /// Client `id`'s metadata document could not be fetched, for `why`: said at WARN, naming
    /// what to pin, the first time in [`PATIENCE`] (anyone may name any URL: a bounded list,
    /// and no line per request), and shown by `mcpx status` meanwhile.
    pub fn unfetched_document(&self, id: &str, why: &str) {
        let mut unfetched = lock(&self.unfetched);
        unfetched.retain(|(_, _, at)| at.elapsed() < PATIENCE);
        if unfetched.iter().any(|(known, _, _)| known == id) {
            return;
        }
        if unfetched.len() >= MAX_UNFETCHED {
            unfetched.pop_front();
        }
        unfetched.push_back((id.to_owned(), why.to_owned(), Instant::now()));
        drop(unfetched);
        tracing::warn!(
            client_id = ?id,
            why = ?why,
            "a client's metadata document cannot be fetched: its authorization is refused until \
             mcpx can reach it, or a copy is pinned ([auth.builtin.pinned] with its URL = a local file)"
        );
        self.changed.notify(usize::MAX);
    }

    /// The clients whose document could not be fetched lately, for `mcpx status`.
    pub fn unfetched(&self) -> Vec<crate::view::UnfetchedClient> {
        let unfetched = lock(&self.unfetched);
        unfetched
            .iter()
            .filter(|(_, _, at)| at.elapsed() < PATIENCE)
            .map(|(id, why, at)| crate::view::UnfetchedClient {
                client_id: id.clone(),
                why: why.clone(),
                age_ms: at.elapsed().as_millis() as u64,
            })
            .collect()
    }

    /// The request is answered (allowed or denied): it waits no more.
    pub fn close(&self, request: &str) {
        lock(&self.waiting).retain(|w| w.request != request);
        self.changed.notify(usize::MAX);
    }

    /// The requests waiting, for the console and `mcpx status`.
    pub fn views(&self) -> Vec<ConsentView> {
        let all = lock(&self.waiting);
        all.iter()
            .filter(|w| w.opened.elapsed() < PATIENCE)
            .map(|w| ConsentView {
                code: w.code.clone(),
                client: w.asked.client.name.clone(),
                client_id: w.asked.client.id.clone(),
                verified: w.asked.client.by_document,
                redirect_host: Client::redirect_host(&w.asked.redirect_uri),
                door: w.asked.resource.clone(),
                scopes: w.asked.scopes.clone(),
                approved: w.approved,
                age_ms: w.opened.elapsed().as_millis() as u64,
            })
            .collect()
    }
}

fn normalized(code: &str) -> String {
    code.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// `XXXX-XXXX`: about 40 bits, for a code that lives minutes and is typed by a person.
fn approval_code() -> Result<String, String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
    let letters: String = bytes
        .iter()
        .map(|b| CODE_LETTERS[*b as usize % CODE_LETTERS.len()] as char)
        .collect();
    Ok(format!("{}-{}", &letters[..4], &letters[4..]))
}

/// The consent page for `waiting`: what the client is and asks, the form, and `notice` (why
/// the last try was refused).
pub fn page(waiting: &Waiting, with_secret: bool, notice: Option<&str>) -> String {
    let asked = &waiting.asked;
    let client = &asked.client;
    let who = match client.by_document {
        true => format!(
            "its identity is vouched for by <b>{}</b>",
            escape(&Client::redirect_host(&client.id))
        ),
        false => "it registered itself: <b>its name is its own claim</b>".into(),
    };
    let notice = notice.map_or(String::new(), |n| {
        format!("<p class=\"notice\">{}</p>", escape(n))
    });
    let secret = match with_secret {
        true => "<p><label>Owner secret <input type=\"password\" name=\"secret\" autocomplete=\"current-password\" autofocus></label></p><p>or approve it on the mcpx host:</p>",
        false => "<p>Approve it on the mcpx host:</p>",
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>mcpx: allow {name}?</title>\
<style>body{{font:16px system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em}}\
code{{font-size:1.2em;background:#eee;padding:.2em .4em}}.notice{{color:#a00}}\
button{{font-size:1em;margin-right:1em}}</style></head><body>\
<h1>Allow <q>{name}</q> to use mcpx?</h1>{notice}\
<ul><li>Client: <b>{name}</b> ({id}); {who}.</li>\
<li>Its access goes back to: <b>{host}</b></li>\
<li>It will reach: <b>{door}</b></li>\
<li>Scopes: <b>{scopes}</b></li></ul>\
<form method=\"post\" action=\"/oauth/authorize\">\
<input type=\"hidden\" name=\"request\" value=\"{request}\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{secret}\
<p><code id=\"code\">mcpx auth approve {code}</code>, then Allow.</p>\
<p><button name=\"decision\" value=\"allow\">Allow</button>\
<button name=\"decision\" value=\"deny\">Deny</button></p></form></body></html>",
        name = escape(&client.name),
        id = escape(&client.id),
        host = escape(&Client::redirect_host(&asked.redirect_uri)),
        door = escape(&asked.resource),
        scopes = escape(&asked.scopes.join(" ")),
        request = waiting.request,
        csrf = waiting.csrf,
        code = waiting.code,
    )
}

/// `text` safe inside HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
