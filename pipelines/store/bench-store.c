/* SPDX-License-Identifier: MIT */
/*
 * bench-store: insert rate and query time of the embedding store
 * (store.h) as it grows, on one backend.
 *
 *   bench-store DB [DIMS [N1 N2 ...]] [--no-pgvector] [--no-index]
 *
 * DB is a SQLite file name (removed first and at the end) or a PostgreSQL URI / conninfo
 * whose database has no 'frames' table yet. Random unit vectors of DIMS
 * (default 768) values are inserted in transactions of 64 rows, as
 * `npu-embed-store record` writes them, until the store holds N1 rows
 * (default 10^4, 10^5, 10^6); at each size it prints the insert rate of
 * the rows added since the last size and the time of an exact top-5 query
 * (median of 3, a single one from 10^6 rows on; on PostgreSQL with pgvector
 * also the approximate one). The
 * first query's best hit must be the stored row the query was made from,
 * score 1: a check that the search is exact, not only fast.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "store.h"

static void
random_unit (GRand * r, gfloat * v, guint dims)
{
  gdouble ss = 0;
  guint i;

  for (i = 0; i < dims; i++) {
    v[i] = (gfloat) g_rand_double_range (r, -1, 1);
    ss += (gdouble) v[i] * v[i];
  }
  for (i = 0; i < dims; i++)
    v[i] = (gfloat) (v[i] / sqrt (ss));
}

static int
die (GError * err)
{
  fprintf (stderr, "bench-store: %s\n", err->message);
  g_error_free (err);
  return 1;
}

static gint
dbl_cmp (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return (x > y) - (x < y);
}

/* Median of 3 query times (ms; @ms holds the row count on entry: from 10^6
 * rows on one query is timed); the first query's vector is stored row
 * @probe_row's, whose score must come out 1. */
static gboolean
time_query (Store * s, const gfloat * probe, guint dims, gboolean approx,
    GRand * r, gdouble * ms, gboolean * exact_ok, GError ** error)
{
  GArray *hits = g_array_new (FALSE, FALSE, sizeof (StoreHit));
  gfloat *q = g_new (gfloat, dims);
  gdouble t[3];
  guint64 compared, skipped;
  gint i, n = *ms >= 1e6 ? 1 : 3;

  for (i = 0; i < n; i++) {
    gint64 t0;

    if (i == 0)
      memcpy (q, probe, dims * sizeof (gfloat));
    else
      random_unit (r, q, dims);
    t0 = g_get_monotonic_time ();
    if (!store_query (s, q, dims, "bench", 5, approx, hits, &compared,
            &skipped, error)) {
      g_array_free (hits, TRUE);
      g_free (q);
      return FALSE;
    }
    t[i] = (g_get_monotonic_time () - t0) / 1e3;
    if (i == 0)
      *exact_ok = hits->len > 0 && fabs (g_array_index (hits, StoreHit,
              0).score - 1.0) < 1e-5;
    store_hits_clear (hits);
  }
  qsort (t, n, sizeof (gdouble), (int (*)(const void *, const void *))
      dbl_cmp);
  *ms = t[n / 2];
  g_array_free (hits, TRUE);
  g_free (q);
  return TRUE;
}

int
main (int argc, char **argv)
{
  StoreOptions o = { 5000, FALSE, FALSE };
  const gchar *db = NULL;
  guint dims = 0, nsizes = 0, i;
  guint64 sizes[16], have = 0;
  GError *err = NULL;
  GRand *r = g_rand_new_with_seed (7);
  gfloat *v, *probe;
  Store *s;
  gint a;

  for (a = 1; a < argc; a++) {
    if (!strcmp (argv[a], "--no-pgvector"))
      o.no_pgvector = TRUE;
    else if (!strcmp (argv[a], "--no-index"))
      o.no_index = TRUE;
    else if (!db)
      db = argv[a];
    else if (!dims)
      dims = (guint) g_ascii_strtoull (argv[a], NULL, 10);
    else if (nsizes < G_N_ELEMENTS (sizes))
      sizes[nsizes++] = g_ascii_strtoull (argv[a], NULL, 10);
  }
  if (!db) {
    fprintf (stderr, "usage: bench-store DB [DIMS [N...]] [--no-pgvector] "
        "[--no-index]\n");
    return 2;
  }
  if (!dims)
    dims = 768;
  if (!nsizes) {
    sizes[0] = 10000;
    sizes[1] = 100000;
    sizes[2] = 1000000;
    nsizes = 3;
  }
  if (!store_is_postgres (db))
    g_unlink (db);
  s = store_open (db, TRUE, &o, &err);
  if (!s)
    return die (err);
  printf ("store: %s; %u dims, transactions of 64 rows\n", store_describe (s),
      dims);
  printf ("%10s  %14s  %16s  %s\n", "rows", "insert rows/s", "exact query ms",
      "approx query ms");
  v = g_new (gfloat, dims);
  probe = g_new (gfloat, dims);
  for (i = 0; i < nsizes; i++) {
    gint64 t0 = g_get_monotonic_time ();
    guint64 added = 0;
    gdouble ins_s, exact_ms, approx_ms = -1;
    gboolean exact_ok = FALSE, approx_ok = FALSE;
    StoreRow row = { "bench", 0, -1, 0, "bench", dims, v };

    while (have < sizes[i]) {
      guint j;

      if (!store_begin (s, &err))
        return die (err);
      for (j = 0; j < 64 && have < sizes[i]; j++, have++, added++) {
        random_unit (r, v, dims);
        if (have == 0)
          memcpy (probe, v, dims * sizeof (gfloat));
        row.frame = (gint64) have;
        row.unix_time = g_get_real_time () / 1e6;
        if (!store_insert (s, &row, &err))
          return die (err);
      }
      if (!store_commit (s, &err))
        return die (err);
    }
    ins_s = (g_get_monotonic_time () - t0) / 1e6;
    exact_ms = approx_ms = (gdouble) have;
    if (!time_query (s, probe, dims, FALSE, r, &exact_ms, &exact_ok, &err))
      return die (err);
    if (!strstr (store_describe (s), "+ HNSW"))
      approx_ms = -1;
    else if (!time_query (s, probe, dims, TRUE, r, &approx_ms, &approx_ok,
            &err))
      return die (err);
    printf ("%10" G_GUINT64_FORMAT "  %14.0f  %16.1f  ", have,
        added / MAX (ins_s, 1e-9), exact_ms);
    if (approx_ms >= 0)
      printf ("%.1f%s\n", approx_ms, approx_ok ? "" :
          " (missed the probe row)");
    else
      printf ("-\n");
    if (!exact_ok) {
      fprintf (stderr, "bench-store: the exact query did not find the probe "
          "row with score 1\n");
      return 1;
    }
    fflush (stdout);
  }
  g_free (v);
  g_free (probe);
  g_rand_free (r);
  if (!store_close (s, &err))
    return die (err);
  /* a SQLite file of 10^6 rows is 3 GB: not left behind */
  if (!store_is_postgres (db))
    g_unlink (db);
  return 0;
}
