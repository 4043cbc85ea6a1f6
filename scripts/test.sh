#!/bin/sh
# SPDX-License-Identifier: MIT
# The second command of README.md: runs the whole test suite twice, in the
# normal build (./build) and in an AddressSanitizer + UndefinedBehaviorSanitizer
# build (./build-san). Any failure fails the script. Assumes scripts/setup.sh
# has run (quickstart.sh does it).
set -eu
cd "$(dirname "$0")/.."
JOBS=${NPU_TEST_JOBS:-$(nproc)}

echo "== tests: normal build =="
if [ ! -f build/build.ninja ]; then
  meson setup build
fi
meson compile -C build
meson test -C build --print-errorlogs --num-processes "$JOBS"

echo "== tests: ASan + UBSan build =="
if [ ! -f build-san/build.ninja ]; then
  meson setup build-san -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fno-sanitize-recover=all -Dbuildtype=debugoptimized
fi
meson compile -C build-san
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-san --print-errorlogs --num-processes "$JOBS" --no-suite slow
echo "== all tests passed =="
