#!/bin/sh
# SPDX-License-Identifier: MIT
# The main demo: videotestsrc -> npuembed (tiny SigLIP vision model) ->
# fakesink, printing each frame's embedding (first values) and zero-shot
# label. The tiny test model has no text tower, so the labels are made from
# example frames first (npu-embed-store labels: one embedding per test
# pattern); with a real SigLIP, labels.npy would hold text embeddings.
#
#   sh pipelines/demo-embed.sh [BUILD_DIR]        (default ./build)
#
# NPU_BACKEND=auto|sim|rknpu|rocket|cpu picks the backend (default auto: the
# NPU if present, else the simulator). NPU_DEMO_MODEL overrides the model.
#
# NPU_PARTITION defaults to "supported" here: every node the NPU back end
# supports goes to the NPU, so the demo shows the NPU path (on a laptop, the
# simulator executing the compiled register commands). The default cost rule
# would keep this tiny model on the CPU, rightly: on the board's CPU (RK3588
# CPU model v1) its whole forward pass is 0.14 ms, less than the NPU job's
# 0.61 ms modeled (docs/performance.md). Run with NPU_PARTITION=cost to see it.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
MODEL=${NPU_DEMO_MODEL:-tests/models/data/siglip_tiny/model.onnx}
BACKEND=${NPU_BACKEND:-auto}
export NPU_PARTITION=${NPU_PARTITION:-supported}
STORE=$B/pipelines/npu-embed-store

if [ ! -f "$B/gst/libgstopennpu.so" ] || [ ! -x "$STORE" ]; then
  echo "demo-embed.sh: the GStreamer plugin is not built in $B (meson -Dgst=enabled)" >&2
  exit 1
fi
export GST_PLUGIN_PATH_1_0="$B/gst"
# the build tree's own registry, unless the caller names one (the tests give each run its own)
export GST_REGISTRY_1_0="${GST_REGISTRY_1_0:-$B/gst/registry-demo.bin}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== npuembed demo: model $MODEL, backend=$BACKEND requested, cores=7 (round robin)"
if [ "$BACKEND" != cpu ] && [ -x "$B/tools/npu-bench/npu-bench" ]; then
  echo "-- the compiled program (npu-bench, partition $NPU_PARTITION)"
  "$B/tools/npu-bench/npu-bench" -b "$BACKEND" -p "$NPU_PARTITION" -n 1 -w 0 --top 0 "$MODEL" \
    2>&1 | sed -n 's/^program  /  program: /p; s/^  \(NPU time\|submits\|tasks\|matmul-class\)/  \1/p'
fi
echo "-- labels from example frames (one embedding per test pattern)"
"$STORE" labels -q -m "$MODEL" -b "$BACKEND" --normalize 0.5,0.5 \
  -o "$tmp/labels.txt" \
  smpte=pattern:smpte ball=pattern:ball snow=pattern:snow \
  red=pattern:red checkers=pattern:checkers-8

for pat in smpte ball red; do
  echo "-- gst-launch-1.0 videotestsrc pattern=$pat num-buffers=4 ! npuembed ... emit-messages=true ! fakesink"
  gst-launch-1.0 -m videotestsrc pattern=$pat num-buffers=4 ! \
    video/x-raw,width=320,height=240,framerate=30/1 ! \
    npuembed model="$MODEL" backend="$BACKEND" mean="<0.5>" std="<0.5>" \
      labels-file="$tmp/labels.txt" emit-messages=true ! \
    fakesink > "$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
  sed -n 's/.*npuembed, frame=(guint64)\([0-9]*\).*dims=(uint)\([0-9]*\).*core=(int)\([0-9]*\).*embedding-head=(float)< \([^,]*\), \([^,]*\), \([^,]*\),.*label=(string)\([^,]*\), score=(double)\([0-9.e-]*\).*/\1 \2 \3 \4 \5 \6 \7 \8/p' "$tmp/log" |
  while read -r frame dims core e0 e1 e2 label score; do
    printf '  frame %s  core %s  dims %s  embedding [%.4f, %.4f, %.4f, ...]  label %-8s score %.3f\n' \
      "$frame" "$core" "$dims" "$e0" "$e1" "$e2" "$label" "$score"
  done
done
