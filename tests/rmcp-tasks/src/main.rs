//! The Rust MCP SDK (rmcp 3.11) on both sides of mcpx, for the end-to-end tests of tasks.
//!
//! - `rmcp-tasks server`: a stdio server of the 2026-07-28 Tasks extension, its tasks run by
//!   rmcp's `TaskManager`. Tools: `slow` (`ms`, then done; stops when cancelled), `ask` (asks the
//!   user's name inside the task), `failing` (a tool error) and `broken` (a protocol error). A
//!   client that did not declare the extension gets `slow` and `failing` answered at once, and
//!   -32021 for the others, which run only as tasks.
//! - `rmcp-tasks client MCPX CONFIG TOOL_PREFIX`: an rmcp client declaring the extension that
//!   spawns `MCPX serve --config CONFIG` and drives one task of each kind through it (polled to its
//!   end, a question answered by `tasks/update`, a cancel), printing what it saw as one JSON line.

use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientConfig,
    ContentBlock, CreateTaskResult, GetTaskParams, GetTaskResult, InputRequest, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const TASKS: &str = "io.modelcontextprotocol/tasks";

#[derive(Clone, Default)]
struct Tasks {
    manager: TaskManager,
}

fn tool(name: &str, description: &str) -> Tool {
    let schema = json!({"type": "object", "properties": {"ms": {"type": "integer"}}});
    Tool::new(
        name.to_owned(),
        description.to_owned(),
        Arc::new(schema.as_object().cloned().unwrap_or_default()),
    )
}

fn text(said: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(said.into())])
}

fn missing_tasks() -> ErrorData {
    let required = serde_json::from_value(json!({"extensions": {TASKS: {}}})).unwrap_or_default();
    ErrorData::missing_required_client_capability(required)
}

impl Tasks {
    /// Runs tool `name` as a task of the manager's.
    fn spawn(&self, name: &str, ms: u64) -> Result<CreateTaskResult, ErrorData> {
        let options = TaskOptions::new()
            .with_ttl_ms(Some(60_000))
            .with_poll_interval_ms(100);
        let name = name.to_owned();
        let task = self.manager.spawn(options, move |context| {
            Box::pin(async move {
                match name.as_str() {
                    "slow" => {
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(text(format!("slept {ms}ms"))),
                            () = context.cancelled() => Err(TaskExit::Cancelled),
                        }
                    }
                    "ask" => {
                        let question: InputRequest = serde_json::from_value(json!({
                            "method": "elicitation/create",
                            "params": {"mode": "form", "message": "Your name?", "requestedSchema":
                                {"type": "object", "properties": {"name": {"type": "string"}}}}
                        }))
                        .map_err(|e| TaskExit::Error(ErrorData::internal_error(e.to_string(), None)))?;
                        let answer = context.request_input("name", question).await?;
                        let name = answer["content"]["name"].as_str().unwrap_or("nobody").to_owned();
                        Ok(text(format!("hello {name}")))
                    }
                    "failing" => Ok(CallToolResult::error(vec![ContentBlock::text("it failed")])),
                    _ => Err(TaskExit::Error(ErrorData::internal_error("it broke", None))),
                }
            })
        });
        Ok(CreateTaskResult::new(task))
    }
}

impl ServerHandler for Tasks {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("slow", "Sleeps ms milliseconds, then says so."),
            tool("ask", "Asks your name inside the task."),
            tool("failing", "A tool error."),
            tool("broken", "A protocol error."),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let ms = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("ms"))
            .and_then(Value::as_u64)
            .unwrap_or(100);
        match (request.name.as_ref(), declared) {
            (name, true) => Ok(CallToolResponse::Task(self.spawn(name, ms)?)),
            ("slow", false) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(text(format!("slept {ms}ms")).into())
            }
            ("failing", false) => {
                Ok(CallToolResult::error(vec![ContentBlock::text("it failed")]).into())
            }
            _ => Err(missing_tasks()),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.manager
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.manager
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.manager.cancel_task(&request.task_id)
    }
}

/// The client's side: one task of each kind through mcpx, as seen.
async fn client(
    mcpx: &str,
    config: &str,
    prefix: &str,
) -> Result<Value, Box<dyn std::error::Error>> {
    let info: ClientConfig = serde_json::from_value(json!({
        "protocolVersion": "2026-07-28",
        "capabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
        "clientInfo": {"name": "rmcp-tasks", "version": "1"}
    }))?;
    let mut command = tokio::process::Command::new(mcpx);
    command.args(["serve", "--config", config]);
    // 2026-07-28 by `server/discover`, where the extension lives (rmcp's `serve` would start a
    // legacy session).
    let modern = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let transport = TokioChildProcess::new(command)?;
    let service = info.serve_with_lifecycle(transport, modern).await?;
    let peer = service.peer().clone();
    let call = |name: &str, arguments: Value| {
        let params = CallToolRequestParams::new(format!("{prefix}{name}"))
            .with_arguments(arguments.as_object().cloned().unwrap_or_default());
        let peer = peer.clone();
        async move {
            match peer.call_tool_once(params).await? {
                CallToolResponse::Task(created) => {
                    Ok::<_, Box<dyn std::error::Error>>(created.task.task_id)
                }
                other => Err(format!("not a task: {other:?}").into()),
            }
        }
    };
    let poll = |id: String, until: &'static [&'static str]| {
        let peer = peer.clone();
        async move {
            for _ in 0..600 {
                let got =
                    serde_json::to_value(peer.get_task(GetTaskParams::new(id.clone())).await?)?;
                if until.contains(&got["status"].as_str().unwrap_or_default()) {
                    return Ok::<_, Box<dyn std::error::Error>>(got);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err("the task never got there".into())
        }
    };
    let ended: &[&str] = &["completed", "failed", "cancelled"];
    let slow = call("slow", json!({"ms": 200})).await?;
    let slow_done = poll(slow.clone(), ended).await?;
    let failing = poll(call("failing", json!({})).await?, ended).await?;
    let broken = poll(call("broken", json!({})).await?, ended).await?;
    let ask = call("ask", json!({})).await?;
    let asked = poll(ask.clone(), &["input_required"]).await?;
    let key = asked["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next().cloned())
        .unwrap_or_default();
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let update: UpdateTaskParams =
        serde_json::from_value(json!({"taskId": ask, "inputResponses": answer}))?;
    peer.update_task(update).await?;
    let answered = poll(ask, ended).await?;
    let long = call("slow", json!({"ms": 600_000})).await?;
    peer.cancel_task(CancelTaskParams::new(long.clone()))
        .await?;
    let cancelled = poll(long, ended).await?;
    let forged = peer
        .get_task(GetTaskParams::new("mcpxt1.forged"))
        .await
        .map_err(|e| e.to_string());
    service.cancel().await?;
    Ok(json!({
        "slow": {"id": slow, "task": slow_done},
        "failing": failing,
        "broken": broken,
        "asked": asked,
        "answered": answered,
        "cancelled": cancelled,
        "forged": forged.err(),
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("server") => {
            let service = Tasks::default().serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
        }
        Some("client") if args.len() == 5 => {
            let report = client(&args[2], &args[3], &args[4]).await?;
            println!("{report}");
        }
        _ => {
            eprintln!("usage: rmcp-tasks server | rmcp-tasks client MCPX CONFIG TOOL_PREFIX");
            std::process::exit(2);
        }
    }
    Ok(())
}
