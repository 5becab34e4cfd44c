# earshot monitor scanning live on hci0 while hci1 advertises the region's
# iBeacon (advertising re-enabled in a loop, the emulator's one report per
# enable): inside while it runs; exit exit_after after it stops; enter when
# it starts again; the adapter removed (btvirt killed) makes the region
# unknown with no exit, and monitoring resumes when an adapter comes back.
# Also --log (the proximity log) and a clean stop on SIGINT.
EXIT_AFTER=5
start_btvirt -l2
advertise_ibeacon hci1
desk_config /tmp/monitor.conf "$EXIT_AFTER" /tmp/monitor.state
events() { grep -c "\"event\":\"$1\",\"region\":\"desk\",\"state\":\"$2\"" mon.out; }
has() { [ "$(events "$1" "$2")" -ge "${3:-1}" ]; }
# t of the Nth (default last) matching line.
event_t() { grep "\"event\":\"$1\",\"region\":\"desk\"" mon.out | tail -1 | sed 's/.*"t":\([0-9.]*\).*/\1/'; }

# An advertising loop that notes when it enables (each enable is one report,
# which arrives after the note) and finishes its round when told to stop:
# after it, the last note bounds the last report from below.
start_noted_advertising() {
  rm -f /tmp/adv.stop /tmp/adv.notes
  ( while [ ! -e /tmp/adv.stop ]; do
      date +%s.%N >>/tmp/adv.notes
      hcitool -i hci1 cmd 0x08 0x000a 01 >/dev/null 2>&1
      sleep 0.2
      hcitool -i hci1 cmd 0x08 0x000a 00 >/dev/null 2>&1
      sleep 0.05
    done ) &
  NOTED_PID=$!
}
stop_noted_advertising() { touch /tmp/adv.stop; wait $NOTED_PID; }

start_noted_advertising
"$EARSHOT" monitor --config /tmp/monitor.conf --no-range --log /tmp/monitor.sqlite >mon.out 2>mon.err &
MON=$!
check "the region starts unknown" wait_for 10 has state unknown
check "the advertiser makes it inside" wait_for 30 has state inside
sleep $((EXIT_AFTER * 2))
check "stays inside while the advertiser runs (no exit in 2x exit_after)" [ "$(events exit outside)" -eq 0 ]

stop_noted_advertising
last=$(tail -1 /tmp/adv.notes)
check "the advertiser stopped: exit" wait_for $((EXIT_AFTER + 15)) has exit outside
t=$(event_t exit)
check "exit after exit_after from the last report, not sooner (exit ${t}, last enable ${last})" \
  awk -v t="$t" -v s="$last" -v e=$EXIT_AFTER 'BEGIN { exit !(t - s >= e - 0.01 && t - s <= e + 3) }'

start_advertising_loop hci1
check "the advertiser is back: enter" wait_for 30 has enter inside

stop_btvirt  # the adapters disappear while the advertiser loop still runs
check "adapter removal is reported" wait_for 10 grep -q 'hci0 was removed; scanning resumes when it comes back' mon.err
check "regions unknown when the adapter is gone" wait_for 10 has state unknown 2
sleep $((EXIT_AFTER + 2))
check "no exit while the adapter is gone" [ "$(events exit outside)" -eq 1 ]
check "still running without an adapter" kill -0 $MON
stop_advertising_loop hci1

start_btvirt -l2
advertise_ibeacon hci1
start_advertising_loop hci1
scanning_count() { [ "$(grep -c 'hci0: scanning' mon.err)" -ge "$1" ]; }
check "scanning resumes when an adapter comes back" wait_for 20 scanning_count 2
check "the beacon still there: state inside again (not an enter)" wait_for 30 has state inside 2
check "no second enter after the outage" [ "$(events enter inside)" -eq 1 ]

kill -INT $MON
wait $MON
check "exit status 0 after SIGINT" [ $? -eq 0 ]
check "state file saved (desk inside)" grep -q desk /tmp/monitor.state
stop_advertising_loop hci1

"$EARSHOT" log --db /tmp/monitor.sqlite --format json >log.json
check "log has the exit" grep -q '"event":"exit"' log.json
check "log has the enter" grep -q '"event":"enter"' log.json
check "log has the adapter going down" grep -q '"type":"adapter".*"down"' log.json
"$EARSHOT" log presence --db /tmp/monitor.sqlite >presence.txt
check "presence: an interval ended by the exit and one by the outage" \
  bash -c 'grep -q " exit" presence.txt && grep -q " unknown" presence.txt'
cat mon.out mon.err presence.txt
stop_btvirt
