#!/bin/sh
# SPDX-License-Identifier: MIT
# A video file through decodebin into npuinfer, printing the tensors the
# element attached (GST_DEBUG npuinfer:6 logs one line per frame).
#
#   sh pipelines/file-infer.sh FILE MODEL [BUILD_DIR]
#
# Without FILE (or with "-") a short test clip is made first.
set -eu
cd "$(dirname "$0")/.."
FILE=${1:--}
MODEL=${2:-tests/models/data/cnn_small/model.onnx}
B=${3:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
export GST_PLUGIN_PATH_1_0="$B/gst"
# the build tree's own registry, unless the caller names one (the tests give each run its own)
export GST_REGISTRY_1_0="${GST_REGISTRY_1_0:-$B/gst/registry-demo.bin}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$FILE" = "-" ]; then
  FILE=$tmp/clip.ogg
  gst-launch-1.0 -q videotestsrc num-buffers=60 pattern=ball ! \
    video/x-raw,width=320,height=240,framerate=30/1 ! theoraenc ! oggmux ! \
    filesink location="$FILE"
fi
GST_DEBUG_NO_COLOR=1 GST_DEBUG=${GST_DEBUG:-npuinfer:6} gst-launch-1.0 \
  filesrc location="$FILE" ! decodebin ! videoconvert ! \
  npuinfer model="$MODEL" backend="${NPU_BACKEND:-auto}" resize=letterbox ! \
  fakesink sync=false 2>&1 | grep -E "tensors|ERROR|Execution"
