-- wrk script: one MCP request, repeated. Environment:
--   BENCH_METHOD   tools/call (default), tools/list or server/discover
--   BENCH_TOOL     the tool tools/call names (default echo)
--   BENCH_ERA      modern (default: 2026-07-28, every mirrored header right) or legacy (2025-11-25)
--   BENCH_SESSION  a legacy session's Mcp-Session-Id (legacy only; none means sessionless)
--   BENCH_AUTHORIZATION  an Authorization header's value (a bearer token), if any
--   BENCH_TEXT_BYTES     the echoed text's length (default: "hello"): prose and numbers, as a
--                        tool's result carries, for what scanning a result costs per KiB
local method = os.getenv("BENCH_METHOD") or "tools/call"
local tool = os.getenv("BENCH_TOOL") or "echo"
local modern = (os.getenv("BENCH_ERA") or "modern") == "modern"
local session = os.getenv("BENCH_SESSION")
local fields = {}
local text = "hello"
local text_bytes = tonumber(os.getenv("BENCH_TEXT_BYTES") or "")
if text_bytes then
  local line = "Order 48213 shipped to warehouse B on 2026-11-30; 17 items, total 1,204.50 EUR. "
  text = string.rep(line, math.ceil(text_bytes / #line)):sub(1, text_bytes)
end
if method == "tools/call" then
  table.insert(fields, '"name":"' .. tool .. '","arguments":{"text":"' .. text .. '"}')
end
wrk.method = "POST"
local authorization = os.getenv("BENCH_AUTHORIZATION")
if authorization then wrk.headers["Authorization"] = authorization end
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
if modern then
  table.insert(fields, '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}')
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = method
  if method == "tools/call" then wrk.headers["Mcp-Name"] = tool end
else
  wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
  if session and session ~= "" then wrk.headers["Mcp-Session-Id"] = session end
end
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"' .. method .. '","params":{' .. table.concat(fields, ",") .. '}}'

-- Count answers that are not a 200 with a result: a fast error is not a result. Each of wrk's
-- threads runs its own copy of this script, so each counts its own and `done` adds them up.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
bad = 0
response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) then bad = bad + 1 end
end
done = function(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + (thread:get("bad") or 0) end
  io.write(string.format("bad: %d\n", total))
end
