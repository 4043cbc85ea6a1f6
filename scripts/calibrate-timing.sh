#!/bin/sh
# SPDX-License-Identifier: MIT
# The timing model's calibration runs (docs/timing-model-v2.md): every benchmark network
# and matmul of tests/models/make-models.py (BENCH; `ninja -C BUILD bench-models-data`
# builds them) compiled with `-p supported` and run on the simulator by npu-bench under
# each timing model (TIMINGS, default "v1 v2 v2-low v2-high"). One line per model and
# timing model: the modeled NPU ms per frame of our fp16 program, submits, tasks, MAC
# utilisation, and int8_est: the same program's modeled ms with every task's main phase
# (max of compute and DMA) halved and its overheads kept - what int8 would change
# (half the MAC steps, half the bytes) - a derived estimate, not a run. All modeled.
#
#   sh scripts/calibrate-timing.sh [BUILD] [MODEL ...]      (BUILD default: build)
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
data=$build/tests/models/data
models=${*:-"mobilenet_v1 mobilenet_v2 resnet50 yolov5s_relu yolov8n clip_vit_b32
 matmul_128x1024x8192 matmul_1x4096x4096 matmul_1x32x16 matmul_1x768x768 matmul_1x768x3072"}
timings=${TIMINGS:-"v1 v2 v2-low v2-high"}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%-22s %-8s %11s %8s %6s %6s %10s\n' model timing fp16_ms submits tasks util% int8_est
for m in $models; do
    if [ ! -f "$data/$m/model.onnx" ]; then
        printf '%-22s (not built: ninja -C %s bench-models-data)\n' "$m" "$build"
        continue
    fi
    for t in $timings; do
        "$build/tools/npu-bench/npu-bench" "$data/$m/model.onnx" -p supported -n 1 -w 0 \
            --timing "$t" --json "$tmp" >/dev/null 2>&1 || {
            printf '%-22s %-8s (npu-bench failed)\n' "$m" "$t"
            continue
        }
        tr -d '\n' <"$tmp" | sed -e 's/"ops".*//' -e 's/[{}]/,/g' | tr ',' '\n' |
            awk -v m="$m" -v t="$t" -F': ' '
                /npu_modeled_ms/ { ms = $2 } /"submits"/ { s = $2 } /"tasks"/ { k = $2 }
                /mac_utilisation/ { u = $2 * 100 } /task_overhead_us/ { to = $2 }
                /submit_overhead_us/ { so = $2 }
                END {
                    ov = (k * to + s * so) / 1000
                    printf "%-22s %-8s %11.3f %8d %6d %6.1f %10.3f\n", m, t, ms, s, k, u,
                           (ms - ov) / 2 + ov
                }'
    done
done
