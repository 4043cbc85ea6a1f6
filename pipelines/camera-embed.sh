#!/bin/sh
# SPDX-License-Identifier: MIT
# On the board: a V4L2 camera into npuembed on the three NPU cores, frames
# the NPU cannot keep up with passed on without metadata (drop=pass), one
# message per embedded frame, video on screen.
#
#   sh pipelines/camera-embed.sh MODEL [DEVICE] [BUILD_DIR]
#
# Record the embeddings instead:
#   build/pipelines/npu-embed-store record -m MODEL -d cam.db -s camera:/dev/video0
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:?model (.onnx or .npub)}
DEV=${2:-/dev/video0}
B=${3:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
export GST_PLUGIN_PATH_1_0="$B/gst"
exec gst-launch-1.0 -m \
  v4l2src device="$DEV" ! video/x-raw,width=640,height=480 ! videoconvert ! \
  npuembed model="$MODEL" backend="${NPU_BACKEND:-auto}" cores=7 drop=pass \
    resize=crop cache-dir="${XDG_CACHE_HOME:-$HOME/.cache}/opennpu" \
    emit-messages=true ! \
  videoconvert ! autovideosink sync=false
