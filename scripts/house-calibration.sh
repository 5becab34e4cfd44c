#!/usr/bin/env bash
# The calibration figures of docs/rooms-simulator.md: simulates a house spec
# (default scenarios/house.spec) with seeds 1..N, runs earshot calibrate on
# each receiver's recording of the calibration tour, and compares the
# offsets with the spec's true ones (minus each receiver's bias).
# Usage: scripts/house-calibration.sh [SEEDS] [SECONDS] [SPEC] [BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
seconds=${2:-20}
spec=${3:-scenarios/house.spec}
bin=${4:-.build/debug/earshot}
beacon=8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182:9:1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Receiver names and biases from the spec.
receivers=$(awk '/^\[receiver "/ { split($0, q, "\""); name = q[2]; bias[name] = 0; order[++n] = name }
  /^bias *=/ && name != "" { bias[name] = $3 }
  /^\[/ && !/^\[receiver "/ { name = "" }
  END { for (i = 1; i <= n; i++) print order[i], bias[order[i]] }' "$spec")
for seed in $(seq 1 "$seeds"); do
  sed "s/^seed = .*/seed = $seed/" "$spec" >"$work/spec"
  rm -rf "$work/house"
  "$bin" simulate house --spec "$work/spec" --write "$work/house"
  args=()
  while read -r name _; do args+=("$name=$work/house/$name.btsnoop"); done <<<"$receivers"
  "$bin" calibrate --seconds "$seconds" --beacon "$beacon" "${args[@]}" |
    awk -v seed="$seed" '/heard at 1 m/ { sub(":", "", $1); print seed, $1, $NF }'
done | awk -v receivers="$receivers" '
  BEGIN { n = split(receivers, r, "\n"); for (i = 1; i <= n; i++) { split(r[i], p, " "); truth[p[1]] = -p[2]; names[i] = p[1] } }
  { e = $3 - truth[$2]; err[$1, $2] = e; sum[$2] += e; sq[$2] += e * e; count[$2]++
    all += e * e; total++; if (e < 0 ? -e > worst : e > worst) worst = (e < 0 ? -e : e); seedsum[$1] += e; seeds[$1] = 1 }
  END {
    for (i = 1; i <= n; i++) { k = names[i]; m = sum[k] / count[k]
      printf "%-10s mean error %5.2f dB  sd %4.2f dB\n", k, m, sqrt((sq[k] - count[k] * m * m) / (count[k] - 1)) }
    printf "all %d offsets: RMS error %.2f dB, largest %.1f dB\n", total, sqrt(all / total), worst
    for (s in seeds) for (i = 1; i <= n; i++) { d = err[s, names[i]] - seedsum[s] / n; rel += d * d; if (d < 0 ? -d > rw : d > rw) rw = (d < 0 ? -d : d) }
    printf "about each seed'"'"'s mean (what room decisions see): RMS %.2f dB, largest %.2f dB\n", sqrt(rel / total), rw
    for (i = 1; i <= n; i++) bsum += -truth[names[i]]
    for (i = 1; i <= n; i++) { d = -truth[names[i]] - bsum / n; brel += d * d }
    printf "before calibration, biases about their mean: RMS %.2f dB\n", sqrt(brel / n) }'
