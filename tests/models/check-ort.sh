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
# shellcheck source=scripts/ort-env.sh
. "$here/../../scripts/ort-env.sh"
if ! ort_ensure check-ort; then
  echo "check-ort: $ort_why (needs node v16+ and npm)" >&2
  [ "$ort_why" = "cannot install onnxruntime-node" ] && exit 1
  exit 77
fi
if [ $# -eq 0 ]; then
  set -- "$here"/data/*/
fi
exec node "$here/check-ort.mjs" "$ort" "$@"
