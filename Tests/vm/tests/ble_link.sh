# The BLE device link end to end: bluetoothd and a system D-Bus in the VM,
# `earshot run` with [link] enabled on hci1 (its alert on the snd-aloop
# loopback, its mixer snd-dummy's Master), the raw L2CAP ATT client
# (`earshot device --ble`) on hci0, and a pairing agent (ble-agent
# --accept) confirming the numeric comparison for both sides (one
# bluetoothd serves both adapters). SMP's ECDH needs drbg loaded first:
# the guest does that.
. "$RESULTS/env"
# One bluetoothd serves both sides here, so Earshot's side must not run a
# GATT client of its own against the central (reverse service discovery):
# its requests would meet the raw client's bearer there too, and the
# "unexpected ATT response" resets the link. A phone has one bearer.
printf '[General]\nReverseServiceDiscovery = false\n' >main.conf
# Both controllers set up by bluetoothd before they are reconfigured.
bluetoothd_with_two_controllers 30 -d -f main.conf
le_only "sc on" "bondable on" "power on"
mgmt -i hci1 info

"$EARSHOT" ble-agent --accept >agent.out 2>agent.err &
wait_for 10 grep -q '"ready"' agent.out || { fail "agent did not register"; cat agent.out agent.err; }

SOCK=/tmp/earshot.sock
cat >link.conf <<CONF
[link]
enabled = true
adapter = hci1
name = vmlink
legacy_remote_volume = true
$(alert_on_loopback)
[find-phone]
volume = 0.9
timeout = 60
[shutter]
device = /dev/video9
[media]
library = /tmp/nomusic
CONF
"$EARSHOT" run --config link.conf --socket $SOCK --state-dir /tmp/earshot-state >agent.log 2>&1 &
AGENT=$!
check "earshot run registered the GATT application and advertisement" wait_for 20 grep -q 'link: advertising' agent.log
"$EARSHOT" volume --socket $SOCK set 0.25 >vol0.out 2>&1
amixer -c Dummy get Master >mixer0.out 2>&1
cat vol0.out mixer0.out
"$EARSHOT" events --socket $SOCK --topics find,volume >events.out 2>&1 &

dev() {
  hangup
  "$EARSHOT" device --ble "$a1" --adapter hci0 --timeout 15 "$@"
  local rc=$?
  hangup
  forget_central
  return $rc
}

# No encryption: bluetoothd itself refuses the write (the flags demand it).
dev --security low find start >low.out 2>low.err
cat low.out low.err
check "unencrypted write refused with an ATT error" grep -q '"att_error":"0x0[5f]"' low.out
check "an unencrypted write never reaches Earshot" bash -c "! grep -q 'find_start' agent.log"

# Authenticated pairing (numeric comparison, confirmed by the agent), bonding;
# then requests, malformed writes, and find: start (the alert plays to the
# loopback, which is recorded), the user's "found" (earshot found), then
# find_ended and phone_found, acknowledged. One connection for all of it.
hangup
arecord -q -D hw:Loopback,1 -f S16_LE -r 48000 -c 2 -d 90 /tmp/capture.wav 2>arecord.err &
REC=$!
"$EARSHOT" device --ble "$a1" --adapter hci0 --timeout 15 --security high --wait 10 --ack-notice \
  info volume get volume set 0.6 volume get volume mute raw 1101f4 raw 0501 raw 1101e903 raw 01 \
  find start >high.out 2>high.err &
DEV=$!
wait_for 60 grep -q '"result":"ringing"' high.out || fail "find_start was never answered"
sleep 2
"$EARSHOT" status --socket $SOCK >ringing.json
"$EARSHOT" found --socket $SOCK >found.out 2>&1
wait $DEV
sleep 1
kill -INT $REC; wait $REC
hangup
forget_central
cat high.out high.err agent.out found.out ringing.json
check "link is authenticated (security level 3 or 4)" grep -qE '"security":[34]' high.out
check "the agent confirmed a numeric comparison" grep -q '"agent":"RequestConfirmation"' agent.out
check "info answered (version 1, find volume shutter media)" grep -q '"response":"info","seq":1,"status":"ok","version":1,"features":15' high.out
# The mixer is snd-dummy's Master (a dB range): levels are its nearest steps.
level() { grep "\"response\":\"$1\",\"seq\":$2," high.out | sed -n 's/.*"level":\([0-9.]*\).*/\1/p'; }
near() { awk -v a="$1" -v b="$2" 'BEGIN {d = a - b; exit !(a != "" && d < 0.02 && d > -0.02)}'; }
check "volume get: the mixer's 0.25 (set through the agent)" near "$(level volume_get 2)" 0.25
check "volume set 0.6 answered with the mixer's level" near "$(level volume_set 3)" 0.6
check "volume change notified" grep -qE '"notification":"volume_changed".*"level":0.(59|6)' high.out
check "volume get after set round-trips" [ "$(level volume_get 4)" = "$(level volume_set 3)" ]
# snd-dummy's Master has no playback switch: mute is answered, changes nothing.
check "mute answered" grep -qE '"response":"volume_mute","seq":5,"status":"ok","level":0.(59|6)' high.out
"$EARSHOT" volume --socket $SOCK >vol1.out 2>&1
amixer -c Dummy get Master >mixer1.out 2>&1
cat vol1.out mixer1.out
check "after the ring the mixer is back at 0.6" grep -qE '"volume":0.(59|6[01])' vol1.out
check "snd-dummy's Master moved" bash -c "! cmp -s mixer0.out mixer1.out"
check "short payload: ATT 0x0d" grep -q '"att_error":"0x0d","name":"invalid_attribute_value_length","write":"1101f4"' high.out
check "unknown opcode: ATT 0x80" grep -q '"att_error":"0x80".*"write":"0501"' high.out
check "level out of range: ATT 0x81" grep -q '"att_error":"0x81".*"write":"1101e903"' high.out
check "one byte: ATT 0x0d" grep -q '"att_error":"0x0d".*"write":"01"}' high.out
check "malformed writes logged with the address" grep -q "malformed write from $a0" agent.log
check "the agent still serves after malformed writes" kill -0 $AGENT
n=$(grep -c "link: $a0: " agent.log)
check "the 6 well-formed requests other than info reached the agent ($n)" [ "$n" -eq 6 ]
busctl get-property org.bluez "$(bluez_path hci1 "$a0")" org.bluez.Device1 Bonded >info1.out 2>&1
cat info1.out
check "the central is bonded on the peripheral's side" grep -q 'b true' info1.out

check "find_start answered: ringing" grep -q '"response":"find_start","seq":6,"status":"ok","result":"ringing"' high.out
check "find status while ringing names the BLE device" grep -q "\"requesters\":\[\"ble:$a0\"\]" ringing.json
check "find_ended(found) then phone_found" bash -c "grep -n 'find_ended\\|phone_found' high.out | head -2 | tr '\\n' ' ' | grep -q 'find_ended.*phone_found'"
check "the acknowledgement was answered" grep -q '"response":"notice_ack","seq":7,"status":"ok"' high.out
check "the notice was accepted" grep -q "ble:$a0 accepted notice 1" agent.log
cat events.out
check "the notice result was published" grep -q "\"event\":\"notice_result\",\"notice\":1,\"device\":\"ble:$a0\",\"result\":\"accepted\"" events.out
# Silence, then the notice: the daemon's events show the ring stopping, the
# volume restored (0.6, muted), and only then the notice's result.
check "stopping, volume restored, then the notice's result" awk '/"state":"stopping"/ && !s {s=NR} s && !v && /"event":"volume"/ && /"level":0.(59|6)/ {v=NR} /notice_result/ {n=NR} END {exit !(s && v && n && s < v && v < n)}' events.out
# The alert was on the loopback while ringing: the first quarter second of
# sound in the capture is the 1000 Hz beep.
cat arecord.err
sox /tmp/capture.wav -n remix 1 silence 1 0.05 1% trim 0 0.25 stat 2>stat.out; cat stat.out
check "the alert was recorded on the loopback (about 1000 Hz)" awk '/Rough/ {exit !($3 > 950 && $3 < 1050)}' stat.out

# Legacy remote volume (served from the agent's mixer).
dev --security high --legacy name volume set 0.75 volume set 1.5 raw 0000 >legacy.out 2>legacy.err
cat legacy.out legacy.err
check "REQ_NAME answered with the name" grep -q '"text":"vmlink"' legacy.out
check "REQ_VOLUME answered with the mixer's 0.6 as a double" grep -qE '"volume":0.(59|6[01])' legacy.out
check "REQ_VOLUME after set: the mixer's 0.75" grep -qE '"volume":0.7[456]' legacy.out
check "legacy 1.5 refused (0x81)" grep -q '"att_error":"0x81"' legacy.out
check "legacy 2 bytes refused (0x0d)" grep -q '"att_error":"0x0d"' legacy.out

# A device that leaves before acknowledging its notice: the disconnect is
# seen (BlueZ's Device1 Connected), and the notice fails with it instead of
# staying open.
# (Up to three tries: bluetoothd's own ATT bearer on the central can still
# clash with the raw client's, which resets the link at the first write.)
for try in 1 2 3; do
  hangup
  "$EARSHOT" device --ble "$a1" --adapter hci0 --timeout 15 --security high --wait 4 \
    find start >noack.out 2>noack.err &
  DEV=$!
  wait_for 60 bash -c "grep -q '\"result\":\"ringing\"' noack.out || ! kill -0 $DEV 2>/dev/null"
  grep -q '"result":"ringing"' noack.out && break
  wait $DEV
  cat noack.out noack.err
  forget_central
done
grep -q '"result":"ringing"' noack.out || fail "find_start (no ack) was never answered"
"$EARSHOT" found --socket $SOCK >found2.out 2>&1
wait $DEV
hangup
forget_central
cat noack.out noack.err
check "the central's disconnect is seen" wait_for 10 grep -q "link: $a0 disconnected" agent.log
check "its unacknowledged notice fails with the disconnect" \
  wait_for 10 grep -qE "notice [0-9]+ to ble:$a0 failed: the device disconnected" agent.log

# An unbonded central: forget the bond on both sides, pair without bonding.
busctl call org.bluez /org/bluez/hci1 org.bluez.Adapter1 RemoveDevice o "$(bluez_path hci1 "$a0")"
busctl call org.bluez /org/bluez/hci0 org.bluez.Adapter1 RemoveDevice o "$(bluez_path hci0 "$a1")"
mgmt -i hci0 bondable off
dev --security high find start >unbonded.out 2>unbonded.err
cat unbonded.out unbonded.err
busctl get-property org.bluez "$(bluez_path hci1 "$a0")" org.bluez.Device1 Paired Bonded >info2.out 2>&1
cat info2.out
check "unbonded central refused: ATT 0x08" grep -q '"att_error":"0x08"' unbonded.out
check "refusal logged with address and reason" grep -q "refused a write from $a0: the device is not bonded" agent.log

# bluetoothd crashes and comes back: the link's registrations died with it,
# and Earshot registers them again by itself.
kill -9 $BTD
check "the agent says bluetoothd left" wait_for 10 grep -q 'bluetoothd left the bus' agent.log
start_bluetoothd bluetoothd2.log -d -f main.conf
check "the link registers again by itself" \
  wait_for 30 bash -c "[ \$(grep -c 'link: advertising' agent.log) -ge 2 ]"
agent_ready_again() { grep -q '"event":"bluetoothd_gone"' agent.out && [ "$(grep -c '"event":"ready"' agent.out)" -ge 2 ]; }
check "the pairing agent saw bluetoothd go and registered again" wait_for 30 agent_ready_again
dev --security low find start >again.out 2>again.err
cat again.out again.err
check "the service answers again (its write still demands encryption)" \
  grep -q '"att_error":"0x0[5f]"' again.out

kill -INT $AGENT
wait $AGENT
check "earshot run stopped cleanly" [ $? -eq 0 ]
cat agent.log
grep -iE 'advert|error|fail|bond|pair' bluetoothd.log | tail -40
stop_btvirt
