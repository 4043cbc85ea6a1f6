/* SPDX-License-Identifier: MIT */
/*
 * store-pg.c: the embedding store on a PostgreSQL server through libpq
 * (store.h), so a fleet of boards records into one server and any machine
 * queries it. --db is a postgresql:// or postgres:// URI or a key=value
 * conninfo string.
 *
 * Table frames(id, source, frame, pts_ns, unix_time, model, dims,
 * embedding). The embedding column is chosen when the table is created,
 * from what the server has at that moment (pg_available_extensions):
 *  - pgvector available: the extension is created if needed and the column
 *    is `vector`; each size gets an HNSW index (inner product) on
 *    embedding::vector(D), used only by approximate queries;
 *  - otherwise: real[] (float4[]).
 * An existing table is used as it is (its column type decides).
 *
 * Queries are exact by default: every row of the model and size is scored
 * in the server (real[]: a dot product over unnest() of the two arrays in
 * float8; vector: the <#> operator) and the server returns the k best; the
 * same scan checks every row's norm, so a damaged row is an error. An
 * approximate query (the HNSW index) is only done when asked for.
 *
 * Writers: rows go in one transaction per batch (store_begin/commit); the
 * count a writer reports is what COMMIT confirmed. A connection lost
 * during COMMIT leaves the outcome unknown: that is its own error
 * (STORE_ERROR_UNKNOWN_OUTCOME), and the rows are not counted as stored.
 */
#include <math.h>
#include <string.h>

#include <libpq-fe.h>

#include "store.h"

/* type OIDs of the PostgreSQL catalogue (stable, pg_type.dat) */
#define OID_INT4 23
#define OID_INT8 20
#define OID_TEXT 25
#define OID_FLOAT4 700
#define OID_FLOAT8 701

/* the advisory lock key that serialises schema changes (table, index) */
#define SCHEMA_LOCK "7283495101"

typedef struct
{
  Store parent;
  PGconn *conn;
  gboolean vector;              /* the column is pgvector's vector */
  gboolean no_index;
  GHashTable *indexed;          /* dims whose HNSW index exists */
  guint pending_index;          /* dims whose index is made after COMMIT */
  GByteArray *buf;              /* the binary embedding parameter */
  GPtrArray *vals;              /* the batch's parameters, 7 per row */
  GArray *lens;                 /* their lengths (int) */
  gchar *desc;
} PgStore;

/* Has the server gone? libpq marks the connection bad when a read meets the end
 * of the stream; a query whose send failed first (the server died as an INSERT
 * went out) can come back with "server closed the connection unexpectedly"
 * while the status still says OK (seen once in gst-embed-store-faults-pg), so
 * an OK status is checked by one more non-blocking read. */
static gboolean
conn_lost (PgStore * s)
{
  if (PQstatus (s->conn) == CONNECTION_OK)
    PQconsumeInput (s->conn);
  return PQstatus (s->conn) == CONNECTION_BAD;
}

/* Sets @error from @res (may be NULL) or the connection, naming @what. */
static gboolean
pg_fail (PgStore * s, PGresult * res, GError ** error, const gchar * what)
{
  gchar *msg = g_strdup (res && PQresultErrorMessage (res)[0] ?
      PQresultErrorMessage (res) : PQerrorMessage (s->conn));

  g_strchomp (msg);
  if (conn_lost (s))
    g_set_error (error, STORE_ERROR, STORE_ERROR_CONNECTION,
        "%s: lost the connection to the PostgreSQL server: %s", what, msg);
  else
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s", what, msg);
  g_free (msg);
  return FALSE;
}

/* Runs @sql (no parameters); TRUE when it gave @want. */
static gboolean
run (PgStore * s, const gchar * sql, ExecStatusType want, GError ** error,
    const gchar * what)
{
  PGresult *r = PQexec (s->conn, sql);
  gboolean ok = r && PQresultStatus (r) == want;

  if (!ok)
    pg_fail (s, r, error, what);
  PQclear (r);
  return ok;
}

/* One text value of a one-row query (NULL if SQL NULL); FALSE on error. */
static gboolean
run_value (PgStore * s, const gchar * sql, gchar ** value, GError ** error,
    const gchar * what)
{
  PGresult *r = PQexec (s->conn, sql);

  *value = NULL;
  if (!r || PQresultStatus (r) != PGRES_TUPLES_OK) {
    pg_fail (s, r, error, what);
    PQclear (r);
    return FALSE;
  }
  if (PQntuples (r) > 0 && !PQgetisnull (r, 0, 0))
    *value = g_strdup (PQgetvalue (r, 0, 0));
  PQclear (r);
  return TRUE;
}

static void
ignore_notice (void *arg, const char *message)
{
  /* "relation already exists, skipping" and the like */
}

static const char table_sql[] = "CREATE TABLE frames ("
    "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    "  source TEXT NOT NULL,"
    "  frame BIGINT NOT NULL,"
    "  pts_ns BIGINT,"
    "  unix_time DOUBLE PRECISION NOT NULL,"
    "  model TEXT NOT NULL,"
    "  dims INTEGER NOT NULL CHECK (dims > 0),"
    "  embedding %s NOT NULL CHECK (%s = dims));"
    "CREATE INDEX frames_model ON frames (model, dims);"
    /* the vectors do not compress: never try; and keep a row in its heap
     * page up to the largest target (8160 bytes, ~2000 dims), so a scan
     * does not fetch each vector from the TOAST table (half the query
     * time at 768 dims); larger ones still go out of line */
    "ALTER TABLE frames ALTER COLUMN embedding SET STORAGE EXTERNAL;"
    "ALTER TABLE frames SET (toast_tuple_target = 8160);";

/* Creates the table (if missing) and finds its embedding column's type,
 * under the schema lock so concurrent writers do not race. */
static gboolean
setup_table (PgStore * s, gboolean create, const StoreOptions * opts,
    GError ** error)
{
  gchar *exists = NULL, *avail = NULL, *type = NULL, *sql;
  gboolean ok = FALSE;

  if (!run (s, "BEGIN", PGRES_COMMAND_OK, error, "BEGIN"))
    return FALSE;
  if (create && !run (s, "SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")",
          PGRES_TUPLES_OK, error, "locking the schema"))
    goto out;
  if (!run_value (s, "SELECT to_regclass('frames')::text", &exists, error,
          "looking for the table"))
    goto out;
  if (!exists) {
    if (!create) {
      g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED,
          "the database has no table 'frames' (nothing was recorded in it)");
      goto out;
    }
    /* run-time detection: is pgvector installed on the server? */
    if (!run_value (s, "SELECT coalesce(installed_version, '-') FROM "
            "pg_available_extensions WHERE name = 'vector'", &avail, error,
            "looking for pgvector"))
      goto out;
    if (avail && !opts->no_pgvector) {
      if (!strcmp (avail, "-")) {
        /* not created in this database yet: try (needs the privilege) */
        if (!run (s, "SAVEPOINT ext", PGRES_COMMAND_OK, error, "SAVEPOINT"))
          goto out;
        if (!run (s, "CREATE EXTENSION IF NOT EXISTS vector",
                PGRES_COMMAND_OK, NULL, NULL)) {
          if (conn_lost (s)) {
            pg_fail (s, NULL, error, "CREATE EXTENSION vector");
            goto out;
          }
          g_printerr ("note: pgvector is available but CREATE EXTENSION "
              "vector failed (%s): using a real[] column\n",
              PQerrorMessage (s->conn));
          if (!run (s, "ROLLBACK TO SAVEPOINT ext", PGRES_COMMAND_OK, error,
                  "ROLLBACK TO SAVEPOINT"))
            goto out;
          g_clear_pointer (&avail, g_free);
        }
      }
    } else
      g_clear_pointer (&avail, g_free);
    sql =
        avail ? g_strdup_printf (table_sql, "vector", "vector_dims(embedding)")
        : g_strdup_printf (table_sql, "REAL[]",
        "array_ndims(embedding) = 1 AND cardinality(embedding)");
    ok = run (s, sql, PGRES_COMMAND_OK, error, "creating the table");
    g_free (sql);
    if (!ok)
      goto out;
    ok = FALSE;
  }
  if (!run_value (s, "SELECT format_type(atttypid, atttypmod) FROM "
          "pg_attribute WHERE attrelid = 'frames'::regclass AND "
          "attname = 'embedding'", &type, error, "reading the table"))
    goto out;
  if (!type || (strcmp (type, "vector") && strcmp (type, "real[]"))) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED, "the table 'frames' "
        "is not an embedding store (its embedding column is %s)",
        type ? type : "missing");
    goto out;
  }
  s->vector = !strcmp (type, "vector");
  if (s->vector) {
    /* the sizes that have their HNSW index already */
    PGresult *r = PQexec (s->conn, "SELECT substr(indexname, 13)::int FROM "
        "pg_indexes WHERE tablename = 'frames' AND indexname ~ "
        "'^frames_hnsw_[0-9]+$'");
    gint i;

    if (!r || PQresultStatus (r) != PGRES_TUPLES_OK) {
      pg_fail (s, r, error, "reading the indexes");
      PQclear (r);
      goto out;
    }
    for (i = 0; i < PQntuples (r); i++)
      g_hash_table_add (s->indexed, GUINT_TO_POINTER ((guint)
              g_ascii_strtoull (PQgetvalue (r, i, 0), NULL, 10)));
    PQclear (r);
  }
  ok = run (s, "COMMIT", PGRES_COMMAND_OK, error, "COMMIT");

out:
  if (!ok && !conn_lost (s))
    PQclear (PQexec (s->conn, "ROLLBACK"));
  g_free (exists);
  g_free (avail);
  g_free (type);
  return ok;
}

static gboolean pgs_close (Store * st, GError ** error);

static Store *
pgs_open (const gchar * db, gboolean create, const StoreOptions * opts,
    GError ** error)
{
  PgStore *s = g_new0 (PgStore, 1);

  s->parent.be = &store_pg_backend;
  s->indexed = g_hash_table_new (NULL, NULL);
  s->buf = g_byte_array_new ();
  s->vals = g_ptr_array_new_with_free_func (g_free);
  s->lens = g_array_new (FALSE, TRUE, sizeof (int));
  s->no_index = opts->no_index;
  s->conn = PQconnectdb (db);
  if (!s->conn || PQstatus (s->conn) != CONNECTION_OK) {
    gchar *msg = g_strdup (s->conn ? PQerrorMessage (s->conn) :
        "out of memory");

    /* the message names host and port, never the password */
    g_set_error (error, STORE_ERROR, STORE_ERROR_CONNECTION,
        "cannot connect to the PostgreSQL server: %s", g_strchomp (msg));
    g_free (msg);
    goto fail;
  }
  PQsetNoticeProcessor (s->conn, ignore_notice, NULL);
  if (!setup_table (s, create, opts, error))
    goto fail;
  s->desc = g_strdup_printf ("postgresql %s, %s", PQparameterStatus (s->conn,
          "server_version"), !s->vector ?
      "real[] column, exact search in the server" : create ? (s->no_index ?
          "pgvector vector column, no HNSW index made" :
          "pgvector vector column + HNSW index per size for --approx") :
      g_hash_table_size (s->indexed) ?
      "pgvector vector column + HNSW index for --approx" :
      "pgvector vector column, no HNSW index (--approx is exact)");
  return &s->parent;

fail:
  pgs_close (&s->parent, NULL);
  return NULL;
}

static const gchar *
pgs_describe (Store * st)
{
  return ((PgStore *) st)->desc;
}

static gboolean
pgs_begin (Store * st, GError ** error)
{
  return run ((PgStore *) st, "BEGIN", PGRES_COMMAND_OK, error, "BEGIN failed");
}

/* The embedding as a binary parameter: a real[] (array_recv's format: ndim,
 * has-nulls, element type, then per dimension size and lower bound, then
 * per element its length and value) or a vector (vector_recv: int16 dims,
 * int16 unused, the values), all big-endian. */
static void
pack_embedding (PgStore * s, const gfloat * v, guint dims)
{
  guint32 w;
  guint i;

#define PUT32(x) (w = GUINT32_TO_BE (x), g_byte_array_append (s->buf, \
      (const guint8 *) &w, 4))
  g_byte_array_set_size (s->buf, 0);
  if (s->vector) {
    guint16 h[2] = { GUINT16_TO_BE ((guint16) dims), 0 };

    g_byte_array_append (s->buf, (const guint8 *) h, 4);
  } else {
    PUT32 (1);
    PUT32 (0);
    PUT32 (OID_FLOAT4);
    PUT32 (dims);
    PUT32 (1);
  }
  for (i = 0; i < dims; i++) {
    guint32 bits;

    if (!s->vector)
      PUT32 (4);
    memcpy (&bits, &v[i], 4);
    PUT32 (bits);
  }
#undef PUT32
}

/* Rows are kept here and sent at COMMIT as one multi-row INSERT (one
 * round trip per batch instead of one per row); until COMMIT succeeded
 * none of them counts as stored. */
static gboolean
pgs_insert (Store * st, const StoreRow * r, GError ** error)
{
  PgStore *s = (PgStore *) st;
  int len[7] = { 0 };
  guint i;

  if (s->vector && !s->no_index && !s->pending_index
      && !g_hash_table_contains (s->indexed, GUINT_TO_POINTER (r->dims)))
    s->pending_index = r->dims;
  pack_embedding (s, r->vec, r->dims);
  g_ptr_array_add (s->vals, g_strdup (r->source));
  g_ptr_array_add (s->vals, g_strdup_printf ("%" G_GINT64_FORMAT, r->frame));
  g_ptr_array_add (s->vals, r->pts_ns >= 0 ? g_strdup_printf ("%"
          G_GINT64_FORMAT, r->pts_ns) : NULL);
  g_ptr_array_add (s->vals, g_malloc (G_ASCII_DTOSTR_BUF_SIZE));
  g_ascii_dtostr (g_ptr_array_index (s->vals, s->vals->len - 1),
      G_ASCII_DTOSTR_BUF_SIZE, r->unix_time);
  g_ptr_array_add (s->vals, g_strdup (r->model ? r->model : ""));
  g_ptr_array_add (s->vals, g_strdup_printf ("%u", r->dims));
  g_ptr_array_add (s->vals, g_memdup2 (s->buf->data, s->buf->len));
  len[6] = (int) s->buf->len;
  for (i = 0; i < 7; i++)
    g_array_append_val (s->lens, len[i]);
  return TRUE;
}

static void
drop_batch (PgStore * s)
{
  g_ptr_array_set_size (s->vals, 0);
  g_array_set_size (s->lens, 0);
}

/* Sends the batch's rows (one INSERT with a VALUES row each). */
static gboolean
flush_batch (PgStore * s, GError ** error)
{
  static const Oid row_types[7] = { OID_TEXT, OID_INT8, OID_INT8,
    OID_FLOAT8, OID_TEXT, OID_INT4, 0
  };
  guint n = s->vals->len / 7, i, j;
  GString *sql;
  Oid *types;
  int *formats;
  PGresult *res;
  gboolean ok;

  if (!n)
    return TRUE;
  sql = g_string_new ("INSERT INTO frames (source, frame, pts_ns, unix_time, "
      "model, dims, embedding) VALUES ");
  types = g_new (Oid, n * 7);
  formats = g_new (int, n * 7);
  for (i = 0; i < n; i++) {
    g_string_append_printf (sql, "%s(", i ? ", " : "");
    for (j = 0; j < 7; j++) {
      types[i * 7 + j] = row_types[j];
      formats[i * 7 + j] = j == 6;
      g_string_append_printf (sql, "%s$%u", j ? ", " : "", i * 7 + j + 1);
    }
    g_string_append_c (sql, ')');
  }
  res = PQexecParams (s->conn, sql->str, (int) (n * 7), types,
      (const char *const *) s->vals->pdata, (const int *) s->lens->data,
      formats, 0);
  ok = res && PQresultStatus (res) == PGRES_COMMAND_OK;
  if (!ok)
    pg_fail (s, res, error, "INSERT failed");
  PQclear (res);
  g_string_free (sql, TRUE);
  g_free (types);
  g_free (formats);
  drop_batch (s);
  return ok;
}

/* The HNSW index of one size, made outside any transaction (CREATE INDEX
 * waits for the other writers' open batches, they then wait for it); the
 * advisory lock keeps two writers from building it at once. */
static gboolean
make_index (PgStore * s, guint dims, GError ** error)
{
  gchar *sql = g_strdup_printf ("SELECT pg_advisory_lock(" SCHEMA_LOCK ");"
      "CREATE INDEX IF NOT EXISTS frames_hnsw_%u ON frames USING hnsw "
      "((embedding::vector(%u)) vector_ip_ops) WHERE dims = %u;"
      "SELECT pg_advisory_unlock(" SCHEMA_LOCK ")", dims, dims, dims);
  gboolean ok = run (s, sql, PGRES_TUPLES_OK, error,
      "creating the HNSW index");

  g_free (sql);
  if (ok)
    g_hash_table_add (s->indexed, GUINT_TO_POINTER (dims));
  else if (!conn_lost (s))
    PQclear (PQexec (s->conn, "SELECT pg_advisory_unlock_all()"));
  return ok;
}

static gboolean
pgs_commit (Store * st, GError ** error)
{
  PgStore *s = (PgStore *) st;
  PGresult *r;
  ExecStatusType rs;
  gboolean ok = FALSE;

  if (!flush_batch (s, error)) {
    s->pending_index = 0;
    return FALSE;
  }
  r = PQexec (s->conn, "COMMIT");
  rs = r ? PQresultStatus (r) : PGRES_FATAL_ERROR;

  if (rs == PGRES_COMMAND_OK && !strcmp (PQcmdStatus (r), "COMMIT"))
    ok = TRUE;
  else if (rs == PGRES_COMMAND_OK) {
    /* the transaction had failed: the server answers COMMIT with ROLLBACK */
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED,
        "COMMIT failed: the server rolled the transaction back");
  } else if (conn_lost (s)) {
    gchar *msg = g_strdup (PQerrorMessage (s->conn));

    g_set_error (error, STORE_ERROR, STORE_ERROR_UNKNOWN_OUTCOME,
        "COMMIT failed: lost the connection to the PostgreSQL server before "
        "it answered, so whether the batch was stored is unknown: %s",
        g_strchomp (msg));
    g_free (msg);
  } else
    pg_fail (s, r, error, "COMMIT failed");
  PQclear (r);
  if (ok && s->pending_index) {
    guint d = s->pending_index;

    s->pending_index = 0;
    /* the rows are committed: an index failure is reported, not a loss */
    if (!make_index (s, d, error))
      return FALSE;
  }
  return ok;
}

static void
pgs_rollback (Store * st)
{
  PgStore *s = (PgStore *) st;

  s->pending_index = 0;
  drop_batch (s);
  if (!conn_lost (s) && PQtransactionStatus (s->conn) != PQTRANS_IDLE)
    PQclear (PQexec (s->conn, "ROLLBACK"));
}

/* The exact query: every row of the size (and model) scored in the server,
 * the k best returned, with the count compared and the first row whose
 * norm is not 1 (window aggregates over the same scan). */
static gchar *
exact_sql (PgStore * s)
{
  const gchar *score;

  if (s->vector)
    score = "SELECT -(f.embedding <#> $1::vector) AS score, "
        "vector_norm(f.embedding) ^ 2 AS nn";
  else
    score = "SELECT sum(a::float8 * b::float8) AS score, "
        "sum(a::float8 * a::float8) AS nn "
        "FROM unnest(f.embedding, $1::real[]) AS u(a, b)";
  return g_strdup_printf ("SELECT id, source, frame, pts_ns, score, n, bad_id, "
      "bad_nn FROM (SELECT f.id, f.source, f.frame, f.pts_ns, x.score, "
      "count(*) OVER w AS n, "
      "min(f.id) FILTER (WHERE x.nn <> 0 AND abs(sqrt(x.nn) - 1) > %g) "
      "OVER w AS bad_id, "
      "max(x.nn) FILTER (WHERE x.nn <> 0 AND abs(sqrt(x.nn) - 1) > %g) "
      "OVER w AS bad_nn "
      "FROM frames f CROSS JOIN LATERAL (%s) x "
      "WHERE f.dims = $2 AND ($3::text IS NULL OR f.model = $3) "
      "WINDOW w AS ()) t ORDER BY score DESC, id LIMIT $4",
      STORE_UNIT_NORM_TOL, STORE_UNIT_NORM_TOL, score);
}

static gboolean
pgs_query (Store * st, const gfloat * q, guint dims, const gchar * model,
    guint k, gboolean approx, GArray * hits, guint64 * compared,
    guint64 * skipped, GError ** error)
{
  PgStore *s = (PgStore *) st;
  static const int formats[4] = { 1, 0, 0, 0 };
  gchar sdims[16], sk[16], *sql;
  const char *values[4];
  int lengths[4] = { 0 };
  PGresult *r = NULL;
  gboolean ok = FALSE, use_index = approx && s->vector
      && g_hash_table_contains (s->indexed, GUINT_TO_POINTER (dims));
  gint i;

  g_snprintf (sdims, sizeof sdims, "%u", dims);
  g_snprintf (sk, sizeof sk, "%u", k);
  pack_embedding (s, q, dims);
  values[0] = (const char *) s->buf->data;
  lengths[0] = (int) s->buf->len;
  values[1] = sdims;
  values[2] = model;
  values[3] = sk;

  /* one snapshot for the ranking and the count of the others */
  if (!run (s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
          PGRES_COMMAND_OK, error, "BEGIN"))
    return FALSE;
  if (use_index) {
    gchar *set = g_strdup_printf ("SET LOCAL hnsw.ef_search = %u",
        CLAMP (k, 40, 1000));

    ok = run (s, set, PGRES_COMMAND_OK, error, "SET hnsw.ef_search");
    g_free (set);
    if (!ok)
      goto out;
    /* the size is a literal so the partial index (WHERE dims = D) applies */
    sql = g_strdup_printf ("SELECT id, source, frame, pts_ns, "
        "-(embedding::vector(%u) <#> $1::vector(%u)) AS score FROM frames "
        "WHERE dims = %u AND $2::int = %u AND ($3::text IS NULL OR "
        "model = $3) ORDER BY embedding::vector(%u) <#> $1::vector(%u) "
        "LIMIT $4", dims, dims, dims, dims, dims, dims);
  } else
    sql = exact_sql (s);
  r = PQexecParams (s->conn, sql, 4, NULL, values, lengths, formats, 0);
  g_free (sql);
  if (!r || PQresultStatus (r) != PGRES_TUPLES_OK) {
    pg_fail (s, r, error, "the query failed");
    goto out;
  }
  if (!use_index && PQntuples (r) > 0 && !PQgetisnull (r, 0, 6)) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_DAMAGED, "row %s: the "
        "embedding's norm is %g, not 1: the stored data is damaged",
        PQgetvalue (r, 0, 6), g_ascii_strtod (PQgetvalue (r, 0, 7),
            NULL) > 0 ? sqrt (g_ascii_strtod (PQgetvalue (r, 0, 7),
                NULL)) : 0.0);
    goto out;
  }
  for (i = 0; i < PQntuples (r); i++) {
    StoreHit h;

    h.id = g_ascii_strtoll (PQgetvalue (r, i, 0), NULL, 10);
    h.source = g_strdup (PQgetvalue (r, i, 1));
    h.frame = g_ascii_strtoll (PQgetvalue (r, i, 2), NULL, 10);
    h.pts_ns = PQgetisnull (r, i, 3) ? -1 :
        g_ascii_strtoll (PQgetvalue (r, i, 3), NULL, 10);
    h.score = g_ascii_strtod (PQgetvalue (r, i, 4), NULL);
    g_array_append_val (hits, h);
  }
  *compared = use_index ? (guint64) PQntuples (r) : PQntuples (r) > 0 ?
      g_ascii_strtoull (PQgetvalue (r, 0, 5), NULL, 10) : 0;
  PQclear (r);
  r = PQexecParams (s->conn, "SELECT count(*) FROM frames WHERE NOT "
      "(dims = $1::int AND ($2::text IS NULL OR model = $2))", 2, NULL,
      values + 1, NULL, NULL, 0);
  if (!r || PQresultStatus (r) != PGRES_TUPLES_OK) {
    pg_fail (s, r, error, "counting the other rows");
    goto out;
  }
  *skipped = g_ascii_strtoull (PQgetvalue (r, 0, 0), NULL, 10);
  ok = run (s, "COMMIT", PGRES_COMMAND_OK, error, "COMMIT");

out:
  PQclear (r);
  if (!ok) {
    store_hits_clear (hits);
    pgs_rollback (st);
  }
  return ok;
}

static gboolean
pgs_close (Store * st, GError ** error)
{
  PgStore *s = (PgStore *) st;

  if (s->conn)
    PQfinish (s->conn);
  g_hash_table_destroy (s->indexed);
  g_byte_array_free (s->buf, TRUE);
  g_ptr_array_free (s->vals, TRUE);
  g_array_free (s->lens, TRUE);
  g_free (s->desc);
  g_free (s);
  return TRUE;
}

const StoreBackend store_pg_backend = {
  "postgresql", pgs_open, pgs_describe, pgs_begin, pgs_insert, pgs_commit,
  pgs_rollback, pgs_query, pgs_close
};
