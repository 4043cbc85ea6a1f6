#!/bin/sh
# SPDX-License-Identifier: MIT
# bench-int8.sh: the CPU executor's int8 products (core/cpu/npu-cpu-qgemm.c) against their
# reference loops (the same build with NPU_CPU_QGEMM=ref) and against ONNX Runtime, in one
# script (issues 12/16). Generates small quantized models first (QLinearMatMul at M = 1 and
# 128, DynamicQuantizeLinear + MatMulInteger, a QLinearConv net: scripts/bench-int8-models.py,
# Debian's /usr/bin/python3 with numpy and onnx) into BUILD_DIR/bench-int8-models, then per
# model, one after the other so that all three see the same load: ORT (1 thread), ours,
# ours with the reference loops. Printed per run: best wall time, and CPU time (ours: the
# kernels' thread CPU time, NPU_CPU_PROFILE=cpu; ORT: the node process's), with the ratios
# ref/ours and ORT/ours over CPU time (> 1: ours is faster), the steadier figure on a
# loaded machine; geometric means at the end. 1 thread on every side.
#
#   scripts/bench-int8.sh [-C BUILD_DIR] [--runs N] [--ref-runs N] [MODEL_DIR...]
#
# ORT is onnxruntime-node in $OPENNPU_ORT_DIR (see scripts/ort-env.sh); exits 77 (skip)
# without node or python's onnx. Nothing here gates on the figures.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=$src/build
runs=10
ref_runs=3
while [ $# -gt 0 ]; do
  case $1 in
    -C) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --ref-runs) ref_runs=$2; shift 2 ;;
    -h|--help) sed -n '3,18p' "$0"; exit 0 ;;
    -*) echo "bench-int8: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
npu_run=$build/tools/npu-run/npu-run
[ -x "$npu_run" ] || { echo "bench-int8: $npu_run not built (ninja -C $build)" >&2; exit 1; }
# shellcheck source=scripts/ort-env.sh
. "$here/ort-env.sh"
ort_ensure bench-int8 || { echo "bench-int8: $ort_why: skipped" >&2; exit 77; }
if [ $# -eq 0 ]; then
  py=/usr/bin/python3
  "$py" -c 'import numpy, onnx' 2>/dev/null ||
    { echo "bench-int8: $py has no numpy/onnx: skipped" >&2; exit 77; }
  out=$build/bench-int8-models
  "$py" "$here/bench-int8-models.py" --out "$out" > /dev/null
  set -- "$out"/*/
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the default environment (as scripts/bench-ort.sh): BLAS and CPU-executor variables go
blasvars=$(env | sed -n 's/^\(\(OPENBLAS\|GOTO\|OMP\|BLIS\|MKL\)_[A-Za-z0-9_]*\|NPU_CPU_[A-Za-z0-9_]*\)=.*/\1/p')
for v in $blasvars; do unset "$v"; done

# ours DIR RUNS [VAR=VALUE]: "best_ms cpu_ms" (cpu: kernels' CPU time per run, the total of
# a 2-run process subtracted from a (RUNS + 2)-run one, divided by RUNS), or "error"
ours() {
  d=$1 r=$2 e=${3:-NPU_CPU_QGEMM=}
  set --
  for f in "$d"/in.*.npy; do
    n=$(basename "$f" .npy)
    set -- "$@" --input "${n#in.}=$f"
  done
  env "$e" NPU_CPU_PROFILE=cpu "$npu_run" "$d/model.onnx" -b cpu -t 1 -n 2 "$@" \
    > "$tmp/r2.txt" 2>&1 || { echo error; return; }
  env "$e" NPU_CPU_PROFILE=cpu "$npu_run" "$d/model.onnx" -b cpu -t 1 -n $((r + 2)) "$@" \
    > "$tmp/rn.txt" 2>&1 || { echo error; return; }
  env "$e" "$npu_run" "$d/model.onnx" -b cpu -t 1 -n $((r + 2)) "$@" > "$tmp/rw.txt" 2>&1 ||
    { echo error; return; }
  c2=$(sed -n 's/^cpu profile .*): \([0-9.]*\) ms in kernels.*/\1/p' "$tmp/r2.txt" | tail -n 1)
  cn=$(sed -n 's/^cpu profile .*): \([0-9.]*\) ms in kernels.*/\1/p' "$tmp/rn.txt" | tail -n 1)
  w=$(sed -n 's/^time .* mean, \([0-9.]*\) ms min.*/\1/p' "$tmp/rw.txt")
  awk -v a="${c2:-0}" -v b="${cn:-0}" -v r="$r" -v w="${w:-0}" \
    'BEGIN { printf "%s %.3f\n", w, (b - a) / r }'
}

echo "int8 products: ours vs the reference loops (NPU_CPU_QGEMM=ref) vs ONNX Runtime, 1 thread"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
ortv=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$ort/node_modules/onnxruntime-node/package.json" |
       head -n 1)
echo "ONNX Runtime: onnxruntime-node ${ortv:-?} from $ort; best of $runs runs (reference: $ref_runs)"
"$build/tools/npu-info/npu-info" -b sim 2>/dev/null | grep '^cpu ' || true
printf '\n%-20s %9s %9s %10s %9s %9s %9s %9s\n' model "ours ms" "ours CPU" "ref CPU" "ORT ms" \
  "ORT CPU" "ref/ours" "ORT/ours"
ls=0 lo=0 n=0
for d in "$@"; do
  name=$(basename "$d")
  node "$here/bench-ort.mjs" "$ort" 1 "$runs" "$d" > "$tmp/ort.txt" 2>&1 || true
  om=$(sed -n 's/^ort .* min_ms=\([0-9.]*\) .*/\1/p' "$tmp/ort.txt")
  oc=$(sed -n 's/^ort .* cpu_ms=\([0-9.]*\).*/\1/p' "$tmp/ort.txt")
  set -- $(ours "$d" "$runs")
  if [ "$1" = error ]; then
    printf '%-20s %9s\n' "$name" error
    continue
  fi
  us=$1 uc=$2
  set -- $(ours "$d" "$ref_runs" NPU_CPU_QGEMM=ref)
  rc=${2:-?}
  line=$(awk -v u="$uc" -v r="$rc" -v o="${oc:-0}" 'BEGIN {
    rr = (u > 0 && r > 0) ? r / u : 0; ro = (u > 0 && o > 0) ? o / u : 0
    printf "%.2fx %.2fx %.6f %.6f", rr, ro, (rr > 0 ? log(rr) : 0), (ro > 0 ? log(ro) : 0) }')
  set -- $line
  printf '%-20s %9s %9s %10s %9s %9s %9s %9s\n' "$name" "$us" "$uc" "$rc" "${om:-error}" \
    "${oc:-error}" "$1" "$2"
  ls=$(awk -v a="$ls" -v b="$3" 'BEGIN { printf "%.6f", a + b }')
  lo=$(awk -v a="$lo" -v b="$4" 'BEGIN { printf "%.6f", a + b }')
  n=$((n + 1))
done
[ $n -gt 0 ] && awk -v a="$ls" -v b="$lo" -v n="$n" 'BEGIN {
  printf "geometric mean over %d models (CPU time): ref/ours %.2fx, ORT/ours %.2fx\n",
         n, exp(a / n), exp(b / n) }'
exit 0
