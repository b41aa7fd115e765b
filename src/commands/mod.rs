//! What each `mcpx` subcommand does: the binary parses the command line and hands it here,
//! which loads the configuration and runs the command's own module.
//!
//! `serve` and `daemon` run a front door beside the upstreams' start-up with the admin socket
//! open ([`serving`]); `tools` and `call` ask the daemon, or run the gateway in-process
//! ([`tools`]); `status` and `reload` talk to a running mcpx over its admin socket ([`status`]);
//! `auth` logs in to remote servers ([`auth`]); `pins`, `approvals` and `secret` act on their
//! own stores; `import`, `completions`, `keygen` and `exec-upstream` need no gateway.

mod approvals;
mod auth;
mod import;
mod pins;
mod secret;
mod serving;
mod status;
mod tools;

use crate::cli::{Cli, Command};
use crate::config::{Config, Settings};
use crate::gateway::Gateway;
use crate::transport::local::Attach;
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
            return status::status(*json, socket.as_deref().unwrap_or(&config.admin.socket))
        }
        Command::Reload => return status::reload(&config.admin.socket),
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
            let arguments = match tools::call_arguments(args) {
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
            if let Some(code) = serving::serve_attached(&config, who, *attach) {
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
        Command::Serve { profile, .. } => serving::serve(profile, config, gateway).await,
        Command::Daemon => serving::daemon(settings, cluster, gateway).await,
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
            let arguments = tools::call_arguments(&args)?;
            gateway.start().await?;
            Ok(tools::print_result(
                &tools::own_call(&gateway, &tool, arguments).await?,
            ))
        }
    }
}
