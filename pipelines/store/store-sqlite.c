/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite.c: the embedding store in a SQLite file (store.h), the
 * embedded default. Table frames(id, source, frame, pts_ns, unix_time,
 * model, dims, embedding BLOB of dims little-endian float32).
 *
 * Several writers: each waits for another connection's lock up to the busy
 * timeout (sqlite3's busy handler), and a statement that still finds the
 * database busy is tried BUSY_RETRIES more times before its rows are given
 * up (and reported lost). A query checks the file's structure first
 * (PRAGMA quick_check) and every step after it, then compares every row in
 * this process (exact search; SQLite has no vector functions).
 */
#include <math.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"

typedef struct
{
  Store parent;
  sqlite3 *db;
  sqlite3_stmt *ins;
  gchar *path;
} SqliteStore;

static const char schema[] = "CREATE TABLE IF NOT EXISTS frames ("
    "  id INTEGER PRIMARY KEY,"
    "  source TEXT NOT NULL,"
    "  frame INTEGER NOT NULL,"
    "  pts_ns INTEGER,"
    "  unix_time REAL NOT NULL,"
    "  model TEXT NOT NULL,"
    "  dims INTEGER NOT NULL,"
    "  embedding BLOB NOT NULL" ");"
    "CREATE INDEX IF NOT EXISTS frames_model ON frames (model);";

#define BUSY_RETRIES 3

/* Runs @sql, retrying while the database is busy (each try waits up to the
 * busy timeout). Returns the last SQLite result code. */
static int
exec_retry (sqlite3 * db, const char *sql)
{
  int rc = SQLITE_BUSY, tries;

  for (tries = 0; tries <= BUSY_RETRIES; tries++) {
    rc = sqlite3_exec (db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
      break;
  }
  return rc;
}

static gboolean
fail (SqliteStore * s, GError ** error, gint code, const gchar * what)
{
  g_set_error (error, STORE_ERROR, code, "%s: %s", what,
      sqlite3_errmsg (s->db));
  return FALSE;
}

static gboolean sq_close (Store * st, GError ** error);

static Store *
sq_open (const gchar * path, gboolean create, const StoreOptions * opts,
    GError ** error)
{
  SqliteStore *s = g_new0 (SqliteStore, 1);
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);

  s->parent.be = &store_sqlite_backend;
  s->path = g_strdup (path);
  if (sqlite3_open_v2 (path, &s->db, flags, NULL) != SQLITE_OK) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED, "cannot open %s: %s",
        path, s->db ? sqlite3_errmsg (s->db) : "out of memory");
    goto fail;
  }
  sqlite3_busy_timeout (s->db, opts->busy_ms);
  if (create && exec_retry (s->db, schema) != SQLITE_OK) {
    fail (s, error, STORE_ERROR_FAILED, "creating the table");
    goto fail;
  }
  if (create && sqlite3_prepare_v2 (s->db, "INSERT INTO frames (source, "
          "frame, pts_ns, unix_time, model, dims, embedding) VALUES "
          "(?,?,?,?,?,?,?)", -1, &s->ins, NULL) != SQLITE_OK) {
    fail (s, error, STORE_ERROR_FAILED, "preparing the INSERT");
    goto fail;
  }
  return &s->parent;

fail:
  sq_close (&s->parent, NULL);
  return NULL;
}

static const gchar *
sq_describe (Store * st)
{
  return "sqlite";
}

static gboolean
sq_begin (Store * st, GError ** error)
{
  SqliteStore *s = (SqliteStore *) st;

  if (exec_retry (s->db, "BEGIN") != SQLITE_OK)
    return fail (s, error, STORE_ERROR_FAILED, "BEGIN failed");
  return TRUE;
}

static gboolean
sq_insert (Store * st, const StoreRow * r, GError ** error)
{
  SqliteStore *s = (SqliteStore *) st;
  int rc = SQLITE_BUSY, tries;

  if (!s->ins) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED,
        "the store was opened for reading");
    return FALSE;
  }
  sqlite3_reset (s->ins);
  sqlite3_bind_text (s->ins, 1, r->source, -1, SQLITE_STATIC);
  sqlite3_bind_int64 (s->ins, 2, (sqlite3_int64) r->frame);
  if (r->pts_ns >= 0)
    sqlite3_bind_int64 (s->ins, 3, (sqlite3_int64) r->pts_ns);
  else
    sqlite3_bind_null (s->ins, 3);
  sqlite3_bind_double (s->ins, 4, r->unix_time);
  sqlite3_bind_text (s->ins, 5, r->model ? r->model : "", -1, SQLITE_STATIC);
  sqlite3_bind_int (s->ins, 6, (int) r->dims);
  /* host order is little-endian on every target OpenNPU builds for */
  sqlite3_bind_blob (s->ins, 7, r->vec, (int) (r->dims * sizeof (gfloat)),
      SQLITE_STATIC);
  for (tries = 0; tries <= BUSY_RETRIES; tries++) {
    rc = sqlite3_step (s->ins);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
      break;
    sqlite3_reset (s->ins);
  }
  if (rc != SQLITE_DONE) {
    fail (s, error, STORE_ERROR_FAILED, "INSERT failed");
    sqlite3_reset (s->ins);
    return FALSE;
  }
  sqlite3_reset (s->ins);
  return TRUE;
}

static gboolean
sq_commit (Store * st, GError ** error)
{
  SqliteStore *s = (SqliteStore *) st;

  if (exec_retry (s->db, "COMMIT") != SQLITE_OK)
    return fail (s, error, STORE_ERROR_FAILED, "COMMIT failed");
  return TRUE;
}

static void
sq_rollback (Store * st)
{
  SqliteStore *s = (SqliteStore *) st;

  if (!sqlite3_get_autocommit (s->db))
    sqlite3_exec (s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* PRAGMA quick_check: FALSE on a damaged database or when the check itself
 * cannot run. */
static gboolean
check_db (SqliteStore * s, GError ** error)
{
  sqlite3_stmt *st;
  gchar *bad = NULL;
  int rc;

  if (sqlite3_prepare_v2 (s->db, "PRAGMA quick_check(5)", -1, &st,
          NULL) != SQLITE_OK)
    return fail (s, error, STORE_ERROR_DAMAGED, "cannot check the database "
        "(the database is damaged or not a SQLite file)");
  while ((rc = sqlite3_step (st)) == SQLITE_ROW) {
    const char *r = (const char *) sqlite3_column_text (st, 0);

    if ((!r || strcmp (r, "ok")) && !bad)
      bad = g_strdup (r ? r : "?");
  }
  if (!bad && rc != SQLITE_DONE)
    bad = g_strdup (sqlite3_errmsg (s->db));
  sqlite3_finalize (st);
  if (bad) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_DAMAGED,
        "the database is damaged: %s", bad);
    g_free (bad);
    return FALSE;
  }
  return TRUE;
}

static gboolean
sq_query (Store * st, const gfloat * q, guint dims, const gchar * model,
    guint k, gboolean approx, GArray * hits, guint64 * compared,
    guint64 * skipped, GError ** error)
{
  SqliteStore *s = (SqliteStore *) st;
  sqlite3_stmt *sel;
  gboolean ok = TRUE;
  int rc;

  /* A damaged file must not rank the rows that happen to be readable:
   * check the structure first (quick_check reads every page once). */
  if (!check_db (s, error))
    return FALSE;
  if (sqlite3_prepare_v2 (s->db, "SELECT id, source, frame, pts_ns, dims, "
          "embedding, model FROM frames", -1, &sel, NULL) != SQLITE_OK)
    return fail (s, error, STORE_ERROR_FAILED, "reading the frames");
  while ((rc = sqlite3_step (sel)) == SQLITE_ROW) {
    const gfloat *v = sqlite3_column_blob (sel, 5);
    gint n = sqlite3_column_int (sel, 4);
    const char *m = (const char *) sqlite3_column_text (sel, 6);
    const char *source = (const char *) sqlite3_column_text (sel, 1);
    StoreHit h;
    gint i;
    gdouble ss = 0;

    /* vectors of another model (or size) are not comparable */
    if (n != (gint) dims || sqlite3_column_bytes (sel, 5) != n * 4 ||
        (model && m && strcmp (m, model))) {
      (*skipped)++;
      continue;
    }
    h.id = sqlite3_column_int64 (sel, 0);
    /* stored vectors are unit length (or zero, for a frame the model gave
     * nothing for); any other norm is damage, and would give scores > 1 */
    for (i = 0; i < n; i++)
      ss += (gdouble) v[i] * v[i];
    if (!(ss == 0 || fabs (sqrt (ss) - 1.0) <= STORE_UNIT_NORM_TOL)) {
      g_set_error (error, STORE_ERROR, STORE_ERROR_DAMAGED, "row %"
          G_GINT64_FORMAT ": the embedding's norm is %g, not 1: the database "
          "is damaged", h.id, sqrt (ss));
      ok = FALSE;
      break;
    }
    h.score = 0;
    for (i = 0; i < n; i++)
      h.score += (gdouble) v[i] * q[i];
    h.source = g_strdup (source ? source : "");
    h.frame = sqlite3_column_int64 (sel, 2);
    h.pts_ns = sqlite3_column_type (sel, 3) == SQLITE_NULL ? -1 :
        sqlite3_column_int64 (sel, 3);
    g_array_append_val (hits, h);
    (*compared)++;
    /* keep the best k (and no more than 2k + 64 in memory) */
    if (hits->len >= 2 * k + 64)
      store_hits_top (hits, k);
  }
  if (ok && rc != SQLITE_DONE) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_DAMAGED, "reading the "
        "frames failed after %" G_GUINT64_FORMAT " rows: %s",
        *compared + *skipped, sqlite3_errmsg (s->db));
    ok = FALSE;
  }
  sqlite3_finalize (sel);
  if (!ok) {
    store_hits_clear (hits);
    return FALSE;
  }
  store_hits_top (hits, k);
  return TRUE;
}

static gboolean
sq_close (Store * st, GError ** error)
{
  SqliteStore *s = (SqliteStore *) st;
  gboolean ok = TRUE;

  sqlite3_finalize (s->ins);
  if (s->db && sqlite3_close (s->db) != SQLITE_OK) {
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED, "closing %s: %s",
        s->path, sqlite3_errmsg (s->db));
    ok = FALSE;
  }
  g_free (s->path);
  g_free (s);
  return ok;
}

const StoreBackend store_sqlite_backend = {
  "sqlite", sq_open, sq_describe, sq_begin, sq_insert, sq_commit,
  sq_rollback, sq_query, sq_close
};
