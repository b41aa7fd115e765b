"""An outside policy for mcpx's `[[guardrails.hooks]]`, speaking agentgateway's ExtMCP
messages in JSON: `python policy_hook.py LOG --http` serves them on a port of loopback (printed
as the first line of stdout), `python policy_hook.py LOG` reads them a line at a time on stdin
and answers each on stdout. Every message it gets is appended to LOG, a JSON line each.

Its policy, by what the call or result says:
- a call whose `arguments.text` is "deny me" is refused (PERMISSION_DENIED, with a reason);
  "mcp error" is refused with a JSON-RPC error of its own; "rewrite me" is sent on as
  "rewritten by policy"; "slow" is answered after 120 s (a hook that misses its deadline);
- a result whose first text is "replace my result" is replaced by one saying "replaced by
  policy"; "withhold my result" is refused;
- everything else passes.
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]


def judge(message):
    with open(LOG, "a") as log:
        log.write(json.dumps(message) + "\n")
    if "mcpRequest" in message:
        params = message["mcpRequest"]
        text = (params.get("arguments") or {}).get("text")
        if text == "deny me":
            return {"error": {"code": "PERMISSION_DENIED", "reason": "echo may not say that"}}
        if text == "mcp error":
            return {"error": {"code": 1, "mcpError": {"code": -32001, "message": "policy says no"}}}
        if text == "rewrite me":
            params["arguments"]["text"] = "rewritten by policy"
            return {"mutated": params}
        if text == "slow":
            time.sleep(120)
        return {"pass": {}}
    result = message.get("mcpResponse") or {}
    content = result.get("content") or [{}]
    text = content[0].get("text")
    if text == "replace my result":
        return {"mutated": {"content": [{"type": "text", "text": "replaced by policy"}]}}
    if text == "withhold my result":
        return {"error": {"code": "PERMISSION_DENIED", "reason": "this result stays here"}}
    return {"pass": {}}


class Handler(BaseHTTPRequestHandler):
    # Keeps each connection open for the next message, as a policy server on a hot path would;
    # without Nagle, its head and body (two writes) do not wait 40 ms on the client's delayed ACK.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = json.dumps(judge(json.loads(body))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


if "--http" in sys.argv[2:]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
else:
    for line in sys.stdin:
        print(json.dumps(judge(json.loads(line))), flush=True)
