# After earshot exits (by --duration, SIGINT or SIGTERM) the scan it
# started is disabled and the scan parameters are back at the spec
# defaults. HCI cannot read scan parameters back, so the read-back is the
# kernel's HCI monitor trace (btmon) plus a probe: the emulator refuses LE
# Set Scan Parameters with Command Disallowed while scanning is enabled.
start_btvirt -l2
btmon -w trace.btsnoop >/dev/null 2>&1 &
BTMON=$!
sleep 0.5

probe_params() {  # status of a Set Scan Parameters on hci0: 00 = scanning is off
  if [ "$1" = extended ]; then
    hci_cmd hci0 0x08 0x0041 00 00 01 00 10 00 10 00
  else
    hci_cmd hci0 0x08 0x000b 00 10 00 10 00 00 00
  fi
}

for mode in extended legacy; do
  for how in duration INT TERM; do
    if [ $how = duration ]; then
      "$EARSHOT" scan --adapter hci0 --$mode --duration 1.5 >/dev/null 2>$mode-$how.err
      rc=$?
    else
      "$EARSHOT" scan --adapter hci0 --$mode >/dev/null 2>$mode-$how.err &
      pid=$!
      wait_for 10 grep -q 'scanning' $mode-$how.err
      sleep 0.5
      kill -$how $pid
      wait $pid
      rc=$?
    fi
    check "$mode, stopped by $how: exit status 0" [ $rc -eq 0 ]
    s=$(probe_params $mode)
    check "$mode, stopped by $how: scanning is off afterwards (Set Scan Parameters status $s)" [ "$s" = 00 ]
  done
done
sleep 0.5
kill -INT $BTMON; wait $BTMON 2>/dev/null
btmon -r trace.btsnoop > trace.txt 2>&1

# In the trace, every scan enable Earshot sent is followed by a disable and
# a parameter reset to passive, 10 ms / 10 ms, all successful.
enables=$(grep -A1 -E 'HCI Command: LE Set (Extended )?Scan Enable' trace.txt | grep -c 'Scanning: Enabled\|Scan enable: Enabled')
disables=$(grep -A1 -E 'HCI Command: LE Set (Extended )?Scan Enable' trace.txt | grep -c 'Scanning: Disabled\|Scan enable: Disabled')
check "trace: as many scan disables as enables ($enables/$disables)" [ "$enables" -eq 6 -a "$disables" -ge 6 ]
last_params=$(grep -A8 -E 'HCI Command: LE Set (Extended )?Scan Param' trace.txt | tail -8)
echo "$last_params"
check "trace: scan parameters reset to passive 10 ms / 10 ms" bash -c "grep -q 'Type: Passive' <<<\"\$0\" && grep -q 'Interval: 10.000 msec' <<<\"\$0\" && grep -q 'Window: 10.000 msec' <<<\"\$0\"" "$last_params"
check "trace: no Earshot command failed" bash -c "! grep -B1 -A2 'LE Set.*Scan' trace.txt | grep -q 'Status: Command Disallowed'"
stop_btvirt
