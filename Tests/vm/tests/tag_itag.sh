# Key-finder tags end to end (tag_setup.bash): one bluetoothd serves both
# emulated controllers; on hci0 a test GATT application (tag_peripheral.py,
# through python3-dbus) plays an iTag, on hci1 `earshot run` keeps
# [tag "keys"] connected through bluetoothd's GATT client over D-Bus.
# Shown here: a press rings the laptop (recorded on the snd-aloop loopback),
# a second press is found; `earshot ring keys` writes Alert Level 2,
# `--stop` 0; a malformed notification and a refused write are one log
# line and an event each, and ring nothing.
. "$REPO/Tests/vm/tests/tag_setup.bash"
# A press rings the laptop as tag:keys; the second press is found.
arecord -q -D hw:Loopback,1 -f S16_LE -r 48000 -c 2 -d 60 /tmp/capture.wav 2>arecord.err &
REC=$!
kill -USR1 $TAG
check "a press rings the laptop as tag:keys" wait_for 20 grep -q '"state":"ringing","requesters":\["tag:keys"\]' events.out
sleep 2
"$EARSHOT" status --socket $SOCK >ringing.json
kill -USR1 $TAG
check "the second press is found" wait_for 20 grep -q '"state":"idle".*"last_end":"found"' events.out
check "the tag's notice is taken (a tag cannot hear it)" wait_for 5 grep -q 'tag:keys accepted notice' agent.log
kill -INT $REC; wait $REC
sox /tmp/capture.wav -n remix 1 silence 1 0.05 1% trim 0 0.25 stat 2>stat.out; cat stat.out
check "the ring was recorded on the loopback (about 1000 Hz)" awk '/Rough/ {f = $3} END {exit !(f > 950 && f < 1050)}' stat.out
check "two button events (ring, then found)" bash -c "[ \$(grep -c '\"event\":\"tag_button\"' events.out) -eq 2 ]"

# A malformed notification: one line, one event, no ring.
kill -USR2 $TAG
check "a 2-byte notification is one log line" wait_for 10 grep -q 'ignored a button notification of 2 bytes (0102)' agent.log
check "and one tag_bad_notification event" wait_for 5 grep -q '"event":"tag_bad_notification","tag":"keys","detail":"0102"' events.out
sleep 1
"$EARSHOT" status --socket $SOCK >after_bad.json
check "it rang nothing" grep -q '"find":{"state":"idle"' after_bad.json
check "exactly one log line for it" [ "$(grep -c '0102' agent.log)" -eq 1 ]

# Ringing the tag: Alert Level 2, then 0.
"$EARSHOT" ring --socket $SOCK keys >ring.out 2>&1
check "earshot ring keys answered" grep -q "\"target\":\"keys\",\"device\":\"$a0\",\"level\":2" ring.out
check "the tag's Immediate Alert level is 2" grep -q '"event": "write", "char": "immediate_alert", "value": \[2\]' tag.out
"$EARSHOT" ring --socket $SOCK --stop keys >stop.out 2>&1
check "earshot ring --stop keys answered" grep -q '"level":0' stop.out
check "the tag's Immediate Alert level is 0" grep -q '"event": "write", "char": "immediate_alert", "value": \[0\]' tag.out
"$EARSHOT" status --socket $SOCK >status2.json
check "status shows alert level 0" grep -q '"alert_level":0' status2.json

# A tag that refuses the write: the command fails with the reason, one log line, one event.
touch refuse
"$EARSHOT" ring --socket $SOCK keys >refused.out 2>&1
rc=$?
rm -f refuse
cat ring.out stop.out refused.out
check "a refused write fails the command (exit 1)" [ "$rc" -eq 1 ]
check "with the tag's reason" grep -q 'refused alert level 2: NotPermitted' refused.out
check "one log line" [ "$(grep -c 'Immediate Alert write of alert level 2 failed' agent.log)" -eq 1 ]
check "one tag_refused event" wait_for 5 grep -q '"event":"tag_refused","tag":"keys"' events.out
"$EARSHOT" ring --socket $SOCK 00:11:22:33:44:55 >unknown.out 2>&1
cat unknown.out
check "an unknown device is refused clearly" grep -q 'bluetoothd does not know 00:11:22:33:44:55' unknown.out

kill -INT $AGENT
wait $AGENT
check "earshot run stopped cleanly" [ $? -eq 0 ]
kill $TAG 2>/dev/null
cat tag.out events.out agent.log
grep -iE 'error|fail' bluetoothd.log | tail -20
stop_btvirt
