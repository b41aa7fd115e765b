// The TypeScript SDK v2 client answering an upstream's questions through mcpx: elicitation,
// sampling and roots. In the legacy era the SDK answers mcpx's requests; pinned to 2026-07-28 it
// fulfils InputRequiredResults through the same handlers and retries, as the SDK does itself.
// Usage: node ts_input_client.mjs legacy|2026-07-28 http URL
//        node ts_input_client.mjs legacy|2026-07-28 stdio MCPX_BIN CONFIG
// Prints one JSON object: each tool's text and what was asked.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [era, transportKind, ...target] = process.argv.slice(2);
const options = {
  capabilities: { elicitation: {}, sampling: {}, roots: {} },
  ...(era === "legacy" ? {} : { versionNegotiation: { mode: { pin: era } } }),
};
const client = new Client({ name: "mcpx-input-test", version: "1.0.0" }, options);
const asked = [];
client.setRequestHandler("elicitation/create", async () => {
  asked.push("elicitation/create");
  return { action: "accept", content: { name: "Ada" } };
});
client.setRequestHandler("sampling/createMessage", async () => {
  asked.push("sampling/createMessage");
  return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model" };
});
client.setRequestHandler("roots/list", async () => {
  asked.push("roots/list");
  return { roots: [{ uri: "file:///work", name: "work" }] };
});
const transport = transportKind === "http"
  ? new StreamableHTTPClientTransport(new URL(target[0]))
  : new StdioClientTransport({ command: target[0], args: ["--config", target[1], "serve"], stderr: "inherit" });
await client.connect(transport);
const report = { era, transport: transportKind };
for (const tool of ["fixture__ask", "fixture__sample", "fixture__roots"]) {
  const result = await client.callTool({ name: tool, arguments: {} });
  report[tool] = result.content.map((c) => c.text).join("");
}
report.asked = asked;
console.log(JSON.stringify(report));
await client.close();
