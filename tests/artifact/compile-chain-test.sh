#!/bin/sh
# SPDX-License-Identifier: MIT
# compile-chain-test.sh: compile-time paths at scale (issue 16). A long chain of
# elementwise nodes, written as IR text, is compiled for the NPU (-p supported: every node
# a DPU lowering whose dry runs predict their producers' views) and with the default
# partition; each twice, and the two artifacts must be byte-identical (the predictions'
# memo and the register index must not make the output depend on anything but the model).
# Every test model is compiled the same way twice. `npuc --stats` must report the compile
# time and peak memory. No time limit is asserted: scripts/bench-compile.sh measures.
#   compile-chain-test.sh NPUC MODELS_DIR WORKDIR
set -eu
npuc=$1 models=$2 work=$3/compile-chain
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

# A chain of N Relu/Sigmoid/Neg nodes on [1,16,8,8], alternating so that no pass folds it.
chain() {
  awk -v n="$1" 'BEGIN {
    print "# opennpu ir v1"; print "graph \"chain\" opset=13 {"
    print "  input %t0: f32[1,16,8,8]"
    split("Relu Sigmoid Neg", ops, " ")
    for (i = 1; i <= n; i++)
      printf "  %%t%d: f32[1,16,8,8] = %s(%%t%d) <name=\"n%d\">\n", i, ops[(i % 3) + 1], i - 1, i
    printf "  output %%t%d\n}\n", n }'
}
chain 1500 > "$work/chain.npuir"
for p in supported cost; do
  "$npuc" "$work/chain.npuir" -p $p -o "$work/a-$p.npub" -q --stats 2> "$work/stats-$p.txt" ||
    { cat "$work/stats-$p.txt" >&2; fail "chain of 1500 nodes (-p $p) does not compile"; }
  grep -q '^stats: compile [0-9.]* s wall .* peak memory [0-9.]* MB (maxrss)' "$work/stats-$p.txt" ||
    { cat "$work/stats-$p.txt" >&2; fail "npuc --stats printed no compile time / peak memory"; }
  "$npuc" "$work/chain.npuir" -p $p -o "$work/b-$p.npub" -q
  cmp -s "$work/a-$p.npub" "$work/b-$p.npub" || fail "chain (-p $p): two compiles differ"
  echo "ok chain 1500 -p $p: $(cat "$work/stats-$p.txt")"
done
grep -q ', [1-9][0-9]* jobs$' "$work/stats-supported.txt" || fail "chain (-p supported): no NPU job"

# Past one launch's 4,095 tasks (facts §4.1): 4,500 nodes of 1-2 tasks each on the NPU must
# be cut into several jobs (the program validator refuses a longer one when loading).
chain 4500 > "$work/long.npuir"
"$npuc" "$work/long.npuir" -p supported -o "$work/long.npub" > "$work/long.txt" 2>&1 ||
  { cat "$work/long.txt" >&2; fail "chain of 4500 nodes (-p supported) does not compile"; }
sed -n 's/^program: .*(\([0-9]*\) CPU, \([0-9]*\) NPU jobs with \([0-9]*\) tasks.*/\1 \2 \3/p' \
  "$work/long.txt" > "$work/long.counts"
read -r cpu jobs tasks < "$work/long.counts" || fail "no program line: $(cat "$work/long.txt")"
[ "$cpu" -eq 0 ] && [ "$tasks" -gt 4095 ] && [ "$jobs" -ge $(((tasks + 4094) / 4095)) ] ||
  fail "chain of 4500: $cpu CPU steps, $jobs jobs for $tasks tasks"
echo "ok chain 4500 -p supported: $tasks tasks in $jobs jobs"

n=0
for d in "$models"/*/; do
  m=$(basename "$d")
  [ -f "$d/model.onnx" ] || continue
  "$npuc" "$d/model.onnx" -p supported -o "$work/$m.a.npub" -q 2>/dev/null || continue
  "$npuc" "$d/model.onnx" -p supported -o "$work/$m.b.npub" -q 2>/dev/null
  cmp -s "$work/$m.a.npub" "$work/$m.b.npub" || fail "$m: two compiles differ"
  n=$((n + 1))
done
[ $n -gt 5 ] || fail "only $n test models compiled"
echo "ok $n test models compile to identical artifacts twice"
