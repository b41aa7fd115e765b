"""Measures what an upstream crash costs callers: `mcpx serve` with the fixture upstream, five
calls in flight, then a call that kills the upstream. Prints the time from the crash to every
in-flight caller answered, and to the first successful call after the restart.

Usage: python3 bench/crash_recovery.py MCPX FIXTURE [ROUNDS]
"""

import json
import subprocess
import sys
import tempfile
import time


def main(mcpx, fixture, rounds):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as config:
        config.write(f'[servers.fixture]\ncommand = "{fixture}"\n')
    answered, restored = [], []
    for _ in range(rounds):
        proc = subprocess.Popen([mcpx, "--config", config.name, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        send = lambda m: (proc.stdin.write(json.dumps(m) + "\n"), proc.stdin.flush())
        read = lambda: json.loads(proc.stdout.readline())
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        read()
        send({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        read()
        for i in range(1, 6):
            send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "fixture__sleep", "arguments": {}}})
        time.sleep(0.2)
        crash = time.monotonic()
        send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "fixture__crash", "arguments": {}}})
        pending = set(range(1, 7))
        while pending:
            pending.discard(read()["id"])
        answered.append(time.monotonic() - crash)
        n = 100
        while True:
            n += 1
            send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "fixture__echo", "arguments": {"text": "x"}}})
            if "result" in read():
                break
            time.sleep(0.005)
        restored.append(time.monotonic() - crash)
        proc.stdin.close()
        proc.wait()
    ms = lambda xs: f"median {sorted(xs)[len(xs) // 2] * 1000:.1f} ms, max {max(xs) * 1000:.1f} ms"
    print(f"{rounds} crashes, 6 calls in flight each")
    print(f"crash -> every in-flight caller answered: {ms(answered)}")
    print(f"crash -> first successful call after the restart: {ms(restored)}")


main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
