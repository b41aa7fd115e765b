// A TypeScript SDK v1 server with 2025-11-25 tasks (`experimental.tasks`): mcpx's end-to-end
// tests put it behind the gateway over stdio.
// Tools: `delay` (a task that completes after `ms`), `fail` (a task that fails), `ask` (a task
// that asks the user a question on its `tasks/result` stream before it completes), and `statuses`
// (a plain tool: the status of every task the server holds, so that a test sees what mcpx did to
// the server's tasks behind its own), and `progress` (a task that reports progress under its
// request's token after that request has been answered, then completes).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import * as z from "zod/v4";

const taskStore = new InMemoryTaskStore();
const server = new McpServer(
  { name: "ts-tasks", version: "1" },
  {
    capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {} } },
    taskStore,
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  },
);

server.registerTool("now", { description: "Answers at once", inputSchema: {} }, async () => ({
  content: [{ type: "text", text: "now" }],
}));

server.registerTool("statuses", { description: "Every task's status", inputSchema: {} }, async () => {
  const { tasks } = await taskStore.listTasks();
  return { content: [{ type: "text", text: JSON.stringify(tasks.map((t) => t.status)) }] };
});

const polled = {
  async getTask(_args, { taskId, taskStore }) {
    return await taskStore.getTask(taskId);
  },
  async getTaskResult(_args, { taskId, taskStore }) {
    return await taskStore.getTaskResult(taskId);
  },
};

server.experimental.tasks.registerToolTask(
  "delay",
  { description: "Completes after ms", inputSchema: { ms: z.number().default(200) }, execution: { taskSupport: "optional" } },
  {
    async createTask({ ms }, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 100 });
      setTimeout(() => {
        taskStore
          .storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: `waited ${ms}ms` }] })
          .catch(() => {});
      }, ms);
      return { task };
    },
    ...polled,
  },
);

server.experimental.tasks.registerToolTask(
  "fail",
  { description: "A task whose tool fails", inputSchema: {} },
  {
    async createTask(_args, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 100 });
      setTimeout(() => {
        taskStore
          .storeTaskResult(task.taskId, "failed", { content: [{ type: "text", text: "it failed" }], isError: true })
          .catch(() => {});
      }, 50);
      return { task };
    },
    ...polled,
  },
);

server.experimental.tasks.registerToolTask(
  "ask",
  { description: "Asks a question inside the task", inputSchema: {} },
  {
    async createTask(_args, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 100 });
      (async () => {
        // The client fetches the task's questions on `tasks/result` once it reads input_required.
        await taskStore.updateTaskStatus(task.taskId, "input_required");
        const stream = server.server.experimental.tasks.elicitInputStream({
          mode: "form",
          message: "Your name?",
          requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
        }, { relatedTask: { taskId: task.taskId } });
        let answer;
        for await (const message of stream) {
          if (message.type === "result") answer = message.result;
          if (message.type === "error") throw message.error;
        }
        await taskStore.updateTaskStatus(task.taskId, "working");
        const name = answer?.content?.name ?? "nobody";
        // An answer tied to a task must name it by this server's id.
        const tied = answer?._meta?.["io.modelcontextprotocol/related-task"]?.taskId;
        const said = tied === undefined || tied === task.taskId ? `hello ${name}` : `hello ${name} (tied to ${tied})`;
        await taskStore.storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: said }] });
      })().catch((error) => taskStore.storeTaskResult(task.taskId, "failed", { content: [{ type: "text", text: String(error) }], isError: true }));
      return { task };
    },
    ...polled,
  },
);

server.experimental.tasks.registerToolTask(
  "progress",
  { description: "Reports progress after it was made", inputSchema: {} },
  {
    async createTask(_args, { taskStore, taskRequestedTtl, _meta }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 100 });
      const progressToken = _meta?.progressToken;
      setTimeout(async () => {
        for (const progress of [1, 2]) {
          const _meta = { "io.modelcontextprotocol/related-task": { taskId: task.taskId } };
          await server.server.notification({ method: "notifications/progress", params: { progressToken, progress, total: 2, _meta } });
        }
        await taskStore.storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: "reported" }] });
        // Late, after the task ended: nobody should hear it.
        setTimeout(() => server.server.notification({ method: "notifications/progress", params: { progressToken, progress: 3, total: 2 } }), 50);
      }, 200);
      return { task };
    },
    ...polled,
  },
);

await server.connect(new StdioServerTransport());
