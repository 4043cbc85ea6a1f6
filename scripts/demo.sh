#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job, run on the simulator from an existing build folder ($1, default
# ./build). Kept separate from quickstart.sh so it can be rerun on its own.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}

echo "== OpenNPU demo (simulator backend) =="
for tool in npu-info; do
  if [ -x "$B/tools/$tool/$tool" ]; then
    "$B/tools/$tool/$tool"
  fi
done
