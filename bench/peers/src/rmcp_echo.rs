//! The benchmark's `echo` tool served by the Rust MCP SDK (rmcp) itself: the peer mcpx is measured
//! against, and the upstream mcpx fronts in the gateway scenarios. Stateless Streamable HTTP with
//! JSON responses (rmcp's fastest mode), or stdio.
//!
//! Usage: rmcp-echo http ADDRESS [TOOLS] | rmcp-echo stdio [TOOLS]
//! (TOOLS: how many extra tools to list, for the large-catalog scenario.)

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::Arc;

#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl Echo {
    fn new(extra: usize) -> Echo {
        let schema = |properties: serde_json::Value| {
            let schema = json!({"type": "object", "properties": properties});
            Arc::new(schema.as_object().cloned().unwrap_or_default())
        };
        let mut tools = vec![Tool::new(
            "echo",
            "Echoes its text back.",
            schema(json!({"text": {"type": "string"}})),
        )];
        tools.extend(
            (0..extra)
                .map(|i| Tool::new(format!("gen{i:03}"), "A generated tool.", schema(json!({})))),
        );
        Echo {
            tools: Arc::new(tools),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stdio") => {
            let extra = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(0);
            let service = Echo::new(extra).serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
        }
        Some("http") => {
            let address = args.get(2).map_or("127.0.0.1:7801", String::as_str);
            let extra = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(0);
            let config = StreamableHttpServerConfig::default()
                .with_json_response(true)
                .with_legacy_session_mode(false);
            let service: StreamableHttpService<Echo, LocalSessionManager> =
                StreamableHttpService::new(
                    move || Ok(Echo::new(extra)),
                    Default::default(),
                    config,
                );
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(address).await?;
            axum::serve(listener, router).await?;
        }
        _ => {
            eprintln!("usage: rmcp-echo http ADDRESS [TOOLS] | rmcp-echo stdio [TOOLS]");
            std::process::exit(2);
        }
    }
    Ok(())
}
