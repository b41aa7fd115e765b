//! `[limits]` at work: whether one caller's call may go upstream now. Rates are GCRA
//! (`governor`), kept per caller ([`Identity::owner_key`]: every session and token of one
//! person shares a budget) and per limit; the loop guard remembers, per caller, when each
//! distinct call (tool and canonical arguments) was last sent.
//!
//! A refused call never reaches its server. The gateway answers it in the caller's terms
//! ([`Refusal::answer`]): a tool result with `isError` for `tools/call`, since SDKs end a session
//! on an HTTP 429 or a surprising error, and a JSON-RPC error with [`RATE_LIMITED`] otherwise.

use crate::access::Identity;
use crate::config::{Limits, Rate};
use crate::jsonrpc::{ErrorObject, LIMIT_META, RATE_LIMITED};
use crate::protocol::Method;
use globset::{Glob, GlobMatcher};
use governor::{clock::Clock, DefaultKeyedRateLimiter, Quota};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Past this many callers remembered, the forgotten ones are swept on the next check.
const SWEEP_PAST: usize = 4096;

/// The limits in force; replaced whole when `[limits]` changes on a reload.
#[derive(Debug)]
pub(super) struct CallLimits {
    rules: RwLock<Arc<Rules>>,
}

/// One configuration's limits and what they remember.
struct Rules {
    config: Limits,
    every_call: Option<Limiter>,
    tools: Vec<(GlobMatcher, Limiter)>,
    loop_guard: Option<LoopGuard>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("config", &self.config)
            .finish()
    }
}

/// A rate, kept per caller.
struct Limiter {
    /// How it is named in answers, metrics and the audit log: `calls` or `tools."GLOB"`.
    name: String,
    rate: Rate,
    kept: DefaultKeyedRateLimiter<String>,
}

/// `[limits.loopGuard]` and, per caller and distinct call, when it was sent in the window.
struct LoopGuard {
    identical: usize,
    window: Duration,
    sent: Mutex<HashMap<(String, String), VecDeque<Instant>>>,
}

/// A call a limit refused: which, and when the caller may try again.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Refusal {
    /// `calls`, `tools."GLOB"` or `loopGuard`.
    pub limit: String,
    /// What the limit allows, for the message: `10/min`, or `3 identical calls in 2m`.
    pub allows: String,
    pub retry_after: Duration,
}

/// What a caller asks for, as far as limits care.
pub(super) struct Call<'a> {
    pub method: Method,
    /// The tool's or prompt's exposed name, or the resource's URI.
    pub name: &'a str,
    pub arguments: Option<&'a Value>,
}

impl CallLimits {
    /// The limits `config` sets.
    pub(super) fn new(config: &Limits) -> CallLimits {
        CallLimits {
            rules: RwLock::new(Arc::new(Rules::new(config))),
        }
    }

    /// Puts `config` in force; what the callers used is forgotten only when it changed.
    pub(super) fn reconfigure(&self, config: &Limits) {
        let mut rules = self.rules.write().unwrap_or_else(|e| e.into_inner());
        if rules.config != *config {
            *rules = Arc::new(Rules::new(config));
        }
    }

    /// Admits `call` from `caller`, counting it, or says which limit refuses it. Only what
    /// acts on a server is limited: `tools/call`, `prompts/get`, `resources/read`.
    pub(super) fn admit(&self, caller: &Identity, call: &Call<'_>) -> Result<(), Refusal> {
        if !matches!(
            call.method,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        ) {
            return Ok(());
        }
        let rules = Arc::clone(&self.rules.read().unwrap_or_else(|e| e.into_inner()));
        // Nothing configured (the default) costs a call no digest.
        if rules.limit_nothing() {
            return Ok(());
        }
        let caller = caller.owner_key();
        // The loop guard counts tool calls: a model repeating itself calls a tool.
        let guard = rules.loop_guard.as_ref();
        let repeated = guard
            .filter(|_| call.method == Method::ToolsCall)
            .map(|guard| {
                let arguments = call.arguments.unwrap_or(&Value::Null);
                let digest = crate::canonical::sha256(
                    &json!([call.name, arguments]),
                    crate::canonical::Numbers::Rfc8785,
                );
                (guard, (caller.clone(), digest))
            });
        if let Some((guard, key)) = &repeated {
            guard.check(key)?;
        }
        let tools = rules
            .tools
            .iter()
            .filter(|(glob, _)| call.method == Method::ToolsCall && glob.is_match(call.name))
            .map(|(_, limiter)| limiter);
        for limiter in tools.chain(&rules.every_call) {
            limiter.take(&caller)?;
        }
        if let Some((guard, key)) = repeated {
            guard.sent(key);
        }
        Ok(())
    }
}

impl Rules {
    fn limit_nothing(&self) -> bool {
        self.every_call.is_none() && self.tools.is_empty() && self.loop_guard.is_none()
    }

    fn new(config: &Limits) -> Rules {
        let every_call = config
            .calls
            .map(|rate| Limiter::new("calls".into(), rate, config.burst));
        let tools = config
            .tools
            .iter()
            .filter_map(|(pattern, limit)| {
                // Each pattern was checked when the configuration was read.
                let glob = Glob::new(pattern).ok()?.compile_matcher();
                let name = format!("tools.{pattern:?}");
                Some((glob, Limiter::new(name, limit.calls, limit.burst)))
            })
            .collect();
        let loop_guard = config.loop_guard.as_ref().map(|guard| LoopGuard {
            identical: guard.identical as usize,
            window: guard.window,
            sent: Mutex::default(),
        });
        Rules {
            config: config.clone(),
            every_call,
            tools,
            loop_guard,
        }
    }
}

impl Limiter {
    /// `rate`, with `burst` calls at once (by default the rate's count).
    fn new(name: String, rate: Rate, burst: Option<u32>) -> Limiter {
        let count = NonZeroU32::new(rate.count).unwrap_or(NonZeroU32::MIN);
        let burst = burst.and_then(NonZeroU32::new).unwrap_or(count);
        let quota = Quota::with_period(rate.per / count.get())
            .unwrap_or_else(|| Quota::per_second(count))
            .allow_burst(burst);
        Limiter {
            name,
            rate,
            kept: DefaultKeyedRateLimiter::keyed(quota),
        }
    }

    /// Takes one call of `caller`'s, or says when the next one may come.
    fn take(&self, caller: &String) -> Result<(), Refusal> {
        if self.kept.len() > SWEEP_PAST {
            self.kept.retain_recent();
        }
        self.kept.check_key(caller).map_err(|not_until| Refusal {
            limit: self.name.clone(),
            allows: self.rate.to_string(),
            retry_after: not_until.wait_time_from(governor::clock::DefaultClock::default().now()),
        })
    }
}

impl LoopGuard {
    /// Refuses a call sent `identical` times within the window already.
    fn check(&self, key: &(String, String)) -> Result<(), Refusal> {
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if sent.len() > SWEEP_PAST {
            sent.retain(|_, times| times.back().is_some_and(|t| now - *t < self.window));
        }
        let Some(times) = sent.get_mut(key) else {
            return Ok(());
        };
        while times.front().is_some_and(|t| now - *t >= self.window) {
            times.pop_front();
        }
        match times.front() {
            Some(oldest) if times.len() >= self.identical => Err(Refusal {
                limit: "loopGuard".into(),
                allows: format!(
                    "{} identical calls in {}",
                    self.identical,
                    humantime::format_duration(self.window)
                ),
                retry_after: self.window.saturating_sub(now - *oldest),
            }),
            _ => Ok(()),
        }
    }

    /// Notes that the call `key` names was sent now.
    fn sent(&self, key: (String, String)) {
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        sent.entry(key).or_default().push_back(Instant::now());
    }
}

impl Refusal {
    /// The retry time in whole milliseconds, rounded up so that a retry then is admitted.
    pub(super) fn retry_after_ms(&self) -> u64 {
        let micros = self.retry_after.as_micros();
        u64::try_from(micros.div_ceil(1000)).unwrap_or(u64::MAX)
    }

    fn message(&self) -> String {
        let seconds = self.retry_after_ms().div_ceil(1000).max(1);
        format!(
            "mcpx refused this call: limits.{} allows {} per caller; retry in {seconds} s",
            self.limit, self.allows
        )
    }

    /// The answer to the refused `method`: a tool result with `isError` for `tools/call`
    /// (its `_meta` says the limit and the retry time), a [`RATE_LIMITED`] error otherwise,
    /// and for a call that asked for a task (`task_asked`), whose client expects a task where
    /// a tool result would be.
    pub(super) fn answer(&self, method: Method, task_asked: bool) -> Result<Value, ErrorObject> {
        let retry_after_ms = self.retry_after_ms();
        if method == Method::ToolsCall && !task_asked {
            return Ok(json!({
                "content": [{"type": "text", "text": self.message()}],
                "isError": true,
                "_meta": {LIMIT_META: self.limit, "mcpx/retryAfterMs": retry_after_ms},
            }));
        }
        Err(ErrorObject::new(RATE_LIMITED, self.message())
            .with_data(json!({"limit": self.limit, "retryAfterMs": retry_after_ms})))
    }
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod limits {
            use super::super::super::{Call, CallLimits};
            use crate::access::{Identity, Kind};
            use crate::config::Limits;
            use crate::jsonrpc::RATE_LIMITED;
            use crate::protocol::Method;
            use serde_json::json;

            fn limits(toml_text: &str) -> CallLimits {
                let config: Limits = toml::from_str(toml_text).unwrap();
                CallLimits::new(&config)
            }

            fn call<'a>(name: &'a str, arguments: &'a serde_json::Value) -> Call<'a> {
                Call {
                    method: Method::ToolsCall,
                    name,
                    arguments: Some(arguments),
                }
            }

            #[test]
            fn the_call_past_the_burst_is_refused_with_a_retry_time() {
                let limits = limits(r#"calls = "3/hour""#);
                let me = Identity::of_kind(Kind::LocalOwner);
                let arguments = json!({});
                for _ in 0..3 {
                    limits.admit(&me, &call("a__t", &arguments)).unwrap();
                }
                let refusal = limits.admit(&me, &call("a__t", &arguments)).unwrap_err();
                assert_eq!(refusal.limit, "calls");
                // One call back every 20 minutes.
                assert!(refusal.retry_after_ms() > 19 * 60 * 1000, "{refusal:?}");
                let answer = refusal.answer(Method::ToolsCall, false).unwrap();
                assert_eq!(answer["isError"], true);
                assert_eq!(answer["_meta"]["mcpx/limit"], "calls");
                let error = refusal.answer(Method::PromptsGet, false).unwrap_err();
                assert_eq!(error.code, RATE_LIMITED);
                assert!(!(-32768..=-32000).contains(&error.code));
                assert!(error.data.unwrap()["retryAfterMs"].as_u64().unwrap() > 0);
                let task = refusal.answer(Method::ToolsCall, true).unwrap_err();
                assert_eq!(task.code, RATE_LIMITED);
            }

            #[test]
            fn each_caller_has_a_budget_of_its_own() {
                let limits = limits(r#"calls = "1/hour""#);
                let arguments = json!({});
                let local = Identity::of_kind(Kind::LocalOwner);
                let editor = Identity::of_kind(Kind::AttachedEditor);
                limits.admit(&local, &call("a__t", &arguments)).unwrap();
                limits.admit(&editor, &call("a__t", &arguments)).unwrap();
                assert!(limits.admit(&local, &call("a__t", &arguments)).is_err());
            }

            #[test]
            fn a_tool_glob_limits_only_the_tools_it_matches() {
                let limits = limits("[tools.\"paid__*\"]\ncalls = \"1/hour\"");
                let me = Identity::of_kind(Kind::LocalOwner);
                let arguments = json!({});
                limits
                    .admit(&me, &call("paid__search", &arguments))
                    .unwrap();
                let refusal = limits
                    .admit(&me, &call("paid__fetch", &arguments))
                    .unwrap_err();
                assert_eq!(refusal.limit, "tools.\"paid__*\"");
                for _ in 0..5 {
                    limits.admit(&me, &call("free__echo", &arguments)).unwrap();
                }
            }

            #[test]
            fn the_loop_guard_stops_identical_calls_and_not_different_ones() {
                let limits = limits("[loopGuard]\nidentical = 2\nwindow = \"1h\"");
                let me = Identity::of_kind(Kind::LocalOwner);
                let (same, reordered) = (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1}));
                limits.admit(&me, &call("s__t", &same)).unwrap();
                limits.admit(&me, &call("s__t", &reordered)).unwrap();
                let refusal = limits.admit(&me, &call("s__t", &same)).unwrap_err();
                assert_eq!(refusal.limit, "loopGuard");
                for n in 0..5 {
                    limits.admit(&me, &call("s__t", &json!({"a": n}))).unwrap();
                }
                limits.admit(&me, &call("s__other", &same)).unwrap();
            }

            #[test]
            fn a_reload_with_the_same_limits_keeps_what_was_used() {
                let config: Limits = toml::from_str(r#"calls = "1/hour""#).unwrap();
                let limits = CallLimits::new(&config);
                let me = Identity::of_kind(Kind::LocalOwner);
                let arguments = json!({});
                limits.admit(&me, &call("a__t", &arguments)).unwrap();
                limits.reconfigure(&config);
                assert!(limits.admit(&me, &call("a__t", &arguments)).is_err());
                limits.reconfigure(&toml::from_str(r#"calls = "2/hour""#).unwrap());
                limits.admit(&me, &call("a__t", &arguments)).unwrap();
            }
        }
    }
}
