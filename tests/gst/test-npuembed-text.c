/* SPDX-License-Identifier: MIT */
/*
 * test-npuembed-text.c: the text encoder (gst/npu-text-encoder.c) and
 * npuembed's text-model / tokenizer properties, against references made by
 * make-text-models.py: small CLIP and SigLIP text towers exported by torch
 * with random weights, their ids from an independent reference (the CLIP BPE
 * algorithm written in the generator; spm_encode, the sentencepiece CLI, for
 * a SentencePiece model trained there with spm_train) and torch's
 * embeddings. The suite is chosen by TEXT_SUITE: "clip" (tokenizer.json
 * through npu-tokenizer, and npuembed) or "siglip" (libsentencepiece; run
 * only when the build has it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gstnpumeta.h"
#include "npu-text-encoder.h"
#include "npu/npu-npy.h"

#define TM(name) TEXT_MODELS_DIR "/" name
#define MIN_COSINE 0.999

/* The labels, reference ids and reference embeddings of one tower. */
typedef gint32 IdRow[64];

typedef struct
{
  gchar **labels;
  guint n;
  IdRow *ids;
  guint seq;
  gfloat *emb;
  guint dims;
} Ref;

static void
ref_load (Ref * r, const gchar * prefix)
{
  gchar *path, *text, **lines;
  struct npu_tensor t;
  guint i, j;

  memset (r, 0, sizeof (*r));
  path = g_strdup_printf (TEXT_MODELS_DIR "/%s_labels.txt", prefix);
  fail_unless (g_file_get_contents (path, &text, NULL, NULL), "%s", path);
  g_free (path);
  g_strchomp (text);
  r->labels = g_strsplit (text, "\n", -1);
  r->n = g_strv_length (r->labels);
  g_free (text);

  path = g_strdup_printf (TEXT_MODELS_DIR "/%s_ref.txt", prefix);
  fail_unless (g_file_get_contents (path, &text, NULL, NULL), "%s", path);
  g_free (path);
  g_strchomp (text);
  lines = g_strsplit (text, "\n", -1);
  g_free (text);
  fail_unless_equals_int (g_strv_length (lines), r->n);
  r->ids = g_new0 (IdRow, r->n);
  for (i = 0; i < r->n; i++) {
    gchar **f = g_strsplit (lines[i], " ", -1);

    r->seq = g_strv_length (f);
    fail_unless (r->seq <= 64);
    for (j = 0; j < r->seq; j++)
      r->ids[i][j] = (gint32) g_ascii_strtoll (f[j], NULL, 10);
    g_strfreev (f);
  }
  g_strfreev (lines);

  path = g_strdup_printf (TEXT_MODELS_DIR "/%s_ref.npy", prefix);
  fail_unless (npu_npy_read (path, &t) == NPU_OK, "%s", path);
  g_free (path);
  fail_unless (t.dtype == NPU_DTYPE_FP32 && t.ndim == 2 && t.dims[0] == r->n);
  r->dims = (guint) t.dims[1];
  r->emb = g_memdup2 (t.data, (gsize) r->n * r->dims * sizeof (gfloat));
  npu_npy_free (&t);
}

static void
ref_clear (Ref * r)
{
  g_strfreev (r->labels);
  g_free (r->ids);
  g_free (r->emb);
}

static GstNpuTextEncoder *
encoder (const gchar * model, const gchar * tok, const gchar * backend)
{
  struct npu_model_options opts = { 0 };
  GError *err = NULL;
  GstNpuTextEncoder *enc;

  opts.backend = backend;
  opts.cpu_threads = 1;
  enc = gst_npu_text_encoder_new (model, tok, &opts, &err);
  fail_unless (enc != NULL, "%s", err ? err->message : "?");
  return enc;
}

/* The ids given to the model are the reference's, label for label. */
static void
check_tokens (const gchar * prefix, const gchar * model, const gchar * tok,
    GstNpuTextTokenizerKind kind)
{
  GstNpuTextEncoder *enc = encoder (model, tok, "cpu");
  Ref r;
  guint i, j, n;

  ref_load (&r, prefix);
  fail_unless_equals_int (gst_npu_text_encoder_kind (enc), kind);
  fail_unless_equals_int (gst_npu_text_encoder_seq_len (enc), r.seq);
  for (i = 0; i < r.n; i++) {
    gint32 ids[64];
    GError *err = NULL;

    fail_unless (gst_npu_text_encoder_tokenize (enc, r.labels[i], ids, &n,
            &err), "%s", err ? err->message : "");
    fail_unless (n >= 2 && n <= r.seq);
    for (j = 0; j < r.seq; j++)
      fail_unless (ids[j] == r.ids[i][j], "%s: \"%s\" id %u: %d, want %d",
          prefix, r.labels[i], j, ids[j], r.ids[i][j]);
  }
  ref_clear (&r);
  gst_npu_text_encoder_free (enc);
}

/* Each label's embedding has cosine >= MIN_COSINE with torch's, on the CPU
 * executor and on the simulator (the NPU program, fp16). */
static void
check_embeddings (const gchar * prefix, const gchar * model,
    const gchar * tok, const gchar * backend)
{
  GstNpuTextEncoder *enc = encoder (model, tok, backend);
  Ref r;
  guint i, j;
  gdouble worst = 1.0;

  ref_load (&r, prefix);
  fail_unless_equals_int (gst_npu_text_encoder_dims (enc), r.dims);
  for (i = 0; i < r.n; i++) {
    gfloat *v = g_new (gfloat, r.dims);
    GError *err = NULL;
    gdouble dot = 0, nn = 0;

    fail_unless (gst_npu_text_encoder_encode (enc, r.labels[i], v, &err),
        "%s", err ? err->message : "");
    for (j = 0; j < r.dims; j++) {
      dot += (gdouble) v[j] * r.emb[i * r.dims + j];
      nn += (gdouble) v[j] * v[j];
    }
    fail_unless (fabs (nn - 1.0) < 1e-4, "not unit length: %g", nn);
    fail_unless (dot >= MIN_COSINE, "%s on %s: \"%s\": cosine %.6f < %g",
        prefix, backend, r.labels[i], dot, MIN_COSINE);
    worst = MIN (worst, dot);
    g_free (v);
  }
  g_print ("%s text tower on %s: %u labels, lowest cosine to torch %.6f\n",
      prefix, backend, r.n, worst);
  ref_clear (&r);
  gst_npu_text_encoder_free (enc);
}

static void
expect_encoder_error (const gchar * model, const gchar * tok,
    const gchar * needle)
{
  struct npu_model_options opts = { 0 };
  GError *err = NULL;

  opts.backend = "cpu";
  fail_unless (gst_npu_text_encoder_new (model, tok, &opts, &err) == NULL);
  fail_unless (err != NULL);
  fail_unless (strstr (err->message, needle) != NULL, "\"%s\" not in \"%s\"",
      needle, err->message);
  g_clear_error (&err);
}

/* ---- CLIP ---------------------------------------------------------------- */

GST_START_TEST (test_clip_tokens)
{
  check_tokens ("clip", TM ("clip_text.onnx"), TM ("clip_tokenizer.json"),
      GST_NPU_TEXT_TOKENIZER_JSON);
}

GST_END_TEST;

GST_START_TEST (test_clip_cpu)
{
  check_embeddings ("clip", TM ("clip_text.onnx"), TM ("clip_tokenizer.json"),
      "cpu");
}

GST_END_TEST;

GST_START_TEST (test_clip_sim)
{
  check_embeddings ("clip", TM ("clip_text.onnx"), TM ("clip_tokenizer.json"),
      "sim");
}

GST_END_TEST;

/* tests/models/data/clip_text_tiny: a CLIPTextModel export with symbolic
 * batch and sequence axes, an attention_mask input and pooler_output
 * (argmax pooling: EOS is the highest id), from tests/models/make-models.py.
 * Its reference ids (BOS ... EOS at position 11, then padding) through
 * encode_ids at sequence length 16 give torch's pooler_output (cosine >=
 * MIN_COSINE) on cpu and sim; EOS padding instead of the reference's zeros
 * does not matter under the causal mask. */
GST_START_TEST (test_clip_tiny_hf_export)
{
  const gchar *backends[] = { "cpu", "sim" };
  struct npu_tensor ids_t, ref_t;
  guint b, i, n = 0;

  fail_unless (npu_npy_read (CLIP_TEXT_TINY_DIR "/in.input_ids.npy",
          &ids_t) == NPU_OK);
  fail_unless (npu_npy_read (CLIP_TEXT_TINY_DIR "/out.pooler_output.npy",
          &ref_t) == NPU_OK);
  fail_unless (ids_t.dtype == NPU_DTYPE_INT64 && ref_t.dtype == NPU_DTYPE_FP32);
  for (b = 0; b < G_N_ELEMENTS (backends); b++) {
    struct npu_model_options opts = { 0 };
    GError *err = NULL;
    GstNpuTextEncoder *enc;
    gint32 ids[16];
    gfloat v[64];
    gdouble dot = 0, nr = 0;

    opts.backend = backends[b];
    opts.cpu_threads = 1;
    opts.dim_values = "batch=1,sequence=16";
    enc = gst_npu_text_encoder_new (CLIP_TEXT_TINY_DIR "/model.onnx",
        TM ("clip_tiny_tokenizer.json"), &opts, &err);
    fail_unless (enc != NULL, "%s", err ? err->message : "");
    fail_unless_equals_int (gst_npu_text_encoder_seq_len (enc), 16);
    fail_unless_equals_int (gst_npu_text_encoder_dims (enc), 64);
    for (n = 0; n < 16; n++) {
      ids[n] = (gint32) ((const gint64 *) ids_t.data)[n];
      if (ids[n] == 127) {
        n++;
        break;
      }
    }
    fail_unless_equals_int (n, 12);
    fail_unless (gst_npu_text_encoder_encode_ids (enc, ids, n, v, &err), "%s",
        err ? err->message : "");
    for (i = 0; i < 64; i++) {
      gfloat r = ((const gfloat *) ref_t.data)[i];

      dot += (gdouble) v[i] * r;
      nr += (gdouble) r *r;
    }
    dot /= sqrt (nr);
    fail_unless (dot >= MIN_COSINE, "clip_text_tiny on %s: cosine %.6f",
        backends[b], dot);
    g_print ("clip_text_tiny (HF CLIPTextModel export) on %s: cosine to "
        "torch's pooler_output %.6f\n", backends[b], dot);
    /* an id outside the vocabulary is refused */
    ids[3] = 500;
    fail_if (gst_npu_text_encoder_encode_ids (enc, ids, n, v, &err));
    fail_unless (err && strstr (err->message, "outside the vocabulary"));
    g_clear_error (&err);
    gst_npu_text_encoder_free (enc);
  }
  npu_npy_free (&ids_t);
  npu_npy_free (&ref_t);
}

GST_END_TEST;

GST_START_TEST (test_encoder_errors)
{
  gchar *dir = g_dir_make_tmp ("npu-text-XXXXXX", NULL);
  gchar *bad = g_build_filename (dir, "bad.json", NULL);

  expect_encoder_error (TM ("missing.onnx"), TM ("clip_tokenizer.json"),
      "does not exist");
  expect_encoder_error (TM ("clip_text.onnx"), TM ("missing.json"),
      "does not exist");
  /* an image model is no text tower */
  expect_encoder_error (TM ("image_tower.onnx"), TM ("clip_tokenizer.json"),
      "is not token ids");
  fail_unless (g_file_set_contents (bad, "{\"model\": 3", -1, NULL));
  expect_encoder_error (TM ("clip_text.onnx"), bad, "cannot load tokenizer");
  g_unlink (bad);
  g_free (bad);
  bad = g_build_filename (dir, "bad.model", NULL);
  fail_unless (g_file_set_contents (bad, "not a sentencepiece model", -1,
          NULL));
#ifdef HAVE_SENTENCEPIECE
  expect_encoder_error (TM ("clip_text.onnx"), bad, "SentencePiece model");
#else
  expect_encoder_error (TM ("clip_text.onnx"), bad, "no SentencePiece");
#endif
  g_unlink (bad);
  g_free (bad);
  g_rmdir (dir);
  g_free (dir);
}

GST_END_TEST;

#define IMG_CAPS "video/x-raw,format=RGB,width=8,height=8,framerate=30/1"

static void
px_colour (gint x, gint y, guint8 rgb[3], gpointer user)
{
  const guint8 *c = user;

  rgb[0] = (guint8) (c[0] + x);
  rgb[1] = (guint8) (c[1] + 3 * y);
  rgb[2] = c[2];
}

static GstBuffer *
frame (const guint8 * c)
{
  GstVideoInfo info;
  GstVideoFrame f;
  GstBuffer *buf;
  gint x, y;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, 8, 8);
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  fail_unless (gst_video_frame_map (&f, &info, buf, GST_MAP_WRITE));
  for (y = 0; y < 8; y++)
    for (x = 0; x < 8; x++)
      px_colour (x, y, (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, 0) +
          y * GST_VIDEO_FRAME_PLANE_STRIDE (&f, 0) + 3 * x, (gpointer) c);
  gst_video_frame_unmap (&f);
  return buf;
}

/* npuembed text-model=... computes the label embeddings itself: the
 * zero-shot scores of each frame are the softmax over logit-scale * cosine
 * of the frame's embedding (its GstNpuEmbeddingMeta) with torch's label
 * embeddings, within the fp16 / cosine tolerance; and the same run with
 * label-embeddings=torch's .npy ranks the labels the same. */
static void
check_npuembed_text (const gchar * prefix, const gchar * image_model,
    const gchar * text_model, const gchar * tokenizer, gboolean sigmoid)
{
  static const guint8 colours[][3] = { {200, 10, 30}, {5, 120, 240},
  {90, 90, 90}
  };
  const gchar *backends[] = { "cpu", "sim" };
  Ref r;
  guint b, c, i;

  ref_load (&r, prefix);
  for (b = 0; b < G_N_ELEMENTS (backends); b++) {
    gchar *labels_path = g_strdup_printf (TEXT_MODELS_DIR "/%s_labels.txt",
        prefix);
    gchar *desc = g_strdup_printf ("npuembed backend=%s model=%s "
        "text-model=%s tokenizer=%s labels-file=%s top-k=%u %s", backends[b],
        image_model, text_model, tokenizer, labels_path, r.n, sigmoid ?
        "score-function=sigmoid logit-scale=10 logit-bias=-2" :
        "score-function=softmax logit-scale=100");
    GstHarness *h = gst_harness_new_parse (desc);

    gst_harness_set_src_caps_str (h, IMG_CAPS);
    for (c = 0; c < G_N_ELEMENTS (colours); c++) {
      GstBuffer *out = gst_harness_push_and_pull (h, frame (colours[c]));
      GstNpuEmbeddingMeta *em = gst_buffer_get_npu_embedding_meta (out);
      GstVideoRegionOfInterestMeta *roi =
          gst_buffer_get_video_region_of_interest_meta_id (out, 0);
      const GValue *labels, *scores;
      GstStructure *s;
      gdouble want[64], mx = -1e30, sum = 0;

      fail_unless (em != NULL && roi != NULL);
      fail_unless_equals_int (em->dims, r.dims);
      s = gst_video_region_of_interest_meta_get_param (roi,
          GST_NPU_ZERO_SHOT_STRUCTURE);
      fail_unless (s != NULL);
      for (i = 0; i < r.n; i++) {
        guint j;

        want[i] = 0;
        for (j = 0; j < r.dims; j++)
          want[i] += (gdouble) em->data[j] * r.emb[i * r.dims + j];
        want[i] = sigmoid ? 10.0 * want[i] - 2.0 : 100.0 * want[i];
        mx = MAX (mx, want[i]);
      }
      for (i = 0; i < r.n; i++)
        sum += exp (want[i] - mx);
      labels = gst_structure_get_value (s, "labels");
      scores = gst_structure_get_value (s, "scores");
      fail_unless_equals_int (gst_value_array_get_size (labels), r.n);
      for (i = 0; i < r.n; i++) {
        const gchar *l =
            g_value_get_string (gst_value_array_get_value (labels, i));
        gdouble sc = g_value_get_double (gst_value_array_get_value (scores,
                i));
        guint j;

        for (j = 0; j < r.n && strcmp (r.labels[j], l); j++);
        fail_unless (j < r.n, "unknown label %s", l);
        gdouble ref = sigmoid ? 1.0 / (1.0 + exp (-want[j])) :
            exp (want[j] - mx) / sum;

        /* cosine within 1e-3 of torch's: a softmax logit (x100) within 0.1,
         * a probability within ~0.03; sigmoid's (x10) much closer */
        fail_unless (fabs (sc - ref) < (sigmoid ? 0.005 : 0.03),
            "%s, colour %u, %s: score %g, torch's label embedding gives %g",
            backends[b], c, l, sc, ref);
      }
      gst_buffer_unref (out);
    }
    gst_harness_teardown (h);
    g_free (desc);
    g_free (labels_path);
  }
  ref_clear (&r);
}


GST_START_TEST (test_npuembed_text_model)
{
  check_npuembed_text ("clip", TM ("image_tower.onnx"), TM ("clip_text.onnx"),
      TM ("clip_tokenizer.json"), FALSE);
}

GST_END_TEST;

static void
expect_embed_error (const gchar * needle, const gchar * desc_props)
{
  GstElement *e;
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL, *desc;

  desc = g_strdup_printf ("npuembed backend=cpu model=%s %s",
      TM ("image_tower.onnx"), desc_props);
  e = gst_parse_launch (desc, &err);
  fail_unless (e != NULL, "%s", err ? err->message : "");
  g_free (desc);
  gst_element_set_bus (e, bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message");
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (strstr (err->message, needle) || (dbg && strstr (dbg, needle)),
      "\"%s\" not in \"%s\" / \"%s\"", needle, err->message, dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_START_TEST (test_npuembed_text_errors)
{
  expect_embed_error ("tokenizer is not", "labels-file=" TM ("clip_labels.txt")
      " text-model=" TM ("clip_text.onnx"));
  expect_embed_error ("labels-file is not", "text-model=" TM ("clip_text.onnx")
      " tokenizer=" TM ("clip_tokenizer.json"));
  expect_embed_error ("text-model is not", "labels-file="
      TM ("clip_labels.txt") " tokenizer=" TM ("clip_tokenizer.json"));
  expect_embed_error ("Both text-model and label-embeddings",
      "labels-file=" TM ("clip_labels.txt") " text-model="
      TM ("clip_text.onnx") " tokenizer=" TM ("clip_tokenizer.json")
      " label-embeddings=" TM ("clip_ref.npy"));
  expect_embed_error ("does not exist", "labels-file=" TM ("clip_labels.txt")
      " text-model=" TM ("nothing.onnx") " tokenizer="
      TM ("clip_tokenizer.json"));
  /* an image tower as the text model */
  expect_embed_error ("is not token ids", "labels-file="
      TM ("clip_labels.txt") " text-model=" TM ("image_tower.onnx")
      " tokenizer=" TM ("clip_tokenizer.json"));
}

GST_END_TEST;

/* ---- SigLIP (SentencePiece) ---------------------------------------------- */

GST_START_TEST (test_siglip_tokens)
{
  gchar *dir = g_dir_make_tmp ("npu-spiece-XXXXXX", NULL);
  gchar *link = g_build_filename (dir, "spiece.model", NULL);

  check_tokens ("siglip", TM ("siglip_text.onnx"), TM ("siglip.model"),
      GST_NPU_TEXT_TOKENIZER_SPM);
  /* a Hugging Face style folder with only spiece.model */
  fail_unless (symlink (TM ("siglip.model"), link) == 0);
  check_tokens ("siglip", TM ("siglip_text.onnx"), dir,
      GST_NPU_TEXT_TOKENIZER_SPM);
  g_unlink (link);
  g_rmdir (dir);
  g_free (link);
  g_free (dir);
}

GST_END_TEST;

GST_START_TEST (test_siglip_cpu)
{
  check_embeddings ("siglip", TM ("siglip_text.onnx"), TM ("siglip.model"),
      "cpu");
}

GST_END_TEST;

GST_START_TEST (test_siglip_sim)
{
  check_embeddings ("siglip", TM ("siglip_text.onnx"), TM ("siglip.model"),
      "sim");
}

GST_END_TEST;

/* SigLIP through npuembed (SentencePiece inside the plugin): sigmoid
 * scores as torch's label embeddings give them */
GST_START_TEST (test_npuembed_siglip)
{
  check_npuembed_text ("siglip", TM ("image_tower64.onnx"),
      TM ("siglip_text.onnx"), TM ("siglip.model"), TRUE);
}

GST_END_TEST;

/* the SigLIP text tower (64 values) with CLIP's image tower (32) */
GST_START_TEST (test_siglip_dims_mismatch)
{
  expect_embed_error ("do not match", "labels-file=" TM ("siglip_labels.txt")
      " text-model=" TM ("siglip_text.onnx") " tokenizer=" TM ("siglip.model"));
}

GST_END_TEST;

static Suite *
npuembed_text_suite (void)
{
  const gchar *which = g_getenv ("TEXT_SUITE");
  Suite *s = suite_create ("npuembed-text");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 300);
  if (!which || !strcmp (which, "clip")) {
    tcase_add_test (tc, test_clip_tokens);
    tcase_add_test (tc, test_clip_cpu);
    tcase_add_test (tc, test_clip_sim);
    tcase_add_test (tc, test_clip_tiny_hf_export);
    tcase_add_test (tc, test_encoder_errors);
    tcase_add_test (tc, test_npuembed_text_model);
    tcase_add_test (tc, test_npuembed_text_errors);
  }
  if (!which || !strcmp (which, "siglip")) {
    tcase_add_test (tc, test_siglip_tokens);
    tcase_add_test (tc, test_siglip_cpu);
    tcase_add_test (tc, test_siglip_sim);
    tcase_add_test (tc, test_siglip_dims_mismatch);
    tcase_add_test (tc, test_npuembed_siglip);
  }
  return s;
}

GST_CHECK_MAIN (npuembed_text);
