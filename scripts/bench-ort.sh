#!/bin/sh
# SPDX-License-Identifier: MIT
# bench-ort.sh: our CPU executor against ONNX Runtime, one command (issue 16). For every
# model folder (model.onnx + in.<input>.npy) both run the same inputs with the same thread
# count (1 and 2 by default) in the default environment (no BLAS variables are set here);
# model by model, ORT then ours (so that both see the same load on a shared machine), each
# side's best time over --runs runs (after warm-up) is compared and the ratio ORT time / our
# time printed (> 1: we are faster), with the geometric mean per thread count. --rounds R
# repeats that ORT-then-ours pair R times per model and keeps each side's best over all
# rounds: a burst of load from another process then rarely lands on one side only.
# With --compile also `npuc --stats` (compile for the NPU, default partition) against ORT's
# session creation of the same file: the ratio ORT / npuc by CPU seconds (wall in brackets).
#
#   scripts/bench-ort.sh [-C BUILD_DIR] [--runs N] [--rounds R] [--threads "1 2"]
#                        [--compile] [--make-models] [MODEL_DIR...]
#
# Default models: tests/models/data/*/ and whatever BUILD_DIR/tests/models/data holds (the
# on-demand bench models: `ninja -C build bench-models-data` or `ninja -C build siglip-b16`).
# --make-models first builds the issue's networks that are missing there, with random
# weights (Debian's /usr/bin/python3 with torch; ~1.3 GB, minutes): ResNet-18/50,
# MobileNetV2/V3, YOLOv8n (640), SigLIP-B/16 (tests/models/make-models.py) and GPT-2 small
# over 128 tokens and 1 token (scripts/bench-ort-models.py).
# The meson benchmark `bench-ort` (meson test -C build --benchmark --suite bench-ort) and the
# last stage of scripts/test.sh run this script; neither gates on its figures.
# ORT is the npm package onnxruntime-node, installed with --ignore-scripts into
# $OPENNPU_ORT_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/onnxruntime-node) on first
# use, as tests/models/check-ort.sh does. Needs node and npm; exits 77 (skip) without them.
# Timing is wall clock on a possibly shared machine: take ratios from one run of this script.
# With 1 thread each side's CPU time per run is printed too (ours: the kernels on the calling
# thread, NPU_CPU_PROFILE=cpu; ORT: the node process, process.cpuUsage), with its own ratio:
# under load it is the steadier figure for models that run for milliseconds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=$src/build
runs=10
rounds=1
threads="1 2"
compile=0
make_models=0
while [ $# -gt 0 ]; do
  case $1 in
    -C) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --compile) compile=1; shift ;;
    --make-models) make_models=1; shift ;;
    -h|--help) sed -n '3,31p' "$0"; exit 0 ;;
    -*) echo "bench-ort: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
npu_run=$build/tools/npu-run/npu-run
npuc=$build/tools/npuc/npuc
[ -x "$npu_run" ] || { echo "bench-ort: $npu_run not built (ninja -C $build)" >&2; exit 1; }
# shellcheck source=scripts/ort-env.sh
. "$here/ort-env.sh"
ort_ensure bench-ort || { echo "bench-ort: $ort_why: skipped" >&2; exit 77; }
if [ $make_models -eq 1 ]; then
  py=/usr/bin/python3
  "$py" -c 'import torch, onnx' 2>/dev/null ||
    { echo "bench-ort: --make-models needs $py with torch and onnx" >&2; exit 1; }
  out=$build/tests/models/data
  mkdir -p "$out"
  for m in resnet50 mobilenet_v2 yolov8n siglip_b16; do
    [ -f "$out/$m/model.onnx" ] || "$py" "$src/tests/models/make-models.py" --out "$out" "$m"
  done
  for m in resnet18 mobilenet_v3 gpt2_small gpt2_small_1tok; do
    [ -f "$out/$m/model.onnx" ] || "$py" "$here/bench-ort-models.py" --out "$out" "$m"
  done
fi
if [ $# -eq 0 ]; then
  set -- "$src"/tests/models/data/*/
  for d in "$build"/tests/models/data/*/; do
    [ -f "$d/model.onnx" ] && set -- "$@" "$d"
  done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# our best time (ms) of a model folder, or "error"; with 1 thread also the CPU time per run
# of the kernels (NPU_CPU_PROFILE=cpu: the calling thread's CPU time) in $tmp/ours-cpu.txt:
# the total of a 2-run process subtracted from that of the (runs + 2)-run one, divided by
# runs, so that the first (cold) run counts no more than ORT's two untimed warm-up runs;
# the best time always comes from a run without NPU_CPU_PROFILE (the default environment)
ours() {
  d=$1 t=$2
  set --
  for f in "$d"/in.*.npy; do
    [ -f "$f" ] || continue
    n=$(basename "$f" .npy)
    set -- "$@" --input "${n#in.}=$f"
  done
  n=$((runs + 2))
  prof=0
  : > "$tmp/ours-cpu.txt"
  if [ "$t" = 1 ]; then
    prof=cpu
    NPU_CPU_PROFILE=cpu "$npu_run" "$d/model.onnx" -b cpu -t 1 -n 2 "$@" > "$tmp/run2.txt" 2>&1 ||
      { echo error; return; }
  fi
  NPU_CPU_PROFILE=$prof "$npu_run" "$d/model.onnx" -b cpu -t "$t" -n $n "$@" > "$tmp/run.txt" 2>&1 ||
    { echo error; return; }
  if [ "$t" = 1 ]; then
    c2=$(sed -n 's/^cpu profile .*): \([0-9.]*\) ms in kernels.*/\1/p' "$tmp/run2.txt" | tail -n 1)
    cn=$(sed -n 's/^cpu profile .*): \([0-9.]*\) ms in kernels.*/\1/p' "$tmp/run.txt" | tail -n 1)
    [ -n "$c2" ] && [ -n "$cn" ] &&
      awk -v a="$c2" -v b="$cn" -v r="$runs" 'BEGIN { printf "%.4f", (b - a) / r }' > "$tmp/ours-cpu.txt"
    # the wall time from a run without the profiler: it reads the thread's CPU clock (a system
    # call) twice per op, which doubled the wall time of the 40-op test models
    "$npu_run" "$d/model.onnx" -b cpu -t 1 -n $n "$@" > "$tmp/run.txt" 2>&1 ||
      { echo error; return; }
  fi
  sed -n 's/^time .* mean, \([0-9.]*\) ms min.*/\1/p' "$tmp/run.txt"
}

echo "CPU executor vs ONNX Runtime: best of $runs runs each ($rounds round(s) of ORT then ours per model), same inputs, default environment"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
ortv=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$ort/node_modules/onnxruntime-node/package.json" |
       head -n 1)
echo "ONNX Runtime: onnxruntime-node ${ortv:-?} from $ort"
# the default environment: BLAS and CPU-executor variables of the caller's shell are dropped
# (both sides then choose their kernels as they would for a user who set nothing)
blasvars=$(env | sed -n 's/^\(\(OPENBLAS\|GOTO\|OMP\|BLIS\|MKL\)_[A-Za-z0-9_]*\|NPU_CPU_[A-Za-z0-9_]*\)=.*/\1/p')
for v in $blasvars; do unset "$v"; done
[ -z "$blasvars" ] || echo "unset for the default environment:" $blasvars
"$build/tools/npu-info/npu-info" -b sim 2>/dev/null | grep -E '^cpu (gemm|const B)' || true
for t in $threads; do
  printf '\n%-24s %8s %12s %12s %10s' model threads "ours (ms)" "ORT (ms)" "ORT/ours"
  [ "$t" = 1 ] && printf ' %12s %12s %10s' "ours CPU" "ORT CPU" "CPU ratio"
  printf '\n'
  logsum=0 count=0 clogsum=0 ccount=0
  for d in "$@"; do
    name=$(basename "$d")
    # ORT then ours, model by model: on a shared machine both see the same load; with
    # --rounds each side's best over the rounds (ours: the CPU time of the best round too)
    o= oc_best=
    round=0
    while [ $round -lt "$rounds" ]; do
      round=$((round + 1))
      node "$here/bench-ort.mjs" "$ort" "$t" "$runs" "$d" >> "$tmp/ort-$t.txt"
      o1=$(ours "$d" "$t")
      if [ "$o1" = error ] || [ -z "$o1" ]; then
        o=${o1:-}
        break
      fi
      if [ -z "$o" ] || awk -v a="$o1" -v b="$o" 'BEGIN { exit !(a < b) }'; then
        o=$o1
      fi
      oc1=$(cat "$tmp/ours-cpu.txt" 2>/dev/null)
      if [ -n "$oc1" ] && { [ -z "$oc_best" ] || awk -v a="$oc1" -v b="$oc_best" 'BEGIN { exit !(a < b) }'; }; then
        oc_best=$oc1
      fi
    done
    printf '%s' "$oc_best" > "$tmp/ours-cpu.txt"
    r=$(awk -v n="$name" '$1 == "ort" && $2 == n && $4 ~ /^create_ms/ {
          sub("min_ms=", "", $5); if (m == "" || $5 + 0 < m + 0) m = $5 } END { print m }' \
        "$tmp/ort-$t.txt")
    # npu-run prints ms with 3 decimals: below 10 us the figure is too coarse for a ratio
    if [ "$o" != error ] && [ -n "$o" ] && awk -v o="$o" 'BEGIN { exit !(o < 0.010) }'; then
      printf '%-24s %8s %12s %12s %10s\n' "$name" "$t" "<0.010" "${r:-error}" "(not timed)"
      continue
    fi
    if [ "$o" = error ] || [ -z "$o" ] || [ -z "$r" ]; then
      printf '%-24s %8s %12s %12s %10s\n' "$name" "$t" "${o:-?}" "${r:-error}" "-"
      continue
    fi
    line=$(awk -v o="$o" -v r="$r" 'BEGIN { x = r / o; printf "%.3f %.6f", x, log(x) }')
    printf '%-24s %8s %12s %12s %9sx' "$name" "$t" "$o" "$r" "${line% *}"
    logsum=$(awk -v a="$logsum" -v b="${line#* }" 'BEGIN { printf "%.6f", a + b }')
    count=$((count + 1))
    if [ "$t" = 1 ]; then
      # CPU time per run: the same ratio without the time other processes had the core
      oc=$(cat "$tmp/ours-cpu.txt" 2>/dev/null)
      rc=$(awk -v n="$name" '$1 == "ort" && $2 == n && $4 ~ /^create_ms/ {
             sub("cpu_ms=", "", $7); if (m == "" || $7 + 0 < m + 0) m = $7 } END { print m }' \
           "$tmp/ort-$t.txt")
      if [ -n "$oc" ] && [ -n "$rc" ] && awk -v o="$oc" 'BEGIN { exit !(o > 0) }'; then
        cl=$(awk -v o="$oc" -v r="$rc" 'BEGIN { x = r / o; printf "%.3f %.6f", x, log(x) }')
        printf ' %12s %12s %9sx' "$oc" "$rc" "${cl% *}"
        clogsum=$(awk -v a="$clogsum" -v b="${cl#* }" 'BEGIN { printf "%.6f", a + b }')
        ccount=$((ccount + 1))
      fi
    fi
    printf '\n'
  done
  [ $count -gt 0 ] && awk -v s="$logsum" -v n="$count" -v t="$t" \
    'BEGIN { printf "geometric mean of ORT/ours, %d thread(s), %d models: %.3fx\n", t, n, exp(s / n) }'
  [ $ccount -gt 0 ] && awk -v s="$clogsum" -v n="$ccount" \
    'BEGIN { printf "geometric mean of the CPU-time ratio, 1 thread, %d models: %.3fx\n", n, exp(s / n) }'
done

if [ $compile -eq 1 ]; then
  # CPU seconds on both sides (npuc: the process; ORT: the node process around
  # InferenceSession.create) are the figures to compare on a shared machine; wall for reference
  printf '\n%-24s %12s %12s %12s %12s %10s %10s\n' model "npuc wall s" "npuc CPU s" \
    "ORT wall s" "ORT CPU s" "ORT/npuc" "(wall)"
  for d in "$@"; do
    name=$(basename "$d")
    "$npuc" "$d/model.onnx" -q --stats > /dev/null 2> "$tmp/stats.txt" || { echo "$name: npuc failed"; continue; }
    w=$(sed -n 's/^stats: compile \([0-9.]*\) s wall.*/\1/p' "$tmp/stats.txt")
    c=$(sed -n 's/^stats: .* \([0-9.]*\) s CPU.*/\1/p' "$tmp/stats.txt")
    r=$(awk -v n="$name" '$1 == "ort" && $2 == n { sub("create_ms=", "", $4);
          if (m == "" || $4 + 0 < m + 0) m = $4 } END { if (m != "") print m / 1000 }' \
        "$tmp/ort-$(echo $threads | cut -d' ' -f1).txt")
    rc=$(awk -v n="$name" '$1 == "ort" && $2 == n && $8 ~ /^create_cpu_ms=/ {
          sub("create_cpu_ms=", "", $8); if (m == "" || $8 + 0 < m + 0) m = $8 }
          END { if (m != "") print m / 1000 }' "$tmp/ort-$(echo $threads | cut -d' ' -f1).txt")
    printf '%-24s %12s %12s %12s %12s %9sx %9sx\n' "$name" "$w" "$c" "${r:-?}" "${rc:-?}" \
      "$(awk -v c="$c" -v r="${rc:-0}" 'BEGIN { printf "%.2f", (c > 0 ? r / c : 0) }')" \
      "$(awk -v w="$w" -v r="${r:-0}" 'BEGIN { printf "%.2f", (w > 0 ? r / w : 0) }')"
  done
fi
