#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store-faults.sh STORE MODEL: npu-embed-store must never report
# rows it lost (issue 17, items 2 and 3). `record` against a database another
# process holds a read transaction on (a real lock, from the sqlite3 CLI), on
# a full disk (a size-limited tmpfs in a private mount namespace; where that
# is not allowed, RLIMIT_FSIZE through `ulimit -f`), and stopped by SIGTERM:
# the count it prints must equal the rows in the database and any loss must
# exit non-zero. `query` on a database with pages overwritten must fail.
set -eu
STORE=$1
MODEL=$2
tmp=$(mktemp -d)
holder=
cleanup() {
  exec 3>&- || true
  [ -n "$holder" ] && kill "$holder" 2> /dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
common="-q -m $MODEL -b cpu --normalize 0.5,0.5"

fail() { echo "FAIL: $*" >&2; exit 1; }
rows() { sqlite3 "$1" "SELECT count(*) FROM frames"; }
stored() { sed -n 's/^\([0-9]*\) embeddings stored.*/\1/p' "$1"; }

command -v sqlite3 > /dev/null || { echo "SKIP: no sqlite3 CLI"; exit 77; }

# ---- options checked before anything runs ----
for bad in "-b bogus" "--normalize=abc" "--normalize=0.5" "--normalize=0.5,0" "-n -5" "-n 0" \
    "-i 0"; do
  rc=0
  "$STORE" record -q -m "$MODEL" -d "$tmp/opt.db" $bad > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "'$bad': exit $rc"
  grep -q "^--" "$tmp/err" || fail "'$bad': $(cat "$tmp/err")"
  ! grep -q CRITICAL "$tmp/err" || fail "'$bad': GLib CRITICAL"
  [ ! -e "$tmp/opt.db" ] || fail "'$bad': the database was created"
done

# ---- a reader holds a read transaction for the whole recording ----
"$STORE" record $common -d "$tmp/lock.db" -s test -n 4 > /dev/null
# the sqlite3 CLI reads its statements from a FIFO kept open on fd 3: after
# "BEGIN; SELECT" it holds the shared lock until fd 3 closes
mkfifo "$tmp/hold"
sqlite3 "$tmp/lock.db" < "$tmp/hold" > /dev/null &
holder=$!
exec 3> "$tmp/hold"
echo "BEGIN; SELECT count(*) FROM frames;" >&3
sleep 0.5
if "$STORE" record $common --busy-timeout 200 -d "$tmp/lock.db" -s test -n 100 \
    > "$tmp/out" 2> "$tmp/err"; then
  fail "locked database: exit 0 ($(cat "$tmp/out"))"
fi
exec 3>&-
wait "$holder" 2> /dev/null || true
holder=
cat "$tmp/out" "$tmp/err"
grep -q "COMMIT failed: database is locked" "$tmp/err" || fail "lock error: $(cat "$tmp/err")"
grep -q "were NOT stored" "$tmp/err" || fail "no loss report: $(cat "$tmp/err")"
[ "$(stored "$tmp/out")" -eq "$(($(rows "$tmp/lock.db") - 4))" ] ||
  fail "locked: reported $(stored "$tmp/out"), database has $(rows "$tmp/lock.db") - 4"

# ---- the reader lets go after a second: the busy timeout waits for it ----
n0=$(rows "$tmp/lock.db")
sqlite3 "$tmp/lock.db" < "$tmp/hold" > /dev/null &
holder=$!
exec 3> "$tmp/hold"
echo "BEGIN; SELECT count(*) FROM frames;" >&3
(sleep 1; exec 3>&-) &
exec 3>&-
"$STORE" record $common -d "$tmp/lock.db" -s test -n 70 > "$tmp/out" ||
  fail "busy timeout did not wait for the reader"
wait "$holder" 2> /dev/null || true
holder=
[ "$(stored "$tmp/out")" -eq 70 ] || fail "after the wait: $(cat "$tmp/out")"
[ "$(rows "$tmp/lock.db")" -eq $((n0 + 70)) ] || fail "after the wait: rows"

# ---- two writers at once: the second waits for the first's lock ----
"$STORE" record $common -d "$tmp/two.db" -s test -n 150 > "$tmp/w1" 2> "$tmp/e1" &
w1=$!
"$STORE" record $common -d "$tmp/two.db" -s test:ball -n 150 > "$tmp/w2" 2> "$tmp/e2" ||
  fail "second writer: $(cat "$tmp/e2")"
wait "$w1" || fail "first writer: $(cat "$tmp/e1")"
[ "$(stored "$tmp/w1")" -eq 150 ] && [ "$(stored "$tmp/w2")" -eq 150 ] ||
  fail "two writers: $(cat "$tmp/w1" "$tmp/w2")"
[ "$(rows "$tmp/two.db")" -eq 300 ] || fail "two writers: $(rows "$tmp/two.db") rows"

# ---- a full disk ----
cat > "$tmp/full.sh" << EOF
set -u
if [ "\$1" = tmpfs ]; then
  mkdir -p "$tmp/mnt" && mount -t tmpfs -o size=96k tmpfs "$tmp/mnt" || exit 77
  db="$tmp/mnt/full.db"
else
  db="$tmp/full.db"
  ulimit -f 192   # 192 blocks of 512 bytes: 96 KiB
fi
"$STORE" record $common -d "\$db" -s test -n 1000 > "$tmp/out" 2> "$tmp/err"
echo \$? > "$tmp/rc"
ulimit -f unlimited 2> /dev/null || true
sqlite3 "\$db" "SELECT count(*) FROM frames" > "$tmp/rows"
EOF
how=tmpfs
if ! unshare -rm sh "$tmp/full.sh" tmpfs 2> "$tmp/unshare-err"; then
  how="RLIMIT_FSIZE (ulimit -f)"
  sh "$tmp/full.sh" ulimit
fi
echo "full disk simulated with: $how"
cat "$tmp/out" "$tmp/err"
echo "rows in the database: $(cat "$tmp/rows")"
[ "$(cat "$tmp/rc")" -ne 0 ] || fail "full disk ($how): exit 0 ($(cat "$tmp/out"))"
grep -q "were NOT stored" "$tmp/err" || fail "full disk: no loss report: $(cat "$tmp/err")"
[ "$(stored "$tmp/out")" -eq "$(cat "$tmp/rows")" ] ||
  fail "full disk: reported $(stored "$tmp/out"), database has $(cat "$tmp/rows")"
[ "$(stored "$tmp/out")" -lt 1000 ] || fail "full disk: all stored?"

# ---- SIGTERM commits like SIGINT ----
for sig in TERM INT; do
  rm -f "$tmp/sig.db"
  "$STORE" record $common -d "$tmp/sig.db" -s test -n 100000 > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  i=0
  while [ "$(sqlite3 "$tmp/sig.db" "SELECT count(*) FROM frames" 2> /dev/null || echo 0)" -lt 64 ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "SIG$sig: nothing recorded"
    sleep 0.1
  done
  sleep 0.3
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "SIG$sig: exit $rc ($(cat "$tmp/err"))"
  [ "$(stored "$tmp/out")" -eq "$(rows "$tmp/sig.db")" ] ||
    fail "SIG$sig: reported $(stored "$tmp/out"), database has $(rows "$tmp/sig.db")"
  [ $(($(rows "$tmp/sig.db") % 64)) -ne 0 ] || echo "note: SIG$sig landed on a batch boundary"
done

# ---- query on a damaged database ----
"$STORE" record $common -d "$tmp/q.db" -s test -n 4 > /dev/null
for i in 1 2 3 4 5 6 7; do # 4 -> 512 rows
  sqlite3 "$tmp/q.db" "INSERT INTO frames (source, frame, pts_ns, unix_time, model, dims,
    embedding) SELECT source, frame + (SELECT max(frame) + 1 FROM frames), pts_ns, unix_time,
    model, dims, embedding FROM frames"
done
[ "$(rows "$tmp/q.db")" -eq 512 ] || fail "q.db rows"
"$STORE" labels $common -o "$tmp/labels.txt" a=pattern:smpte > /dev/null
"$STORE" query -q -d "$tmp/q.db" --text-embedding "$tmp/labels.npy" -k 3 > "$tmp/q0" ||
  fail "query on the intact database"
# a vector whose norm is not 1 (its bytes damaged, the file's structure intact)
cp "$tmp/q.db" "$tmp/q1.db"
sqlite3 "$tmp/q1.db" "UPDATE frames SET embedding = CAST(substr(embedding, 1, 4) ||
    X'0000803F' || substr(embedding, 9) AS BLOB) WHERE id = 100"
if "$STORE" query -q -d "$tmp/q1.db" --text-embedding "$tmp/labels.npy" -k 3 > "$tmp/q1" \
    2> "$tmp/err"; then
  fail "a non-unit vector was ranked: $(cat "$tmp/q1")"
fi
grep -q "row 100: the embedding's norm is" "$tmp/err" || fail "norm error: $(cat "$tmp/err")"
# pages overwritten in the middle of the file
cp "$tmp/q.db" "$tmp/q2.db"
pages=$(($(wc -c < "$tmp/q2.db") / 4096))
[ "$pages" -gt 8 ] || fail "q.db has only $pages pages"
yes damage | head -c 16384 | dd of="$tmp/q2.db" bs=4096 seek=$((pages / 2)) conv=notrunc 2> /dev/null
if "$STORE" query -q -d "$tmp/q2.db" --text-embedding "$tmp/labels.npy" -k 3 > "$tmp/q2" \
    2> "$tmp/err"; then
  fail "a damaged database was ranked: $(cat "$tmp/q2")"
fi
grep -q "damaged" "$tmp/err" || fail "damage error: $(cat "$tmp/err")"

echo "ok"
