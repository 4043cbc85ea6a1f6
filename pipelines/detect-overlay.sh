#!/bin/sh
# SPDX-License-Identifier: MIT
# Detections drawn into the video: videotestsrc into npuinfer (letterbox),
# npudetect (tracking) and npuoverlay (boxes, labels, scores, track ids),
# each frame written as a PNG (OUT/frame-00000.png, ...).
#
#   sh pipelines/detect-overlay.sh [MODEL] [BUILD_DIR] [OUT] [LABELS]
#
# MODEL as in detect.sh (default: the build's fixed-output test detector,
# BUILD_DIR/tests/gst/detector_v8.onnx); OUT defaults to ./overlay-frames.
# NPU_BACKEND picks the backend (default auto), FRAMES the number of frames
# (default 10), PATTERN the videotestsrc pattern (default smpte).
set -eu
cd "$(dirname "$0")/.."
B=${2:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
MODEL=${1:-$B/tests/gst/detector_v8.onnx}
OUT=${3:-overlay-frames}
LABELS=${4:-}
mkdir -p "$OUT"
export GST_PLUGIN_PATH_1_0="$B/gst"
# the build tree's own registry, unless the caller names one (the tests give each run its own)
export GST_REGISTRY_1_0="${GST_REGISTRY_1_0:-$B/gst/registry-demo.bin}"
gst-launch-1.0 \
  videotestsrc num-buffers="${FRAMES:-10}" pattern="${PATTERN:-smpte}" ! \
  video/x-raw,format=RGB,width=320,height=240,framerate=30/1 ! \
  npuinfer model="$MODEL" backend="${NPU_BACKEND:-auto}" resize=letterbox ! \
  npudetect tracking=true ${LABELS:+labels="$LABELS"} ! \
  npuoverlay ! pngenc ! multifilesink location="$OUT/frame-%05d.png"
