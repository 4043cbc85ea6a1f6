#!/bin/sh
# SPDX-License-Identifier: MIT
# test-embed-store-pg-full.sh STORE MODEL WITH_PG: `record` into a
# PostgreSQL server whose disk fills up. The server's directory is on a
# tmpfs in a private mount namespace (so root only: skipped otherwise),
# shrunk after start to 3 MiB above what initdb used (WAL segments of 1 MiB).
# When the server cannot write its WAL it stops (PANIC); `record` must exit
# 1 naming the problem ("No space left on device") and report its loss, and
# once the disk has room again the server holds the rows reported stored
# (plus at most the one batch whose COMMIT outcome was reported unknown).
set -eu
STORE=$1
MODEL=$2
WITH_PG=$3
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root: the full disk is a tmpfs mounted in a private mount namespace"
  exit 77
fi
command -v unshare > /dev/null || { echo "SKIP: no unshare (util-linux)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/mnt"
chmod 755 "$tmp" # the server (nobody) reaches its directory through it
cat > "$tmp/inner.sh" << EOF
set -eu
fail() { echo "FAIL: \$*" >&2; exit 1; }
BACKEND=postgresql tmp="$tmp"
. "$(cd "$(dirname "$0")" && pwd)/store-db.sh"
db=\$(newdb full)
used=\$(df -k "$tmp/mnt" | awk 'NR == 2 { print \$3 }')
mount -o remount,size=\$((used + 3072))k "$tmp/mnt"
rc=0
"$STORE" record -q -m "$MODEL" -b cpu --normalize 0.5,0.5 -d "\$db" -s test -n 200000 \
  > "$tmp/out" 2> "$tmp/err" || rc=\$?
cat "$tmp/out" "$tmp/err"
[ "\$rc" -eq 1 ] || fail "full disk: exit \$rc"
grep -q "No space left on device" "$tmp/err" || fail "full disk: the error does not name it"
grep -q "were NOT stored" "$tmp/err" || fail "full disk: no loss report"
n=\$(sed -n 's/^\([0-9]*\) embeddings stored.*/\1/p' "$tmp/out")
# room again: the server (restarted if it stopped) has what was reported
mount -o remount,size=256m "$tmp/mnt"
i=0
until pg_isready -q; do
  if [ \$i -eq 20 ]; then
    \$NPU_PG_CTL "\$NPU_PG_BINDIR/pg_ctl" -D "\$NPU_PG_DATA" -m immediate stop > /dev/null 2>&1 || true
    \$NPU_PG_CTL "\$NPU_PG_BINDIR/pg_ctl" -D "\$NPU_PG_DATA" -l "\$NPU_PG_HOST/server.log" -w \
      -t 60 -o "\$NPU_PG_OPTS" start > /dev/null
  fi
  i=\$((i + 1))
  [ \$i -lt 100 ] || fail "the server did not come back"
  sleep 0.2
done
have=\$(rows "\$db")
echo "reported stored: \$n; rows after the disk has room again: \$have"
if grep -q "not confirmed" "$tmp/err"; then
  [ "\$have" -ge "\$n" ] && [ "\$have" -le \$((n + 64)) ] || fail "unknown outcome: \$have rows"
else
  [ "\$have" -eq "\$n" ] || fail "reported \$n, the server has \$have"
fi
echo "ok (postgresql, full disk)"
EOF
unshare -m sh -c "mount -t tmpfs -o size=256m tmpfs '$tmp/mnt' && chmod 755 '$tmp/mnt' &&
  TMPDIR='$tmp/mnt' NPU_PG_INITDB_OPTS=--wal-segsize=1 sh '$WITH_PG' sh '$tmp/inner.sh'"
