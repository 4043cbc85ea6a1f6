#!/bin/sh
# SPDX-License-Identifier: MIT
# npuc's quantisation command line: the errors (exit 2 with a message naming
# the problem) and one run that writes the accuracy report as JSON.
# Usage: npuc-quant.sh NPUC MODEL_DIR WORKDIR
set -u
npuc=$1 dir=$2 work=$3
mkdir -p "$work"
fails=0
expect() { # want-status want-text args...
    st=$1 want=$2
    shift 2
    out=$("$npuc" "$@" 2>&1)
    rc=$?
    if [ "$rc" != "$st" ] || ! printf '%s' "$out" | grep -q -- "$want"; then
        echo "FAIL: npuc $*: exit $rc (want $st), output: $out"
        fails=$((fails + 1))
    else
        echo "ok: npuc $*: $(printf '%s' "$out" | grep -- "$want" | head -1)"
    fi
}
m=$dir/model.onnx
expect 2 "unknown; use minmax" "$m" --quantize w8a8 --dataset "$dir/calib.txt" --algorithm entropy
expect 2 "use w8a8, hybrid" "$m" --quantize int4 --dataset "$dir/calib.txt"
expect 2 "needs a calibration set" "$m" --quantize w8a8
expect 2 "No such file" "$m" --quantize w8a8 --dataset "$work/none.txt"
expect 2 "go with --quantize" "$m" --dataset "$dir/calib.txt"
expect 2 "go with --quantize" "$m" --quantized-outputs
expect 2 "a cosine in" "$m" --quantize hybrid --dataset "$dir/calib.txt" --hybrid-threshold x
head -n 2 "$dir/calib.txt" | sed "s|^|$dir/|" > "$work/two.txt"
expect 1 "needs at least 4" "$m" --quantize w8a8 --dataset "$work/two.txt"
expect 0 "entire cos" "$m" --quantize w8a8 --dataset "$dir/calib.txt" --algorithm mse \
    --accuracy "$work/report.json" -o "$work/q.npub"
for key in '"layers"' '"entire"' '"single"' '"cosine"' '"relative_error"' '"precision": "int8"'; do
    grep -q -- "$key" "$work/report.json" || { echo "FAIL: report lacks $key"; fails=$((fails + 1)); }
done
# w16a16i: int16 layers in the report
expect 0 "int16" "$m" --quantize w16a16i --dataset "$dir/calib.txt" \
    --accuracy "$work/w16.json" -o "$work/q16.npub"
grep -q '"precision": "int16"' "$work/w16.json" || { echo "FAIL: w16a16i report has no int16 layer"; fails=$((fails + 1)); }
grep -q '"mode": "w16a16i"' "$work/w16.json" || { echo "FAIL: w16a16i report mode"; fails=$((fails + 1)); }
# hybrid: a threshold above some layers' single cosine keeps exactly those float
expect 0 "hybrid: single-layer cosine" "$m" --quantize hybrid --dataset "$dir/calib.txt" \
    --hybrid-threshold 0.99995 --accuracy "$work/hybrid.json"
grep -q '"precision": "int8"' "$work/hybrid.json" || { echo "FAIL: hybrid kept every layer float"; fails=$((fails + 1)); }
[ -s "$work/q.npub" ] || { echo "FAIL: no artifact"; fails=$((fails + 1)); }
"$npuc" --info "$work/q.npub" | grep -q "quantize=w8a8;algorithm=mse;weights=per-channel" ||
    { echo "FAIL: the artifact's options do not say how it was quantised"; fails=$((fails + 1)); }
exit $((fails > 0))
