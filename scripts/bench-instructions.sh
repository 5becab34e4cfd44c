#!/usr/bin/env bash
# Instructions a report costs on `earshot bench`'s live path, iBeacon and
# identity, counted by callgrind: a count of the agent's own work (user
# space) that does not move with whatever else the machine runs, where the
# bench's CPU times do. The bench's live rounds run in pairs (iBeacon and
# identity, each pair in the other order than the last); callgrind counts
# only inside the event loop's run (the reads, decoding, monitor and timers
# of a round, as the bench's CPU figure does; not the round's set-up) and
# writes one count per round. The writer is another thread, which never
# runs the loop (its counts are left out); the kernel's share is not
# counted (perf has no instruction counter in this VM).
# Usage: scripts/bench-instructions.sh [BINARY]   (default: the release build)
#   EARSHOT_CALLGRIND_KEEP=DIR keeps the counts for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/earshot}
[ -x "$bin" ] || { echo "no $bin: make build first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rate=1000
seconds=1 # 4 × seconds rounds a path of 0.5 s each
# Everything else as small as the bench allows: it runs, uncounted, under
# valgrind too.
# The loop's run: only the live rounds run an event loop in the bench.
run=$(nm "$bin" | awk '{print $3}' | grep '^$s12EarshotLinux9EventLoopC3runyyKF$' || true)
[ -n "$run" ] || { echo "no EventLoop.run in $bin" >&2; exit 1; }
valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$run" --dump-after="$run" \
  --callgrind-out-file="$work/cg.%p" \
  "$bin" bench --seconds "$seconds" --rate "$rate" --reports 20000 --beacons 1000 \
  --dense-minutes 0 --duty-hours 1 >"$work/bench.txt" 2>"$work/valgrind.txt" || {
  cat "$work/valgrind.txt" >&2
  exit 1
}
[ -z "${EARSHOT_CALLGRIND_KEEP:-}" ] || cp "$work"/cg.* "$EARSHOT_CALLGRIND_KEEP"/
pid=$(sed -n 's/^==\([0-9]*\)== Callgrind.*/\1/p' "$work/valgrind.txt" | head -1)
reports=$((rate / 2))
echo "instructions a report on the live path (callgrind, $reports reports a round, $rate/s)"
echo "round  iBeacon  identity  ratio"
i=0
ratios=()
# In the order callgrind wrote them: by the dump's number, the last field
# (mktemp's directory has a dot of its own).
for f in $(ls "$work"/cg."$pid".* | awk -F. '{print $NF, $0}' | sort -n | cut -d' ' -f2-); do
  grep -q '^desc: Trigger: --dump-after' "$f" || continue
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
  # Pairs alternate: iBeacon then identity, then identity then iBeacon.
  if [ $((i % 2)) -eq 0 ]; then
    firstIr=$ir
  else
    if [ $((i / 2 % 2)) -eq 0 ]; then beacon=$firstIr identity=$ir; else beacon=$ir identity=$firstIr; fi
    ratio=$(awk -v a="$identity" -v b="$beacon" 'BEGIN {printf "%.2f", a / b}')
    ratios+=("$ratio")
    printf '%5d  %7d  %8d  %5s\n' $((i / 2 + 1)) $((beacon / reports)) $((identity / reports)) "$ratio"
  fi
  i=$((i + 1))
done
[ "$i" -ge 2 ] || { echo "no counts (was BenchLive.run renamed?)" >&2; exit 1; }
printf 'median ratio %s\n' "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
