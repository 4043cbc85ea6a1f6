#!/bin/sh
# SPDX-License-Identifier: MIT
# tools-test.sh NPUC NPU_RUN NPU_BENCH MODELS_DATA WORKDIR
# The command-line side of the NPU path:
#  - npuc compiles a model to .npub; npu-run runs the .npub and the .onnx on
#    the sim backend with the same input and writes byte-identical outputs
#    (same partition mode, so the same program);
#  - npuc --info reads the artifact back; --explain lists every node with
#    both costs and the estimate; --emit=ir prints lowered IR with rk.* ops;
#  - npu-bench prints the per-frame figures with the timing-model label and
#    valid JSON, its per-op rows are all named NPU / CPU / conversion rows,
#    from the .npub and from the .onnx, and sum to the per-frame figures;
#  - errors: unknown options, a .npub given to npuc, a damaged .npub refused
#    by npu-run with the loader's message, exit statuses as documented.
set -u
NPUC=$1 RUN=$2 BENCH=$3 DATA=$4 WORK=$5/tools-test
rm -rf "$WORK"
mkdir -p "$WORK"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export NPU_PARTITION=supported
M=$DATA/siglip_tiny
IN="pixel_values=$M/in.pixel_values.npy"

"$NPUC" "$M/model.onnx" -o "$WORK/m.npub" > "$WORK/npuc.txt" 2>&1 || fail "npuc -o"
grep -q "wrote $WORK/m.npub" "$WORK/npuc.txt" || fail "npuc summary"
grep -q "modeled (timing model v1)" "$WORK/npuc.txt" || fail "npuc timing label"
"$RUN" "$WORK/m.npub" --backend sim --input "$IN" --output-dir "$WORK/o1" -q > /dev/null 2>&1 \
  || fail "npu-run .npub"
"$RUN" "$M/model.onnx" --backend sim --input "$IN" --output-dir "$WORK/o2" -q > /dev/null 2>&1 \
  || fail "npu-run .onnx"
for f in last_hidden_state pooler_output; do
  cmp -s "$WORK/o1/$f.npy" "$WORK/o2/$f.npy" || fail "outputs differ: $f"
done

"$NPUC" --info "$WORK/m.npub" > "$WORK/info.txt" 2>&1 || fail "npuc --info"
grep -q "source:   $M/model.onnx" "$WORK/info.txt" || fail "--info source"
grep -q "NPU jobs" "$WORK/info.txt" || fail "--info program"

"$NPUC" "$M/model.onnx" --explain -q > "$WORK/explain.txt" 2>&1 || fail "npuc --explain"
nodes=$(grep -c '^ *[0-9][0-9]*  ' "$WORK/explain.txt")
[ "$nodes" -ge 50 ] || fail "--explain lists $nodes nodes"
grep -q "timing model v1" "$WORK/explain.txt" || fail "--explain label"
grep -q "  reason\$" "$WORK/explain.txt" || fail "--explain reason column"
grep -q "^estimate: " "$WORK/explain.txt" || fail "--explain estimate line"

"$NPUC" "$M/model.onnx" --emit=ir > "$WORK/ir.txt" 2>&1 || fail "npuc --emit=ir"
grep -q "rk.Conv" "$WORK/ir.txt" || fail "--emit=ir has no rk.* op"
grep -q "^graph" "$WORK/ir.txt" || fail "--emit=ir is not IR text"

"$BENCH" "$WORK/m.npub" --runs 1 --json "$WORK/b.json" > "$WORK/bench.txt" 2>&1 || fail "npu-bench"
grep -q "NPU time .* ms  modeled (timing model v1)" "$WORK/bench.txt" || fail "bench label"
grep -q "submits" "$WORK/bench.txt" || fail "bench submits"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['per_frame']['submits']>0" \
  "$WORK/b.json" 2>/dev/null || fail "bench JSON"
# per-op rows: every NPU task attributed to a named node ('npu' rows, no per-job
# 'job' / 'npu~' fallback), and the rows sum to the run's per-frame figures;
# from the .npub (task names stored in it) and from the .onnx (compiled here)
"$BENCH" "$M/model.onnx" --runs 1 --json "$WORK/b2.json" > "$WORK/bench2.txt" 2>&1 ||
  fail "npu-bench on the .onnx"
# nodes without names (as many ONNX exports have them): rows named after their values
cat > "$WORK/unnamed.npuir" <<'IR'
# opennpu ir v1
graph "unnamed" opset=13 {
  input %x: f32[1,32,8,8]
  %r: f32[1,32,8,8] = Relu(%x)
  %y: f32[1,32,8,8] = Sigmoid(%r)
  output %y
}
IR
"$BENCH" "$WORK/unnamed.npuir" --runs 1 --json "$WORK/b3.json" > "$WORK/bench3.txt" 2>&1 ||
  fail "npu-bench on unnamed nodes"
grep -q "^r  *npu " "$WORK/bench3.txt" && grep -q "^y  *npu " "$WORK/bench3.txt" ||
  fail "bench: rows of unnamed nodes not named after their values"
for j in "$WORK/b.json" "$WORK/b2.json" "$WORK/b3.json"; do
  /usr/bin/python3 - "$j" <<'PY' || fail "bench per-op rows of $j"
import json, sys
d = json.load(open(sys.argv[1]))
f, ops = d['per_frame'], d['ops']
bad = [o['name'] for o in ops
       if o['kind'] not in ('npu', 'cpu', 'convert') or o['name'] in ('', '(unnamed)')]
if bad:
    sys.exit('rows not attributed to a named op: %s' % bad[:5])
npu = [o for o in ops if o['kind'] == 'npu']
if not npu:
    sys.exit('no npu rows')
ms = sum(o['npu_modeled_ms'] for o in npu)
if abs(ms - f['npu_modeled_ms']) > 1e-5 * len(npu) + 1e-9 * f['npu_modeled_ms']:
    sys.exit('npu ms: rows %.6f, frame %.6f' % (ms, f['npu_modeled_ms']))
for k, fk in (('submits', 'submits'), ('tasks', 'tasks'), ('dma_bytes', 'dma_bytes')):
    if sum(o[k] for o in npu) != f[fk]:
        sys.exit('%s: rows %d, frame %d' % (k, sum(o[k] for o in npu), f[fk]))
PY
done
grep -q "job(s) without task names" "$WORK/bench.txt" "$WORK/bench2.txt" && fail "bench: unnamed jobs"
grep -q "(sum of the rows)" "$WORK/bench2.txt" || fail "bench: sum row"

# errors
"$NPUC" > /dev/null 2>&1; [ $? -eq 2 ] || fail "npuc without a model: status 2"
"$NPUC" --bogus "$M/model.onnx" > /dev/null 2>&1; [ $? -eq 2 ] || fail "npuc --bogus: status 2"
"$NPUC" "$WORK/m.npub" > /dev/null 2>&1; [ $? -eq 2 ] || fail "npuc on a .npub: status 2"
"$NPUC" /nonexistent.onnx > /dev/null 2>&1; [ $? -eq 1 ] || fail "npuc missing model: status 1"
head -c 1000 "$WORK/m.npub" > "$WORK/cut.npub"
"$RUN" "$WORK/cut.npub" --backend sim > "$WORK/cut.txt" 2>&1; [ $? -eq 1 ] || fail "cut .npub: status 1"
grep -q "header says" "$WORK/cut.txt" || fail "cut .npub: message"
"$BENCH" "$M/model.onnx" --backend cpu > /dev/null 2>&1; [ $? -eq 2 ] || fail "bench on cpu: status 2"

if [ $fails -ne 0 ]; then
  echo "tools-test: $fails failure(s)"
  exit 1
fi
echo "tools-test: npuc, npu-run (.npub and .onnx identical), npu-bench: all good"
