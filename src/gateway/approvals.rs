//! `[approvals]`: a call of a tool `tools` names waits, after every other policy
//! ([`super::policies`]), for a person to approve it where they already look: `mcpx status`,
//! the console, `mcpx approvals approve|deny ID`. An approval is of one held call, so it is
//! bound to its caller, its tool and its arguments (their canonical SHA-256 is shown beside
//! them), and used once: the decision takes the call off the list, and its id then names
//! nothing. A call not decided within `timeout` is refused, as a denied one is. Only the admin
//! socket decides (as its owner, and never from one of mcpx's own upstreams); nothing a client
//! sends, an elicitation's answer included, counts as the person's approval. While it waits,
//! a caller that gave a `progressToken` hears progress saying so.

use super::policies::Refused;
use super::results::tool_error;
use super::target::{Resolved, Target};
use super::{CommandError, Gateway, RequestContext};
use crate::access::Identity;
use crate::canonical::{self, Numbers};
use crate::config::Approvals as Config;
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Notification, INTERNAL_ERROR, INVALID_PARAMS};
use crate::protocol::Notice;
use crate::sync::{lock, read, write};
use crate::view::ApprovalView;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How often a waiting caller hears that it still waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The most characters of a call's arguments shown.
const SHOWN_ARGUMENTS: usize = 400;

/// Where the daemon serves a waiting call's page, under `[auth] publicUrl`
/// (`crate::transport::http`'s approval page).
pub const APPROVAL_PAGE: &str = "/approvals/";

/// Wrong owner secrets a call's page takes before it locks (it is then decided on the host).
const PAGE_FAILURES: u32 = 5;

/// Wrong owner secrets all pages take together before every page locks for a while (doubling
/// with each one more): a guess spread over many calls' pages is one guesser.
const ALL_PAGES_FAILURES: u32 = 10;

/// How many calls one caller may hold waiting for approval, and how many may wait in all: past
/// either, a call is refused at once, saying which.
const MOST_HELD_EACH: usize = 16;
const MOST_HELD: usize = 256;

/// A waiting call as its approval page shows it.
#[derive(Debug, Clone)]
pub struct Approval {
    /// What `mcpx status` shows of it.
    pub view: ApprovalView,
    /// Its arguments, whole, as indented JSON.
    pub arguments: String,
    /// Whether its page took too many wrong secrets.
    pub locked: bool,
}

/// The calls waiting for approval, and which tools' calls do.
#[derive(Debug, Default)]
pub(super) struct Approvals {
    config: RwLock<(Config, GlobSet)>,
    waiting: Mutex<HashMap<String, Waiting>>,
    /// `{publicUrl}/approvals/`, where a call's page would be.
    page: Option<String>,
    /// Whether this process serves those pages (the daemon: [`Gateway::serve_approval_pages`]).
    serves_pages: std::sync::atomic::AtomicBool,
    /// Wrong owner secrets on any page, and the lock of every page they earned.
    wrong_secrets: Mutex<crate::access::builtin::consent::Throttle>,
}

#[derive(Debug)]
struct Waiting {
    caller: Arc<Identity>,
    tool: String,
    arguments: Value,
    sha256: String,
    since: Instant,
    until: Instant,
    decided: async_channel::Sender<Decided>,
    /// Wrong owner secrets its page took.
    failures: u32,
}

/// A person's decision on a held call, and who made it.
#[derive(Debug, Clone)]
pub struct Decided {
    /// Whether the call may go on.
    pub approve: bool,
    /// Who decided (for the audit log).
    pub by: String,
}

impl Approvals {
    /// `[approvals]` as configured; `page`, where calls' pages are, when they are served.
    pub(super) fn new(config: &Config, page: Option<String>) -> Approvals {
        let approvals = Approvals {
            page,
            ..Approvals::default()
        };
        approvals.reconfigure(config);
        approvals
    }

    /// Puts `config` in force (a reload); calls already waiting wait on.
    pub(super) fn reconfigure(&self, config: &Config) {
        let mut globs = GlobSetBuilder::new();
        // Checked when the configuration was read.
        for glob in config.tools.iter().filter_map(|g| Glob::new(g).ok()) {
            globs.add(glob);
        }
        let globs = globs.build().unwrap_or_else(|_| GlobSet::empty());
        *write(&self.config) = (config.clone(), globs);
    }

    /// Whether a call of `tool` (exposed) waits for approval.
    pub(super) fn asks_about(&self, tool: &str) -> bool {
        let config = read(&self.config);
        !config.0.tools.is_empty() && config.1.is_match(tool)
    }

    /// Where calls' pages are, when this process serves them.
    fn served_page(&self) -> Option<&str> {
        let served = self.serves_pages.load(std::sync::atomic::Ordering::Acquire);
        self.page.as_deref().filter(|_| served)
    }

    /// The calls waiting, oldest first.
    pub(super) fn views(&self) -> Vec<ApprovalView> {
        let waiting = lock(&self.waiting);
        let mut views: Vec<ApprovalView> = waiting.iter().map(|(id, w)| w.view(id)).collect();
        views.sort_by_key(|v| std::cmp::Reverse(v.age_ms));
        views
    }
}

impl Waiting {
    fn view(&self, id: &str) -> ApprovalView {
        let now = Instant::now();
        let mut arguments = self.arguments.to_string();
        if let Some((cut, _)) = arguments.char_indices().nth(SHOWN_ARGUMENTS) {
            arguments.truncate(cut);
            arguments.push('…');
        }
        ApprovalView {
            id: id.to_owned(),
            caller: caller_name(&self.caller),
            tool: self.tool.clone(),
            arguments,
            arguments_sha256: self.sha256.clone(),
            age_ms: now.duration_since(self.since).as_millis() as u64,
            ends_in_ms: self.until.saturating_duration_since(now).as_millis() as u64,
        }
    }
}

/// Where calls' pages are (`{publicUrl}/approvals/`): served by the daemon's built-in
/// authorization server, with an owner secret to decide by; none otherwise.
pub(super) fn page_of(config: &crate::config::Config) -> Option<String> {
    let auth = &config.auth;
    let served =
        auth.mode == crate::config::AuthMode::Builtin && auth.builtin.owner_secret.is_some();
    let public = auth.public_url.as_deref().filter(|_| served)?;
    Some(format!("{}{APPROVAL_PAGE}", public.trim_end_matches('/')))
}

/// How a caller is named to the person deciding.
fn caller_name(caller: &Identity) -> String {
    let audited = caller.audited();
    let named = audited["sub"].as_str().or(audited["kind"].as_str());
    named.unwrap_or("someone").to_owned()
}

impl Gateway {
    /// Holds a call of `target` with `params` by `ctx.caller` until a person approves it (then
    /// it goes on), denies it, or `timeout` passes (then its answer is the refusal); `tell` is
    /// told, now and every [`PROGRESS_EVERY`], what it waits for.
    pub(super) async fn approved(
        &self,
        target: &Target,
        params: &Value,
        ctx: &RequestContext,
        tell: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<(), Refused> {
        let tool = &target.exposed;
        let arguments = params.member("arguments").cloned().unwrap_or(json!({}));
        let sha256 = canonical::sha256(&arguments, Numbers::Rfc8785);
        let mut id = [0u8; 9];
        getrandom::fill(&mut id).map_err(|e| {
            Err(ErrorObject::new(
                INTERNAL_ERROR,
                format!("no approval id: {e}"),
            ))
        })?;
        let id = format!("a{}", hex::encode(id));
        self.room_to_hold(ctx, params)?;
        let timeout = read(&self.approvals.config).0.timeout;
        let (decided, decision) = async_channel::bounded(1);
        let now = Instant::now();
        let waiting = Waiting {
            caller: Arc::clone(&ctx.caller),
            tool: tool.clone(),
            arguments,
            sha256,
            since: now,
            until: crate::deadline::after(timeout),
            decided,
            failures: 0,
        };
        lock(&self.approvals.waiting).insert(id.clone(), waiting);
        self.live.ledger().notify_changed();
        tracing::info!(%id, tool = %tool, "a call waits for approval: mcpx approvals approve {id}");
        let mut message = format!("waiting for approval: mcpx approvals approve {id}");
        if let Some(page) = self.approvals.served_page() {
            message.push_str(&format!(" on the host, or {page}{id}"));
        }
        let waited = async {
            loop {
                tell(&message);
                let next = smol::future::or(async { decision.recv().await.ok() }, async {
                    crate::deadline::sleep(PROGRESS_EVERY).await;
                    None
                });
                if let Some(decided) = next.await {
                    return Some(decided);
                }
            }
        };
        let timed = smol::future::or(async { Some(waited.await) }, async {
            crate::deadline::sleep(timeout).await;
            None
        });
        // Cancelled by its client, it waits no more, and nobody can approve it.
        let outcome = ctx.cancel.run(timed).await.flatten().flatten();
        let held = lock(&self.approvals.waiting).remove(&id);
        self.live.ledger().notify_changed();
        let (said, by) = match (&outcome, held) {
            (Some(decided), _) => (
                if decided.approve {
                    "approved"
                } else {
                    "denied"
                },
                decided.by.as_str(),
            ),
            (None, Some(_)) => ("timeout", "nobody"),
            (None, None) => ("cancelled", "nobody"),
        };
        self.observer.approval(&ctx.caller, tool, said, by);
        let asks_for_task = params.member("task").is_some();
        match outcome {
            Some(Decided { approve: true, .. }) => Ok(()),
            Some(Decided { approve: false, by }) => Err(refusal(
                asks_for_task,
                format!("Denied by {by}: a person did not approve this call of {tool}"),
            )),
            None => Err(refusal(
                asks_for_task,
                format!("Not approved within {}: a call of {tool} waits for a person's approval ([approvals] timeout), and none came", humantime::format_duration(timeout)),
            )),
        }
    }

    /// Whether `ctx`'s caller may hold one more call for approval: fewer than
    /// [`MOST_HELD_EACH`] of theirs wait, and fewer than [`MOST_HELD`] in all.
    fn room_to_hold(&self, ctx: &RequestContext, params: &Value) -> Result<(), Refused> {
        let waiting = lock(&self.approvals.waiting);
        let caller = ctx.caller.owner_key();
        let theirs = waiting
            .values()
            .filter(|w| w.caller.owner_key() == caller)
            .count();
        let full = match (theirs >= MOST_HELD_EACH, waiting.len() >= MOST_HELD) {
            (true, _) => format!("you hold {theirs} calls waiting for approval, the most one caller may ({MOST_HELD_EACH})"),
            (false, true) => format!("{MOST_HELD} calls wait for approval, the most that may"),
            (false, false) => return Ok(()),
        };
        let asks_for_task = params.member("task").is_some();
        Err(refusal(
            asks_for_task,
            format!("Not held: {full}; one can wait when one is decided"),
        ))
    }

    /// Tells callers of the pages this process serves (the daemon, whose HTTP door has them).
    pub fn serve_approval_pages(&self) {
        let serves = &self.approvals.serves_pages;
        serves.store(true, std::sync::atomic::Ordering::Release);
    }

    /// The call waiting as `id`, as its page shows it.
    pub fn approval(&self, id: &str) -> Option<Approval> {
        let waiting = lock(&self.approvals.waiting);
        let held = waiting.get(id)?;
        Some(Approval {
            view: held.view(id),
            arguments: serde_json::to_string_pretty(&held.arguments).unwrap_or_default(),
            locked: held.failures >= PAGE_FAILURES
                || lock(&self.approvals.wrong_secrets).locked().is_some(),
        })
    }

    /// Counts a wrong owner secret on the page of the call waiting as `id`, and on all pages.
    pub fn approval_secret_failed(&self, id: &str) {
        let every_page = lock(&self.approvals.wrong_secrets).fail(ALL_PAGES_FAILURES);
        if let Some(lock_for) = every_page {
            tracing::warn!("approval pages locked for {lock_for:?} after wrong owner secrets on them: decide calls on the host");
        }
        if let Some(held) = lock(&self.approvals.waiting).get_mut(id) {
            held.failures += 1;
            if held.failures == PAGE_FAILURES {
                tracing::warn!(%id, "a call's approval page locked after wrong owner secrets: decide it on the host");
            }
        }
    }

    /// Holds `resolved`, a direct call, for approval ([`Gateway::approved`]); its caller hears
    /// progress while it waits, if it gave a `progressToken`.
    pub(super) async fn approved_call(
        &self,
        resolved: &Resolved<'_>,
        ctx: &RequestContext,
    ) -> Result<(), Refused> {
        let token = resolved
            .params
            .member("_meta")
            .and_then(|m| m.member("progressToken"));
        let heard = std::sync::atomic::AtomicU64::new(0);
        let tell = |message: &str| {
            let Some(token) = token else { return };
            let progress = heard.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let params = json!({"progressToken": token, "progress": progress, "message": message});
            let _ = ctx
                .outbound
                .try_send(Notification::new(Notice::Progress, params));
        };
        let params = resolved.params.as_ref();
        self.approved(&resolved.target, params, ctx, &tell).await
    }

    /// Decides the call waiting as `id`, as `by`: taken off the list (an id is used once).
    pub fn decide_approval(
        &self,
        id: &str,
        approve: bool,
        by: &str,
    ) -> Result<String, CommandError> {
        let held = lock(&self.approvals.waiting).remove(id);
        let Some(held) = held else {
            return Err(CommandError::NoSuchApproval(id.to_owned()));
        };
        self.live.ledger().notify_changed();
        let decided = Decided {
            approve,
            by: by.to_owned(),
        };
        // Gone meanwhile (cancelled, timed out): the call is answered already.
        let _ = held.decided.try_send(decided);
        let word = if approve { "approved" } else { "denied" };
        Ok(format!(
            "{word} {id}: {} of {}",
            held.tool,
            caller_name(&held.caller)
        ))
    }
}

/// A refused call's answer saying `why`: a tool error, or an error where a client expects a
/// task (`params.task`) and the call is not one yet.
fn refusal(asks_for_task: bool, why: String) -> Refused {
    match asks_for_task {
        false => Ok(tool_error(why)),
        true => Err(ErrorObject::new(INVALID_PARAMS, why)),
    }
}
