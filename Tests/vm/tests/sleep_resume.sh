# vm: ram rtcwake hcitool btvirt btmon
# A real sleep under `earshot monitor` live on hci0 (issue 39): suspend to
# RAM (ACPI S3), woken by the RTC's alarm (`rtcwake -m mem`: QEMU's RTC
# wakes the machine from S3 once the kernel enables its alarm as a wakeup
# event). The sleep resets every virtio device, which the test bed's 9p
# shares do not survive, so this runs in the RAM phase: after every other
# test, from a copy in RAM, with no 9p mounted (see guest and init).
#
# What Earshot does (RegionMonitor.resumed): it notices the sleep at the
# resume, CLOCK_BOOTTIME having moved away from CLOCK_MONOTONIC (the
# kernel cancels its CLOCK_REALTIME timerfd at a resume, so at once), logs
# "the machine slept N s", makes the region unknown (a state line, never
# an exit) and counts exit_after from then, in scanning time only: the
# time asleep never counts, nor does the silence heard before the sleep.
# The kernel's Bluetooth suspend turned Earshot's scan off before the
# sleep; Earshot takes it back retakeSeconds (5 s of CLOCK_MONOTONIC,
# which stands still asleep) after it saw it go off, so listening starts
# again up to 5 s after the resume, plus the retake's two HCI commands
# (each given commandTimeout, 2 s, before the adapter counts as lost). The
# kernel's HCI trace (btmon) shows when the scan is back.
#
# With the beacon advertising: no exit or enter across the sleep, the
# region inside again after it. With the advertiser stopped just before
# the sleep: one exit, exit_after of scanning after the resume.
EXIT_AFTER=8
SLEEP=10
RETAKE=5 COMMANDS=4 # LiveScanner's retakeSeconds, 2 x commandTimeout
start_sleep_monitor "$EXIT_AFTER"
# t_of N EVENT STATE: the wall-clock stamp of the Nth such line.
t_of() { grep "\"event\":\"$2\",\"region\":\"desk\",\"state\":\"$3\"" mon.out | sed -n "$1s/.*\"t\":\([0-9.]*\).*/\1/p"; }

# clocks: CLOCK_BOOTTIME and CLOCK_MONOTONIC (s), from one reading of
# /proc/timer_list: "now at" is CLOCK_MONOTONIC, and the offset of the
# hrtimer base of CLOCK_BOOTTIME (clock 2) is the time slept since boot.
clocks() {
  awk '/^now at/ {m = $3} /^ *clock 2:/ {b = 1} b && /\.offset/ {o = $2; exit}
       END {printf "%.3f %.3f", (m + o) / 1e9, m / 1e9}' /proc/timer_list
}
# sleep_for_real N: S3 for SLEEP s, then checks that it was a real sleep:
# CLOCK_BOOTTIME moved on by the time slept, CLOCK_MONOTONIC did not. The
# alarm is whole RTC seconds from rtcwake's reading of the RTC, and the
# kernel measures the sleep with the RTC's whole seconds too: the slept
# time is SLEEP within 2 s (the entry into S3 takes well under a second).
sleep_for_real() {
  local before after
  before=$(clocks)
  rtcwake -m mem -s "$SLEEP" >>rtcwake.log 2>&1 || { fail "rtcwake -m mem ($1)"; return 1; }
  after=$(clocks)
  read -r boot mono slept < <(echo "$before $after" | awk '{printf "%.3f %.3f %.3f", $3 - $1, $4 - $2, ($3 - $1) - ($4 - $2)}')
  echo "sleep $1: CLOCK_BOOTTIME +$boot s, CLOCK_MONOTONIC +$mono s, slept $slept s"
  check "real sleep $1: CLOCK_BOOTTIME moved $boot s (the ${SLEEP} s asleep, within 2 s, and the way in and out)" \
    awk -v b="$boot" -v s="$SLEEP" 'BEGIN { exit !(b >= s - 2) }'
  check "real sleep $1: CLOCK_MONOTONIC moved $mono s, $slept s less (it stood still for the ${SLEEP} s asleep, within 2 s)" \
    awk -v d="$slept" -v s="$SLEEP" 'BEGIN { exit !(d >= s - 2 && d <= s + 2) }'
  check "earshot noticed sleep $1" wait_for 20 bash -c "[ \$(grep -c 'the machine slept' mon.err) -ge $1 ]"
}

sleep_for_real 1
resumed=$(t_of 2 state unknown)
check "unknown at the resume, then inside again (a state line)" wait_for 30 at_least state inside 2
sleep $((EXIT_AFTER * 2))
check "no exit or enter across the sleep, inside for 2x exit_after after it" \
  [ "$(count exit outside)$(count enter inside)" = 00 ]

touch /tmp/adv.stop
wait $ADV
sleep_for_real 2
check "one exit after the resume" wait_for $((EXIT_AFTER + RETAKE + COMMANDS + 30)) at_least exit outside 1
t=$(t_of 1 exit outside)
resumed=$(t_of 3 state unknown)
last=$(tail -1 /tmp/adv.hci1)
kill -INT $BTMON; wait $BTMON 2>/dev/null
btmon -r /tmp/trace.btsnoop -i 0 -T -P -C 250 >trace.txt 2>&1
# Earshot's retake after the sleep: the first scan enable on hci0 after
# the resume.
on=$(first_scan_enable trace.txt "$resumed")
sleep_timeline "$last" "$resumed" "$on" "$t"
check "the scan is taken back after the resume, within ${RETAKE} s (the retake) + ${COMMANDS} s (its commands)" \
  awk -v o="$on" -v r="$resumed" -v k=$((RETAKE + COMMANDS)) 'BEGIN { exit !(o > r && o - r <= k) }'
# Earshot's stamps have 2 decimals, btmon's 6; its decisions run on
# CLOCK_MONOTONIC, so exit_after of scanning is a lower bound exactly: the
# exit counts neither the silence heard before the sleep, nor the time
# asleep, nor the seconds after the resume before the scan is back.
check "the exit comes exit_after or more after the scan is back" \
  awk -v t="$t" -v o="$on" -v e=$EXIT_AFTER 'BEGIN { exit !(t - o >= e - 0.01) }'
check "so the time asleep never counts: the exit comes the slept $slept s + exit_after or more after the last report" \
  awk -v t="$t" -v l="$last" -v s="$slept" -v e=$EXIT_AFTER 'BEGIN { exit !(t - l >= s + e - 0.01) }'
# The upper bound: the enable's Command Complete (2 s commandTimeout at
# most; the emulator answers at once) and the loop running its due timer
# and writing the line, 2 s on the loaded guest.
check "and no later than exit_after + 2 s (the enable's answer) + 2 s (the due timer) after it" \
  awk -v t="$t" -v o="$on" -v e=$EXIT_AFTER 'BEGIN { exit !(t - o <= e + 2 + 2) }'
check "exactly one exit, no enter" [ "$(count exit outside)$(count enter inside)" = 10 ]
kill -INT $MON
wait $MON
check "exit status 0 after SIGINT" [ $? -eq 0 ]
cat mon.out mon.err rtcwake.log
stop_btvirt
