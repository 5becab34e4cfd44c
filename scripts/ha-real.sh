#!/usr/bin/env bash
# A real Home Assistant (2024.3.3, 2026.2.3 or 2026.11.0) against a real
# mosquitto and real earshot processes, judged on what HA recorded: its
# recorder database (states history) and its entity and device registries.
#
#   [EARSHOT_HA=VERSION] scripts/ha-real.sh [EARSHOT_BINARY]
#                                     (default 2024.3.3, .build/debug/earshot)
#
# Prints figures and one PASS/FAIL line per check (scripts/ha/check.py);
# exits 1 when a check fails, 2 when the run itself could not be done.
#
# As root on Debian 12: installs what is missing with apt (mosquitto,
# mosquitto-clients, pulseaudio, python3, python3-venv) and HA into a cached venv
# (scripts/ha/install.sh: /var/cache/earshot-test/ha-2024.3.3, a few minutes
# the first time, reused after). HA runs offline (--skip-pip: its integrations'
# requirements are in scripts/ha/requirements.txt).
#
# Everything runs in a temporary directory on private ports on 127.0.0.1:
# mosquitto, HA (http on 127.0.0.1 only), a PulseAudio server with a null
# sink (the agent's mixer: the volume number needs one), and the agents,
# which get --config, --socket and --state-dir explicitly and HOME/XDG dirs
# inside the temporary directory (never the host's or the user's config).
# The binary is copied there first, so a rebuild meanwhile changes nothing.
#
# The sequence (each step is marked with its time; check.py reads the marks):
#   HA + mosquitto up (HA's start time measured)
#   earshot rooms (aggregator) and a rooms agent (room "office", tracking the
#     desk beacon) replaying scripts/ha/ha.scenario at --pace 4
#   a trackers agent on the agent's base topic ([trackers] mqtt = true): a
#     capture of a separated AirTag that follows (scripts/ha/following-capture.py)
#     at --pace 600; then earshot trackers --clear 1; stopped with SIGINT
#   agent run 1: the same replay at --pace 4 (regions desk and lab become
#     inside/outside), stopped with SIGINT
#   agent run 2 (a restart, same config), replay at --pace 4; then through
#     HA's services (an automation driven over MQTT): ring button, the volume
#     number set to 40 while ringing (refused by the agent), found button,
#     volume 40 again (accepted); stopped with SIGINT
#   agent run 3 (instant replay): the config loses region "lab", SIGHUP;
#     then kill -9 (the last will)
#   two more agents on this host with the default client_id (own base_topic,
#     no discovery), side by side for 12 s
#   everything stopped, HA last (so its registries are written)
#
# The checks (check.py): 1 no stale region state shown for a moment at a
# restart (unavailable -> on/off -> unavailable within 1 s); 2 run 2's first
# 'state … unknown' events reach BASE/events; 3 the rooms device_tracker's
# state is a room name or not_home, never the JSON; 4 no friendly name holds
# its device's name twice; 5 no "No matching payload found" in HA's log;
# 6a an HA entity shows ringing then idle, 6b HA's volume number equals the
# agent's after a command refused while ringing, 6c (harness) an accepted
# volume reaches HA; 8 the region removed by the reload is gone from HA's
# entity registry; 9 the default-client_id twins never reconnect or take
# over each other; K kill -9 makes the agent's entities unavailable; E no
# warning/error from HA's mqtt or template code; N HA has no socket past
# loopback; T the Eddystone beacon's TLM battery (mV) and temperature
# reached HA's sensors; F the "Trackers following" sensor went 1 (the
# tracker as attributes) then 0 at the clear, and the "Tracker following"
# event fired once with the tracker.
#
# HA 2026.2.3 and 2026.11.0 need a newer Python than Debian 12's: each runs
# in a cached Debian root (scripts/ha/install-root.sh: trixie and sid, made
# once with debootstrap, a few minutes) through scripts/ha/chroot.sh, with
# /tmp bind-mounted so this run's directory has the same path in it.
#
# I: each Earshot entity's id is the default_entity_id its config gave (the
# same list on the three HAs); U (with EARSHOT_HA_CARRY): every entity of a
# carried registry keeps its id.
#
# EARSHOT_HA_KEEP=1 keeps the temporary directory (logs, HA config, DB,
# entity-ids.txt). EARSHOT_HA_VENV=DIR uses another venv (2024.3.3).
# EARSHOT_HA_CARRY=DIR starts HA with the entity and device registries in DIR
# (an earlier run's ha/.storage), as after an upgrade.
set -euo pipefail
set -m # background jobs keep SIGINT (a non-interactive shell ignores it for them otherwise)

script_start=$(date +%s.%N)
repo=$(cd "$(dirname "$0")/.." && pwd)
ha_dir=$repo/scripts/ha
bin_arg=${1:-$repo/.build/debug/earshot}
[[ -x $bin_arg ]] || { echo "ha-real: no earshot binary at $bin_arg" >&2; exit 2; }

tool=ha-real
. "$ha_dir/lib.sh"

# --- Debian packages ---------------------------------------------------------
need=()
command -v mosquitto >/dev/null || [[ -x /usr/sbin/mosquitto ]] || need+=(mosquitto)
command -v mosquitto_sub >/dev/null || need+=(mosquitto-clients)
command -v pulseaudio >/dev/null || need+=(pulseaudio)
command -v pactl >/dev/null || need+=(pulseaudio-utils)
[[ -f /etc/alsa/conf.d/99-pulse.conf ]] || need+=(libasound2-plugins)
[[ -x /usr/bin/python3 ]] || need+=(python3)
command -v ss >/dev/null || need+=(iproute2)
if ((${#need[@]})); then
  [[ $(id -u) == 0 ]] || { echo "ha-real: missing ${need[*]} (apt-get install them)" >&2; exit 2; }
  say "installing ${need[*]} (apt)"
  apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null; }
fi
mosquitto_bin=$(command -v mosquitto || echo /usr/sbin/mosquitto)

# --- Home Assistant: a venv (2024.3.3) or a Debian root (2026) ----------------
install_start=$(date +%s.%N)
ha_install
install_seconds=$(python3 -c "print(f'{$(date +%s.%N) - $install_start:.1f}')")

# --- work directory, processes, cleanup --------------------------------------
ha_workdir

bin=$W/earshot
cp "$bin_arg" "$bin"
mkdir -p "$W/ha/.storage" "$W/ha-home" "$W/home" "$W/pulse-home"

mqtt_port=$(free_port)
http_port=$(free_port)
while [[ $http_port == "$mqtt_port" ]]; do http_port=$(free_port); done

# --- mosquitto and a subscriber that records everything ----------------------
"$mosquitto_bin" -p "$mqtt_port" >"$W/mosquitto.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -t earshot-test/ping -m x 2>/dev/null && break
  sleep 0.1
done
mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t '#' -F '%U %j' >"$W/mqtt.jsonl" 2>/dev/null &
pids+=($!)

retained() { # TOPIC: its retained payload (empty if none)
  mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t "$1" -C 1 -W 1 --retained-only 2>/dev/null || true
}
wait_retained() { # TOPIC VALUE SECONDS
  local deadline=$(($(date +%s) + $3))
  while (($(date +%s) < deadline)); do
    [[ $(retained "$1") == "$2" ]] && return 0
    sleep 0.3
  done
  say "timed out waiting for $1 = $2 (it is '$(retained "$1")')"
  return 1
}

# --- PulseAudio with a null sink: the agent's mixer ----------------------------
pulse_rt=$W/pulse-rt
mkdir -p "$pulse_rt"
chmod 700 "$pulse_rt"
HOME=$W/pulse-home XDG_RUNTIME_DIR=$pulse_rt pulseaudio -n --daemonize=no --exit-idle-time=-1 \
  --log-target=stderr -L "module-null-sink sink_name=alert" -L module-native-protocol-unix \
  -L module-always-sink >"$W/pulseaudio.log" 2>&1 &
pids+=($!)
pa() { HOME=$W/pulse-home XDG_RUNTIME_DIR=$pulse_rt PULSE_SERVER=unix:$pulse_rt/pulse/native pactl "$@"; }
for _ in $(seq 100); do pa info >/dev/null 2>&1 && break; sleep 0.1; done
pa set-default-sink alert
pa set-sink-volume alert 55%
pa set-sink-mute alert 0

# --- Home Assistant -----------------------------------------------------------
# HTTP on 127.0.0.1 only (for 2026.11 in its store: lib.sh's ha_http_yaml).
http_yaml=$(ha_http_yaml "$http_port" "$W/ha")
cat >"$W/ha/configuration.yaml" <<EOF
homeassistant:
  name: Earshot test
  latitude: 52.37
  longitude: 4.89
  elevation: 0
  unit_system: metric
  time_zone: UTC
  currency: EUR
  country: NL
$http_yaml
recorder:
  commit_interval: 0
logger:
  default: info
  logs:
    homeassistant.components.mqtt: debug
# HA's own room sensor for ESPresense, on the rooms agent's ESPresense
# sightings ([rooms] espresense = true): the beacon of the office scenario.
sensor:
  - platform: mqtt_room
    name: ESPresense desk beacon
    unique_id: earshot_test_espresense_desk
    device_id: "iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10"
    state_topic: "espresense/devices/iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-10"
    timeout: 5
    away_timeout: 120
# Service calls for the test, driven over MQTT: a JSON
# {"id", "service", "match" (a regex on the mqtt entity ids), "value"?};
# answered on earshot-test/ha/called/ID with the entity ids it called.
automation:
  - id: earshot_test_call
    alias: earshot test call
    mode: queued
    trigger:
      - platform: mqtt
        topic: earshot-test/ha/call
    variables:
      targets: "{{ integration_entities('mqtt') | select('search', trigger.payload_json.match) | list }}"
    action:
      - service: system_log.write
        data:
          logger: earshot_test
          level: warning
          message: "earshot-test call {{ trigger.payload_json.id }}: {{ trigger.payload_json.service }} {{ trigger.payload_json.value | default('') }} on {{ targets }}"
      - if: "{{ targets | length > 0 and trigger.payload_json.value is defined }}"
        then:
          - service: "{{ trigger.payload_json.service }}"
            continue_on_error: true
            target:
              entity_id: "{{ targets }}"
            data:
              value: "{{ trigger.payload_json.value }}"
      - if: "{{ targets | length > 0 and trigger.payload_json.value is not defined }}"
        then:
          - service: "{{ trigger.payload_json.service }}"
            continue_on_error: true
            target:
              entity_id: "{{ targets }}"
      - service: mqtt.publish
        data:
          topic: "earshot-test/ha/called/{{ trigger.payload_json.id }}"
          payload: "{{ targets | join(',') }}"
EOF
cat >"$W/ha/.storage/core.config_entries" <<EOF
{"version": 1, "minor_version": 1, "key": "core.config_entries", "data": {"entries": [
  {"entry_id": "0e5a7e57000000000000000000000001", "version": 1, "minor_version": 1,
   "domain": "mqtt", "title": "127.0.0.1",
   "data": {"broker": "127.0.0.1", "port": $mqtt_port, "discovery": true,
            "discovery_prefix": "homeassistant"},
   "options": {}, "pref_disable_new_entities": false, "pref_disable_polling": false,
   "source": "user", "unique_id": null, "disabled_by": null}]}}
EOF
# A registry carried over from an earlier run (EARSHOT_HA_KEEP=1 keeps its
# work directory), as after an upgrade: check.py's R checks that every
# entity keeps its id. The config entry's id is the same in every run.
if [[ -n ${EARSHOT_HA_CARRY:-} ]]; then
  for key in core.entity_registry core.device_registry; do
    [[ -f $EARSHOT_HA_CARRY/$key ]] || { echo "ha-real: no $key in $EARSHOT_HA_CARRY" >&2; exit 2; }
    cp "$EARSHOT_HA_CARRY/$key" "$W/ha/.storage/$key"
  done
  cp "$EARSHOT_HA_CARRY/core.entity_registry" "$W/carried-entity-registry.json"
  say "carried over the entity and device registries of $EARSHOT_HA_CARRY"
fi
say "starting Home Assistant $("${hass[@]}" --version) (mqtt on 127.0.0.1:$mqtt_port, http $http_port)"
mark ha_launch
HOME=$W/ha-home "${hass[@]}" -c "$W/ha" --skip-pip --log-file "$W/ha.log" --log-no-color \
  >"$W/ha.out" 2>&1 &
ha_pid=$!
pids+=($ha_pid)
for _ in $(seq 1200); do
  grep -q "Home Assistant initialized in" "$W/ha.log" 2>/dev/null && break
  kill -0 "$ha_pid" 2>/dev/null || { tail -30 "$W/ha.out" >&2; echo "ha-real: Home Assistant exited" >&2; exit 2; }
  sleep 0.1
done
grep -q "Home Assistant initialized in" "$W/ha.log" || { echo "ha-real: Home Assistant did not start in 120 s" >&2; exit 2; }
mark ha_up
for _ in $(seq 300); do
  grep -q "Connected to MQTT server" "$W/ha.log" && break
  sleep 0.1
done
mark ha_mqtt
say "Home Assistant up: $(grep -o 'Home Assistant initialized in [0-9.]*s' "$W/ha.log")"
ha_sockets() { # LABEL: HA's sockets now (check.py: none may reach past loopback)
  { echo "# $1"; ss -tunapH 2>/dev/null | grep "pid=$ha_pid," || true; } >>"$W/ha-sockets.txt"
}
ha_sockets started

ha_call() { # SERVICE REGEX [VALUE]: through HA's automation; prints the entities called
  local id=$RANDOM$RANDOM json reply
  if (($# > 2)); then
    json="{\"id\":\"$id\",\"service\":\"$1\",\"match\":\"$2\",\"value\":$3}"
  else
    json="{\"id\":\"$id\",\"service\":\"$1\",\"match\":\"$2\"}"
  fi
  mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t "earshot-test/ha/called/$id" -C 1 -W 15 >"$W/call.$id" 2>/dev/null &
  local sub=$!
  sleep 0.2
  mosquitto_pub -h 127.0.0.1 -p "$mqtt_port" -t earshot-test/ha/call -m "$json"
  wait "$sub" || true
  reply=$(cat "$W/call.$id")
  say "HA $1 ${3:-} -> [${reply:-no answer}]"
  echo "$reply"
}

# --- the agents -----------------------------------------------------------------
hostname_slug=$(hostname | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9_-]/_/g')
base=earshot-test/agent
uuid=8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182

agent_env=(
  HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config" XDG_STATE_HOME="$W/home/.local/state"
  XDG_RUNTIME_DIR="$pulse_rt" PULSE_SERVER="unix:$pulse_rt/pulse/native"
  EARSHOT_CONFIG="$W/no-such.conf" DBUS_SESSION_BUS_ADDRESS="unix:path=$W/no-session-bus"
  EARSHOT_SOUNDS="$repo/sounds"
)
env "${agent_env[@]}" "$bin" simulate scenario --spec "$ha_dir/ha.scenario" --write "$W/ha.btsnoop" >/dev/null
spawn() { # LOG ARGS...: an earshot process in the background; sets $last_pid
  local log=$1
  shift
  env "${agent_env[@]}" "$bin" "$@" >"$log.out" 2>"$log" &
  last_pid=$!
  pids+=($last_pid)
}
stop() { # PID SIGNAL: signals it and waits; its exit status in $stopped
  kill "-$2" "$1" 2>/dev/null || true
  stopped=0
  wait "$1" 2>/dev/null || stopped=$?
  forget "$1"
}
forget() { # PID: no longer ours to clean up
  local keep=() p
  for p in "${pids[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  pids=("${keep[@]}")
}

mqtt_section="[mqtt]
host = 127.0.0.1
port = $mqtt_port"
region_desk='[region "desk"]
uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
major = 1
minor = 10
exit_after = auto'
# An Eddystone-UID beacon that interleaves TLM frames (battery, temperature).
region_keys='[region "keys"]
eddystone = 8f2c1a3e5b7d4e90a1c2:0000000000a1
exit_after = auto'
region_lab='[region "lab"]
uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
major = 2
exit_after = auto'
mkdir -p "$W/agent/state" "$W/rooms-agent/state" "$W/aggregator" "$W/twin-a/state" "$W/twin-b/state"
write_agent_config() { # REGIONS
  cat >"$W/agent/earshot.conf" <<EOF
$mqtt_section
base_topic = $base

[audio]
ramp = 0

$1

[state]
path = $W/agent/state/regions
EOF
}
write_agent_config "$region_desk

$region_keys

$region_lab"
cat >"$W/rooms-agent/earshot.conf" <<EOF
$mqtt_section
base_topic = earshot-test/rooms-agent
client_id = earshot-test-rooms-agent
discovery = false

[rooms]
topic = earshot-test/rooms
room = office
track = $uuid:1:10
espresense = true

[state]
path = $W/rooms-agent/state/regions
EOF
cat >"$W/aggregator/rooms.conf" <<EOF
$mqtt_section
base_topic = earshot-test/aggregator
client_id = earshot-test-aggregator

[rooms]
topic = earshot-test/rooms
track = $uuid:1:10
away_after = 10
EOF

run_agent() { # N [--pace 4]: agent run N
  mark "start$1"
  spawn "$W/agent$1.log" run --config "$W/agent/earshot.conf" --socket "$W/agent/control.sock" \
    --state-dir "$W/agent/state" --input "$W/ha.btsnoop" "${@:2}"
  agent_pid=$last_pid
}

# A tracker that follows ([trackers] mqtt), before run 1 and on the agent's
# base topic (its entities are the agent device's: the kill -9 of run 3
# makes them unavailable too): 90 min of capture at --pace 600, so Home
# Assistant has its event entity before the event (not retained) comes.
python3 "$ha_dir/following-capture.py" "$W/following.btsnoop"
mkdir -p "$W/trackers-agent/state"
cat >"$W/trackers-agent/earshot.conf" <<EOF
$mqtt_section
base_topic = $base

[trackers]
enabled = true
mqtt = true

[state]
path = $W/trackers-agent/state/regions
EOF
say "trackers agent: a separated AirTag follows (--pace 600), then cleared"
mark trackers_start
spawn "$W/trackers-agent.log" run --config "$W/trackers-agent/earshot.conf" \
  --socket "$W/trackers-agent/control.sock" --state-dir "$W/trackers-agent/state" --no-audio \
  --input "$W/following.btsnoop" --pace 600
trackers_pid=$last_pid
wait_retained "$base/trackers/following" 1 40 || true
sleep 2
mark trackers_clear
env "${agent_env[@]}" "$bin" trackers --socket "$W/trackers-agent/control.sock" --clear 1 \
  >"$W/trackers-clear.out" 2>&1 || say "earshot trackers --clear 1 failed: $(cat "$W/trackers-clear.out")"
wait_retained "$base/trackers/following" 0 10 || true
sleep 1
mark trackers_stop
stop "$trackers_pid" INT
say "trackers agent: SIGINT -> exit $stopped"
sleep 2

say "rooms: aggregator and a rooms agent (room office)"
spawn "$W/aggregator.log" rooms --config "$W/aggregator/rooms.conf" --pace 4
aggregator_pid=$last_pid
sleep 1

say "agent run 1 (replay at --pace 4)"
spawn "$W/rooms-agent.log" run --config "$W/rooms-agent/earshot.conf" --socket "$W/rooms-agent/control.sock" \
  --state-dir "$W/rooms-agent/state" --no-audio --input "$W/ha.btsnoop" --pace 4
rooms_agent_pid=$last_pid
run_agent 1 --pace 4
wait_retained "$base/status" online 30 || true
wait_retained "$base/region/desk/state" inside 60 || true
wait_retained "$base/region/lab/state" outside 60 || true
sleep 1
mark stop1
stop "$agent_pid" INT
say "agent run 1: SIGINT -> exit $stopped"
sleep 3

say "agent run 2 (restart, same config, replay at --pace 4)"
run_agent 2 --pace 4
wait_retained "$base/status" online 30 || true
wait_retained "$base/region/desk/state" inside 60 || true
wait_retained "$base/region/lab/state" outside 60 || true
sleep 1
mark volume_before "$(retained "$base/volume/state")"
mark ring
ha_call button.press '^button\\..*ring' >/dev/null
wait_retained "$base/find/state" ringing 20 || true
sleep 1.5
mark volume_refused
ha_call number.set_value '^number\\..*volume' 40 >/dev/null
sleep 3
mark volume_actual "$(retained "$base/volume/state")"
mark found
ha_call button.press '^button\\..*found' >/dev/null
wait_retained "$base/find/state" idle 20 || true
sleep 1.5
mark volume_after_found "$(retained "$base/volume/state")"
mark volume_accepted
ha_call number.set_value '^number\\..*volume' 40 >/dev/null
wait_retained "$base/volume/state" 40 10 || true
sleep 2
ha_sockets "run 2"
mark stop2
stop "$agent_pid" INT
say "agent run 2: SIGINT -> exit $stopped"
sleep 3

say "agent run 3 (instant replay): region lab removed from the config, SIGHUP; then kill -9"
run_agent 3
wait_retained "$base/status" online 30 || true
wait_retained "$base/region/lab/state" outside 30 || true
sleep 2
mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t 'homeassistant/#' --retained-only -W 2 -v 2>/dev/null |
  cut -d' ' -f1 >"$W/discovery-before-reload.txt" || true
write_agent_config "$region_desk

$region_keys"
mark reload
kill -HUP "$agent_pid"
sleep 5
mosquitto_sub -h 127.0.0.1 -p "$mqtt_port" -t 'homeassistant/#' --retained-only -W 2 -v 2>/dev/null |
  cut -d' ' -f1 >"$W/discovery-after-reload.txt" || true
mark kill9
stop "$agent_pid" KILL
say "agent run 3: kill -9 -> exit $stopped"
wait_retained "$base/status" offline 10 || true
sleep 3

say "two agents with the default client_id, 12 s"
for t in a b; do
  cat >"$W/twin-$t/earshot.conf" <<EOF
$mqtt_section
base_topic = earshot-test/twin-$t
discovery = false

[state]
path = $W/twin-$t/state/regions
EOF
done
mark twins
spawn "$W/twin-a.log" run --config "$W/twin-a/earshot.conf" --socket "$W/twin-a/control.sock" \
  --state-dir "$W/twin-a/state" --no-audio
twin_a=$last_pid
sleep 0.5
spawn "$W/twin-b.log" run --config "$W/twin-b/earshot.conf" --socket "$W/twin-b/control.sock" \
  --state-dir "$W/twin-b/state" --no-audio
twin_b=$last_pid
sleep 12
mark twins_end
stop "$twin_a" INT
a=$stopped
stop "$twin_b" INT
say "twins: SIGINT -> exit $a, $stopped"

mark rooms_stop
stop "$rooms_agent_pid" INT
a=$stopped
stop "$aggregator_pid" INT
say "rooms agent, aggregator: SIGINT -> exit $a, $stopped"
sleep 2
ha_sockets "before stop"
mark ha_stop
say "stopping Home Assistant"
kill -TERM "$ha_pid"
for _ in $(seq 600); do kill -0 "$ha_pid" 2>/dev/null || break; sleep 0.1; done
wait "$ha_pid" 2>/dev/null || true
forget "$ha_pid"
mark ha_stopped

run_seconds=$(python3 -c "print(f'{$(date +%s.%N) - $script_start:.1f}')")
set +e
python3 "$ha_dir/check.py" --work "$W" --base "$base" --host-slug "$hostname_slug" \
  --install-seconds "$install_seconds" --run-seconds "$run_seconds"
rc=$?
exit $rc
