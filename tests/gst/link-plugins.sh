#!/bin/sh
# SPDX-License-Identifier: MIT
# link-plugins.sh SYSDIR OUTDIR NAME...: links libgst<NAME>.so from the
# installed GStreamer plugin folder into OUTDIR, the only "system" plugin
# folder the tests see. Missing plugins are skipped (the tests that need them
# say so).
set -eu
sys=$1
out=$2
shift 2
mkdir -p "$out"
rm -f "$out"/libgst*.so
for n in "$@"; do
  if [ -f "$sys/libgst$n.so" ]; then
    ln -sf "$sys/libgst$n.so" "$out/libgst$n.so"
  fi
done
