#!/bin/sh
# SPDX-License-Identifier: MIT
# test-pipelines-pg.sh BUILD_DIR MODEL: pipelines/record-embed-pg.sh (the
# camera line recording embeddings to PostgreSQL) run as a user runs it, on
# test sources instead of a camera, into the server with-pg.sh started:
#  - videotestsrc (test:ball), 20 frames: 20 rows on the server, frames
#    0..19, and an image of the ball pattern finds ball frame 0 first;
#  - a file source: a 30-frame Theora clip made on the spot (skipped, with
#    the reason, where theoraenc/oggmux are missing), 30 more rows whose
#    source is the file.
set -eu
B=$1
MODEL=$2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
BACKEND=postgresql
. "$(dirname "$0")/store-db.sh"
db=$(newdb fleet)
export NPU_BACKEND=cpu

FRAMES=20 sh "$SRC/pipelines/record-embed-pg.sh" "$MODEL" "$db" test:ball "$B" > "$tmp/rec" 2>&1 ||
  fail "record-embed-pg.sh: $(tail -5 "$tmp/rec")"
grep -q "^20 embeddings stored in the PostgreSQL database" "$tmp/rec" || fail "$(cat "$tmp/rec")"
[ "$(rows "$db")" -eq 20 ] || fail "$(rows "$db") rows on the server"
[ "$(sql "$db" "SELECT min(frame) || ' ' || max(frame) || ' ' || count(DISTINCT frame)
    FROM frames WHERE source = 'test:ball'")" = "0 19 20" ] || fail "frame numbers"
"$B/pipelines/npu-embed-store" query -q -m "$MODEL" -b cpu -d "$db" --image pattern:ball -k 3 \
  > "$tmp/q" 2> "$tmp/qerr" || fail "query: $(cat "$tmp/qerr")"
cat "$tmp/q"
grep -q '^   1  1.000000  test:ball  0 ' "$tmp/q" || fail "query: ball frame 0 not first"
echo "pipelines: record-embed-pg.sh from videotestsrc into PostgreSQL"

for e in theoraenc oggmux; do
  if ! gst-inspect-1.0 "$e" > /dev/null 2>&1; then
    echo "pipelines: record-embed-pg.sh from a file skipped: no $e element to make the clip"
    exit 0
  fi
done
gst-launch-1.0 -q videotestsrc num-buffers=30 pattern=snow ! video/x-raw,width=320,height=240 ! \
  theoraenc ! oggmux ! filesink location="$tmp/clip.ogg" > "$tmp/enc" 2>&1 || fail "clip: $(cat "$tmp/enc")"
sh "$SRC/pipelines/record-embed-pg.sh" "$MODEL" "$db" "$tmp/clip.ogg" "$B" > "$tmp/rec" 2>&1 ||
  fail "record-embed-pg.sh (file): $(tail -5 "$tmp/rec")"
grep -q "^30 embeddings stored" "$tmp/rec" || fail "file: $(cat "$tmp/rec")"
[ "$(sql "$db" "SELECT count(*) FROM frames WHERE source = '$tmp/clip.ogg'")" -eq 30 ] ||
  fail "file: rows"
echo "pipelines: record-embed-pg.sh from a file into PostgreSQL"
