# An agent's day (issue 24): `earshot run` live on hci0, publishing to a
# real mosquitto with a hook on the region, while hci1 advertises the
# desk's iBeacon. The guest's clock is set an hour forward, the machine
# goes through the kernel's suspend path (pm_test freezer), and the clock
# is set back again: the broker never hears `outside`, no hook runs, no
# enter or exit event. Then the advertiser stops: one `outside`, one exit
# hook. The guest's clock is put right at the end (tests share a boot).
EXIT_AFTER=8
clock_start=$(date +%s.%N)
uptime_start=$(cut -d' ' -f1 /proc/uptime)
check "mosquitto is installed (scripts/deps.sh test)" command -v mosquitto
start_btvirt -l2
advertise_ibeacon hci1
desk_config /tmp/day.conf "$EXIT_AFTER" /tmp/day.state
hook="/bin/sh -c \"echo \$EARSHOT_EVENT \$EARSHOT_REGION >>$PWD/hooks.out\""
sed -i "/^exit_after/a on_enter = $hook\non_exit = $hook" /tmp/day.conf
cat >>/tmp/day.conf <<CONF
[mqtt]
host = 127.0.0.1
port = 18884
base_topic = earshot/vm
CONF
: >hooks.out
mosquitto -p 18884 >broker.log 2>&1 &
BROKER=$!
wait_for 10 mosquitto_pub -p 18884 -t earshot/vm/ready -m 1
mosquitto_sub -p 18884 -v -t earshot/vm/region/desk/state >states.out 2>&1 &
SUB=$!
rm -f /tmp/adv.stop /tmp/adv.hci1
noted_advertising_loop hci1 &
ADV=$!
SOCK=/tmp/day.sock
"$EARSHOT" run --config /tmp/day.conf --socket $SOCK --state-dir /tmp/day-state --no-audio >run.log 2>&1 &
RUN=$!
check "the broker hears the desk inside" wait_for 60 grep -q 'state inside' states.out
"$EARSHOT" events --socket $SOCK --topics regions >events.out 2>&1 &
EVENTS=$!
sleep 1

date -s "+1 hour" >/dev/null
sleep 4
check "suspend (pm_test freezer) with the beacon advertising" pm_test_suspend
sleep 2
date -s "-1 hour" >/dev/null
sleep $((EXIT_AFTER + 4))
# (pm_test stops at the freezer: CLOCK_BOOTTIME does not move away from
# CLOCK_MONOTONIC, so no "slept" line; LaptopDayTests cover that side.)
check "the step forward and the step back are each logged once" \
  [ "$(grep -c 'clock stepped +3600' run.log)$(grep -c 'clock stepped -3600' run.log)" = 11 ]
check "the broker never heard outside" [ "$(grep -c 'state outside' states.out)" -eq 0 ]
check "no hook ran" [ ! -s hooks.out ]
check "no enter or exit event" [ "$(grep -cE '"event":"(enter|exit)"' events.out)" -eq 0 ]
check "the region is known again after the resume (inside)" \
  sh -c "'$EARSHOT' status --socket $SOCK | grep -q '\"region\":\"desk\",\"state\":\"inside\"'"

touch /tmp/adv.stop
wait $ADV
check "the broker hears outside once the beacon is gone" wait_for $((EXIT_AFTER + 20)) grep -q 'state outside' states.out
sleep 1
check "one outside, one exit hook" [ "$(grep -c 'state outside' states.out) $(cat hooks.out)" = "1 exit desk" ]
kill -INT $RUN
wait $RUN
check "exit status 0 after SIGINT" [ $? -eq 0 ]
kill $EVENTS $SUB $BROKER 2>/dev/null
cat run.log states.out events.out
stop_btvirt
now=$(awk -v c="$clock_start" -v u0="$uptime_start" -v u1="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.3f", c + u1 - u0 }')
date -s "@$now" >/dev/null
