# Ringing a tag from the laptop (tag_setup.bash): `earshot ring keys`
# writes Alert Level 2 to the tag's Immediate Alert service (a write
# request, since its flags allow one), `--stop` writes 0; a tag that refuses
# the write fails the command with its reason, one log line and one event;
# an address bluetoothd does not know is refused clearly.
. "$REPO/Tests/vm/tests/tag_setup.bash"
# Ringing the tag: Alert Level 2, then 0.
"$EARSHOT" ring --socket $SOCK keys >ring.out 2>&1
check "earshot ring keys answered" grep -q "\"target\":\"keys\",\"device\":\"$a0\",\"level\":2" ring.out
check "the tag's Immediate Alert level is 2" grep -q '"event": "write", "char": "immediate_alert", "value": \[2\]' tag.out
"$EARSHOT" ring --socket $SOCK --stop keys >stop.out 2>&1
check "earshot ring --stop keys answered" grep -q '"level":0' stop.out
check "the tag's Immediate Alert level is 0" grep -q '"event": "write", "char": "immediate_alert", "value": \[0\]' tag.out

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
