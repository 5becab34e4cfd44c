# Sharing the radio (issue 25): `earshot run` live on hci0 with the
# default `[scanner] duty = automatic` while hci1 advertises the desk's
# iBeacon. The kernel's trace (btmon) shows a passive scan, first at full
# duty (60 ms every 60 ms), then sampled once the region is settled (the
# guest has no battery: the mains timing, 60 ms every 600 ms); status says
# the same. When the advertiser stops, the duty goes back to full before
# the region is declared outside, and falls again once it is.
# exit_after = auto: the monitor's own timeout, which the scheduler may
# stretch by 0.75 of a confirm span on mains, 14 s at most (a fixed exit_after is kept on time, but
# with the emulator's beacon slow under TCG its confirm span can be the
# whole exit_after, and then there is nothing to sample).
start_btvirt -l2
advertise_ibeacon hci1
desk_config /tmp/duty.conf auto /tmp/duty.state
sed -i 's/^adapter = hci0$/adapter = hci0\nduty = automatic/' /tmp/duty.conf
btmon -w trace.btsnoop >/dev/null 2>&1 &
BTMON=$!
rm -f /tmp/adv.stop /tmp/adv.hci1
noted_advertising_loop hci1 &
ADV=$!
SOCK=/tmp/duty.sock
"$EARSHOT" run --config /tmp/duty.conf --socket $SOCK --state-dir /tmp/duty-state --no-audio >run.log 2>&1 &
RUN=$!

# One line per status: wall time, the scan's duty, the desk's state.
( while kill -0 $RUN 2>/dev/null; do
    s=$("$EARSHOT" status --socket $SOCK 2>/dev/null) || { sleep 0.2; continue; }
    duty=$(printf '%s' "$s" | sed -n 's/.*"scan":{"policy":"[a-z]*","power":"[a-z]*","duty":\([0-9.]*\).*/\1/p')
    state=$(printf '%s' "$s" | sed -n 's/.*"region":"desk","state":"\([a-z]*\)".*/\1/p')
    echo "$(date +%s.%N) ${duty:-none} ${state:-none}" >>duty.log
    sleep 0.2
  done ) &
POLL=$!
sampled_inside() { grep -q ' 0.1 inside$' duty.log 2>/dev/null; }
check "status shows the policy and the power source" \
  wait_for 30 sh -c "'$EARSHOT' status --socket $SOCK | grep -q '\"scan\":{\"policy\":\"automatic\",\"power\":\"mains\"'"
check "the duty falls to 10 % once the desk is settled inside" wait_for 120 sampled_inside
check "no exit while the advertiser runs" [ "$(grep -c ' outside$' duty.log)" -eq 0 ]
# The timeout auto has learnt (status's exit_after).
EXIT_AFTER=$("$EARSHOT" status --socket $SOCK | sed -n 's/.*"region":"desk","state":"inside","exit_after":\([0-9.]*\).*/\1/p')
echo "exit_after (auto): $EXIT_AFTER"
EXIT_AFTER=${EXIT_AFTER:-30}

touch /tmp/adv.stop
wait $ADV
stopped=$(tail -1 /tmp/adv.hci1)
outside() { grep -q ' outside$' duty.log 2>/dev/null; }
check "the advertiser stopped: the desk exits" wait_for $(awk -v x="$EXIT_AFTER" 'BEGIN { printf "%d", 2 * x + 30 }') outside
sleep 3
kill -INT $RUN
wait $RUN
check "the agent exits 0 on SIGINT" [ $? -eq 0 ]
wait $POLL 2>/dev/null
# After the stop: full duty while still inside, before the first outside.
raised=$(awk -v s="$stopped" '$1 > s && $2 == "1" && $3 == "inside" { print $1; exit }' duty.log)
exited=$(awk '$3 == "outside" { print $1; exit }' duty.log)
check "full duty before the exit (raised ${raised:-never}, outside ${exited:-never})" \
  awk -v r="${raised:-0}" -v e="${exited:-0}" 'BEGIN { exit !(r > 0 && e > r) }'
# Sampling costs auto at most 0.75 of a confirm span (at most the
# timeout) of latency on mains, and never shortens it.
check "the exit comes exit_after to 2 x exit_after (+ 4 s) after the last report" \
  awk -v s="$stopped" -v e="${exited:-0}" -v x="$EXIT_AFTER" 'BEGIN { exit !(e - s >= x - 0.5 && e - s <= 2 * x + 4) }'
check "sampled again once the desk is outside" \
  awk -v e="${exited:-0}" '$1 > e && $2 == "0.1" && $3 == "outside" { found = 1 } END { exit !found }' duty.log

kill $BTMON 2>/dev/null; wait $BTMON 2>/dev/null
btmon -r trace.btsnoop >trace.txt 2>&1
# Each scan parameters command: type, interval and window on one line.
scan_params trace.txt >params.txt
check "btmon: every scan Earshot set up is passive" \
  sh -c '[ -s params.txt ] && ! grep -qv "^Passive" params.txt'
check "btmon: full duty first (60 ms every 60 ms)" sh -c 'head -1 params.txt | grep -q "^Passive 60.000 60.000$"'
check "btmon: then sampled (60 ms every 600 ms)" grep -q '^Passive 600.000 60.000$' params.txt
check "btmon: back to full duty after sampling (before the exit)" \
  awk '$2 == "600.000" { s = 1 } s && $2 == "60.000" { f = 1 } END { exit !f }' params.txt
cat params.txt duty.log run.log | tail -60
stop_btvirt
