#!/bin/sh
# SPDX-License-Identifier: MIT
# Object detection: videotestsrc into npuinfer (letterbox) and npudetect
# (with tracking), logging every detection (GST_DEBUG npudetect:6 writes one
# line per box: label, class, confidence, rectangle in frame pixels, track).
#
#   sh pipelines/detect.sh [MODEL] [BUILD_DIR] [LABELS]
#
# MODEL is a YOLOv8/YOLO11 (or YOLOv5, SSD-style) ONNX export or .npub; by
# default the tiny fixed-output test detector the build makes
# (BUILD_DIR/tests/gst/detector_v8.onnx). NPU_BACKEND picks the backend
# (default auto), FRAMES the number of frames (default 10).
set -eu
cd "$(dirname "$0")/.."
B=${2:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
MODEL=${1:-$B/tests/gst/detector_v8.onnx}
LABELS=${3:-}
export GST_PLUGIN_PATH_1_0="$B/gst"
# the build tree's own registry, unless the caller names one (the tests give each run its own)
export GST_REGISTRY_1_0="${GST_REGISTRY_1_0:-$B/gst/registry-demo.bin}"
GST_DEBUG_NO_COLOR=1 GST_DEBUG=${GST_DEBUG:-npudetect:6} gst-launch-1.0 \
  videotestsrc num-buffers="${FRAMES:-10}" ! \
  video/x-raw,width=320,height=240,framerate=30/1 ! \
  npuinfer model="$MODEL" backend="${NPU_BACKEND:-auto}" resize=letterbox ! \
  npudetect tracking=true ${LABELS:+labels="$LABELS"} ! \
  fakesink sync=false 2>&1 | grep -E "detection [0-9]|ERROR|Execution"
