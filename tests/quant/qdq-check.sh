#!/bin/sh
# SPDX-License-Identifier: MIT
# npuc --emit-qdq: the QDQ ONNX model of a quantised test model, re-imported
# by OpenNPU and run on the CPU executor, against the compiled program on the
# simulator; and, when onnxruntime-node is installed (not downloaded here:
# $OPENNPU_ORT_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/opennpu/onnxruntime-node,
# the folder tests/models/check-ort.sh installs into), under ONNX Runtime
# against OpenNPU's CPU run of the same file.
# MODE (default w8a8) is the --quantize mode; w16a16i writes int16 Q / DQ (opset 21).
# Usage: qdq-check.sh NPUC NPU_RUN MODEL_DIR WORKDIR [MODE]
set -eu
npuc=$1 run=$2 dir=$3 work=$4 mode=${5:-w8a8}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
"$npuc" "$dir/model.onnx" --quantize "$mode" --dataset "$dir/calib.txt" -p supported \
    --emit-qdq "$work/qdq.onnx" -o "$work/q.npub" -q
fails=0
pairs=""
for f in $(head -n 4 "$dir/heldout.txt"); do
    b=${f%.npy}
    in=image
    "$run" "$work/qdq.onnx" --backend cpu -i "$in=$dir/$f" -o "$work/cpu-$b" -q >/dev/null
    "$run" "$work/q.npub" --backend sim -i "$in=$dir/$f" -o "$work/sim-$b" -q >/dev/null
    for o in "$work/cpu-$b"/*.npy; do
        pairs="$pairs $dir/$f:$o"
    done
done
# the QDQ model on OpenNPU's CPU against the NPU program (float parts fp16 there)
/usr/bin/env python3 - "$work" <<'PY' || fails=1
import struct, sys, os, math, glob
def npy(p):
    b = open(p, 'rb').read(); h = struct.unpack('<H', b[8:10])[0]
    return struct.unpack('<%df' % ((len(b) - 10 - h) // 4), b[10 + h:])
w = sys.argv[1]; bad = 0
for c in sorted(glob.glob(w + '/cpu-*/*.npy')):
    s = c.replace('/cpu-', '/sim-'); a, b = npy(c), npy(s)
    cos = sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    print('%s: cosine QDQ ONNX (OpenNPU cpu) vs program (sim) %.6f' % (os.path.basename(os.path.dirname(c)), cos))
    bad += cos < 0.995
sys.exit(bad > 0)
PY
# shellcheck source=scripts/ort-env.sh
. "$here/../../scripts/ort-env.sh"
if ort_have; then
    # shellcheck disable=SC2086
    node "$here/check-qdq-ort.mjs" "$ort" "$work/qdq.onnx" 0.9999 $pairs 2>/dev/null || fails=1
else
    echo "onnxruntime-node not installed in $ort: ONNX Runtime part skipped"
fi
exit $fails
