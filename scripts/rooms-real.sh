#!/usr/bin/env bash
# The rooms rule on real recorded houses (docs/rooms.md, "Real houses"):
# converts the SPHERE challenge 2016 training sequences in DIR (00001 ...,
# each with acceleration.csv and location_0.csv; fetched by hand, never by
# this script) with scripts/rooms-real/sphere.py, scores Earshot's rule and
# the simple rules (`rooms evaluate --baseline`) on each group of sequences
# heard by the same gateways (1-5, 6, 7-10), and prints a table: wrong-room
# time, room changes an hour during stays of 90 s or more, median confirm,
# and the longest first placement of the group's sequences.
# Usage: scripts/rooms-real.sh DIR [BINARY]
#   SPHERE_ARGS="--upstairs" scores the upstairs rooms as one room (the
#   landing gateway's), SPHERE_ARGS="--every 6" keeps a report in 6 s of
#   each gateway (a sparse receiver); RULE="key = value;..." adds [rooms]
#   settings.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/rooms-real.sh DIR [BINARY]" >&2; exit 2; }
dir=$1
bin=${2:-.build/debug/earshot}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
python3 scripts/rooms-real/sphere.py "$dir" "$work" ${SPHERE_ARGS:-} >&2
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
