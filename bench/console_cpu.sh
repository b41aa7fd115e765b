#!/usr/bin/env bash
# CPU cost of consoles: a release daemon holding 1000 legacy sessions with idle GET streams,
# measured for 10 s each with no console, with an idle `watch`, and with mcpx-tui attached (under
# tmux). Prints the daemon's and the console's CPU time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --workspace
dir=$(mktemp -d)
printf '[daemon]\naddress = "127.0.0.1:7797"\n[admin]\nsocket = "%s/admin.sock"\n[servers.fixture]\ncommand = "%s"\n' "$dir" "$PWD/target/release/fixture-upstream" > "$dir/config.toml"
MCPX_LOG=warn target/release/mcpx --config "$dir/config.toml" daemon &
daemon=$!
trap 'kill $daemon $holder 2>/dev/null; tmux kill-session -t mcpx-cpu 2>/dev/null; rm -rf "$dir"' EXIT
sleep 0.5
HOLD=120 python3 bench/idle_streams.py 127.0.0.1:7797 "$daemon" 1000 &
holder=$!
sleep 8
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() { # PID... -> CPU milliseconds of each over 10 s
  local before=() after=() i
  for p in "$@"; do before+=("$(ticks "$p")"); done
  sleep 10
  for p in "$@"; do after+=("$(ticks "$p")"); done
  for i in "${!before[@]}"; do printf '%d ' $(( (after[i] - before[i]) * 1000 / $(getconf CLK_TCK) )); done
}
echo "daemon alone:        $(measure $daemon)ms CPU in 10 s"
python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect('$dir/admin.sock'); s.sendall(b'{\"cmd\":\"watch\"}\n')
f = s.makefile()
while f.readline(): pass
" &
watcher=$!
sleep 1
echo "with an idle watch:  daemon, watcher: $(measure $daemon $watcher)ms CPU in 10 s"
kill $watcher
tmux new-session -d -s mcpx-cpu -x 120 -y 40 "target/release/mcpx-tui --socket $dir/admin.sock"
sleep 1
tui=$(pgrep -f "mcpx-tui --socket $dir/admin.sock" | head -1)
echo "with mcpx-tui:       daemon, tui: $(measure $daemon $tui)ms CPU in 10 s"
