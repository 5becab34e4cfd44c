#!/usr/bin/env bash
# Runs every test: the Swift unit and integration tests (with the services
# they need started first), then the kernel test bed in QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
for s in scripts/services/*.sh; do [ -e "$s" ] && "$s"; done
# The build must be warning-free.
swift build 2>&1 | tee /tmp/earshot-build.log
if grep -q 'warning:' /tmp/earshot-build.log; then echo "build has warnings" >&2; exit 1; fi
swift test
# The release build (what `make build`, the demo and `make install` use)
# must build too, without warnings: whole-module builds see C headers
# differently. Built where the package builds (same flags), so `make deb`
# in deb-test.sh only checks it.
swift build -c release --product earshot --static-swift-stdlib --scratch-path .build/deb-build 2>&1 |
  tee /tmp/earshot-release.log
if grep -q 'warning:' /tmp/earshot-release.log; then echo "release build has warnings" >&2; exit 1; fi
# The Debian package from that binary: lintian, contents, units (~30 s).
scripts/deb-test.sh
# A short run of every fuzz target (crashers kept in Tests/fuzz/corpus replay first).
scripts/fuzz.sh all 50000
if [ -x Tests/vm/run ]; then Tests/vm/run; fi
echo "all tests passed in $(( $(date +%s) - start )) s"
