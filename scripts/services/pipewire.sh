#!/usr/bin/env bash
# Starts a headless PipeWire (pipewire, wireplumber, pipewire-pulse) with a
# null sink named "alert", beside the PulseAudio test server: its own
# runtime directory, its own session bus, its own sockets, so both servers
# run at once and each test picks one.
#
# ALSA clients reach it through the `pipewire` PCM and ctl, defined in
# $RUNTIME/alsa.conf. Debian 12's pipewire-alsa conflicts with pulseaudio,
# so scripts/deps.sh test unpacks its plugins privately (without the
# package's config, which would take over ALSA's `default`); clients use
#   ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:$RUNTIME/alsa.conf
#   PIPEWIRE_RUNTIME_DIR=$RUNTIME   PULSE_SERVER=unix:$RUNTIME/pulse/native
# (the tests set these themselves). Idempotent.
# EARSHOT_PIPEWIRE_RUNTIME=DIR runs a separate server in DIR.
set -euo pipefail
runtime=${EARSHOT_PIPEWIRE_RUNTIME:-/tmp/xdg-pw}
private_alsa=/usr/local/lib/earshot-test/pipewire-alsa
for tool in pipewire wireplumber pipewire-pulse pactl dbus-daemon; do
  if ! command -v "$tool" >/dev/null; then
    echo "pipewire.sh: $tool is not installed (scripts/deps.sh test installs it)" >&2
    exit 1
  fi
done
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
plugins=
for dir in "/usr/lib/$multiarch/alsa-lib" "$private_alsa/usr/lib/$multiarch/alsa-lib"; do
  if [ -e "$dir/libasound_module_ctl_pipewire.so" ]; then plugins=$dir; break; fi
done
if [ -z "$plugins" ]; then
  echo "pipewire.sh: PipeWire's ALSA plugins are missing (scripts/deps.sh test unpacks them into $private_alsa)" >&2
  exit 1
fi
mkdir -p "$runtime"
chmod 700 "$runtime"
export XDG_RUNTIME_DIR=$runtime PIPEWIRE_RUNTIME_DIR=$runtime
export DBUS_SESSION_BUS_ADDRESS=unix:path=$runtime/bus
export PULSE_SERVER=unix:$runtime/pulse/native
# WirePlumber would otherwise look for real sound cards, cameras and
# Bluetooth (on the system bus, where a test's bluetoothd may be).
export XDG_CONFIG_HOME=$runtime/config
# Nor read or keep the user's saved volumes and default sink.
export XDG_STATE_HOME=$runtime/state
for part in main bluetooth; do
  mkdir -p "$XDG_CONFIG_HOME/wireplumber/$part.lua.d"
done
printf '%s\n' 'alsa_monitor.enabled = false' 'v4l2_monitor.enabled = false' \
  'libcamera_monitor.enabled = false' >"$XDG_CONFIG_HOME/wireplumber/main.lua.d/60-earshot-test.lua"
echo 'bluez_monitor.enabled = false' >"$XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d/60-earshot-test.lua"

cat >"$runtime/alsa.conf" <<CONF
# Written by scripts/services/pipewire.sh: PipeWire's ALSA plugins as the
# "pipewire" PCM and ctl, for a test server in $runtime.
pcm_type.pipewire { lib "$plugins/libasound_module_pcm_pipewire.so" }
ctl_type.pipewire { lib "$plugins/libasound_module_ctl_pipewire.so" }
pcm.pipewire {
  type pipewire
  playback_node "-1"
  capture_node "-1"
  hint { show on description "PipeWire (Earshot test server)" }
}
ctl.pipewire { type pipewire }
CONF

running() { [ -f "$runtime/$1.pid" ] && kill -0 "$(cat "$runtime/$1.pid")" 2>/dev/null; }
start() {
  local name=$1
  shift
  running "$name" && return 0
  setsid "$@" >"$runtime/$name.log" 2>&1 </dev/null &
  echo $! >"$runtime/$name.pid"
}
if ! running dbus; then
  rm -f "$runtime/bus"
  dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork --print-pid >"$runtime/dbus.pid"
fi
start pipewire pipewire
for _ in $(seq 50); do [ -S "$runtime/pipewire-0" ] && break; sleep 0.1; done
start wireplumber wireplumber
start pipewire-pulse pipewire-pulse
for _ in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
if ! pactl list short sinks | grep -q '^[0-9]*[[:space:]]alert[[:space:]]'; then
  pactl load-module module-null-sink sink_name=alert >/dev/null
fi
# WirePlumber makes it the default once it has seen it; ALSA's Master
# follows the default sink.
for _ in $(seq 50); do
  pactl set-default-sink alert
  [ "$(pactl get-default-sink 2>/dev/null)" = alert ] && break
  sleep 0.1
done
if [ "$(pactl get-default-sink 2>/dev/null)" != alert ]; then
  echo "pipewire.sh: the null sink 'alert' did not become the default (see $runtime/*.log)" >&2
  exit 1
fi
echo "pipewire: running (PIPEWIRE_RUNTIME_DIR=$runtime, sink alert, ALSA config $runtime/alsa.conf)"
