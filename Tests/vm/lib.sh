# Helpers for VM tests (sourced before each test; see README.md).
# A test prints "PASS what" / "FAIL what" lines; nothing else is counted.

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }

# check "what" command...: PASS if the command succeeds.
check() {
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# wait_for SECONDS command...: polls (0.1 s) until the command succeeds.
wait_for() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@"; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# --- Bluetooth ---------------------------------------------------------------

hci_exists() { [ -e "/sys/class/bluetooth/$1" ]; }
hci_is_up() { hciconfig "$1" 2>/dev/null | grep -q 'UP RUNNING'; }

# start_btvirt [btvirt options]: two emulated controllers, hci0 and hci1,
# powered on (which also stops the kernel powering them off again).
start_btvirt() {
  btvirt "${@:--l2}" >/tmp/btvirt.log 2>&1 &
  BTVIRT_PID=$!
  wait_for 10 hci_exists hci0 && wait_for 10 hci_exists hci1 || { fail "btvirt made no controllers"; return 1; }
  hciconfig hci0 up && hciconfig hci1 up
  wait_for 5 hci_is_up hci0 && wait_for 5 hci_is_up hci1
}

stop_btvirt() {
  [ -n "${BTVIRT_PID:-}" ] && kill "$BTVIRT_PID" 2>/dev/null && wait "$BTVIRT_PID" 2>/dev/null
  BTVIRT_PID=
  wait_for 10 bash -c '! ls /sys/class/bluetooth/hci* >/dev/null 2>&1'
}

# mgmt btmgmt-arguments...: btmgmt bounded in time (it otherwise waits for
# its reply for ever), its output and status appended to btmgmt.log; a
# command the kernel never answers is a FAIL. (timeout --foreground keeps
# it in the test's process group, so it is ended with the test.)
mgmt() {
  local rc=0
  timeout --foreground -k 5 20 btmgmt "$@" >>btmgmt.log 2>&1 || rc=$?
  echo "btmgmt $*: status $rc" >>btmgmt.log
  { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && fail "btmgmt $* was not answered within 20 s"
  return "$rc"
}

# bluetoothd_lists ADDRESS...: bluetoothd has every one of these controllers.
bluetoothd_lists() {
  local list a
  list=$(timeout --foreground -k 2 5 bluetoothctl list 2>/dev/null) || return 1
  for a in "$@"; do grep -qi "$a" <<<"$list" || return 1; done
}

# hci_cmd hciN OGF OCF bytes...: sends a command and prints its status byte
# (hex, from the Command Complete).
hci_cmd() {
  local dev=$1; shift
  hcitool -i "$dev" cmd "$@" 2>&1 | awk '/HCI Event: 0x0e/ {getline; print tolower($4); exit}'
}

BEACON_UUID=8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
BEACON_MAJOR=1
BEACON_MINOR=10
BEACON_POWER=-59

# ibeacon_ad UUID MAJOR MINOR POWER: the 30-byte AD (flags + iBeacon) as hex words.
ibeacon_ad() {
  local uuid=${1//-/} major=$2 minor=$3 power=$4 out="02 01 06 1a ff 4c 00 02 15"
  for i in $(seq 0 2 30); do out="$out ${uuid:$i:2}"; done
  printf '%s %02x %02x %02x %02x %02x' "$out" $((major >> 8)) $((major & 255)) \
    $((minor >> 8)) $((minor & 255)) $((power & 255))
}

# advertise_ibeacon hciN [UUID MAJOR MINOR POWER]: legacy non-connectable
# advertising of an iBeacon (raw HCI commands), not yet enabled.
advertise_ibeacon() {
  local dev=$1 uuid=${2:-$BEACON_UUID} major=${3:-$BEACON_MAJOR} minor=${4:-$BEACON_MINOR} power=${5:-$BEACON_POWER}
  # LE Set Advertising Parameters: 100 ms, ADV_NONCONN_IND, public, all channels.
  hcitool -i "$dev" cmd 0x08 0x0006 a0 00 a0 00 03 00 00 00 00 00 00 00 00 07 00 >/dev/null
  # LE Set Advertising Data: 30 significant bytes, padded to 31.
  hcitool -i "$dev" cmd 0x08 0x0008 1e $(ibeacon_ad "$uuid" "$major" "$minor" "$power") 00 >/dev/null
}

# The emulator sends one report per advertising enable, so a stream of
# reports needs advertising toggled: start_advertising_loop hciN.
start_advertising_loop() {
  local dev=$1
  ( while :; do
      hcitool -i "$dev" cmd 0x08 0x000a 01 >/dev/null 2>&1
      sleep 0.2
      hcitool -i "$dev" cmd 0x08 0x000a 00 >/dev/null 2>&1
      sleep 0.05
    done ) &
  ADV_PID=$!
}

stop_advertising_loop() {
  [ -n "${ADV_PID:-}" ] && kill "$ADV_PID" 2>/dev/null && wait "$ADV_PID" 2>/dev/null
  ADV_PID=
  hcitool -i "${1:-hci1}" cmd 0x08 0x000a 00 >/dev/null 2>&1 || true
}

# beacon_lines FILE: the iBeacon JSON lines with the test beacon's values.
beacon_lines() {
  grep -F "\"uuid\":\"$BEACON_UUID\",\"major\":$BEACON_MAJOR,\"minor\":$BEACON_MINOR,\"power\":$BEACON_POWER," "$1"
}

# advertise_ibeacon_extended hciN: the same iBeacon as a true extended
# (non-legacy, non-connectable, non-scannable) advertisement, set 0.
advertise_ibeacon_extended() {
  local dev=$1
  hcitool -i "$dev" cmd 0x08 0x0036 00 00 00 a0 00 00 a0 00 00 07 00 00 00 00 00 00 00 00 00 7f 01 00 01 00 00 >/dev/null
  hcitool -i "$dev" cmd 0x08 0x0037 00 03 01 1e $(ibeacon_ad "$BEACON_UUID" "$BEACON_MAJOR" "$BEACON_MINOR" "$BEACON_POWER") >/dev/null
}

start_extended_advertising_loop() {
  local dev=$1
  ( while :; do
      hcitool -i "$dev" cmd 0x08 0x0039 01 01 00 00 00 00 >/dev/null 2>&1
      sleep 0.2
      hcitool -i "$dev" cmd 0x08 0x0039 00 01 00 00 00 00 >/dev/null 2>&1
      sleep 0.05
    done ) &
  ADV_PID=$!
}

# scan_for_beacons N OUT ERR [earshot scan options]: runs earshot scan until
# OUT holds N lines of the test beacon (at most 30 s; the emulator is slow
# under TCG), then stops it with SIGINT. Returns earshot's exit status.
scan_for_beacons() {
  local n=$1 out=$2 err=$3 pid; shift 3
  "$EARSHOT" scan "$@" >"$out" 2>"$err" &
  pid=$!
  _enough() { [ "$(beacon_lines "$1" | wc -l)" -ge "$2" ]; }
  wait_for 30 _enough "$out" "$n"
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
}

# A config that monitors the test beacon as region "desk" on hci0:
# desk_config FILE EXIT_AFTER STATE_FILE
desk_config() {
  cat >"$1" <<CONF
[scanner]
adapter = hci0
[region "desk"]
uuid = $BEACON_UUID
major = $BEACON_MAJOR
minor = $BEACON_MINOR
exit_after = $2
[state]
path = $3
CONF
}
