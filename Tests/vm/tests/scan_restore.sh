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
    hci_cmd hci0 0x08 0x0041 00 00 01 00 20 00 20 00
  else
    hci_cmd hci0 0x08 0x000b 00 20 00 20 00 00 00
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
# (btmon shortens command names; match the opcodes: 0x000c legacy, 0x0042 extended.)
enables=$(grep -A1 -E 'HCI Command: .*\(0x08\|0x00(0c|42)\) plen' trace.txt | grep -c 'Enabled (0x01)')
disables=$(grep -A1 -E 'HCI Command: .*\(0x08\|0x00(0c|42)\) plen' trace.txt | grep -c 'Disabled (0x00)')
check "trace: as many scan disables as enables ($enables/$disables)" [ "$enables" -eq 6 -a "$disables" -ge 6 ]
# Earshot scans at 60 ms / 60 ms; its reset writes 10 ms / 10 ms passive
# (the probe above uses 20 ms, so it cannot be mistaken for the reset).
resets=$(grep -A8 -E 'HCI Command: .*\(0x08\|0x00(0b|41)\) plen' trace.txt | grep -A2 'Type: Passive' | grep -A1 'Interval: 10.000 msec' | grep -c 'Window: 10.000 msec')
check "trace: scan parameters reset to passive 10 ms / 10 ms after each run ($resets)" [ "$resets" -eq 6 ]
check "trace: no Earshot command failed" bash -c "! grep -B1 -A2 'LE Set.*Scan' trace.txt | grep -q 'Status: Command Disallowed'"
stop_btvirt
