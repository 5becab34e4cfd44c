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

# adapter_address hciN: the controller's public address.
adapter_address() { hciconfig "$1" | awk '/BD Address/ {print $3}'; }

# --- bluetoothd and its system bus ------------------------------------------

# start_system_bus: a system D-Bus that answers before this returns
# (DBUS_PID). The socket an earlier bus left is removed first: the wait
# would otherwise pass at once, and a bluetoothd started before the new
# bus listens finds no bus and exits.
start_system_bus() {
  mkdir -p /run/dbus
  rm -f /run/dbus/system_bus_socket
  dbus-daemon --system --nofork --nopidfile >dbus.log 2>&1 &
  DBUS_PID=$!
  wait_for 30 dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.GetId >/dev/null 2>&1 || { fail "dbus-daemon did not start"; return 1; }
}

# start_bluetoothd LOG [bluetoothd options]: bluetoothd in the foreground
# of the test (BTD), its output in LOG.
start_bluetoothd() {
  local log=$1; shift
  /usr/libexec/bluetooth/bluetoothd -n "$@" >"$log" 2>&1 &
  BTD=$!
}

# bluetoothd_with_two_controllers SECONDS [bluetoothd options]: the system
# bus, hci0 and hci1 (btvirt -l2) with btmon recording trace.btsnoop, and
# one bluetoothd (bluetoothd.log) serving both, which must list them
# within SECONDS. Sets a0 and a1 to their addresses.
bluetoothd_with_two_controllers() {
  local seconds=$1; shift
  start_system_bus
  start_btvirt -l2
  btmon -w trace.btsnoop >/dev/null 2>&1 &
  start_bluetoothd bluetoothd.log "$@"
  a0=$(adapter_address hci0)
  a1=$(adapter_address hci1)
  wait_for "$seconds" bluetoothd_lists "$a0" "$a1" || fail "bluetoothd does not list hci0 and hci1"
}

# le_only [btmgmt settings...]: both controllers powered off, set LE only
# and connectable, then given the settings in order (e.g. "sc on"
# "bondable on" "power on"; a test that sets privacy powers on itself).
le_only() {
  local i c
  for i in hci0 hci1; do
    for c in "power off" "le on" "bredr off" "connectable on" "$@"; do
      mgmt -i $i $c
    done
  done
}

# phone_with_privacy IRK: hci1 (the "phone") gets privacy with IRK (16
# bytes least significant first, as btmgmt takes it), both controllers are
# powered on, hci0 (the "laptop") advertises, and one pairing agent serves
# both (one bluetoothd): NoInputNoOutput on both sides makes pairing Just
# Works, so the kernel asks neither (a second request while the agent
# answers one would fail with EBUSY).
phone_with_privacy() {
  mgmt -i hci1 privacy on "$1"
  mgmt -i hci0 power on
  mgmt -i hci1 power on
  mgmt -i hci1 info
  mgmt -i hci0 advertising on
  "$EARSHOT" ble-agent --accept --capability NoInputNoOutput >agent.out 2>agent.err &
  wait_for 60 grep -q '"ready"' agent.out || { fail "pairing agent did not register"; cat agent.out agent.err; }
}

# phone_connected, phone_paired: what bluetoothd says of the laptop
# ($laptop, set by phone_bonds_with_laptop) on the phone's side.
phone_connected() { busctl get-property org.bluez "$laptop" org.bluez.Device1 Connected 2>/dev/null | grep -q true; }
phone_paired() { busctl get-property org.bluez "$laptop" org.bluez.Device1 Paired 2>/dev/null | grep -q true; }

# phone_bonds_with_laptop: the phone (hci1) connects to the laptop (hci0,
# address $a0) through bluetoothd as central, from its resolvable address,
# and Device1.Pair bonds them (three tries). Sets laptop to the D-Bus path.
phone_bonds_with_laptop() {
  laptop=/org/bluez/hci1/dev_${a0//:/_}
  # (ConnectDevice, experimental: bluetoothd -E; discovery would stop as
  # soon as busctl, its owner, leaves the bus.)
  busctl --timeout=60 call org.bluez /org/bluez/hci1 org.bluez.Adapter1 ConnectDevice 'a{sv}' 2 \
    Address s "$a0" AddressType s public >connect.out 2>&1
  cat connect.out
  check "the phone's bluetoothd connected to the laptop" wait_for 30 phone_connected
  local try
  for try in 1 2 3; do
    busctl --timeout=90 call org.bluez "$laptop" org.bluez.Device1 Pair >>pair.out 2>&1 && break
    phone_paired && break
    sleep 1
  done
  check "Device1.Pair succeeded" phone_paired
}

# For a raw ATT client on hci0 (the central) talking to Earshot's link on
# hci1 ($a0, $a1 as bluetoothd_with_two_controllers sets them):
# bluez_path hciN ADDRESS: bluetoothd's object for ADDRESS seen from hciN.
bluez_path() { echo "/org/bluez/$1/dev_${2//:/_}"; }
# link_down, hangup: whether hci0 has no link to hci1; drop it if it has
# (bluetoothd on hci0 may keep the link up with its own ATT client once
# bonded, and a second ATT socket then gets EBUSY).
link_down() { ! hcitool -i hci0 con 2>/dev/null | grep -q "$a1"; }
hangup() {
  link_down && return 0
  mgmt -i hci0 disconnect -t 1 "$a1"
  wait_for 10 link_down || { echo "link to $a1 still up:"; hcitool -i hci0 con; }
}
# forget_central: the central forgets its copy of the bond. bluetoothd on
# hci0 attaches its own ATT bearer when a device it has keys for connects,
# and the raw client's bearer then clashes with it (the link is reset at
# the first write); so each run pairs again, while Earshot's side (hci1)
# keeps its bond, which is what the policy checks.
forget_central() {
  busctl call org.bluez /org/bluez/hci0 org.bluez.Adapter1 RemoveDevice o "$(bluez_path hci0 "$a1")" >/dev/null 2>&1
}

# alert_on_loopback: an [audio] section whose alert (a 1000 Hz beep, no
# ramp) goes to the snd-aloop loopback, recorded on hw:Loopback,1, and
# whose mixer is snd-dummy's Master.
alert_on_loopback() {
  printf '%s\n' '[audio]' 'device = plughw:Loopback,0' 'mixer_card = hw:Dummy' \
    'mixer_control = Master' 'sound = beep' 'frequency = 1000' 'ramp = 0'
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

# advertise_ad hciN HEX...: legacy non-connectable advertising of the AD
# bytes given (at most 31), not yet enabled.
advertise_ad() {
  local dev=$1; shift
  local bytes=($*) pad=""
  for _ in $(seq $((31 - ${#bytes[@]}))); do pad="$pad 00"; done
  hcitool -i "$dev" cmd 0x08 0x0006 a0 00 a0 00 03 00 00 00 00 00 00 00 00 07 00 >/dev/null
  hcitool -i "$dev" cmd 0x08 0x0008 $(printf '%02x' ${#bytes[@]}) ${bytes[*]}$pad >/dev/null
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

# noted_advertising_loop hciN: the same loop, noting (wall clock) each
# enable in /tmp/adv.hciN, until /tmp/adv.stop exists; it finishes its round
# first, so the file's last line then bounds hciN's last report from below.
# Run it with & and wait for it after touching /tmp/adv.stop.
noted_advertising_loop() {
  while [ ! -e /tmp/adv.stop ]; do
    date +%s.%N >>"/tmp/adv.$1"
    hcitool -i "$1" cmd 0x08 0x000a 01 >/dev/null 2>&1
    sleep 0.2
    hcitool -i "$1" cmd 0x08 0x000a 00 >/dev/null 2>&1
    sleep 0.05
  done
}

# pm_test_suspend: the kernel's suspend path up to the freezer (the PM
# notifiers run, every process is frozen for 5 s, no device suspends); see
# sleep_freezer.sh; sleep_resume.sh sleeps for real.
pm_test_suspend() {
  echo freezer >/sys/power/pm_test
  echo mem >/sys/power/state
  local rc=$?
  echo none >/sys/power/pm_test
  return $rc
}

# first_scan_enable TRACE.txt UNIXTIME: the Unix time of the first scan
# enable (legacy 0x000c or extended 0x0042) after UNIXTIME in a trace read
# with `btmon -r FILE -i 0 -T` (its stamps are date and time, compared as
# text); 0 if none.
first_scan_enable() {
  local on
  on=$(awk -v r="$(date -d "@$2" '+%Y-%m-%d %H:%M:%S.%6N')" '
         /HCI Command: .*\(0x08\|0x00(0c|42)\) plen/ {when = $(NF - 1) " " $NF; next}
         when > r && /Enabled \(0x01\)/ && first == "" {first = when} {when = ""}
         END {print first}' "$1")
  date -d "${on:-no enable}" +%s.%N 2>/dev/null || echo 0
}

# start_sleep_monitor EXIT_AFTER: the sleep tests' start (sleep_freezer,
# sleep_resume): btmon tracing to /tmp/trace.btsnoop, hci1 advertising the
# test iBeacon in a noted loop, `earshot monitor` on hci0 with region desk
# (mon.out, mon.err). Sets BTMON, ADV and MON; count EVENT STATE and
# at_least EVENT STATE N count desk's lines. Waits for desk inside.
start_sleep_monitor() {
  start_btvirt -l2
  btmon -w /tmp/trace.btsnoop >/dev/null 2>&1 &
  BTMON=$!
  advertise_ibeacon hci1
  desk_config /tmp/sleep.conf "$1" /tmp/sleep.state
  rm -f /tmp/adv.stop /tmp/adv.hci1
  noted_advertising_loop hci1 &
  ADV=$!
  "$EARSHOT" monitor --config /tmp/sleep.conf --no-range >mon.out 2>mon.err &
  MON=$!
  count() { grep -c "\"event\":\"$1\",\"region\":\"desk\",\"state\":\"$2\"" mon.out; }
  at_least() { [ "$(count "$1" "$2")" -ge "$3" ]; }
  check "desk inside" wait_for 60 at_least state inside 1
}

# sleep_timeline LAST RESUMED ON EXIT (Unix times): one line for the log
# saying when the scan came back (ON) and the exit came, from the resume.
sleep_timeline() {
  echo "last report after $1, resume $2, scan back $3, exit $4:" \
    "scan back $(awk -v o="$3" -v r="$2" 'BEGIN {printf "%.2f", o - r}') s after the resume," \
    "exit $(awk -v t="$4" -v o="$3" 'BEGIN {printf "%.2f", t - o}') s after it," \
    "$(awk -v t="$4" -v r="$2" 'BEGIN {printf "%.2f", t - r}') s after the resume"
}

stop_advertising_loop() {
  [ -n "${ADV_PID:-}" ] && kill "$ADV_PID" 2>/dev/null && wait "$ADV_PID" 2>/dev/null
  ADV_PID=
  hcitool -i "${1:-hci1}" cmd 0x08 0x000a 00 >/dev/null 2>&1 || true
}

# scan_params TRACE.txt: each scan parameters command in a btmon text
# trace, as "TYPE INTERVAL WINDOW" (ms), one per line.
scan_params() {
  awk '/Set Extended Scan Parameters|LE Set Scan Parameters/ { p = 1; line = ""; next }
    p && /Type:/ { line = $2 }
    p && /Interval:/ { line = line " " $2 }
    p && /Window:/ { print line " " $2; p = 0 }' "$1"
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
