//! `mcpx-tui`: the admin console of mcpx. It attaches to a running mcpx's admin socket, shows
//! its upstreams, sessions, streams and requests in flight as they change, and acts on them:
//! cancel a request, end a session, restart an upstream.
//!
//! One thread holds a `watch` on the socket and feeds snapshots to the drawing loop; it
//! reconnects when mcpx restarts. Commands go over a connection of their own. ratatui's
//! `init` restores the terminal on panic, and `main` restores it on every other exit.

#![forbid(unsafe_code)]

mod app;
mod feed;

use app::App;
use clap::Parser;
use mcpx::admin::running_sockets;
use std::path::PathBuf;

/// Watch and steer a running mcpx: its upstreams, sessions, streams and requests in flight.
#[derive(Debug, Parser)]
#[command(name = "mcpx-tui", version)]
struct Args {
    /// The admin socket (default: the daemon's, from mcpx's configuration).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// List the admin sockets of running mcpx processes and exit.
    #[arg(long)]
    list: bool,
    /// mcpx's configuration file, to find the default socket.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let default_socket = match mcpx::config::Config::load(args.config.as_deref()) {
        Ok((config, _)) => config.admin.socket,
        Err(e) => {
            eprintln!("mcpx-tui: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let running = running_sockets(&default_socket);
    if args.list {
        for socket in &running {
            println!("{}", socket.display());
        }
        return std::process::ExitCode::SUCCESS;
    }
    // The daemon's socket, else the only running mcpx; with several, the first (listed by --list).
    // The picker looks beside the socket given, or the daemon's.
    let default_socket_for_picker = args
        .socket
        .clone()
        .unwrap_or_else(|| default_socket.clone());
    let socket = args.socket.unwrap_or_else(|| match running.first() {
        Some(first) if !running.contains(&default_socket) => first.clone(),
        _ => default_socket,
    });
    let mut terminal = ratatui::init();
    let outcome = App::new(socket, default_socket_for_picker).run(&mut terminal);
    ratatui::restore();
    if let Err(e) = outcome {
        eprintln!("mcpx-tui: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
