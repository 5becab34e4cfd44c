#!/usr/bin/env bash
# The agent as a Home Assistant Bluetooth proxy, checked with HA's OWN
# Bluetooth stack: a real Home Assistant 2024.3.3 (its esphome integration,
# aioesphomeapi, bleak-esphome, habluetooth) adds a real `earshot run` with
# [esphome] enabled through the esphome config flow (host, port, then the
# encryption key: a wrong key first, then the right one), registers it as a
# remote scanner, and sees the advertisements of a replayed capture among its
# discovered Bluetooth devices.
#
#   scripts/ha-esphome.sh [EARSHOT_BINARY]      (default .build/debug/earshot)
#
# Prints figures and one PASS/FAIL line per check (scripts/ha/esphome/check.py);
# exits 1 when a check fails, 2 when the run itself could not be done.
#
# Needs what scripts/ha-real.sh needs for HA (python3, python3-venv; the venv
# of scripts/ha/install.sh, /var/cache/earshot-test/ha-2024.3.3), plus
# scripts/ha/requirements-esphome.txt, added to that venv once (install.sh
# keeps a stamp; half a minute the first time). HA runs offline (--skip-pip).
#
# Everything runs in a temporary directory on private ports on 127.0.0.1: HA
# (http and the proxy on loopback only) and one agent, which gets --config,
# --socket and --state-dir explicitly and HOME/XDG dirs inside the temporary
# directory (never the host's or the user's config). The binary is copied
# there first. HA's system D-Bus is pointed at a socket that does not exist
# (DBUS_SYSTEM_BUS_ADDRESS), so the host's BlueZ and adapters, if any, stay out
# of it: HA's bluetooth integration then has no local adapter at all, and the
# agent is its only scanner. HA's esphome integration opens a zeroconf
# (mDNS) instance of its own, as it always does; nothing is announced and the
# node is added by address, so no mDNS query is sent.
#
# What HA sees is written by a small custom integration in HA's config dir
# (scripts/ha/esphome/earshot_probe): a snapshot every second (scanner count,
# scanners, discovered devices, the esphome entry, its device, the ibeacon
# entities) and an event for each change and for each address's first
# advertisement. The ibeacon integration is configured too (the iBeacon UUIDs
# of the capture allowed without a name), so the beacons become HA entities.
#
# The sequence (marks with times in marks.txt; check.py reads them):
#   HA up (its start time measured), the esphome integration loaded, no node
#   the agent started with the proxy on 127.0.0.1:PORT, replaying
#     scripts/ha/esphome/esphome.scenario (90 s) at --pace 2, its first
#     record played 10 s after the start (--start-at), so HA is connected first
#   as soon as the proxy listens: the esphome config flow (user step; the
#     encryption key step with a wrong key, then the key)
#   12 s into the replay: HA reloads the esphome entry (it disconnects,
#     waiting for the node's DisconnectResponse, and connects again)
#   the replay played (45 s), 3 s more, then the agent stopped with SIGINT:
#     HA must see the node go and its scanner unregistered
#   HA stopped
#
# EARSHOT_HA_KEEP=1 keeps the temporary directory (logs, HA config, probe
# output). EARSHOT_HA_VENV=DIR uses another venv. EARSHOT_HA_PACE (default 2)
# and EARSHOT_HA_LEAD (seconds from agent start to the first record, default
# 10) change the replay.
set -euo pipefail
set -m # background jobs keep SIGINT (a non-interactive shell ignores it for them otherwise)

script_start=$(date +%s.%N)
repo=$(cd "$(dirname "$0")/.." && pwd)
ha_dir=$repo/scripts/ha
esp_dir=$ha_dir/esphome
bin_arg=${1:-$repo/.build/debug/earshot}
bermuda=${EARSHOT_HA_BERMUDA:-0}
# Bermuda is judged over a minute from the first advertisement: the replay at
# capture time (90 s) then.
((bermuda)) && pace=${EARSHOT_HA_PACE:-1} || pace=${EARSHOT_HA_PACE:-2}
lead=${EARSHOT_HA_LEAD:-10}
reload_after=${EARSHOT_HA_RELOAD_AFTER:-12} # seconds into the replay
[[ -x $bin_arg ]] || { echo "ha-esphome: no earshot binary at $bin_arg" >&2; exit 2; }

tool=ha-esphome
. "$ha_dir/lib.sh"

[[ -x /usr/bin/python3 ]] || { echo "ha-esphome: needs python3 (apt-get install python3 python3-venv)" >&2; exit 2; }

# --- Home Assistant (EARSHOT_HA), with the esphome and bluetooth requirements --
install_start=$(date +%s.%N)
ha_install --esphome
bermuda_src=
if ((bermuda)); then
  [[ $ha_version != 2024.3.3 ]] || { echo "ha-esphome: Bermuda needs HA 2025.3 or later (EARSHOT_HA=2026.2.3 or 2026.11.0)" >&2; exit 2; }
  bermuda_src=$("$ha_dir/install-bermuda.sh" | tail -n 1)
fi
install_seconds=$(python3 -c "print(f'{$(date +%s.%N) - $install_start:.1f}')")

# --- work directory, processes, cleanup --------------------------------------
ha_workdir

bin=$W/earshot
cp "$bin_arg" "$bin"
"$bin" run --help 2>&1 | grep -q esphome ||
  { echo "ha-esphome: $bin_arg has no ESPHome proxy (earshot run --help does not mention [esphome])" >&2; exit 2; }
mkdir -p "$W/ha/.storage" "$W/ha/custom_components" "$W/ha-home" "$W/home" "$W/agent/state" "$W/probe"
cp -r "$esp_dir/earshot_probe" "$W/ha/custom_components/"
[[ -z $bermuda_src ]] || cp -r "$bermuda_src" "$W/ha/custom_components/"

http_port=$(free_port)
api_port=$(free_port)
while [[ $api_port == "$http_port" ]]; do api_port=$(free_port); done

agent_env=(
  HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config" XDG_STATE_HOME="$W/home/.local/state"
  XDG_RUNTIME_DIR="$W/home" EARSHOT_CONFIG="$W/no-such.conf"
  DBUS_SESSION_BUS_ADDRESS="unix:path=$W/no-session-bus"
)

# --- the capture, the key, the agent's config -----------------------------------
env "${agent_env[@]}" "$bin" simulate scenario --spec "$esp_dir/esphome.scenario" \
  --write "$W/esphome.btsnoop" >/dev/null
key=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
wrong_key=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
(umask 077 && echo "$key" >"$W/agent/esphome.key")
node_name=earshot-test
cat >"$W/agent/earshot.conf" <<EOF
[esphome]
enabled = true
bind = 127.0.0.1
port = $api_port
key_file = $W/agent/esphome.key
name = $node_name

[state]
path = $W/agent/state/regions
EOF
env "${agent_env[@]}" "$bin" check-config --config "$W/agent/earshot.conf" >"$W/check-config.txt" 2>&1 ||
  { cat "$W/check-config.txt" >&2; echo "ha-esphome: the agent's config is refused" >&2; exit 2; }

# --- Home Assistant -----------------------------------------------------------
cat >"$W/ha/configuration.yaml" <<EOF
homeassistant:
  name: Earshot ESPHome test
  latitude: 52.37
  longitude: 4.89
  elevation: 0
  unit_system: metric
  time_zone: UTC
  currency: EUR
  country: NL
$(ha_http_yaml "$http_port" "$W/ha")
logger:
  default: info
  logs:
    homeassistant.components.esphome: debug
    homeassistant.components.bluetooth: debug
    aioesphomeapi: debug
    bleak_esphome: debug
    habluetooth: debug
    bluetooth_adapters: debug
    homeassistant.components.ibeacon: info
    homeassistant.components.private_ble_device: debug
    custom_components.bermuda: info
earshot_probe:
  out: $W/probe
$( ((bermuda)) && echo "  scanner_area: Office")
EOF
# The ibeacon integration (a config entry, as its flow makes), the capture's
# nameless iBeacon UUIDs allowed (it ignores nameless beacons otherwise); and
# private_ble_device with the phone's IRK (its entry as its flow makes it:
# the IRK's bytes in hex, as a phone's settings show them).
phone_irk=$(sed -n 's/^irk *= *//p' "$esp_dir/esphome.scenario" | tr 'A-F' 'a-f')
# Bermuda (EARSHOT_HA_BERMUDA=1): its entry as its flow makes it, the desk
# beacon chosen in its options as a user picks it (Bermuda's id for an
# iBeacon: UUID without dashes, major, minor; the phone comes by itself from
# private_ble_device's IRK).
bermuda_entry=
if ((bermuda)); then
  bermuda_entry=',
  {"entry_id": "0e5a7e57000000000000000000000004", "version": 1, "minor_version": 1,
   "domain": "bermuda", "title": "Bermuda BLE Trilateration", "data": {"source": "user"},
   "options": {"configured_devices": ["8F2C1A3E5B7D4E90A1C23D4E5F607182_1_10"]},
   "pref_disable_new_entities": false, "pref_disable_polling": false,
   "source": "user", "unique_id": null, "disabled_by": null}'
fi
cat >"$W/ha/.storage/core.config_entries" <<EOF
{"version": 1, "minor_version": 1, "key": "core.config_entries", "data": {"entries": [
  {"entry_id": "0e5a7e57000000000000000000000002", "version": 1, "minor_version": 1,
   "domain": "ibeacon", "title": "iBeacon Tracker", "data": {},
   "options": {"allow_nameless_uuids": ["8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182",
                                        "0c0ffee0-0000-4000-8000-000000000001"]},
   "pref_disable_new_entities": false, "pref_disable_polling": false,
   "source": "user", "unique_id": null, "disabled_by": null},
  {"entry_id": "0e5a7e57000000000000000000000003", "version": 1, "minor_version": 1,
   "domain": "private_ble_device", "title": "Phone", "data": {"irk": "$phone_irk"},
   "options": {}, "pref_disable_new_entities": false, "pref_disable_polling": false,
   "source": "user", "unique_id": "$phone_irk", "disabled_by": null}$bermuda_entry]}}
EOF
say "starting Home Assistant $("${hass[@]}" --version) (http 127.0.0.1:$http_port; no system D-Bus)"
mark ha_launch
HOME=$W/ha-home DBUS_SYSTEM_BUS_ADDRESS="unix:path=$W/no-system-bus" \
  DBUS_SESSION_BUS_ADDRESS="unix:path=$W/no-session-bus" \
  "${hass[@]}" -c "$W/ha" --skip-pip --log-file "$W/ha.log" --log-no-color >"$W/ha.out" 2>&1 &
ha_pid=$!
pids+=($ha_pid)
for _ in $(seq 1200); do
  grep -q "Home Assistant initialized in" "$W/ha.log" 2>/dev/null && break
  kill -0 "$ha_pid" 2>/dev/null || { tail -30 "$W/ha.out" >&2; echo "ha-esphome: Home Assistant exited" >&2; exit 2; }
  sleep 0.1
done
grep -q "Home Assistant initialized in" "$W/ha.log" || { echo "ha-esphome: Home Assistant did not start in 120 s" >&2; exit 2; }
mark ha_up
for _ in $(seq 100); do
  grep -q '"event": "setup"' "$W/probe/events.jsonl" 2>/dev/null && break
  sleep 0.1
done
grep -q '"event": "setup"' "$W/probe/events.jsonl" 2>/dev/null ||
  { tail -30 "$W/ha.log" >&2; echo "ha-esphome: the probe integration did not start" >&2; exit 2; }
say "Home Assistant up: $(grep -o 'Home Assistant initialized in [0-9.]*s' "$W/ha.log")"
sleep 2 # a few snapshots with no node

# --- the agent --------------------------------------------------------------------
start_at=$(python3 -c "import time; print(f'{time.time() + $lead:.3f}')")
mark agent_start
env "${agent_env[@]}" "$bin" run --config "$W/agent/earshot.conf" --socket "$W/agent/control.sock" \
  --state-dir "$W/agent/state" --no-audio --input "$W/esphome.btsnoop" --pace "$pace" \
  --start-at "$start_at" >"$W/agent.out" 2>"$W/agent.log" &
agent_pid=$!
pids+=($agent_pid)
mark replay_start "$start_at"
for _ in $(seq 100); do
  grep -q "esphome: Bluetooth proxy" "$W/agent.log" && break
  kill -0 "$agent_pid" 2>/dev/null || break
  sleep 0.05
done
grep -q "esphome: Bluetooth proxy" "$W/agent.log" ||
  { cat "$W/agent.log" >&2; echo "ha-esphome: the agent's proxy did not start" >&2; exit 2; }
mark proxy_listening
say "agent: $(grep -o "esphome: Bluetooth proxy.*" "$W/agent.log")"

# The esphome config flow, as a user: host and port, then a wrong key, then the key.
python3 - "$W/probe/add-esphome.json" "$api_port" "$key" "$wrong_key" <<'EOF'
import json, os, sys
path, port, key, wrong = sys.argv[1:]
with open(path + ".new", "w") as f:
    json.dump({"host": "127.0.0.1", "port": int(port), "noise_psk": key, "wrong_psk": wrong}, f)
os.replace(path + ".new", path)
EOF
mark flow_request
say "HA: adding the node (esphome config flow)"

# HA reloads the entry mid-replay: it disconnects (DisconnectRequest, waiting
# for the node's DisconnectResponse) and connects again.
python3 -c "import time; time.sleep(max(0, $start_at + $reload_after - time.time()))"
mark reload_request
touch "$W/probe/reload-esphome"
say "HA: reloading the esphome entry"

# HA 2026.11 (its esphome options have the Bluetooth scanning mode, for a
# proxy with FEATURE_STATE_AND_MODE): 10 s after the reload the user sets
# `active`; HA reloads the entry and asks the proxy for active scanning,
# which the agent's status shows.
if [[ $ha_version == 2026.11.0 ]]; then
  python3 -c "import time; time.sleep(max(0, $start_at + $reload_after + 10 - time.time()))"
  mark mode_request
  echo '{"mode": "active"}' >"$W/probe/scanning-mode.json.new"
  mv "$W/probe/scanning-mode.json.new" "$W/probe/scanning-mode.json"
  say "HA: the esphome entry's Bluetooth scanning mode set to active (options flow)"
  for _ in $(seq 100); do
    env "${agent_env[@]}" "$bin" status --socket "$W/agent/control.sock" >"$W/status-active.json" 2>/dev/null &&
      python3 -c "import json,sys; sys.exit(json.load(open('$W/status-active.json'))['esphome']['scanner']['clients_asking_active'] < 1)" &&
      break
    sleep 0.1
  done
  mark mode_seen
fi

replay_seconds=$(python3 -c "import sys; sys.path.insert(0, '$esp_dir'); import capture; print(capture.duration('$W/esphome.btsnoop') / $pace)")
deadline=$(python3 -c "print(int($start_at + $replay_seconds + 60))")
while ! grep -q "replayed " "$W/agent.log"; do
  kill -0 "$agent_pid" 2>/dev/null || { cat "$W/agent.log" >&2; echo "ha-esphome: the agent exited" >&2; exit 2; }
  (($(date +%s) < deadline)) || { say "the replay did not finish"; break; }
  sleep 0.2
done
mark replay_done
say "agent: replay done ($(python3 -c "print(f'{$replay_seconds:.0f}')") s at --pace $pace)"
sleep 3
mark agent_stop
kill -INT "$agent_pid"
agent_rc=0
wait "$agent_pid" 2>/dev/null || agent_rc=$?
mark agent_stopped "$agent_rc"
say "agent: SIGINT -> exit $agent_rc"
sleep 5 # HA notices the node leave

mark ha_stop
say "stopping Home Assistant"
kill -TERM "$ha_pid"
for _ in $(seq 600); do kill -0 "$ha_pid" 2>/dev/null || break; sleep 0.1; done
wait "$ha_pid" 2>/dev/null || true
mark ha_stopped

run_seconds=$(python3 -c "print(f'{$(date +%s.%N) - $script_start:.1f}')")
set +e
python3 "$esp_dir/check.py" --work "$W" --capture "$W/esphome.btsnoop" --pace "$pace" \
  --name "$node_name" --port "$api_port" --bermuda "$bermuda" --phone-irk "$phone_irk" --install-seconds "$install_seconds" --run-seconds "$run_seconds"
rc=$?
exit $rc
