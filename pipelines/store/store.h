/* SPDX-License-Identifier: MIT */
/*
 * store.h: the embedding store behind npu-embed-store, independent of the
 * database. One backend per file: store-sqlite.c (a file, the embedded
 * default) and store-pg.c (a PostgreSQL server through libpq, with
 * pgvector's `vector` type when the server has the extension). store.c picks
 * the backend from the --db string and holds what both share.
 *
 * Rows are written in transactions (store_begin, store_insert...,
 * store_commit): a row counts as stored only once its COMMIT succeeded. A
 * query is exact (every stored row of the query's model and size compared)
 * unless approx is asked for and the backend has an approximate index.
 * Every failure comes back as a GError whose message names the problem
 * (a lock held too long, a full disk, a damaged file, a lost connection).
 */
#ifndef NPU_PIPELINES_STORE_H
#define NPU_PIPELINES_STORE_H

#include <glib.h>

G_BEGIN_DECLS

#define STORE_ERROR (store_error_quark ())
GQuark store_error_quark (void);

typedef enum
{
  STORE_ERROR_FAILED,           /* a statement failed (message says why) */
  STORE_ERROR_DAMAGED,          /* the stored data is damaged */
  STORE_ERROR_CONNECTION,       /* the server connection is lost */
  STORE_ERROR_UNKNOWN_OUTCOME,  /* COMMIT sent, its result never came */
} StoreErrorCode;

/* How far from 1 a stored vector's norm may be (float32 rounding of a
 * normalised vector is ~1e-7 per element); zero vectors are allowed. */
#define STORE_UNIT_NORM_TOL 1e-3

typedef struct _Store Store;

typedef struct
{
  const gchar *source;
  gint64 frame;                 /* input frame number */
  gint64 pts_ns;                /* presentation time, < 0: none */
  gdouble unix_time;            /* wall clock when stored */
  const gchar *model;
  guint dims;
  const gfloat *vec;            /* dims values, unit L2 norm (or all zero) */
} StoreRow;

typedef struct
{
  gint64 id, frame, pts_ns;     /* pts_ns < 0: none */
  gchar *source;
  gdouble score;                /* cosine similarity (dot product) */
} StoreHit;

typedef struct
{
  gint busy_ms;                 /* SQLite: wait per try for another lock */
  gboolean no_pgvector;         /* PostgreSQL: plain float4[] even when
                                 * pgvector is available (benchmark) */
  gboolean no_index;            /* PostgreSQL + pgvector: no HNSW index */
} StoreOptions;

/* Whether @db names a PostgreSQL server: a postgresql:// or postgres://
 * URI, or a libpq conninfo string ("host=... dbname=..."). Anything else
 * is a SQLite file name. */
gboolean store_is_postgres (const gchar * db);

/* Opens (with @create: creates the file / the table if needed) the store
 * named by @db. NULL with @error set on failure. */
Store *store_open (const gchar * db, gboolean create,
    const StoreOptions * opts, GError ** error);
/* "sqlite", "postgresql (float4[], exact search in the server)", ... */
const gchar *store_describe (Store * s);

gboolean store_begin (Store * s, GError ** error);
gboolean store_insert (Store * s, const StoreRow * row, GError ** error);
gboolean store_commit (Store * s, GError ** error);
/* Drops the open transaction's rows (after a failure); never fails. */
void store_rollback (Store * s);

/* The @k rows nearest to @q (unit length, @dims values) among the rows of
 * @model (NULL: any model) with @dims values, best first, into @hits
 * (StoreHit; free with store_hits_clear). @compared: rows compared;
 * @skipped: rows of another model or size. With @approx a backend that has
 * an approximate index uses it (then @compared is the rows returned). A
 * damaged row (a norm that is not 1) or a damaged file is an error, never
 * a ranking of what happened to be readable. */
gboolean store_query (Store * s, const gfloat * q, guint dims,
    const gchar * model, guint k, gboolean approx, GArray * hits,
    guint64 * compared, guint64 * skipped, GError ** error);
void store_hits_clear (GArray * hits);

/* Closes @s (a NULL @s is fine); FALSE with @error if closing reported a
 * failure (SQLite: a write that could not be finished). */
gboolean store_close (Store * s, GError ** error);

/* ---- for the backends ---------------------------------------------------- */

typedef struct
{
  const gchar *name;
  Store *(*open) (const gchar * db, gboolean create,
      const StoreOptions * opts, GError ** error);
  const gchar *(*describe) (Store * s);
  gboolean (*begin) (Store * s, GError ** error);
  gboolean (*insert) (Store * s, const StoreRow * row, GError ** error);
  gboolean (*commit) (Store * s, GError ** error);
  void (*rollback) (Store * s);
  gboolean (*query) (Store * s, const gfloat * q, guint dims,
      const gchar * model, guint k, gboolean approx, GArray * hits,
      guint64 * compared, guint64 * skipped, GError ** error);
  gboolean (*close) (Store * s, GError ** error);
} StoreBackend;

/* Every backend's Store starts with this. */
struct _Store
{
  const StoreBackend *be;
};

extern const StoreBackend store_sqlite_backend;
#ifdef NPU_HAVE_LIBPQ
extern const StoreBackend store_pg_backend;
#endif

/* Sorts @hits best first (score descending, then id) and keeps @k. */
void store_hits_top (GArray * hits, guint k);

G_END_DECLS
#endif
