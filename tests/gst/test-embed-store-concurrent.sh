#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store-concurrent.sh STORE MODEL [BACKEND]: four `record`
# processes write into one store at the same time (SQLite: the busy timeout
# and retries; PostgreSQL: one transaction per batch). Each must report all
# its rows stored and exit 0, and the store must then hold every (source,
# frame) exactly once: read back through `query` (every row ranked), and
# counted with the backend's own CLI.
set -eu
STORE=$1
MODEL=$2
BACKEND=${3:-sqlite}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common="-q -m $MODEL -b cpu --normalize 0.5,0.5"
N=80

fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "$BACKEND" = sqlite ] && ! command -v sqlite3 > /dev/null; then
  echo "SKIP: no sqlite3 CLI"; exit 77
fi
. "$(dirname "$0")/store-db.sh"
db=$(newdb four)
stored() { sed -n 's/^\([0-9]*\) embeddings stored.*/\1/p' "$1"; }

pids=""
for pat in smpte ball snow red; do
  "$STORE" record $common -d "$db" -s "test:$pat" -n $N > "$tmp/w-$pat" 2> "$tmp/e-$pat" &
  pids="$pids $!"
done
i=0
for pid in $pids; do
  i=$((i + 1))
  wait "$pid" || fail "writer $i: exit non-zero: $(cat "$tmp"/e-*)"
done
for pat in smpte ball snow red; do
  [ "$(stored "$tmp/w-$pat")" = $N ] || fail "$pat: $(cat "$tmp/w-$pat" "$tmp/e-$pat")"
done
[ "$(rows "$db")" -eq $((4 * N)) ] || fail "$(rows "$db") rows, not $((4 * N))"
[ "$(sql "$db" "SELECT count(*) FROM (SELECT DISTINCT source, frame FROM frames) d")" -eq $((4 * N)) ] ||
  fail "a (source, frame) stored twice"

"$STORE" labels $common -o "$tmp/labels.txt" a=pattern:ball > /dev/null
"$STORE" query -d "$db" --text-embedding "$tmp/labels.npy" -k 1000 > "$tmp/all"
grep -q "^$((4 * N)) frames compared" "$tmp/all" || fail "query: $(head -1 "$tmp/all")"
awk 'NR > 2 { print $3, $4 }' "$tmp/all" | sort -u > "$tmp/pairs"
[ "$(wc -l < "$tmp/pairs")" -eq $((4 * N)) ] || fail "query: $(wc -l < "$tmp/pairs") distinct rows"
for pat in smpte ball snow red; do
  [ "$(grep -c "^test:$pat " "$tmp/pairs")" -eq $N ] || fail "$pat: frames missing"
  [ "$(awk -v p="test:$pat" '$1 == p && $2 >= 0 && $2 < '$N "$tmp/pairs" | wc -l)" -eq $N ] ||
    fail "$pat: frame numbers"
done
echo "ok ($BACKEND): 4 writers x $N rows, each stored once"
