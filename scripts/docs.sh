#!/usr/bin/env bash
# Writes the man pages and the bash completion from the command and config
# tables (`earshot docs`). Usage: scripts/docs.sh [BINARY] (default: the
# debug build). DocsTests fails until the committed files match the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/debug/earshot}
[ -x "$bin" ] || { echo "build first: swift build" >&2; exit 1; }
mkdir -p docs/man etc/completion
"$bin" docs man >docs/man/earshot.1
"$bin" docs conf >docs/man/earshot.conf.5
"$bin" docs completion >etc/completion/earshot.bash
# docs/configuration.md's configuration table, between its two markers.
table=$(mktemp)
trap 'rm -f "$table"' EXIT
"$bin" docs config-table >"$table"
awk -v table="$table" '
  /^<!-- end of the generated table -->$/ { skipping = 0 }
  !skipping { print }
  /^<!-- generated from the key tables by Config.markdownTable\(\)/ {
    while ((getline line < table) > 0) print line
    skipping = 1
  }' docs/configuration.md >docs/configuration.md.new && mv docs/configuration.md.new docs/configuration.md
