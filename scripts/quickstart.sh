#!/bin/sh
# SPDX-License-Identifier: MIT
# The first command a new user runs (README.md): installs the Debian packages,
# configures and builds OpenNPU in ./build, then runs the main job on the
# built-in NPU simulator (scripts/demo.sh).
set -eu
cd "$(dirname "$0")/.."

sh scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  meson setup build
fi
meson compile -C build
sh scripts/demo.sh build
