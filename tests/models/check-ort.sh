#!/bin/sh
# SPDX-License-Identifier: MIT
# Confirms that ONNX Runtime agrees with torch on the test models' reference
# outputs (tests/models/data/*/out.*.npy). Installs the npm package
# onnxruntime-node (which carries its own linux-x64/arm64 native library)
# into a cache outside the source tree on first use:
#   $OPENNPU_ORT_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/onnxruntime-node
# Usage: check-ort.sh [MODEL_DIR...]   (default: every tests/models/data/*)
# Also: ninja -C build check-ort
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${OPENNPU_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/onnxruntime-node}
command -v node >/dev/null 2>&1 || { echo "check-ort: node (v16+) not found" >&2; exit 77; }
if [ ! -d "$dir/node_modules/onnxruntime-node" ]; then
  command -v npm >/dev/null 2>&1 || { echo "check-ort: npm not found" >&2; exit 77; }
  mkdir -p "$dir"
  echo "check-ort: installing onnxruntime-node into $dir"
  (cd "$dir" && npm install --silent --no-audit --no-fund --ignore-scripts onnxruntime-node)
fi
if [ $# -eq 0 ]; then
  set -- "$here"/data/*/
fi
exec node "$here/check-ort.mjs" "$dir" "$@"
