#!/usr/bin/env bash
# Installs Earshot: binary, example config (kept if one exists), sounds,
# README and docs/ pages and the systemd units. Usage: scripts/install.sh [PREFIX] (default
# /usr/local); DESTDIR is honoured for packaging.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-${PREFIX:-/usr/local}}
dest=${DESTDIR:-}
bin=.build/release/earshot
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
install -D -m 0755 "$bin" "$dest$prefix/bin/earshot"
install -d "$dest$prefix/share/earshot/sounds"
install -m 0644 sounds/* "$dest$prefix/share/earshot/sounds/" 2>/dev/null || true
install -D -m 0644 README.md "$dest$prefix/share/doc/earshot/README.md"
# The reference pages, where the README's links expect them.
install -d "$dest$prefix/share/doc/earshot/docs"
install -m 0644 docs/*.md "$dest$prefix/share/doc/earshot/docs/"
if [ ! -e "$dest/etc/earshot/earshot.conf" ] && [ -e etc/earshot.conf ]; then
  install -D -m 0644 etc/earshot.conf "$dest/etc/earshot/earshot.conf"
fi
sed "s|/usr/local|$prefix|g" etc/earshot.service | install -D -m 0644 /dev/stdin "$dest/etc/systemd/system/earshot.service"
sed "s|/usr/local|$prefix|g" etc/earshot-keys.service | install -D -m 0644 /dev/stdin "$dest/etc/systemd/system/earshot-keys.service"
sed "s|/usr/local|$prefix|g" etc/earshot-user.service | install -D -m 0644 /dev/stdin "$dest/etc/systemd/user/earshot.service"
# File capabilities for the user service (ignored where the filesystem lacks xattrs).
if [ -z "$dest" ] && command -v setcap >/dev/null; then
  setcap cap_net_raw,cap_net_admin+eip "$prefix/bin/earshot" || echo "note: setcap failed; the user service cannot scan" >&2
fi
echo "installed into $dest$prefix; enable with: systemctl enable --now earshot (or systemctl --user enable --now earshot)"
