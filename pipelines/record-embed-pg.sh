#!/bin/sh
# SPDX-License-Identifier: MIT
# A camera recording its embeddings to a PostgreSQL server: every frame of
# the V4L2 camera through npuembed, one row per frame on the server (a fleet
# of boards can record into one database; any machine queries it).
#
#   sh pipelines/record-embed-pg.sh MODEL DB [SOURCE] [BUILD_DIR]
#
# DB: postgresql://user@server/embeddings, postgres://..., or a conninfo
# string ("host=server dbname=embeddings user=npu"). SOURCE: camera[:DEVICE]
# (default camera:/dev/video0), test[:PATTERN] (videotestsrc), a file or a
# URI. FRAMES=N stops after N frames (default: until EOS or Ctrl-C, which
# commits the last rows). Then, on any machine:
#   build/pipelines/npu-embed-store query -m MODEL -d DB --image cat.png -k 5
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:?model (.onnx or .npub)}
DB=${2:?database (postgresql://... or conninfo)}
SRC=${3:-camera:/dev/video0}
B=${4:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
export GST_PLUGIN_PATH_1_0="$B/gst"
exec "$B/pipelines/npu-embed-store" record -m "$MODEL" -d "$DB" -s "$SRC" \
  -b "${NPU_BACKEND:-auto}" ${FRAMES:+-n "$FRAMES"}
