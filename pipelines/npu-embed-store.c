/* SPDX-License-Identifier: MIT */
/*
 * npu-embed-store: keeps a searchable record of what a camera (or a file, or
 * a test source) saw. `record` runs npuembed on every frame and stores
 * (source, frame number, timestamps, model, embedding) rows in a SQLite
 * file or on a PostgreSQL server (pipelines/store/: one file per backend,
 * picked from --db); `query` embeds an image with the same model (or takes a
 * text embedding from an .npy file, or embeds a text with a text encoder) and
 * prints the k stored frames most similar
 * to it (cosine similarity). `labels` turns example images into a
 * labels.txt + labels.npy pair for npuembed's zero-shot labels.
 *
 *   npu-embed-store record --model siglip.onnx --db cam.db --source camera
 *   npu-embed-store query  --model siglip.onnx --db cam.db --image cat.png -k 5
 *   npu-embed-store query  --db cam.db --text-embedding text.npy --row 3
 *   npu-embed-store query  --db cam.db --text "a red car" \
 *       --text-model clip-text.onnx --tokenizer tokenizer.json
 *   npu-embed-store record --model siglip.onnx --source camera \
 *       --db postgresql://user@server/embeddings
 *   npu-embed-store labels --model siglip.onnx --out labels.txt \
 *       cat=cat.png dog=dog.jpg red=pattern:red
 *
 * Sources: "test[:PATTERN]" (videotestsrc), "camera[:DEVICE]" (v4l2src), a
 * file name or a URI (decoded with uridecodebin). Image arguments are files
 * or "pattern:NAME" for one frame of videotestsrc.
 *
 * The embedding is read from GstNpuEmbeddingMeta in a pad probe on the sink,
 * in frame order; rows are written in one transaction per 64 frames.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <gst/gst.h>

#include "gstnpumeta.h"
#include "npu-text-encoder.h"
#include "npu/npu-npy.h"
#include "store/store.h"

static gchar *opt_model, *opt_db, *opt_source = NULL, *opt_backend = NULL;
static gchar *opt_image, *opt_text, *opt_out, *opt_norm = NULL;
static gchar *opt_text_query, *opt_text_model, *opt_tokenizer;
/* G_MININT: not given */
static gint opt_frames = G_MININT, opt_top = 5, opt_row = 0, opt_interval = 1;
static guint opt_cores = 7;
static gint opt_busy_ms = 5000;
static gboolean opt_quiet, opt_approx, opt_no_index;
/* the backend npuembed reported running on (stats), for the summaries */
static gchar *used_backend;

/* The values g_option_context_parse cannot check: a clear error (and exit 2)
 * before anything runs, instead of GLib CRITICALs from the element or a
 * silently ignored value. */
static gboolean
check_options (void)
{
  static const gchar *const backends[] = { "auto", "sim", "rknpu", "rocket",
    "cpu", NULL
  };

  if (opt_frames == G_MININT)
    opt_frames = -1;
  else if (opt_frames < 1) {
    g_printerr ("--frames wants a count of at least 1, got %d\n", opt_frames);
    return FALSE;
  }
  if (opt_interval < 1) {
    g_printerr ("--interval wants at least 1, got %d\n", opt_interval);
    return FALSE;
  }
  if (opt_top < 1) {
    g_printerr ("--top wants at least 1, got %d\n", opt_top);
    return FALSE;
  }
  if (opt_backend && !g_strv_contains (backends, opt_backend)) {
    g_printerr ("--backend wants auto, sim, rknpu, rocket or cpu, got '%s'\n",
        opt_backend);
    return FALSE;
  }
  if (opt_norm) {
    gchar **p = g_strsplit (opt_norm, ",", -1);
    gchar *e1 = NULL, *e2 = NULL;
    gdouble m = 0, sd = 0;
    gboolean ok = g_strv_length (p) == 2;

    if (ok) {
      m = g_ascii_strtod (p[0], &e1);
      sd = g_ascii_strtod (p[1], &e2);
      ok = e1 != p[0] && !*e1 && e2 != p[1] && !*e2 && isfinite (m)
          && isfinite (sd) && sd != 0;
    }
    g_strfreev (p);
    if (!ok) {
      g_printerr ("--normalize wants \"MEAN,STD\" (two numbers, STD not 0), "
          "got '%s'\n", opt_norm);
      return FALSE;
    }
  }
  return TRUE;
}

static GOptionEntry entries[] = {
  {"model", 'm', 0, G_OPTION_ARG_FILENAME, &opt_model,
      "Embedding model (.onnx or .npub)", "FILE"},
  {"db", 'd', 0, G_OPTION_ARG_FILENAME, &opt_db,
      "SQLite file, or PostgreSQL server: postgresql://... or postgres://... "
        "URI or \"host=... dbname=...\" conninfo", "DB"},
  {"source", 's', 0, G_OPTION_ARG_STRING, &opt_source,
      "record: test[:PATTERN], camera[:DEVICE], a file or a URI "
        "(default test)", "SRC"},
  {"frames", 'n', 0, G_OPTION_ARG_INT, &opt_frames,
      "record: stop after N frames (default: test 100, else until EOS)", "N"},
  {"interval", 'i', 0, G_OPTION_ARG_INT, &opt_interval,
      "record: embed every Nth frame (default 1)", "N"},
  {"backend", 'b', 0, G_OPTION_ARG_STRING, &opt_backend,
      "auto, sim, rknpu, rocket or cpu (default auto)", "NAME"},
  {"cores", 'c', 0, G_OPTION_ARG_INT, &opt_cores,
      "NPU core mask (default 7)", "MASK"},
  {"normalize", 0, 0, G_OPTION_ARG_STRING, &opt_norm,
      "mean/std as \"M,S\" for all channels (default: npuembed's, i.e. the "
        "model's metadata, else 0,1)", "M,S"},
  {"image", 0, 0, G_OPTION_ARG_FILENAME, &opt_image,
      "query: image file or pattern:NAME to search for", "IMAGE"},
  {"text-embedding", 't', 0, G_OPTION_ARG_FILENAME, &opt_text,
      "query: .npy with a [D] or [N, D] text embedding", "FILE"},
  /* FILENAME: the bytes as given (UTF-8, checked by the encoder), not
   * converted from the locale's charset, which fails under LANG=C */
  {"text", 0, 0, G_OPTION_ARG_FILENAME, &opt_text_query,
        "query: a text to search for (with --text-model and --tokenizer)",
      "TEXT"},
  {"text-model", 0, 0, G_OPTION_ARG_FILENAME, &opt_text_model,
      "query --text: the text encoder (CLIP or SigLIP text tower, .onnx or "
        ".npub)", "FILE"},
  {"tokenizer", 0, 0, G_OPTION_ARG_FILENAME, &opt_tokenizer,
        "query --text: its tokenizer (tokenizer.json or SentencePiece .model)",
      "FILE"},
  {"row", 0, 0, G_OPTION_ARG_INT, &opt_row,
      "query: row of an [N, D] text embedding (default 0)", "I"},
  {"top", 'k', 0, G_OPTION_ARG_INT, &opt_top, "query: results (default 5)",
      "K"},
  {"out", 'o', 0, G_OPTION_ARG_FILENAME, &opt_out,
      "labels: labels file to write (the .npy goes next to it)", "FILE"},
  {"busy-timeout", 0, 0, G_OPTION_ARG_INT, &opt_busy_ms,
      "record: wait up to MS for another connection's lock, per try "
        "(default 5000)", "MS"},
  {"approx", 0, 0, G_OPTION_ARG_NONE, &opt_approx,
      "query: use an approximate index where the store has one (PostgreSQL "
        "with pgvector: HNSW); default exact", NULL},
  {"no-index", 0, 0, G_OPTION_ARG_NONE, &opt_no_index,
      "record: do not create pgvector's HNSW index (it slows inserts down; "
        "exact queries do not need it)", NULL},
  {"quiet", 'q', 0, G_OPTION_ARG_NONE, &opt_quiet, "Print less", NULL},
  {NULL}
};

/* ---- pipeline ------------------------------------------------------------ */

/* Ctrl-C or SIGTERM ends a recording with EOS, so the last rows are
 * committed; a storage failure ends it the same way. */
static volatile sig_atomic_t interrupted;

static void
on_sigint (int sig)
{
  interrupted = 1;
}

/* Makes sure the opennpu plugin is loadable: from GST_PLUGIN_PATH, the
 * installed plugin folder, or this build's gst/ folder. */
static gboolean
ensure_plugin (void)
{
  GstElementFactory *f = gst_element_factory_find ("npuembed");

  if (!f) {
    gst_registry_scan_path (gst_registry_get (), NPU_GST_PLUGIN_BUILD_DIR);
    f = gst_element_factory_find ("npuembed");
  }
  if (!f) {
    g_printerr ("npuembed not found: set GST_PLUGIN_PATH to the folder of "
        "libgstopennpu.so\n");
    return FALSE;
  }
  gst_object_unref (f);
  return TRUE;
}

/* A string as one gst_parse_launch token: double quotes, \\ and \" escaped. */
static gchar *
parse_quote (const gchar * s)
{
  GString *q = g_string_new ("\"");

  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      g_string_append_c (q, '\\');
    g_string_append_c (q, *s);
  }
  g_string_append_c (q, '"');
  return g_string_free (q, FALSE);
}

static gchar *
embed_props (void)
{
  GString *s = g_string_new (NULL);
  gchar *q = parse_quote (opt_model);

  g_string_append_printf (s, "npuembed name=embed model=%s cores=%u "
      "inference-interval=%d", q, opt_cores, MAX (opt_interval, 1));
  g_free (q);
  if (opt_backend)
    g_string_append_printf (s, " backend=%s", opt_backend);
  if (opt_norm) {
    gchar **p = g_strsplit (opt_norm, ",", 2);

    if (p[0] && p[1])
      g_string_append_printf (s, " mean=\"<%s>\" std=\"<%s>\"", p[0], p[1]);
    g_strfreev (p);
  }
  return g_string_free (s, FALSE);
}

/* The source part of a launch line (ends with a raw video pad). */
static gchar *
source_desc (const gchar * src, gint frames)
{
  gchar *nb = frames > 0 ? g_strdup_printf (" num-buffers=%d", frames) :
      g_strdup ("");
  gchar *d;

  if (!src || g_str_has_prefix (src, "test")) {
    const gchar *pat = src && src[4] == ':' ? src + 5 : "smpte";

    d = g_strdup_printf ("videotestsrc pattern=%s%s ! video/x-raw,width=320,"
        "height=240,framerate=30/1", pat, frames > 0 ? nb : " num-buffers=100");
  } else if (g_str_has_prefix (src, "camera")) {
    const gchar *dev = src[6] == ':' ? src + 7 : "/dev/video0";
    gchar *q = parse_quote (dev);

    d = g_strdup_printf ("v4l2src device=%s%s ! videoconvert", q, nb);
    g_free (q);
  } else if (g_str_has_prefix (src, "pattern:")) {
    d = g_strdup_printf ("videotestsrc pattern=%s num-buffers=1 ! "
        "video/x-raw,width=320,height=240", src + 8);
  } else {
    gchar *uri = gst_uri_is_valid (src) ? g_strdup (src) :
        gst_filename_to_uri (src, NULL);

    d = g_strdup_printf ("uridecodebin uri=%s ! videoconvert", uri);
    g_free (uri);
  }
  g_free (nb);
  return d;
}

typedef void (*FrameFunc) (const GstNpuEmbeddingMeta * meta, guint64 frame,
    GstClockTime pts, gpointer user);

typedef struct
{
  FrameFunc func;
  gpointer user;
  guint64 frames;               /* buffers seen */
  gint limit;
  GstElement *pipeline;
} ProbeCtx;

static GstPadProbeReturn
probe_cb (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  ProbeCtx *ctx = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstNpuEmbeddingMeta *meta = gst_buffer_get_npu_embedding_meta (buf);

  if (meta)
    ctx->func (meta, ctx->frames, GST_BUFFER_PTS (buf), ctx->user);
  ctx->frames++;
  if (ctx->limit > 0 && ctx->frames == (guint64) ctx->limit)
    gst_element_post_message (ctx->pipeline,
        gst_message_new_application (GST_OBJECT (ctx->pipeline),
            gst_structure_new_empty ("npu-embed-store-done")));
  return GST_PAD_PROBE_OK;
}

/* Runs SRC ! npuembed ! fakesink, calling @func for each embedded frame.
 * Returns FALSE (after printing why) on a pipeline error. */
static gboolean
run_embedding (const gchar * src, gint frames, FrameFunc func, gpointer user)
{
  gchar *sdesc = source_desc (src, frames), *edesc = embed_props ();
  gchar *desc = g_strdup_printf ("%s ! %s ! fakesink name=sink sync=false",
      sdesc, edesc);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err), *sink;
  GstPad *pad;
  GstBus *bus;
  ProbeCtx ctx = { func, user, 0, frames, p };
  gboolean ok = FALSE, done = FALSE;

  if (!p) {
    g_printerr ("cannot build \"%s\": %s\n", desc, err->message);
    g_clear_error (&err);
    goto out;
  }
  if (err) {
    /* a missing optional element; the pipeline may still work */
    g_printerr ("warning: %s\n", err->message);
    g_clear_error (&err);
  }
  if (!opt_quiet)
    g_printerr ("pipeline: %s\n", desc);
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, probe_cb, &ctx, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);

  bus = gst_element_get_bus (p);
  gst_element_set_state (p, GST_STATE_PLAYING);
  while (!done) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 100 * GST_MSECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_APPLICATION);

    if (!m) {
      if (interrupted == 1) {
        interrupted = 2;
        g_printerr ("interrupted: finishing\n");
        gst_element_send_event (p, gst_event_new_eos ());
      }
      continue;
    }

    switch (GST_MESSAGE_TYPE (m)) {
      case GST_MESSAGE_ERROR:{
        gchar *dbg = NULL;

        gst_message_parse_error (m, &err, &dbg);
        g_printerr ("error from %s: %s\n%s\n", GST_OBJECT_NAME (m->src),
            err->message, dbg ? dbg : "");
        g_clear_error (&err);
        g_free (dbg);
        done = TRUE;
        break;
      }
      default:
        ok = done = TRUE;
        break;
    }
    gst_message_unref (m);
  }
  {
    GstElement *embed = gst_bin_get_by_name (GST_BIN (p), "embed");
    GstStructure *s = NULL;

    g_object_get (embed, "stats", &s, NULL);
    if (s && gst_structure_get_string (s, "backend")
        && *gst_structure_get_string (s, "backend")) {
      g_free (used_backend);
      used_backend = g_strdup (gst_structure_get_string (s, "backend"));
    }
    if (s)
      gst_structure_free (s);
    gst_object_unref (embed);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (p);

out:
  g_free (sdesc);
  g_free (edesc);
  g_free (desc);
  return ok;
}

/* ---- record -------------------------------------------------------------- */

typedef struct
{
  Store *store;
  const gchar *source;
  guint64 embedded;             /* frames that came with an embedding */
  guint64 pending;              /* inserted in the open transaction */
  guint64 committed;            /* rows whose COMMIT succeeded */
  gboolean in_txn;
  gboolean failed;
  gboolean unknown;             /* a COMMIT whose outcome never came back */
  gchar *why;                   /* the first failure */
} RecordCtx;

static StoreOptions
store_options (void)
{
  StoreOptions o = { 0 };

  o.busy_ms = opt_busy_ms;
  o.no_index = opt_no_index;
  return o;
}

/* Records the first failure and stops the recording (the pipeline gets EOS
 * as on Ctrl-C): rows that cannot be stored must not be reported stored.
 * The open transaction's rows are dropped. */
static void
record_fail (RecordCtx * ctx, GError * err)
{
  store_rollback (ctx->store);
  ctx->in_txn = FALSE;
  ctx->pending = 0;
  if (ctx->failed) {
    g_error_free (err);
    return;
  }
  ctx->failed = TRUE;
  ctx->unknown = g_error_matches (err, STORE_ERROR,
      STORE_ERROR_UNKNOWN_OUTCOME);
  ctx->why = g_strdup (err->message);
  g_printerr ("%s\n", ctx->why);
  g_error_free (err);
  if (!interrupted)
    interrupted = 1;
}

/* Commits the open transaction; on failure its rows are lost and counted
 * as such. */
static gboolean
record_commit (RecordCtx * ctx)
{
  GError *err = NULL;

  if (!ctx->in_txn)
    return TRUE;
  if (!store_commit (ctx->store, &err)) {
    record_fail (ctx, err);
    return FALSE;
  }
  ctx->committed += ctx->pending;
  ctx->pending = 0;
  ctx->in_txn = FALSE;
  return TRUE;
}

static void
store_frame (const GstNpuEmbeddingMeta * meta, guint64 frame, GstClockTime pts,
    gpointer user)
{
  RecordCtx *ctx = user;
  GError *err = NULL;
  StoreRow row;

  ctx->embedded++;
  if (ctx->failed)
    return;
  if (!ctx->in_txn) {
    if (!store_begin (ctx->store, &err)) {
      record_fail (ctx, err);
      return;
    }
    ctx->in_txn = TRUE;
  }
  row.source = ctx->source;
  row.frame = (gint64) frame;
  row.pts_ns = GST_CLOCK_TIME_IS_VALID (pts) ? (gint64) pts : -1;
  row.unix_time = g_get_real_time () / 1e6;
  row.model = meta->model_id ? meta->model_id : "";
  row.dims = meta->dims;
  row.vec = meta->data;
  if (!store_insert (ctx->store, &row, &err)) {
    record_fail (ctx, err);
    return;
  }
  ctx->pending++;
  if (ctx->pending == 64)
    record_commit (ctx);
  if (!opt_quiet && ctx->embedded % 25 == 1)
    g_print ("frame %" G_GUINT64_FORMAT " stored (%u dims)\n", frame,
        meta->dims);
}

static int
cmd_record (void)
{
  RecordCtx ctx = { 0 };
  StoreOptions so = store_options ();
  GError *err = NULL;
  gboolean ok;
  guint64 lost;

  if (!opt_model || !opt_db) {
    g_printerr ("record needs --model and --db\n");
    return 2;
  }
  ctx.store = store_open (opt_db, TRUE, &so, &err);
  if (!ctx.store) {
    g_printerr ("%s\n", err->message);
    g_error_free (err);
    return 1;
  }
  if (!opt_quiet)
    g_printerr ("store: %s\n", store_describe (ctx.store));
  ctx.source = opt_source ? opt_source : "test";
  ok = run_embedding (opt_source, opt_frames, store_frame, &ctx);
  record_commit (&ctx);
  if (!store_close (ctx.store, &err)) {
    if (!ctx.failed) {
      ctx.failed = TRUE;
      ctx.why = g_strdup (err->message);
    }
    g_clear_error (&err);
  }
  lost = ctx.embedded - ctx.committed;
  g_print ("%" G_GUINT64_FORMAT " embeddings stored in %s (backend %s)\n",
      ctx.committed, store_is_postgres (opt_db) ? "the PostgreSQL database" :
      opt_db, used_backend ? used_backend : "?");
  if (lost || ctx.failed) {
    g_printerr ("error: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
        " embeddings were NOT stored%s (%s)\n", lost, ctx.embedded,
        ctx.unknown ? " or not confirmed" : "",
        ctx.why ? ctx.why : "stopped early");
    g_free (ctx.why);
    return 1;
  }
  return ok ? 0 : 1;
}

/* ---- query --------------------------------------------------------------- */

typedef struct
{
  gfloat *vec;
  guint dims;
  gchar *model_id;
} OneEmbedding;

static void
keep_first (const GstNpuEmbeddingMeta * meta, guint64 frame, GstClockTime pts,
    gpointer user)
{
  OneEmbedding *e = user;

  if (e->vec)
    return;
  e->vec = g_memdup2 (meta->data, meta->dims * sizeof (gfloat));
  e->dims = meta->dims;
  e->model_id = g_strdup (meta->model_id);
}

static gboolean
embed_image (const gchar * image, OneEmbedding * e)
{
  gboolean ok = run_embedding (image, g_str_has_prefix (image, "pattern:") ?
      1 : -1, keep_first, e);

  if (ok && !e->vec) {
    g_printerr ("%s gave no embedding\n", image);
    ok = FALSE;
  }
  return ok;
}

/* Reads row @row of a [D] or [N, D] float .npy, L2-normalised. */
static gboolean
read_text_embedding (const gchar * path, gint row, OneEmbedding * e)
{
  struct npu_tensor t;
  gint64 n, d, i;
  gdouble ss = 0;

  if (npu_npy_read (path, &t) != NPU_OK) {
    g_printerr ("cannot read %s\n", path);
    return FALSE;
  }
  if (t.dtype != NPU_DTYPE_FP32 || (t.ndim != 1 && t.ndim != 2)) {
    g_printerr ("%s: need a float32 array [D] or [N, D]\n", path);
    npu_npy_free (&t);
    return FALSE;
  }
  n = t.ndim == 2 ? t.dims[0] : 1;
  d = t.dims[t.ndim - 1];
  if (row < 0 || row >= n || d <= 0) {
    g_printerr ("%s: row %d out of range (%" G_GINT64_FORMAT " rows)\n", path,
        row, n);
    npu_npy_free (&t);
    return FALSE;
  }
  e->dims = (guint) d;
  e->vec = g_memdup2 ((gfloat *) t.data + row * d, d * sizeof (gfloat));
  for (i = 0; i < d; i++)
    ss += (gdouble) e->vec[i] * e->vec[i];
  for (i = 0; ss > 0 && i < d; i++)
    e->vec[i] /= sqrt (ss);
  npu_npy_free (&t);
  return TRUE;
}

/* --text: the text's embedding with the text encoder, on --backend (the
 * stored frames' image tower and this text tower must be a pair). */
static gboolean
embed_text (const gchar * text, OneEmbedding * e)
{
  struct npu_model_options opts = { 0 };
  GstNpuTextEncoder *enc;
  GError *err = NULL;
  gboolean ok;

  opts.backend = opt_backend;
  opts.core_mask = opt_cores & 7;
  enc = gst_npu_text_encoder_new (opt_text_model, opt_tokenizer, &opts, &err);
  if (!enc) {
    g_printerr ("%s\n", err->message);
    g_clear_error (&err);
    return FALSE;
  }
  e->dims = gst_npu_text_encoder_dims (enc);
  e->vec = g_new (gfloat, e->dims);
  ok = gst_npu_text_encoder_encode (enc, text, e->vec, &err);
  if (!ok) {
    g_printerr ("%s\n", err->message);
    g_clear_error (&err);
  } else if (!opt_quiet) {
    g_print ("text \"%s\" embedded by %s (backend %s)\n", text,
        opt_text_model, gst_npu_text_encoder_backend (enc));
  }
  gst_npu_text_encoder_free (enc);
  return ok;
}

/* Prints the stored frames nearest to @q (exact unless --approx). */
static gboolean
print_nearest (Store * st, const OneEmbedding * q)
{
  GArray *hits = g_array_new (FALSE, FALSE, sizeof (StoreHit));
  guint64 compared, skipped;
  GError *err = NULL;
  guint i;

  if (!store_query (st, q->vec, q->dims, q->model_id, (guint) opt_top,
          opt_approx, hits, &compared, &skipped, &err)) {
    g_printerr ("%s: %s\n", store_is_postgres (opt_db) ? "PostgreSQL" :
        opt_db, err->message);
    g_error_free (err);
    g_array_free (hits, TRUE);
    return FALSE;
  }
  if (!opt_quiet)
    g_print ("%" G_GUINT64_FORMAT " frames compared%s (%s)\n", compared,
        skipped ? " (others are from another model)" : "", store_describe (st));
  g_print ("rank  score     source  frame  pts\n");
  for (i = 0; i < hits->len; i++) {
    StoreHit *h = &g_array_index (hits, StoreHit, i);

    if (h->pts_ns >= 0)
      g_print ("%4u  %.6f  %s  %" G_GINT64_FORMAT "  %" GST_TIME_FORMAT "\n",
          i + 1, h->score, h->source, h->frame, GST_TIME_ARGS (h->pts_ns));
    else
      g_print ("%4u  %.6f  %s  %" G_GINT64_FORMAT "  -\n", i + 1, h->score,
          h->source, h->frame);
  }
  store_hits_clear (hits);
  g_array_free (hits, TRUE);
  return TRUE;
}

static int
cmd_query (void)
{
  OneEmbedding q = { 0 };
  StoreOptions so = store_options ();
  Store *db;
  GError *err = NULL;
  int rc = 1;

  if (!opt_db || (!!opt_image + !!opt_text + !!opt_text_query) != 1 ||
      (opt_image && !opt_model) || (opt_text_query && (!opt_text_model ||
              !opt_tokenizer))) {
    g_printerr ("query needs --db and one of --image (with --model), "
        "--text-embedding, or --text (with --text-model and --tokenizer)\n");
    return 2;
  }
  db = store_open (opt_db, FALSE, &so, &err);
  if (!db) {
    g_printerr ("%s\n", err->message);
    g_error_free (err);
    return 1;
  }
  if (opt_image ? !embed_image (opt_image, &q) : opt_text_query ?
      !embed_text (opt_text_query, &q) :
      !read_text_embedding (opt_text, opt_row, &q))
    goto out;

  if (print_nearest (db, &q))
    rc = 0;

out:
  g_free (q.vec);
  g_free (q.model_id);
  store_close (db, NULL);
  return rc;
}

/* ---- labels -------------------------------------------------------------- */

static int
cmd_labels (gint argc, gchar ** argv)
{
  GString *txt = g_string_new (NULL);
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (gfloat));
  struct npu_tensor t = { 0 };
  gchar *npy = NULL;
  guint dims = 0, n = 0;
  gint i, rc = 1;

  if (!opt_model || !opt_out || argc < 1) {
    g_printerr ("labels needs --model, --out and LABEL=IMAGE arguments\n");
    rc = 2;
    goto out;
  }
  for (i = 0; i < argc; i++) {
    gchar *eq = strchr (argv[i], '=');
    OneEmbedding e = { 0 };

    if (!eq || eq == argv[i]) {
      g_printerr ("expected LABEL=IMAGE, got %s\n", argv[i]);
      goto out;
    }
    *eq = '\0';
    if (!embed_image (eq + 1, &e))
      goto out;
    if (dims && e.dims != dims) {
      g_printerr ("%s: %u dims, the others %u\n", eq + 1, e.dims, dims);
      g_free (e.vec);
      g_free (e.model_id);
      goto out;
    }
    dims = e.dims;
    g_array_append_vals (rows, e.vec, e.dims);
    g_string_append_printf (txt, "%s\n", argv[i]);
    n++;
    g_free (e.vec);
    g_free (e.model_id);
  }
  if (!g_file_set_contents (opt_out, txt->str, -1, NULL)) {
    g_printerr ("cannot write %s\n", opt_out);
    goto out;
  }
  {
    const gchar *dot = strrchr (opt_out, '.');
    const gchar *slash = strrchr (opt_out, G_DIR_SEPARATOR);

    npy = dot && (!slash || dot > slash) ?
        g_strdup_printf ("%.*s.npy", (int) (dot - opt_out), opt_out) :
        g_strdup_printf ("%s.npy", opt_out);
  }
  t.dtype = NPU_DTYPE_FP32;
  t.ndim = 2;
  t.dims[0] = n;
  t.dims[1] = dims;
  t.data = rows->data;
  if (npu_npy_write (npy, &t) != NPU_OK) {
    g_printerr ("cannot write %s\n", npy);
    goto out;
  }
  g_print ("%u labels: %s, %s (backend %s)\n", n, opt_out, npy,
      used_backend ? used_backend : "?");
  rc = 0;

out:
  g_free (npy);
  g_string_free (txt, TRUE);
  g_array_free (rows, TRUE);
  return rc;
}

int
main (int argc, char **argv)
{
  GOptionContext *ctx;
  GError *err = NULL;
  const gchar *cmd;
  int rc;

  ctx = g_option_context_new ("record|query|labels [LABEL=IMAGE...]");
  g_option_context_set_summary (ctx, "Stores per-frame embeddings (npuembed) "
      "in SQLite or PostgreSQL and finds the frames nearest to an image or text embedding.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    g_clear_error (&err);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);
  if (argc < 2) {
    g_printerr ("usage: npu-embed-store record|query|labels ... (--help)\n");
    return 2;
  }
  if (!check_options ())
    return 2;
  if (!ensure_plugin ())
    return 1;
  /* a recording ends on Ctrl-C or SIGTERM (a service stopping) with its
   * last rows committed; query and labels have nothing to commit and stop
   * at once (also while they wait for a database server) */
  if (!strcmp (argv[1], "record")) {
    signal (SIGINT, on_sigint);
    signal (SIGTERM, on_sigint);
  }
  /* past RLIMIT_FSIZE a write fails with EFBIG (SQLite reports it) instead
   * of killing the process */
  signal (SIGXFSZ, SIG_IGN);

  cmd = argv[1];
  if (!strcmp (cmd, "record"))
    rc = cmd_record ();
  else if (!strcmp (cmd, "query"))
    rc = cmd_query ();
  else if (!strcmp (cmd, "labels"))
    rc = cmd_labels (argc - 2, argv + 2);
  else {
    g_printerr ("unknown command %s\n", cmd);
    rc = 2;
  }

  g_free (opt_model);
  g_free (opt_db);
  g_free (opt_source);
  g_free (opt_backend);
  g_free (opt_image);
  g_free (opt_text);
  g_free (opt_out);
  g_free (opt_norm);
  g_free (used_backend);
  gst_deinit ();
  return rc;
}
