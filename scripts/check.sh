#!/usr/bin/env bash
# The fast tier for day-to-day work (`make check`): the debug build
# (warnings are errors), then every test but the slow ones: the pure core's
# and the Linux shell's that run in seconds without a sound server. What CI
# runs is `make test` (scripts/test.sh), which adds those, the release build,
# the package, the fuzzers and the kernel test bed.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build --build-tests 2>&1 | tee "$log"
# Only files compiled in this build can warn here: a warning in one built
# before stays hidden until it is compiled again (make test builds afresh).
if grep -q 'warning:' "$log"; then echo "build has warnings" >&2; exit 1; fi
# Classes of five seconds or more (a sound server, a broker, minutes of
# replayed capture), measured in a full `swift test` on the 2-core machine.
# Tests are named Module.Class/method: the pattern ends at the slash.
slow=(
  RoomsIntegrationTests BenchCommandTests AlertPlayerTests AgentIntegrationTests
  ESPHomeProxyIntegrationTests 'PipeWire\w*' RadioSimulationTests MQTTBridgeTests
  FaultAudioTests ProximityLogTests FaultTests DaemonMediaTests SimulateHouseTests
  MediaPlaybackTests AlertCommandTests MixerTests FindPhoneAudioTests DaemonAudioTests
  TagDBusTests MediaDriverTests PacedReplayTests
)
pattern="(EarshotLinuxTests\\.($(
  IFS='|'
  echo "${slow[*]}"
))|EarshotCoreTests\\.RadioSimulationTests)/"
swift test --skip-build --skip "$pattern"
echo "make check passed in $(($(date +%s) - start)) s (CI runs make test)"
