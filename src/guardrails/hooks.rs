//! `[[guardrails.hooks]]`: outside policies, asked whether a call may go on or a result may
//! leave. The messages are agentgateway's ExtMCP (`ext_mcp.proto`: `McpRequest` and
//! `McpResponse` in, `McpRequestResult` and `McpResponseResult` back) in proto3's JSON
//! mapping, so that one policy server serves both gateways (behind a gRPC-JSON transcoder, or
//! answering JSON itself):
//!
//! ```json
//! {"serviceName": "github", "method": "tools/call",
//!  "metadataContext": {"phase": "request", "name": "github__create_issue", "caller": {...}},
//!  "mcpRequest": {"name": "create_issue", "arguments": {...}}}
//! ```
//!
//! (`mcpResponse`, the result, in place of `mcpRequest` for a response hook), answered
//! `{"pass": {}}`, `{"mutated": {...}}` (the params or the result to use instead) or
//! `{"error": {"code": "PERMISSION_DENIED", "reason": "...", "mcpError": {...}}}`.
//!
//! A `url` hook gets each message as a `POST`, on a kept-alive connection where the policy
//! server keeps it open; a `command` hook is one process, kept running
//! and asked one message at a time, a line each way (restarted when it exits, or when it
//! missed a deadline, after which its next line could be a late answer to the wrong call).
//! Its stderr is dropped. A hook that does not answer in time, or answers what is none of
//! these, is its `failMode`.

use crate::config::{FailMode, Hook, HookPhase};
use crate::net::client::Pool;
use crate::sync::read;
use globset::{Glob, GlobSet, GlobSetBuilder};
use http_body_util::{BodyExt, Limited};
use serde_json::{json, Value};
use smol::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use smol::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, RwLock};

/// The most bytes of a hook's answer read.
const MAX_ANSWER: usize = 16 << 20;

/// The hooks in force (a reload replaces them).
#[derive(Debug, Default)]
pub struct Hooks {
    each: RwLock<Arc<Vec<Arc<Compiled>>>>,
}

#[derive(Debug)]
struct Compiled {
    config: Hook,
    tools: Option<GlobSet>,
    /// A `url` hook's connections (or why its URL cannot be requested).
    pool: Option<Result<Pool, String>>,
    /// A `command` hook's process, while it runs.
    process: smol::lock::Mutex<Option<Running>>,
}

#[derive(Debug)]
struct Running {
    child: Child,
    /// Registered as mcpx's own, so that no sweep of strays takes it for one.
    _own: crate::upstream::orphans::Own,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// What a hook is asked about: one call, or one result, of `server`'s.
#[derive(Debug)]
pub struct Asked<'a> {
    /// Before the call, or as its result leaves.
    pub phase: HookPhase,
    /// The server's configured name (ExtMCP's `serviceName`).
    pub server: &'a str,
    /// The method (a task's result is `tools/call`'s).
    pub method: &'a str,
    /// The exposed name (a resource's URI), when known: a task's result read by its id is
    /// asked about by every hook of its phase and method.
    pub name: Option<&'a str>,
    /// Who called, as the audit log shows them (never a token).
    pub caller: Value,
}

/// A hook's word.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Go on, as is.
    Pass,
    /// Go on with this in place of the params (request) or the result (response).
    Replace(Value),
    /// Refused: `reason` for the caller, or the JSON-RPC error the hook gave.
    Deny {
        /// What the caller is told.
        reason: String,
        /// ExtMCP's `mcpError`, when the hook gave one: the answer, as it is.
        error: Option<Value>,
    },
}

impl Hooks {
    /// Puts `hooks` in force. Running `command` hooks of the old set stop when their last call
    /// is done with them.
    pub fn reconfigure(&self, hooks: &[Hook]) {
        let compiled = hooks.iter().map(|hook| {
            Arc::new(Compiled {
                config: hook.clone(),
                tools: (!hook.tools.is_empty()).then(|| globs(&hook.tools)),
                pool: hook.url.as_deref().map(|url| {
                    let uri = url.parse::<http::Uri>();
                    let shown = crate::redact::url_shown(url);
                    let uri = uri.map_err(|e| format!("{shown} is not a URL: {e}"))?;
                    Ok(Pool::new(uri, http::HeaderMap::new()))
                }),
                process: smol::lock::Mutex::new(None),
            })
        });
        *crate::sync::write(&self.each) = Arc::new(compiled.collect());
    }

    /// Whether any hook is asked about `phase`: nothing is built for a call when none is.
    pub fn any(&self, phase: HookPhase) -> bool {
        read(&self.each).iter().any(|h| h.config.phase == phase)
    }

    /// Asks every hook `asked` concerns, in order, about `payload` (the params, or the
    /// result): each replacement is what the next is asked about; the first refusal ends it.
    pub async fn ask(&self, asked: &Asked<'_>, payload: Value) -> Verdict {
        let hooks = Arc::clone(&read(&self.each));
        let mut current = payload;
        let mut replaced = false;
        for hook in hooks.iter().filter(|h| h.concerns(asked)) {
            match hook.ask(asked, &current).await {
                Verdict::Pass => {}
                Verdict::Replace(with) => {
                    current = with;
                    replaced = true;
                }
                deny @ Verdict::Deny { .. } => return deny,
            }
        }
        match replaced {
            true => Verdict::Replace(current),
            false => Verdict::Pass,
        }
    }
}

impl Compiled {
    fn concerns(&self, asked: &Asked<'_>) -> bool {
        let hook = &self.config;
        let named = match (&self.tools, asked.name) {
            (None, _) | (Some(_), None) => true,
            (Some(globs), Some(name)) => globs.is_match(name),
        };
        hook.phase == asked.phase && named && hook.methods.iter().any(|m| m == asked.method)
    }

    /// This hook's verdict on `payload`, its `failMode` when it gives none.
    async fn ask(&self, asked: &Asked<'_>, payload: &Value) -> Verdict {
        let (phase, carried) = match asked.phase {
            HookPhase::Request => ("request", "mcpRequest"),
            HookPhase::Response => ("response", "mcpResponse"),
        };
        let message = json!({
            "serviceName": asked.server,
            "method": asked.method,
            "metadataContext": {"phase": phase, "name": asked.name, "caller": asked.caller},
            carried: payload,
        });
        let deadline = crate::deadline::sleep(self.config.timeout);
        let answered = smol::future::or(self.send(&message), async {
            deadline.await;
            Err(format!("no answer within {:?}", self.config.timeout))
        });
        let outcome = answered.await.and_then(|answer| verdict(&answer));
        match (outcome, self.config.fail_mode) {
            (Ok(verdict), _) => verdict,
            (Err(why), mode) => {
                let hook = self.describe();
                if self.config.url.is_none() {
                    // Its next line might answer this call: it starts afresh.
                    if let Some(mut running) = self.process.lock().await.take() {
                        let _ = running.child.kill();
                    }
                }
                tracing::warn!(%hook, %why, fail_mode = ?mode, "[guardrails] a hook did not answer");
                match mode {
                    FailMode::Allow => Verdict::Pass,
                    FailMode::Deny => Verdict::Deny {
                        reason: format!("the policy hook {hook} could not be asked ({why}), and it fails closed"),
                        error: None,
                    },
                }
            }
        }
    }

    /// The hook as a refusal or a log line names it: its URL without what may hold a key
    /// (user, password, query), or its program without its arguments (which may hold one too).
    fn describe(&self) -> String {
        match &self.config.url {
            Some(url) => crate::redact::url_shown(url),
            None => self.config.command.first().cloned().unwrap_or_default(),
        }
    }

    /// `message` sent, the answer read.
    async fn send(&self, message: &Value) -> Result<Value, String> {
        let body = message.to_string();
        let text = match &self.pool {
            Some(pool) => post(pool.as_ref().map_err(Clone::clone)?, body).await?,
            None => self.exchange(&body).await?,
        };
        serde_json::from_slice(&text).map_err(|e| format!("its answer is not JSON: {e}"))
    }

    /// One line to the hook's process and one back, starting it if it is not running.
    async fn exchange(&self, line: &str) -> Result<Vec<u8>, String> {
        let mut process = self.process.lock().await;
        if process
            .as_mut()
            .is_none_or(|p| matches!(p.child.try_status(), Ok(Some(_))))
        {
            *process = Some(self.start()?);
        }
        let running = process.as_mut().expect("started");
        let failed = |e: std::io::Error| format!("its pipe failed: {e}");
        running
            .stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .map_err(failed)?;
        running.stdin.flush().await.map_err(failed)?;
        let mut answer = Vec::new();
        let mut limited = (&mut running.stdout).take(MAX_ANSWER as u64);
        let read = limited
            .read_until(b'\n', &mut answer)
            .await
            .map_err(failed)?;
        if read == 0 || answer.last() != Some(&b'\n') {
            *process = None;
            return Err("it exited, or its answer was over 16 MiB, without a line".into());
        }
        Ok(answer)
    }

    fn start(&self) -> Result<Running, String> {
        let [program, args @ ..] = self.config.command.as_slice() else {
            return Err("it has no command".into());
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let (mut child, own) =
            crate::upstream::orphans::spawn_own(|| command.spawn(), |child| child.id())
                .map_err(|e| format!("{program} could not be started: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Running {
            child,
            _own: own,
            stdin,
            stdout,
        })
    }
}

/// `body` POSTed on one of `pool`'s connections: the answer's body, when it is a success.
async fn post(pool: &Pool, body: String) -> Result<Vec<u8>, String> {
    let request = pool.build(http::Method::POST, body, http::HeaderMap::new())?;
    let (mut link, response) = pool.send(request).await?;
    let (parts, body) = response.into_parts();
    let read = link.drive(async |_| Limited::new(body, MAX_ANSWER).collect().await);
    let bytes = read
        .await
        .map_err(|e| format!("reading its answer failed: {e}"))?;
    pool.recycle(link);
    match parts.status.is_success() {
        true => Ok(bytes.to_bytes().to_vec()),
        false => Err(format!("it answered {}", parts.status)),
    }
}

/// The verdict an ExtMCP result in JSON says.
fn verdict(answer: &Value) -> Result<Verdict, String> {
    if answer.get("pass").is_some() {
        return Ok(Verdict::Pass);
    }
    if let Some(with) = answer.get("mutated") {
        return match with.is_object() {
            true => Ok(Verdict::Replace(with.clone())),
            false => Err("its mutated is not an object".into()),
        };
    }
    let Some(error) = answer.get("error") else {
        return Err("it answered none of pass, mutated and error".into());
    };
    let code = match &error["code"] {
        Value::String(code) => code.clone(),
        Value::Number(n) => n.to_string(),
        _ => "UNKNOWN".to_owned(),
    };
    let reason = match error["reason"].as_str() {
        Some(reason) if !reason.is_empty() => reason.to_owned(),
        _ => format!("refused by policy ({code})"),
    };
    let given = error.get("mcpError").filter(|e| e["message"].is_string());
    Ok(Verdict::Deny {
        reason,
        error: given.cloned(),
    })
}

fn globs(patterns: &[String]) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        // Checked when the configuration was read.
        if let Ok(glob) = Glob::new(pattern) {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| GlobSet::empty())
}

#[cfg(test)]
mod every_revision {
    mod guardrails {
        use super::super::*;

        /// Each ExtMCP answer is read as what it says; anything else is no answer.
        #[test]
        fn extmcp_answers_are_read_as_they_say() {
            assert_eq!(verdict(&json!({"pass": {}})), Ok(Verdict::Pass));
            let with = json!({"arguments": {"a": 1}});
            assert_eq!(
                verdict(&json!({"mutated": with})),
                Ok(Verdict::Replace(with))
            );
            let denied = json!({"error": {"code": "PERMISSION_DENIED", "reason": "no"}});
            assert_eq!(
                verdict(&denied),
                Ok(Verdict::Deny {
                    reason: "no".into(),
                    error: None
                })
            );
            let given = json!({"code": -32001, "message": "custom"});
            let denied = json!({"error": {"code": 1, "mcpError": given}});
            assert_eq!(
                verdict(&denied),
                Ok(Verdict::Deny {
                    reason: "refused by policy (1)".into(),
                    error: Some(given)
                })
            );
            for none in [json!({}), json!({"mutated": "x"}), json!([1])] {
                assert!(verdict(&none).is_err(), "{none}");
            }
        }
    }
}
