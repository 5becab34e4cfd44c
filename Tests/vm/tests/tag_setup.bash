# Shared by tag_itag.sh and tag_lost.sh (sourced): dbus, two emulated
# controllers, one bluetoothd; the tag (tag_peripheral.py) on hci0, then
# `earshot run` on hci1 with [tag "keys"] (plus $TAG_EXTRA in it, and
# $CONF_EXTRA at the end of the file), its events
# subscriber, and the first connect.
. "$RESULTS/env"
bluetoothd_with_two_controllers 30 -d
le_only "power on"

tag_up() {
  /usr/bin/python3 "$REPO/Tests/vm/tests/tag_peripheral.py" hci0 >>tag.out 2>>tag.err &
  TAG=$!
  wait_for 60 bash -c "[ \$(grep -c '\"ready\"' tag.out) -ge $1 ]" || { fail "the tag did not register ($1)"; cat tag.out tag.err; }
}
tag_up 1

SOCK=/tmp/earshot.sock
cat >tag.conf <<CONF
[tag "keys"]
address = $a0
adapter = hci1
second_press = found
${TAG_EXTRA:-}
link_loss_alert = high
hook_lost = /bin/sh -c "echo \$EARSHOT_EVENT \$EARSHOT_TAG \$EARSHOT_ADDRESS >>$PWD/hooks.out"
hook_back = /bin/sh -c "echo \$EARSHOT_EVENT \$EARSHOT_TAG >>$PWD/hooks.out"
$(alert_on_loopback)
[find-phone]
volume = 0.9
timeout = 60
[shutter]
device = /dev/video9
[media]
library = /tmp/nomusic
${CONF_EXTRA:-}
CONF
"$EARSHOT" run --config tag.conf --socket $SOCK --state-dir /tmp/earshot-state >agent.log 2>&1 &
AGENT=$!
wait_for 20 test -S $SOCK || fail "the agent made no socket"
"$EARSHOT" events --socket $SOCK --topics find,tags >events.out 2>&1 &
check "the agent connected the tag through bluetoothd" wait_for 120 grep -q 'tags: tag keys: connected' agent.log
check "tag_connected published" wait_for 5 grep -q '"event":"tag_connected","tag":"keys"' events.out
check "the agent subscribed to the button (0xFFE1)" wait_for 10 grep -q '"event": "notify", "char": "button", "on": true' tag.out
check "Link Loss alert level 2 written on connect" wait_for 10 grep -q '"event": "write", "char": "link_loss", "value": \[2\]' tag.out
battery_shown() {
  "$EARSHOT" status --socket $SOCK >status1.json
  grep -q '"tags":\[{"name":"keys","address":"'"$a0"'","state":"connected","battery":87' status1.json
}
check "status: the tag is connected, battery 87 %" wait_for 10 battery_shown
cat status1.json

