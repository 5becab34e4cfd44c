# earshot scan on hci0 receives the iBeacon hci1 advertises: extended
# controllers (btvirt -l2), automatic and forced command sets.
start_btvirt -l2
advertise_ibeacon hci1
start_advertising_loop hci1

"$EARSHOT" scan --adapter hci0 --duration 2 >dur.out 2>dur.err
check "scan exits 0 after --duration" [ $? -eq 0 ]
scan_for_beacons 3 ext.out ext.err --adapter hci0 --write ext.btsnoop
check "scan exits 0 after SIGINT" [ $? -eq 0 ]
check "auto-selection picks extended commands on btvirt -l2, passive by default" grep -q 'hci0: scanning (extended commands, passive)' ext.err
n=$(beacon_lines ext.out | wc -l)
check "extended scan: iBeacon with UUID, major, minor, power ($n lines)" [ "$n" -ge 2 ]
rssi_null() { beacon_lines ext.out | head -1 | grep -q '"rssi":null'; }
check "RSSI field present (btvirt reports 127 = unavailable: null)" rssi_null
check "report arrived as a legacy PDU in an extended report" grep -q '"event_type":"adv_nonconn_ind"' ext.out
check "JSON line has t, address and address_type" grep -qE '^\{"t":[0-9]+\.[0-9]{6},"address":"[0-9A-F:]{17}","address_type":"public",' ext.out
btmon -r ext.btsnoop >ext.btmon 2>&1
# btvirt answers an extended scan with legacy LE Advertising Reports when
# the advertiser uses legacy advertising (a real controller sends extended ones).
check "--write: btmon -r reads the recording" grep -qE 'LE (Extended )?Advertising Report' ext.btmon
check "--write: the commands Earshot sent are recorded" grep -q 'LE Set Extended Scan Enable' ext.btmon
cat ext.err

scan_for_beacons 2 leg.out leg.err --adapter hci0 --legacy
check "--legacy forces legacy commands" grep -q 'hci0: scanning (legacy commands, passive)' leg.err
n=$(beacon_lines leg.out | wc -l)
check "legacy scan: iBeacon received ($n lines)" [ "$n" -ge 2 ]

"$EARSHOT" scan --duration 2 >auto.out 2>auto.err
check "no --adapter: the first LE adapter (hci0) is used" grep -q '^earshot scan: hci0: scanning' auto.err

# Wait for beacons rather than a fixed time: under TCG on a loaded machine
# two seconds may pass before the first report.
"$EARSHOT" scan --adapter hci0 --active --all --format json >act.out 2>act.err &
pid=$!
wait_for 30 grep -q "\"uuid\":\"$BEACON_UUID\"" act.out
kill -INT "$pid" 2>/dev/null; wait "$pid"
check "--active scans actively" grep -q 'hci0: scanning (extended commands, active)' act.err
check "--all prints the report with its AD structures" grep -q '"ad":\[{"type":"flags"' act.out

stop_advertising_loop hci1

# A true extended advertisement arrives in an LE Extended Advertising Report.
advertise_ibeacon_extended hci1
start_extended_advertising_loop hci1
scan_for_beacons 2 xadv.out xadv.err --adapter hci0
n=$(beacon_lines xadv.out | grep -c '"event_type":"ext"')
check "extended advertising: iBeacon in extended reports, event_type ext ($n lines)" [ "$n" -ge 2 ]
kill "$ADV_PID"; wait "$ADV_PID" 2>/dev/null
stop_btvirt
