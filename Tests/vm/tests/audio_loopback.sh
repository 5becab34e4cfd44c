# The alert through a real ALSA driver: earshot plays on snd-aloop's
# playback side (hw:Loopback,0) while arecord records its capture side
# (hw:Loopback,1); sox measures each pattern's frequency per channel, the
# silence after stop, and the fallback from a missing device.
PLAY=hw:Loopback,0
CAPTURE=hw:Loopback,1
# A longer buffer than the default 40 ms: a debug build under TCG emulation
# renders slowly, and the frequencies are what is measured here.
BUFFER=100

# record SECONDS OUT: records the loopback (48 kHz, stereo, 16-bit) in the
# background, at most SECONDS; the playback side must then open with the
# same parameters. end_record stops it half a second after the alert, so
# SECONDS is only a cap: it leaves room for the 1-2.5 s a PCM's open and
# first write take under TCG on a busy host (start_ms), which cut the
# sound's end off a 4 s recording.
end_record() {
  sleep 0.5
  kill -INT "$REC_PID" 2>/dev/null
  wait "$REC_PID"
}
record() {
  arecord -q -D "$CAPTURE" -f S16_LE -r 48000 -c 2 -d "$1" "$2" &
  REC_PID=$!
  sleep 0.3
}

# freq FILE CHANNEL START LENGTH: sox's rough frequency of one channel.
freq() {
  sox "$1" -n remix "$2" trim "$3" "$4" stat 2>&1 | awk '/^Rough/ {print $3}'
}
# peak FILE CHANNEL START [LENGTH]: the maximum amplitude (0…1) of one channel.
peak() {
  sox "$1" -n remix "$2" trim "$3" ${4:+"$4"} stat 2>&1 | awk '/Maximum amplitude/ {print $3}'
}
# onset FILE: seconds of leading silence (below 1 % of full scale).
onset() {
  sox "$1" /tmp/on.wav remix 1 silence 1 0.001 1%
  awk -v a="$(soxi -D "$1")" -v b="$(soxi -D /tmp/on.wav)" 'BEGIN {printf "%.4f", a - b}'
}
# near VALUE WANT TOLERANCE
near() { awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN {exit !(v != "" && v - w <= t && w - v <= t)}'; }
below() { awk -v v="$1" -v w="$2" 'BEGIN {exit !(v != "" && v < w)}'; }

# check_freq NAME FILE START LENGTH WANT TOLERANCE: both channels.
check_freq() {
  local name=$1 file=$2 start=$3 len=$4 want=$5 tol=$6 ch f
  for ch in 1 2; do
    f=$(freq "$file" "$ch" "$start" "$len")
    echo "  $name channel $ch from $start s: $f Hz (want $want ± $tol)"
    check "$name: channel $ch at $want Hz" near "$f" "$want" "$tol"
  done
}

# play SOUND SECONDS [alert options]: records while earshot plays, into SOUND.wav.
play() {
  local sound=$1 secs=$2; shift 2
  record "$(awk -v s="$secs" 'BEGIN {print int(s + 6)}')" "$sound.wav"
  "$EARSHOT" alert --device "$PLAY" --sound "$sound" --duration "$secs" --buffer $BUFFER "$@" \
    >"$sound.out" 2>"$sound.err"
  PLAY_RC=$?
  end_record
  cat "$sound.out" "$sound.err"
}

# --- beep: a steady 1000 Hz, 0.3 s on, 0.2 s off -------------------------
play beep 1.5
check "beep: exit 0" [ "$PLAY_RC" -eq 0 ]
check "beep: played on $PLAY" grep -q "\"event\":\"playing\",\"device\":\"$PLAY\",\"sound\":\"beep\"" beep.out
check "beep: stopped by its duration" grep -q '"event":"stopped","reason":"duration"' beep.out
t0=$(onset beep.wav)
echo "  beep onset at $t0 s"
check_freq beep beep.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.02}')" 0.25 1000 20
# The pattern's own pause (0.3 … 0.5 s) is silent.
gap=$(peak beep.wav 1 "$(awk -v t="$t0" 'BEGIN {print t + 0.33}')" 0.14)
echo "  beep pause peak $gap"
check "beep: silent in its pause" below "$gap" 0.01

# --- ring: 800 and 1000 Hz alternating every 50 ms; stopped by SIGINT ----
# (0.4 s after it says it plays: well inside the ring's 1.2 s of tone).
# What is measured around the stop needs the stop inside that first tone;
# under TCG on a busy host the shell's SIGINT can come more than a second
# late, into the 0.8 s pause after it (three times running in a clean-clone
# make test while the host also built the package). So a stop that lands
# outside the tone (0.15 to 1.1 s after the onset: `seconds` - `start_ms`,
# the player's own timings, as below) is tried again with no wait; so is
# one where the emulated machine fell behind the sound card (`recoveries`
# above 0: the underrun's gap shifts the tones in the recording; seen once
# in a clean-clone make test). The fifth attempt is measured as it is.
for delay in 0.4 0 0 0 0; do
  record 8 ring.wav
  "$EARSHOT" alert --device "$PLAY" --sound ring --buffer $BUFFER >ring.out 2>ring.err &
  pid=$!
  wait_for 10 grep -q '"event":"playing"' ring.out
  sleep $delay
  kill -INT $pid
  wait $pid
  PLAY_RC=$?
  end_record
  cat ring.out ring.err
  into=$(awk -v s="$(sed -n 's/.*"start_ms":\([0-9.]*\).*/\1/p' ring.out)" \
    -v p="$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' ring.out)" 'BEGIN {print p - s / 1000}')
  recoveries=$(sed -n 's/.*"recoveries":\([0-9]*\).*/\1/p' ring.out)
  if [ "${recoveries:-0}" -gt 0 ]; then
    echo "  ring recovered from $recoveries underrun(s): its tones are shifted in the recording"
    continue
  fi
  awk -v d="$into" 'BEGIN {exit !(d >= 0.15 && d <= 1.1)}' && break
  echo "  ring stopped $into s after its onset, outside its first tone (the signal came late)"
done
check "ring: SIGINT exits 0" [ "$PLAY_RC" -eq 0 ]
check "ring: stopped by the signal" grep -q '"event":"stopped","reason":"signal"' ring.out
t0=$(onset ring.wav)
echo "  ring onset at $t0 s"
check_freq "ring first tone" ring.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.005}')" 0.04 800 25
check_freq "ring second tone" ring.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.055}')" 0.04 1000 25
# (Not further: under emulation an underrun now and then inserts a gap, which
# shifts the later tones against the onset; "recoveries" counts them.)
# Silence after stop: the player's first write is the onset; it reports
# that write start_ms after the request and the stop `seconds` after it,
# so the stop is due at onset - start_ms + seconds in the recording. The
# ring sounds until then and the capture is digital silence from one
# buffer after it to the end of the recording.
start=$(sed -n 's/.*"start_ms":\([0-9.]*\).*/\1/p' ring.out)
played=$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' ring.out)
stop=$(awk -v t="$t0" -v s="$start" -v p="$played" 'BEGIN {print t - s / 1000 + p}')
echo "  ring onset $t0 s, start_ms $start, stopped after $played s: the stop is due at $stop s"
loud=$(peak ring.wav 1 "$(awk -v t="$stop" 'BEGIN {print t - 0.12}')" 0.08)
quiet=$(peak ring.wav 1 "$(awk -v t="$stop" -v b=$BUFFER 'BEGIN {print t + b / 1000 + 0.02}')")
quiet2=$(peak ring.wav 2 "$(awk -v t="$stop" -v b=$BUFFER 'BEGIN {print t + b / 1000 + 0.02}')")
echo "  ring peak before stop $loud, after stop $quiet / $quiet2"
check "ring: sounding just before the stop" awk -v v="$loud" 'BEGIN {exit !(v > 0.1)}'
check "ring: silent after the stop (both channels)" bash -c "[ '$quiet' = 0.000000 ] && [ '$quiet2' = 0.000000 ]"
last=$(sox ring.wav -n remix 1 reverse silence 1 0.001 1% stat 2>&1 | awk '/^Length/ {print $3}')
echo "  ring sound ends at $last s"
check "ring: sound ends at the stop, within one buffer" \
  awk -v e="$last" -v t="$stop" -v b=$BUFFER 'BEGIN {exit !(e >= t - 0.05 && e <= t + b / 1000 + 0.02)}'

# --- chirp: a sweep from 1000 to 2000 Hz in 0.5 s ------------------------
play chirp 1.5
check "chirp: exit 0" [ "$PLAY_RC" -eq 0 ]
t0=$(onset chirp.wav)
check_freq "chirp start" chirp.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.005}')" 0.05 1050 40
check_freq "chirp end" chirp.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.445}')" 0.05 1940 50

# --- --frequency moves the pattern ----------------------------------------
play beep 1.5 --frequency 440
cp beep.wav beep440.wav
t0=$(onset beep440.wav)
check_freq "beep --frequency 440" beep440.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.02}')" 0.25 440 10

# --- fallback: a missing device, then the loopback -------------------------
record 8 fallback.wav
"$EARSHOT" alert --device hw:9,0 --fallback "earshot_no_such_pcm $PLAY" --sound beep \
  --duration 1.5 --buffer $BUFFER >fallback.out 2>fallback.err
rc=$?
end_record
cat fallback.out fallback.err
check "fallback: exit 0" [ $rc -eq 0 ]
check "fallback: played on the loopback" grep -q "\"device\":\"$PLAY\"" fallback.out
check "fallback: names the missing device" grep -q "cannot open audio device 'hw:9,0'" fallback.err
check "fallback: names the missing PCM" grep -q "cannot open audio device 'earshot_no_such_pcm'" fallback.err
t0=$(onset fallback.wav)
check_freq "fallback beep" fallback.wav "$(awk -v t="$t0" 'BEGIN {print t + 0.02}')" 0.25 1000 20

# --- every device missing: an error naming each, exit 1 --------------------
"$EARSHOT" alert --device hw:9,0 --fallback "earshot_no_such_pcm" --duration 0.2 >/dev/null 2>none.err
rc=$?
cat none.err
check "no device: exit 1" [ $rc -eq 1 ]
check "no device: names both" bash -c "grep -q \"'hw:9,0'\" none.err && grep -q \"'earshot_no_such_pcm'\" none.err"

# --- request -> audible: earshot bench on the loopback ----------------------
# The daemon's find-phone driver rings plughw:Loopback,0 (mixer: snd-dummy's
# Master) and the bench's own capture on hw:Loopback,1 times the first
# sample above -40 dBFS after each start request; 10 cycles (--seconds 1),
# find-phone alone (under TCG the other stages take half a minute, and
# the live replay's timing is not what is tested here). The capture opens
# first, so the alert is constrained to its format and plays on the
# substream it hears; on a sound card the bench plays no zeros beside the
# alert (they would take that substream).
"$EARSHOT" bench --find-phone-only --seconds 1 \
  --alert-device "plughw:Loopback,0" --mixer-card hw:Dummy --monitor "$CAPTURE" \
  >bench.out 2>bench.err
rc=$?
grep '^find-phone' bench.out
cat bench.err
check "bench: exit 0" [ $rc -eq 0 ]
audible=$(grep '^find-phone: request -> audible' bench.out)
median=$(awk '{print $5}' <<<"$audible")
worst=$(sed -n 's/.*(worst \([0-9.]*\) ms of 10; heard on .*/\1/p' <<<"$audible")
echo "  request -> audible on $CAPTURE: median $median ms, worst $worst ms of 10"
check "bench: 10 cycles heard on $CAPTURE, no zeros beside the alert" \
  grep -q "of 10; heard on $CAPTURE)\$" <<<"$audible"
check "bench: the ring played on plughw:Loopback,0" \
  grep -q '^find-phone: request -> first sample .* of 10, plughw:Loopback,0)' bench.out
check "bench: request -> audible median < 100 ms ($median ms)" below "$median" 100
check "bench: request -> audible worst < 200 ms ($worst ms)" below "$worst" 200
