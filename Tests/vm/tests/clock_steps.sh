# A laptop's clock steps under `earshot monitor` live on hci0 (issue 24):
# hci1 advertises the desk's iBeacon and hci2 a plain advertisement from its
# public address (region "phone" names that address: an identity device).
# The guest's wall clock is set an hour forward, then two hours back, with
# both present: no event and no hook. Then both go quiet: each exits
# exit_after after its last report, in real time (not two hours late), and
# the exit is stamped with the wall clock as it reads then. Each step is
# logged once. The guest's clock is put right at the end (tests share a boot).
EXIT_AFTER=8
clock_start=$(date +%s.%N)
uptime_start=$(cut -d' ' -f1 /proc/uptime)
start_btvirt -l3
wait_for 10 hci_exists hci2 && hciconfig hci2 up
advertise_ibeacon hci1
phone=$(adapter_address hci2)
# hci2: ADV_NONCONN_IND, public; flags + a short name (not an iBeacon).
hcitool -i hci2 cmd 0x08 0x0006 a0 00 a0 00 03 00 00 00 00 00 00 00 00 07 00 >/dev/null
hcitool -i hci2 cmd 0x08 0x0008 0a 02 01 06 06 09 70 68 6f 6e 65 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 >/dev/null
hook="/bin/sh -c \"echo \$EARSHOT_EVENT \$EARSHOT_REGION >>$PWD/hooks.out\""
cat >clock.conf <<CONF
[scanner]
adapter = hci0
[region "desk"]
uuid = $BEACON_UUID
major = $BEACON_MAJOR
minor = $BEACON_MINOR
exit_after = $EXIT_AFTER
on_enter = $hook
on_exit = $hook
[region "phone"]
device = $phone
exit_after = $EXIT_AFTER
on_enter = $hook
on_exit = $hook
[monitor]
# hci2 answers pages (it is there): this test is about clocks, so its
# exit is decided by silence alone (name_request covers paging).
name_requests = false
[state]
path = /tmp/clock.state
CONF
: >hooks.out
# One advertising loop per adapter, each noting (wall clock) its enables.
rm -f /tmp/adv.stop /tmp/adv.hci1 /tmp/adv.hci2
noted_advertising_loop hci1 &
ADV1=$!
noted_advertising_loop hci2 &
ADV2=$!
"$EARSHOT" monitor --config clock.conf --no-range >mon.out 2>mon.err &
MON=$!
count() { grep -c "\"event\":\"$1\",\"region\":\"$2\"" mon.out; }
has() { [ "$(count "$1" "$2")" -ge 1 ]; }
check "desk inside" wait_for 60 grep -q '"event":"state","region":"desk","state":"inside"' mon.out
check "phone (identity device) inside" wait_for 60 grep -q '"event":"state","region":"phone","state":"inside"' mon.out
lines_before=$(wc -l <mon.out)

date -s "+1 hour" >/dev/null
sleep $((EXIT_AFTER + 4))
check "clock +1 h with both present: no event" [ "$(wc -l <mon.out)" -eq "$lines_before" ]
check "the forward step is logged once" [ "$(grep -c 'clock stepped +3600' mon.err)" -eq 1 ]
date -s "-2 hours" >/dev/null
sleep $((EXIT_AFTER + 4))
check "clock -2 h with both present: no event" [ "$(wc -l <mon.out)" -eq "$lines_before" ]
check "the backward step is logged once" [ "$(grep -c 'clock stepped -7200' mon.err)" -eq 1 ]
check "no hook ran through the steps" [ ! -s hooks.out ]

touch /tmp/adv.stop
wait $ADV1 $ADV2
check "desk exits after the advertiser stops" wait_for $((EXIT_AFTER + 20)) has exit desk
check "phone exits after the advertiser stops" wait_for $((EXIT_AFTER + 20)) has exit phone
for r in desk:hci1 phone:hci2; do
  last=$(tail -1 "/tmp/adv.${r#*:}")
  r=${r%:*}
  t=$(grep "\"event\":\"exit\",\"region\":\"$r\"" mon.out | sed 's/.*"t":\([0-9.]*\).*/\1/')
  check "$r: exit within exit_after + 2 s of its last report after the -2 h step (exit $t, last $last)" \
    awk -v t="$t" -v s="$last" -v e=$EXIT_AFTER 'BEGIN { exit !(t - s >= e - 0.01 && t - s <= e + 2) }'
done
check "one exit each, no enter" [ "$(count exit desk)$(count exit phone)$(count enter desk)$(count enter phone)" = 1100 ]
check "the exit hooks ran, nothing else" [ "$(sort hooks.out | tr '\n' ' ')" = "exit desk exit phone " ]
kill -INT $MON
wait $MON
check "exit status 0 after SIGINT" [ $? -eq 0 ]
cat mon.out mon.err
stop_btvirt
# Put the guest's clock right: where it started plus the time since.
now=$(awk -v c="$clock_start" -v u0="$uptime_start" -v u1="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.3f", c + u1 - u0 }')
date -s "@$now" >/dev/null
