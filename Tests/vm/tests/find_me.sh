# The laptop as a Find Me target: `earshot run` with [link] enabled on hci1
# serves the Immediate Alert service (0x1802) through bluetoothd; a Find Me
# locator on hci0 (`earshot device --ble ... alert LEVEL`, a raw L2CAP ATT
# client writing the Alert Level without response, as locators do) rings
# it: 2 with the raise, 1 at the user's own volume, 0 stops it. The alert
# goes to the snd-aloop loopback, recorded on its capture side; the mixer
# is snd-dummy's Master. Bad values get ATT errors; an unbonded writer is
# refused. Pairing: ble-agent --accept confirms for both sides (one
# bluetoothd serves both adapters, as in ble_link.sh).
. "$RESULTS/env"
printf '[General]\nReverseServiceDiscovery = false\n' >main.conf
bluetoothd_with_two_controllers 30 -d -f main.conf
le_only "sc on" "bondable on" "power on"
"$EARSHOT" ble-agent --accept >agent.out 2>agent.err &
wait_for 30 grep -q '"ready"' agent.out || { fail "agent did not register"; cat agent.out agent.err; }

SOCK=/tmp/earshot.sock
cat >findme.conf <<CONF
[link]
enabled = true
adapter = hci1
name = vmfindme
$(alert_on_loopback)
[find-phone]
volume = 0.9
timeout = 120
CONF
"$EARSHOT" run --config findme.conf --socket $SOCK --state-dir /tmp/earshot-state >agent.log 2>&1 &
AGENT=$!
check "earshot run registered the link with the Immediate Alert service" \
  wait_for 20 grep -q 'Immediate Alert (0x1802) registered on /org/bluez/hci1' agent.log
wait_for 20 grep -q 'link: advertising' agent.log
"$EARSHOT" volume --socket $SOCK set 0.25 >vol0.out 2>&1
"$EARSHOT" events --socket $SOCK --topics find,volume >events.out 2>&1 &

me="findme:$a0"
# locate OUT ARGS...: one locator session.
locate() {
  local out=$1; shift
  hangup
  "$EARSHOT" device --ble "$a1" --adapter hci0 --timeout 15 --security high "$@" >"$out" 2>"$out.err"
  local rc=$?
  hangup
  forget_central
  return $rc
}
find_json() { "$EARSHOT" status --socket $SOCK | tr -d ' '; }
state_is() { find_json | grep -q "\"find\":{\"state\":\"$1\""; }
ended_as() { find_json | grep -q "\"last_end\":\"$1\""; }
level_now() { "$EARSHOT" volume --socket $SOCK | sed -n 's/.*"volume":\([0-9.]*\).*/\1/p'; }
near() { awk -v a="$1" -v b="$2" 'BEGIN {d = a - b; exit !(a != "" && d < 0.02 && d > -0.02)}'; }
# capture FILE SECONDS: what the loopback plays, recorded now.
capture() { arecord -q -D hw:Loopback,1 -f S16_LE -r 48000 -c 2 -d "$2" "$1" 2>>arecord.err; }
freq() { sox "$1" -n remix 1 stat 2>&1 | awk '/Rough/ {print $3}'; }
peak() { sox "$1" -n remix 1 stat 2>&1 | awk '/Maximum amplitude/ {print $3}'; }
is_tone() { awk -v f="$1" 'BEGIN {exit !(f > 950 && f < 1050)}'; }

# One bonded locator session (pairing is slow under emulation, so one
# connection does it all): Alert Level 2 without response (rings, raised
# to the [find-phone] volume), then bad values with response (refused,
# logged; the ring goes on), 0 (the locator's stop, not a found), and 1
# (rings again, at the user's volume; still open after the disconnect).
locate high.out --wait 1 alert high sleep 20 alert-write 03 alert-write 0200 sleep 1 \
  alert none sleep 2 alert mild &
LOC=$!
check "Alert Level 2 rings the laptop" wait_for 60 state_is ringing
find_json >ringing.json; cat ringing.json
check "find status names the locator ($me)" grep -q "\"requesters\":\[\"$me\"\]" ringing.json
# The mixer as the same status snapshot saw it.
mixer=$(sed -n 's/.*"volume":{"level":\([0-9.]*\).*/\1/p' ringing.json)
check "high: the mixer raised to the find-phone level (0.9: $mixer)" near "$mixer" 0.9
capture ring.wav 2
f=$(freq ring.wav); echo "ringing: $f Hz"
check "the alert is heard on the loopback (about 1000 Hz: $f)" is_tone "$f"
wait $LOC
cat high.out high.out.err
check "the locator paired and bonded (security 3 or 4)" grep -qE '"security":[34]' high.out
check "level 3 refused as reserved" grep -q "from $a0: alert level 3 is reserved" agent.log
check "2 bytes refused by length" grep -q "from $a0: alert level must be 1 byte, got 2" agent.log
check "one log line per bad value" [ "$(grep -c "refused an Alert Level write from $a0" agent.log)" -eq 2 ]
# bluetoothd acknowledges writes to a Write Without Response characteristic
# itself: the locator never sees an ATT error (docs/find-me.md).
check "bluetoothd acknowledged the bad values" [ "$(grep -c '"written":"alert_level"' high.out)" -eq 2 ]
check "the 0 came after the bad values" \
  awk '/refused an Alert Level write/ {r = NR} /wrote Alert Level 0/ {z = NR} END {exit !(r && z && r < z)}' agent.log
# What the subscriber saw: the ring ran raised until the 0 (the bad values
# changed nothing), ended as a device stop with the volume restored, and
# the 1 rang again without touching the volume.
cat events.out
first_end() { awk '/"state":"stopping"/ {print; exit}' events.out | sed -n 's/.*"last_end":"\([a-z_]*\)".*/\1/p'; }
check "the first ring ended by the locator's 0 ($(first_end))" [ "$(first_end)" = device_stop ]
vols=($(grep '"event":"volume"' events.out | sed -n 's/.*"level":\([0-9.]*\).*/\1/p'))
check "raised once and restored once (volume events: ${vols[*]})" [ "${#vols[@]}" -eq 2 ]
check "the raise was to 0.9" near "${vols[0]}" 0.9
check "the restore was to 0.25" near "${vols[1]}" 0.25
check "no notice for a device stop" bash -c "! grep -q 'notice 1' agent.log"
check "Alert Level 1 rings the laptop" wait_for 10 state_is ringing
check "mild: the mixer stays at the user's 0.25" near "$(level_now)" 0.25
capture mild.wav 2
f=$(freq mild.wav); echo "mild: $f Hz"
check "the mild alert is heard too (about 1000 Hz: $f)" is_tone "$f"

# The user finds the laptop: the locator is told nothing (the service has
# no such notice); the found is logged and published.
"$EARSHOT" found --socket $SOCK >found.out 2>&1; cat found.out
check "found stops it" wait_for 10 state_is idle
check "ended as a found" ended_as found
check "the found is logged: the locator is told nothing" \
  wait_for 5 grep -q "link: $me was told nothing: the Immediate Alert service has no found notice" agent.log
check "the found is published to subscribers" \
  wait_for 5 grep -q "\"event\":\"notice_result\",\"notice\":1,\"device\":\"$me\"" events.out
check "the volume is 0.25" near "$(level_now)" 0.25
capture after.wav 1
p=$(peak after.wav); echo "after the found: peak $p"
check "the loopback is silent afterwards (peak $p)" awk -v p="$p" 'BEGIN {exit !(p != "" && p < 0.01)}'

# An unbonded locator: bonds forgotten on both sides, paired without
# bonding. Its writes are refused (logged) and ring nothing.
busctl call org.bluez /org/bluez/hci1 org.bluez.Adapter1 RemoveDevice o "$(bluez_path hci1 "$a0")"
mgmt -i hci0 bondable off
hangup
timeout 60 "$EARSHOT" device --ble "$a1" --adapter hci0 --timeout 15 --security high --wait 1 \
  alert high alert-write 02 >unbonded.out 2>unbonded.err
cat unbonded.out unbonded.err
check "refusal logged with address and reason" \
  wait_for 5 grep -q "refused a write from $a0: the device is not bonded" agent.log
check "an unbonded locator does not ring the laptop" state_is idle

kill -INT $AGENT
wait $AGENT
check "earshot run stopped cleanly" [ $? -eq 0 ]
cat agent.log
grep -iE 'error|fail|bond|pair' bluetoothd.log | tail -20
stop_btvirt
