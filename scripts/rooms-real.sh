#!/usr/bin/env bash
# The rooms rule on real recorded houses (docs/rooms.md, "Real houses"):
# converts a real labelled recording in DIR (fetched by hand, never by this
# script) and scores Earshot's rule and the simple rules (`rooms evaluate
# --baseline`) on each group of it, then prints a table: wrong-room time,
# room changes an hour during stays of 90 s or more, median confirm, and the
# longest first placement of the group's sequences. DIR is either
# - the SPHERE challenge 2016 training sequences (00001 ..., each with
#   acceleration.csv and location_0.csv): scripts/rooms-real/sphere.py,
#   groups of sequences heard by the same gateways (1-5, 6, 7-10); or
# - a clone of marckolak/ble-rss-fingerprints-calib2021 (anchors.csv,
#   calibration/calibration_df.csv, tests/test_robot_df.csv): the robot in
#   a flat, scripts/rooms-real/flat.py, groups calibration and test-robot.
# Usage: scripts/rooms-real.sh DIR [BINARY]
#   CONVERT_ARGS="--every 6" keeps a report in 6 s of each receiver (a
#   sparse receiver); for SPHERE, CONVERT_ARGS="--upstairs" scores the
#   upstairs rooms as one room (the landing gateway's); SPHERE_ARGS is
#   read when CONVERT_ARGS is not set. RULE="key = value;..." adds [rooms]
#   settings.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/rooms-real.sh DIR [BINARY]" >&2; exit 2; }
dir=$1
bin=${2:-.build/debug/earshot}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
convert=scripts/rooms-real/sphere.py
[ -f "$dir/anchors.csv" ] && [ -f "$dir/calibration/calibration_df.csv" ] &&
  convert=scripts/rooms-real/flat.py
# shellcheck disable=SC2086
python3 "$convert" "$dir" "$work" ${CONVERT_ARGS:-${SPHERE_ARGS:-}} >&2
{ echo "[rooms]"; tr ';' '\n' <<<"${RULE:-}"; } >"$work/rule.conf"
figure() { sed -n "s/.*$1 \([-0-9.]*\).*/\1/p"; }
echo "| sequences | rule | wrong-room | changes/h in stays ≥ 90 s | median confirm | first placement (longest) |"
echo "|---|---|---|---|---|---|"
for g in "$work"/group-*; do
  name=$(basename "$g")
  name=${name#group-}
  out=$("$bin" rooms evaluate "$g" --baseline --config "$work/rule.conf")
  echo "$out" | head -1 >&2
  while IFS= read -r line; do
    rule=${line%%:*}
    case $rule in rule) rule=Earshot ;; naive) continue ;; esac
    minutes=$(sed -n 's/.*wrong-room [-0-9.]* % of \([0-9]*\) min.*/\1/p' <<<"$line")
    echo "| $name | $rule | $(figure "wrong-room" <<<"$line") % of $minutes min | $(figure "stay changes\/h" <<<"$line") | $(figure "median confirm" <<<"$line") s | $(figure "first placement" <<<"$line") s |"
  done < <(tail -n +2 <<<"$out")
done
