// A real TypeScript SDK client talking to mcpx over Streamable HTTP: lists and calls a tool, makes
// the fixture change its tool list, and waits for notifications/tools/list_changed.
// Usage: node ts_client.mjs v1|v2 URL. Prints one JSON object.
const [sdk, url] = process.argv.slice(2);

let Client, StreamableHTTPClientTransport, onListChanged;
if (sdk === "v1") {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  const { ToolListChangedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
  onListChanged = (client, handler) => client.setNotificationHandler(ToolListChangedNotificationSchema, handler);
} else {
  ({ Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client"));
  onListChanged = (client, handler) => client.setNotificationHandler("notifications/tools/list_changed", handler);
}

const client = new Client({ name: `mcpx-test-${sdk}`, version: "1.0.0" });
let listChanged;
const changed = new Promise((resolve) => (listChanged = resolve));
onListChanged(client, () => listChanged(true));
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const tools = await client.listTools();
const echo = await client.callTool({ name: "fixture__echo", arguments: { text: `hello from ${sdk}` } });
// Give the session's GET stream a moment to open before the change is announced.
await new Promise((resolve) => setTimeout(resolve, 300));
await client.callTool({ name: "fixture__add_tool", arguments: {} });
let timer;
const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no list_changed")), 10000)));
await Promise.race([changed, timeout]);
clearTimeout(timer);
console.log(JSON.stringify({
  negotiated: transport.protocolVersion ?? client.protocolVersion ?? null,
  tools: tools.tools.map((t) => t.name),
  echo: echo.content.map((c) => c.text),
  list_changed: true,
}));
await client.close();
