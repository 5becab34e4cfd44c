# The Bluetooth proxy (ESPHome native API) live: `earshot run` scans hci0
# while hci1 advertises the region's iBeacon; HA's own client library
# (aioesphomeapi, from the test venv) connects with the key and receives
# the beacon's advertisements byte for byte (the AD hci1 was given), while
# the region monitor keeps deciding: inside with the client connected, and
# an exit exit_after after the advertiser stops.
# Then the scanner mode, as Home Assistant asks for it
# (FEATURE_STATE_AND_MODE): a client asks for active scanning, withdraws
# it, asks again and leaves while another client listens; the kernel's
# trace (btmon) shows Earshot's scan parameters go active (scan type 0x01)
# and back to passive each time, each switch stamped between the request
# and the state message telling the client, and after the agent exits the
# kernel's scan is off with its parameters reset, as after any scan.
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
btmon -w trace.btsnoop >/dev/null 2>&1 &
BTMON=$!
SOCK=/tmp/earshot.sock
"$EARSHOT" run --config /tmp/proxy.conf --socket $SOCK --state-dir /tmp/earshot-state --no-audio >run.log 2>&1 &
RUN=$!
check "the proxy listens (encrypted)" wait_for 30 grep -q "esphome: Bluetooth proxy 'vm-laptop' on 127.0.0.1:16053 (encrypted)" run.log
"$EARSHOT" events --socket $SOCK --topics regions >events.out 2>&1 &
EVENTS=$!
"$PY" "$REPO/Tests/vm/tests/esphome_live_client.py" 16053 "$(cat /tmp/esphome.key)" "$beacon" 20 >client.out 2>client.err &
CLIENT=$!
# Scanner mode, alongside (aioesphomeapi takes tens of seconds to start
# under TCG on a loaded machine). WAIT bounds each switch as the client
# sees it: a few HCI commands, each a fraction of a second under TCG.
WAIT=45
"$PY" "$REPO/Tests/vm/tests/esphome_live_client.py" modes 16053 "$(cat /tmp/esphome.key)" 2 $WAIT >modes.out 2>modes.err &
MODES=$!
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

wait $MODES
check "the client asked for active, passive, active and saw the state follow each time; the other was told passive when it left" [ $? -eq 0 ]
cat modes.out
# The modes the state messages carried (KEY: the asker's "mode", the
# listener's "observed"), in order, repeats folded.
seen_modes() { python3 -c "
import json, sys
out = []
for l in open('modes.out'):
    r = json.loads(l)
    if sys.argv[1] in r and (not out or out[-1] != r[sys.argv[1]]): out.append(r[sys.argv[1]])
print(' '.join(map(str, out)))" "$1"; }
check "state messages to the asker: passive, active, passive, active ($(seen_modes mode))" [ "$(seen_modes mode)" = "0 1 0 1" ]
check "state messages to the listener: passive, active, passive, active, passive ($(seen_modes observed))" \
  [ "$(seen_modes observed)" = "0 1 0 1 0" ]
check "every state message says running (2) and configured passive (0)" \
  python3 -c "
import json, sys
rs = [json.loads(l) for l in open('modes.out')]
rs = [r for r in rs if 'state' in r]
sys.exit(not rs or any(r['state'] != 2 or r['configured'] != 0 for r in rs))"
check "the agent logged the client's active request" grep -q 'asks for active scanning' run.log

stop_advertising_loop hci1
check "the monitor still decides: exit after the advertiser stops" \
  wait_for $((EXIT_AFTER + 20)) grep -q '"event":"exit","region":"desk"' events.out
check "the agent still runs" kill -0 $RUN
kill -INT $RUN
wait $RUN
check "exit status 0 after SIGINT" [ $? -eq 0 ]
kill $EVENTS 2>/dev/null
sleep 0.5
kill -INT $BTMON; wait $BTMON 2>/dev/null
btmon -r trace.btsnoop >/tmp/trace.txt 2>&1  # tmpfs: 9p is slow for many small writes
scan_params /tmp/trace.txt >params.txt
cat params.txt
# Earshot's own scans (60 ms windows; 10 ms / 10 ms is the reset at exit).
types=$(awk '!($2 == "10.000" && $3 == "10.000") { if ($1 != last) printf "%s%s", (n++ ? " " : ""), $1; last = $1 }' params.txt)
check "btmon: scan type passive, active, passive, active, passive ($types)" \
  [ "$types" = "Passive Active Passive Active Passive" ]
check "btmon: the active scan parameters say scan type 0x01" grep -q 'Type: Active (0x01)' /tmp/trace.txt
# When each switch reached the controller: the kernel's stamp on each of
# hci0's scan parameters commands, read from the btsnoop file itself (the
# guest's wall clock, as the client's stamps), as "EPOCH TYPE INTERVAL".
# Each request is followed by a command of its type before the client is
# told that mode (the state says what the controller took), and the
# client's leaving by a passive one before the listener is told passive.
# Order only, no bound: the machine may be loaded.
python3 - trace.btsnoop >stamped.txt <<'PY'
import struct, sys
# btsnoop: a 16-byte header, then records (lengths, flags, drops, time in
# us since year 0); btmon's flags are index << 16 | opcode, 2 a command.
d = open(sys.argv[1], "rb").read()
o = 16
while o + 24 <= len(d):
    _, size, flags, _, stamp = struct.unpack(">IIIIq", d[o:o + 24])
    p = d[o + 24:o + 24 + size]
    o += 24 + size
    if flags != 2 or len(p) < 3:  # hci0 (index 0), commands only
        continue
    op = struct.unpack("<H", p[:2])[0]
    if op == 0x2041 and len(p) >= 11:  # extended: own address, filter, PHYs, then the 1M entry
        kind, interval = p[6], struct.unpack("<H", p[7:9])[0]
    elif op == 0x200B and len(p) >= 8:
        kind, interval = p[3], struct.unpack("<H", p[4:6])[0]
    else:
        continue
    print("%.6f %s %.3f" % ((stamp - 0x00DCDDB30F2F8000) / 1e6, ("Passive", "Active")[kind & 1], interval * 0.625))
PY
switches_in_order() { python3 -c "
import json, sys
params = [l.split() for l in open('stamped.txt')]
params = [(float(t), k, i) for t, k, i in params if i != '10.000']
rs = [json.loads(l) for l in open('modes.out')]
names = {0: 'Passive', 1: 'Active'}
asked = left = told = None
ok = 0
for r in rs:
    if 'asked' in r: asked = r
    elif 'mode' in r and asked and r['mode'] == asked['asked']:
        found = [t for t, k, _ in params if asked['t'] < t < r['t'] and k == names[r['mode']]]
        print('asked %s at %.3f, controller %s, told at %.3f' % (names[r['mode']], asked['t'], ['%.3f' % t for t in found], r['t']))
        ok += bool(found); asked = None
    elif 'leaving' in r:
        left = r['leaving']
    elif r.get('observed') == 0 and left and told is None:
        told = r['t']
        found = [t for t, k, _ in params if left < t < told and k == 'Passive']
        print('left at %.3f, controller %s, the listener told passive at %.3f' % (left, ['%.3f' % t for t in found], told))
        ok += bool(found)
sys.exit(ok != 4)"; }
check "btmon: each switch reached the controller after its request and before the client was told" switches_in_order
check "btmon: the last scan parameters are the reset to passive 10 ms / 10 ms" \
  [ "$(tail -1 params.txt)" = "Passive 10.000 10.000" ]
check "btmon: the last scan enable command is a disable" \
  sh -c "grep -A1 -E 'HCI Command: .*\(0x08\|0x00(0c|42)\) plen' /tmp/trace.txt | grep -E 'Enabled \(0x01\)|Disabled \(0x00\)' | tail -1 | grep -q 'Disabled (0x00)'"
check "btmon: no scan command refused" bash -c "! grep -B1 -A2 'LE Set.*Scan' /tmp/trace.txt | grep -q 'Status: Command Disallowed'"
# The emulator refuses scan parameters while scanning: 00 means the scan is off.
if grep -q 'Set Extended Scan Parameters' /tmp/trace.txt; then
  s=$(hci_cmd hci0 0x08 0x0041 00 00 01 00 20 00 20 00)
else
  s=$(hci_cmd hci0 0x08 0x000b 00 20 00 20 00 00 00)
fi
check "the kernel's scan is off after the agent exits (Set Scan Parameters status $s)" [ "$s" = 00 ]
cat run.log client.err modes.err
cp /tmp/trace.txt .
stop_btvirt
