#!/bin/sh
# SPDX-License-Identifier: MIT
# with-pg.sh CMD [ARGS...]: runs CMD with a real PostgreSQL 15 server of its
# own (Debian's postgresql-15: initdb + pg_ctl), started in a temporary
# directory and stopped (and removed) when CMD ends. The server listens only
# on a unix socket in that directory (no TCP), on a port number not in use
# by a TCP listener. CMD sees:
#   NPU_PG_HOST  the socket directory      NPU_PG_PORT  the port
#   NPU_PG_USER  the superuser (trust)     NPU_PG_DATA  the data directory
#   NPU_PG_CTL   a command prefix that runs the server's binaries as its user
#   NPU_PG_BINDIR the binaries' folder, NPU_PG_OPTS the server's options, so
#                a test can stop and restart it:
#                $NPU_PG_CTL $NPU_PG_BINDIR/pg_ctl -D $NPU_PG_DATA -o "$NPU_PG_OPTS" ...
#   PGHOST, PGPORT, PGUSER, PGDATABASE=postgres (for psql)
# initdb refuses to run as root: as root the server runs as `nobody`
# (runuser, else setpriv) with the directory given to it. Exit 77 (skip)
# with the reason when there is no PostgreSQL 15 or no way to drop root.
# NPU_PG_INITDB_OPTS: more initdb options; the directory is made in $TMPDIR.
set -eu
PGBIN=${NPU_PG_BIN:-/usr/lib/postgresql/15/bin}
for b in initdb pg_ctl postgres; do
  if [ ! -x "$PGBIN/$b" ]; then
    echo "SKIP: no $PGBIN/$b (Debian's postgresql-15; scripts/setup.sh installs it)"
    exit 77
  fi
done
command -v psql > /dev/null || { echo "SKIP: no psql (postgresql-client-15)"; exit 77; }

# The server never needs what the test preloads (scripts/test.sh runs the
# suite with the kernel double in LD_PRELOAD): it runs without it.
as="env -u LD_PRELOAD"
if [ "$(id -u)" -eq 0 ]; then
  user=nobody
  if ! id "$user" > /dev/null 2>&1; then
    echo "SKIP: running as root and there is no user 'nobody' to run PostgreSQL as"
    exit 77
  fi
  if command -v runuser > /dev/null; then
    as="$as runuser -u $user --"
  elif command -v setpriv > /dev/null; then
    as="$as setpriv --reuid=$(id -u $user) --regid=$(id -g $user) --clear-groups --"
  else
    echo "SKIP: running as root, and neither runuser nor setpriv can drop to '$user' (initdb refuses root)"
    exit 77
  fi
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/npu-pg.XXXXXX")
chmod 755 "$dir"
mkdir "$dir/data" "$dir/sock"
[ "$(id -u)" -ne 0 ] || chown "$user" "$dir/data" "$dir/sock"
chmod 700 "$dir/data"

stop() {
  if [ -f "$dir/data/postmaster.pid" ]; then
    $as "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w stop > /dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

# a port no TCP listener uses (the server itself listens on no TCP port)
used=$(cat /proc/net/tcp /proc/net/tcp6 2> /dev/null | awk 'NR > 1 && $4 == "0A" {
  split($2, a, ":"); printf "%d\n", ("0x" a[2]) + 0 }' 2> /dev/null || true)
port=$((20000 + $$ % 30000))
while echo "$used" | grep -qx "$port"; do port=$((port + 1)); done

# shellcheck disable=SC2086
if ! $as "$PGBIN/initdb" -D "$dir/data" -U npu -A trust -E UTF8 --locale=C -N ${NPU_PG_INITDB_OPTS:-} \
    > "$dir/initdb.log" 2>&1; then
  echo "with-pg.sh: initdb failed:" >&2
  cat "$dir/initdb.log" >&2
  exit 1
fi
opts="-k $dir/sock -p $port -c listen_addresses= -c fsync=off -c max_connections=40"
if ! $as "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/sock/server.log" -w -t 60 -o "$opts" start > "$dir/pgctl.log" 2>&1; then
  echo "with-pg.sh: the server did not start:" >&2
  cat "$dir/pgctl.log" "$dir/sock/server.log" >&2
  exit 1
fi

export NPU_PG_HOST="$dir/sock" NPU_PG_PORT=$port NPU_PG_USER=npu NPU_PG_DATA="$dir/data"
export NPU_PG_CTL="$as" NPU_PG_BINDIR="$PGBIN" NPU_PG_OPTS="$opts"
export PGHOST="$dir/sock" PGPORT=$port PGUSER=npu PGDATABASE=postgres
rc=0
"$@" || rc=$?
exit $rc
