//! What each `mcpx` subcommand does: the binary parses the command line and hands it here.
//!
//! `serve` and `daemon` run a front door beside the upstreams' start-up with the admin socket
//! open; `tools` and `call` run the gateway in-process; `status` and `reload` talk to a running
//! mcpx over its admin socket; `auth` logs in to remote servers ([`auth`]); `import`,
//! `completions` and `exec-upstream` need no gateway.

mod approvals;
mod auth;
mod import;
mod pins;
mod secret;
mod tools;

use crate::cancel::Cancel;
use crate::cli::{Cli, Command};
use crate::config::{Config, Settings};
use crate::gateway::Gateway;
use crate::transport::http::{self, HttpOptions};
use crate::transport::local::{self, Attach};
use crate::transport::stdio::{self, StdioOptions};
use serde_json::Value;
use smol::Task;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long an upstream may take to exit once its stdin closes, before it is killed.
const UPSTREAM_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Sizes the executor ([`crate::runtime`]), before its first task: `SMOL_THREADS` if set, else
/// `threads`, else half the cores. On two cores one thread serves 9-13% more calls forwarded to an
/// upstream than two (bench/ab, docs/performance.md): the upstream process needs the other core,
/// and a second executor thread mostly moves tasks between threads.
fn set_executor_threads(threads: usize) {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get() / 2),
        chosen => chosen,
    };
    crate::runtime::set_threads(threads);
}

/// Makes this process not dumpable: its `/proc/PID/environ`, `mem` and file descriptors (where
/// secrets and tokens live) are then readable only with `CAP_SYS_PTRACE`, which no server of
/// the same user, or sandboxed server of root, holds; and it leaves no core dump. Every mcpx
/// process but the sandbox helper, which is about to become the server (and must still write its
/// own `/proc/self/uid_map`).
fn keep_memory_private() {
    use rustix::process::{set_dumpable_behavior, DumpableBehavior};
    if let Err(e) = set_dumpable_behavior(DumpableBehavior::NotDumpable) {
        tracing::warn!("cannot make this process undumpable: {e}");
    }
}

/// Runs the parsed command line; the exit code says how it went.
pub fn run(cli: Cli) -> ExitCode {
    if !matches!(cli.command, Command::SandboxExec { .. }) {
        keep_memory_private();
    }
    match cli.command {
        Command::ExecUpstream { command } => {
            let invocation = crate::upstream::supervisor::Invocation::parse(command);
            return crate::upstream::supervisor::run(&invocation);
        }
        Command::SandboxExec { spec, command } => {
            return crate::sandbox::helper::run(&spec, &command)
        }
        Command::Doctor => {
            let sandbox = crate::sandbox::probe::doctor();
            println!("keyring: {}", crate::keyring::doctor_line());
            return sandbox;
        }
        Command::Completions { shell } => {
            let _ =
                std::io::Write::write_all(&mut std::io::stdout(), &crate::cli::completions(shell));
            return ExitCode::SUCCESS;
        }
        Command::Import { file, write } => return import::run(&file, write, cli.config.as_deref()),
        Command::Keygen => {
            return match crate::cluster::keygen() {
                Ok(key) => {
                    println!("{key}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("mcpx keygen: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {}
    }
    // Expanded only once it is needed: `mcpx status` and an editor's attaching `mcpx serve`
    // read no secret, so they never wait on the keyring.
    let (config, path) = match Config::load(cli.config.as_deref()) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mcpx: {e}");
            return ExitCode::from(2);
        }
    };
    // Named by its canonical path: an editor's `mcpx serve --config ./x.toml` and the daemon
    // started on `/home/me/x.toml` must agree they run the same file, and `./x.toml` in another
    // directory must not.
    let path = path.map(|p| std::fs::canonicalize(&p).unwrap_or(p));
    set_executor_threads(config.daemon.threads);
    match &cli.command {
        Command::Status { json, socket } => {
            return status(*json, socket.as_deref().unwrap_or(&config.admin.socket))
        }
        Command::Reload => return reload(&config.admin.socket),
        Command::Pins { action } => return pins::run(action, &config),
        Command::Approvals { action } => {
            let action = action
                .as_ref()
                .unwrap_or(&crate::cli::ApprovalsAction::List);
            return approvals::run(action, &config);
        }
        Command::Secret { action } => return secret::run(action, &config),
        Command::Tools { standalone: false } => {
            if let Some(servers) = tools::daemons_tools(&config, path.as_deref()) {
                tools::print(&servers);
                return ExitCode::SUCCESS;
            }
        }
        Command::Call {
            tool,
            args,
            standalone: false,
        } => {
            let arguments = match call_arguments(args) {
                Ok(arguments) => arguments,
                Err(why) => {
                    eprintln!("mcpx: {why}");
                    return ExitCode::from(2);
                }
            };
            match tools::daemons_call(&config, path.as_deref(), tool, &arguments) {
                Some(Ok(result)) => return tools::print_result(&result),
                Some(Err(why)) => {
                    eprintln!("mcpx call: {why}");
                    return ExitCode::FAILURE;
                }
                None => {}
            }
        }
        Command::Serve {
            attach,
            standalone: false,
            profile,
        } => {
            let who = Attach::this_process(path.as_deref(), profile.as_deref());
            if let Some(code) = serve_attached(&config, who, *attach) {
                return code;
            }
        }
        _ => {}
    }
    let settings = Settings::from_environment(config);
    if let Command::Auth { action } = &cli.command {
        return auth::run(action, &settings, path.as_deref());
    }
    let config = &settings.config;
    crate::metrics::install(config.daemon.metrics);
    if let Some(endpoint) = &config.telemetry.otlp_endpoint {
        if let Err(e) = crate::telemetry::install(endpoint, &config.telemetry.service_name) {
            eprintln!("mcpx: {e}");
            return ExitCode::from(2);
        }
    }
    let cluster = match crate::cluster::ClusterKeys::from_config(&config.cluster)
        .and_then(|keys| settings.advertised(config.daemon.address).map(|_| keys))
    {
        Ok(keys) => keys,
        Err(e) => {
            eprintln!("mcpx: {e}");
            return ExitCode::from(2);
        }
    };
    // Before any server starts: whatever leaves a server's tree stays in mcpx's.
    if matches!(cli.command, Command::Serve { .. } | Command::Daemon) {
        crate::upstream::orphans::adopt();
    }
    let gateway = Gateway::new(
        &settings,
        path.map(|p| p.display().to_string()),
        std::env::current_exe().ok(),
        cluster.as_ref(),
    );
    // The work runs on the executor's threads and this one only waits (`future::block_on` parks
    // it without driving the reactor): were it to hold the reactor, as `smol::block_on` does,
    // every socket event would wake a worker from here, one cross-thread hop per event.
    let outcome = smol::future::block_on(crate::runtime::spawn(async move {
        let outcome = execute(
            cli.command,
            &settings,
            cluster.as_ref(),
            Arc::clone(&gateway),
        )
        .await;
        gateway.shutdown(UPSTREAM_EXIT_GRACE).await;
        smol::unblock(crate::telemetry::flush).await;
        outcome
    }));
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("mcpx: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(
    command: Command,
    settings: &Settings,
    cluster: Option<&crate::cluster::ClusterKeys>,
    gateway: Arc<Gateway>,
) -> Result<ExitCode, String> {
    let config = &settings.config;
    crate::private_file::make_private(&crate::config::state_dir());
    match command {
        Command::Serve { profile, .. } => {
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
        Command::Daemon => {
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
        Command::Reload
        | Command::Auth { .. }
        | Command::Import { .. }
        | Command::Completions { .. }
        | Command::Status { .. }
        | Command::Pins { .. }
        | Command::Approvals { .. }
        | Command::Secret { .. }
        | Command::Keygen
        | Command::ExecUpstream { .. }
        | Command::SandboxExec { .. }
        | Command::Doctor => {
            unreachable!("handled before the gateway starts")
        }
        Command::Tools { .. } => {
            gateway.start().await?;
            tools::print(&tools::own_tools(&gateway).await);
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, args, .. } => {
            let arguments = call_arguments(&args)?;
            gateway.start().await?;
            Ok(tools::print_result(
                &tools::own_call(&gateway, &tool, arguments).await?,
            ))
        }
    }
}

/// `mcpx call`'s `--args`, which must be JSON.
fn call_arguments(args: &str) -> Result<Value, String> {
    serde_json::from_str(args).map_err(|e| format!("--args is not JSON: {e}"))
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
fn serve_attached(config: &Config, who: Attach, required: bool) -> Option<ExitCode> {
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

/// `mcpx reload`: asks the daemon to re-read its configuration. A file it refuses exits 2, as
/// `mcpx` itself does on a file it cannot use.
fn reload(socket: &Path) -> ExitCode {
    use crate::admin::protocol::{Command, Refusal, Reply};
    match crate::admin::ask(socket, &Command::Reload) {
        Ok(Reply::Done { message }) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Ok(Reply::Error { message, kind }) => {
            eprintln!("mcpx reload: {message}");
            match kind {
                Refusal::InvalidConfig => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
        Ok(other) => {
            eprintln!("mcpx reload: unexpected reply: {other:?}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("mcpx reload: no mcpx answers on {} ({e})", socket.display());
            ExitCode::FAILURE
        }
    }
}

/// `mcpx status`: one snapshot from the admin socket, as text or JSON.
fn status(json: bool, socket: &Path) -> ExitCode {
    use crate::admin::protocol::{Command as AdminCommand, Reply};
    match crate::admin::ask(socket, &AdminCommand::Snapshot) {
        Ok(Reply::Snapshot(snapshot)) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&snapshot).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(Reply::Snapshot(snapshot)) => {
            print!("{}", crate::admin::describe(&snapshot));
            ExitCode::SUCCESS
        }
        Ok(other) => {
            eprintln!("mcpx status: unexpected reply: {other:?}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("mcpx status: no mcpx answers on {} ({e}); is the daemon running? (systemctl --user status mcpx)", socket.display());
            ExitCode::FAILURE
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
