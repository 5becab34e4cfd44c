# Remote shutter against the kernel's vivid virtual camera (640×480 YUYV):
# enter → capture → a JPEG that decodes at 640×480 → exit; capture outside
# photo mode captures nothing; a missing camera cannot enter photo mode.
. "$RESULTS/env"
modprobe -d "$KDIR" -S "$KVER" vivid n_devs=1 node_types=0x1 2>&1 || fail "modprobe vivid"
wait_for 10 test -e /dev/video0 || fail "vivid made no /dev/video0"

photos=$PWD/photos
mkdir -p "$photos"
"$EARSHOT" shutter --device /dev/video0 --directory "$photos" --resolution 640x480 enter capture exit \
  >out.json 2>err.log
rc=$?
cat out.json err.log
check "enter → enteredPhotoMode" grep -q '"event":"enter","value":1,"state":"enteredPhotoMode","code":1' out.json
check "capture → photoSuccess" grep -q '"event":"capture","value":2,"state":"photoSuccess","code":2' out.json
check "exit → exitedOrUnableToEnter" grep -q '"event":"exit","value":0,"state":"exitedOrUnableToEnter","code":0' out.json
check "exit status 0" test "$rc" -eq 0
photo=$(sed -n 's/.*"photo":"\([^"]*\)".*/\1/p' out.json | head -1)
check "the photo is in the directory" test -s "$photo"
check "the photo decodes at 640x480" bash -c "djpeg -pnm '$photo' | head -c 20 | tr '\n' ' ' | grep -q '^P6 640 480 '"
# vivid's webcam input shows 75% colour bars: white, yellow, cyan, green,
# magenta, red, blue, black. Right colours mean YUYV went in as YCbCr.
bars() {
  djpeg -pnm "$1" | python3 -c '
import sys
d = sys.stdin.buffer.read()
head, rest = d.split(b"\n", 1)
size, rest = rest.split(b"\n", 1)
_, px = rest.split(b"\n", 1)
w, h = map(int, size.split())
want = [(1,1,1), (1,1,0), (0,1,1), (0,1,0), (1,0,1), (1,0,0), (0,0,1), (0,0,0)]
y = h * 3 // 4
for i, (r, g, b) in enumerate(want):
    x = w * (2 * i + 1) // 16
    p = px[(y * w + x) * 3:(y * w + x) * 3 + 3]
    got = tuple(1 if c > 128 else 0 for c in p)
    if got != (r, g, b) or any(40 < c < 140 for c in p):
        sys.exit("bar %d at x=%d: %s, want %s" % (i, x, tuple(p), (r, g, b)))
'
}
check "the photo shows vivid's colour bars in the right colours" bars "$photo"

# A second session works: the first released the camera.
"$EARSHOT" shutter --device /dev/video0 --directory "$photos" enter capture capture exit >out2.json 2>>err.log
check "two more photos in a second session" test "$(grep -c photoSuccess out2.json)" -eq 2

# Capture outside photo mode: photoFailed, nothing written.
before=$(ls "$photos" | wc -l)
"$EARSHOT" shutter --device /dev/video0 --directory "$photos" capture >out3.json 2>>err.log
check "capture outside photo mode → photoFailed" grep -q '"state":"photoFailed","code":3' out3.json
check "nothing captured outside photo mode" test "$(ls "$photos" | wc -l)" -eq "$before"

# Missing camera.
"$EARSHOT" shutter --device /dev/video9 --directory "$photos" enter capture >out4.json 2>err4.log
check "missing camera → exitedOrUnableToEnter" grep -q '"event":"enter","value":1,"state":"exitedOrUnableToEnter"' out4.json
check "missing camera named in the log" grep -q 'camera /dev/video9 is missing' err4.log

# Busy camera: another process holds the stream.
"$EARSHOT" shutter --device /dev/video0 --directory "$photos" \
  < <(echo enter; wait_for 60 test -e release; echo exit) >hold.json 2>>err.log &
holder=$!
wait_for 60 grep -q enteredPhotoMode hold.json || fail "the first shutter did not enter photo mode"
"$EARSHOT" shutter --device /dev/video0 --directory "$photos" enter >out5.json 2>err5.log
cat out5.json err5.log
check "busy camera → exitedOrUnableToEnter" grep -q '"event":"enter","value":1,"state":"exitedOrUnableToEnter"' out5.json
check "busy camera named in the log" grep -q 'camera /dev/video0 is busy' err5.log
touch release
wait "$holder"
check "the holder exits normally" grep -q '"event":"exit","value":0,"state":"exitedOrUnableToEnter"' hold.json
