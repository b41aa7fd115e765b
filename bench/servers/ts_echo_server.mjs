// The benchmark's echo tool served by the TypeScript SDK v2 itself (`@modelcontextprotocol/server`
// on Node ≥ 22): a peer mcpx is measured against. Over HTTP it is the SDK's own entry,
// `createMcpHandler` behind `toNodeHandler` (2026-07-28, and legacy requests served statelessly);
// over stdio, `StdioServerTransport`.
// Usage: node ts_echo_server.mjs http PORT | node ts_echo_server.mjs stdio
import http from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { toNodeHandler } from "@modelcontextprotocol/node";
import * as z from "zod";

function echoServer() {
  const server = new McpServer({ name: "ts-echo", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes its text back.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
}

const [mode, port] = process.argv.slice(2);
if (mode === "stdio") {
  await echoServer().connect(new StdioServerTransport());
} else {
  const handler = toNodeHandler(createMcpHandler(echoServer));
  http.createServer(handler).listen(Number(port ?? 7803), "127.0.0.1");
}
