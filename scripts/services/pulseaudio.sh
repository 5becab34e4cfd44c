#!/usr/bin/env bash
# Starts a PulseAudio server with a null sink named "alert" for the audio
# tests: ALSA's `default` then goes through the pulse plugin
# (/etc/alsa/conf.d/99-pulse.conf, shipped by the pulseaudio package, routes
# it there whenever a server is reachable), and the tests record
# `alert.monitor`. Idempotent: does nothing when the server already runs.
#
# Clients find it with XDG_RUNTIME_DIR=/tmp/xdg (or
# PULSE_SERVER=unix:/tmp/xdg/pulse/native); the tests set that themselves.
set -euo pipefail
export XDG_RUNTIME_DIR=${EARSHOT_PULSE_RUNTIME:-/tmp/xdg}
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
if ! command -v pulseaudio >/dev/null; then
  echo "pulseaudio.sh: pulseaudio is not installed (scripts/deps.sh test installs it)" >&2
  exit 1
fi
if ! pactl info >/dev/null 2>&1; then
  # As root PulseAudio warns that it is meant for a user session; a
  # per-user server in a private runtime directory is what the tests want.
  pulseaudio -n --daemonize=yes --exit-idle-time=-1 --log-target=stderr \
    -L "module-null-sink sink_name=alert" -L module-native-protocol-unix \
    -L module-always-sink 2>/dev/null
  for _ in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
fi
if ! pactl list short sinks | grep -q '^[0-9]*[[:space:]]alert[[:space:]]'; then
  pactl load-module module-null-sink sink_name=alert >/dev/null
fi
pactl set-default-sink alert
echo "pulseaudio: running (XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR, sink alert)"
