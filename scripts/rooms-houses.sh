#!/usr/bin/env bash
# The rooms rule's goals over every house (docs/rooms.md, "Figures"): for each
# spec and seed (an hour each), simulates the house, evaluates the rule on
# it and prints one row per spec with, over all its hours and then as the
# range over the seeds,
#   wrong-room time (all beacons; goal < 5 %),
#   room changes per hour of the beacon at a wall (minor 2; goal ≤ 1),
#   room changes per hour of the beacon in a room's centre (minor 3),
#   median change latency (all beacons; goal ≤ 10 s),
# and whether all its hours together meet every goal, and in how many seeds
# a single hour does.
# A spec with a calibration beacon (major 9, minor 1, as scenarios/house.spec)
# is evaluated with the offsets `earshot calibrate` finds; the others are
# evaluated as they are (their receivers' bias is what calibration left).
# Usage: scripts/rooms-houses.sh [SEEDS] [BINARY] [SPEC...]
#   SEEDS: space-separated list (default "1 2 3 4 5"); SPECs default to
#   scenarios/house.spec and scenarios/house-fading-*.spec.
# RULE="key = value;..." adds [rooms] settings (e.g. RULE="window = 12").
# SIMULATE=BINARY simulates and calibrates with another earshot than the one
# evaluated (an older rule, whose simulator lacks keys the houses use).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-1 2 3 4 5}
bin=${2:-.build/debug/earshot}
sim=${SIMULATE:-$bin}
shift $(($# < 2 ? $# : 2))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(scenarios/house.spec scenarios/house-fading-*.spec)
uuid=8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One config per case: all beacons, only the wall beacon, only the centre one.
for c in all:$uuid wall:$uuid:1:2 centre:$uuid:1:3; do
  { echo "[rooms]"; echo "track = ${c#*:}"; tr ';' '\n' <<<"${RULE:-}"; } >"$work/${c%%:*}.conf"
done
figure() { sed -n "s/^rule: .*$1 \([-0-9.]*\).*/\1/p"; }
echo "| house | wrong-room (goal < 5 %) | changes/h at the wall (goal ≤ 1) | changes/h in the centre | median change latency (goal ≤ 10 s) | goals met |"
echo "|---|---|---|---|---|---|"
for spec in "${specs[@]}"; do
  name=$(basename "$spec" .spec)
  : >"$work/rows"
  for seed in $seeds; do
    sed "s/^seed = .*/seed = $seed/" "$spec" >"$work/spec"
    rm -rf "$work/house"
    "$sim" simulate house --spec "$work/spec" --write "$work/house" >/dev/null
    offsets=()
    if grep -q ":9:1\"" "$work/house/truth.jsonl"; then
      receivers=$(awk '/^\[receiver "/ { split($0, q, "\""); print q[2] }' "$spec")
      args=()
      for r in $receivers; do args+=("$r=$work/house/$r.btsnoop"); done
      o=$("$sim" calibrate --beacon "$uuid:9:1" "${args[@]}" |
        awk '/rssi_offset =/ { sub(":", "", $1); printf "%s%s=%s", sep, $1, $NF; sep = "," }')
      offsets=(--offsets "$o")
    fi
    # One beacon alone: its own truth, the same captures.
    for b in wall:1:2 centre:1:3; do
      rm -rf "$work/${b%%:*}" && mkdir "$work/${b%%:*}"
      ln -s "$work"/house/*.btsnoop "$work/${b%%:*}/"
      grep -F ":${b#*:}\"" "$work/house/truth.jsonl" >"$work/${b%%:*}/truth.jsonl" || true
    done
    run() {
      local dir=$work/$1
      [ "$1" = all ] && dir=$work/house
      [ -s "$dir/truth.jsonl" ] || return 0
      "$bin" rooms evaluate "$dir" --config "$work/$1.conf" "${offsets[@]}"
    }
    all=$(run all)
    w=$(figure "wrong-room" <<<"$all")
    m=$(figure "median confirm" <<<"$all")
    wall=$(run wall | figure "stationary changes\/h")
    centre=$(run centre | figure "stationary changes\/h")
    echo "$name seed $seed: wrong $w %, wall $wall/h, centre $centre/h, median confirm $m s" >&2
    echo "${w:--} ${wall:--} ${centre:--} ${m:--}" >>"$work/rows"
  done
  # Each column: over all the seeds' hours (the mean of the hours' wrong
  # share and changes, the median of their median latencies), then the
  # range over the seeds; the last: whether those meet every goal, and in
  # how many seeds every goal is met.
  awk -v name="$name" '
    function range(k) { return lo[k] == hi[k] ? lo[k] "" : lo[k] "–" hi[k] }
    function median(k,   i, j, t, c) {
      c = n[k]; for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
        if (v[k, j] < v[k, i]) { t = v[k, i]; v[k, i] = v[k, j]; v[k, j] = t }
      return c % 2 ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2 }
    { hours++; met = 1
      for (k = 1; k <= 4; k++) { if ($k == "-" || $k == "") continue
        x = $k + 0; v[k, ++n[k]] = x; sum[k] += x
        if (n[k] == 1 || x < lo[k]) lo[k] = x; if (x > hi[k]) hi[k] = x }
      if ($1 + 0 >= 5 || ($2 != "-" && $2 + 0 > 1) || ($4 != "-" && $4 + 0 > 10)) met = 0
      good += met }
    END {
      for (k = 1; k <= 3; k++) all[k] = n[k] ? sum[k] / n[k] : ""
      all[4] = n[4] ? median(4) : ""
      ok = all[1] < 5 && (all[2] == "" || all[2] <= 1) && (all[4] == "" || all[4] <= 10)
      out[1] = sprintf("%.1f %% (%s)", all[1], range(1))
      for (k = 2; k <= 3; k++) out[k] = n[k] ? sprintf("%.2f (%s)", all[k], range(k)) : "-"
      out[4] = n[4] ? sprintf("%.1f s (%s)", all[4], range(4)) : "-"
      printf "| %s | %s | %s | %s | %s | %s; %d of %d seeds |\n", name, out[1], out[2], out[3], out[4],
        ok ? "**yes**" : "no", good, hours }' "$work/rows"
done
