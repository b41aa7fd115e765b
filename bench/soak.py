"""Soak: mixed load on a release `mcpx daemon` and a `mcpx serve` for SECONDS (default 600), both
eras and both transports, streams opening and closing; samples each process's resident memory and
open descriptors every 10 s and prints start (after a 60 s warm-up), peak and end. Loopback only.

Usage: python3 bench/soak.py [SECONDS]   (run `cargo build --release --workspace` first)
"""

import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MCPX = f"{ROOT}/target/release/mcpx"
FIXTURE = f"{ROOT}/target/release/fixture-upstream"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
done = threading.Event()
counts = {"ok": 0, "bad": 0}
lock = threading.Lock()


def tally(ok, what=""):
    with lock:
        counts["ok" if ok else "bad"] += 1
        if not ok and counts["bad"] <= 5:
            print(f"unexpected: {what}", file=sys.stderr)


def post(port, body, headers, read=True):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", json.dumps(body), {"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream", **headers})
    response = conn.getresponse()
    data = response.read() if read else response.read(1)
    conn.close()
    return response, data


def modern(port, method, params, name=None, read=True):
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": random.randrange(1 << 30), "method": method, "params": {**params, "_meta": META}}
    return post(port, body, headers, read)


def modern_worker(port):
    while not done.is_set():
        kind = random.random()
        if kind < 0.6:
            r, data = modern(port, "tools/call", {"name": "fixture__echo", "arguments": {"text": "soak"}}, "fixture__echo")
            tally(r.status == 200 and b"soak" in data, data[:200])
        elif kind < 0.8:
            r, data = modern(port, "tools/call", {"name": "fixture__progress", "arguments": {"steps": 3},
                                                  "_meta": {**META, "progressToken": 1}}, "fixture__progress")
            tally(r.status == 200 and b"3 steps" in data, data[:200])
        elif kind < 0.9:
            # A listen stream held briefly, then dropped.
            r, _ = modern(port, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, read=False)
            tally(r.status == 200, r.status)
        else:
            # A call abandoned mid-way: the client hangs up.
            r, _ = modern(port, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 200}}, "fixture__sleep", read=False)
            tally(True)


def legacy_worker(port):
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
    while not done.is_set():
        r, _ = post(port, init, {})
        session = r.getheader("Mcp-Session-Id")
        tally(r.status == 200 and session, r.status)
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        stream = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        stream.request("GET", "/mcp", headers={"Accept": "text/event-stream", **headers})
        tally(stream.getresponse().status == 200)
        for i in range(random.randrange(1, 20)):
            call = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                    "params": {"name": "fixture__echo", "arguments": {"text": "legacy"}}}
            r, data = post(port, call, headers)
            tally(r.status == 200 and b"legacy" in data, data[:200])
        stream.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("DELETE", "/mcp", headers=headers)
        tally(conn.getresponse().status == 204)
        conn.close()


def stdio_worker(serve):
    serve.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}) + "\n")
    serve.stdin.flush()
    serve.stdout.readline()
    n = 0
    while not done.is_set():
        n += 1
        serve.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                      "params": {"name": "fixture__echo", "arguments": {"text": "stdio"}}}) + "\n")
        serve.stdin.flush()
        tally("stdio" in serve.stdout.readline())


def sample(pid):
    with open(f"/proc/{pid}/status") as status:
        rss = int(next(l for l in status if l.startswith("VmRSS")).split()[1]) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def main(seconds):
    port = random.randrange(20000, 30000)
    work = tempfile.mkdtemp()
    config = f"{work}/config.toml"
    with open(config, "w") as f:
        f.write(f'[daemon]\naddress = "127.0.0.1:{port}"\n[admin]\nsocket = "{work}/admin.sock"\n'
                f'[servers.fixture]\ncommand = "{FIXTURE}"\n')
    env = {**os.environ, "MCPX_LOG": "warn"}
    daemon = subprocess.Popen([MCPX, "--config", config, "daemon"], env=env, stderr=open(f"{work}/daemon.log", "w"))
    serve = subprocess.Popen([MCPX, "--config", config, "serve"], env=env, text=True, bufsize=1,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    time.sleep(1)
    threads = [threading.Thread(target=modern_worker, args=(port,)) for _ in range(4)]
    threads += [threading.Thread(target=legacy_worker, args=(port,)) for _ in range(3)]
    threads += [threading.Thread(target=stdio_worker, args=(serve,))]
    for t in threads:
        t.daemon = True
        t.start()
    samples = []
    started = time.time()
    while time.time() - started < seconds:
        time.sleep(10)
        samples.append((round(time.time() - started), sample(daemon.pid), sample(serve.pid)))
        t, (drss, dfd), (srss, sfd) = samples[-1]
        print(f"{t:5d}s  daemon {drss:6.1f} MiB {dfd:4d} fds   serve {srss:6.1f} MiB {sfd:4d} fds   "
              f"requests ok {counts['ok']} unexpected {counts['bad']}", flush=True)
    done.set()
    time.sleep(2)
    warm = [s for s in samples if s[0] >= 60] or samples
    for name, index in (("daemon", 1), ("serve", 2)):
        rss = [s[index][0] for s in warm]
        fds = [s[index][1] for s in warm]
        print(f"{name}: RSS start {rss[0]:.1f} / peak {max(rss):.1f} / end {rss[-1]:.1f} MiB; "
              f"fds start {fds[0]} / peak {max(fds)} / end {fds[-1]}")
    print(f"requests: {counts['ok']} as expected, {counts['bad']} unexpected")
    daemon.terminate()
    serve.stdin.close()
    daemon.wait(10)
    serve.wait(10)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 600)
