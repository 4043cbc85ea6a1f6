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
#    in order;
#  - detect.sh and detect-overlay.sh (npuoverlay, PNG frames checked) on the
#    build's fixed-output test detector.
# Every GStreamer process of one run shares a registry file of that run
# (the scripts take GST_REGISTRY_1_0 from the caller): nothing is shared with
# other tests, other runs of this one (meson test --repeat) or a user running
# pipelines/ on the same build (their $B/gst/registry-demo.bin).
set -eu
B=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GST_PLUGIN_PATH_1_0="$B/gst" GST_REGISTRY_1_0="$tmp/registry.bin"
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
  gst-inspect-1.0 "$e" > "$tmp/inspect" 2>&1 || fail "gst-inspect-1.0 $e"
  grep -q "labels" "$tmp/inspect" || fail "gst-inspect-1.0 $e: no labels property"
done
echo "pipelines: detect.sh as documented; gst-inspect-1.0 npudetect, npuclassify"

# detect-overlay.sh: the same detections drawn by npuoverlay into black
# frames, written as PNGs. Decoded back to RGB: box b's left edge (80, 120)
# and a's (20, 40) are coloured, the insides (160, 120) and (40, 50) and a
# point outside both (300, 200) stay black.
if [ "${NPU_HAVE_OVERLAY:-0}" != 1 ]; then
  echo "pipelines: detect-overlay.sh skipped: npuoverlay not built (needs cairo, pangocairo)"
  exit 0
fi
FRAMES=3 PATTERN=black sh "$SRC/pipelines/detect-overlay.sh" "$B/tests/gst/detector_v8.onnx" "$B" \
  "$tmp/png" "$tmp/labels.txt" > "$tmp/overlay" 2>&1 || fail "detect-overlay.sh: $(tail -5 "$tmp/overlay")"
[ "$(ls "$tmp/png" | wc -l)" -eq 3 ] || fail "detect-overlay.sh: $(ls "$tmp/png" | wc -l) PNG files"
gst-launch-1.0 -q filesrc location="$tmp/png/frame-00002.png" ! pngdec ! videoconvert ! \
  video/x-raw,format=RGB ! filesink location="$tmp/frame.rgb" > "$tmp/dec" 2>&1 \
  || fail "decoding the PNG: $(cat "$tmp/dec")"
[ "$(wc -c < "$tmp/frame.rgb")" -eq $((320 * 240 * 3)) ] || fail "PNG is not 320x240 RGB"
px() { od -A n -t u1 -j $((($2 * 320 + $1) * 3)) -N 3 "$tmp/frame.rgb" | tr -s ' ' | sed 's/^ //'; }
for p in "80 120" "20 40"; do
  [ "$(px $p)" != "0 0 0" ] || fail "detect-overlay.sh: no box edge at $p"
done
for p in "160 120" "40 50" "300 200"; do
  [ "$(px $p)" = "0 0 0" ] || fail "detect-overlay.sh: pixel $p is $(px $p), not black"
done
[ "$(px 80 120)" != "$(px 20 40)" ] || fail "detect-overlay.sh: classes a and b share a colour"
# The documented playbin line: a black Theora clip (I420 through the
# filter), frames to PNG; box b's edge bright, its inside still black.
gst-launch-1.0 -q videotestsrc num-buffers=3 pattern=black ! video/x-raw,width=320,height=240 ! \
  theoraenc ! oggmux ! filesink location="$tmp/black.ogg" > "$tmp/enc" 2>&1 || fail "clip: $(cat "$tmp/enc")"
mkdir "$tmp/pb"
gst-launch-1.0 playbin uri="file://$tmp/black.ogg" \
  video-filter="npuinfer model=$B/tests/gst/detector_v8.onnx resize=letterbox ! npudetect ! npuoverlay" \
  video-sink="videoconvert ! pngenc ! multifilesink location=$tmp/pb/f-%02d.png" > "$tmp/pblog" 2>&1 \
  || fail "playbin: $(tail -5 "$tmp/pblog")"
[ "$(ls "$tmp/pb" | wc -l)" -eq 3 ] || fail "playbin: $(ls "$tmp/pb" | wc -l) frames"
gst-launch-1.0 -q filesrc location="$tmp/pb/f-02.png" ! pngdec ! videoconvert ! \
  video/x-raw,format=RGB ! filesink location="$tmp/frame.rgb" > "$tmp/dec" 2>&1 \
  || fail "decoding the playbin PNG: $(cat "$tmp/dec")"
sum() { px "$@" | awk '{ print $1 + $2 + $3 }'; }
[ "$(sum 80 120)" -ge 150 ] || fail "playbin: box edge at 80,120 is $(px 80 120)"
[ "$(sum 160 120)" -le 30 ] || fail "playbin: inside of the box at 160,120 is $(px 160 120)"
gst-inspect-1.0 npuoverlay > "$tmp/inspect" 2>&1 || fail "gst-inspect-1.0 npuoverlay"
grep -q "line-width" "$tmp/inspect" || fail "gst-inspect-1.0 npuoverlay: no line-width property"
echo "pipelines: detect-overlay.sh PNG frames and the playbin video-filter line as documented; gst-inspect-1.0 npuoverlay"
