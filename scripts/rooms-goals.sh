#!/usr/bin/env bash
# The goals table of docs/rooms.md (issue 18): for each seed, simulates the
# house spec (default scenarios/house.spec), runs `earshot calibrate` on every
# receiver's recording of the spec's calibration beacon (held 1 m from each
# receiver in turn), and evaluates the rule and the naive baseline twice:
# uncalibrated (rssi_offset 0) and with the offsets calibrate printed.
# Usage: scripts/rooms-goals.sh [SEEDS] [SPEC] [BINARY]
#   SEEDS: space-separated list (default "18 1 2 3 4")
# Receivers' clocks (issue 24): SKEW="kitchen=3600,living=-600" (seconds
# ahead) and DRIFT="bedroom=50" (ppm) also evaluate the calibrated house with
# those clocks in the sightings' t: "skewed" as the aggregator judges (by
# arrival) and "skewed-t" judged on the sightings' own t (the old way).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-18 1 2 3 4}
spec=${2:-scenarios/house.spec}
bin=${3:-.build/debug/earshot}
beacon=8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:9:1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
receivers=$(awk '/^\[receiver "/ { split($0, q, "\""); print q[2] }' "$spec")
for seed in $seeds; do
  sed "s/^seed = .*/seed = $seed/" "$spec" >"$work/spec"
  rm -rf "$work/house"
  "$bin" simulate house --spec "$work/spec" --write "$work/house" >/dev/null
  args=()
  for name in $receivers; do args+=("$name=$work/house/$name.btsnoop"); done
  # "NAME: beacon … heard at 1 m: … ; rssi_offset = X" -> NAME=X,…
  offsets=$("$bin" calibrate --beacon "$beacon" "${args[@]}" |
    awk '/rssi_offset =/ { sub(":", "", $1); printf "%s%s=%s", sep, $1, $NF; sep = "," }')
  echo "seed $seed: calibrate --offsets $offsets"
  "$bin" rooms evaluate "$work/house" | sed -n 's/^\(rule\|naive\): */seed '"$seed"' uncalibrated \1 /p'
  "$bin" rooms evaluate "$work/house" --offsets "$offsets" |
    sed -n 's/^\(rule\|naive\): */seed '"$seed"' calibrated \1 /p'
  if [ -n "${SKEW:-}${DRIFT:-}" ]; then
    clocks=(--skew "${SKEW:-}" --drift "${DRIFT:-}")
    "$bin" rooms evaluate "$work/house" --offsets "$offsets" "${clocks[@]}" |
      sed -n 's/^\(rule\|naive\): */seed '"$seed"' skewed \1 /p'
    "$bin" rooms evaluate "$work/house" --offsets "$offsets" "${clocks[@]}" --message-time |
      sed -n 's/^\(rule\|naive\): */seed '"$seed"' skewed-t \1 /p'
  fi
done | tee "$work/out"
cases=("uncalibrated rule" "uncalibrated naive" "calibrated rule" "calibrated naive")
if [ -n "${SKEW:-}${DRIFT:-}" ]; then
  cases+=("skewed rule" "skewed naive" "skewed-t rule" "skewed-t naive")
  echo
  echo "skewed: calibrated, receivers' clocks ${SKEW:-in step} ${DRIFT:+drift $DRIFT ppm}"
fi
# One row per case: the range over seeds (stationary changes listed per seed).
echo
echo "| | wrong-room (goal < 5 %) | stationary changes/h (goal ≤ 1) | median confirm (goal ≤ 10 s) | away latency, max (goal ≤ 35 s) |"
echo "|---|---|---|---|---|"
for c in "${cases[@]}"; do
  grep "^seed [0-9]* $c " "$work/out" | awk -v c="$c" '
    function range(lo, hi, unit) { return lo == hi ? lo unit : lo "–" hi unit }
    # "-" (nothing confirmed, nothing away) is left out of the ranges.
    function some(lo, hi, n, unit) { return n ? range(lo, hi, unit) (n < NR ? " (" NR - n " seeds none)" : "") : "none" }
    function after(words) { v = $0; sub(".*" words " ", "", v); sub(" .*", "", v); return v }
    { w = $6 + 0; s = $13 + 0; mt = after("median confirm"); at = after("latency max")
      m = mt + 0; a = at + 0
      if (NR == 1 || w < w0) w0 = w; if (NR == 1 || w > w1) w1 = w
      if (mt != "-") { if (!nm++ || m < m0) m0 = m; if (m > m1) m1 = m }
      if (at != "-") { if (!na++ || a < a0) a0 = a; if (a > a1) a1 = a }
      list = list (NR > 1 ? ", " : "") sprintf("%.0f", s) }
    END { printf "| %s | %s | %s | %s | %s |\n", c, range(w0, w1, " %"), list, some(m0, m1, nm, " s"), some(a0, a1, na, " s") }'
done
