//! The Rust MCP SDK's client (rmcp) through mcpx, at one revision over one transport: lists
//! tools, calls one, receives progress, cancels a call, and hears tools/list_changed.
//! Usage: rmcp-client REVISION http URL | rmcp-client REVISION stdio MCPX_BIN CONFIG.
//! Prints one JSON object; the cancelled call's arrival upstream shows in mcpx's log.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Clone)]
struct Handler {
    config: ClientConfig,
    progress: Arc<AtomicU64>,
    list_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }
}

fn revision(date: &str) -> ProtocolVersion {
    match date {
        "2024-11-05" => ProtocolVersion::V_2024_11_05,
        "2025-03-26" => ProtocolVersion::V_2025_03_26,
        "2025-06-18" => ProtocolVersion::V_2025_06_18,
        "2025-11-25" => ProtocolVersion::V_2025_11_25,
        _ => ProtocolVersion::V_2026_07_28,
    }
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        unreachable!("arguments are objects")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (date, transport) = (args[1].as_str(), args[2].as_str());
    let modern = date == "2026-07-28";
    let mut config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcpx-rmcp-test", "1.0.0"),
    );
    config.protocol_version = revision(date);
    let handler = Handler {
        config,
        progress: Arc::default(),
        list_changed: Arc::default(),
    };
    let lifecycle = if modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    let client = match transport {
        "http" => {
            handler
                .clone()
                .serve_with_lifecycle(
                    StreamableHttpClientTransport::from_uri(args[3].clone()),
                    lifecycle,
                )
                .await?
        }
        _ => {
            let mut command = tokio::process::Command::new(&args[3]);
            command.args(["--config", &args[4], "serve"]);
            handler
                .clone()
                .serve_with_lifecycle(TokioChildProcess::new(command)?, lifecycle)
                .await?
        }
    };
    let mut report = json!({"revision": date, "transport": transport});
    report["negotiated"] = json!(client
        .peer_info()
        .map(|info| info.protocol_version.to_string()));
    let tools = client.list_all_tools().await?;
    report["listed"] = json!(tools.iter().any(|t| t.name == "fixture__echo"));
    let echo = client
        .call_tool(call("fixture__echo", json!({"text": "from rmcp"})))
        .await?;
    report["called"] = json!(echo
        .content
        .first()
        .and_then(|c| c.as_text())
        .is_some_and(|t| t.text == "from rmcp"));
    client
        .call_tool(call(
            "fixture__progress",
            json!({"steps": 2, "delayMs": 50}),
        ))
        .await?;
    report["progress"] = json!(handler.progress.load(Ordering::Relaxed));
    let sleeping =
        ClientRequest::CallToolRequest(CallToolRequest::new(call("fixture__sleep", json!({}))));
    let heard_before = handler.progress.load(Ordering::Relaxed);
    let handle = client
        .send_cancellable_request(sleeping, PeerRequestOptions::no_options())
        .await?;
    // The upstream reports progress once the call has reached it: cancel only then, so the
    // cancellation has a call upstream to reach, however loaded the machine.
    let reached = async {
        while handler.progress.load(Ordering::Relaxed) == heard_before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), reached).await;
    handle.cancel(Some("matrix test".into())).await?;
    report["cancelled"] = json!(true);
    let heard = if modern {
        let mut subscription = client
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await?;
        client
            .call_tool(call("fixture__add_tool", json!({})))
            .await?;
        tokio::time::timeout(Duration::from_secs(10), subscription.next())
            .await
            .is_ok_and(|n| matches!(n, Ok(Some(_))))
    } else {
        tokio::time::sleep(Duration::from_millis(300)).await;
        client
            .call_tool(call("fixture__add_tool", json!({})))
            .await?;
        tokio::time::timeout(Duration::from_secs(10), handler.list_changed.notified())
            .await
            .is_ok()
    };
    report["list_changed"] = json!(heard);
    println!("{report}");
    client.cancel().await?;
    Ok(())
}
