-- wrk script: one 2026-07-28 request, every mirrored header right. Set BENCH_METHOD to
-- "tools/call" (echo through the fixture upstream) or "server/discover" (the daemon alone).
local method = os.getenv("BENCH_METHOD") or "tools/call"
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = method
if method == "tools/call" then
  wrk.headers["Mcp-Name"] = "fixture__echo"
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fixture__echo","arguments":{"text":"hello"},' .. meta .. '}}'
else
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"' .. method .. '","params":{' .. meta .. '}}'
end

-- Count non-200 answers: a fast error is not a result.
local bad = 0
response = function(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("non-200: %d\n", bad))
end
