#!/bin/sh
# SPDX-License-Identifier: MIT
# bench-store.sh BENCH_STORE WITH_PG [SIZES...]: the embedding store's
# benchmark on every backend this machine has, 768 dims (sizes default
# 10^4, 10^5, 10^6 rows; NPU_STORE_BENCH_SIZES overrides too):
#  - SQLite (a file in $TMPDIR);
#  - PostgreSQL 15 on a server with-pg.sh starts: the table as the server
#    makes it (pgvector's vector + HNSW when the extension is installed,
#    else real[]), and with pgvector also without the index and with a
#    real[] column, so the three can be compared.
# Not a test: it prints figures (docs/gstreamer.md has the measured ones).
set -eu
BENCH=$1
WITH_PG=$2
shift 2
SIZES=${*:-${NPU_STORE_BENCH_SIZES:-10000 100000 1000000}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== SQLite"
# shellcheck disable=SC2086
"$BENCH" "$tmp/bench.db" 768 $SIZES

cat > "$tmp/pg.sh" << EOF2
set -eu
db() { psql -X -q -c "CREATE DATABASE \$1" > /dev/null; echo "host=\$NPU_PG_HOST port=\$NPU_PG_PORT user=npu dbname=\$1"; }
echo "== PostgreSQL (the server's default table)"
"$BENCH" "\$(db b1)" 768 $SIZES
if [ -n "\$(psql -X -At -c "SELECT name FROM pg_available_extensions WHERE name = 'vector'")" ]; then
  echo "== PostgreSQL, pgvector without the HNSW index"
  "$BENCH" "\$(db b2)" 768 $SIZES --no-index
  echo "== PostgreSQL, real[] column (pgvector not used)"
  "$BENCH" "\$(db b3)" 768 $SIZES --no-pgvector
else
  echo "(no pgvector on this server: real[] only)"
fi
EOF2
rc=0
sh "$WITH_PG" sh "$tmp/pg.sh" || rc=$?
[ "$rc" -ne 77 ] || echo "PostgreSQL skipped (see above)"
[ "$rc" -eq 77 ] || exit "$rc"
