# Good company for the kernel (issue 25): a bonded LE device coming back is
# reconnected by the kernel's own background scan (mgmt Add Device with
# auto-connect: the kernel scans passively for it and connects when it
# advertises), with Earshot stopped and while `earshot run` scans on the
# same adapter. hci1 is the device: connectable advertising (ADV_IND),
# toggled, as the emulator sends one report per enable. Each reconnection
# is timed from the disconnect; Earshot scanning may slow it a little, but
# must never stop it. (With no program holding the link, the kernel also
# drops it after 2 s idle and connects again: the device keeps coming
# back for the whole test, a reconnection every few seconds.) The device
# is not bonded: bluetoothd gives a bonded one the same Add Device.
start_btvirt -l2
btmon -w trace.btsnoop >/dev/null 2>&1 &
BTMON=$!
# The kernel's background scan runs on a controller powered through mgmt
# with LE enabled (hciconfig up alone leaves it off).
for c in "power off" "le on" "power on"; do mgmt -i hci0 $c; done
a1=$(adapter_address hci1)
# Set 0 as a connectable legacy advertisement (ADV_IND: properties 0x13)
# through the extended commands, which the emulator's extended create
# connection looks for; data: flags only. Toggled, as the emulator sends
# one report per enable.
hcitool -i hci1 cmd 0x08 0x0036 00 13 00 a0 00 00 a0 00 00 07 00 00 00 00 00 00 00 00 00 7f 01 00 01 00 00 >/dev/null
hcitool -i hci1 cmd 0x08 0x0037 00 03 01 03 02 01 06 >/dev/null
( while :; do
    hcitool -i hci1 cmd 0x08 0x0039 01 01 00 00 00 00 >/dev/null 2>&1
    sleep 0.2
    hcitool -i hci1 cmd 0x08 0x0039 00 01 00 00 00 00 >/dev/null 2>&1
    sleep 0.05
  done ) &
ADV_PID=$!
# A link up (state 1, BT_CONNECTED), not a connection being created (5).
connected() { hcitool -i hci0 con 2>/dev/null | grep -q "$a1 handle [0-9]* state 1 "; }

mgmt -i hci0 add-device -a 2 -t 1 "$a1"
if ! wait_for 30 connected; then
  fail "the kernel connects the auto-connect device (Earshot stopped)"
  btmon -r trace.btsnoop 2>/dev/null | grep -E '\[hci0\]' | head -40
  stop_advertising_loop hci1
  stop_btvirt
  exit 0
fi
pass "the kernel connects the auto-connect device (Earshot stopped)"

# links_made: LE connections completed so far on hci0 (btmon's trace; the
# emulator gives every link the same handle, and reconnects in well under
# a second, faster than a poll could see the link gone).
links_made() {
  btmon -r trace.btsnoop 2>/dev/null | grep -c 'Enhanced Connection Complete (0x0a)\|LE Connection Complete (0x01)'
}
new_link() { connected && [ "$(links_made)" -gt "$1" ]; }
# reconnect LABEL: drops the link and times the kernel's reconnection.
reconnect() {
  local before start end
  # The kernel drops an idle link after 2 s and connects again: wait for
  # one to be up.
  wait_for 10 connected || { fail "$1: a link to drop (none up within 10 s)"; return; }
  before=$(links_made)
  start=$(date +%s.%N)
  mgmt -i hci0 disconnect -t 1 "$a1"
  if wait_for 40 new_link "$before"; then
    end=$(date +%s.%N)
    pass "$1: the kernel reconnected the device"
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f\n", e - s }' >"$1.seconds"
    echo "$1: reconnected in $(cat "$1.seconds") s"
  else
    fail "$1: the kernel reconnected the device within 40 s"
  fi
}
reconnect stopped

cat >/tmp/ac.conf <<CONF
[scanner]
adapter = hci0
duty = automatic
[region "desk"]
uuid = $BEACON_UUID
exit_after = 10
[state]
path = /tmp/ac.state
CONF
"$EARSHOT" run --config /tmp/ac.conf --socket /tmp/ac.sock --state-dir /tmp/ac-state --no-audio >run.out 2>run.log &
RUN=$!
check "earshot scans on hci0" wait_for 30 grep -q 'hci0: scanning' run.log
sleep 2
during=$(links_made)
reconnect scanning
reconnect "scanning, again"
check "earshot still runs" kill -0 $RUN
n=$(( $(links_made) - during ))
check "the kernel kept connecting while earshot scanned ($n link events on both sides)" [ "$n" -ge 4 ]
# The device's advertisements reached Earshot too (it hears the adapter's
# reports whoever scans): status answers, and scanning is Earshot's again.
takes_back() { [ "$(grep -c 'hci0: scanning' run.log)" -ge 1 ] && "$EARSHOT" status --socket /tmp/ac.sock | grep -q '"monitoring":true'; }
check "earshot's status answers while the device is connected" wait_for 20 takes_back
kill -INT $RUN
wait $RUN
check "earshot exits 0" [ $? -eq 0 ]
reconnect "after Earshot"
stop_advertising_loop hci1
kill -INT $BTMON; wait $BTMON 2>/dev/null
btmon -r trace.btsnoop >trace.txt 2>&1
check "btmon: the kernel created the LE connections" grep -q 'LE Create Connection\|LE Extended Create Connection' trace.txt
# The kernel's background scan: passive, at the adapter's own timing
# (le_scan_window/le_scan_interval, one system-wide setting, the same for
# every device it waits for): what the cooperative route would give Earshot.
scan_params trace.txt >params.txt
uniq -c params.txt | head -20
check "btmon: the kernel's background scan is passive, 30 ms every 60 ms" \
  grep -q '^Passive 60.000 30.000$' params.txt
check "btmon: no active scan on hci0" sh -c '! grep -q "^Active" params.txt'
for f in stopped scanning "scanning, again" "after Earshot"; do [ -f "$f.seconds" ] && echo "reconnect $f: $(cat "$f.seconds") s"; done
grep -E 'scanning|sharing|another program' run.log | head -20
stop_btvirt
