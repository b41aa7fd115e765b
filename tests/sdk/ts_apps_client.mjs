// The TypeScript SDK's client, rendering MCP Apps, in front of `mcpx serve`: lists the tools,
// reads each `*__show` tool's UI resource and calls a tool by its server's own name.
// Usage: node ts_apps_client.mjs v1|v2 MCPX_BIN CONFIG
// Prints one JSON object: the listed tool names, each UI tool's resource URI and HTML, the bare
// call's text.
const [sdk, mcpx, config] = process.argv.slice(2);

let Client, StdioTransport;
if (sdk === "v1") {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StdioClientTransport: StdioTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js"));
} else {
  ({ Client } = await import("@modelcontextprotocol/client"));
  ({ StdioClientTransport: StdioTransport } = await import("@modelcontextprotocol/client/stdio"));
}

const capabilities = {
  extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } },
};
const client = new Client({ name: "ts-apps", version: "1" }, { capabilities });
await client.connect(new StdioTransport({ command: mcpx, args: ["--config", config, "serve"], stderr: "ignore" }));
const { tools } = await client.listTools();
const report = { tools: tools.map((t) => t.name).sort(), ui: {} };
for (const tool of tools.filter((t) => t.name.endsWith("__show"))) {
  const uri = tool._meta?.ui?.resourceUri;
  const read = await client.readResource({ uri });
  report.ui[tool.name] = { uri, html: read.contents[0].text };
}
const bare = await client.callTool({ name: "only_b", arguments: {} });
report.bare = bare.content[0].text;
console.log(JSON.stringify(report));
await client.close();
