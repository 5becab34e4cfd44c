# Shared by scripts/ha-real.sh and scripts/ha-esphome.sh (sourced after
# `tool=NAME`): logging, the temporary work directory with the processes
# started in it (killed on exit: TERM, 5 s, then KILL), step marks, ports.

say() { printf '%s %s: %s\n' "$(date +%T.%3N)" "$tool" "$*" >&2; }

# ha_workdir: makes $W (kept on exit with EARSHOT_HA_KEEP=1), $marks, and
# $pids (append the pid of every background process to it).
ha_workdir() {
  W=$(mktemp -d "/tmp/earshot-$tool.XXXXXX")
  pids=()
  marks=$W/marks.txt
  : >"$marks"
  trap ha_cleanup EXIT
  trap 'exit 130' INT TERM
}

ha_cleanup() {
  local rc=$?
  set +e
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  if [[ ${EARSHOT_HA_KEEP:-0} == 1 ]]; then
    echo "$tool: kept $W" >&2
  else
    rm -rf "$W"
  fi
  exit "$rc"
}

# mark NAME [TEXT]: a step's time, for check.py.
mark() { echo "$1 $(date +%s.%N) ${2:-}" >>"$marks"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ha_install [--esphome]: the HA that EARSHOT_HA names (default 2024.3.3),
# installed once (a venv by install.sh, or a Debian root by install-root.sh
# for 2026.2.3 and 2026.11.0); sets ha_version, hass (the command, as an
# array), ha_python and ha_root (empty for the venv). --esphome adds what
# scripts/ha-esphome.sh loads: requirements-esphome.txt to the venv, the
# esphome, bluetooth, ibeacon and private_ble_device requirements to a root.
ha_install() {
  ha_version=${EARSHOT_HA:-2024.3.3}
  ha_root=
  case $ha_version in
  2024.3.3)
    local venv
    if [[ ${1:-} == --esphome ]]; then
      venv=$("$ha_dir/install.sh" "$ha_dir/requirements-esphome.txt" | tail -n 1)
    else
      venv=$("$ha_dir/install.sh" | tail -n 1)
    fi
    hass=("$venv/bin/hass")
    ha_python=("$venv/bin/python")
    ;;
  2026.2.3 | 2026.11.0)
    [[ -z ${EARSHOT_HA_VENV:-} ]] || { echo "$tool: EARSHOT_HA_VENV is for 2024.3.3 only" >&2; exit 2; }
    local extra=()
    [[ ${1:-} == --esphome ]] && extra=(esphome bluetooth ibeacon private_ble_device)
    ha_root=$("$ha_dir/install-root.sh" "$ha_version" "${extra[@]}" | tail -n 1)
    # In its root, with /tmp (this run's directory) bind-mounted: same paths.
    hass=("$ha_dir/chroot.sh" "$ha_root" /opt/ha/bin/hass)
    ha_python=("$ha_dir/chroot.sh" "$ha_root" /opt/ha/bin/python)
    ;;
  *) echo "$tool: EARSHOT_HA=$ha_version: 2024.3.3, 2026.2.3 or 2026.11.0" >&2; exit 2 ;;
  esac
}

# ha_http_yaml PORT CONFIG_DIR: prints the configuration.yaml lines for HTTP on
# 127.0.0.1:PORT. HA 2026.8 and later keep http's settings in .storage/http:
# a YAML http: section is migrated there as a *pending* config, which HA
# reverts (restarting itself) after 5 minutes unless someone confirms it in
# the UI. So for 2026.11 the store is written here: a confirmed ("stable")
# config, the YAML migration marked done, made by HA's own schema in its
# root; and no http: in the YAML.
ha_http_yaml() {
  local port=$1 dir=$2
  if [[ $ha_version != 2026.11.0 ]]; then
    printf 'http:\n  server_host: 127.0.0.1\n  server_port: %s\n' "$port"
    return
  fi
  mkdir -p "$dir/.storage"
  "${ha_python[@]}" - "$port" >"$dir/.storage/http" <<'PY'
import json, sys
from homeassistant.components.http import config as c
conf = dict(c.HTTP_STORAGE_SCHEMA({"server_host": ["127.0.0.1"], "server_port": int(sys.argv[1])}))
conf.update(created_at="2026-01-01T00:00:00+00:00", error=None, error_message=None)
data = {"stable": conf, "pending": None, "yaml_migration_done": True}
print(json.dumps({"version": c.STORAGE_VERSION, "minor_version": c.STORAGE_MINOR_VERSION,
                  "key": c.STORAGE_KEY, "data": data}))
PY
}
