# Key-finder tags end to end: one bluetoothd serves both emulated
# controllers; on hci0 a test GATT application (tag_peripheral.py, through
# python3-dbus) plays an iTag (button 0xFFE0/0xFFE1, Immediate Alert, Link
# Loss, Battery) and advertises; on hci1 `earshot run` keeps [tag "keys"]
# connected through bluetoothd's GATT client (D-Bus), its alert on the
# snd-aloop loopback. Shown: a press rings the laptop (recorded), a second
# press is found; `earshot ring keys` writes 2, `--stop` 0; a malformed
# notification and a refused write are one log line and an event; the tag
# powered off is tag_lost (with its hook), back is tag_back and a reconnect.
. "$RESULTS/env"
mkdir -p /run/dbus
dbus-daemon --system --nofork --nopidfile >dbus.log 2>&1 &
wait_for 10 test -S /run/dbus/system_bus_socket || fail "dbus-daemon did not start"
start_btvirt -l2
btmon -w trace.btsnoop >/dev/null 2>&1 &
/usr/libexec/bluetooth/bluetoothd -n -d >bluetoothd.log 2>&1 &
a0=$(hciconfig hci0 | awk '/BD Address/ {print $3}')
a1=$(hciconfig hci1 | awk '/BD Address/ {print $3}')
wait_for 30 bluetoothd_lists "$a0" "$a1" || fail "bluetoothd does not list hci0 and hci1"
for i in hci0 hci1; do
  for c in "power off" "le on" "bredr off" "connectable on" "power on"; do mgmt -i $i $c; done
done

tag_up() {
  /usr/bin/python3 "$REPO/Tests/vm/tests/tag_peripheral.py" hci0 >>tag.out 2>>tag.err &
  TAG=$!
  wait_for 20 bash -c "[ \$(grep -c '\"ready\"' tag.out) -ge $1 ]" || { fail "the tag did not register ($1)"; cat tag.out tag.err; }
}
tag_up 1

SOCK=/tmp/earshot.sock
cat >tag.conf <<CONF
[tag "keys"]
address = $a0
adapter = hci1
second_press = found
link_loss_alert = high
hook_lost = /bin/sh -c "echo \$EARSHOT_EVENT \$EARSHOT_TAG \$EARSHOT_ADDRESS >>$PWD/hooks.out"
hook_back = /bin/sh -c "echo \$EARSHOT_EVENT \$EARSHOT_TAG >>$PWD/hooks.out"
[audio]
device = plughw:Loopback,0
mixer_card = hw:Dummy
mixer_control = Master
sound = beep
frequency = 1000
ramp = 0
[find-phone]
volume = 0.9
timeout = 60
[shutter]
device = /dev/video9
[media]
library = /tmp/nomusic
CONF
"$EARSHOT" run --config tag.conf --socket $SOCK --state-dir /tmp/earshot-state >agent.log 2>&1 &
AGENT=$!
"$EARSHOT" events --socket $SOCK --topics find,tags >events.out 2>&1 &
check "the agent connected the tag through bluetoothd" wait_for 60 grep -q 'tags: tag keys: connected' agent.log
check "tag_connected published" wait_for 5 grep -q '"event":"tag_connected","tag":"keys"' events.out
check "the agent subscribed to the button (0xFFE1)" wait_for 10 grep -q '"event": "notify", "char": "button", "on": true' tag.out
check "Link Loss alert level 2 written on connect" wait_for 10 grep -q '"event": "write", "char": "link_loss", "value": \[2\]' tag.out
wait_for 10 grep -q '"char": "battery"' tag.out
"$EARSHOT" status --socket $SOCK >status1.json
cat status1.json
check "status: the tag is connected, battery 87 %" grep -q '"tags":\[{"name":"keys","address":"'"$a0"'","state":"connected","battery":87' status1.json

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
check "the ring was recorded on the loopback (about 1000 Hz)" awk '/Rough/ {exit !($3 > 950 && $3 < 1050)}' stat.out
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

# The tag goes away: tag_lost and its hook; back: tag_back and a reconnect.
mgmt -i hci0 power off
kill $TAG; wait $TAG
check "tag_lost published" wait_for 30 grep -q '"event":"tag_lost","tag":"keys"' events.out
check "the tag_lost hook ran" wait_for 10 grep -q "tag_lost keys $a0" hooks.out
"$EARSHOT" status --socket $SOCK >lost.json
cat lost.json
check "status: waiting to reconnect" grep -q '"state":"waiting"' lost.json
sleep 3
mgmt -i hci0 power on
tag_up 2
check "tag_back published after the reconnect" wait_for 90 grep -q '"event":"tag_back","tag":"keys"' events.out
check "the tag_back hook ran" wait_for 10 grep -q "tag_back keys" hooks.out
check "the button subscribed again" wait_for 10 bash -c "[ \$(grep -c '\"char\": \"button\", \"on\": true' tag.out) -ge 2 ]"
check "the agent still serves" kill -0 $AGENT

kill -INT $AGENT
wait $AGENT
check "earshot run stopped cleanly" [ $? -eq 0 ]
kill $TAG 2>/dev/null
cat tag.out events.out agent.log
grep -iE 'error|fail' bluetoothd.log | tail -20
stop_btvirt
