# The mixer on a real driver with a dB range: snd-dummy's Master. Earshot's
# 0…1 scale must be alsamixer's (volume_mapping.c), computed here on its own
# from the control's range as amixer reports it, and round-trip with amixer.
CARD=Dummy
PY=/usr/bin/python3
amixer -c $CARD sget Master | tee sget.txt
amixer -c $CARD controls | tee controls.txt
# The volume element's own name (snd-dummy's is 'Master Volume': one volume
# for playback and capture), for its dB scale (TLV).
elem=$(sed -n "s/.*name='\(Master\( Playback\)\? Volume\)'.*/\1/p" controls.txt | head -1)
amixer -c $CARD cget name="$elem" | tee cget.txt

# The control's raw and dB ranges, from amixer.
read -r rawmin rawmax < <(sed -n 's/.*Limits:\( Playback\)\? \(-\?[0-9]*\) - \(-\?[0-9]*\).*/\2 \3/p' sget.txt | head -1)
read -r dbmin dbstep < <(sed -n 's/.*dBscale-min=\([-0-9.]*\)dB,step=\([0-9.]*\)dB.*/\1 \2/p' cget.txt)
echo "  raw $rawmin…$rawmax, dB from $dbmin in steps of $dbstep"
check "Master has a raw range" [ -n "$rawmin" -a -n "$rawmax" ]
check "Master has a dB scale" [ -n "$dbmin" -a -n "$dbstep" ]

# mapping ARGS...: alsamixer's mapping for this control (see volume_mapping.c):
#   kind                 -> linear_db or cubic (over 24 dB)
#   norm RAW             -> the normalized volume alsamixer shows for a raw step
#   raw VOLUME           -> the raw step whose normalized value is nearest VOLUME
mapping() {
  "$PY" - "$rawmin" "$rawmax" "$dbmin" "$dbstep" "$@" <<'PY'
import math, sys
rawmin, rawmax = int(sys.argv[1]), int(sys.argv[2])
dbmin, step = float(sys.argv[3]), float(sys.argv[4])
dbmax = dbmin + step * (rawmax - rawmin)
def db(raw): return dbmin + step * (raw - rawmin)
def norm(raw):
    if dbmax - dbmin <= 24: return (db(raw) - dbmin) / (dbmax - dbmin)
    n = 10 ** ((db(raw) - dbmax) / 60)
    floor = 10 ** ((dbmin - dbmax) / 60)   # the minimum is not mute here
    return (n - floor) / (1 - floor)
what = sys.argv[5]
if what == "kind": print("linear_db" if dbmax - dbmin <= 24 else "cubic")
elif what == "norm": print("%.4f" % norm(int(sys.argv[6])))
elif what == "raw":
    v = float(sys.argv[6])
    print(min(range(rawmin, rawmax + 1), key=lambda r: abs(norm(r) - v)))
elif what == "db": print("%.2f" % db(int(sys.argv[6])))
PY
}
near() { awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN {exit !(v != "" && w != "" && v - w <= t && w - v <= t)}'; }
# raw_of CHANNEL: the raw value amixer shows for "Front Left" / "Front Right".
raw_of() { amixer -c $CARD sget Master | awk -F': ' -v ch="  $1" '$1 == ch {split($2, f, " "); print (f[1] == "Playback" ? f[2] : f[1]); exit}'; }
db_of() { amixer -c $CARD sget Master | awk -v ch="$1:" '$0 ~ ch {match($0, /\[-?[0-9.]+dB\]/); print substr($0, RSTART + 1, RLENGTH - 4); exit}'; }
volume_of() { sed -n 's/.*"volume":\([0-9.]*\).*/\1/p' "$1" | tail -1; }

kind=$(mapping kind)
echo "  alsamixer's mapping for this range: $kind"
check "a range over 24 dB uses the cube-root mapping" [ "$kind" = cubic ]

# --- earshot sets, amixer reads -------------------------------------------------
for v in 0.5 0.9; do
  "$EARSHOT" volume --card hw:$CARD set "$v" >set.out 2>set.err
  rc=$?
  cat set.out set.err
  want=$(mapping raw "$v")
  want_db=$(mapping db "$want")
  got_l=$(raw_of "Front Left"); got_r=$(raw_of "Front Right"); got_db=$(db_of "Front Left")
  echo "  set $v: amixer shows raw $got_l/$got_r at $got_db dB; alsamixer's scale puts $v at raw $want ($want_db dB)"
  check "set $v: exit 0" [ $rc -eq 0 ]
  check "set $v: both channels at alsamixer's raw step $want" [ -n "$want" -a "$got_l" = "$want" -a "$got_r" = "$want" ]
  check "set $v: amixer reads $want_db dB" near "$got_db" "$want_db" 0.005
  check "set $v: earshot prints that step's volume ($(mapping norm "$want"))" near "$(volume_of set.out)" "$(mapping norm "$want")" 0.0051
  check "set $v: which is the nearest step to $v" near "$(volume_of set.out)" "$v" 0.02
done
# Not linear in the raw value: 0.5 is not the middle raw step.
"$EARSHOT" volume --card hw:$CARD set 0.5 >/dev/null
mid=$(( (rawmin + rawmax) / 2 ))
check "0.5 is not the raw midpoint ($mid)" [ "$(raw_of "Front Left")" != "$mid" ]

# --- amixer sets, earshot reads --------------------------------------------------
for raw in 80 "$rawmax" "$rawmin"; do
  amixer -q -c $CARD sset Master -- "$raw"
  "$EARSHOT" volume --card hw:$CARD >get.out 2>get.err
  cat get.out get.err
  want=$(mapping norm "$raw")
  echo "  amixer raw $raw ($(db_of "Front Left") dB): earshot $(volume_of get.out), alsamixer $want"
  check "amixer raw $raw: earshot reads alsamixer's $want" near "$(volume_of get.out)" "$want" 0.0051
done

# --- watch: a change by amixer arrives as a line ------------------------------------
amixer -q -c $CARD sset Master -- 0
"$EARSHOT" volume --card hw:$CARD watch >watch.out 2>watch.err &
watch_pid=$!
wait_for 10 grep -q volume watch.out
amixer -q -c $CARD sset Master -- 80
want=$(mapping norm 80)
want2=$(printf '%.2f' "$want")
wait_for 5 grep -q "\"volume\":$want2," watch.out
check "watch: amixer's change arrives as {\"volume\":$want2,...}" grep -q "\"volume\":$want2," watch.out
kill -INT $watch_pid; wait $watch_pid
check "watch: SIGINT exits 0" [ $? -eq 0 ]
cat watch.out watch.err

# --- mute, where the control has a switch ---------------------------------------------
if grep -q 'pswitch' sget.txt; then
  "$EARSHOT" volume --card hw:$CARD mute >mute.out
  check "mute: earshot says muted" grep -q '"muted":true' mute.out
  check "mute: amixer shows [off]" bash -c "amixer -c $CARD sget Master | grep -q '\[off\]'"
  "$EARSHOT" volume --card hw:$CARD unmute >unmute.out
  check "unmute: amixer shows [on]" bash -c "! amixer -c $CARD sget Master | grep -q '\[off\]'"
  "$EARSHOT" volume --card hw:$CARD mute >/dev/null
  "$EARSHOT" volume --card hw:$CARD set 0.4 >set.out
  check "set unmutes" grep -q '"muted":false' set.out
else
  echo "  Master has no playback switch on $CARD: mute must say so"
  "$EARSHOT" volume --card hw:$CARD mute >mute.out 2>mute.err
  rc=$?
  cat mute.out mute.err
  check "mute without a switch: exit 1" [ $rc -eq 1 ]
  check "mute without a switch: says so" grep -q "control 'Master' on card 'hw:$CARD' has no mute switch" mute.err
  "$EARSHOT" volume --card hw:$CARD >get.out
  check "no switch: reported as not muted" grep -q '"muted":false' get.out
fi

# --- a missing control names the ones there are -------------------------------------
"$EARSHOT" volume --card hw:$CARD --control Nope >/dev/null 2>nope.err
rc=$?
cat nope.err
check "missing control: exit 1, lists Master" bash -c "[ $rc -eq 1 ] && grep -q \"has no playback volume control 'Nope'; it has: .*Master\" nope.err"
