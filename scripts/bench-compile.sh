#!/bin/sh
# SPDX-License-Identifier: MIT
# bench-compile.sh: compile time and simulator throughput (issue 16, items 3 and 4), one
# command; it prints figures and ratios and never fails on them (a benchmark, not a test).
#  1. `npuc --stats` (default partition, -o to a temporary .npub) against ONNX Runtime's
#     session creation of the same file (npm onnxruntime-node, one intra-op thread): best
#     CPU seconds and best wall seconds of --reps each, ratio ORT CPU / npuc CPU (>= 1: we
#     compile in at most ORT's session-create time). Models: SigLIP-B/16 when built
#     (`ninja -C build siglip-b16`), tests/models/data/siglip_tiny, and any MODEL.onnx given.
#  2. Chain scaling: Relu/Sigmoid/Neg chains of --chains nodes (IR text, as
#     tests/artifact/compile-chain-test.sh writes them) compiled with the default partition:
#     CPU seconds and microseconds per node (flat = per-node cost linear).
#  3. Simulator throughput: a MatMul 196x768x768 (constant B; made with /usr/bin/python3's
#     numpy + onnx) run on the simulator (`npu-run -b sim`, all on the NPU) and on the CPU
#     executor (`npu-run -b cpu -t 1`; B is constant, so this is the packed-B kernel of
#     core/cpu/npu-cpu-gemm-packed.c, not the path of npu-info's "cpu gemm" line, which names
#     the GEMM of products whose operands are both computed): host ms per modeled NPU ms, and
#     CPU-executor time / simulator time, best wall-clock run of each (the simulated fp16
#     GEMM's speed relative to the host's fp32 GEMM); then SigLIP-B/16 on the simulator when
#     built.
# CPU seconds are the figures to compare on a shared machine; the load is printed. BLAS and
# NPU_CPU_* variables of the caller's environment are unset (the default environment).
#
#   scripts/bench-compile.sh [-C BUILD_DIR] [--reps N] [--chains "2000 5000 10000 20000"]
#                            [--no-ort] [--no-sim] [MODEL.onnx...]
#
# ORT comes from $OPENNPU_ORT_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/
# onnxruntime-node), installed there with npm --ignore-scripts on first use
# (scripts/ort-env.sh); without node/npm the ORT column shows "-".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=$src/build
reps=3
chains="2000 5000 10000 20000"
use_ort=1
use_sim=1
while [ $# -gt 0 ]; do
  case $1 in
    -C) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --chains) chains=$2; shift 2 ;;
    --no-ort) use_ort=0; shift ;;
    --no-sim) use_sim=0; shift ;;
    -h|--help) sed -n '3,29p' "$0"; exit 0 ;;
    -*) echo "bench-compile: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
npuc=$build/tools/npuc/npuc
npu_run=$build/tools/npu-run/npu-run
[ -x "$npuc" ] && [ -x "$npu_run" ] ||
  { echo "bench-compile: npuc / npu-run not built in $build (ninja -C $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
# the default environment, as scripts/bench-ort.sh: BLAS and CPU-executor variables of the
# caller's shell are dropped, so that the fp32 GEMM path of part 3 (and npu-info's line) is
# the one a user who set nothing gets (OPENBLAS_CORETYPE changes which path runs)
blasvars=$(env | sed -n 's/^\(\(OPENBLAS\|GOTO\|OMP\|BLIS\|MKL\)_[A-Za-z0-9_]*\|NPU_CPU_[A-Za-z0-9_]*\)=.*/\1/p')
for v in $blasvars; do unset "$v"; done
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
     "load $(load)"
[ -z "$blasvars" ] || echo "unset for the default environment:" $blasvars
"$build/tools/npu-info/npu-info" -b sim 2>/dev/null | grep -E '^cpu (gemm|const B)' || true

# ---- ONNX Runtime -------------------------------------------------------------------------
# shellcheck source=scripts/ort-env.sh
. "$here/ort-env.sh"
if [ $use_ort -eq 1 ] && ! ort_ensure bench-compile; then
  echo "bench-compile: $ort_why: no ONNX Runtime figures"; use_ort=0
fi

# best CPU and wall seconds of `npuc --stats` over $reps compiles: "cpu wall" or "error"
npuc_best() {
  best_c="" best_w="" best_wc=""
  i=0
  while [ $i -lt "$reps" ]; do
    i=$((i + 1))
    "$npuc" "$@" -q --stats -o "$tmp/out.npub" > /dev/null 2> "$tmp/stats.txt" || { echo error; return; }
    w=$(sed -n 's/^stats: compile \([0-9.]*\) s wall.*/\1/p' "$tmp/stats.txt")
    c=$(sed -n 's/^stats: compile .*, \([0-9.]*\) s CPU.*/\1/p' "$tmp/stats.txt")
    wc=$(sed -n 's/^stats: written .*, \([0-9.]*\) s CPU.*/\1/p' "$tmp/stats.txt")
    best_wc=$(awk -v a="$best_wc" -v b="${wc:-0}" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
    best_c=$(awk -v a="$best_c" -v b="$c" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
    best_w=$(awk -v a="$best_w" -v b="$w" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
  done
  echo "$best_c $best_w $best_wc"
}

# ---- 1. compile vs ORT session create ------------------------------------------------------
set -- "$@"
[ -f "$build/tests/models/data/siglip_b16/model.onnx" ] &&
  set -- "$build/tests/models/data/siglip_b16/model.onnx" "$@"
[ -f "$src/tests/models/data/siglip_tiny/model.onnx" ] &&
  set -- "$@" "$src/tests/models/data/siglip_tiny/model.onnx"
echo
echo "1. compile (npuc --stats, default partition) vs ONNX Runtime session create, best of $reps"
printf '%-28s %12s %12s %12s %12s %10s %14s\n' model "npuc CPU s" "npuc wall s" "ORT CPU s" \
  "ORT wall s" "ORT/npuc" "+write CPU s"
for m in "$@"; do
  name=$(basename "$(dirname "$m")")
  [ "$name" = . ] && name=$(basename "$m" .onnx)
  r=$(npuc_best "$m")
  oc=- ow=-
  if [ $use_ort -eq 1 ]; then
    node "$here/bench-compile-ort.mjs" "$ort" "$reps" "$m" > "$tmp/ort.txt" 2>&1 || true
    oc=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' "$tmp/ort.txt")
    ow=$(sed -n 's/.* wall_s=\([0-9.]*\).*/\1/p' "$tmp/ort.txt")
    oc=${oc:--} ow=${ow:--}
  fi
  if [ "$r" = error ]; then
    printf '%-28s %12s\n' "$name" "npuc failed"
    continue
  fi
  set -- $r "$@"
  c=$1 w=$2 wc=$3
  shift 3
  printf '%-28s %12s %12s %12s %12s %10s %14s\n' "$name" "$c" "$w" "$oc" "$ow" \
    "$(awk -v o="$oc" -v c="$c" 'BEGIN { if (o == "-" || c <= 0) print "-"; else printf "%.2fx", o / c }')" \
    "$wc"
done
echo "(ORT/npuc: ORT's CPU seconds over ours; >= 1.00x means the compile takes at most ORT's" \
     "session creation; load now $(load))"
echo "(npuc CPU s: the compile in memory, npu_build, as ORT's session creation builds its" \
     "session without writing a file; +write CPU s: the whole process once the .npub and the" \
     "model's content hash are written)"

# ---- 2. chain scaling ---------------------------------------------------------------------
echo
echo "2. chain scaling (npuc --stats, default partition), best of $reps"
printf '%-12s %12s %12s %14s\n' nodes "CPU s" "wall s" "us per node"
for n in $chains; do
  awk -v n="$n" 'BEGIN {
    print "# opennpu ir v1"; print "graph \"chain\" opset=13 {"
    print "  input %t0: f32[1,16,8,8]"
    split("Relu Sigmoid Neg", ops, " ")
    for (i = 1; i <= n; i++)
      printf "  %%t%d: f32[1,16,8,8] = %s(%%t%d) <name=\"n%d\">\n", i, ops[(i % 3) + 1], i - 1, i
    printf "  output %%t%d\n}\n", n }' > "$tmp/chain.npuir"
  r=$(npuc_best "$tmp/chain.npuir")
  if [ "$r" = error ]; then
    printf '%-12s %12s\n' "$n" "npuc failed"
    continue
  fi
  echo "$n $r" | awk '{ printf "%-12s %12s %12s %14.1f\n", $1, $2, $3, $2 / $1 * 1e6 }'
done

# ---- 3. simulator throughput ----------------------------------------------------------------
[ $use_sim -eq 1 ] || exit 0
echo
echo "3. simulator throughput (npu-run, best of $reps runs after warm-up)"
# "min_ms npu_ms" of one npu-run
run_min() {
  "$npu_run" "$@" > "$tmp/run.txt" 2>&1 || { echo "error"; return; }
  mn=$(sed -n 's/^time .* mean, \([0-9.]*\) ms min.*/\1/p' "$tmp/run.txt")
  npu=$(sed -n 's/^stats  NPU time \([0-9.]*\) ms.*/\1/p' "$tmp/run.txt")
  echo "${mn:-?} ${npu:-0}"
}
if /usr/bin/python3 -c 'import numpy, onnx' 2>/dev/null; then
  mkdir -p "$tmp/mm"
  /usr/bin/python3 - "$tmp/mm" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]; M, K, N = 196, 768, 768
rng = np.random.default_rng(0)
b = numpy_helper.from_array((rng.standard_normal((K, N)) * 0.05).astype(np.float32), 'B')
g = helper.make_graph([helper.make_node('MatMul', ['a', 'B'], ['y'], name='mm')], 'mm',
                      [helper.make_tensor_value_info('a', TensorProto.FLOAT, [M, K])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [M, N])], [b])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 8
onnx.save(m, d + '/model.onnx')
np.save(d + '/in.a.npy', rng.standard_normal((M, K)).astype(np.float32))
PY
  n=$((reps * 3))
  s=$(NPU_PARTITION=supported run_min "$tmp/mm/model.onnx" -b sim -n "$n" --input a="$tmp/mm/in.a.npy")
  c=$(run_min "$tmp/mm/model.onnx" -b cpu -t 1 -n "$n" --input a="$tmp/mm/in.a.npy")
  echo "$s $c" | awk '{
    printf "MatMul 196x768x768: simulator %s ms host for %s ms modeled NPU time (timing model v2):" \
           " %.1f ms host per modeled ms\n", $1, $2, ($2 > 0 ? $1 / $2 : 0)
    printf "MatMul 196x768x768: CPU executor (fp32 GEMM, 1 thread) %s ms; simulated fp16 GEMM at" \
           " %.2fx the host fp32 GEMM speed (CPU-executor time / simulator time, best wall-clock" \
           " runs; goal >= 0.5x)\n", $3, \
           ($1 > 0 ? $3 / $1 : 0) }'
else
  echo "MatMul: /usr/bin/python3 has no numpy/onnx: skipped"
fi
sig=$build/tests/models/data/siglip_b16
if [ -f "$sig/model.onnx" ] && [ -f "$sig/in.pixel_values.npy" ]; then
  s=$(run_min "$sig/model.onnx" -b sim -n 2 --input pixel_values="$sig/in.pixel_values.npy")
  echo "$s" | awk '{ printf "SigLIP-B/16: simulator %s ms host per frame for %s ms modeled NPU time" \
    " (timing model v2; default partition, CPU steps included): %.1f ms host per modeled ms\n", \
    $1, $2, ($2 > 0 ? $1 / $2 : 0) }'
else
  echo "SigLIP-B/16 not built (ninja -C $build siglip-b16): skipped"
fi
echo "load now $(load)"
