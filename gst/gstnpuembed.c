/* SPDX-License-Identifier: MIT */
/*
 * gstnpuembed.c: npuembed, the embedding element. GstNpuBase runs the model;
 * this file turns the chosen output into one L2-normalised vector per frame
 * (worker thread), scores it against label embeddings for zero-shot labels,
 * and attaches the results and posts messages in frame order.
 */
/**
 * SECTION:element-npuembed
 * @title: npuembed
 * @short_description: per-frame embeddings and zero-shot labels on the
 *     RK3588 NPU
 *
 * npuembed runs an embedding model (for instance the vision tower of SigLIP
 * or CLIP) on each video frame and attaches the frame's embedding as a
 * #GstNpuEmbeddingMeta: an L2-normalised float vector, its length and the
 * model id. The video passes through unchanged.
 *
 * The embedding is the output named by #GstNpuEmbed:output-name; by default
 * the first output called `image_embeds`, `pooler_output`, `embeddings` or
 * `embedding`, else the model's first output. Dimensions of size 1 are
 * ignored; an output of shape [1, N, D] (one vector per token) is averaged
 * over N.
 *
 * Zero-shot labels: give #GstNpuEmbed:labels-file (a text file, one label
 * per line) and #GstNpuEmbed:label-embeddings (a NumPy .npy file of shape
 * [N, D], row i the text embedding of label i, made with the matching text
 * encoder; by default the labels file's name with the extension .npy). Each
 * frame then also gets a #GstVideoRegionOfInterestMeta of type
 * "npu-zero-shot" covering the whole frame, with a parameter structure
 * "npu-zero-shot" holding `label` and `score` (the best one) and `labels` and
 * `scores` (the #GstNpuEmbed:top-k best, best first). Scores are cosine
 * similarities, or softmax / sigmoid probabilities over
 * logit-scale * cosine + logit-bias (#GstNpuEmbed:score-function).
 *
 * Instead of a .npy the label embeddings can be computed at start by the
 * matching text encoder: #GstNpuEmbed:text-model (the text tower of CLIP or
 * SigLIP, .onnx or .npub) and #GstNpuEmbed:tokenizer (its tokenizer.json, or
 * its SentencePiece .model). The text tower runs through the same compiler
 * and runtime as the image model, on the backend the element runs on, once
 * per label before the first frame.
 *
 * With #GstNpuEmbed:emit-messages each frame also posts an element message
 * named "npuembed" with the fields `frame` (guint64, input frame number),
 * `pts` (guint64), `dims` (guint), `model-id` (string), `core` (gint),
 * `embedding-head` (the first eight values, #GstValueArray of floats) and,
 * with labels, `label` (string) and `score` (gdouble).
 *
 * All the properties of npuinfer apply: cores, max-in-flight, drop,
 * inference-interval, resize, normalisation and so on.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=10 ! \
 *     npuembed model=siglip.onnx emit-messages=true ! fakesink
 * ]| Prints one message per frame with the start of its embedding.
 * |[
 * gst-launch-1.0 -m v4l2src ! videoconvert ! \
 *     npuembed model=siglip.npub mean="<0.5,0.5,0.5>" std="<0.5,0.5,0.5>" \
 *     labels-file=labels.txt label-embeddings=labels.npy emit-messages=true ! \
 *     videoconvert ! autovideosink
 * ]| Labels camera frames zero-shot against the labels' text embeddings.
 * |[
 * gst-launch-1.0 -m v4l2src ! videoconvert ! \
 *     npuembed model=clip-vision.onnx text-model=clip-text.onnx \
 *     tokenizer=tokenizer.json labels-file=labels.txt \
 *     score-function=softmax logit-scale=100 emit-messages=true ! fakesink
 * ]| The same with CLIP, the labels embedded at start by its text tower.
 *
 * Since: 0.1
 */
#include <math.h>
#include <string.h>

#include "gstnpuembed.h"
#include "gstnpulabels.h"
#include "gstnpuprops.h"
#include "npu-text-encoder.h"
#include "npu/npu-backend.h"
#include "npu/npu-fp16.h"
#include "npu/npu-npy.h"

GST_DEBUG_CATEGORY_STATIC (gst_npu_embed_debug);
#define GST_CAT_DEFAULT gst_npu_embed_debug

#define DEFAULT_PROP_OUTPUT_NAME NULL
#define DEFAULT_PROP_LABELS_FILE NULL
#define DEFAULT_PROP_LABEL_EMBEDDINGS NULL
#define DEFAULT_PROP_TEXT_MODEL NULL
#define DEFAULT_PROP_TOKENIZER NULL
#define DEFAULT_PROP_TOP_K 5
#define DEFAULT_PROP_SCORE_FUNCTION GST_NPU_SCORE_COSINE
#define DEFAULT_PROP_LOGIT_SCALE 100.0
#define DEFAULT_PROP_LOGIT_BIAS 0.0
#define DEFAULT_PROP_EMIT_MESSAGES FALSE

#define MESSAGE_HEAD 8

/**
 * GstNpuScoreFunction:
 * @GST_NPU_SCORE_COSINE: the cosine similarity, -1..1
 * @GST_NPU_SCORE_SOFTMAX: softmax over all labels of
 *     logit-scale * cosine + logit-bias (CLIP style)
 * @GST_NPU_SCORE_SIGMOID: sigmoid of logit-scale * cosine + logit-bias, per
 *     label (SigLIP style)
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_SCORE_COSINE,
  GST_NPU_SCORE_SOFTMAX,
  GST_NPU_SCORE_SIGMOID,
} GstNpuScoreFunction;

enum
{
  PROP_0,
  PROP_OUTPUT_NAME,
  PROP_LABELS_FILE,
  PROP_LABEL_EMBEDDINGS,
  PROP_TOP_K,
  PROP_SCORE_FUNCTION,
  PROP_LOGIT_SCALE,
  PROP_LOGIT_BIAS,
  PROP_EMIT_MESSAGES,
  PROP_TEXT_MODEL,
  PROP_TOKENIZER,
};

struct _GstNpuEmbed
{
  GstNpuBase parent;

  /* properties (object lock) */
  gchar *output_name;
  gchar *labels_file;
  gchar *label_embeddings;
  gchar *text_model;
  gchar *tokenizer;
  guint top_k;
  GstNpuScoreFunction score_function;
  gdouble logit_scale, logit_bias;
  gint emit_messages;           /* atomic */

  /* from start(), constant while streaming */
  gint output_index;
  guint rows;                   /* vectors averaged into one */
  guint dims;
  gchar **labels;
  guint n_labels;
  gfloat *label_vecs;           /* n_labels x dims, unit rows */
  guint k;
  GstNpuScoreFunction score;
  gdouble scale, bias;
};

typedef struct
{
  gfloat *vec;
  guint dims;
  gboolean normalized;
  guint k;
  guint *top;
  gdouble *scores;
} EmbedResult;

G_DEFINE_TYPE (GstNpuEmbed, gst_npu_embed, GST_TYPE_NPU_BASE);
GST_ELEMENT_REGISTER_DEFINE (npuembed, "npuembed", GST_RANK_NONE,
    GST_TYPE_NPU_EMBED);

#define GST_TYPE_NPU_SCORE_FUNCTION (gst_npu_score_function_get_type ())
static GType
gst_npu_score_function_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_SCORE_COSINE, "Cosine similarity", "cosine"},
    {GST_NPU_SCORE_SOFTMAX, "Softmax of logit-scale * cosine + logit-bias "
          "over the labels (CLIP)", "softmax"},
    {GST_NPU_SCORE_SIGMOID, "Sigmoid of logit-scale * cosine + logit-bias "
          "(SigLIP)", "sigmoid"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuScoreFunction", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

static void
embed_result_free (gpointer data)
{
  EmbedResult *r = data;

  g_free (r->vec);
  g_free (r->top);
  g_free (r->scores);
  g_free (r);
}

static void
normalize (gfloat * v, guint n, gboolean * ok)
{
  gdouble ss = 0.0;
  guint i;

  for (i = 0; i < n; i++)
    ss += (gdouble) v[i] * v[i];
  if (ss > 0.0 && isfinite (ss)) {
    gdouble inv = 1.0 / sqrt (ss);

    for (i = 0; i < n; i++)
      v[i] = (gfloat) (v[i] * inv);
    if (ok)
      *ok = TRUE;
  } else if (ok) {
    *ok = FALSE;
  }
}

/* The labels file's lines (a final newline starts no label), or NULL after
 * an element error. */
static gchar **
read_labels (GstNpuEmbed * self, const gchar * labels_path, guint * n_out)
{
  gchar *text = NULL, **lines;
  GError *err = NULL;

  if (!g_file_get_contents (labels_path, &text, NULL, &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("Could not read labels file \"%s\".", labels_path), ("%s",
            err->message));
    g_clear_error (&err);
    return NULL;
  }
  lines = gst_npu_labels_from_text (text, n_out);
  g_free (text);
  if (!lines)
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Labels file \"%s\" has no labels.", labels_path), (NULL));
  return lines;
}

static gboolean
load_labels (GstNpuEmbed * self, const gchar * labels_path,
    const gchar * npy_path)
{
  gchar **lines;
  struct npu_tensor t;
  enum npu_status st;
  guint n = 0, i, j;
  gint64 rows, cols;

  lines = read_labels (self, labels_path, &n);
  if (!lines)
    return FALSE;
  if (!g_file_test (npy_path, G_FILE_TEST_EXISTS)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("Label embeddings file \"%s\" does not exist.", npy_path),
        ("set label-embeddings to the .npy of the labels' text embeddings"));
    g_strfreev (lines);
    return FALSE;
  }
  st = npu_npy_read (npy_path, &t);
  if (st != NPU_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not read label embeddings \"%s\".", npy_path),
        ("%s (see the opennpu debug category for the reason)",
            npu_status_str (st)));
    g_strfreev (lines);
    return FALSE;
  }
  rows = t.ndim == 2 ? t.dims[0] : -1;
  cols = t.ndim == 2 ? t.dims[1] : -1;
  if (t.ndim != 2 || rows != n || cols != self->dims ||
      !(t.dtype == NPU_DTYPE_FP32 || t.dtype == NPU_DTYPE_FP16 ||
          t.dtype == NPU_DTYPE_FP64)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Label embeddings \"%s\" do not match the labels and the model.",
            npy_path), ("need a float array of shape [%u, %u] (%u labels, "
            "embedding size %u); got %s with %d dims [%" G_GINT64_FORMAT ", %"
            G_GINT64_FORMAT "]", n, self->dims, n, self->dims,
            npu_dtype_name (t.dtype), t.ndim, rows, cols));
    npu_npy_free (&t);
    g_strfreev (lines);
    return FALSE;
  }

  self->label_vecs = g_new (gfloat, (gsize) n * self->dims);
  for (i = 0; i < n; i++) {
    for (j = 0; j < self->dims; j++) {
      gsize idx = (gsize) i * self->dims + j;

      if (t.dtype == NPU_DTYPE_FP32)
        self->label_vecs[idx] = ((const gfloat *) t.data)[idx];
      else if (t.dtype == NPU_DTYPE_FP64)
        self->label_vecs[idx] = (gfloat) ((const gdouble *) t.data)[idx];
      else
        self->label_vecs[idx] =
            npu_fp16_to_fp32 (((const guint16 *) t.data)[idx]);
    }
    normalize (self->label_vecs + (gsize) i * self->dims, self->dims, NULL);
  }
  npu_npy_free (&t);
  self->labels = lines;
  self->n_labels = n;
  GST_INFO_OBJECT (self, "%u labels from %s, embeddings from %s", n,
      labels_path, npy_path);
  return TRUE;
}

/* The labels' embeddings computed at start with the text tower
 * (text-model, tokenizer) through the model API, on the backend the image
 * model runs on. */
static gboolean
embed_labels (GstNpuEmbed * self, struct npu_model *image_model,
    const gchar * labels_path, const gchar * text_model,
    const gchar * tokenizer)
{
  struct npu_model_options opts;
  GstNpuTextEncoder *enc;
  gchar **lines, *cache_dir = NULL, *hw_profile = NULL;
  GError *err = NULL;
  guint n = 0, i;
  gint64 t0;

  lines = read_labels (self, labels_path, &n);
  if (!lines)
    return FALSE;
  if (!tokenizer || !*tokenizer) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("text-model is set but tokenizer is not."),
        ("give the text model's tokenizer: a tokenizer.json (CLIP) or a "
            "SentencePiece .model (SigLIP)"));
    g_strfreev (lines);
    return FALSE;
  }
  g_object_get (self, "cache-dir", &cache_dir, "hw-profile", &hw_profile, NULL);
  memset (&opts, 0, sizeof (opts));
  opts.backend = npu_model_backend (image_model);
  opts.cache_dir = cache_dir;
  if (hw_profile && npu_hw_profile_parse (hw_profile, &opts.hw_profile) !=
      NPU_OK)
    opts.hw_profile = 0;
  opts.cpu_threads = 1;
  t0 = g_get_monotonic_time ();
  enc = gst_npu_text_encoder_new (text_model, tokenizer, &opts, &err);
  g_free (cache_dir);
  g_free (hw_profile);
  if (!enc) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not load the text encoder \"%s\".", text_model), ("%s",
            err->message));
    g_clear_error (&err);
    g_strfreev (lines);
    return FALSE;
  }
  if (gst_npu_text_encoder_dims (enc) != self->dims) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("The text model's embeddings do not match the image model's."),
        ("text model \"%s\" gives %u values, the image model %u", text_model,
            gst_npu_text_encoder_dims (enc), self->dims));
    gst_npu_text_encoder_free (enc);
    g_strfreev (lines);
    return FALSE;
  }
  self->label_vecs = g_new (gfloat, (gsize) n * self->dims);
  for (i = 0; i < n; i++) {
    if (!gst_npu_text_encoder_encode (enc, lines[i],
            self->label_vecs + (gsize) i * self->dims, &err)) {
      GST_ELEMENT_ERROR (self, STREAM, FAILED,
          ("Could not embed label %u (\"%s\") with the text model.", i + 1,
              lines[i]), ("%s", err->message));
      g_clear_error (&err);
      g_clear_pointer (&self->label_vecs, g_free);
      gst_npu_text_encoder_free (enc);
      g_strfreev (lines);
      return FALSE;
    }
  }
  GST_INFO_OBJECT (self, "%u labels from %s embedded by %s (backend %s, "
      "sequence length %u) in %.1f ms", n, labels_path, text_model,
      gst_npu_text_encoder_backend (enc), gst_npu_text_encoder_seq_len (enc),
      (g_get_monotonic_time () - t0) / 1000.0);
  gst_npu_text_encoder_free (enc);
  self->labels = lines;
  self->n_labels = n;
  return TRUE;
}

static const gchar *auto_names[] = {
  "image_embeds", "pooler_output", "embeddings", "embedding", NULL
};

static gboolean
gst_npu_embed_start (GstNpuBase * base, struct npu_model *model)
{
  GstNpuEmbed *self = GST_NPU_EMBED (base);
  gchar *output_name, *labels_file, *label_embeddings, *text_model;
  gchar *tokenizer;
  gint nout = npu_model_num_outputs (model), i, j;
  const struct npu_io_info *io;
  gint64 kept[NPU_MAX_DIMS];
  gint nkept = 0;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  output_name = g_strdup (self->output_name);
  labels_file = g_strdup (self->labels_file);
  label_embeddings = g_strdup (self->label_embeddings);
  text_model = g_strdup (self->text_model);
  tokenizer = g_strdup (self->tokenizer);
  self->k = self->top_k;
  self->score = self->score_function;
  self->scale = self->logit_scale;
  self->bias = self->logit_bias;
  GST_OBJECT_UNLOCK (self);

  self->output_index = -1;
  if (output_name) {
    for (i = 0; i < nout; i++) {
      io = npu_model_output (model, i);
      if (io->name && !strcmp (io->name, output_name))
        self->output_index = i;
    }
    if (self->output_index < 0) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The model has no output called \"%s\".", output_name), (NULL));
      ok = FALSE;
      goto done;
    }
  } else {
    for (j = 0; auto_names[j] && self->output_index < 0; j++)
      for (i = 0; i < nout; i++) {
        io = npu_model_output (model, i);
        if (io->name && !strcmp (io->name, auto_names[j])) {
          self->output_index = i;
          break;
        }
      }
    if (self->output_index < 0)
      self->output_index = 0;
  }

  io = npu_model_output (model, self->output_index);
  for (i = 0; i < io->ndim; i++)
    if (io->dims[i] != 1)
      kept[nkept++] = io->dims[i];
  if (nkept == 1) {
    self->rows = 1;
    self->dims = (guint) kept[0];
  } else if (nkept == 2) {
    self->rows = (guint) kept[0];
    self->dims = (guint) kept[1];
  } else {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Output \"%s\" of the model is not an embedding.",
            io->name ? io->name : "?"),
        ("an embedding output has one dimension larger than 1 ([1, D]) or "
            "two ([1, N, D], averaged over N); this one has %d such dims",
            nkept));
    ok = FALSE;
    goto done;
  }
  if (self->dims == 0 || self->rows == 0 || io->dtype == NPU_DTYPE_BOOL) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Output \"%s\" of the model is not an embedding.",
            io->name ? io->name : "?"), ("empty or boolean output"));
    ok = FALSE;
    goto done;
  }
  GST_INFO_OBJECT (self, "embedding: output %d \"%s\", %u x %u -> %u",
      self->output_index, io->name ? io->name : "", self->rows, self->dims,
      self->dims);

  if (text_model && *text_model) {
    if (!labels_file || !*labels_file) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("text-model is set but labels-file is not."), (NULL));
      ok = FALSE;
    } else if (label_embeddings && *label_embeddings) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Both text-model and label-embeddings are set."),
          ("the label embeddings come from one of them"));
      ok = FALSE;
    } else {
      ok = embed_labels (self, model, labels_file, text_model, tokenizer);
    }
  } else if (tokenizer && *tokenizer) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("tokenizer is set but text-model is not."), (NULL));
    ok = FALSE;
  } else if (labels_file && *labels_file) {
    gchar *npy = label_embeddings && *label_embeddings ?
        g_strdup (label_embeddings) : NULL;

    if (!npy) {
      const gchar *dot = strrchr (labels_file, '.');
      const gchar *slash = strrchr (labels_file, G_DIR_SEPARATOR);

      if (dot && (!slash || dot > slash))
        npy = g_strdup_printf ("%.*s.npy", (int) (dot - labels_file),
            labels_file);
      else
        npy = g_strdup_printf ("%s.npy", labels_file);
    }
    ok = load_labels (self, labels_file, npy);
    g_free (npy);
  } else if (label_embeddings && *label_embeddings) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("label-embeddings is set but labels-file is not."), (NULL));
    ok = FALSE;
  }

done:
  g_free (output_name);
  g_free (labels_file);
  g_free (label_embeddings);
  g_free (text_model);
  g_free (tokenizer);
  return ok;
}

static void
gst_npu_embed_stop (GstNpuBase * base)
{
  GstNpuEmbed *self = GST_NPU_EMBED (base);

  g_clear_pointer (&self->labels, g_strfreev);
  g_clear_pointer (&self->label_vecs, g_free);
  self->n_labels = 0;
}

static gint
compare_scores (gconstpointer a, gconstpointer b, gpointer user)
{
  const gdouble *s = user;
  gdouble x = s[*(const guint *) a], y = s[*(const guint *) b];

  if (x > y)
    return -1;
  if (x < y)
    return 1;
  return (gint) * (const guint *) a - (gint) * (const guint *) b;
}

static gboolean
gst_npu_embed_process (GstNpuBase * base, GstNpuResult * res, GError ** error)
{
  GstNpuEmbed *self = GST_NPU_EMBED (base);
  const GstNpuTensor *t = &res->outputs[self->output_index];
  EmbedResult *r;
  gfloat *raw;
  gsize n, i, j;

  raw = gst_npu_tensor_dup_float (t, &n);
  if (!raw || n != (gsize) self->rows * self->dims) {
    g_free (raw);
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
        "embedding output of frame %" G_GUINT64_FORMAT " has %" G_GSIZE_FORMAT
        " elements, expected %u", res->frame, n, self->rows * self->dims);
    return FALSE;
  }

  r = g_new0 (EmbedResult, 1);
  r->dims = self->dims;
  if (self->rows == 1) {
    r->vec = raw;
  } else {
    r->vec = g_new0 (gfloat, self->dims);
    for (i = 0; i < self->rows; i++)
      for (j = 0; j < self->dims; j++)
        r->vec[j] += raw[i * self->dims + j];
    for (j = 0; j < self->dims; j++)
      r->vec[j] /= (gfloat) self->rows;
    g_free (raw);
  }
  normalize (r->vec, r->dims, &r->normalized);

  if (self->n_labels > 0) {
    gdouble *all = g_new (gdouble, self->n_labels);
    guint *idx = g_new (guint, self->n_labels);
    gdouble mx = -G_MAXDOUBLE, sum = 0.0;

    for (i = 0; i < self->n_labels; i++) {
      const gfloat *l = self->label_vecs + i * self->dims;
      gdouble dot = 0.0;

      for (j = 0; j < self->dims; j++)
        dot += (gdouble) r->vec[j] * l[j];
      all[i] = dot;
      idx[i] = i;
    }
    switch (self->score) {
      case GST_NPU_SCORE_SOFTMAX:
        for (i = 0; i < self->n_labels; i++) {
          all[i] = self->scale * all[i] + self->bias;
          mx = MAX (mx, all[i]);
        }
        for (i = 0; i < self->n_labels; i++) {
          all[i] = exp (all[i] - mx);
          sum += all[i];
        }
        for (i = 0; i < self->n_labels; i++)
          all[i] /= sum;
        break;
      case GST_NPU_SCORE_SIGMOID:
        for (i = 0; i < self->n_labels; i++)
          all[i] = 1.0 / (1.0 + exp (-(self->scale * all[i] + self->bias)));
        break;
      default:
        break;
    }
    g_qsort_with_data (idx, self->n_labels, sizeof (guint), compare_scores,
        all);
    r->k = MIN (self->k, self->n_labels);
    r->top = g_new (guint, r->k);
    r->scores = g_new (gdouble, r->k);
    for (i = 0; i < r->k; i++) {
      r->top[i] = idx[i];
      r->scores[i] = all[idx[i]];
    }
    g_free (all);
    g_free (idx);
  }

  res->user = r;
  res->user_free = embed_result_free;
  return TRUE;
}

static void
gst_npu_embed_attach (GstNpuBase * base, GstBuffer * buffer, GstNpuResult * res)
{
  GstNpuEmbed *self = GST_NPU_EMBED (base);
  EmbedResult *r = res->user;
  const gchar *model_id = gst_npu_base_get_model_id (base);
  guint i;

  if (!r)
    return;

  gst_buffer_add_npu_embedding_meta (buffer, model_id, r->vec, r->dims,
      r->normalized);

  if (r->k > 0) {
    GstVideoRegionOfInterestMeta *roi;
    GstStructure *s;
    GValue labels = G_VALUE_INIT, scores = G_VALUE_INIT;

    roi = gst_buffer_add_video_region_of_interest_meta (buffer,
        GST_NPU_ZERO_SHOT_ROI_TYPE, 0, 0, res->frame_width, res->frame_height);
    g_value_init (&labels, GST_TYPE_ARRAY);
    g_value_init (&scores, GST_TYPE_ARRAY);
    for (i = 0; i < r->k; i++) {
      GValue v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_STRING);
      g_value_set_string (&v, self->labels[r->top[i]]);
      gst_value_array_append_and_take_value (&labels, &v);
      g_value_init (&v, G_TYPE_DOUBLE);
      g_value_set_double (&v, r->scores[i]);
      gst_value_array_append_and_take_value (&scores, &v);
    }
    s = gst_structure_new (GST_NPU_ZERO_SHOT_STRUCTURE,
        "label", G_TYPE_STRING, self->labels[r->top[0]],
        "score", G_TYPE_DOUBLE, r->scores[0],
        "model-id", G_TYPE_STRING, model_id, NULL);
    gst_structure_take_value (s, "labels", &labels);
    gst_structure_take_value (s, "scores", &scores);
    gst_video_region_of_interest_meta_add_param (roi, s);
  }

  if (g_atomic_int_get (&self->emit_messages)) {
    GstStructure *s;
    GValue head = G_VALUE_INIT;

    g_value_init (&head, GST_TYPE_ARRAY);
    for (i = 0; i < MIN (r->dims, MESSAGE_HEAD); i++) {
      GValue v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_FLOAT);
      g_value_set_float (&v, r->vec[i]);
      gst_value_array_append_and_take_value (&head, &v);
    }
    s = gst_structure_new ("npuembed",
        "frame", G_TYPE_UINT64, res->frame,
        "pts", G_TYPE_UINT64, (guint64) res->pts,
        "dims", G_TYPE_UINT, r->dims,
        "model-id", G_TYPE_STRING, model_id,
        "core", G_TYPE_INT, res->core, NULL);
    gst_structure_take_value (s, "embedding-head", &head);
    if (r->k > 0)
      gst_structure_set (s, "label", G_TYPE_STRING, self->labels[r->top[0]],
          "score", G_TYPE_DOUBLE, r->scores[0], NULL);
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
  }
}

static const GstNpuField gst_npu_embed_fields[] = {
  GST_NPU_FIELD (PROP_OUTPUT_NAME, STRING, GstNpuEmbed, output_name),
  GST_NPU_FIELD (PROP_LABELS_FILE, STRING, GstNpuEmbed, labels_file),
  GST_NPU_FIELD (PROP_LABEL_EMBEDDINGS, STRING, GstNpuEmbed, label_embeddings),
  GST_NPU_FIELD (PROP_TOP_K, UINT, GstNpuEmbed, top_k),
  GST_NPU_FIELD (PROP_SCORE_FUNCTION, ENUM, GstNpuEmbed, score_function),
  GST_NPU_FIELD (PROP_LOGIT_SCALE, DOUBLE, GstNpuEmbed, logit_scale),
  GST_NPU_FIELD (PROP_LOGIT_BIAS, DOUBLE, GstNpuEmbed, logit_bias),
  GST_NPU_FIELD (PROP_TEXT_MODEL, STRING, GstNpuEmbed, text_model),
  GST_NPU_FIELD (PROP_TOKENIZER, STRING, GstNpuEmbed, tokenizer),
};

static void
gst_npu_embed_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNpuEmbed *self = GST_NPU_EMBED (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_EMIT_MESSAGES:
      g_atomic_int_set (&self->emit_messages, g_value_get_boolean (value));
      break;
    default:
      if (!gst_npu_fields_set (self, gst_npu_embed_fields,
              G_N_ELEMENTS (gst_npu_embed_fields), prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_npu_embed_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNpuEmbed *self = GST_NPU_EMBED (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_EMIT_MESSAGES:
      g_value_set_boolean (value, g_atomic_int_get (&self->emit_messages));
      break;
    default:
      if (!gst_npu_fields_get (self, gst_npu_embed_fields,
              G_N_ELEMENTS (gst_npu_embed_fields), prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_npu_embed_finalize (GObject * object)
{
  GstNpuEmbed *self = GST_NPU_EMBED (object);

  g_free (self->output_name);
  g_free (self->labels_file);
  g_free (self->label_embeddings);
  g_free (self->text_model);
  g_free (self->tokenizer);
  g_strfreev (self->labels);
  g_free (self->label_vecs);

  G_OBJECT_CLASS (gst_npu_embed_parent_class)->finalize (object);
}

static void
gst_npu_embed_class_init (GstNpuEmbedClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNpuBaseClass *base_class = GST_NPU_BASE_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;

  GST_DEBUG_CATEGORY_INIT (gst_npu_embed_debug, "npuembed", 0,
      "OpenNPU embedding element");
  base_class->debug_category = gst_npu_embed_debug;
  base_class->start = GST_DEBUG_FUNCPTR (gst_npu_embed_start);
  base_class->stop = GST_DEBUG_FUNCPTR (gst_npu_embed_stop);
  base_class->process = GST_DEBUG_FUNCPTR (gst_npu_embed_process);
  base_class->attach = GST_DEBUG_FUNCPTR (gst_npu_embed_attach);

  gobject_class->set_property = gst_npu_embed_set_property;
  gobject_class->get_property = gst_npu_embed_get_property;
  gobject_class->finalize = gst_npu_embed_finalize;

  /**
   * GstNpuEmbed:output-name:
   *
   * The model output that holds the embedding. NULL picks the first output
   * named image_embeds, pooler_output, embeddings or embedding, else output 0.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_OUTPUT_NAME,
      g_param_spec_string ("output-name", "Output name",
          "Model output holding the embedding (NULL: image_embeds, "
          "pooler_output, embeddings or embedding, else the first output)",
          DEFAULT_PROP_OUTPUT_NAME, rw_ready));

  /**
   * GstNpuEmbed:labels-file:
   *
   * Text file with one label per line, for zero-shot labelling; row i of
   * #GstNpuEmbed:label-embeddings is the text embedding of line i.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_LABELS_FILE,
      g_param_spec_string ("labels-file", "Labels file",
          "Text file, one label per line, for zero-shot labels",
          DEFAULT_PROP_LABELS_FILE, rw_ready));

  /**
   * GstNpuEmbed:label-embeddings:
   *
   * NumPy .npy file of shape [N, D] (float32, float16 or float64): the text
   * embeddings of the N labels, D = the embedding size. NULL = the labels
   * file's name with its extension replaced by .npy.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_LABEL_EMBEDDINGS,
      g_param_spec_string ("label-embeddings", "Label embeddings",
          "NumPy .npy [N, D] text embeddings of the labels (NULL: the labels "
          "file with extension .npy)", DEFAULT_PROP_LABEL_EMBEDDINGS,
          rw_ready));

  /**
   * GstNpuEmbed:top-k:
   *
   * Number of best labels listed in the zero-shot ROI meta.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TOP_K,
      g_param_spec_uint ("top-k", "Top k",
          "Number of best labels listed per frame", 1, 1000,
          DEFAULT_PROP_TOP_K, rw_ready));

  /**
   * GstNpuEmbed:score-function:
   *
   * How label scores are computed from the cosine similarity.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_SCORE_FUNCTION,
      g_param_spec_enum ("score-function", "Score function",
          "How label scores are computed from cosine similarities",
          GST_TYPE_NPU_SCORE_FUNCTION, DEFAULT_PROP_SCORE_FUNCTION, rw_ready));

  /**
   * GstNpuEmbed:logit-scale:
   *
   * Factor on the cosine similarity for the softmax and sigmoid score
   * functions (CLIP uses 100; SigLIP's learnt value is near 117).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_LOGIT_SCALE,
      g_param_spec_double ("logit-scale", "Logit scale",
          "Factor on the cosine for softmax/sigmoid scores", -1e6, 1e6,
          DEFAULT_PROP_LOGIT_SCALE, rw_ready));

  /**
   * GstNpuEmbed:logit-bias:
   *
   * Added to the scaled cosine for the softmax and sigmoid score functions
   * (SigLIP's learnt value is near -12.9).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_LOGIT_BIAS,
      g_param_spec_double ("logit-bias", "Logit bias",
          "Added to the scaled cosine for softmax/sigmoid scores", -1e6, 1e6,
          DEFAULT_PROP_LOGIT_BIAS, rw_ready));

  /**
   * GstNpuEmbed:emit-messages:
   *
   * Post an element message "npuembed" per inferred frame (frame, pts,
   * dims, model-id, core, embedding-head, and label/score with labels).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_EMIT_MESSAGES,
      g_param_spec_boolean ("emit-messages", "Emit messages",
          "Post an element message per inferred frame",
          DEFAULT_PROP_EMIT_MESSAGES, rw | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNpuEmbed:text-model:
   *
   * A text encoder (the text tower of CLIP or SigLIP, .onnx or .npub) that
   * computes the embeddings of the #GstNpuEmbed:labels-file labels at start,
   * through the same compiler and runtime as the image model, on the
   * backend it runs on. It takes input_ids [1, L] (and optionally
   * attention_mask) and gives text_embeds / pooler_output [1, D] (or a per
   * token [1, L, D] output, pooled at the first EOS for a tokenizer.json, at
   * the last position for SentencePiece). Needs #GstNpuEmbed:tokenizer;
   * excludes #GstNpuEmbed:label-embeddings.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TEXT_MODEL,
      g_param_spec_string ("text-model", "Text model",
          "Text encoder (.onnx or .npub) that embeds the labels at start "
          "(needs tokenizer; replaces label-embeddings)",
          DEFAULT_PROP_TEXT_MODEL, rw_ready));

  /**
   * GstNpuEmbed:tokenizer:
   *
   * The #GstNpuEmbed:text-model's tokenizer: a Hugging Face tokenizer.json
   * or its folder (CLIP: byte-level BPE, BOS + text + EOS) or a
   * SentencePiece .model (SigLIP: lowercased, punctuation removed, pieces +
   * EOS; needs a build with libsentencepiece). Ids are padded with EOS to
   * the model's sequence length.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TOKENIZER,
      g_param_spec_string ("tokenizer", "Tokenizer",
          "Tokenizer of text-model: tokenizer.json (or its folder) or a "
          "SentencePiece .model", DEFAULT_PROP_TOKENIZER, rw_ready));

  gst_element_class_set_static_metadata (element_class,
      "OpenNPU embeddings", "Filter/Analyzer/Video",
      "Computes an L2-normalised embedding of each video frame with the "
      "RK3588 NPU (GstNpuEmbeddingMeta) and, given label text embeddings, "
      "zero-shot labels; video passes through", "OpenNPU developers");

  gst_type_mark_as_plugin_api (GST_TYPE_NPU_SCORE_FUNCTION, 0);
}

static void
gst_npu_embed_init (GstNpuEmbed * self)
{
  self->top_k = DEFAULT_PROP_TOP_K;
  self->score_function = DEFAULT_PROP_SCORE_FUNCTION;
  self->logit_scale = DEFAULT_PROP_LOGIT_SCALE;
  self->logit_bias = DEFAULT_PROP_LOGIT_BIAS;
  self->emit_messages = DEFAULT_PROP_EMIT_MESSAGES;
}
