//! The `mcpx` command: parses the command line, loads the configuration, builds the executor.
//! Everything else lives in the library.

use clap::{Parser, Subcommand};
use mcpx::cancel::Cancel;
use mcpx::config::Config;
use mcpx::gateway::{Gateway, Owner};
use mcpx::transport::http::{self, HttpOptions};
use mcpx::transport::stdio::{self, StdioOptions};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long an upstream may take to exit once its stdin closes, before it is killed.
const UPSTREAM_EXIT_GRACE: Duration = Duration::from_secs(2);

/// One MCP server made of many: merges your upstream MCP servers for every client.
#[derive(Debug, Parser)]
#[command(
    name = "mcpx",
    version,
    about = "an MCP gateway: many upstream MCP servers, one server to every client"
)]
struct Cli {
    /// Configuration file (default: $XDG_CONFIG_HOME/mcpx/config.toml; none needed).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP on stdin and stdout (what an editor launches).
    Serve,
    /// Serve MCP over Streamable HTTP at /mcp on `daemon.address` until SIGTERM or SIGINT.
    Daemon,
    /// List the merged tools, grouped by upstream, with each upstream's state.
    Tools,
    /// Call one tool through the gateway and print its result.
    Call {
        /// The exposed tool name (for example `time__get_current_time`).
        tool: String,
        /// The tool's arguments as a JSON object.
        #[arg(long, default_value = "{}", value_name = "JSON")]
        args: String,
    },
}

fn main() -> ExitCode {
    // smol's executor runs one thread unless told otherwise; a gateway should use every core.
    if std::env::var_os("SMOL_THREADS").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::env::set_var("SMOL_THREADS", cores.to_string());
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MCPX_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    let (config, path) = match Config::load(cli.config.as_deref()) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mcpx: {e}");
            return ExitCode::from(2);
        }
    };
    let gateway = Gateway::new(&config, path.map(|p| p.display().to_string()));
    let outcome = smol::block_on(async {
        let outcome = run(cli.command, &config, Arc::clone(&gateway)).await;
        gateway.shutdown(UPSTREAM_EXIT_GRACE).await;
        outcome
    });
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("mcpx: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: &Config, gateway: Arc<Gateway>) -> Result<ExitCode, String> {
    match command {
        Command::Serve => {
            // Start-up runs beside the reader: `initialize` is answered at once, and catalog
            // requests wait until every upstream has either started or failed.
            let starting = {
                let gateway = Arc::clone(&gateway);
                smol::spawn(async move { gateway.start().await })
            };
            let options = StdioOptions {
                drain: config.transport.stdio_drain,
                max_message_bytes: config.transport.max_message_bytes,
            };
            let serving = stdio::serve(
                Arc::clone(&gateway),
                smol::Unblock::new(std::io::stdin()),
                smol::Unblock::new(std::io::stdout()),
                options,
            );
            let start_failed = async {
                match starting.await {
                    Ok(()) => smol::future::pending().await,
                    Err(e) => Err(e),
                }
            };
            smol::future::or(start_failed, async {
                serving.await;
                Ok(())
            })
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Daemon => {
            let starting = {
                let gateway = Arc::clone(&gateway);
                smol::spawn(async move { gateway.start().await })
            };
            let shutdown = Cancel::new();
            let signals = signal_shutdown(shutdown.clone())
                .map_err(|e| format!("cannot watch for signals: {e}"))?;
            let options = HttpOptions {
                address: config.daemon.address,
                allowed_origins: config.transport.allowed_origins.clone(),
                sse_keep_alive: config.transport.sse_keep_alive,
                max_message_bytes: config.transport.max_message_bytes,
                grace: config.daemon.shutdown_grace,
                session_idle_timeout: config.transport.session_idle_timeout,
                max_sessions: config.transport.max_sessions,
            };
            let serving = http::serve(Arc::clone(&gateway), options, shutdown);
            let start_failed = async {
                match starting.await {
                    Ok(()) => smol::future::pending().await,
                    Err(e) => Err(e),
                }
            };
            smol::future::or(start_failed, async {
                serving
                    .await
                    .map_err(|e| format!("cannot serve on {}: {e}", config.daemon.address))
            })
            .await?;
            drop(signals);
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools => {
            gateway.start().await?;
            print_tools(&gateway).await;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, args } => {
            let arguments: Value =
                serde_json::from_str(&args).map_err(|e| format!("--args is not JSON: {e}"))?;
            gateway.start().await?;
            let result = call(&gateway, &tool, arguments).await?;
            println!(
                "{}",
                serde_json::to_string_pretty(&result).unwrap_or_default()
            );
            let failed = result.get("isError") == Some(&json!(true));
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// Fires `shutdown` on the first SIGTERM or SIGINT.
fn signal_shutdown(shutdown: Cancel) -> std::io::Result<smol::Task<()>> {
    use smol::stream::StreamExt;
    let mut signals =
        async_signal::Signals::new([async_signal::Signal::Term, async_signal::Signal::Int])?;
    Ok(smol::spawn(async move {
        if let Some(Ok(signal)) = signals.next().await {
            tracing::info!("received {signal:?}");
            shutdown.cancel();
        }
    }))
}

async fn print_tools(gateway: &Gateway) {
    let tools = gateway.tools().await;
    let summaries = gateway.summaries();
    let mut owners = vec![Owner::Builtin];
    owners.extend((0..summaries.len()).map(Owner::Upstream));
    for owner in owners {
        match owner {
            Owner::Builtin => println!("mcpx (built-in)"),
            Owner::Upstream(i) => {
                let s = &summaries[i];
                let revision = s["revision"].as_str().unwrap_or("-");
                println!(
                    "{} [{}, revision {revision}]",
                    s["name"].as_str().unwrap_or_default(),
                    s["state"].as_str().unwrap_or_default()
                );
            }
        }
        for (_, tool) in tools.iter().filter(|(o, _)| *o == owner) {
            let description = tool["description"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default();
            println!(
                "  {}  {description}",
                tool["name"].as_str().unwrap_or_default()
            );
        }
    }
}

async fn call(gateway: &Arc<Gateway>, tool: &str, arguments: Value) -> Result<Value, String> {
    let (outbound, _) = async_channel::unbounded();
    let client = gateway.open_client("cli", outbound.clone());
    let request = mcpx::jsonrpc::Request {
        id: mcpx::jsonrpc::Id::Number(1),
        method: "tools/call".into(),
        params: Some(json!({"name": tool, "arguments": arguments})),
    };
    client.set_revision(mcpx::protocol::Revision::LATEST_LEGACY);
    let context = mcpx::gateway::RequestContext {
        cancel: mcpx::cancel::Cancel::new(),
        notifications: outbound,
    };
    let response = gateway.handle(&client, request, &context).await;
    gateway.close_client(&client);
    response
        .outcome
        .map_err(|e| format!("{} ({})", e.message, e.code))
}
