#!/usr/bin/env bash
# Installs Home Assistant 2024.3.3 for scripts/ha-real.sh into a cached venv
# (default /var/cache/earshot-test/ha-2024.3.3; EARSHOT_HA_VENV=DIR elsewhere),
# from PyPI, with Debian's python3 (3.11 on Debian 12; HA 2024.3 needs
# >= 3.11). Reused when it holds a hass built from the same
# requirements.txt (its sha256 is kept in the venv); rebuilt otherwise.
# Prints the venv's path on the last line of stdout.
#
#   install.sh [EXTRA_REQUIREMENTS...]
#
# Each extra requirements file (e.g. requirements-esphome.txt, for
# scripts/ha-esphome.sh) is then installed into the same venv, once: its
# sha256 is kept in the venv as .earshot-<file name without .txt>.sha256, and
# a rebuild of the venv drops those stamps with it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${EARSHOT_HA_VENV:-/var/cache/earshot-test/ha-2024.3.3}
req=$here/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp=$venv/.earshot-requirements.sha256

export PIP_DISABLE_PIP_VERSION_CHECK=1

install_extras() { # FILE...: each into the venv unless its stamp says it is there
  local extra name extra_want extra_stamp
  for extra in "$@"; do
    [[ $extra == /* ]] || extra=$PWD/$extra
    [[ -f $extra ]] || { echo "ha install: no requirements file $extra" >&2; exit 1; }
    name=$(basename "$extra" .txt)
    extra_want=$(sha256sum "$extra" | cut -d' ' -f1)
    extra_stamp=$venv/.earshot-$name.sha256
    [[ -f $extra_stamp && $(cat "$extra_stamp") == "$extra_want" ]] && continue
    local t=$(date +%s)
    echo "ha install: adding $(basename "$extra") to $venv" >&2
    "$venv/bin/pip" install -q -r "$req" -r "$extra" >&2
    "$venv/bin/pip" check >&2
    echo "$extra_want" >"$extra_stamp"
    echo "ha install: $(basename "$extra") done in $(($(date +%s) - t)) s" >&2
  done
}

if [[ -x $venv/bin/hass && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  install_extras "$@"
  echo "$venv"
  exit 0
fi

python=${EARSHOT_HA_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  if [[ $python == /usr/bin/python3 && $(id -u) == 0 ]]; then
    echo "ha install: installing python3-venv (apt)" >&2
    apt-get install -y -q python3-venv >&2 || { apt-get update -q >&2 && apt-get install -y -q python3-venv >&2; }
  fi
  "$python" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' || {
    echo "ha install: $python must be Python >= 3.11 with venv and ensurepip (Debian: python3-venv)" >&2
    exit 1
  }
fi

start=$(date +%s)
echo "ha install: building $venv with $("$python" --version) (a few minutes the first time)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
# The venv's own pip, not the host's config: no user site, no cached wheels
# of another interpreter.
"$venv/bin/pip" install -q --upgrade pip wheel >&2
"$venv/bin/pip" install -q -r "$req" >&2
"$venv/bin/pip" check >&2
"$venv/bin/hass" --version >/dev/null
echo "$want" >"$stamp"
echo "ha install: done in $(($(date +%s) - start)) s" >&2
install_extras "$@"
echo "$venv"
