#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store.sh STORE MODEL: npu-embed-store end to end. Records two
# test sources into a fresh database, then checks that an image of one
# source finds that source's frames first, and that a stored frame's own
# embedding (from `labels`) finds that frame with cosine 1.
set -eu
STORE=$1
MODEL=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common="-q -m $MODEL -b cpu --normalize 0.5,0.5"

fail() { echo "FAIL: $*" >&2; exit 1; }

"$STORE" record $common -d "$tmp/db" -s test:smpte -n 12 > "$tmp/out1"
grep -q "^12 embeddings stored" "$tmp/out1" || fail "smpte: $(cat "$tmp/out1")"
"$STORE" record $common -d "$tmp/db" -s test:ball -n 12 > "$tmp/out2"
grep -q "^12 embeddings stored" "$tmp/out2" || fail "ball: $(cat "$tmp/out2")"

# an image of the smpte pattern: the 5 best are smpte frames, the best ~1
"$STORE" query $common -d "$tmp/db" --image pattern:smpte -k 5 > "$tmp/q1"
cat "$tmp/q1"
[ "$(grep -c ' test:smpte ' "$tmp/q1")" -eq 5 ] || fail "smpte query"
awk 'NR == 2 && $2 < 0.999 { exit 1 }' "$tmp/q1" || fail "smpte best score"

# frame 0 of ball, as a "text" embedding: finds ball frame 0 with score 1
"$STORE" labels $common -o "$tmp/labels.txt" smpte=pattern:smpte ball=pattern:ball > /dev/null
"$STORE" query -q -d "$tmp/db" --text-embedding "$tmp/labels.npy" --row 1 -k 1 > "$tmp/q2"
cat "$tmp/q2"
grep -q '^   1  1.000000  test:ball  0 ' "$tmp/q2" || fail "ball row query"

# bad input: a clear error, no crash
if "$STORE" query -q -d "$tmp/db" --text-embedding "$tmp/labels.npy" --row 7 2> "$tmp/err"; then
  fail "row 7 accepted"
fi
grep -q "out of range" "$tmp/err" || fail "row error: $(cat "$tmp/err")"
if "$STORE" query -q -d "$tmp/nope.db" --text-embedding "$tmp/labels.npy" 2> "$tmp/err"; then
  fail "missing db accepted"
fi
echo "ok"
