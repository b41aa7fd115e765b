// The TypeScript SDK v1 client logging in to a door of mcpx whose tokens come from an identity
// provider, with nothing but the door's URL: from its first 401 it reads the door's metadata
// and the provider's, registers itself, sends the person to authorize (a browser that takes the
// code from the redirect) and calls with the token it gets.
// Against mcpx's own authorization server the authorization URL is a consent page: the browser
// then posts its form back with the owner secret (MCPX_OWNER_SECRET), as the person would.
// Usage: node ts_oauth_client.mjs URL
// Prints one JSON object: how the first try went, the tools listed, a call's text.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const url = new URL(process.argv[2]);
// Never reached: the browser below reads the code from the provider's redirect.
const redirectUrl = "http://127.0.0.1:9/callback";
let clientInformation, tokens, verifier, code;
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return {
      client_name: "mcpx test (TypeScript SDK)",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => clientInformation,
  saveClientInformation: (information) => {
    clientInformation = information;
  },
  tokens: () => tokens,
  saveTokens: (saved) => {
    tokens = saved;
  },
  redirectToAuthorization: async (authorization) => {
    let answer = await fetch(authorization, { redirect: "manual" });
    if (answer.status === 200) answer = await consent(authorization, answer);
    code = new URL(answer.headers.get("location")).searchParams.get("code");
  },
  saveCodeVerifier: (saved) => {
    verifier = saved;
  },
  codeVerifier: () => verifier,
};

// The owner's answer on a consent page: its form, this browser's cookie, the owner secret.
async function consent(authorization, page) {
  const html = await page.text();
  const field = (name) => html.match(new RegExp(`name="${name}" value="([^"]*)"`))[1];
  const form = new URLSearchParams({
    request: field("request"),
    csrf: field("csrf"),
    decision: "allow",
    secret: process.env.MCPX_OWNER_SECRET,
  });
  const cookie = page.headers.get("set-cookie").split(";")[0];
  return fetch(new URL("/oauth/authorize", authorization), {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: form,
  });
}

const report = {};
const client = new Client({ name: "mcpx-oauth-test", version: "1.0.0" });
let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
try {
  await client.connect(transport);
  report.firstTry = "connected";
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
  report.firstTry = "unauthorized";
  await transport.finishAuth(code);
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await client.connect(transport);
}
report.registered = clientInformation?.client_id ?? null;
report.tools = (await client.listTools()).tools.map((tool) => tool.name);
const echoed = await client.callTool({ name: "fixture__echo", arguments: { text: "hi" } });
report.echo = echoed.content?.[0]?.text ?? null;
console.log(JSON.stringify(report));
await client.close();
