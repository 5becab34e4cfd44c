#!/usr/bin/env bash
# Builds and runs the libFuzzer targets in Tests/fuzz (swiftc
# -sanitize=fuzzer,address). The core is compiled once, instrumented, into a
# static library that every target links (`@testable import EarshotCore`):
# one 2-3 minute compile instead of one per target.
# Usage: scripts/fuzz.sh [TARGET|all] [RUNS]   e.g. scripts/fuzz.sh all 10000000
# Seeds: the shared captures and vectors, plus Tests/fuzz/corpus/TARGET, where
# any crasher found is kept and replayed as a regression on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
runs=${2:-100000}
shared=../shared/data/ble
out=.build/fuzz
mkdir -p "$out"
targets=()
for f in Tests/fuzz/*.swift; do targets+=("$(basename "$f" .swift)"); done
[ "$which" = all ] || targets=("$which")

seed() {  # seed corpus for a target into $1
  local dir=$1 target=$2
  mkdir -p "$dir"
  case $target in
    captures)  # the first 8 KiB of each capture: headers plus many records;
      # and nRF Sniffer (LINKTYPE 272) ones in each header version, made from
      # the LINKTYPE 256 ones (shared holds none)
      if [ -d "$shared/captures" ]; then
        for c in "$shared"/captures/*; do head -c 8192 "$c" >"$dir/$(basename "$c")"; done
        for c in "$shared"/captures/*.le-ll-phdr.pcap; do
          for v in 0 1 2 3; do
            python3 scripts/nordic-capture.py "$c" "$dir/nordic.tmp" "$v"
            head -c 8192 "$dir/nordic.tmp" >"$dir/$(basename "$c" .pcap).nordic-v$v.pcap"
          done
        done
        rm -f "$dir/nordic.tmp"
      fi ;;
    hci_events) [ -d "$shared/vectors" ] && python3 - "$shared/vectors" "$dir" <<'PY'
import json, glob, os, sys
n = 0
for f in glob.glob(os.path.join(sys.argv[1], '*.json')):
    for v in json.load(open(f))['vectors']:
        open(os.path.join(sys.argv[2], 'v%d' % n), 'wb').write(bytes.fromhex(v['hex'])); n += 1
PY
    ;;
    *) ;;  # seeds for the other targets are kept in Tests/fuzz/corpus/TARGET
  esac
  return 0
}

# Rebuilt when a core source is newer than it (or the library is missing).
core=$out/libEarshotCore.a
if [ ! -f "$core" ] || [ -n "$(find Sources/EarshotCore -newer "$core" -name '*.swift' | head -1)" ]; then
  if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -enable-testing \
    -module-name EarshotCore -emit-module -emit-module-path "$out/EarshotCore.swiftmodule" \
    -emit-library -static -o "$core" \
    $(find Sources/EarshotCore -name '*.swift') >"$out/core.build.log" 2>&1; then
    grep -v 'Cannot export local symbol' "$out/core.build.log" >&2
    echo "fuzz: the core does not build" >&2
    exit 1
  fi
fi

status=0
for t in "${targets[@]}"; do
  bin=$out/fuzz-$t
  if [ ! -x "$bin" ] || [ "$core" -nt "$bin" ] || [ "Tests/fuzz/$t.swift" -nt "$bin" ]; then
    if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name EarshotFuzz \
      -I "$out" -L "$out" -lEarshotCore "Tests/fuzz/$t.swift" -o "$bin" >"$out/$t.build.log" 2>&1; then
      grep -v 'Cannot export local symbol' "$out/$t.build.log" >&2
      echo "fuzz $t: the target does not build" >&2
      exit 1
    fi
  fi
  corpus=$out/corpus-$t
  seed "$corpus" "$t"
  kept=Tests/fuzz/corpus/$t
  mkdir -p "$kept"
  max_len=4096; [ "$t" = captures ] && max_len=8192
  echo "fuzz $t: $runs runs"
  if ! "$bin" -runs="$runs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$kept/crash-" "$corpus" "$kept" >"$out/$t.log" 2>&1; then
    echo "fuzz $t FAILED: see $out/$t.log; the input is kept in $kept" >&2
    tail -30 "$out/$t.log" >&2
    status=1
  else
    grep -E '^Done' "$out/$t.log" || true
  fi
done
exit $status
