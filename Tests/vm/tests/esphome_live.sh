# The Bluetooth proxy (ESPHome native API) live: `earshot run` scans hci0
# while hci1 advertises the region's iBeacon; HA's own client library
# (aioesphomeapi, from the test venv) connects with the key and receives
# the beacon's advertisements byte for byte (the AD hci1 was given), while
# the region monitor keeps deciding: inside with the client connected, and
# an exit exit_after after the advertiser stops.
EXIT_AFTER=5
PY=/usr/local/lib/earshot-test/esphome-venv/bin/python
check "the test venv has aioesphomeapi (scripts/deps.sh test)" "$PY" -c 'import aioesphomeapi'
start_btvirt -l2
advertise_ibeacon hci1
start_advertising_loop hci1
beacon=$(adapter_address hci1)
head -c 32 /dev/urandom | base64 >/tmp/esphome.key
chmod 600 /tmp/esphome.key
desk_config /tmp/proxy.conf "$EXIT_AFTER" /tmp/proxy.state
cat >>/tmp/proxy.conf <<CONF
[esphome]
enabled = true
port = 16053
key_file = /tmp/esphome.key
name = vm-laptop
CONF
SOCK=/tmp/earshot.sock
"$EARSHOT" run --config /tmp/proxy.conf --socket $SOCK --state-dir /tmp/earshot-state --no-audio >run.log 2>&1 &
RUN=$!
check "the proxy listens (encrypted)" wait_for 30 grep -q "esphome: Bluetooth proxy 'vm-laptop' on 127.0.0.1:16053 (encrypted)" run.log
"$EARSHOT" events --socket $SOCK --topics regions >events.out 2>&1 &
EVENTS=$!
"$PY" "$REPO/Tests/vm/tests/esphome_live_client.py" 16053 "$(cat /tmp/esphome.key)" "$beacon" 20 >client.out 2>client.err &
CLIENT=$!
check "aioesphomeapi connected with the key and subscribed" wait_for 60 grep -q subscribed client.out
inside() { grep -q '"region":"desk","state":"inside"' events.out || "$EARSHOT" status --socket $SOCK 2>/dev/null | grep -q '"region":"desk","state":"inside"'; }
check "the region is inside while the proxy serves" wait_for 30 inside
wait $CLIENT
check "the client ended cleanly" [ $? -eq 0 ]
result=$(tail -1 client.out)
echo "client: ${result:0:400}"
want="$(ibeacon_ad "$BEACON_UUID" "$BEACON_MAJOR" "$BEACON_MINOR" "$BEACON_POWER" | tr -d ' ' | tr 'A-F' 'a-f')"
field() { python3 -c "import json,sys; r=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$result" "$1"; }
check "device info: passive scan and raw advertisements (flags $(field 'r["flags"]'))" \
  [ "$(field 'r["flags"] & 33')" = 33 ]
check "the beacon's advertisements arrived ($(field 'len(r["advertisements"])') from $beacon)" \
  [ "$(field 'len(r["advertisements"])')" -ge 5 ]
check "byte for byte the AD hci1 advertises" \
  [ "$(field 'sorted(set(a["data"] for a in r["advertisements"]))')" = "['$want']" ]
check "the emulator's unavailable RSSI as -127 (Home Assistant's no-RSSI value)" \
  [ "$(field 'sorted(set(a["rssi"] for a in r["advertisements"]))')" = "[-127]" ]
check "address type public (0) on every one" [ "$(field 'sorted(set(a["type"] for a in r["advertisements"]))')" = "[0]" ]
stop_advertising_loop hci1
check "the monitor still decides: exit after the advertiser stops" \
  wait_for $((EXIT_AFTER + 20)) grep -q '"event":"exit","region":"desk"' events.out
check "the agent still runs" kill -0 $RUN
kill -INT $RUN
wait $RUN
check "exit status 0 after SIGINT" [ $? -eq 0 ]
kill $EVENTS 2>/dev/null
cat run.log client.err
stop_btvirt
