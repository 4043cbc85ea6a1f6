#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs every Debian 12 package that OpenNPU's build, tests, benchmarks and
# model generators need. Idempotent: packages already present are left alone.
# Run as root (or through sudo) on a fresh Debian 12 machine.
set -eu

PKGS="
  build-essential pkg-config meson ninja-build python3 git
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata
  libopenblas-dev libdrm-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  check libsqlite3-dev indent clang-format
  clang libclang-rt-14-dev
  python3-numpy python3-onnx python3-torch
  python3-torchvision
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  libpcre2-dev libicu-dev
  libcairo2-dev libpango1.0-dev
  libsentencepiece-dev sentencepiece
  postgresql-15 libpq-dev
"

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo -E sh "$0" "$@"
  fi
  echo "setup.sh: must run as root (apt-get install)" >&2
  exit 1
fi

# The aarch64 cross build (cross/aarch64-linux-gnu.ini) links against Debian's arm64
# multiarch libraries; their libc6:arm64 also gives qemu-aarch64 the board's loader.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup.sh: adding the arm64 architecture (multiarch)"
  dpkg --add-architecture arm64
fi
PKGS="$PKGS libprotobuf-c-dev:arm64 libdrm-dev:arm64 libopenblas-dev:arm64"
PKGS="$PKGS libpcre2-dev:arm64 libicu-dev:arm64"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -n "$missing" ]; then
  echo "setup.sh: installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing
else
  echo "setup.sh: all packages present"
fi
