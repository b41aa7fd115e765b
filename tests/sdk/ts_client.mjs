// A real TypeScript SDK client through mcpx: lists tools, calls one, receives progress, cancels a
// call, and hears notifications/tools/list_changed.
// Usage: node ts_client.mjs v1|v2[@2026-07-28] http URL
//        node ts_client.mjs v1|v2[@2026-07-28] stdio MCPX_BIN CONFIG
// (v2@2026-07-28 pins the stateless revision; v1|v2@<legacy revision> makes the SDK offer that
// revision in initialize, as a client built on an older SDK would, over http; otherwise each SDK
// offers its newest handshake one.)
// Prints one JSON object. (The cancelled call's arrival upstream shows in mcpx's log.)
const [choice, transportKind, ...target] = process.argv.slice(2);
const [sdk, pinned] = choice.split("@");

let Client, HttpTransport, StdioTransport, onListChanged, callTool;
if (sdk === "v1") {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StreamableHTTPClientTransport: HttpTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  ({ StdioClientTransport: StdioTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js"));
  const { ToolListChangedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
  onListChanged = (client, handler) => client.setNotificationHandler(ToolListChangedNotificationSchema, handler);
  callTool = (client, params, options) => client.callTool(params, undefined, options);
} else {
  ({ Client, StreamableHTTPClientTransport: HttpTransport } = await import("@modelcontextprotocol/client"));
  ({ StdioClientTransport: StdioTransport } = await import("@modelcontextprotocol/client/stdio"));
  onListChanged = (client, handler) => client.setNotificationHandler("notifications/tools/list_changed", handler);
  callTool = (client, params, options) => client.callTool(params, options);
}

const modern = pinned?.startsWith("2026") ? pinned : undefined;
const legacy = pinned && !modern ? pinned : undefined;
const options = modern ? { versionNegotiation: { mode: { pin: modern } } } : undefined;
// The SDKs offer their newest revision; an older one goes in initialize's body instead.
const offering = legacy
  ? {
      fetch: (url, init) => {
        const body = typeof init?.body === "string" && init.body.includes('"method":"initialize"')
          ? init.body.replace(/"protocolVersion":"[^"]*"/, `"protocolVersion":"${legacy}"`)
          : init?.body;
        return fetch(url, { ...init, body });
      },
    }
  : undefined;
const client = new Client({ name: `mcpx-test-${sdk}`, version: "1.0.0" }, options);
let listChanged;
const changed = new Promise((resolve) => (listChanged = resolve));
onListChanged(client, () => listChanged(true));
const transport = transportKind === "http"
  ? new HttpTransport(new URL(target[0]), offering)
  : new StdioTransport({ command: target[0], args: ["--config", target[1], "serve"], stderr: "inherit" });
await client.connect(transport);
const report = { sdk, transport: transportKind };
report.negotiated = modern ?? transport.protocolVersion ?? null;
// On the stateless revision, change notifications come on a listen stream.
const subscription = modern ? await client.listen({ toolsListChanged: true }) : null;
const tools = await client.listTools();
report.listed = tools.tools.some((t) => t.name === "fixture__echo");
const echo = await callTool(client, { name: "fixture__echo", arguments: { text: `hello from ${sdk}` } });
report.called = echo.content[0].text === `hello from ${sdk}`;
report.echo = echo.content.map((c) => c.text);
let progress = 0;
await callTool(client, { name: "fixture__progress", arguments: { steps: 2, delayMs: 50 } }, { onprogress: () => progress++ });
report.progress = progress;
const abort = new AbortController();
// The upstream reports progress once the call has reached it: cancel only then, so the
// cancellation has a call upstream to reach, however loaded the machine.
let reached;
const reachedUpstream = new Promise((resolve) => { reached = resolve; });
const sleeping = callTool(client, { name: "fixture__sleep", arguments: {} }, { signal: abort.signal, onprogress: () => reached() }).catch(() => "cancelled");
let giveUp;
await Promise.race([reachedUpstream, new Promise((resolve) => { giveUp = setTimeout(resolve, 10000); })]);
clearTimeout(giveUp);
abort.abort();
report.cancelled = (await sleeping) === "cancelled";
// Give the session's GET stream a moment to open before the change is announced.
await new Promise((resolve) => setTimeout(resolve, 300));
await callTool(client, { name: "fixture__add_tool", arguments: {} });
let timer;
const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no list_changed")), 10000)));
report.list_changed = await Promise.race([changed, timeout]);
clearTimeout(timer);
console.log(JSON.stringify(report));
await subscription?.close();
await client.close();
