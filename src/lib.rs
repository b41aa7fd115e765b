//! mcpx: one MCP server made of many upstream servers, reachable through several front doors.
//!
//! Every message takes the same road. A transport ([`transport`]) turns bytes into JSON-RPC
//! ([`jsonrpc`]); the gateway core ([`gateway`]) decides which era the request belongs to, checks
//! its envelope ([`protocol`]), and routes it through the merged catalog to an upstream
//! ([`upstream`]); the outcome comes back shaped for the client's revision. The ledger
//! ([`ledger`]) holds every session and request in flight, so that nothing is forgotten.
//!
//! The rest, by what it serves:
//! - the command line and its subcommands: [`cli`], [`commands`], [`config`] (the file as
//!   written and as used), [`import`], [`attach`] (the editor's shim);
//! - what goes to a client: [`outbox`] (bounded, what may give way when it is full),
//!   [`mcpheaders`] (the mirrored 2026-07-28 headers), [`view`] (how the live state is shown);
//! - sockets and HTTP, knowing no MCP: [`net`] (TCP, hyper on smol, the HTTP client, mcpx's
//!   private Unix sockets, who is on the other end of a loopback connection);
//! - how a call ended: [`failure`] (an upstream's failures and every request's outcome);
//! - who may come in: [`access`] (tokens, identities, `[[auth.rules]]`), [`cluster`] (sealed
//!   session ids), and [`net`]'s checks of the peer;
//! - secrets: [`keyring`] (the desktop's Secret Service), [`redact`] (masked in what a server
//!   writes);
//! - watching it run: [`admin`] (the console's socket), [`metrics`], [`telemetry`], [`audit`];
//! - small tools every part uses: [`runtime`] (the executor), [`cancel`], [`deadline`],
//!   [`limit`], [`lines`], [`json`], [`sync`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod access;
pub mod admin;
pub mod attach;
pub mod audit;
pub mod cancel;
pub mod canonical;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod control;
pub mod deadline;
pub mod failure;
pub mod gateway;
pub mod guardrails;
pub mod heard_clients;
pub mod import;
pub mod json;
pub mod jsonrpc;
pub mod keyring;
pub mod ledger;
pub mod limit;
pub mod lines;
pub mod log_writer;
pub mod mcpheaders;
pub mod metrics;
pub mod net;
pub mod outbox;
pub mod pins;
pub mod private_file;
pub mod protocol;
pub mod redact;
pub mod runtime;
pub mod sandbox;
pub mod sync;
pub mod telemetry;
pub mod transport;
pub mod upstream;
pub mod view;
