#!/usr/bin/env bash
# Installs the Debian packages Earshot needs. Usage: scripts/deps.sh [build|test|deb]
#   build: what compiling needs (C libraries and pkg-config)
#   deb:   also what `make deb` needs (debhelper, lintian)
#   test:  also what the tests run against (PulseAudio, BlueZ tools, QEMU, ...)
#          and the packaging tools (the package is built and checked in tests)
set -euo pipefail
mode=${1:-build}
build=(pkg-config libbluetooth-dev libinih-dev libasound2-dev libsndfile1-dev libmosquitto-dev libsqlite3-dev
       libjpeg62-turbo-dev libsystemd-dev libssl-dev libnl-genl-3-dev)
test=(bluez bluez-test-tools bluez-hcidump pulseaudio libasound2-plugins alsa-utils sox
      qemu-system-x86 busybox-static kmod cpio dbus util-linux mosquitto mosquitto-clients
      librsvg2-bin dbus-daemon dbus-bin libjpeg-turbo-progs dunst xvfb socat
      pipewire pipewire-bin wireplumber pipewire-pulse python3-dbus python3-gi python3-venv
      tshark hostapd iw)
deb=(debhelper dpkg-dev fakeroot lintian libcap2-bin systemd)
want=("${build[@]}")
[ "$mode" = deb ] && want+=("${deb[@]}")
[ "$mode" = test ] && want+=("${test[@]}" "${deb[@]}")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  # tshark (SnifferConformanceTests' independent reader) asks whether
  # non-root users may capture: no, and without asking.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# pipewire-alsa conflicts with pulseaudio (both claim ALSA's default), so
# the tests get its plugins unpacked privately; scripts/services/pipewire.sh
# points ALSA at them. Skipped where the package itself is installed.
private_alsa=/usr/local/lib/earshot-test/pipewire-alsa
if [ "$mode" = test ] && ! dpkg-query -W -f='${Status}' pipewire-alsa 2>/dev/null | grep -q 'install ok installed' \
  && [ ! -d "$private_alsa/usr" ]; then
  echo "Unpacking pipewire-alsa into $private_alsa"
  tmp=$(mktemp -d)
  chmod 755 "$tmp"
  (cd "$tmp" && apt-get download -qq pipewire-alsa 2>/dev/null || { $SUDO apt-get update -qq && apt-get download -qq pipewire-alsa; })
  $SUDO mkdir -p "$private_alsa"
  $SUDO dpkg -x "$tmp"/pipewire-alsa_*.deb "$private_alsa"
  rm -rf "$tmp"
fi
# Home Assistant's ESPHome client library for the Bluetooth proxy's tests
# (ESPHomeProxyIntegrationTests, Tests/esphome/proxy_client.py), pinned, in
# its own venv: made only if missing (or at another pin).
esphome_venv=/usr/local/lib/earshot-test/esphome-venv
esphome_pins="aioesphomeapi==46.23.0 noiseprotocol==0.3.1"
if [ "$mode" = test ] && ! { [ -x "$esphome_venv/bin/python" ] \
  && [ "$(cat "$esphome_venv/earshot-pins" 2>/dev/null)" = "$esphome_pins" ]; }; then
  echo "Making $esphome_venv ($esphome_pins)"
  $SUDO rm -rf "$esphome_venv"
  # Debian's python3 (python3-venv above), not whichever is first on PATH.
  $SUDO /usr/bin/python3 -m venv "$esphome_venv"
  # shellcheck disable=SC2086 # the pins are words
  $SUDO "$esphome_venv/bin/pip" install -q --disable-pip-version-check $esphome_pins
  echo "$esphome_pins" | $SUDO tee "$esphome_venv/earshot-pins" >/dev/null
fi
