// Vercel's mcp-handler 2.4 (on the TypeScript SDK v2) as an events server behind mcpx. It
// serves events the way mcp-handler does: webhook only, its own `events/list`, `events/subscribe`
// (callback verification included) and `events/unsubscribe`, with the store and the delivery
// left to the application, written here as its documentation asks (a Standard Webhooks signer
// on node:crypto, redirects refused, a timeout on every request).
//
// Usage: node mcp_handler_events_server.mjs PORT TOKEN PUBLIC_ORIGIN REACH_ORIGIN
// It takes only bearer TOKEN. mcp-handler accepts only https callbacks; one at PUBLIC_ORIGIN
// is reached at REACH_ORIGIN, as a TLS-terminating proxy in front of mcpx would forward it.
// Event type: `deploys` (arguments `{project}`), raised by the tool `deploy {project, state}`
// and ended for good (a `terminated` control to each callback) by `revoke {project}`;
// the tool `held` shows every subscription the server holds, secret and callback included, so
// that a test sees what mcpx gave it.
import http from "node:http";
import crypto from "node:crypto";
import { createMcpHandler, experimental_registerMcpEvents, withMcpAuth } from "mcp-handler";
import { fromJsonSchema } from "@modelcontextprotocol/server";

const [port, token, publicOrigin, reachOrigin] = process.argv.slice(2);

/** The application's subscriptions, by mcp-handler's key id. */
const subscriptions = new Map();
let operations = 0;

function sign(secret, id, timestamp, body) {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const mac = crypto.createHmac("sha256", key).update(`${id}.${timestamp}.${body}`);
  return `v1,${mac.digest("base64")}`;
}

/** POSTs `payload` to a subscription's callback as Standard Webhooks message `id`. */
async function post(subscription, id, payload) {
  const body = JSON.stringify(payload);
  const timestamp = Math.floor(Date.now() / 1000);
  const url = subscription.url.startsWith(`${publicOrigin}/`)
    ? reachOrigin + subscription.url.slice(publicOrigin.length)
    : subscription.url;
  return await fetch(url, {
    method: "POST",
    redirect: "manual",
    signal: AbortSignal.timeout(10_000),
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": sign(subscription.secret, id, timestamp, body),
      "x-mcp-subscription-id": subscription.id,
    },
    body,
  });
}

const deploys = {
  name: "deploys",
  description: "A deployment of a project finished",
  inputSchema: fromJsonSchema({
    type: "object",
    properties: { project: { type: "string" } },
    required: ["project"],
    additionalProperties: false,
  }),
  payloadSchema: fromJsonSchema({
    type: "object",
    properties: { project: { type: "string" }, state: { type: "string" } },
    required: ["project", "state"],
  }),
  authorize: () => true,
};

const events = {
  getPrincipal: (authInfo) => `client:${authInfo.clientId}`,
  events: [deploys],
  // Short lifetimes, so that a test sees mcpx refresh what it holds here.
  ttl: { minMs: 1000, defaultMs: 3000, maxMs: 86_400_000 },
  subscriptions: {
    async prepare() {
      operations += 1;
      return `op-${operations}`;
    },
    async upsert(subscription) {
      const held = subscriptions.get(subscription.id);
      subscriptions.set(subscription.id, { ...subscription, refreshes: held ? held.refreshes + 1 : 0 });
      // This application keeps no history: no cursor to replay from.
      return { cursor: null, truncated: false };
    },
    async remove(key) {
      return subscriptions.delete(key.id);
    },
  },
  delivery: {
    async verifyEndpoint(target) {
      const challenge = crypto.randomBytes(18).toString("base64url");
      try {
        const answer = await post(target, `msg_verify_${challenge}`, { type: "verification", challenge });
        if (!answer.ok) return { verified: false, reason: answer.status >= 500 ? "http_5xx" : "http_4xx" };
        const echoed = await answer.json().catch(() => ({}));
        return echoed.challenge === challenge ? { verified: true } : { verified: false, reason: "challenge_failed" };
      } catch {
        return { verified: false, reason: "connection_refused" };
      }
    },
  },
};

const object = (properties, required) => fromJsonSchema({ type: "object", properties, required });

const handler = createMcpHandler(
  (server) => {
    server.registerTool(
      "deploy",
      {
        description: "Finishes a deployment: each subscription to its project hears of it",
        inputSchema: object({ project: { type: "string" }, state: { type: "string" } }, ["project", "state"]),
      },
      async ({ project, state }) => {
        const statuses = [];
        for (const subscription of subscriptions.values()) {
          if (subscription.name !== "deploys" || subscription.arguments.project !== project) continue;
          const eventId = `evt_${crypto.randomUUID()}`;
          const occurrence = {
            eventId,
            name: "deploys",
            timestamp: new Date().toISOString(),
            data: { project, state },
            cursor: null,
          };
          const answer = await post(subscription, eventId, occurrence).catch((e) => ({ status: String(e) }));
          statuses.push(answer.status);
        }
        return { content: [{ type: "text", text: JSON.stringify(statuses) }] };
      },
    );
    server.registerTool(
      "revoke",
      {
        description: "Ends every subscription to a project's deployments, telling each callback",
        inputSchema: object({ project: { type: "string" } }, ["project"]),
      },
      async ({ project }) => {
        const statuses = [];
        for (const [key, subscription] of subscriptions) {
          if (subscription.name !== "deploys" || subscription.arguments.project !== project) continue;
          subscriptions.delete(key);
          const error = { code: -32012, message: "access to the project was revoked" };
          const id = `msg_end_${crypto.randomUUID()}`;
          const answer = await post(subscription, id, { type: "terminated", error }).catch((e) => ({ status: String(e) }));
          statuses.push(answer.status);
        }
        return { content: [{ type: "text", text: JSON.stringify(statuses) }] };
      },
    );
    server.registerTool(
      "held",
      { description: "Every subscription this server holds", inputSchema: object({}, []) },
      async () => {
        const held = [...subscriptions.values()].map(({ url, secret, refreshes, arguments: args }) => ({
          url,
          secret,
          refreshes,
          arguments: args,
        }));
        return { content: [{ type: "text", text: JSON.stringify(held) }] };
      },
    );
    experimental_registerMcpEvents(server, events);
  },
  { serverInfo: { name: "deploys", version: "1" } },
);

const verifyToken = (_request, bearer) =>
  bearer === token ? { token: bearer, clientId: "mcpx", scopes: [], extra: {} } : undefined;
const authed = withMcpAuth(handler, verifyToken, { required: true });

http
  .createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      const bodied = !["GET", "HEAD"].includes(req.method);
      const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
        method: req.method,
        headers,
        body: bodied ? Buffer.concat(chunks) : undefined,
      });
      const response = await authed(request);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  })
  .listen(Number(port), "127.0.0.1");
