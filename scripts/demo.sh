#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job, run from an existing build folder ($1, default ./build): shows
# which backend serves (npu-info; the built-in simulator where no NPU exists),
# then streams test video through the npuembed GStreamer element (tiny SigLIP
# vision encoder, frames round robin over the three core slots) and prints
# each frame's embedding and zero-shot label. Kept apart from quickstart.sh
# so that it can be rerun on its own.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}

echo "== OpenNPU demo =="
"$B/tools/npu-info/npu-info"
echo
sh pipelines/demo-embed.sh "$B"
