# With bluetoothd (and a system D-Bus) running and discovering on hci0,
# earshot's Set Scan Parameters is refused (Command Disallowed): it says so,
# reads the reports already flowing, and leaves bluetoothd's scan running.
mkdir -p /run/dbus
dbus-daemon --system --nofork --nopidfile >dbus.log 2>&1 &
wait_for 10 test -S /run/dbus/system_bus_socket || fail "dbus-daemon did not start"
/usr/libexec/bluetooth/bluetoothd -n >bluetoothd.log 2>&1 &
start_btvirt -L -l2
addr=$(hciconfig hci0 | awk '/BD Address/ {print $3}')
wait_for 10 bash -c "bluetoothctl list | grep -q $addr" || fail "bluetoothd does not list hci0"

mkfifo ctl
bluetoothctl <ctl >ctl.out 2>&1 &
exec 3>ctl
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
s=$(hci_cmd hci0 0x08 0x000b 00 20 00 20 00 00 00)
check "bluetoothd's scan is still enabled after earshot exits (probe status $s = Command Disallowed)" [ "$s" = 0c ]
echo "show $addr" >&3
sleep 1
check "bluetoothd still discovering" grep -q 'Discovering: yes' ctl.out
echo "scan off" >&3
echo quit >&3
exec 3>&-
stop_advertising_loop hci1
stop_btvirt
