#!/bin/sh
# SPDX-License-Identifier: MIT
# check-format.sh [--fix]: the tree's formatting, checked (or, with --fix,
# applied): C under core/, compiler/, tools/, tests/ and examples/ by the
# checked-in .clang-format with clang-format 14 (Debian 12's; other versions
# format differently, so they are refused rather than trusted); the GStreamer
# code (gst/, tests/gst/, the GStreamer app in pipelines/) by gst/gst-indent,
# GStreamer's own style (headers are left alone, as upstream does). Lists every file that differs and exits 1 if any does.
set -eu
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = "--fix" ] && fix=1

CF=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null 2>&1; then CF=$c; break; fi
done
if [ -z "$CF" ]; then
  echo "check-format: clang-format (14) is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! "$CF" --version | grep -q 'version 14\.'; then
  echo "check-format: $("$CF" --version) is not clang-format 14, whose output the tree follows" >&2
  exit 1
fi

files=$(git ls-files 'core/*.[ch]' 'compiler/*.[ch]' 'tools/*.[ch]' 'tests/*.[ch]' \
  'examples/*.[ch]' ':!tests/gst/*')
bad=0
for f in $files; do
  if [ $fix -eq 1 ]; then
    "$CF" -i "$f"
  elif ! "$CF" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted (clang-format): $f"
    bad=$((bad + 1))
  fi
done
gst_files=$(git ls-files 'gst/*.c' 'tests/gst/*.c' 'pipelines/*.c')
if [ $fix -eq 1 ]; then
  # shellcheck disable=SC2086
  sh gst/gst-indent $gst_files
else
  # shellcheck disable=SC2086
  out=$(sh gst/gst-indent --check $gst_files) || true
  if [ -n "$out" ]; then
    echo "$out" | sed 's/^/not formatted (gst-indent): /'
    bad=$((bad + $(echo "$out" | wc -l)))
  fi
fi
if [ $bad -ne 0 ]; then
  echo "check-format: $bad file(s) not formatted; scripts/check-format.sh --fix formats them"
  exit 1
fi
echo "check-format: $(echo "$files" | wc -w) files by clang-format, $(echo "$gst_files" | wc -w) by gst-indent: all formatted"
