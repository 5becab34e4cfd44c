#!/usr/bin/env bash
# Installs Bermuda (github.com/agittins/bermuda, room presence on Home
# Assistant's Bluetooth stack) for scripts/ha-esphome.sh's EARSHOT_HA_BERMUDA=1:
# its custom component at a pinned release, taken once from a git repository
# into a cache; a test run copies it from there and fetches nothing.
#
#   install-bermuda.sh          prints the cached component's directory on the last line
#
# EARSHOT_BERMUDA_GIT=URL_OR_DIR: where to take it from (default the GitHub
# repository; a local clone or mirror works too). The release's version is
# written into the manifest, as Bermuda's release zip has it (HA refuses a
# custom component without a version).
set -euo pipefail
tag=v0.8.7
commit=3969997b0df83bbc68eb2f89e28372561200f8d4
cache=${EARSHOT_BERMUDA_CACHE:-/var/cache/earshot-test/bermuda-$tag}
if [[ -f $cache/bermuda/manifest.json && -f $cache/.commit && $(cat "$cache/.commit") == "$commit" ]]; then
  echo "$cache/bermuda"
  exit 0
fi
src=${EARSHOT_BERMUDA_GIT:-https://github.com/agittins/bermuda.git}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bermuda install: $tag ($commit) from $src" >&2
if [[ -d $src ]]; then
  git -C "$src" archive "$commit" custom_components/bermuda | tar -x -C "$tmp"
else
  git clone -q --filter=blob:none --no-checkout "$src" "$tmp/repo" >&2
  git -C "$tmp/repo" archive "$commit" custom_components/bermuda | tar -x -C "$tmp"
fi
python3 - "$tmp/custom_components/bermuda/manifest.json" "${tag#v}" <<'PY'
import json, sys
path, version = sys.argv[1:]
m = json.load(open(path))
m["version"] = version
json.dump(m, open(path, "w"), indent=2)
PY
rm -rf "$cache"
mkdir -p "$cache"
cp -r "$tmp/custom_components/bermuda" "$cache/"
echo "$commit" >"$cache/.commit"
echo "$cache/bermuda"
