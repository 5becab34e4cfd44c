#!/usr/bin/env bash
# The Bluetooth proxy's cost in the running agent: the office scenario
# (repeated to a 4-times-longer capture) replayed through `earshot run` at
# --pace 100 (about 940 reports/s for 38 s) with 0, 1 and 10 aioesphomeapi
# clients subscribed (Tests/esphome/proxy_client.py load, from the test
# venv that scripts/deps.sh test makes). For each: the agent's CPU time
# from start to the replay's end (utime + stime), VmHWM, and what the
# clients received. The proxy's cost is the difference to 0 clients, in
# one run. Usage: scripts/esphome-load.sh [BINARY] (default: the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/deb-build/release/earshot}
py=${EARSHOT_ESPHOME_VENV:-/usr/local/lib/earshot-test/esphome-venv}/bin/python
[ -x "$bin" ] || { echo "esphome-load: no binary $bin (build it, or name one)" >&2; exit 2; }
[ -x "$py" ] || { echo "esphome-load: no test venv $py (scripts/deps.sh test)" >&2; exit 2; }
work=$(mktemp -d /tmp/earshot-esphome-load.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
"$bin" simulate scenario --spec scenarios/office.scenario --write "$work/one.btsnoop" >/dev/null
"$py" Tests/esphome/proxy_client.py repeat-capture "$work/one.btsnoop" "$work/office.btsnoop" 4
head -c 32 /dev/urandom | base64 >"$work/key"
chmod 600 "$work/key"
hz=$(getconf CLK_TCK)
echo "| clients | agent CPU (s) | of which the proxy (s) | per forwarded advertisement | VmHWM (MB) | received per client |"
echo "|---:|---:|---:|---:|---:|---|"
base=
for clients in 0 1 10; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  dir=$work/run$clients
  mkdir -p "$dir"
  { cat scenarios/office.conf
    printf '\n[esphome]\nenabled = true\nport = %s\nkey_file = %s\nname = load\nmax_clients = 16\n[state]\npath = %s/state\n' \
      "$port" "$work/key" "$dir"; } >"$dir/earshot.conf"
  start=$(( $(date +%s) + 10 ))
  HOME=$dir EARSHOT_CONFIG=/dev/null "$bin" run --config "$dir/earshot.conf" --socket "$dir/sock" \
    --state-dir "$dir/state" --no-audio --input "$work/office.btsnoop" --pace 100 --start-at "$start" \
    2>"$dir/log" &
  agent=$!
  for _ in $(seq 100); do grep -q "Bluetooth proxy 'load'" "$dir/log" && break; sleep 0.1; done
  received=-
  if [ "$clients" -gt 0 ]; then
    "$py" Tests/esphome/proxy_client.py load "$port" "$(cat "$work/key")" "$clients" 48 >"$dir/clients" &
    client_pid=$!
    for _ in $(seq 100); do grep -q subscribed "$dir/clients" && break; sleep 0.1; done
    [ "$(date +%s)" -lt "$start" ] || { echo "esphome-load: clients subscribed after the replay began" >&2; exit 1; }
  fi
  for _ in $(seq 900); do grep -q "replayed " "$dir/log" && break; sleep 0.1; done
  read -r ut st < <(awk '{print $14, $15}' "/proc/$agent/stat")
  hwm=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$agent/status")
  cpu=$(awk -v u="$ut" -v s="$st" -v hz="$hz" 'BEGIN { printf "%.2f", (u + s) / hz }')
  if [ "$clients" -gt 0 ]; then
    wait "$client_pid"
    received=$(tail -1 "$dir/clients" | python3 -c 'import json,sys; r=json.load(sys.stdin)["received"]; print(min(r) if min(r)==max(r) else f"{min(r)}-{max(r)}")')
  fi
  kill -INT $agent; wait $agent || true
  [ -z "$base" ] && base=$cpu
  proxy=$(awk -v c="$cpu" -v b="$base" 'BEGIN { printf "%.2f", c - b }')
  per=-
  if [ "$clients" -gt 0 ]; then
    n=${received%%-*}
    per=$(awk -v p="$proxy" -v n="$n" -v k="$clients" 'BEGIN { printf "%.2f µs", p / (n * k) * 1e6 }')
  fi
  echo "| $clients | $cpu | $proxy | $per | $hwm | $received |"
done
