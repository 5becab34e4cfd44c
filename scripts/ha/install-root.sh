#!/usr/bin/env bash
# Installs a newer Home Assistant for scripts/ha-real.sh into a cached Debian
# root: Debian 12's Python (3.11) stops at HA 2024.3, so each newer HA gets
# the Debian release whose python3 it needs, made with debootstrap, and a venv
# inside it (/opt/ha):
#
#   2026.2.3   Debian trixie (Python 3.13)   /var/cache/earshot-test/ha-2026.2.3-trixie
#   2026.11.0  Debian sid    (Python 3.14)   /var/cache/earshot-test/ha-2026.11.0-sid
#
#   install-root.sh VERSION [INTEGRATION...]   prints the root's path on the last line
#
# Each INTEGRATION named (scripts/ha-esphome.sh: esphome bluetooth ibeacon
# private_ble_device) has its manifest's requirements, with its dependencies',
# added to the venv once, under HA's constraints: the list's sha256 is kept in
# the root (.earshot-extra-NAMES.sha256), and a rebuilt venv drops it. A pin
# the package index does not serve is replaced as scripts/ha/substitutes-
# VERSION.txt says (2026.11.0's aioesphomeapi 46.25.0 by 46.23.0).
#
# Reused when the root holds a hass built from the same requirements file
# (scripts/ha/requirements-VERSION.txt, with this script's integration list:
# their sha256 is kept in the root); the venv is rebuilt otherwise, and the
# whole root when its Debian packages change (EARSHOT_HA_ROOT=DIR puts it
# elsewhere). Runs as root (debootstrap, chroot); installs debootstrap with apt
# when it is missing.
#
# HA runs with --skip-pip, so the venv holds, besides homeassistant, the
# requirements that the manifests of the integrations it loads name (frontend,
# recorder, mqtt, hassio, conversation, ... and their dependencies): read from
# the installed HA's own manifests, so they always match its pins.
#
# pip in the root uses the host's CA bundle and pip settings (Python 3.13+
# verifies certificates strictly, and a mirror or proxy the host trusts must
# be trusted there too): /etc/pip.conf and ~/.config/pip/pip.conf are merged
# into the root's /etc/earshot-host/pip.conf (cert = the copied bundle), and
# PIP_* variables are passed through, except those naming a host path
# (PIP_FIND_LINKS: wheels for the host's Python).
#
# scripts/ha/chroot.sh runs a command in the root with /proc, /dev, /sys and
# /tmp bind-mounted in a private mount namespace (gone when it exits).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=${1:?usage: install-root.sh VERSION (2026.2.3 or 2026.11.0)}
case $version in
2026.2.3) suite=trixie python_min=3.13 ;;
2026.11.0) suite=sid python_min=3.14 ;;
*) echo "ha install: no Debian root known for HA $version" >&2; exit 1 ;;
esac
root=${EARSHOT_HA_ROOT:-/var/cache/earshot-test/ha-$version-$suite}
req=$here/requirements-$version.txt
[[ -f $req ]] || { echo "ha install: no $req" >&2; exit 1; }
[[ $(id -u) == 0 ]] || { echo "ha install: needs root (debootstrap, chroot)" >&2; exit 1; }

# The integrations whose manifests' requirements go into the venv (with their
# dependencies and after_dependencies): what HA 2026 loads at start
# (bootstrap's own list, and in stage 2 the entity platforms, which 2026.11
# grew by infrared and radio_frequency), what ha-real.sh configures
# (mqtt and every platform it sets up, recorder, automation, template,
# mqtt_room), and what mqtt pulls in at run time (hassio, conversation).
integrations="frontend http recorder mqtt hassio conversation automation script template
  mqtt_room sensor binary_sensor button number device_tracker camera image
  backup cloud network hardware usb logger system_log analytics isal zeroconf
  infrared radio_frequency tts"
# The Debian packages in the root: python3 and what the wheels load.
packages="python3,python3-venv,ca-certificates,libturbojpeg0,libjpeg62-turbo,zlib1g,libffi8,iproute2"
# And, with apt in the root before pip runs: what builds the few
# requirements PyPI has no wheel of for this Python (lru-dict on 3.13,
# pymicro-vad and pyspeex-noise on 3.14), and ffmpeg, which HA's tts (loaded
# at every 2026.11 start) probes through its ffmpeg integration, as HA's own
# container image ships it.
apt_packages="g++ python3-dev ffmpeg"

want=$( { cat "$req"; echo "$integrations"; echo "$packages"; echo "$apt_packages"; } | sha256sum | cut -d' ' -f1)
root_want=$(echo "$suite $packages" | sha256sum | cut -d' ' -f1)
stamp=$root/.earshot-requirements.sha256
root_stamp=$root/.earshot-root.sha256

extras=("${@:2}")
in_root() { "$here/chroot.sh" "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "${pip_env[@]}" "$@"; }

# The host's CA bundle and pip settings (see the head of this file), copied
# into the root before each pip run (the host's may have changed).
host_pip_settings() {
  host_ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
  mkdir -p "$root/etc/earshot-host"
  cp "$host_ca" "$root/etc/earshot-host/ca.crt"
  # The host's pip config files merged into one (the user's over the global
  # one, as pip reads them), with the cert pointing at the copied bundle and
  # find-links (wheels built for the host's Python) dropped.
  python3 - "$root/etc/earshot-host/pip.conf" /etc/pip.conf "${HOME:-/root}/.config/pip/pip.conf" <<'EOF'
import configparser, sys
merged = configparser.RawConfigParser()
merged.read(sys.argv[2:])
for section in merged.sections():
    merged.remove_option(section, "find-links")
    if merged.has_option(section, "cert"):
        merged.set(section, "cert", "/etc/earshot-host/ca.crt")
with open(sys.argv[1], "w") as f:
    merged.write(f)
EOF
  cp /etc/resolv.conf "$root/etc/resolv.conf"
}

# The extra integrations' requirements (see the head of this file).
install_extras() {
  ((${#extras[@]})) || return 0
  local names extra_want extra_stamp t
  names=$(printf '%s\n' "${extras[@]}" | sort -u | paste -sd- -)
  local subst=$here/substitutes-$version.txt
  extra_want=$( { cat "$stamp"; echo "${extras[*]}"; cat "$subst" 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
  extra_stamp=$root/.earshot-extra-$names.sha256
  [[ -f $extra_stamp && $(cat "$extra_stamp") == "$extra_want" ]] && return 0
  t=$(date +%s)
  host_pip_settings
  in_root /opt/ha/bin/python /opt/ha-integration-requirements.py "${extras[*]}" >"$root/opt/ha-extra-$names.txt"
  if [[ -f $subst ]]; then
    local pin replacement
    while read -r pin replacement; do
      [[ -z $pin || $pin == \#* ]] && continue
      sed -i "s/^${pin//./\\.}\$/$replacement/" "$root/opt/ha-extra-$names.txt"
    done <"$subst"
  fi
  echo "ha install: adding $(wc -l <"$root/opt/ha-extra-$names.txt") requirements of ${extras[*]} to $root" >&2
  local constraints
  constraints=$(in_root /opt/ha/bin/python -c \
    'import homeassistant, os; print(os.path.join(os.path.dirname(homeassistant.__file__), "package_constraints.txt"))')
  in_root /opt/ha/bin/pip install -q -r "/opt/ha-extra-$names.txt" -c "$constraints" "homeassistant==$version" >&2
  in_root /opt/ha/bin/pip check >&2 || echo "ha install: pip check reports conflicts (above); HA may still run" >&2
  echo "$extra_want" >"$extra_stamp"
  echo "ha install: ${extras[*]} added in $(($(date +%s) - t)) s" >&2
}

pip_env=(PIP_CERT=/etc/earshot-host/ca.crt SSL_CERT_FILE=/etc/earshot-host/ca.crt
  REQUESTS_CA_BUNDLE=/etc/earshot-host/ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1
  PIP_CONFIG_FILE=/etc/earshot-host/pip.conf)
while IFS='=' read -r name value; do
  case $name in
  PIP_CERT | PIP_FIND_LINKS | PIP_CONFIG_FILE) ;;
  PIP_*) pip_env+=("$name=$value") ;;
  esac
done < <(env)

if [[ -x $root/opt/ha/bin/hass && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  install_extras
  echo "$root"
  exit 0
fi

start=$(date +%s)
if ! [[ -f $root_stamp && $(cat "$root_stamp") == "$root_want" ]]; then
  if ! command -v debootstrap >/dev/null; then
    echo "ha install: installing debootstrap (apt)" >&2
    apt-get install -y -q debootstrap >&2 || { apt-get update -q >&2 && apt-get install -y -q debootstrap >&2; }
  fi
  echo "ha install: making a Debian $suite root at $root (debootstrap, a few minutes)" >&2
  rm -rf "$root"
  mkdir -p "$root"
  debootstrap --variant=minbase --include="$packages" "$suite" "$root" http://deb.debian.org/debian >&2 ||
    { tail -20 "$root/debootstrap/debootstrap.log" >&2 2>/dev/null; exit 1; }
  echo "$root_want" >"$root_stamp"
fi

host_pip_settings

in_root python3 -c "import sys; sys.exit(sys.version_info < tuple(map(int, '$python_min'.split('.'))))" || {
  echo "ha install: the $suite root's python3 is $(in_root python3 --version), HA $version needs >= $python_min" >&2
  exit 1
}
echo "ha install: installing $apt_packages in the root (apt)" >&2
# As the host's apt is set: a mirror's Release may be past its Valid-Until
# (sid's, here).
apt_opts=(-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false)
in_root apt-get "${apt_opts[@]}" update -q >/dev/null
in_root env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -q --no-install-recommends \
  $apt_packages >/dev/null
echo "ha install: building the venv /opt/ha in $root with $(in_root python3 --version)" >&2
rm -rf "$root/opt/ha" "$stamp"
in_root python3 -m venv /opt/ha
in_root /opt/ha/bin/pip install -q --upgrade pip wheel >&2
install -m 0644 "$req" "$root/opt/ha-requirements.txt"
in_root /opt/ha/bin/pip install -q -r /opt/ha-requirements.txt >&2

# The integrations' requirements, from the installed HA's manifests.
cat >"$root/opt/ha-integration-requirements.py" <<'EOF'
import json, pathlib, sys
import homeassistant.components as components
base = pathlib.Path(components.__path__[0])
todo, seen, reqs = sys.argv[1].split(), set(), []
while todo:
    name = todo.pop()
    if name in seen or not (base / name / "manifest.json").exists():
        continue
    seen.add(name)
    manifest = json.loads((base / name / "manifest.json").read_text())
    reqs += manifest.get("requirements", [])
    todo += manifest.get("dependencies", []) + manifest.get("after_dependencies", [])
print("\n".join(sorted(set(reqs))))
EOF
in_root /opt/ha/bin/python /opt/ha-integration-requirements.py "$integrations" >"$root/opt/ha-integrations.txt"
echo "ha install: $(wc -l <"$root/opt/ha-integrations.txt") integration requirements" >&2
# Under HA's own constraints (its package_constraints.txt), as HA installs
# them itself; homeassistant stays at its version.
constraints=$(in_root /opt/ha/bin/python -c \
  'import homeassistant, os; print(os.path.join(os.path.dirname(homeassistant.__file__), "package_constraints.txt"))')
in_root /opt/ha/bin/pip install -q -r /opt/ha-integrations.txt -c "$constraints" "homeassistant==$version" >&2
in_root /opt/ha/bin/pip check >&2 || echo "ha install: pip check reports conflicts (above); HA may still run" >&2
in_root /opt/ha/bin/hass --version >/dev/null
echo "$want" >"$stamp"
install_extras
echo "ha install: HA $version ready in $root (/opt/ha) in $(($(date +%s) - start)) s" >&2
echo "$root"
