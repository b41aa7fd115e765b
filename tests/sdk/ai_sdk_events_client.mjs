// The AI SDK's MCP client (`@ai-sdk/mcp` 2.0, `experimental_events`) in front of mcpx, as an
// agent that reacts to events: it mounts the SDK's own webhook handler
// (`experimental_createMCPEventWebhook`, which checks each request's Standard Webhooks signature,
// its subscription and its event) on a loopback HTTP server, subscribes to an event type by
// webhook through mcpx, has the event raised by calling a tool, waits for the handler to be
// given it, refreshes the subscription, unsubscribes, and prints one JSON object: the
// subscription, what the handler was given, and the refresh's id.
//
// Usage: node ai_sdk_events_client.mjs MCP_URL EVENT EMIT_TOOL EMIT_ARGUMENTS_JSON
import http from "node:http";
import {
  experimental_createMCPClient as createMCPClient,
  experimental_createMCPEventWebhook as createMCPEventWebhook,
} from "@ai-sdk/mcp";

const [url, event, emitTool, emitArguments] = process.argv.slice(2);

// The SDK's durable store, kept in memory for one run.
const byKey = new Map();
const store = {
  async get(key) { return byKey.get(key); },
  async getById(id) { return [...byKey.values()].find((s) => s.id === id); },
  async set(subscription) { byKey.set(subscription.key, subscription); },
  async update(key, patch) { byKey.set(key, { ...byKey.get(key), ...patch }); },
  async delete(key) { byKey.delete(key); },
};

const received = [];
let heard;
const arrived = new Promise((resolve) => { heard = resolve; });
const handle = createMCPEventWebhook({
  store,
  onEvent: async ({ subscription, event }) => {
    received.push({ subscription: subscription.id, event });
    heard();
  },
  onError: (error) => console.error("webhook:", error),
});

// Node's http server in front of the SDK's Web-standard handler.
const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const request = new Request(`http://127.0.0.1:${server.address().port}${req.url}`, {
    method: req.method,
    headers: req.headers,
    body: req.method === "POST" ? Buffer.concat(chunks) : undefined,
  });
  const response = await handle(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const callback = `http://127.0.0.1:${server.address().port}/hooks`;

const client = await createMCPClient({
  transport: { type: "http", url },
  experimental_events: { store },
});
const listed = await client.experimental_events.list();
const subscribed = await client.experimental_events.subscribe({
  name: event,
  delivery: { mode: "webhook", url: callback, allowInsecureLocalhost: true },
  ttlMs: 600000,
});
await client.callTool({ name: emitTool, arguments: JSON.parse(emitArguments) });
let timer;
const timeout = new Promise((_, reject) => {
  timer = setTimeout(() => reject(new Error("no event within 30 s")), 30000);
});
await Promise.race([arrived, timeout]);
clearTimeout(timer);
const key = [...byKey.keys()][0];
const refreshed = await client.experimental_events.refresh({ key });
await client.experimental_events.unsubscribe({ key });
console.log(JSON.stringify({
  listed: listed.events.map((e) => ({ name: e.name, delivery: e.delivery })),
  subscribed,
  received,
  refreshed: refreshed.id,
  kept: byKey.size,
}));
await client.close();
server.close();
