# `earshot ring ADDRESS` for a bonded device that is not a tag (earbuds,
# watches): one bluetoothd serves both emulated controllers; on hci0 the
# test GATT application (tag_peripheral.py) stands in for any device with
# an Immediate Alert service, on hci1 `earshot run` has no [tag] section.
# Shown: before pairing it is refused as not bonded; after bluetoothd
# pairs and bonds it (Device1.Pair, confirmed by `earshot ble-agent
# --accept`), `earshot ring ADDRESS` makes its Alert Level 2 and `--stop`
# 0, answered with the address and level and logged by the agent.
. "$RESULTS/env"
# The device is found by a discovery that ends when its owner (busctl)
# leaves the bus; bluetoothd then drops an unpaired device after
# TemporaryTimeout (30 s by default), too soon under TCG.
printf '[General]\nTemporaryTimeout = 600\n' >main.conf
bluetoothd_with_two_controllers 30 -d -f main.conf
le_only "sc on" "bondable on" "power on"
"$EARSHOT" ble-agent --accept >agent.out 2>agent.err &
wait_for 30 grep -q '"ready"' agent.out || { fail "the pairing agent did not register"; cat agent.out agent.err; }
/usr/bin/python3 "$REPO/Tests/vm/tests/tag_peripheral.py" hci0 >device.out 2>device.err &
DEVICE=$!
wait_for 60 grep -q '"ready"' device.out || { fail "the device did not register"; cat device.out device.err; }

SOCK=/tmp/earshot.sock
cat >ring.conf <<CONF
[audio]
device = plughw:Loopback,0
mixer_card = hw:Dummy
mixer_control = Master
[shutter]
device = /dev/video9
[media]
library = /tmp/nomusic
CONF
"$EARSHOT" run --config ring.conf --socket $SOCK --state-dir /tmp/earshot-state >run.log 2>&1 &
RUN=$!
wait_for 20 test -S $SOCK || fail "the agent made no socket"

# bluetoothd on hci1 learns of the device by scanning for it.
dev=/org/bluez/hci1/dev_${a0//:/_}
bz() { busctl --timeout=60 call org.bluez "$@"; }
bz /org/bluez/hci1 org.bluez.Adapter1 SetDiscoveryFilter 'a{sv}' 1 Transport s le
bz /org/bluez/hci1 org.bluez.Adapter1 StartDiscovery
check "bluetoothd on hci1 found the device" wait_for 60 busctl introspect org.bluez "$dev" org.bluez.Device1
bz /org/bluez/hci1 org.bluez.Adapter1 StopDiscovery

"$EARSHOT" ring --socket $SOCK "$a0" >unbonded.out 2>&1
cat unbonded.out
check "before pairing: refused as not bonded" grep -q "$a0 is not bonded with this laptop: pair it first" unbonded.out
check "and nothing was written" bash -c "! grep -q '\"char\": \"immediate_alert\"' device.out"

bonded() { busctl get-property org.bluez "$dev" org.bluez.Device1 Bonded | grep -q true; }
bz "$dev" org.bluez.Device1 Pair >pair.out 2>&1
cat pair.out
check "bluetoothd paired and bonded the device" wait_for 10 bonded
# The pairing left the link up: once bluetoothd has resolved its services
# (slow under TCG; reconnecting a bonded LE device here took over 30 s).
resolved() { busctl get-property org.bluez "$dev" org.bluez.Device1 ServicesResolved | grep -q true; }
check "its services are resolved" wait_for 90 resolved

# Not a tag: the agent finds its Immediate Alert service and writes.
"$EARSHOT" ring --socket $SOCK "$a0" >ring.out 2>&1
cat ring.out
check "earshot ring ADDRESS answered with the address and level 2" \
  grep -q "\"target\":\"$a0\",\"device\":\"$a0\",\"level\":2" ring.out
check "the device's Alert Level is 2" \
  wait_for 5 grep -q '"event": "write", "char": "immediate_alert", "value": \[2\]' device.out
"$EARSHOT" ring --socket $SOCK --stop "$a0" >stop.out 2>&1
cat stop.out
check "earshot ring --stop ADDRESS answered with level 0" \
  grep -q "\"target\":\"$a0\",\"device\":\"$a0\",\"level\":0" stop.out
check "the device's Alert Level is 0" \
  wait_for 5 grep -q '"event": "write", "char": "immediate_alert", "value": \[0\]' device.out
check "exactly two writes, 2 then 0" \
  [ "$(grep '"char": "immediate_alert"' device.out | sed -n 's/.*"value": \[\([0-9]*\)\].*/\1/p' | tr '\n' ' ')" = "2 0 " ]
check "the agent logged both" \
  [ "$(grep -cE "tags: rang $a0 at alert level [02]" run.log)" -eq 2 ]

kill -INT $RUN
wait $RUN
check "earshot run stopped cleanly" [ $? -eq 0 ]
kill $DEVICE 2>/dev/null
cat device.out run.log
grep -iE 'error|fail|bond|pair' bluetoothd.log | tail -20
stop_btvirt
