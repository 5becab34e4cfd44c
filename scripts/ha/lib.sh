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
