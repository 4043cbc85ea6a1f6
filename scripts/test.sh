#!/bin/sh
# SPDX-License-Identifier: MIT
# The second command of README.md: checks the formatting, then runs the test
# suite in five stages: the normal build (./build), then its install into a temporary DESTDIR
# (scripts/test-install.sh); an AddressSanitizer + UndefinedBehaviorSanitizer
# build (./build-san, without suite 'slow'); the normal build's suite 'device' again with
# the kernel double preloaded, once as the vendor rknpu driver and once as rocket; and an
# aarch64 cross build (./build-aarch64) whose unit and simulator suites run
# under qemu-user. Any failure fails the script. Assumes scripts/setup.sh has
# run (quickstart.sh does it).
set -eu
cd "$(dirname "$0")/.."
JOBS=${NPU_TEST_JOBS:-$(nproc)}

# Formatting first: the C tree by the checked-in .clang-format, gst/ by gst-indent
# (docs/contributing.md); an unformatted file fails the run.
echo "== tests: formatting =="
sh scripts/check-format.sh

echo "== tests: normal build =="
if [ ! -f build/build.ninja ]; then
  meson setup build
fi
meson compile -C build
meson test -C build --print-errorlogs --num-processes "$JOBS"
# The normal build installed into a temporary DESTDIR: library, headers, opennpu.pc, tools,
# plugin; examples/run-model built there with make and pkg-config, as an outside app.
echo "== tests: install (DESTDIR) =="
sh scripts/test-install.sh build

echo "== tests: ASan + UBSan build =="
if [ ! -f build-san/build.ninja ]; then
  meson setup build-san -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fno-sanitize-recover=all -Dbuildtype=debugoptimized
fi
meson compile -C build-san
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-san --print-errorlogs --num-processes "$JOBS" --no-suite slow --no-suite python-heavy
# Suite 'device' again (normal build: the tests whose processes open an NPU device node,
# backend "auto") with the kernel double preloaded, once as the vendor rknpu driver and once
# as rocket: "auto" then opens that backend, whose jobs the double runs on the simulator
# (docs/hardware.md, "Testing without a board"). The other tests never reach the double
# (suite 'kdouble' links it and sets its own environment), so they would only repeat the
# first run (docs/contributing.md, "CI time budget"). The sanitizer build runs the double in
# process instead (its tests link it; LD_PRELOAD would put it ahead of ASan).
KD="$PWD/build/tests/kdouble"
for drv in rknpu rocket; do
  echo "== tests: normal build, kernel double as $drv =="
  LD_PRELOAD="$KD/libnpu-kdouble.so" NPU_KDOUBLE=$drv NPU_DEV_DIR="$KD/dev" \
  NPU_KDOUBLE_QUIET=1 NPU_HW_WAIT_MS=600000 NPU_ROCKET_JOB_TIMEOUT_MS=0 \
    meson test -C build --no-rebuild --print-errorlogs --num-processes "$JOBS" --suite device \
      --no-suite slow --no-suite python-heavy
done
# aarch64: the library, compiler and tools cross-compiled for the board and the unit and
# simulator suites run under qemu-user. Left native: suite 'golden' (its npu-dis check execs
# the binary from Python, outside meson's exe wrapper), cpu-onnx-node-tests (loads the
# library into the host's Python), bench-cpu-quick (a benchmark smoke test, too slow
# emulated), cpu-conv-direct-avx2 and cpu-conv-wino (their variables pick x86 kernels only:
# on aarch64 both run cpu-conv-direct's code again, ~23 s of CPU each emulated), and the two
# largest simulator streams, golden-mtx-matmul-int8-int32-m544k544n4096 (~45 s emulated) and
# golden-ab-conv3x3-fp16-c160h40w40-oc320 (~20 s): the smaller int8, M > 1 and 3x3 streams
# run the same simulator code under qemu, and these two run natively and under the sanitizers.
echo "== tests: aarch64 cross build under qemu-aarch64 =="
if [ ! -f build-aarch64/build.ninja ]; then
  meson setup build-aarch64 --cross-file cross/aarch64-linux-gnu.ini
fi
meson compile -C build-aarch64
A64_TESTS=$(meson test -C build-aarch64 --no-rebuild --list \
    --suite util --suite hw --suite sim --suite cpu --suite compiler --suite runtime --suite kdouble --suite llm-a64 \
    --no-suite slow --no-suite golden 2>/dev/null | sed 's|^.* / ||' |
  grep -v -x -e cpu-onnx-node-tests -e bench-cpu-quick -e cpu-conv-direct-avx2 -e cpu-conv-wino \
    -e golden-mtx-matmul-int8-int32-m544k544n4096 -e golden-ab-conv3x3-fp16-c160h40w40-oc320)
# shellcheck disable=SC2086
meson test -C build-aarch64 --no-rebuild --print-errorlogs --num-processes "$JOBS" \
  --timeout-multiplier 4 $A64_TESTS
# The CPU executor against ONNX Runtime (issue 16): prints the table, never gates; skipped
# (exit 77) without node/npm, and any failure of the benchmark is reported, not fatal.
echo "== benchmark: CPU executor vs ONNX Runtime (prints, does not gate) =="
# the issue's networks (ResNet-18/50, MobileNetV2/V3, YOLOv8n, SigLIP-B/16, GPT-2 small) are
# made with random weights first where Debian's Python has torch and onnx (~100 s of CPU,
# 1.8 GB); they and the repository's test models are timed, one round of ORT then ours at 1
# and 2 threads (issue 16's table; figures to quote come from by-hand runs with more rounds)
mm=
/usr/bin/python3 -c 'import torch, onnx' 2>/dev/null && mm=--make-models
# (without torch: the script's default folders, the test models and any made earlier)
set --
if [ -n "$mm" ]; then
  set -- tests/models/data/*/
  for m in resnet18 resnet50 mobilenet_v2 mobilenet_v3 yolov8n siglip_b16 gpt2_small gpt2_small_1tok; do
    set -- "$@" "build/tests/models/data/$m/"
  done
fi
# shellcheck disable=SC2086
sh scripts/bench-ort.sh -C build --runs 3 --rounds 1 --threads "1 2" $mm "$@" ||
  echo "bench-ort: exit $? (skipped or failed; not a test failure)"
echo "== all tests passed =="
