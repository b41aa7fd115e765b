"""Opens N idle streams on a running `mcpx daemon` and prints the daemon's resident memory: legacy
sessions each with its GET stream held open (KIND=get, the default), or 2026-07-28
`subscriptions/listen` streams (KIND=listen). Loopback only.

Usage: python3 bench/idle_streams.py HOST:PORT PID N [N ...]   (raise `ulimit -n` first)
Set HOLD=SECONDS to keep the streams open that long after the last count. After each count it
prints a line ending in `rss_kib=K`.
"""

import asyncio
import json
import os
import sys

INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
LISTEN = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
    "notifications": {"toolsListChanged": True},
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}}}})


async def open_get_stream(host, port, streams):
    reader, writer = await asyncio.open_connection(host, port)
    body = INIT.encode()
    writer.write(f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    session = next(l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("mcp-session-id"))
    length = next(int(l.split(":", 1)[1]) for l in head.split("\r\n") if l.lower().startswith("content-length"))
    await reader.readexactly(length)
    # The same connection now carries the session's GET stream.
    writer.write(f"GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n".encode())
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    assert head.startswith("HTTP/1.1 200"), head
    streams.append((reader, writer))


async def open_listen_stream(host, port, streams):
    reader, writer = await asyncio.open_connection(host, port)
    body = LISTEN.encode()
    writer.write(f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                 f"Mcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    assert head.startswith("HTTP/1.1 200"), head
    # The acknowledgement arrives first on the stream; then it idles.
    await reader.readuntil(b"\n\n")
    streams.append((reader, writer))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(next(l for l in status if l.startswith("VmRSS")).split()[1])


async def main(address, pid, targets):
    host, port = address.rsplit(":", 1)
    kind = os.environ.get("KIND", "get")
    opener = open_listen_stream if kind == "listen" else open_get_stream
    streams = []
    print(f"baseline: {rss_kib(pid) / 1024:.1f} MiB RSS", file=sys.stderr)
    for target in targets:
        while len(streams) < target:
            batch = min(200, target - len(streams))
            await asyncio.gather(*(opener(host, int(port), streams) for _ in range(batch)))
        await asyncio.sleep(1)
        rss = rss_kib(pid)
        print(f"{len(streams)} idle {kind} streams: {rss / 1024:.1f} MiB RSS rss_kib={rss}", flush=True)
    await asyncio.sleep(float(os.environ.get("HOLD", "0")))


asyncio.run(main(sys.argv[1], int(sys.argv[2]), [int(n) for n in sys.argv[3:]]))
