#!/usr/bin/env python3
"""Five editor sessions, attached to one daemon versus standalone: how many processes and how
much resident memory they take, and how long an editor's `mcpx serve` takes from its start to
its first reply (the shim's cold start).

Usage: bench/editors.py MCPX_BIN FIXTURE_BIN MCP_SERVER_TIME_BIN [SESSIONS]
Each session runs `mcpx serve` (attached: to a `mcpx daemon` on the same configuration file;
standalone: `--standalone`) with the fixture and mcp-server-time behind it, and calls a tool of
each, so every upstream has started. Prints one table.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def descendants(pid):
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as children:
                for child in children.read().split():
                    found.append(int(child))
                    found.extend(descendants(int(child)))
        except OSError:
            pass
    return found


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Editor:
    def __init__(self, mcpx, config, option):
        self.started = time.perf_counter()
        self.process = subprocess.Popen([mcpx, "--config", config, "serve", option],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def call(self, id, method, params):
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n").encode())
        self.process.stdin.flush()
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == id:
                return message

    def first_reply_ms(self):
        self.call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        return (time.perf_counter() - self.started) * 1000

    def use_every_upstream(self):
        self.process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.call(1, "tools/call", {"name": "fixture__echo", "arguments": {"text": "x"}})
        self.call(2, "tools/call", {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}})

    def stop(self):
        self.process.stdin.close()
        self.process.wait()


def measure(mcpx, config, option, sessions, daemon_pid=None):
    editors = [Editor(mcpx, config, option) for _ in range(sessions)]
    cold = [editor.first_reply_ms() for editor in editors]
    for editor in editors:
        editor.use_every_upstream()
    roots = [editor.process.pid for editor in editors] + ([daemon_pid] if daemon_pid else [])
    processes = set(roots)
    for root in roots:
        processes.update(descendants(root))
    memory = sum(rss_kib(pid) for pid in processes)
    for editor in editors:
        editor.stop()
    return len(processes), memory, statistics.median(cold)


def main():
    mcpx, fixture, server_time = sys.argv[1:4]
    sessions = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    work = tempfile.mkdtemp()
    config = os.path.join(work, "config.toml")
    with open(config, "w") as file:
        file.write(f'[daemon]\naddress = "127.0.0.1:0"\n[admin]\nsocket = "{work}/admin.sock"\n'
                   f'[servers.fixture]\ncommand = "{fixture}"\n'
                   f'[servers.time]\ncommand = "{server_time}"\n')
    daemon = subprocess.Popen([mcpx, "--config", config, "daemon"], stderr=subprocess.DEVNULL)
    while not os.path.exists(f"{work}/serve.sock"):
        time.sleep(0.01)
    rows = [("standalone", *measure(mcpx, config, "--standalone", sessions)),
            ("attached", *measure(mcpx, config, "--attach", sessions, daemon.pid))]
    daemon.terminate()
    daemon.wait()
    print(f"{sessions} editor sessions, fixture + mcp-server-time behind each")
    print(f"{'mode':<12}{'processes':>10}{'RSS MiB':>10}{'first reply ms (median)':>26}")
    for mode, processes, memory, cold in rows:
        print(f"{mode:<12}{processes:>10}{memory / 1024:>10.1f}{cold:>26.1f}")


main()
