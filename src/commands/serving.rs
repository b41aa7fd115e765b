//! `mcpx serve` and `mcpx daemon`: a front door (stdio, or the daemon's HTTP with the local
//! socket editors attach to) run beside the upstreams' start-up, with the admin socket open,
//! until stdin closes or a signal stops it.

use crate::cancel::Cancel;
use crate::config::{Config, Settings};
use crate::gateway::Gateway;
use crate::transport::http::{self, HttpOptions};
use crate::transport::local::{self, Attach};
use crate::transport::stdio::{self, StdioOptions};
use smol::Task;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// `mcpx serve` in-process: MCP on stdin and stdout, in `profile`'s view if named.
pub(super) async fn serve(
    profile: Option<String>,
    config: &Config,
    gateway: Arc<Gateway>,
) -> Result<ExitCode, String> {
    let mut options = StdioOptions::from_config(config, "stdio");
    if let Some(name) = profile {
        options.view = gateway
            .profile(&name)
            .map_err(|why| format!("--profile: {why}"))?;
    }
    // SIGTERM: what is in flight is answered "shutting down", then mcpx exits.
    let shutdown = Cancel::new();
    let _signals = signal_shutdown(Arc::clone(&gateway), shutdown.clone())
        .map_err(|e| format!("cannot watch for signals: {e}"))?;
    let serving = stdio::serve(
        Arc::clone(&gateway),
        smol::Unblock::new(std::io::stdin()),
        smol::Unblock::new(std::io::stdout()),
        options,
        shutdown,
    );
    let admin = crate::admin::serve_socket(&config.admin.socket);
    front_door(&gateway, admin, Console::Optional, async {
        serving.await;
        Ok(())
    })
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// `mcpx daemon`: Streamable HTTP at `[daemon] address`, and the local socket for editors.
pub(super) async fn daemon(
    settings: &Settings,
    cluster: Option<&crate::cluster::ClusterKeys>,
    gateway: Arc<Gateway>,
) -> Result<ExitCode, String> {
    let config = &settings.config;
    raise_descriptor_limit();
    gateway.keep_event_subscriptions();
    gateway.serve_approval_pages();
    let shutdown = Cancel::new();
    let signals = signal_shutdown(Arc::clone(&gateway), shutdown.clone())
        .map_err(|e| format!("cannot watch for signals: {e}"))?;
    let consents = gateway.live().consents();
    let options = HttpOptions::from_settings(settings, cluster, consents)?;
    let listener = smol::net::TcpListener::bind(config.daemon.address)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.daemon.address))?;
    if let Some(address) = listener
        .local_addr()
        .ok()
        .and_then(|bound| settings.advertised(bound).ok().flatten())
    {
        gateway.reached_at(address);
    }
    // Under systemd (Type=notify), accepting connections is readiness.
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
    let serving = http::serve(listener, Arc::clone(&gateway), options, shutdown);
    front_door(
        &gateway,
        config.admin.socket.clone(),
        Console::Required,
        async {
            // Opened once the admin socket is (its directory's problems are told there).
            let (stop_editors, editors) = editors_door(config, &gateway)?;
            let served = serving
                .await
                .map_err(|e| format!("cannot serve on {}: {e}", config.daemon.address));
            stop_editors.cancel();
            editors.await;
            served
        },
    )
    .await?;
    drop(signals);
    Ok(ExitCode::SUCCESS)
}

/// Opens the daemon's local socket for editors' `mcpx serve --attach` ([`local`]); the handle
/// that stops it, and its task.
fn editors_door(config: &Config, gateway: &Arc<Gateway>) -> Result<(Cancel, Task<()>), String> {
    let path = config.local_socket();
    let listener = crate::net::private_socket::bind(&path)
        .map_err(|e| format!("cannot open the local socket at {}: {e}", path.display()))?;
    let stop = Cancel::new();
    let task = crate::runtime::spawn(local::serve(
        Arc::clone(gateway),
        listener,
        path,
        gateway.config_path().map(str::to_owned),
        StdioOptions::from_config(config, "attached"),
        stop.clone(),
    ));
    Ok((stop, task))
}

/// `mcpx serve` through the daemon running on this configuration: how it ended, or `None` when
/// no daemon took it and `required` is false (then it serves in-process).
pub(super) fn serve_attached(config: &Config, who: Attach, required: bool) -> Option<ExitCode> {
    let socket = config.local_socket();
    let stream = match crate::attach::attach(&socket, &who) {
        Ok(stream) => stream,
        Err(e) if required => {
            eprintln!("mcpx serve --attach: {e}");
            return Some(ExitCode::FAILURE);
        }
        // No daemon is the usual case of `mcpx serve`; one that is there and will not take
        // this editor is worth a word.
        Err(e) if e.may_pass() => {
            tracing::debug!("serving in-process: {e}");
            return None;
        }
        Err(e) => {
            tracing::warn!("serving in-process: {e}");
            return None;
        }
    };
    Some(match crate::attach::Shim::carry(&socket, who, stream) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpx serve: {e}");
            ExitCode::FAILURE
        }
    })
}

/// Whether mcpx may run without its admin socket.
enum Console {
    /// `mcpx serve`: an editor must not lose its tools because a console cannot attach.
    Optional,
    /// `mcpx daemon`: the service's operators rely on `mcpx status` and the TUI, so a socket
    /// that cannot be bound (an unwritable runtime directory, a full disk) stops it at start.
    Required,
}

/// Runs a front door while the upstreams start beside it (requests for the catalog wait for
/// them), with the admin socket at `admin` open for consoles. A start-up failure (an audit
/// log that cannot be opened) ends it with that error.
async fn front_door(
    gateway: &Arc<Gateway>,
    admin: PathBuf,
    need: Console,
    serving: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    let starting = {
        let gateway = Arc::clone(gateway);
        crate::runtime::spawn(async move { gateway.start().await })
    };
    let console = match crate::net::private_socket::bind(&admin) {
        Ok(listener) => {
            let stop = Cancel::new();
            let task = crate::runtime::spawn(crate::admin::serve(
                Arc::clone(gateway),
                listener,
                admin,
                stop.clone(),
            ));
            Some((stop, task))
        }
        Err(e) => match need {
            Console::Optional => {
                tracing::warn!("no admin socket at {}: {e}", admin.display());
                None
            }
            Console::Required => {
                return Err(format!(
                    "cannot open the admin socket at {}: {e}",
                    admin.display()
                ))
            }
        },
    };
    let start_failed = async {
        match starting.await {
            Ok(()) => smol::future::pending().await,
            Err(e) => Err(e),
        }
    };
    let outcome = smol::future::or(start_failed, serving).await;
    if let Some((stop, task)) = console {
        stop.cancel();
        task.await;
    }
    outcome
}

/// Every connection and GET stream is a descriptor; the common soft limit of 1024 would stop
/// the daemon long before `maxConnections`, so it takes what the hard limit allows.
fn raise_descriptor_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    // (`None` is unlimited, which the kernel never allows for descriptors.)
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum) {
        if current >= maximum {
            return;
        }
        limit.current = Some(maximum);
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!("cannot raise the open-file limit: {e}");
        }
    }
}

/// Fires `shutdown` on the first SIGTERM or SIGINT; reloads the configuration and reopens the
/// audit log on SIGHUP.
fn signal_shutdown(gateway: Arc<Gateway>, shutdown: Cancel) -> std::io::Result<smol::Task<()>> {
    use async_signal::Signal;
    use smol::stream::StreamExt;
    let mut signals = async_signal::Signals::new([Signal::Term, Signal::Int, Signal::Hup])?;
    Ok(crate::runtime::spawn(async move {
        while let Some(Ok(signal)) = signals.next().await {
            tracing::info!("received {signal:?}");
            if signal == Signal::Hup {
                let _ = sd_notify::notify(&[sd_notify::NotifyState::Reloading]);
                gateway.reopen_audit();
                if let Err(e) = gateway.reload_from_disk().await {
                    tracing::error!("reload refused, the running configuration stays: {e}");
                }
                let _ = sd_notify::notify(&[sd_notify::NotifyState::Ready]);
                continue;
            }
            let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
            shutdown.cancel();
            return;
        }
    }))
}
