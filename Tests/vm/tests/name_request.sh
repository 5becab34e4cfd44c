# Looking harder before a phone is away (issue 25): `earshot monitor` on
# hci0 watches region "phone" = hci2's public address; hci2 sends a plain
# advertisement in a loop. When it stops advertising but is still there,
# the region's exit waits for a page: btmon shows Remote Name Requests to
# hci2 (at most one per 15 s while it answers) and the region stays inside
# for 4x exit_after. (The emulator answers a page to any of its controllers,
# powered or not, so the unanswered side, four pages and the exit, is
# covered by NameRequestTests and the closed loop of earshot simulate radio.)
EXIT_AFTER=8
start_btvirt -l3
wait_for 10 hci_exists hci2 && hciconfig hci2 up
phone=$(adapter_address hci2)
# hci2: ADV_NONCONN_IND, public; flags + a short name (not an iBeacon).
hcitool -i hci2 cmd 0x08 0x0006 a0 00 a0 00 03 00 00 00 00 00 00 00 00 07 00 >/dev/null
hcitool -i hci2 cmd 0x08 0x0008 0a 02 01 06 06 09 70 68 6f 6e 65 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 >/dev/null
cat >name.conf <<CONF
[scanner]
adapter = hci0
duty = full
[region "phone"]
device = $phone
exit_after = $EXIT_AFTER
[state]
path = /tmp/name.state
CONF
btmon -w trace.btsnoop >/dev/null 2>&1 &
BTMON=$!
rm -f /tmp/adv.stop /tmp/adv.hci2
noted_advertising_loop hci2 &
ADV=$!
"$EARSHOT" monitor --config name.conf --no-range >mon.out 2>mon.err &
MON=$!
check "phone inside" wait_for 60 grep -q '"event":"state","region":"phone","state":"inside"' mon.out
touch /tmp/adv.stop
wait $ADV
sleep $((EXIT_AFTER * 4))
check "quiet but answering its pages: no exit in 4x exit_after" \
  bash -c "! grep -q '\"event\":\"exit\"' mon.out"

kill -INT $MON
wait $MON
check "exit status 0 after SIGINT" [ $? -eq 0 ]
kill $BTMON 2>/dev/null; wait $BTMON 2>/dev/null
btmon -r trace.btsnoop >trace.txt 2>&1
# The requests' times (btmon's offsets) and their answers.
grep '< HCI Command: Remote Name Request' trace.txt | awk '{print $NF}' >requests.txt
n=$(wc -l <requests.txt)
check "btmon: Remote Name Requests to hci2 ($n)" [ "$n" -ge 2 ]
answered=$(grep -A2 '> HCI Event: Remote Name Req' trace.txt | grep -c 'Status: Success')
check "btmon: each answered ($answered of $n)" [ "$answered" -eq "$n" ]
check "at most one per 15 s while it answers" \
  awk 'NR > 1 && $1 - prev < 14.5 { bad = 1 } { prev = $1 } END { exit bad }' requests.txt
cat mon.out mon.err
stop_btvirt
