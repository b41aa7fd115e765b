//! How a call ended, as mcpx names it. [`Failure`]: why a call to an upstream got no answer of
//! the server's own. Both wires (stdio, HTTP) and the gateway name the same few failures, so they
//! are one type, and each is told to the client in one wording; a server's own JSON-RPC error is
//! not a failure of mcpx's and passes unchanged. [`Outcome`]: how any answered (or unanswered)
//! request ended, as the metrics, the audit log and the traces count it.

use crate::json::Member;
use crate::jsonrpc::{ErrorObject, CANCELLED_BY_OWNER, INTERNAL_ERROR, LIMIT_META, RATE_LIMITED};
use std::time::Duration;

/// A call that got no answer from its server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Failure {
    /// The client cancelled it.
    #[error("Request cancelled")]
    Cancelled,
    /// No answer within the server's `timeout`.
    #[error("upstream {server:?} did not answer within {after:?}")]
    Timeout {
        /// The server's configured name.
        server: String,
        /// Its `timeout`.
        after: Duration,
    },
    /// The server is gone: its process exited, or its connection could not be used.
    #[error("upstream {server:?} {why}")]
    Gone {
        /// The server's configured name.
        server: String,
        /// What happened, as a clause: "exited before answering", "lost its session".
        why: String,
    },
    /// mcpx would not send it: the server is not serving, or a cap is reached.
    #[error("{0}")]
    Refused(String),
}

impl Failure {
    /// The server `server` is gone for the reason `why` (a clause that follows its name).
    pub fn gone(server: &str, why: impl Into<String>) -> Failure {
        Failure::Gone {
            server: server.to_owned(),
            why: why.into(),
        }
    }

    /// What the upstream is told when mcpx stops waiting (`notifications/cancelled`'s reason).
    pub fn reason_for_upstream(&self) -> &'static str {
        match self {
            Failure::Timeout { .. } => "mcpx timed out waiting",
            _ => "cancelled by the client",
        }
    }
}

impl From<Failure> for ErrorObject {
    fn from(failure: Failure) -> ErrorObject {
        let error = ErrorObject::new(INTERNAL_ERROR, failure.to_string());
        match failure {
            // Said in `data` too, so that a client (and mcpx's metrics) can tell a timeout from
            // other internal errors without reading the message.
            Failure::Timeout { after, .. } => {
                error.with_data(serde_json::json!({ "timeoutMs": after.as_millis() as u64 }))
            }
            _ => error,
        }
    }
}

/// Whether `error` is an upstream's timeout ([`Failure::Timeout`]).
pub fn is_timeout(error: &ErrorObject) -> bool {
    error.code == INTERNAL_ERROR
        && error
            .data
            .as_ref()
            .is_some_and(|d| d.member("timeoutMs").is_some())
}

/// How an operation ended: a label value, and the audit log's `outcome`.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum Outcome {
    /// A result.
    Ok,
    /// A tool's result with `isError`.
    ToolError,
    /// Refused by mcpx's `[limits]`, never sent upstream.
    Limited,
    /// Cancelled before it was answered.
    Cancelled,
    /// Past its deadline.
    Timeout,
    /// A JSON-RPC error, by code.
    Error(i64),
    /// A JSON-RPC error whose code is outside JSON-RPC's reserved range, as a label: an
    /// upstream answering with ever new codes cannot grow the metrics without bound. The audit
    /// log keeps the code.
    OtherError,
}

impl Outcome {
    /// How `answer` ended; `None` when it was cancelled.
    pub fn of(answer: Option<&Result<serde_json::Value, ErrorObject>>) -> Outcome {
        match answer {
            None => Outcome::Cancelled,
            Some(Ok(result))
                if result
                    .member("_meta")
                    .and_then(|m| m.member(LIMIT_META))
                    .is_some() =>
            {
                Outcome::Limited
            }
            Some(Err(e)) if e.code == RATE_LIMITED => Outcome::Limited,
            Some(Err(e)) if e.code == CANCELLED_BY_OWNER => Outcome::Cancelled,
            Some(Ok(result))
                if result.member("isError") == Some(&serde_json::Value::Bool(true)) =>
            {
                Outcome::ToolError
            }
            Some(Ok(_)) => Outcome::Ok,
            Some(Err(e)) if is_timeout(e) => Outcome::Timeout,
            Some(Err(e)) => Outcome::Error(e.code),
        }
    }

    /// The outcome as a label: any code outside [`crate::jsonrpc::RESERVED_CODES`] is
    /// [`Outcome::OtherError`].
    pub fn bounded(self) -> Outcome {
        match self {
            Outcome::Error(code) if !crate::jsonrpc::RESERVED_CODES.contains(&code) => {
                Outcome::OtherError
            }
            outcome => outcome,
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::ToolError => f.write_str("tool_error"),
            Outcome::Limited => f.write_str("limited"),
            Outcome::Cancelled => f.write_str("cancelled"),
            Outcome::Timeout => f.write_str("timeout"),
            Outcome::Error(code) => write!(f, "{code}"),
            Outcome::OtherError => f.write_str("error"),
        }
    }
}

#[cfg(test)]
mod every_revision {
    mod upstream {
        use super::super::Failure;
        use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
        use std::time::Duration;

        #[test]
        fn each_failure_is_an_internal_error_worded_for_the_client() {
            let timeout = Failure::Timeout {
                server: "t".into(),
                after: Duration::from_secs(5),
            };
            assert_eq!(timeout.reason_for_upstream(), "mcpx timed out waiting");
            let error = ErrorObject::from(timeout);
            assert_eq!(error.code, INTERNAL_ERROR);
            assert!(super::super::is_timeout(&error));
            assert_eq!(error.data.as_ref().unwrap()["timeoutMs"], 5000);
            assert_eq!(error.message, "upstream \"t\" did not answer within 5s");
            assert_eq!(
                ErrorObject::from(Failure::Cancelled).message,
                "Request cancelled"
            );
            assert_eq!(
                ErrorObject::from(Failure::gone("t", "lost its session")).message,
                "upstream \"t\" lost its session"
            );
        }
    }
}
