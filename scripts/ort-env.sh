# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC2034 # ort and ort_why are read by the scripts sourcing this
# ort-env.sh: where ONNX Runtime (the npm package onnxruntime-node) lives for the scripts
# that compare against it, sourced (`. scripts/ort-env.sh`) by scripts/bench-ort.sh,
# scripts/bench-compile.sh, tests/models/check-ort.sh and tests/quant/qdq-check.sh.
# Sets $ort to $OPENNPU_ORT_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/onnxruntime-node,
# and defines:
#   ort_have        true when node runs and onnxruntime-node is installed in $ort;
#   ort_ensure WHO  the same, installing onnxruntime-node there with npm --ignore-scripts
#                   on first use ("WHO: installing ..." on stdout); else false with the
#                   reason in $ort_why ("node not found", "npm not found", "cannot install
#                   onnxruntime-node"), for the caller to print as it sees fit.
ort=${OPENNPU_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/onnxruntime-node}
ort_why=

ort_have() {
  command -v node >/dev/null 2>&1 && [ -d "$ort/node_modules/onnxruntime-node" ]
}

ort_ensure() {
  if ! command -v node >/dev/null 2>&1; then
    ort_why="node not found"; return 1
  fi
  [ -d "$ort/node_modules/onnxruntime-node" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    ort_why="npm not found"; return 1
  fi
  echo "$1: installing onnxruntime-node into $ort"
  if ! { mkdir -p "$ort" &&
         (cd "$ort" && npm install --silent --no-audit --no-fund --ignore-scripts onnxruntime-node); }
  then
    ort_why="cannot install onnxruntime-node"; return 1
  fi
}
