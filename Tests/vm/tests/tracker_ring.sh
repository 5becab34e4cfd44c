# Ringing a stranger's tracker through bluetoothd: hci0 is the tracker (a
# GATT application, tracker_peripheral.py, with the AirTag sound service
# and DULT's non-owner service; its Find My "separated" frame advertised
# connectable from the random static address C3:11:22:33:44:55 with raw
# HCI commands: bluetoothd's own extended advertising of that frame made
# btvirt abort when the agent's scan started); hci1 is the laptop's one
# adapter: the agent's scanner and bluetoothd's discovery and connection.
# `earshot trackers --ring 1` reaches DULT (indications on, 00 03 written,
# Success), --silence writes 01 03; with DULT refusing, the AirTag service
# gets AF; near its owner (Invalid_state) is answered as such; --identify
# reads the manufacturer and model. Every request ends disconnected.
. "$RESULTS/env"
TRACKER=C3:11:22:33:44:55
printf '[General]\nTemporaryTimeout = 600\n' >main.conf
bluetoothd_with_two_controllers 30 -d -f main.conf
le_only "power on"

/usr/bin/python3 "$REPO/Tests/vm/tests/tracker_peripheral.py" hci0 >tracker.out 2>tracker.err &
TRACKER_PID=$!
wait_for 60 grep -q '"ready"' tracker.out || { fail "the tracker did not register"; cat tracker.out tracker.err; }
# Extended advertising set 0 (the emulator connects an extended create
# connection only to an extended advertiser): its random address
# (least significant byte first); connectable legacy ADV_IND (properties
# 0x13) from it; the data: 4C 00 12 19, status 0x10 (an AirTag, battery
# full), 22 key bytes, 2 more.
hcitool -i hci0 cmd 0x08 0x0036 00 13 00 a0 00 00 a0 00 00 07 01 00 00 00 00 00 00 00 00 7f 01 00 01 00 00 >/dev/null
hcitool -i hci0 cmd 0x08 0x0035 00 55 44 33 22 11 c3 >/dev/null
hcitool -i hci0 cmd 0x08 0x0037 00 03 01 1f 1e ff 4c 00 12 19 10 $(printf '%02x ' $(seq 1 22)) 00 00 >/dev/null
# tracker_peripheral.py pulses the advertising (off and on at once) every
# second from now on.
touch advertise

SOCK=/tmp/earshot.sock
cat >tracker.conf <<CONF
[scanner]
adapter = hci1
duty = full
[trackers]
enabled = true
CONF
"$EARSHOT" run --config tracker.conf --socket $SOCK --state-dir /tmp/earshot-state --no-audio >run.log 2>&1 &
RUN=$!
wait_for 20 test -S $SOCK || fail "the agent made no socket"
listed() { "$EARSHOT" trackers --socket $SOCK >list.out 2>&1 && grep -q "^1: .*airtag separated at $TRACKER" list.out; }
check "the agent keeps the tracker as number 1" wait_for 30 listed
cat list.out

connected() { busctl get-property org.bluez "/org/bluez/hci1/dev_${TRACKER//:/_}" org.bluez.Device1 Connected 2>/dev/null | grep -q true; }
let_go() { wait_for 10 bash -c "! busctl get-property org.bluez /org/bluez/hci1/dev_${TRACKER//:/_} org.bluez.Device1 Connected 2>/dev/null | grep -q true"; }
ring() { timeout 120 "$EARSHOT" trackers --socket $SOCK "$@" >>ring.out 2>&1; }

ring --ring 1
rc=$?
check "--ring 1: rang through DULT (exit 0)" [ $rc -eq 0 ]
check "the answer says so" grep -q "^tracker 1 (Find My (separated) at $TRACKER) is ringing (DULT)" ring.out
check "indications were on before the write" grep -q '"event": "notify", "char": "dult", "on": true' tracker.out
check "Sound_Start (00 03) reached DULT's control point" grep -q '"event": "write", "char": "dult", "value": \[0, 3\]' tracker.out
check "bluetoothd holds no link to it afterwards" let_go

ring --silence 1
check "--silence 1: Sound_Stop (01 03) reached it" grep -q '"event": "write", "char": "dult", "value": \[1, 3\]' tracker.out
check "the answer says so" grep -q "was told to stop ringing (DULT)" ring.out

touch dult_refuse
ring --ring 1
rc=$?
rm -f dult_refuse
check "DULT refusing: rang through the AirTag service (exit 0)" [ $rc -eq 0 ]
check "AF reached the AirTag characteristic" grep -q '"event": "write", "char": "airtag", "value": \[175\]' tracker.out
check "the answer names it" grep -q "is ringing (AirTag)" ring.out

touch near_owner
ring --ring 1
rc=$?
check "near its owner: exit 1" [ $rc -eq 1 ]
check "answered as near its owner" grep -q "is near its owner (DULT answered Invalid_state)" ring.out

ring --identify 1
check "--identify 1: manufacturer and model" grep -q "manufacturer Earshot Test, model Ring Tag" ring.out
check "Get_Identifier asked (04 04), answered Invalid_state" grep -q "identifier not given (Invalid_state)" ring.out
check "no link left" let_go
cat ring.out
check "the agent logged the answers" [ "$(grep -c "trackers: tracker 1 (Find My (separated) at $TRACKER) is ringing" run.log)" -ge 2 ]

kill -INT $RUN
wait $RUN
check "earshot run stopped cleanly" [ $? -eq 0 ]
kill $TRACKER_PID 2>/dev/null
cat tracker.out
grep 'trackers:' run.log
stop_btvirt
