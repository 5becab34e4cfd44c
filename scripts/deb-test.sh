#!/usr/bin/env bash
# Builds the Debian package and checks it without installing it on this
# machine: lintian (no errors or warnings), the file list, the conffile and
# maintainer scripts, `earshot --version` from the unpacked tree (dpkg -x into
# a temporary directory) and `systemd-analyze verify` on the unpacked units.
# Run by scripts/test.sh after the release build in .build/deb-build (so
# `make deb` only checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "deb-test: $*" >&2; exit 1; }
# Stale packages from an older version must not be picked up.
rm -rf .build/deb
make deb >/tmp/earshot-deb.log 2>&1 || { tail -30 /tmp/earshot-deb.log; fail "make deb failed"; }
debs=(.build/deb/earshot_*_amd64.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one .deb, got: ${debs[*]}"
deb=${debs[0]}
version=$(.build/deb-build/release/earshot --version | awk '{print $2}')
[ "$deb" = ".build/deb/earshot_${version}_amd64.deb" ] || fail "$deb is not earshot_${version}_amd64.deb"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version differs from earshot --version"

# lintian: errors and warnings fail (overrides, with reasons, in debian/).
lint=$(lintian --fail-on none "$deb" 2>&1 | grep -v 'running with root privileges' || true)
if echo "$lint" | grep -q '^[EW]:'; then echo "$lint" >&2; fail "lintian reports errors or warnings"; fi

root=$(mktemp -d /tmp/earshot-deb.XXXXXX)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root/tree"
dpkg-deb -e "$deb" "$root/control"
for f in usr/bin/earshot etc/earshot/earshot.conf \
  usr/lib/systemd/system/earshot.service usr/lib/systemd/user/earshot.service \
  usr/lib/systemd/system/earshot-keys.service \
  usr/share/man/man1/earshot.1.gz usr/share/man/man5/earshot.conf.5.gz \
  usr/share/bash-completion/completions/earshot usr/share/doc/earshot/copyright \
  usr/share/earshot/sounds/bell.flac usr/share/earshot/sounds/pips.wav; do
  [ -e "$root/tree/$f" ] || fail "package lacks /$f"
done
grep -qx /etc/earshot/earshot.conf "$root/control/conffiles" || fail "earshot.conf is not a conffile"
grep -q 'setcap cap_net_raw,cap_net_admin+eip /usr/bin/earshot' "$root/control/postinst" ||
  fail "postinst does not set the file capabilities"
grep -q 'rm -rf /var/lib/private/earshot' "$root/control/postrm" ||
  fail "postrm does not remove the state on purge"
[ "$("$root/tree/usr/bin/earshot" --version)" = "earshot $version" ] || fail "unpacked binary's --version"
# It runs without the toolchain: no RUNPATH into it, and the Swift runtime linked in.
if readelf -d "$root/tree/usr/bin/earshot" | grep -qE 'R(UN)?PATH.*swift'; then fail "the packaged binary has a RUNPATH into the toolchain"; fi
if ldd "$root/tree/usr/bin/earshot" | grep -q 'libswift'; then fail "the packaged binary loads the toolchain's Swift libraries"; fi
cmp -s etc/earshot.conf "$root/tree/etc/earshot/earshot.conf" || fail "packaged config differs from etc/"
if grep -rq /usr/local "$root/tree/usr/lib/systemd"; then fail "a unit still points at /usr/local"; fi

# The units as installed, with ExecStart pointed at the unpacked binary.
if command -v systemd-analyze >/dev/null; then
  for unit in system user; do
    sed "s|/usr/bin/earshot|$root/tree/usr/bin/earshot|" \
      "$root/tree/usr/lib/systemd/$unit/earshot.service" >"$root/earshot.service"
    # --man=no: the Documentation= pages are in the package, not on this host.
    out=$(systemd-analyze verify --man=no "$root/earshot.service" 2>&1) || fail "systemd-analyze verify ($unit): $out"
    if echo "$out" | grep -q earshot.service; then fail "systemd-analyze verify ($unit): $out"; fi
  done
else
  echo "deb-test: systemd-analyze not found; units not verified" >&2
  [ "${CI:-}" = true ] && fail "systemd-analyze missing in CI"
fi
# A binary that needs the toolchain left where the package builds (as a
# `swift build -c release` without --static-swift-stdlib would leave it)
# must not be shipped by the next `make deb`: it relinks, or fails.
dynamic=.build/debug/earshot
[ -x "$dynamic" ] || fail "$dynamic missing: run swift build first (scripts/test.sh does)"
readelf -d "$dynamic" | grep -qE 'RUNPATH.*swift' || fail "$dynamic has no toolchain RUNPATH to test with"
cp "$dynamic" .build/deb-build/release/earshot
make deb >/tmp/earshot-deb2.log 2>&1 || { tail -30 /tmp/earshot-deb2.log; fail "make deb after a dynamic build failed"; }
rm -rf "$root/tree2"
dpkg-deb -x "$deb" "$root/tree2"
if readelf -d "$root/tree2/usr/bin/earshot" | grep -qE 'R(UN)?PATH.*swift'; then
  fail "make deb after a dynamic build shipped a binary with a RUNPATH into the toolchain"
fi
echo "deb-test: $deb passes (lintian clean, contents, --version, units, relinked after a dynamic build)"
