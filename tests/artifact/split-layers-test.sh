#!/bin/sh
# SPDX-License-Identifier: MIT
# split-layers-test.sh NPU_BENCH MODELS_DATA WORKDIR
# One frame with its layers split over three cores (npu-bench --split-layers,
# npu_prog_session_split_layers) on the sim backend, SigLIP tiny:
#  - the split program's outputs equal the one-core program's bit for bit, no task pair
#    touching the same bytes (one writing) overlaps on the modeled timeline, some tasks do
#    run in multi-core submits, and the latency is labelled with its timing model;
#  - the checks can fail: NPU_SPLIT_UNSAFE=1 plans as if no tasks conflicted, and
#    npu-bench must then report order violations and exit 1.
set -u
BENCH=$1 DATA=$2 WORK=$3/split-layers-test
rm -rf "$WORK"
mkdir -p "$WORK"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
M=$DATA/siglip_tiny

export NPU_PARTITION=supported
# NPU_SPLIT_FORCE=1: split every independent run, gain or not (this model's tasks take a
# few microseconds, less than a submit, so the planner alone keeps it on one core)
S=$WORK/split.txt
NPU_SPLIT_FORCE=1 "$BENCH" "$M/model.onnx" --runs 1 --warmup 0 --timing v2 --cores 3 \
  --frames 3 --split-layers > "$S" 2>&1 || fail "npu-bench --split-layers (forced)"
grep -q "outputs          equal to the one-core run, bit for bit" "$S" || fail "outputs"
grep -q "order check      0 violation(s)" "$S" || fail "order check"
grep -Eq "plan             [1-9][0-9]* of [0-9]+ tasks in [1-9]" "$S" \
  || fail "nothing ran on several cores"
grep -q "latency          one core .* ms, 3 cores .* ms  modeled (timing model v2)" "$S" \
  || fail "latency line"
grep -q "frames/s .* modeled (timing model v2)" "$S" || fail "round-robin line"

# the planner's own choice: runs and matches too
"$BENCH" "$M/model.onnx" --runs 1 --warmup 0 --split-layers > "$WORK/plain.txt" 2>&1 \
  || fail "npu-bench --split-layers"
grep -q "outputs          equal to the one-core run, bit for bit" "$WORK/plain.txt" \
  || fail "outputs (planner's choice)"

# a wrong split is caught
NPU_SPLIT_FORCE=1 NPU_SPLIT_UNSAFE=1 "$BENCH" "$M/model.onnx" --runs 1 --warmup 0 \
  --split-layers > "$WORK/unsafe.txt" 2>&1
[ $? -eq 1 ] || fail "NPU_SPLIT_UNSAFE=1: exit status 1 expected"
grep -Eq "order check      [1-9][0-9]* violation" "$WORK/unsafe.txt" \
  || fail "NPU_SPLIT_UNSAFE=1: no violation reported"

if [ $fails -ne 0 ]; then
  for f in "$WORK"/*.txt; do echo "== $f"; tail -20 "$f"; done
  exit 1
fi
echo "split-layers: ok"
