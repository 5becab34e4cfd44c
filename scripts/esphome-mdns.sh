#!/usr/bin/env bash
# The Bluetooth proxy's mDNS announcement through a real avahi-daemon, in a
# network namespace of its own (a multicast-capable veth pair, a
# private system bus, avahi-daemon as root without chroot): `earshot run`
# with [esphome] bound to the namespace's address publishes
# _esphomelib._tcp through Avahi's D-Bus API, avahi-browse resolves it
# (name, port, ESPHome's TXT records), Home Assistant's python-zeroconf
# sees it over the wire (where scripts/ha/install.sh's venv exists), the
# service comes back when
# avahi-daemon restarts, and leaves when the agent stops.
# Needs root, iproute2, dbus-daemon, avahi-daemon and avahi-utils (apt).
# Usage: scripts/esphome-mdns.sh [BINARY] (default .build/debug/earshot)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-.build/debug/earshot}")
for tool in ip dbus-daemon avahi-daemon avahi-browse; do
  command -v "$tool" >/dev/null || { echo "esphome-mdns: $tool missing (apt-get install iproute2 dbus avahi-daemon avahi-utils)" >&2; exit 2; }
done
ns=earshot-mdns-$$
work=$(mktemp -d /tmp/earshot-mdns.XXXXXX)
pass=0 fail=0
check() { local what=$1; shift; if "$@"; then echo "PASS $what"; pass=$((pass + 1)); else echo "FAIL $what"; fail=$((fail + 1)); fi; }
wait_for() { local n=$1; shift; for _ in $(seq "$((n * 10))"); do "$@" && return 0; sleep 0.1; done; "$@"; }
cleanup() {
  set +e
  [ -n "${agent:-}" ] && kill "$agent" 2>/dev/null
  [ -n "${avahi:-}" ] && kill "$avahi" 2>/dev/null
  [ -n "${bus:-}" ] && kill "$bus" 2>/dev/null
  wait 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
in_ns() { ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/system_bus" "$@"; }
# spawn_ns OUT CMD...: CMD in the namespace in the background; $! is CMD itself.
spawn_ns() {
  local out=$1; shift
  (exec ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/system_bus" "$@" >>"$out" 2>&1) &
}

ip netns add "$ns"
ip -n "$ns" link set lo up
# A veth pair inside the namespace: multicast-capable, and nothing leaves it.
ip -n "$ns" link add d0 type veth peer name d1
ip -n "$ns" link set d0 multicast on up
ip -n "$ns" link set d1 up
ip -n "$ns" addr add 10.77.0.1/24 dev d0
cat >"$work/bus.conf" <<CONF
<busconfig>
  <type>system</type>
  <listen>unix:path=$work/system_bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
CONF
spawn_ns "$work/bus.log" dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile
bus=$!
wait_for 5 test -S "$work/system_bus"
cat >"$work/avahi.conf" <<CONF
[server]
host-name=earshot-mdns-test
use-ipv6=no
allow-interfaces=d0
enable-dbus=yes
[publish]
publish-workstation=no
CONF
start_avahi() {
  spawn_ns "$work/avahi.log" avahi-daemon --no-drop-root --no-chroot --no-rlimits --no-proc-title \
    -f "$work/avahi.conf"
  avahi=$!
}
start_avahi
head -c 32 /dev/urandom | base64 >"$work/key"
chmod 600 "$work/key"
printf '[esphome]\nenabled = true\nbind = 10.77.0.1\nport = 16054\nkey_file = %s\nname = mdns-laptop\n[state]\npath = %s/state\n' \
  "$work/key" "$work" >"$work/earshot.conf"
browse() { in_ns avahi-browse -rtp _esphomelib._tcp 2>/dev/null >"$work/browse.txt"; grep -q '^=.*mdns-laptop' "$work/browse.txt"; }
check "avahi-daemon started on the private bus" wait_for 15 grep -q "Server startup complete" "$work/avahi.log"
spawn_ns "$work/agent.log" env HOME="$work" EARSHOT_CONFIG=/dev/null "$bin" run \
  --config "$work/earshot.conf" --socket "$work/sock" --state-dir "$work/state" --no-audio
agent=$!
check "the agent serves the proxy on 10.77.0.1:16054" wait_for 15 grep -q "Bluetooth proxy 'mdns-laptop' on 10.77.0.1:16054" "$work/agent.log"
check "avahi-browse resolves _esphomelib._tcp 'mdns-laptop'" wait_for 20 browse
line=$(grep '^=.*mdns-laptop' "$work/browse.txt" | head -1)
echo "resolved: $line"
check "on port 16054" bash -c "echo '$line' | cut -d';' -f9 | grep -qx 16054"
for txt in '"mac=' '"version=2024.11.0"' '"platform=Linux"' '"project_name=Earshot.Linux"' '"api_encryption=Noise_NNpsk0_25519_ChaChaPoly_SHA256"' '"friendly_name='; do
  check "TXT record ${txt}…" bash -c "grep -F '$txt' '$work/browse.txt' >/dev/null"
done
# What Home Assistant's zeroconf integration sees (its own library, from the
# venv scripts/ha/install.sh makes, where it exists): the service over the
# wire, from the veth's other end, as its esphome integration's discovery
# gets it.
ha_python=${EARSHOT_HA_VENV:-/var/cache/earshot-test/ha-2024.3.3}/bin/python
if [ -x "$ha_python" ]; then
  in_ns "$ha_python" scripts/ha/esphome/zeroconf_browse.py 6 >"$work/zeroconf.txt" 2>"$work/zeroconf.err" || true
  echo "zeroconf: $(head -1 "$work/zeroconf.txt")"
  zc() { python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).readline()); sys.exit(not ($1))" "$work/zeroconf.txt"; }
  check "python-zeroconf (Home Assistant's) resolves mdns-laptop at 10.77.0.1:16054" \
    zc 'r["name"] == "mdns-laptop._esphomelib._tcp.local." and "10.77.0.1" in r["addresses"] and r["port"] == 16054'
  check "with the encryption and MAC Home Assistant reads" \
    zc 'r["properties"]["api_encryption"] == "Noise_NNpsk0_25519_ChaChaPoly_SHA256" and len(r["properties"]["mac"]) == 12'
else
  echo "esphome-mdns: no Home Assistant venv at $ha_python (scripts/ha/install.sh): python-zeroconf not tried"
fi
kill "$avahi"; wait "$avahi" 2>/dev/null || true
old=$avahi
: >"$work/browse.txt"
start_avahi
restarted() { [ "$(grep -c 'Server startup complete' "$work/avahi.log")" -ge 2 ]; }
check "a new avahi-daemon (pid $avahi, was $old)" wait_for 10 restarted
check "published again after avahi-daemon restarts" wait_for 20 browse
kill -INT "$agent"; wait "$agent" || true
agent=
gone() { ! browse; }
check "gone once the agent stops" wait_for 15 gone
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
