#!/bin/sh
# SPDX-License-Identifier: MIT
# npu-run's command line and its error paths: each bad invocation must exit
# with the documented status (2: command line or input file, 1: load/run)
# and say what is wrong; random inputs must be reproducible by seed.
# Usage: npu-run-errors.sh NPU_RUN MODELS_DATA_DIR WORK_DIR
set -u
run=$1 data=$2 work=$3/npu-run-errors
rm -rf "$work" && mkdir -p "$work"
fails=0 checks=0

# expect STATUS PATTERN -- ARGS...: npu-run ARGS exits STATUS and its
# stdout+stderr match the (grep -E) PATTERN.
expect() {
  want=$1 pat=$2
  shift 3
  checks=$((checks + 1))
  "$run" "$@" >"$work/out.txt" 2>&1
  got=$?
  if [ "$got" -ne "$want" ] || ! grep -Eq -- "$pat" "$work/out.txt"; then
    fails=$((fails + 1))
    echo "FAIL: npu-run $* -> exit $got (want $want), output:"
    sed 's/^/    /' "$work/out.txt"
    echo "    (wanted a line matching: $pat)"
  else
    echo "ok   exit $got: npu-run $*"
  fi
}

lg=$data/linear_gelu
gp=$data/gpt2_tiny
db=$data/dynamic_batch

expect 2 "no MODEL"            -- 
expect 0 "SYNOPSIS"            -- --help
expect 2 "more than one MODEL" -- "$lg/model.onnx" "$gp/model.onnx"
expect 2 "--input wants NAME=FILE"  -- "$lg/model.onnx" --input x
expect 2 "given twice"         -- "$lg/model.onnx" -i "x=$lg/in.x.npy" -i "x=$lg/in.x.npy"
expect 2 "--runs wants"        -- "$lg/model.onnx" --runs 0
expect 2 "--core wants"        -- "$lg/model.onnx" --core 7
expect 2 "--int-range wants"   -- "$lg/model.onnx" --int-range 5,5
expect 1 "nonexistent.onnx"    -- "$work/nonexistent.onnx"
printf 'this is not a protobuf' >"$work/garbage.onnx"
expect 1 "cannot load"         -- "$work/garbage.onnx"
expect 2 "has no input 'nope'.*'x'" -- "$lg/model.onnx" -i "nope=$lg/in.x.npy"
expect 2 "cannot open"         -- "$lg/model.onnx" -i "x=$work/missing.npy"
expect 2 "holds f32.*wants i64" -- "$gp/model.onnx" -i "input_ids=$lg/in.x.npy"
expect 2 "has shape \[3, 1, 8, 8\], the model wants \[2, 1, 8, 8\]" -- \
  "$db/model.onnx" -i "x=$db/in.x.npy" --dims batch=2
expect 2 "has shape \[3, 1, 8, 8\], the model wants \[2, 16\]" -- \
  "$lg/model.onnx" -i "x=$db/in.x.npy"
# Two input files that disagree on a symbolic dim they share.
expect 1 "dim 'batch': input 'attention_mask' \(axis 0\) gives 1, another input 3" -- \
  "$gp/model.onnx" -b cpu -i "input_ids=$gp/batch3/in.input_ids.npy" \
  -i "attention_mask=$gp/in.attention_mask.npy"
head -c 100 "$lg/in.x.npy" >"$work/truncated.npy"
expect 2 "truncated"           -- "$lg/model.onnx" -i "x=$work/truncated.npy"
expect 1 "cannot create"       -- "$lg/model.onnx" -o "$work/no/such/dir"

# External data: the model alone, without its model.onnx.data, must not load.
mkdir -p "$work/ext" && cp "$data/external_data/model.onnx" "$work/ext/"
expect 1 "cannot load"         -- "$work/ext/model.onnx"

# Random inputs: documented labels, reproducible by seed, different by seed.
expect 0 "input_ids .*random \(seed 7\)" -- "$gp/model.onnx" -b cpu -s 7 -o "$work/r1" -n 2
expect 0 "time .* over 2 run\(s\) on backend cpu" -- "$gp/model.onnx" -b cpu -s 7 -o "$work/r2" -n 2
expect 0 "random"              -- "$gp/model.onnx" -b cpu -s 8 -o "$work/r3"
checks=$((checks + 2))
if ! cmp -s "$work/r1/logits.npy" "$work/r2/logits.npy"; then
  fails=$((fails + 1)); echo "FAIL: same seed, different outputs"
fi
if cmp -s "$work/r1/logits.npy" "$work/r3/logits.npy"; then
  fails=$((fails + 1)); echo "FAIL: different seeds, same outputs"
fi
# Given inputs mixed with random ones, --dims for a symbolic batch.
expect 0 "attention_mask .*random"  -- "$gp/model.onnx" -b cpu -i "input_ids=$gp/in.input_ids.npy"
expect 0 "output y .*\[3, 5\]"  -- "$db/model.onnx" -b cpu --dims batch=3
# Without --dims a symbolic dim takes the --input file's size, and passes it on
# to the other inputs with that dim (attention_mask follows input_ids).
expect 0 "output y .*\[3, 5\]"  -- "$db/model.onnx" -b cpu -i "x=$db/in.x.npy"
expect 0 "attention_mask .*\[3, 16\] random" -- "$gp/model.onnx" -b cpu \
  -i "input_ids=$gp/batch3/in.input_ids.npy"
# Output names that are not file names (see npu-run --help, OUTPUT FILES).
expect 0 "written as .*out_scores_0-1.npy" -- "$data/odd_names/model.onnx" -b cpu -o "$work/odd"
checks=$((checks + 1))
for f in out_scores_0 out_scores_0-1 _hidden; do
  [ -f "$work/odd/$f.npy" ] || { fails=$((fails + 1)); echo "FAIL: $work/odd/$f.npy missing"; }
done

echo "npu-run-errors: $((checks - fails)) of $checks checks passed"
[ "$fails" -eq 0 ]
