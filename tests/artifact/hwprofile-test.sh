#!/bin/sh
# SPDX-License-Identifier: MIT
# hwprofile-test.sh NPUC NPU_RUN DATA WORK: the compile profiles (issue 11 item 3,
# docs/evidence.md "Compile profiles"), every node the back end supports on the NPU:
#  - npuc --hw-profile verified --evidence prints T=0 (no uncovered write either) for
#    transformer and CNN test models, while fast prints T>0 (the profile changed
#    something), and the verified counts sum to the program's tasks, some on the NPU;
#  - $NPU_HW_PROFILE=verified gives the same program as --hw-profile verified;
#  - --evidence --explain under verified names the nodes kept on the CPU and the T
#    pattern that decided each;
#  - the simulator's allow-list at level O (NPU_SIM_EVIDENCE=O) refuses the fast
#    program and runs the verified one (the model outputs are compared with torch's
#    by the model-sim-verified-* tests);
#  - a bad --hw-profile or $NPU_HW_PROFILE is a clear error or warning.
set -u
NPUC=$1 RUN=$2 DATA=$3 WORK=$4/hwprofile-test
rm -rf "$WORK"
mkdir -p "$WORK"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export NPU_PARTITION=supported
unset NPU_HW_PROFILE

counts() { # evidence line -> "V M O T"
  sed -n 's/^evidence: V=\([0-9]*\) M=\([0-9]*\) O=\([0-9]*\) T=\([0-9]*\)$/\1 \2 \3 \4/p' "$1"
}

for m in siglip_tiny gpt2_tiny bert_tiny cnn_small mobilenet_tiny yolo_tiny; do
  M=$DATA/$m/model.onnx
  "$NPUC" "$M" --hw-profile fast --evidence > "$WORK/$m-fast.txt" 2>&1 || fail "$m: npuc fast"
  "$NPUC" "$M" --hw-profile verified --evidence > "$WORK/$m-ver.txt" 2>&1 ||
    fail "$m: npuc verified: $(cat "$WORK/$m-ver.txt")"
  set -- $(counts "$WORK/$m-fast.txt")
  [ $# -eq 4 ] || { fail "$m: no evidence line (fast): $(cat "$WORK/$m-fast.txt")"; continue; }
  [ "$4" -gt 0 ] || fail "$m: the fast program has no T task (nothing to verify)"
  set -- $(counts "$WORK/$m-ver.txt")
  [ $# -eq 4 ] || { fail "$m: no evidence line (verified): $(cat "$WORK/$m-ver.txt")"; continue; }
  [ "$4" = 0 ] || fail "$m: verified program has T=$4"
  sum=$(($1 + $2 + $3 + $4))
  tasks=$(sed -n 's/.*NPU jobs with \([0-9]*\) tasks.*/\1/p' "$WORK/$m-ver.txt")
  [ "$sum" = "$tasks" ] || fail "$m: verified evidence counts $sum tasks, the program has $tasks"
  [ "$sum" -gt 0 ] || fail "$m: verified program has no NPU task"
  NPU_HW_PROFILE=verified "$NPUC" "$M" --evidence > "$WORK/$m-env.txt" 2>&1 || fail "$m: env"
  cmp -s "$WORK/$m-ver.txt" "$WORK/$m-env.txt" || fail "$m: NPU_HW_PROFILE=verified differs"
done

M=$DATA/siglip_tiny
"$NPUC" "$M/model.onnx" --hw-profile verified --evidence --explain -q > "$WORK/evx.txt" 2>&1 ||
  fail "npuc --evidence --explain verified"
grep -q '^/layers.0/mlp/fc1/MatMul  *npu  *[0-9]*  *V ' "$WORK/evx.txt" ||
  fail "verified: fc1's matmul is not a V task on the NPU"
grep -q '^/layers.0/layer_norm1/LayerNormalization  *cpu  *0  *-  [A-Z_]*\.[A-Z0-9_]*\.T$' \
  "$WORK/evx.txt" || fail "verified --explain: the layer norm's deciding T pattern"
grep -q 'hw-profile verified: its lowering writes DPU\.[A-Z_]* = 0x[0-9a-f]*, pattern' \
  "$WORK/evx.txt" || fail "verified --explain: the partition gives the refusal's reason"
grep -q '^uncovered:' "$WORK/evx.txt" && fail "verified: writes outside the ledger"

IN="pixel_values=$M/in.pixel_values.npy"
NPU_SIM_EVIDENCE=O "$RUN" "$M/model.onnx" --backend sim --hw-profile fast --input "$IN" -q \
  > "$WORK/run-fast.txt" 2>&1 && fail "the fast program passed the level-O allow-list"
grep -q "evidence\|ledger" "$WORK/run-fast.txt" ||
  fail "the allow-list's refusal does not say why: $(cat "$WORK/run-fast.txt")"
NPU_SIM_EVIDENCE=O "$RUN" "$M/model.onnx" --backend sim --hw-profile verified --input "$IN" \
  -q > "$WORK/run-ver.txt" 2>&1 || fail "verified program under NPU_SIM_EVIDENCE=O: \
$(cat "$WORK/run-ver.txt")"

"$NPUC" "$M/model.onnx" --hw-profile slow > "$WORK/bad.txt" 2>&1
[ $? = 2 ] || fail "--hw-profile slow: exit status"
grep -q "use fast, verified or auto" "$WORK/bad.txt" || fail "--hw-profile slow: message"
"$RUN" "$M/model.onnx" --backend sim --hw-profile slow > "$WORK/bad2.txt" 2>&1
[ $? = 2 ] || fail "npu-run --hw-profile slow: exit status"
NPU_HW_PROFILE=slow "$NPUC" "$M/model.onnx" --evidence > "$WORK/bad3.txt" 2>&1 ||
  fail "NPU_HW_PROFILE=slow stopped the compile"
grep -q "NPU_HW_PROFILE=slow" "$WORK/bad3.txt" || fail "NPU_HW_PROFILE=slow: no warning"

[ "$fails" = 0 ] || { echo "hwprofile-test: $fails failure(s)"; exit 1; }
echo "hwprofile-test: ok"
