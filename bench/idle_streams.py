"""Opens N legacy sessions on a running `mcpx daemon`, each with its idle GET stream held open,
then prints the daemon's resident memory. Loopback only.

Usage: python3 bench/idle_streams.py HOST:PORT PID N [N ...]   (raise `ulimit -n` first)
Set HOLD=SECONDS to keep the streams open that long after the last count.
"""

import asyncio
import json
import os
import sys

INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})


async def open_stream(host, port, streams):
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


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(next(l for l in status if l.startswith("VmRSS")).split()[1])


async def main(address, pid, targets):
    host, port = address.rsplit(":", 1)
    streams = []
    print(f"baseline: {rss_kib(pid) / 1024:.1f} MiB RSS")
    for target in targets:
        while len(streams) < target:
            batch = min(200, target - len(streams))
            await asyncio.gather(*(open_stream(host, int(port), streams) for _ in range(batch)))
        await asyncio.sleep(1)
        print(f"{len(streams)} idle GET streams: {rss_kib(pid) / 1024:.1f} MiB RSS", flush=True)
    await asyncio.sleep(float(os.environ.get("HOLD", "0")))


asyncio.run(main(sys.argv[1], int(sys.argv[2]), [int(n) for n in sys.argv[3:]]))
