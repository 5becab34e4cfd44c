#!/usr/bin/env bash
# Runs every test: the Swift unit and integration tests (with the services
# they need started first; the release build, the package and the fuzz
# targets beside them), then the kernel test bed in QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
for s in scripts/services/*.sh; do [ -e "$s" ] && "$s"; done
# The build must be warning-free.
swift build 2>&1 | tee /tmp/earshot-build.log
if grep -q 'warning:' /tmp/earshot-build.log; then echo "build has warnings" >&2; exit 1; fi
# The release build, the package and the fuzz targets run beside the
# Swift tests, at the lowest priority: the tests mostly wait on servers and
# timers, so these take the core they leave idle (about 5 minutes less in
# all) without slowing a timed check. Their output is shown when they end.
side=$(mktemp /tmp/earshot-side.XXXXXX)
nice -n 19 bash -c '
  set -euo pipefail
  # The release build (what `make build`, the demo and `make install` use)
  # must build too, without warnings: whole-module builds see C headers
  # differently. Built where the package builds (same flags), so `make deb`
  # in deb-test.sh only checks it.
  swift build -c release --product earshot --static-swift-stdlib --scratch-path .build/deb-build \
    >/tmp/earshot-release.log 2>&1 || { tail -40 /tmp/earshot-release.log; exit 1; }
  if grep -q "warning:" /tmp/earshot-release.log; then
    grep "warning:" /tmp/earshot-release.log; echo "release build has warnings"; exit 1
  fi
  echo "release build: no warnings"
  # The Debian package from that binary: lintian, contents, units (~30 s).
  scripts/deb-test.sh
  # A short run of every fuzz target (crashers kept in Tests/fuzz/corpus replay first).
  scripts/fuzz.sh all 50000
' >"$side" 2>&1 &
side_pid=$!
swift_status=0
swift test || swift_status=$?
side_status=0
wait "$side_pid" || side_status=$?
echo "--- release build, package and fuzzing (beside the Swift tests) ---"
cat "$side"
rm -f "$side"
[ "$swift_status" -eq 0 ] || { echo "swift test failed" >&2; exit 1; }
[ "$side_status" -eq 0 ] || { echo "the release build, the package or fuzzing failed" >&2; exit 1; }
if [ -x Tests/vm/run ]; then Tests/vm/run; fi
echo "all tests passed in $(( $(date +%s) - start )) s"
