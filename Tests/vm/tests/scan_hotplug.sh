# The adapter goes down and comes back, then is removed (btvirt killed) and
# comes back: earshot reports each change, keeps running and scans again.
start_btvirt -l2
advertise_ibeacon hci1
start_advertising_loop hci1
"$EARSHOT" scan --adapter hci0 >scan.out 2>scan.err &
SCAN=$!
beacons() { [ "$(beacon_lines scan.out | wc -l)" -ge "$1" ]; }
check "beacons arrive" wait_for 20 beacons 1

hciconfig hci0 down
check "adapter down is reported" wait_for 10 grep -q 'hci0 is down (powered off); scanning resumes' scan.err
hciconfig hci0 up
scanning_count() { [ "$(grep -c 'hci0: scanning' scan.err)" -ge "$1" ]; }
check "scanning resumes when it is powered on" wait_for 10 scanning_count 2
n=$(beacon_lines scan.out | wc -l)
check "beacons arrive after power-on" wait_for 20 beacons $((n + 1))

stop_advertising_loop hci1
stop_btvirt
check "adapter removal is reported" wait_for 10 grep -q 'hci0 was removed; scanning resumes when it comes back' scan.err
check "earshot keeps running without an adapter" kill -0 $SCAN
sleep 2
check "earshot still running 2 s later" kill -0 $SCAN

start_btvirt -l2
advertise_ibeacon hci1
start_advertising_loop hci1
check "scanning resumes when the adapter comes back" wait_for 20 scanning_count 3
n=$(beacon_lines scan.out | wc -l)
check "beacons arrive again" wait_for 20 beacons $((n + 1))
kill -INT $SCAN
wait $SCAN
check "exit status 0 after SIGINT" [ $? -eq 0 ]
cat scan.err
stop_advertising_loop hci1
stop_btvirt
