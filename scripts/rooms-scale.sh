#!/bin/sh
# Scale of the room aggregator (issue 18): a private mosquitto, `earshot
# rooms` subscribed to everything, and `earshot rooms load` publishing one
# sighting per second per agent per beacon. Prints, per load, the sightings
# the aggregator handled per second, its CPU (% of one core, from
# /proc/PID/stat over the measured span), CPU per 1,000 sightings/s, its
# VmRSS/VmHWM, the broker's CPU and the load generators' CPU (summed).
#   scripts/rooms-scale.sh [EARSHOT] [SECONDS]     (default .build/debug/earshot, 30)
# Loads: 10x100, 25x200, 50x500 agents x beacons (override with LOADS="AxB ...");
# GENERATORS=N splits each load's agents over N load processes (default 1).
# RUN=setsid starts broker, aggregator and generators each in a session of
# its own: with the kernel's autogroup scheduling every session gets an equal
# share of the cores, so on a machine busy with other sessions the chain
# started from one shell shares one share (nice does not help across
# sessions) and falls behind, each process runnable but starved.
set -eu
earshot=${1:-.build/debug/earshot}
seconds=${2:-30}
loads=${LOADS:-"10x100 25x200 50x500"}
generators=${GENERATORS:-1}
run="${RUN:-}"
dir=$(mktemp -d /tmp/earshot-rooms-scale-XXXXXX)
trap 'kill $(cat "$dir"/*.pid 2>/dev/null) 2>/dev/null || true; rm -rf "$dir"' EXIT
hz=$(getconf CLK_TCK)
port=$(( 20000 + $$ % 20000 ))

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
generators_cpu() { for f in "$dir"/load*.pid; do cpu "$(cat "$f")"; done | awk '{s += $1} END {print s}'; }
mem() { awk '/VmRSS|VmHWM/ {printf "%s %s kB  ", $1, $2}' "/proc/$1/status"; }

printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\n' "$port" > "$dir/m.conf"
printf '[mqtt]\nhost = 127.0.0.1\nport = %s\ndiscovery = false\n' "$port" > "$dir/e.conf"
echo "agents x beacons  sightings/s  aggregator CPU  CPU per 1k/s  memory  broker CPU  generator CPU"
for load in $loads; do
  agents=${load%x*}
  beacons=${load#*x}
  $run mosquitto -c "$dir/m.conf" >/dev/null 2>&1 & echo $! > "$dir/broker.pid"
  sleep 0.5
  $run "$earshot" rooms --config "$dir/e.conf" --stats "$seconds" > /dev/null 2> "$dir/agg.log" &
  echo $! > "$dir/agg.pid"
  sleep 0.5
  share=$(( agents / generators ))
  g=0
  while [ "$g" -lt "$generators" ]; do
    $run "$earshot" rooms load --config "$dir/e.conf" --agents "$share" --beacons "$beacons" \
      --first-agent $(( g * share )) --seconds $(( seconds + 15 )) > "$dir/load$g.log" 2>&1 &
    echo $! > "$dir/load$g.pid"
    g=$(( g + 1 ))
  done
  agg=$(cat "$dir/agg.pid")
  broker=$(cat "$dir/broker.pid")
  sleep 10  # warm-up: every beacon known, every trace full
  a0=$(cpu "$agg"); b0=$(cpu "$broker"); g0=$(generators_cpu)
  sleep "$seconds"
  a1=$(cpu "$agg"); b1=$(cpu "$broker"); g1=$(generators_cpu)
  # The aggregator's own count over its last full --stats span.
  handled=$(grep sightings "$dir/agg.log" | tail -1 | awk -v s="$seconds" '{printf "%.0f", $3 / s}')
  memory=$(mem "$agg")
  acpu=$(echo "$a0 $a1 $hz $seconds" | awk '{printf "%.1f", ($2 - $1) / $3 / $4 * 100}')
  bcpu=$(echo "$b0 $b1 $hz $seconds" | awk '{printf "%.1f", ($2 - $1) / $3 / $4 * 100}')
  gcpu=$(echo "$g0 $g1 $hz $seconds" | awk '{printf "%.1f", ($2 - $1) / $3 / $4 * 100}')
  per=$(echo "$acpu $handled" | awk '{ if ($2 > 0) printf "%.2f %%", $1 / ($2 / 1000); else print "-" }')
  printf '%-17s %-12s %-15s %-13s %s %s %%  %s %%\n' "$load" "$handled" "$acpu %" "$per" "$memory" "$bcpu" "$gcpu"
  kill $(cat "$dir"/load*.pid) "$agg" "$broker" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -f "$dir"/*.pid
done
