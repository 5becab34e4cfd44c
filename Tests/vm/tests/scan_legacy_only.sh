# LE-only 4.x-style controllers (btvirt -L -l2) have no extended scan
# commands: auto-selection must pick legacy, and --extended is refused by name.
start_btvirt -L -l2
advertise_ibeacon hci1
start_advertising_loop hci1

scan_for_beacons 2 leg.out leg.err --adapter hci0
check "scan exits 0" [ $? -eq 0 ]
check "auto-selection picks legacy commands on btvirt -L" grep -q 'hci0: scanning (legacy commands, passive)' leg.err
n=$(beacon_lines leg.out | wc -l)
check "legacy-only controller: iBeacon received ($n lines)" [ "$n" -ge 2 ]

"$EARSHOT" scan --adapter hci0 --extended --duration 2 >ext.out 2>ext.err
rc=$?
cat ext.err
check "--extended on a legacy-only controller fails (exit 1)" [ $rc -eq 1 ]
check "--extended: the HCI error is named (Unknown HCI Command)" grep -q 'refused LE Set Extended Scan Parameters: Unknown HCI Command (0x01)' ext.err
stop_advertising_loop hci1
stop_btvirt
