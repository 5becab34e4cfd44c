# Key-finder tags end to end (tag_setup.bash): one bluetoothd serves both
# emulated controllers; on hci0 a test GATT application (tag_peripheral.py,
# through python3-dbus) plays an iTag, on hci1 `earshot run` keeps
# [tag "keys"] connected through bluetoothd's GATT client over D-Bus.
# Shown here: a press rings the laptop (recorded on the snd-aloop loopback),
# a second press is found; a malformed notification is one log line and
# one event, and rings nothing.
. "$REPO/Tests/vm/tests/tag_setup.bash"
# A press rings the laptop as tag:keys; the second press is found.
arecord -q -D hw:Loopback,1 -f S16_LE -r 48000 -c 2 -d 60 /tmp/capture.wav 2>arecord.err &
REC=$!
kill -USR1 $TAG
check "a press rings the laptop as tag:keys" wait_for 20 grep -q '"state":"ringing","requesters":\["tag:keys"\]' events.out
sleep 1
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

kill -INT $AGENT
wait $AGENT
check "earshot run stopped cleanly" [ $? -eq 0 ]
kill $TAG 2>/dev/null
cat tag.out events.out agent.log
grep -iE 'error|fail' bluetoothd.log | tail -20
stop_btvirt
