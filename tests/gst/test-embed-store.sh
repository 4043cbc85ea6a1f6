#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store.sh STORE MODEL [BACKEND]: npu-embed-store end to end, on
# BACKEND sqlite (default) or postgresql (under with-pg.sh: a real server).
# Records two test sources into a fresh store, then checks that an image of
# one source finds that source's frames first, and that a stored frame's own
# embedding (from `labels`) finds that frame with cosine 1.
set -eu
STORE=$1
MODEL=$2
BACKEND=${3:-sqlite}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common="-q -m $MODEL -b cpu --normalize 0.5,0.5"

fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$BACKEND" = sqlite ] && ! command -v sqlite3 > /dev/null; then
  echo "SKIP: no sqlite3 CLI"; exit 77
fi
. "$(dirname "$0")/store-db.sh"
db=$(newdb main)

"$STORE" record $common -d "$db" -s test:smpte -n 12 > "$tmp/out1"
grep -q "^12 embeddings stored" "$tmp/out1" || fail "smpte: $(cat "$tmp/out1")"
"$STORE" record $common -d "$db" -s test:ball -n 12 > "$tmp/out2"
grep -q "^12 embeddings stored" "$tmp/out2" || fail "ball: $(cat "$tmp/out2")"
[ "$(rows "$db")" -eq 24 ] || fail "$(rows "$db") rows, not 24"

# an image of the smpte pattern: the 5 best are smpte frames, the best ~1
"$STORE" query $common -d "$db" --image pattern:smpte -k 5 > "$tmp/q1"
cat "$tmp/q1"
[ "$(grep -c ' test:smpte ' "$tmp/q1")" -eq 5 ] || fail "smpte query"
awk 'NR == 2 && $2 < 0.999 { exit 1 }' "$tmp/q1" || fail "smpte best score"

# frame 0 of ball, as a "text" embedding: finds ball frame 0 with score 1
"$STORE" labels $common -o "$tmp/labels.txt" smpte=pattern:smpte ball=pattern:ball > /dev/null
"$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" --row 1 -k 1 > "$tmp/q2"
cat "$tmp/q2"
grep -q '^   1  1.000000  test:ball  0 ' "$tmp/q2" || fail "ball row query"
# every row, ranked: 24 lines, the scores in order, each (source, frame) once
"$STORE" query -d "$db" --text-embedding "$tmp/labels.npy" --row 1 -k 100 > "$tmp/q3"
grep -q "^24 frames compared" "$tmp/q3" || fail "compared: $(head -1 "$tmp/q3")"
[ "$(grep -c '^ *[0-9]*  [0-9.-]*  test:' "$tmp/q3")" -eq 24 ] || fail "k=100: $(cat "$tmp/q3")"
awk 'NR > 2 { if (NR > 3 && $2 > last + 1e-9) { print "rank " $1 " above rank " $1 - 1; exit 1 }
  last = $2 }' "$tmp/q3" || fail "ranking order"
[ "$(awk 'NR > 2 { print $3, $4 }' "$tmp/q3" | sort -u | wc -l)" -eq 24 ] || fail "duplicate rows"

# PostgreSQL: the column type follows what the server has (pgvector's
# vector + an HNSW index per size, else real[]), and --approx (the index
# where there is one, else the exact query) finds the same best frame
if [ "$BACKEND" = postgresql ]; then
  col=$(sql "$db" "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
      WHERE attrelid = 'frames'::regclass AND attname = 'embedding'")
  if [ -n "$(sql postgres "SELECT name FROM pg_available_extensions WHERE name = 'vector'")" ]; then
    [ "$col" = vector ] || fail "pgvector is available, the column is $col"
    [ "$(sql "$db" "SELECT count(*) FROM pg_indexes WHERE indexname = 'frames_hnsw_64'")" -eq 1 ] ||
      fail "no HNSW index"
    echo "pgvector: vector column, HNSW index"
  else
    [ "$col" = "real[]" ] || fail "no pgvector, the column is $col"
    echo "no pgvector on this server: real[] column"
  fi
  "$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" --row 1 -k 1 --approx > "$tmp/q4"
  grep -q '^   1  1.000000  test:ball  0 ' "$tmp/q4" || fail "--approx: $(cat "$tmp/q4")"
fi

# bad input: a clear error, no crash
if "$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" --row 7 2> "$tmp/err"; then
  fail "row 7 accepted"
fi
grep -q "out of range" "$tmp/err" || fail "row error: $(cat "$tmp/err")"
if [ "$BACKEND" = sqlite ]; then
  missing="$tmp/nope.db"
else
  missing="host=$NPU_PG_HOST port=$NPU_PG_PORT user=npu dbname=nope"
fi
if "$STORE" query -q -d "$missing" --text-embedding "$tmp/labels.npy" 2> "$tmp/err"; then
  fail "missing db accepted"
fi
cat "$tmp/err"
if [ "$BACKEND" = postgresql ]; then
  grep -q 'cannot connect to the PostgreSQL server.*"nope" does not exist' "$tmp/err" ||
    fail "missing database: $(cat "$tmp/err")"
  # a database without the table
  empty=$(newdb empty)
  if "$STORE" query -q -d "$empty" --text-embedding "$tmp/labels.npy" 2> "$tmp/err"; then
    fail "empty database accepted"
  fi
  grep -q "no table 'frames'" "$tmp/err" || fail "empty database: $(cat "$tmp/err")"
fi
echo "ok ($BACKEND)"
