/* SPDX-License-Identifier: MIT */
/*
 * store.c: picks the backend of an embedding store from its --db string
 * (store.h) and forwards the calls; the hit sorting both backends share.
 */
#include <string.h>

#include "store.h"

GQuark
store_error_quark (void)
{
  return g_quark_from_static_string ("npu-embed-store-error");
}

gboolean
store_is_postgres (const gchar * db)
{
  const gchar *p = db;

  if (!db)
    return FALSE;
  if (g_str_has_prefix (db, "postgresql://")
      || g_str_has_prefix (db, "postgres://"))
    return TRUE;
  /* conninfo: "keyword = value ...", the keyword a lower-case identifier */
  while (g_ascii_isspace (*p))
    p++;
  if (!g_ascii_islower (*p))
    return FALSE;
  while (g_ascii_islower (*p) || *p == '_')
    p++;
  while (g_ascii_isspace (*p))
    p++;
  return *p == '=';
}

Store *
store_open (const gchar * db, gboolean create, const StoreOptions * opts,
    GError ** error)
{
  static const StoreOptions defaults = { 5000, FALSE, FALSE };

  if (!opts)
    opts = &defaults;
  if (store_is_postgres (db)) {
#ifdef NPU_HAVE_LIBPQ
    return store_pg_backend.open (db, create, opts, error);
#else
    g_set_error (error, STORE_ERROR, STORE_ERROR_FAILED,
        "%s looks like a PostgreSQL connection, but this build has no "
        "PostgreSQL support (libpq-dev was not found at build time)", db);
    return NULL;
#endif
  }
  return store_sqlite_backend.open (db, create, opts, error);
}

const gchar *
store_describe (Store * s)
{
  return s->be->describe (s);
}

gboolean
store_begin (Store * s, GError ** error)
{
  return s->be->begin (s, error);
}

gboolean
store_insert (Store * s, const StoreRow * row, GError ** error)
{
  return s->be->insert (s, row, error);
}

gboolean
store_commit (Store * s, GError ** error)
{
  return s->be->commit (s, error);
}

void
store_rollback (Store * s)
{
  s->be->rollback (s);
}

gboolean
store_query (Store * s, const gfloat * q, guint dims, const gchar * model,
    guint k, gboolean approx, GArray * hits, guint64 * compared,
    guint64 * skipped, GError ** error)
{
  *compared = *skipped = 0;
  return s->be->query (s, q, dims, model, k, approx, hits, compared, skipped,
      error);
}

gboolean
store_close (Store * s, GError ** error)
{
  return s ? s->be->close (s, error) : TRUE;
}

void
store_hits_clear (GArray * hits)
{
  guint i;

  for (i = 0; i < hits->len; i++)
    g_free (g_array_index (hits, StoreHit, i).source);
  g_array_set_size (hits, 0);
}

static gint
hit_cmp (gconstpointer a, gconstpointer b)
{
  const StoreHit *x = a, *y = b;

  return x->score < y->score ? 1 : x->score > y->score ? -1 :
      (x->id > y->id) - (x->id < y->id);
}

void
store_hits_top (GArray * hits, guint k)
{
  guint i;

  g_array_sort (hits, hit_cmp);
  for (i = k; i < hits->len; i++)
    g_free (g_array_index (hits, StoreHit, i).source);
  if (hits->len > k)
    g_array_set_size (hits, k);
}
