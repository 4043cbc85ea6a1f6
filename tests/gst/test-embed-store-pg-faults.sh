#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store-pg-faults.sh STORE MODEL: what npu-embed-store does when
# PostgreSQL fails (run under with-pg.sh; the SQLite faults are in
# test-embed-store-faults.sh). The count `record` prints must be the rows
# the server has, and any loss must exit non-zero:
#  - the server killed in the middle of a recording (pg_ctl stop -m
#    immediate: every backend dies at once, as in a crash): a clear error
#    naming the lost connection, exit 1; after a restart the server holds
#    exactly the rows reported stored (plus at most the one batch whose
#    COMMIT outcome was reported unknown);
#  - `query` with the server down: a connection error, exit 1;
#  - the server killed while a `query` waits inside it (for a table lock
#    another session holds): the query's error names the lost connection;
#  - SIGTERM ends a recording with its last rows committed, exit 0;
#  - a stored vector whose norm is not 1: `query` fails naming the row.
set -eu
STORE=$1
MODEL=$2
BACKEND=postgresql
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common="-q -m $MODEL -b cpu --normalize 0.5,0.5"

fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/store-db.sh"
stored() { sed -n 's/^\([0-9]*\) embeddings stored.*/\1/p' "$1"; }
pgctl() { $NPU_PG_CTL "$NPU_PG_BINDIR/pg_ctl" -D "$NPU_PG_DATA" "$@"; }
wait_rows() { # DB N: until the store has N rows (60 s at most)
  i=0
  while [ "$(rows "$1" 2> /dev/null || echo 0)" -lt "$2" ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "nothing recorded"
    sleep 0.1
  done
}

# ---- the server killed mid-recording ----
db=$(newdb killed)
"$STORE" record $common -d "$db" -s test -n 100000 > "$tmp/out" 2> "$tmp/err" &
pid=$!
wait_rows "$db" 128
pgctl -m immediate -w stop > /dev/null
rc=0
wait "$pid" || rc=$?
cat "$tmp/out" "$tmp/err"
[ "$rc" -eq 1 ] || fail "server killed: exit $rc"
grep -q "lost the connection to the PostgreSQL server" "$tmp/err" ||
  fail "server killed: no connection error: $(cat "$tmp/err")"
grep -q "were NOT stored" "$tmp/err" || fail "server killed: no loss report"
n=$(stored "$tmp/out")
[ "$n" -ge 128 ] || fail "server killed: only $n reported"
# keep the recording's errors: the next step reuses err
cp "$tmp/err" "$tmp/record-err"

# ---- query with the server down ----
"$STORE" labels $common -o "$tmp/labels.txt" a=pattern:smpte > /dev/null
if "$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" > "$tmp/q" 2> "$tmp/err"; then
  fail "query with the server down: exit 0 ($(cat "$tmp/q"))"
fi
grep -q "cannot connect to the PostgreSQL server" "$tmp/err" ||
  fail "server down: $(cat "$tmp/err")"

pgctl -l "$NPU_PG_HOST/server.log" -w -t 60 -o "$NPU_PG_OPTS" start > /dev/null
have=$(rows "$db")
echo "reported stored: $n; rows after the restart: $have"
if grep -q "not confirmed" "$tmp/record-err"; then
  [ "$have" -ge "$n" ] && [ "$have" -le $((n + 64)) ] || fail "unknown outcome: $have rows"
else
  [ "$have" -eq "$n" ] || fail "server killed: reported $n, the server has $have"
fi

# ---- the server killed while a query is inside it ----
# another session holds an exclusive lock on the table, so the query's
# SELECT waits in the server; then the server dies
mkfifo "$tmp/hold"
psql -X -q -d "$db" < "$tmp/hold" > /dev/null 2>&1 &
holder=$!
exec 3> "$tmp/hold"
echo "BEGIN; LOCK TABLE frames IN ACCESS EXCLUSIVE MODE;" >&3
i=0
until [ "$(sql postgres "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock'
    AND locktype = 'relation' AND granted")" -ge 1 ]; do
  i=$((i + 1))
  [ $i -lt 300 ] || fail "the lock was never taken"
  sleep 0.2
done
"$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" > "$tmp/q" 2> "$tmp/err" 3>&- &
pid=$!
i=0
until [ "$(sql postgres "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
    AND query LIKE 'SELECT id, source%'")" -eq 1 ]; do
  kill -0 "$pid" 2> /dev/null || fail "the query ended before the server died: $(cat "$tmp/err")"
  i=$((i + 1))
  [ $i -lt 600 ] || fail "the query never waited for the lock"
  sleep 0.2
done
pgctl -m immediate -w stop > /dev/null
rc=0
wait "$pid" || rc=$?
exec 3>&-
wait "$holder" 2> /dev/null || true
cat "$tmp/err"
[ "$rc" -eq 1 ] || fail "server killed under a query: exit $rc ($(cat "$tmp/q"))"
grep -q "lost the connection to the PostgreSQL server" "$tmp/err" ||
  fail "server killed under a query: $(cat "$tmp/err")"
pgctl -l "$NPU_PG_HOST/server.log" -w -t 60 -o "$NPU_PG_OPTS" start > /dev/null

# ---- SIGTERM commits like SIGINT ----
for sig in TERM INT; do
  db=$(newdb "sig$sig")
  "$STORE" record $common -d "$db" -s test -n 100000 > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  wait_rows "$db" 64
  sleep 0.3
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "SIG$sig: exit $rc ($(cat "$tmp/err"))"
  [ "$(stored "$tmp/out")" -eq "$(rows "$db")" ] ||
    fail "SIG$sig: reported $(stored "$tmp/out"), the server has $(rows "$db")"
done

# ---- a damaged vector (norm not 1) is an error, not a ranking ----
db=$(newdb damaged)
"$STORE" record $common -d "$db" -s test -n 20 > /dev/null
"$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" -k 3 > /dev/null ||
  fail "query on the intact store"
# (written for both column types: real[], and pgvector's vector by its real[] cast)
sql "$db" "UPDATE frames SET embedding = (embedding::real[])[1:1] || 1::real || (embedding::real[])[3:]
    WHERE id = 7"
if "$STORE" query -q -d "$db" --text-embedding "$tmp/labels.npy" -k 3 > "$tmp/q" 2> "$tmp/err"; then
  fail "a non-unit vector was ranked: $(cat "$tmp/q")"
fi
grep -q "row 7: the embedding's norm is" "$tmp/err" || fail "norm error: $(cat "$tmp/err")"
echo "ok (postgresql faults)"
