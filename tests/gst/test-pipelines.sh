#!/bin/sh
# SPDX-License-Identifier: MIT
# test-pipelines.sh BUILD_DIR: the launch-line scripts of pipelines/ run as
# a user runs them (gst-launch-1.0, backend auto: the NPU if present, else
# the simulator):
#  - demo-embed.sh: labels made from one example frame per test pattern,
#    then 4 frames of three of those patterns through npuembed: every frame
#    has a 64-d embedding and the label of its own pattern (cosine 1 for the
#    example frame itself, > 0.9 for the moving ball's later frames), and the
#    frames go to cores 0, 1, 2, 0 (round robin, in order);
#  - file-infer.sh: a 60-frame Theora clip made on the spot, through
#    decodebin into npuinfer: one "tensors" log line per frame, frames 0..59
#    in order.
set -eu
B=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sh "$SRC/pipelines/demo-embed.sh" "$B" > "$tmp/demo" 2>&1 || fail "demo-embed.sh: $(cat "$tmp/demo")"
cat "$tmp/demo"
for pat in smpte ball red; do
  # the 4 frame lines after this pattern's header
  sed -n "/videotestsrc pattern=$pat /,/^--/p" "$tmp/demo" | grep '^  frame' > "$tmp/$pat" || true
  [ "$(wc -l < "$tmp/$pat")" -eq 4 ] || fail "$pat: $(wc -l < "$tmp/$pat") frame lines"
  awk -v pat="$pat" '{
      if ($2 != NR - 1) bad = "frame " $2 " at line " NR
      if ($4 != (NR - 1) % 3) bad = "frame " $2 " on core " $4
      if ($6 != 64) bad = "dims " $6
      if ($(NF - 2) != pat) bad = "label " $(NF - 2)
      # frame 0 is the example frame; the ball moves in later frames
      if ($NF + 0 < (NR == 1 ? 0.999 : 0.9)) bad = "score " $NF
    } END { if (bad) { print pat ": " bad; exit 1 } }' "$tmp/$pat" || fail "demo output"
done

sh "$SRC/pipelines/file-infer.sh" - "$SRC/tests/models/data/cnn_small/model.onnx" "$B" \
  > "$tmp/file" 2>&1 || fail "file-infer.sh: $(tail -5 "$tmp/file")"
grep -o 'frame [0-9]* (core [0-9]*, [0-9]* us): [0-9]* tensors' "$tmp/file" > "$tmp/frames" || true
[ "$(wc -l < "$tmp/frames")" -eq 60 ] || fail "file-infer: $(wc -l < "$tmp/frames") frames"
awk '{ if ($2 != NR - 1) { print "frame " $2 " at line " NR; exit 1 } }' "$tmp/frames" \
  || fail "file-infer order"
grep -q "Execution ended" "$tmp/file" || fail "file-infer did not end cleanly"
echo "pipelines: demo-embed.sh and file-infer.sh as documented"

# detect.sh: the fixed-output test detector through npuinfer (letterbox
# 320x240 into 32x32: model rows 4..28, scale 10) and npudetect: per frame
# "b" at 80,80 160x80 track 1 and "a" at 20,20 40x40 track 2 (the model's
# boxes (8,12)-(24,20) and (2,6)-(6,10), the duplicate removed by NMS).
printf 'a\nb\n' > "$tmp/labels.txt"
FRAMES=5 sh "$SRC/pipelines/detect.sh" "$B/tests/gst/detector_v8.onnx" "$B" "$tmp/labels.txt" \
  > "$tmp/detect" 2>&1 || fail "detect.sh: $(tail -5 "$tmp/detect")"
[ "$(grep -c 'detection 0: b (class 1) 0.900 at 80,80 160x80 track 1$' "$tmp/detect")" -eq 5 ] \
  || fail "detect.sh box b: $(cat "$tmp/detect")"
[ "$(grep -c 'detection 1: a (class 0) 0.500 at 20,20 40x40 track 2$' "$tmp/detect")" -eq 5 ] \
  || fail "detect.sh box a: $(cat "$tmp/detect")"
[ "$(grep -c 'detection [0-9]' "$tmp/detect")" -eq 10 ] || fail "detect.sh: extra detections"
grep -q "Execution ended" "$tmp/detect" || fail "detect.sh did not end cleanly"
# gst-inspect documents the decoders
for e in npudetect npuclassify; do
  GST_PLUGIN_PATH_1_0="$B/gst" GST_REGISTRY_1_0="$B/gst/registry-demo.bin" \
    gst-inspect-1.0 "$e" > "$tmp/inspect" 2>&1 || fail "gst-inspect-1.0 $e"
  grep -q "labels" "$tmp/inspect" || fail "gst-inspect-1.0 $e: no labels property"
done
echo "pipelines: detect.sh as documented; gst-inspect-1.0 npudetect, npuclassify"
