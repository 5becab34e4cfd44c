# With bluetoothd (and a system D-Bus) running and discovering on hci0,
# earshot's Set Scan Parameters is refused (Command Disallowed): it says so,
# reads the reports already flowing, and leaves bluetoothd's scan running.
start_system_bus
start_bluetoothd bluetoothd.log
start_btvirt -L -l2
btmon -w trace.btsnoop >/dev/null 2>&1 &
BTMON=$!
addr=$(adapter_address hci0)
wait_for 20 bluetoothd_lists "$addr" || fail "bluetoothd does not list hci0"

mkfifo /tmp/ctl
bluetoothctl </tmp/ctl >ctl.out 2>&1 &
exec 3>/tmp/ctl
echo "select $addr" >&3
echo "power on" >&3
echo "scan on" >&3
check "bluetoothd is discovering on hci0" wait_for 15 grep -q 'Discovery started' ctl.out

advertise_ibeacon hci1
start_advertising_loop hci1
"$EARSHOT" scan --adapter hci0 --duration 5 >scan.out 2>scan.err
rc=$?
cat scan.err
check "exit status 0" [ $rc -eq 0 ]
check "says another program is scanning and it reads those reports" grep -q 'hci0: another program (bluetoothd?) is already scanning (Command Disallowed); reading the reports' scan.err
n=$(beacon_lines scan.out | wc -l)
check "iBeacons from bluetoothd's scan ($n lines)" [ "$n" -ge 1 ]
check "earshot did not start a scan of its own (so it has none to undo)" bash -c "! grep -q 'hci0: scanning (' scan.err"
echo "show $addr" >&3
sleep 1
check "bluetoothd still discovering" grep -q 'Discovering: yes' ctl.out
echo "scan off" >&3
check "bluetoothd stopped discovering" wait_for 10 grep -q 'Discovery stopped' ctl.out

# The other way round: earshot scans first; bluetoothd's discovery takes the
# scan over (the kernel disables Earshot's scan and starts its own), finds
# a device it had forgotten, earshot reads its reports, and takes scanning
# back when discovery stops.
# (bluetoothd drops a device found by discovery once discovery stops.)
dev=$(adapter_address hci1)
check "bluetoothd has forgotten the advertiser" wait_for 10 grep -q "DEL.*Device $dev" ctl.out
found() { [ "$(grep -c "NEW.*Device $dev" ctl.out)" -ge 2 ]; }
"$EARSHOT" scan --adapter hci0 >both.out 2>both.err &
SCAN=$!
check "earshot scans on its own first" wait_for 10 grep -q 'hci0: scanning (legacy commands' both.err
echo "scan on" >&3
check "discovery started while earshot scans" wait_for 15 bash -c "[ \$(grep -c 'Discovery started' ctl.out) -ge 2 ]"
check "bluetoothd's discovery finds the advertiser again while earshot scans" wait_for 15 found
check "earshot notices and reads bluetoothd's reports" wait_for 10 grep -q 'already scanning' both.err
echo "scan off" >&3
scans() { [ "$(grep -c 'hci0: scanning' both.err)" -ge 2 ]; }
check "earshot takes scanning back when discovery stops" wait_for 15 scans
n=$(beacon_lines both.out | wc -l)
more() { [ "$(beacon_lines both.out | wc -l)" -gt "$n" ]; }
check "beacons keep arriving" wait_for 15 more
kill -INT $SCAN; wait $SCAN
cat both.err
echo quit >&3
exec 3>&-

# What the cooperative route would give Earshot (docs/scanning.md): the
# kernel's discovery for bluetoothd scans actively (scan requests to every
# scannable advertiser) with its window equal to its interval, at full duty,
# whoever asks; Earshot's own scans are passive.
kill $BTMON 2>/dev/null; wait $BTMON 2>/dev/null
btmon -r trace.btsnoop >trace.txt 2>&1
scan_params trace.txt >params.txt
sort params.txt | uniq -c
check "btmon: the kernel's discovery scans actively" grep -q '^Active ' params.txt
check "btmon: ... at full duty (window = interval)" \
  awk '$1 == "Active" { n++; if ($2 != $3) bad = 1 } END { exit !(n > 0 && !bad) }' params.txt
check "btmon: every scan earshot set up is passive" grep -q '^Passive ' params.txt
stop_advertising_loop hci1
stop_btvirt
