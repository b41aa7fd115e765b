// The TypeScript SDK v1's 2025-11-25 tasks client (`experimental.tasks`) in front of
// `mcpx serve`: each task tool called as a task and followed to its end, a question inside a
// task answered, a task cancelled, and ids looked up that mcpx did not make.
// Usage: node ts_tasks_client.mjs MCPX_BIN CONFIG PREFIX
// Prints one JSON object with what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, CallToolResultSchema, TaskStatusNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mcpx, config, prefix] = process.argv.slice(2);
const client = new Client({ name: "ts-tasks", version: "1" }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push({ message: request.params.message, relatedTask: request.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId });
  return { action: "accept", content: { name: "Ada" } };
});
const heard = [];
client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
  heard.push({ taskId: notification.params.taskId, status: notification.params.status });
});
await client.connect(new StdioClientTransport({ command: mcpx, args: ["--config", config, "serve"], stderr: "ignore" }));
const report = { capabilities: client.getServerCapabilities(), support: {}, runs: {} };
const { tools } = await client.listTools();
for (const tool of tools) report.support[tool.name] = tool.execution?.taskSupport ?? null;

async function run(name, args = {}) {
  const seen = { statuses: [] };
  const stream = client.experimental.tasks.callToolStream({ name: prefix + name, arguments: args }, CallToolResultSchema, { task: { ttl: 60000 } });
  for await (const message of stream) {
    if (message.type === "taskCreated") seen.taskId = message.task.taskId;
    if (message.type === "taskStatus") seen.statuses.push(message.task.status);
    if (message.type === "result") seen.result = message.result;
    if (message.type === "error") seen.error = { code: message.error.code, message: message.error.message };
  }
  if (seen.taskId) seen.final = (await client.experimental.tasks.getTask(seen.taskId)).status;
  report.runs[name] = seen;
  return seen;
}
await run("delay", { ms: 300 });
await run("fail");
await run("ask");
report.asked = asked;

// A long task, cancelled: it stays cancelled.
const long = client.experimental.tasks.callToolStream({ name: prefix + "delay", arguments: { ms: 60000 } }, CallToolResultSchema, { task: { ttl: 60000 } });
let longId;
for await (const message of long) {
  if (message.type === "taskCreated") {
    longId = message.task.taskId;
    break;
  }
}
const cancelled = await client.experimental.tasks.cancelTask(longId);
report.cancel = { status: cancelled.status, taskId: cancelled.taskId === longId, after: (await client.experimental.tasks.getTask(longId)).status };

async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error.code;
  }
}
report.unknown = {
  forged: await errorOf(client.experimental.tasks.getTask("forged")),
  tampered: await errorOf(client.experimental.tasks.getTask(longId.slice(0, -2) + (longId.endsWith("AA") ? "BB" : "AA"))),
};
report.list = await errorOf(client.experimental.tasks.listTasks());
report.heard = heard;
console.log(JSON.stringify(report));
await client.close();
