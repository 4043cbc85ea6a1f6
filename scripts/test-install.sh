#!/bin/sh
# SPDX-License-Identifier: MIT
# The install test (scripts/test.sh runs it after the normal build's tests):
# `meson install` of a build into a temporary DESTDIR, then, from there only,
#   - the files: libopennpu.so.0 (+ symlinks), headers, opennpu.pc, tools,
#     the GStreamer plugin and libgstnpumeta, npu-embed-store;
#   - libopennpu exports only npu_* functions, and every installed header
#     compiles on its own with pkg-config's flags;
#   - examples/run-model, copied out of the tree and built with plain make and
#     `pkg-config opennpu` as an outside application is, runs small models on
#     the simulator (and agrees with the CPU backend);
#   - examples/generate (the language-model API) built the same way, run on a
#     tiny test checkpoint against the installed npu-generate (with torch);
#   - the installed tools run (npuc compiles a .npub that run-model loads,
#     npu-info finds the simulator) and gst-inspect-1.0 finds npuinfer in the
#     installed plugin.
#
#   sh scripts/test-install.sh [BUILD_DIR]     (default: build, built already)
#
# Exits non-zero with a message naming the failed step.
set -eu
cd "$(dirname "$0")/.."
SRC=$PWD
B=${1:-build}
case $B in /*) ;; *) B=$SRC/$B ;; esac

fail() {
  echo "test-install: FAIL: $*" >&2
  exit 1
}
step() { echo "test-install: $*"; }

[ -f "$B/build.ninja" ] || fail "$B is not a configured meson build folder"
for tool in make pkg-config nm readelf cc; do
  command -v $tool > /dev/null 2>&1 || fail "$tool not found (scripts/setup.sh installs it)"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
D=$tmp/destdir

step "meson install into a DESTDIR"
meson install -C "$B" --destdir "$D" --no-rebuild --quiet > "$tmp/install.log" 2>&1 ||
  fail "meson install: $(tail -5 "$tmp/install.log")"

# Where the build installs: prefix, libdir, bindir, includedir (meson's options).
meson introspect "$B" --buildoptions > "$tmp/options.json" || fail "meson introspect"
opt() {
  python3 -c 'import json, sys
opts = {o["name"]: o["value"] for o in json.load(open(sys.argv[1]))}
print(opts[sys.argv[2]])' "$tmp/options.json" "$1"
}
prefix=$(opt prefix)
under() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
libdir=$(under "$(opt libdir)")
bindir=$(under "$(opt bindir)")
includedir=$(under "$(opt includedir)")
plugindir=$libdir/gstreamer-1.0

step "installed files under $prefix"
L=$D$libdir
[ -f "$L/libopennpu.so.0" ] || fail "no $libdir/libopennpu.so.0"
[ -L "$L/libopennpu.so" ] || fail "no development symlink $libdir/libopennpu.so"
soname=$(readelf -d "$L/libopennpu.so.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libopennpu.so.0 ] || fail "SONAME is '$soname', not libopennpu.so.0"
[ -f "$L/pkgconfig/opennpu.pc" ] || fail "no $libdir/pkgconfig/opennpu.pc"
for h in npu-common.h npu-tensor.h npu-device.h npu-program.h npu-program-exec.h \
    npu-model.h npu-build.h npu-npub.h npu-partition.h; do
  [ -f "$D$includedir/opennpu/npu/$h" ] || fail "no $includedir/opennpu/npu/$h"
done
for t in npuc npu-run npu-bench npu-info npu-dis npu-selftest; do
  [ -x "$D$bindir/$t" ] || fail "no $bindir/$t"
done
have_gst=no
if [ -f "$B/gst/libgstopennpu.so" ]; then
  have_gst=yes
  [ -f "$D$plugindir/libgstopennpu.so" ] || fail "no $plugindir/libgstopennpu.so"
  [ -f "$L/libgstnpumeta-1.0.so.0" ] || fail "no $libdir/libgstnpumeta-1.0.so.0"
  [ -f "$D$includedir/opennpu/gst/gstnpumeta.h" ] || fail "no gstnpumeta.h"
fi
if [ -f "$B/pipelines/npu-embed-store" ]; then
  [ -x "$D$bindir/npu-embed-store" ] || fail "no $bindir/npu-embed-store"
fi
echo "  $(find "$D" -type f | wc -l) files, $(find "$D" -type l | wc -l) symlinks"

step "libopennpu exports only npu_* functions"
nm -D --defined-only "$L/libopennpu.so.0" | awk '{print $3}' | sed 's/@.*//' > "$tmp/exports"
n_exports=$(wc -l < "$tmp/exports")
[ "$n_exports" -gt 0 ] || fail "libopennpu exports nothing"
if grep -v '^npu_' "$tmp/exports" > "$tmp/foreign"; then
  fail "libopennpu exports names outside the API: $(head -5 "$tmp/foreign" | tr '\n' ' ')"
fi
grep -qx npu_model_load "$tmp/exports" || fail "npu_model_load is not exported"
echo "  $n_exports symbols, all npu_*"

# pkg-config reads the DESTDIR's opennpu.pc; the sysroot puts its paths (and
# only those that exist there) inside the DESTDIR.
export PKG_CONFIG_PATH="$L/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$D"
NPU_CFLAGS=$(pkg-config --cflags opennpu) || fail "pkg-config --cflags opennpu"
NPU_LIBS=$(pkg-config --libs opennpu) || fail "pkg-config --libs opennpu"
echo "  pkg-config: $NPU_CFLAGS $NPU_LIBS" | sed "s|$D|\$DESTDIR|g"

step "each installed header compiles on its own (pkg-config's flags only)"
: > "$tmp/all.c"
for h in "$D$includedir"/opennpu/npu/*.h; do
  n=$(basename "$h")
  printf '#include <npu/%s>\n' "$n" > "$tmp/one.c"
  printf '#include <npu/%s>\n' "$n" >> "$tmp/all.c"
  # shellcheck disable=SC2086
  cc -std=c99 -fsyntax-only -Wall -Wextra -Werror $NPU_CFLAGS "$tmp/one.c" 2> "$tmp/cc.log" ||
    fail "npu/$n does not compile alone: $(head -3 "$tmp/cc.log")"
done
# shellcheck disable=SC2086
cc -std=c99 -fsyntax-only -Wall -Wextra -Werror $NPU_CFLAGS "$tmp/all.c" 2> "$tmp/cc.log" ||
  fail "the public headers do not compile together: $(head -3 "$tmp/cc.log")"

step "examples/run-model built out of the tree with make and pkg-config"
cp -R "$SRC/examples/run-model" "$tmp/run-model"
rm -f "$tmp/run-model/run-model"
make -s -C "$tmp/run-model" > "$tmp/make.log" 2>&1 || fail "make run-model: $(cat "$tmp/make.log")"
RUN=$tmp/run-model/run-model
[ -x "$RUN" ] || fail "make built no run-model"

# Everything from here loads the DESTDIR's libopennpu.so.0.
export LD_LIBRARY_PATH="$L${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ldd "$RUN" | grep -q "libopennpu.so.0 => $L/" ||
  fail "run-model does not load the DESTDIR's libopennpu: $(ldd "$RUN" | grep opennpu)"

M=tests/models/data
# run-model MODEL OUT [ARGS...]: runs the example, fails the script if it fails.
run_model() {
  out=$1
  shift
  "$RUN" "$@" > "$out" 2> "$out.err" || fail "run-model $*: $(cat "$out" "$out.err")"
  sed 's/^/  /' "$out"
}

step "run-model on the simulator: cnn_small, every supported node on the NPU"
NPU_PARTITION=supported run_model "$tmp/cnn.sim" "$M/cnn_small/model.onnx" "$M/cnn_small/in.image.npy"
grep -q '^model .*1 input(s), 1 output(s), backend sim$' "$tmp/cnn.sim" || fail "cnn_small: model line"
grep -q '^output logits  *f32 \[1, 10\]: ' "$tmp/cnn.sim" || fail "cnn_small: no logits [1, 10]"
grep -q '^run .* [1-9][0-9]* NPU submit(s)' "$tmp/cnn.sim" || fail "cnn_small: no NPU job ran"

step "run-model on the CPU backend agrees (fp16 tolerance)"
run_model "$tmp/cnn.cpu" -b cpu "$M/cnn_small/model.onnx" "$M/cnn_small/in.image.npy"
# the first 8 logits each backend printed, within fp16's error of each other
for r in sim cpu; do
  grep '^output logits' "$tmp/cnn.$r" | sed 's/.*\]://; s/ \.\.\.$//'
done | awk '
  NR == 1 { n = split($0, a, " ") }
  NR == 2 { if (n != 8 || split($0, b, " ") != 8) exit 1
            for (i = 1; i <= n; i++) {
              d = a[i] - b[i]; if (d < 0) d = -d
              t = b[i] < 0 ? -b[i] : b[i]
              if (d > 0.02 + 0.02 * t) exit 1
            } }
  END { if (NR != 2) exit 1 }' ||
  fail "cnn_small: sim and cpu logits differ: $(grep -h logits "$tmp/cnn.sim" "$tmp/cnn.cpu")"

step "run-model on the simulator: siglip_tiny (two outputs)"
run_model "$tmp/siglip" "$M/siglip_tiny/model.onnx" "$M/siglip_tiny/in.pixel_values.npy"
grep -q '^output last_hidden_state  *f32 \[1, 16, 64\]: ' "$tmp/siglip" ||
  fail "siglip_tiny: no last_hidden_state [1, 16, 64]"
grep -q '^output pooler_output  *f32 \[1, 64\]: ' "$tmp/siglip" || fail "siglip_tiny: no pooler_output [1, 64]"

step "installed tools"
for t in npuc npu-run npu-bench npu-info; do
  ldd "$D$bindir/$t" | grep -q "libopennpu.so.0 => $L/" || fail "$t does not load the DESTDIR's libopennpu"
done
"$D$bindir/npuc" --help > "$tmp/npuc.help" 2>&1 || fail "npuc --help: $(head -3 "$tmp/npuc.help")"
"$D$bindir/npu-info" -b sim > "$tmp/info" 2>&1 || fail "npu-info -b sim: $(cat "$tmp/info")"
sed 's/^/  /' "$tmp/info" | head -4
"$D$bindir/npuc" "$M/cnn_small/model.onnx" -o "$tmp/cnn.npub" -q > "$tmp/npuc.log" 2>&1 ||
  fail "npuc cnn_small: $(cat "$tmp/npuc.log")"
run_model "$tmp/cnn.npub.out" "$tmp/cnn.npub" "$M/cnn_small/in.image.npy"
grep -q '^output logits  *f32 \[1, 10\]: ' "$tmp/cnn.npub.out" || fail "the npuc artifact: no logits"
"$D$bindir/npu-run" "$tmp/cnn.npub" -b sim -q > "$tmp/run.log" 2>&1 || fail "npu-run: $(cat "$tmp/run.log")"

# The language-model side (issue 12): the installed npu-generate and npu-tokenize, and
# examples/generate (the C API of npu/npu-llm.h) built out of the tree with make and
# pkg-config; with Debian's torch (tests/llm/gen-llm.py) it runs the tiny GPT-2 test
# checkpoint on the CPU backend and its first ids must be the installed npu-generate's.
step "examples/generate built out of the tree; the installed npu-generate"
for t in npu-generate npu-tokenize; do
  [ -x "$D$bindir/$t" ] || fail "no $bindir/$t"
done
ldd "$D$bindir/npu-generate" | grep -q "libopennpu.so.0 => $L/" ||
  fail "npu-generate does not load the DESTDIR's libopennpu"
cp -R "$SRC/examples/generate" "$tmp/generate"
rm -f "$tmp/generate/generate"
make -s -C "$tmp/generate" > "$tmp/make-gen.log" 2>&1 || fail "make generate: $(cat "$tmp/make-gen.log")"
[ -x "$tmp/generate/generate" ] || fail "make built no generate"
if /usr/bin/python3 -c 'import torch, numpy' 2> /dev/null; then
  /usr/bin/python3 "$SRC/tests/llm/gen-llm.py" "$tmp/llm" > /dev/null 2>&1 ||
    fail "tests/llm/gen-llm.py did not write the test checkpoints"
  XDG_CACHE_HOME=$tmp/xdg "$tmp/generate/generate" -b cpu "$tmp/llm/gpt2" 5,77,130 \
    > "$tmp/gen.out" 2> "$tmp/gen.err" || fail "generate: $(cat "$tmp/gen.out" "$tmp/gen.err")"
  XDG_CACHE_HOME=$tmp/xdg "$D$bindir/npu-generate" "$tmp/llm/gpt2" --prompt-ids 5,77,130 \
    --max-new-tokens 16 --backend cpu --ids > "$tmp/npugen.out" 2> "$tmp/npugen.err" ||
    fail "npu-generate: $(cat "$tmp/npugen.err")"
  got=$(sed -n 's/^first://p' "$tmp/gen.out" | tr -s ' ' | sed 's/^ //')
  want=$(sed 's/^ids: //' "$tmp/npugen.out")
  [ -n "$want" ] || fail "the installed npu-generate printed no ids"
  [ "$got" = "$want" ] ||
    fail "examples/generate gave '$got', the installed npu-generate '$want'"
  echo "  generate and npu-generate: $want"
else
  echo "  (no torch in /usr/bin/python3: examples/generate built, not run)"
fi

if [ $have_gst = yes ]; then
  step "the installed GStreamer plugin"
  command -v gst-inspect-1.0 > /dev/null 2>&1 || fail "gst-inspect-1.0 not found (gstreamer1.0-tools)"
  # Both spellings: GStreamer reads GST_PLUGIN_PATH_1_0 first (a build's may be set).
  export GST_PLUGIN_PATH="$D$plugindir" GST_PLUGIN_PATH_1_0="$D$plugindir"
  export GST_REGISTRY="$tmp/registry.bin" GST_REGISTRY_1_0="$tmp/registry.bin"
  gst-inspect-1.0 npuinfer > "$tmp/inspect" 2>&1 || fail "gst-inspect-1.0 npuinfer: $(head -5 "$tmp/inspect")"
  grep -q "Filename *$D$plugindir/libgstopennpu.so" "$tmp/inspect" ||
    fail "npuinfer does not come from the DESTDIR: $(grep Filename "$tmp/inspect")"
  ldd "$D$plugindir/libgstopennpu.so" | grep -q "libopennpu.so.0 => $L/" ||
    fail "the plugin does not load the DESTDIR's libopennpu"
  grep -E '^ *(Filename|Version) ' "$tmp/inspect" | sed "s|$D|\$DESTDIR|; s/^ */  /"
  if [ -x "$D$bindir/npu-embed-store" ]; then
    "$D$bindir/npu-embed-store" record -q -m "$M/siglip_tiny/model.onnx" -b sim \
      --normalize 0.5,0.5 -d "$tmp/embed.db" -s test:smpte -n 3 > "$tmp/store" 2>&1 ||
      fail "npu-embed-store: $(cat "$tmp/store")"
    grep -q '^3 embeddings stored' "$tmp/store" || fail "npu-embed-store: $(cat "$tmp/store")"
    echo "  npu-embed-store: $(head -1 "$tmp/store")"
  fi
fi

# The Python package (python/meson.build): in the site-packages of the Python meson ran
# with, its _install_config.py naming the installed libdir; run with Debian's python3.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  step "the installed Python package"
  P=$(find "$D" -path '*/opennpu/__init__.py' | head -1)
  [ -n "$P" ] || fail "no opennpu Python package installed"
  PD=$(dirname "$(dirname "$P")")
  grep -q "^LIBDIR = \"$libdir\"$" "$PD/opennpu/_install_config.py" ||
    fail "_install_config.py does not name $libdir"
  OPENNPU_LIBRARY="$L/libopennpu.so.0" PYTHONPATH="$PD" /usr/bin/python3 -c '
import sys, numpy as np, opennpu
assert opennpu.__file__.startswith(sys.argv[1]), opennpu.__file__
m = opennpu.Model(sys.argv[2], backend="sim", partition="supported")
out = m.run([np.load(sys.argv[3])])
assert out["logits"].shape == (1, 10) and m.stats.submits > 0, (out, m.stats)
print("  %s: logits %s, %s" % (m.backend, out["logits"].shape, m.stats))
' "$PD" "$M/cnn_small/model.onnx" "$M/cnn_small/in.image.npy" ||
    fail "the installed Python package does not run cnn_small"
  echo "  $(echo "$PD" | sed "s|$D|\$DESTDIR|")/opennpu"
fi

step "passed"
