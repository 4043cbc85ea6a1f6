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
