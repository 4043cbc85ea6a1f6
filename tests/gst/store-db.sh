# SPDX-License-Identifier: MIT
# store-db.sh: sourced by the npu-embed-store tests to run one test on
# either backend. Needs $BACKEND (sqlite or postgresql) and $tmp; for
# postgresql the test runs under with-pg.sh (NPU_PG_HOST, NPU_PG_PORT).
#   newdb NAME    prints the --db of a fresh, empty store named NAME: a file
#                 in $tmp, or a new database on the test server (its --db
#                 spelled in turn as a postgresql:// URI, a postgres:// URI
#                 and a key=value conninfo string, so all three are used)
#   rows DB       the rows in that store's frames table
case $BACKEND in
  sqlite) ;;
  postgresql)
    [ -n "${NPU_PG_HOST:-}" ] || { echo "FAIL: postgresql tests run under with-pg.sh" >&2; exit 1; }
    ;;
  *) echo "FAIL: BACKEND is sqlite or postgresql, not '$BACKEND'" >&2; exit 1 ;;
esac
_pg_n=0
newdb() {
  if [ "$BACKEND" = sqlite ]; then
    echo "$tmp/$1.db"
    return
  fi
  psql -X -q -d postgres -c "CREATE DATABASE \"$1\"" > /dev/null
  _pg_n=$((_pg_n + 1))
  case $((_pg_n % 3)) in
    1) echo "postgresql:///$1?host=$NPU_PG_HOST&port=$NPU_PG_PORT&user=npu" ;;
    2) echo "postgres://npu@/$1?host=$NPU_PG_HOST&port=$NPU_PG_PORT" ;;
    0) echo "host=$NPU_PG_HOST port=$NPU_PG_PORT user=npu dbname=$1" ;;
  esac
}
rows() {
  if [ "$BACKEND" = sqlite ]; then
    sqlite3 "$1" "SELECT count(*) FROM frames"
  else
    psql -X -At -d "$1" -c "SELECT count(*) FROM frames"
  fi
}
# the SQL CLI of the backend, for a test's own checks and damage
sql() {
  if [ "$BACKEND" = sqlite ]; then
    sqlite3 "$1" "$2"
  else
    psql -X -At -q -v ON_ERROR_STOP=1 -d "$1" -c "$2"
  fi
}
