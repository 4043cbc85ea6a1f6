#!/bin/sh
# SPDX-License-Identifier: MIT
# The simulator's outputs do not depend on the host's BLAS threading (issue 16
# item 4): each model runs through `npu-run -b sim` with OPENBLAS_NUM_THREADS=1
# and again with =2 (the model's checked-in inputs, every supported node on the
# NPU: NPU_PARTITION=supported), and every output .npy must be byte-identical.
# The models are conv and matmul networks whose CNA tasks go through the
# simulator's GEMM (core/sim/sim-gemm.c).
# Usage: sim-blas-threads.sh NPU_RUN MODELS_DATA_DIR WORK_DIR [WRAPPER]
# (WRAPPER: e.g. qemu-aarch64, runs NPU_RUN in a cross build.)
set -u
run=$1 data=$2 work=$3/sim-blas-threads wrap=${4:-}
rm -rf "$work" && mkdir -p "$work"
fails=0 outs=0
for m in cnn_small mobilenet_tiny siglip_tiny yolo_tiny unet_tiny bert_tiny gpt2_tiny crnn_tiny; do
  ins=
  for f in "$data/$m"/in.*.npy; do
    n=$(basename "$f" .npy)
    ins="$ins -i ${n#in.}=$f"
  done
  for t in 1 2; do
    # shellcheck disable=SC2086 # $ins: word splitting wanted (paths have no blanks)
    # shellcheck disable=SC2086 # $wrap: empty or one program name
    if ! NPU_PARTITION=supported OPENBLAS_NUM_THREADS=$t $wrap "$run" "$data/$m/model.onnx" -b sim \
        $ins -q -o "$work/$m.t$t" >"$work/$m.t$t.log" 2>&1; then
      echo "FAIL: npu-run -b sim $m with OPENBLAS_NUM_THREADS=$t:"
      sed 's/^/    /' "$work/$m.t$t.log"
      fails=$((fails + 1))
      continue 2
    fi
  done
  n=0
  for f in "$work/$m.t1"/*.npy; do
    [ -e "$f" ] || break
    n=$((n + 1))
    if cmp -s "$f" "$work/$m.t2/$(basename "$f")"; then
      echo "ok   $m $(basename "$f"): identical with 1 and 2 BLAS threads"
    else
      echo "FAIL: $m $(basename "$f") differs between OPENBLAS_NUM_THREADS=1 and 2"
      fails=$((fails + 1))
    fi
  done
  if [ "$n" -eq 0 ]; then
    echo "FAIL: $m wrote no outputs"
    fails=$((fails + 1))
  fi
  outs=$((outs + n))
done
echo "$outs outputs compared, $fails failures"
[ "$fails" -eq 0 ]
