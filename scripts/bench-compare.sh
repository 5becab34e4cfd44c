#!/usr/bin/env bash
# Compares Earshot's decoding speed with Python beacontools and btmon on the
# same capture, in one run, as ratios (absolute times vary between runs),
# then prints `earshot bench`'s whole table: decode + range + monitor, live
# CPU and wakeups at 1,000 reports/s, memory with 10,000 beacons, and the
# find-phone latencies against PulseAudio's null sink (started by
# scripts/services/pulseaudio.sh; set EARSHOT_BENCH_ALERT=none to skip).
# Usage: scripts/bench-compare.sh [CAPTURE]   (default: a synthetic busy room)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product earshot --static-swift-stdlib >/dev/null
bin=.build/release/earshot
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
capture=${1:-$work/busy.btsnoop}
[ -n "${1:-}" ] || $bin simulate busy-room --reports 200000 --write "$capture"

alert=()
if [ "${EARSHOT_BENCH_ALERT:-default}" != none ]; then
  export XDG_RUNTIME_DIR=${EARSHOT_PULSE_RUNTIME:-/tmp/xdg}
  scripts/services/pulseaudio.sh >/dev/null
  alert=(--alert-device "${EARSHOT_BENCH_ALERT:-default}" --mixer-card default)
fi
$bin bench --input "$capture" --seconds 2 "${alert[@]}" | tee "$work/bench.txt"
echo
earshot_rate=$(awk '/^capture read/ {print $(NF-1)}' "$work/bench.txt")
monitor_rate=$(awk '/^decode \+ range \+ monitor/ {print $(NF-1)}' "$work/bench.txt")

# beacontools in a throwaway venv, fed the same report AD bytes.
python3 -m venv "$work/venv" >/dev/null
"$work/venv/bin/pip" install -q beacontools >/dev/null 2>&1 || { echo "pip install beacontools failed" >&2; exit 1; }
bt_rate=$("$work/venv/bin/python" - "$capture" <<'PY'
import struct, sys, time
from beacontools import parse_packet
data = open(sys.argv[1], 'rb').read()
ads = []
off = 16
while off + 24 <= len(data):
    inc = struct.unpack('>I', data[off+4:off+8])[0]
    pkt = data[off+24:off+24+inc]
    off += 24 + inc
    # H4 event, LE meta, legacy advertising report: walk each report's AD data.
    if len(pkt) > 4 and pkt[0] == 4 and pkt[1] == 0x3E and pkt[3] == 0x02:
        p = 5
        for _ in range(pkt[4]):
            n = pkt[p+8]; ads.append(bytes(pkt[p+9:p+9+n])); p += 10 + n
start = time.perf_counter(); count = 0
while time.perf_counter() - start < 2.0:
    for ad in ads: parse_packet(ad)
    count += len(ads)
print(int(count / (time.perf_counter() - start)))
PY
)

reports=$($bin scan --all --input "$capture" | wc -l)
start=$(date +%s.%N); btmon -r "$capture" >/dev/null; end=$(date +%s.%N)
btmon_rate=$(python3 -c "print(int($reports/($end-$start)))")

printf '%-28s %15s %12s\n' tool reports/s "earshot is"
printf '%-28s %15s %12s\n' "earshot (decode + iBeacon)" "$earshot_rate" "1x"
printf '%-28s %15s %12s\n' "earshot (+ range + monitor)" "$monitor_rate" "$(python3 -c "print(f'{$monitor_rate/$bt_rate:.0f}x bt')")"
printf '%-28s %15s %12s\n' "beacontools parse_packet" "$bt_rate" "$(python3 -c "print(f'{$earshot_rate/$bt_rate:.0f}x faster')")"
printf '%-28s %15s %12s\n' "btmon -r" "$btmon_rate" "$(python3 -c "print(f'{$earshot_rate/$btmon_rate:.0f}x faster')")"
