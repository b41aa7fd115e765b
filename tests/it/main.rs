//! mcpx end to end: the real binary, spawned, over real sockets and pipes, with real upstream
//! servers behind it. One test binary with a module per area, so that the crate graph is linked
//! once rather than once per area; test names keep their `<revision>::<area>::<rule>` form under
//! the area's module (`cargo test --test it http_modern::` runs one area).

mod common;

mod access;
mod admin;
mod approvals;
mod apps;
mod attach;
mod auth;
mod authserver;
mod cli;
mod clients;
mod cluster;
mod conformance;
mod events;
mod events_relay;
mod guardrail_hooks;
mod guardrails;
mod http_legacy;
mod http_modern;
mod identity;
mod input;
mod lazy;
mod limits;
mod logging;
mod naming;
mod observability;
mod one_gate;
mod own_events;
mod owner_cancel;
mod pins;
mod profiles;
mod remote;
mod sandbox;
mod sandbox_escape;
mod search;
mod secrets;
mod skills;
mod sse;
mod stdio;
mod stdio_attached;
mod strangers;
mod supervision;
mod tasks;
mod team;
mod team_signin;
mod upstream_listens;
mod upstream_stderr;
