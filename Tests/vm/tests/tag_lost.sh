# Key-finder tags (tag_setup.bash): the tag goes out of reach (its
# controller powered off, its GATT application gone) and comes back.
# Shown: tag_lost with its hook and the on_lost alert (the laptop rings as
# tag:keys), then reconnects with backoff: tag_back with its hook, the
# button subscribed again, the loss alert withdrawn.
TAG_EXTRA="on_lost = alert"
. "$REPO/Tests/vm/tests/tag_setup.bash"
# The tag goes away: tag_lost and its hook; back: tag_back and a reconnect.
mgmt -i hci0 power off
kill $TAG; wait $TAG
check "tag_lost published" wait_for 30 grep -q '"event":"tag_lost","tag":"keys"' events.out
check "the tag_lost hook ran" wait_for 10 grep -q "tag_lost keys $a0" hooks.out
"$EARSHOT" status --socket $SOCK >lost.json
cat lost.json
check "status: out of reach, reconnecting" grep -qE '"tags":\[\{"name":"keys","address":"[0-9A-F:]*","state":"(waiting|connecting)"' lost.json
check "on_lost = alert rang the laptop as tag:keys" grep -q '"state":"ringing","requesters":\["tag:keys"\]' events.out
mgmt -i hci0 power on
tag_up 2
check "tag_back published after the reconnect" wait_for 90 grep -q '"event":"tag_back","tag":"keys"' events.out
check "the tag_back hook ran" wait_for 10 grep -q "tag_back keys" hooks.out
check "the button subscribed again" wait_for 10 bash -c "[ \$(grep -c '\"char\": \"button\", \"on\": true' tag.out) -ge 2 ]"
check "its return withdrew the loss alert (a device stop)" wait_for 10 grep -q '"state":"idle".*"last_end":"device_stop"' events.out
check "the agent still serves" kill -0 $AGENT

kill -INT $AGENT
wait $AGENT
check "earshot run stopped cleanly" [ $? -eq 0 ]
kill $TAG 2>/dev/null
cat tag.out events.out agent.log
grep -iE 'error|fail' bluetoothd.log | tail -20
stop_btvirt
