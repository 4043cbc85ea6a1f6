#!/bin/sh
# SPDX-License-Identifier: MIT
# tools-test.sh NPUC NPU_RUN NPU_BENCH MODELS_DATA WORKDIR
# The command-line side of the NPU path:
#  - npuc compiles a model to .npub; npu-run runs the .npub and the .onnx on
#    the sim backend with the same input and writes byte-identical outputs
#    (same partition mode, so the same program);
#  - npuc --evidence prints the task counts per evidence level, summing to the
#    program's tasks, and with --explain a per-op table;
#  - npuc --info reads the artifact back; --explain lists every node with
#    both costs and the estimate; --emit=ir prints lowered IR with rk.* ops;
#  - npu-bench prints the per-frame figures with the timing-model label and
#    valid JSON, its per-op rows are all named NPU / CPU / conversion rows,
#    from the .npub and from the .onnx, and sum to the per-frame figures;
#  - errors: unknown options, a .npub given to npuc, a damaged .npub refused
#    by npu-run with the loader's message, exit statuses as documented;
#  - the CPU cost model: partitioning by cost with the default (board, off the
#    device) compiles the same artifact twice and says so in --explain and
#    npu-bench; --cpu-cost and NPU_CPU_COST errors are clear.
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
grep -q "modeled (timing model v2)" "$WORK/npuc.txt" || fail "npuc timing label"
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

"$NPUC" "$M/model.onnx" --evidence > "$WORK/ev.txt" 2>&1 || fail "npuc --evidence"
ev=$(grep '^evidence: V=[0-9]* M=[0-9]* O=[0-9]* T=[0-9]*$' "$WORK/ev.txt")
[ -n "$ev" ] || fail "npuc --evidence line: $(cat "$WORK/ev.txt")"
ev_sum=$(echo "$ev" | sed 's/[^0-9 ]//g' | { read -r a b c d; echo $((a + b + c + d)); })
tasks=$(sed -n 's/.*NPU jobs with \([0-9]*\) tasks.*/\1/p' "$WORK/ev.txt")
[ "$ev_sum" = "$tasks" ] || fail "--evidence counts $ev_sum tasks, the program has $tasks"
"$NPUC" "$M/model.onnx" --evidence --explain -q > "$WORK/evx.txt" 2>&1 || fail "npuc --evidence --explain"
grep -q '^op (IR node) .* tasks level  T patterns$' "$WORK/evx.txt" || fail "--evidence --explain table"
grep -q ' T  .*\.T' "$WORK/evx.txt" || fail "--evidence --explain names T patterns"
grep -q '^uncovered:' "$WORK/evx.txt" && fail "--evidence --explain: writes outside the ledger"
"$NPUC" "$M/model.onnx" --explain -q > "$WORK/explain.txt" 2>&1 || fail "npuc --explain"
nodes=$(grep -c '^ *[0-9][0-9]*  ' "$WORK/explain.txt")
[ "$nodes" -ge 50 ] || fail "--explain lists $nodes nodes"
grep -q "timing model v2" "$WORK/explain.txt" || fail "--explain label"
grep -q "  reason\$" "$WORK/explain.txt" || fail "--explain reason column"
grep -q "^estimate: " "$WORK/explain.txt" || fail "--explain estimate line"

"$NPUC" "$M/model.onnx" --emit=ir > "$WORK/ir.txt" 2>&1 || fail "npuc --emit=ir"
grep -q "rk.Conv" "$WORK/ir.txt" || fail "--emit=ir has no rk.* op"
grep -q "^graph" "$WORK/ir.txt" || fail "--emit=ir is not IR text"
# The same model compiles to the same bytes whatever the heap held: YOLO's packed conv
# weights end in padding that once carried heap garbage into the artifact (the two
# MALLOC_PERTURB_ values fill fresh memory differently)
MALLOC_PERTURB_=165 "$NPUC" "$DATA/yolo_tiny/model.onnx" -p supported -q -o "$WORK/rep1.npub" \
  || fail "npuc yolo_tiny"
MALLOC_PERTURB_=0 "$NPUC" "$DATA/yolo_tiny/model.onnx" -p supported -q -o "$WORK/rep2.npub" \
  || fail "npuc yolo_tiny (2)"
cmp -s "$WORK/rep1.npub" "$WORK/rep2.npub" || fail "two compiles of yolo_tiny differ"
# --dump-after: the IR after a front-end and a back-end pass, on stderr; lower's dump
# holds rk.* ops, fuse_bias's does not; an unknown pass is a command-line error
"$NPUC" "$M/model.onnx" --dump-after fuse_bias,lower -q > "$WORK/dump.out" 2> "$WORK/dump.txt" \
  || fail "npuc --dump-after"
[ "$(grep -c '^# ---- IR after' "$WORK/dump.txt")" -eq 2 ] || fail "--dump-after: two dumps"
sed -n '/^# ---- IR after lower/,$p' "$WORK/dump.txt" | grep -q "rk.Conv" \
  || fail "--dump-after lower has no rk.* op"
sed -n '/^# ---- IR after fuse_bias/,/^# ---- IR after lower/p' "$WORK/dump.txt" \
  | grep -q "rk\." && fail "--dump-after fuse_bias already lowered"
"$NPUC" "$M/model.onnx" --dump-after lowr > "$WORK/dump-bad.txt" 2>&1; [ $? -eq 2 ] \
  || fail "npuc --dump-after lowr: status 2"
grep -q "unknown pass" "$WORK/dump-bad.txt" || fail "--dump-after lowr: message"

"$BENCH" "$WORK/m.npub" --runs 1 --json "$WORK/b.json" > "$WORK/bench.txt" 2>&1 || fail "npu-bench"
grep -q "NPU time .* ms  modeled (timing model v2)" "$WORK/bench.txt" || fail "bench label"
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

# the CPU cost model: board by default off the device (the same program on every host
# and every run), named in --explain; bad values are clear errors
unset NPU_PARTITION
"$NPUC" "$M/model.onnx" --explain -o "$WORK/b1.npub" > "$WORK/board1.txt" 2>&1 \
  || fail "npuc --explain (cost)"
"$NPUC" "$M/model.onnx" --cpu-cost board --explain -o "$WORK/b2.npub" > "$WORK/board2.txt" 2>&1 \
  || fail "npuc --cpu-cost board"
grep -q "CPU cost model 'board'.*RK3588 CPU model v1, not measured on a board" "$WORK/board1.txt" \
  || fail "--explain names the board model"
grep -v "^wrote " "$WORK/board1.txt" > "$WORK/board1.cut"
grep -v "^wrote " "$WORK/board2.txt" > "$WORK/board2.cut"
cmp -s "$WORK/board1.cut" "$WORK/board2.cut" || fail "board model: two compiles differ"
cmp -s "$WORK/b1.npub" "$WORK/b2.npub" || fail "board model: two artifacts differ"
"$NPUC" "$M/model.onnx" --cpu-cost measured --explain -q > "$WORK/meas.txt" 2>&1 \
  || fail "npuc --cpu-cost measured"
grep -q "CPU cost model 'measured': CPU cost measured on this host" "$WORK/meas.txt" \
  || fail "--explain names the measured model"
"$NPUC" "$M/model.onnx" --cpu-cost fast > "$WORK/e1.txt" 2>&1; [ $? -eq 2 ] \
  || fail "npuc --cpu-cost fast: status 2"
grep -q "board, measured or auto" "$WORK/e1.txt" || fail "npuc --cpu-cost fast: message"
NPU_CPU_COST=fast "$NPUC" "$M/model.onnx" > "$WORK/e2.txt" 2>&1; [ $? -eq 1 ] \
  || fail "NPU_CPU_COST=fast npuc: status 1"
grep -q "NPU_CPU_COST=fast: the CPU cost model must be auto, board or measured" "$WORK/e2.txt" \
  || fail "NPU_CPU_COST=fast: message"
"$RUN" "$M/model.onnx" --cpu-cost fast > "$WORK/e3.txt" 2>&1; [ $? -eq 2 ] \
  || fail "npu-run --cpu-cost fast: status 2"
grep -q "board, measured or auto" "$WORK/e3.txt" || fail "npu-run --cpu-cost fast: message"
"$BENCH" "$M/model.onnx" --cpu-cost fast > "$WORK/e4.txt" 2>&1; [ $? -eq 2 ] \
  || fail "npu-bench --cpu-cost fast: status 2"
grep -q "board, measured or auto" "$WORK/e4.txt" || fail "npu-bench --cpu-cost fast: message"
"$BENCH" "$M/model.onnx" --runs 1 --warmup 0 > "$WORK/bench-cost.txt" 2>&1 \
  || fail "npu-bench (cost)"
grep -q "CPU costs modeled (RK3588 CPU model v1" "$WORK/bench-cost.txt" \
  || fail "npu-bench names the board model"
export NPU_PARTITION=supported

# timing models: --timing / NPU_TIMING label every modeled figure with the model used;
# a bad name is a command-line error naming the choices; --cores runs frames round robin
"$BENCH" "$M/model.onnx" --runs 1 --warmup 0 --timing v1 > "$WORK/bench-v1.txt" 2>&1 \
  || fail "npu-bench --timing v1"
grep -q "NPU time .* ms  modeled (timing model v1)" "$WORK/bench-v1.txt" || fail "bench v1 label"
NPU_TIMING=v1 "$BENCH" "$M/model.onnx" --runs 1 --warmup 0 > "$WORK/bench-v1e.txt" 2>&1 \
  || fail "NPU_TIMING=v1 npu-bench"
grep -q "NPU time .* ms  modeled (timing model v1)" "$WORK/bench-v1e.txt" \
  || fail "NPU_TIMING=v1 label"
"$BENCH" "$M/model.onnx" --timing v7 > "$WORK/e5.txt" 2>&1; [ $? -eq 2 ] \
  || fail "npu-bench --timing v7: status 2"
grep -q "v1, v2" "$WORK/e5.txt" || fail "npu-bench --timing v7: message"
"$NPUC" "$M/model.onnx" --timing v7 > "$WORK/e6.txt" 2>&1; [ $? -eq 2 ] \
  || fail "npuc --timing v7: status 2"
"$NPUC" "$M/model.onnx" --timing v1 -o "$WORK/v1.npub" > "$WORK/npuc-v1.txt" 2>&1 \
  || fail "npuc --timing v1"
grep -q "modeled (timing model v1), compile-time estimate" "$WORK/npuc-v1.txt" \
  || fail "npuc --timing v1 label"
"$BENCH" "$M/model.onnx" --runs 1 --warmup 0 --timing v2 --cores 3 --frames 6 \
  > "$WORK/bench-rr.txt" 2>&1 || fail "npu-bench --cores 3"
grep -q "6 frames round robin over 3 core(s)" "$WORK/bench-rr.txt" && \
  grep -q "frames/s .* modeled (timing model v2)" "$WORK/bench-rr.txt" || fail "--cores output"

# -o never destroys what it should not (issue 17): the input model (by name or through a hard
# link), a FIFO, a symbolic link to one, a symbolic link, a folder. Only files made here: a
# real device node would be replaced before the fix.
cp "$M/model.onnx" "$WORK/self.onnx"
ln "$WORK/self.onnx" "$WORK/self-link.onnx"
mkfifo "$WORK/fifo"
ln -s "$WORK/fifo" "$WORK/to-fifo"
ln -s "$WORK/m.npub" "$WORK/to-file"
for o in self.onnx self-link.onnx fifo to-fifo to-file .; do
  if "$NPUC" "$WORK/self.onnx" -q -o "$WORK/$o" > "$WORK/o.txt" 2>&1; then
    fail "npuc -o $o accepted"
  fi
  grep -q "npuc: -o $WORK/$o " "$WORK/o.txt" || fail "npuc -o $o: $(cat "$WORK/o.txt")"
done
cmp -s "$M/model.onnx" "$WORK/self.onnx" || fail "npuc -o the input changed it"
[ -p "$WORK/fifo" ] || fail "npuc -o replaced the FIFO"
[ -L "$WORK/to-fifo" ] && [ -L "$WORK/to-file" ] || fail "npuc -o replaced a symbolic link"
"$NPUC" "$WORK/self.onnx" -q -o "$WORK/self.onnx" 2>&1 | grep -q "is the input model" ||
  fail "npuc -o input: message"
"$NPUC" "$WORK/self.onnx" -q -o "$WORK/fifo" 2>&1 | grep -q "not a regular file (a FIFO)" ||
  fail "npuc -o fifo: message"
# a regular file is replaced atomically, as before
cp "$WORK/m.npub" "$WORK/old.npub"
"$NPUC" "$WORK/self.onnx" -q -o "$WORK/old.npub" || fail "npuc -o over a regular file"
"$NPUC" --info "$WORK/old.npub" > /dev/null 2>&1 || fail "npuc -o over a regular file: unreadable"

# a memory budget checked before anything is allocated, with the sizes in the error
"$RUN" "$M/model.onnx" --backend cpu --max-memory 1K -q > "$WORK/mem.txt" 2>&1
[ $? -eq 1 ] || fail "--max-memory 1K: exit status"
grep -q "inputs and outputs need .* more than the memory budget of 1024 bytes (--max-memory)" \
  "$WORK/mem.txt" || fail "--max-memory message: $(cat "$WORK/mem.txt")"
grep -q "the largest is 'last_hidden_state'\|the largest is 'pixel_values'" "$WORK/mem.txt" ||
  fail "--max-memory names the largest tensor: $(cat "$WORK/mem.txt")"
"$RUN" "$M/model.onnx" --backend cpu --max-memory 1G -q > /dev/null 2>&1 ||
  fail "--max-memory 1G refused a small model"
"$RUN" "$M/model.onnx" --backend cpu --max-memory lots -q > "$WORK/mem.txt" 2>&1
[ $? -eq 2 ] || fail "--max-memory lots: exit status"

# --dims: a name that is no symbolic dim of the model, and a negative size, are errors
"$RUN" "$M/model.onnx" --backend cpu --dims nosuch=3 -q > "$WORK/dims.txt" 2>&1 &&
  fail "--dims nosuch=3 accepted"
grep -q "'nosuch' is not a symbolic dim of any input (the model's are 'batch')" "$WORK/dims.txt" ||
  fail "--dims nosuch: $(cat "$WORK/dims.txt")"
"$RUN" "$M/model.onnx" --backend cpu --dims batch=-1 -q > "$WORK/dims.txt" 2>&1 &&
  fail "--dims batch=-1 accepted"
grep -q "'batch=-1': the size must be a whole number" "$WORK/dims.txt" ||
  fail "--dims batch=-1: $(cat "$WORK/dims.txt")"

# outputs on a full disk: an error, and no truncated .npy left behind (a 4 KiB tmpfs in a
# private mount namespace; where that is not allowed, RLIMIT_FSIZE through ulimit -f)
"$RUN" "$M/model.onnx" --backend cpu -q -o "$WORK/ref" > /dev/null 2>&1 || fail "npu-run -o ref"
cat > "$WORK/full.sh" << EOF
if [ "\$1" = tmpfs ]; then
  mkdir -p "$WORK/mnt" && mount -t tmpfs -o size=4k tmpfs "$WORK/mnt" || exit 77
else
  mkdir -p "$WORK/mnt"
  ulimit -f 8
fi
"$RUN" "$M/model.onnx" --backend cpu -q -o "$WORK/mnt/out" > "$WORK/full.txt" 2>&1
echo \$? > "$WORK/full.rc"
for f in "$WORK"/mnt/out/*.npy; do
  [ -e "\$f" ] || continue
  cmp -s "\$f" "$WORK/ref/\$(basename "\$f")" || echo "\$f: \$(wc -c < "\$f") bytes"
done > "$WORK/full.bad"
EOF
unshare -rm sh "$WORK/full.sh" tmpfs 2> /dev/null || (trap '' XFSZ && sh "$WORK/full.sh" ulimit)
[ "$(cat "$WORK/full.rc")" = 1 ] || fail "full disk: exit $(cat "$WORK/full.rc")"
grep -q "write error (No space left on device\|write error (File too large" "$WORK/full.txt" ||
  fail "full disk: message $(cat "$WORK/full.txt")"
[ ! -s "$WORK/full.bad" ] || fail "full disk: incomplete .npy left: $(cat "$WORK/full.bad")"

# the file type comes from the content, not the name; an empty file says so; a compile
# cache that cannot be written is a warning when the run succeeds
: > "$WORK/empty.onnx"
"$RUN" "$WORK/empty.onnx" -q > "$WORK/t.txt" 2>&1 && fail "an empty model accepted"
grep -q "the file is empty" "$WORK/t.txt" || fail "empty model: $(cat "$WORK/t.txt")"
cp "$WORK/m.npub" "$WORK/npub-named.onnx"
cp "$M/model.onnx" "$WORK/onnx-named.npub"
for f in npub-named.onnx onnx-named.npub; do
  "$RUN" "$WORK/$f" --backend sim --input "$IN" -q -o "$WORK/o-$f" > "$WORK/t.txt" 2>&1 ||
    fail "$f: $(cat "$WORK/t.txt")"
  cmp -s "$WORK/o1/pooler_output.npy" "$WORK/o-$f/pooler_output.npy" || fail "$f: other output"
done
: > "$WORK/not-a-folder"
"$RUN" "$M/model.onnx" --backend sim -q --cache-dir "$WORK/not-a-folder" > "$WORK/t.txt" 2>&1 ||
  fail "an unwritable cache failed the run: $(cat "$WORK/t.txt")"
grep -q "warning: .*cannot write the compile cache entry" "$WORK/t.txt" ||
  fail "cache warning: $(cat "$WORK/t.txt")"
! grep -q "opennpu error" "$WORK/t.txt" || fail "cache failure logged as an error: $(cat "$WORK/t.txt")"

if [ $fails -ne 0 ]; then
  echo "tools-test: $fails failure(s)"
  exit 1
fi
echo "tools-test: npuc, npu-run (.npub and .onnx identical), npu-bench: all good"
