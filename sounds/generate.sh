#!/usr/bin/env bash
# Regenerates the bundled alert sounds with sox (all synthesized; nothing
# recorded or downloaded). Usage: sounds/generate.sh
set -euo pipefail
cd "$(dirname "$0")"
# bell: 1320 Hz with a quieter octave above, dying away over 1.5 s (44.1 kHz).
sox -n -r 44100 -b 16 -c 1 bell.flac synth 1.5 sine 1320 sine 2640 remix 1v0.8,2v0.2 \
  fade q 0.005 1.5 1.4 gain -n -3
# pips: three 0.1 s pips at 1760 Hz, 0.1 s apart, then a pause (48 kHz).
sox -n -r 48000 -b 16 -c 1 pip.wav synth 0.1 sine 1760 fade q 0.005 0.1 0.005 gain -n -3
sox -n -r 48000 -b 16 -c 1 gap.wav trim 0 0.1
sox -n -r 48000 -b 16 -c 1 rest.wav trim 0 0.5
sox pip.wav gap.wav pip.wav gap.wav pip.wav rest.wav pips.wav
rm pip.wav gap.wav rest.wav
# descend: a falling sweep 2000 to 1000 Hz over 0.6 s, then 0.4 s rest (48 kHz).
sox -n -r 48000 -b 16 -c 1 descend.flac synth 0.6 sine 2000:1000 fade q 0.01 0.6 0.02 \
  gain -n -3 pad 0 0.4
