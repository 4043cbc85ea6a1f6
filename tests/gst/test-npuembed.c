/* SPDX-License-Identifier: MIT */
/*
 * test-npuembed.c: npuembed with the tiny SigLIP vision model
 * (tests/models/data/siglip_tiny): the embedding meta against a direct run
 * of the model, token pooling, zero-shot labels against label embeddings
 * made here from the model itself, score functions and element messages.
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"
#include "npu/npu-npy.h"

#define SIGLIP_CAPS "video/x-raw,format=RGB,width=32,height=32,framerate=30/1"
#define D 64

static void
px_random (gint x, gint y, guint8 rgb[3], gpointer user)
{
  gint c;

  for (c = 0; c < 3; c++)
    rgb[c] = (guint8) g_rand_int_range (user, 0, 256);
}

static void
px_const (gint x, gint y, guint8 rgb[3], gpointer user)
{
  memcpy (rgb, user, 3);
}

/* The SigLIP input for a 32x32 RGB frame, (p / 255 - 0.5) / 0.5, NCHW. */
static void
siglip_input (GstBuffer * frame, gfloat * tensor)
{
  GstVideoInfo info;
  GstVideoFrame f;
  gint x, y, c;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, 32, 32);
  fail_unless (gst_video_frame_map (&f, &info, frame, GST_MAP_READ));
  for (y = 0; y < 32; y++)
    for (x = 0; x < 32; x++)
      for (c = 0; c < 3; c++) {
        guint8 p = ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, 0))
            [y * GST_VIDEO_FRAME_PLANE_STRIDE (&f, 0) + 3 * x + c];
        tensor[c * 1024 + y * 32 + x] = (p / 255.0f - 0.5f) / 0.5f;
      }
  gst_video_frame_unmap (&f);
}

/* The reference embedding of @frame: output @name of the model, averaged
 * over tokens when it has them, L2-normalised here. */
static void
reference_embedding (GstBuffer * frame, const gchar * name, gfloat * out)
{
  static gfloat tensor[3 * 32 * 32];
  struct npu_tensor t = { 0 };
  GstNpuTensor *ref;
  guint nref, i, j, rows = 0;
  gdouble ss = 0;

  siglip_input (frame, tensor);
  t.dtype = NPU_DTYPE_FP32;
  t.ndim = 4;
  t.dims[0] = 1;
  t.dims[1] = 3;
  t.dims[2] = 32;
  t.dims[3] = 32;
  t.data = tensor;
  ref = reference_run (SIGLIP_TINY, &t, &nref);
  memset (out, 0, sizeof (gfloat) * D);
  for (i = 0; i < nref; i++) {
    gsize n;
    const gfloat *d;

    if (strcmp (g_quark_to_string (ref[i].name), name))
      continue;
    d = gst_npu_tensor_get_data (&ref[i], &n);
    n /= sizeof (gfloat);
    fail_unless (n % D == 0);
    rows = n / D;
    for (j = 0; j < n; j++)
      out[j % D] += d[j] / rows;
  }
  fail_unless (rows > 0, "model has no output %s", name);
  for (j = 0; j < D; j++)
    ss += (gdouble) out[j] * out[j];
  for (j = 0; j < D; j++)
    out[j] /= sqrt (ss);
  free_tensors (ref, nref);
}

static gdouble
dot (const gfloat * a, const gfloat * b)
{
  gdouble s = 0;
  gint i;

  for (i = 0; i < D; i++)
    s += (gdouble) a[i] * b[i];
  return s;
}

/* The embedding meta holds the normalised pooler_output of a direct run on
 * the same input; output-name=last_hidden_state gives the token average. */
GST_START_TEST (test_embedding_matches_model)
{
  const gchar *outputs[] = { NULL, "last_hidden_state" };
  GRand *r = g_rand_new_with_seed (3);
  guint o, k;

  for (o = 0; o < G_N_ELEMENTS (outputs); o++) {
    gchar *desc = g_strdup_printf ("npuembed backend=cpu mean=<0.5> std=<0.5> "
        "%s%s model=" SIGLIP_TINY, outputs[o] ? "output-name=" : "",
        outputs[o] ? outputs[o] : "");
    GstHarness *h = gst_harness_new_parse (desc);

    gst_harness_set_src_caps_str (h, SIGLIP_CAPS);
    for (k = 0; k < 3; k++) {
      GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, 32, 32, px_random, r);
      GstBuffer *out;
      GstNpuEmbeddingMeta *meta;
      gfloat want[D];
      gdouble norm = 0;
      guint i;

      reference_embedding (in, outputs[o] ? outputs[o] : "pooler_output", want);
      out = gst_harness_push_and_pull (h, in);
      meta = gst_buffer_get_npu_embedding_meta (out);
      fail_unless (meta != NULL);
      fail_unless_equals_int (meta->dims, D);
      fail_unless (meta->normalized);
      fail_unless_equals_string (meta->model_id, "model.onnx");
      for (i = 0; i < D; i++) {
        fail_unless (fabs (meta->data[i] - want[i]) < 1e-5,
            "element %u: %g != %g", i, meta->data[i], want[i]);
        norm += meta->data[i] * meta->data[i];
      }
      fail_unless (fabs (norm - 1.0) < 1e-5);
      /* npuembed attaches the embedding, not the raw tensors */
      fail_unless (gst_buffer_get_npu_tensor_meta (out) == NULL);
      gst_buffer_unref (out);
    }
    gst_harness_teardown (h);
    g_free (desc);
  }
  g_rand_free (r);
}

GST_END_TEST;

static const guint8 colours[][3] = {
  {220, 30, 30}, {30, 200, 40}, {20, 40, 230}, {240, 240, 240}
};
static const gchar *names[] = { "red", "green", "blue", "white" };

/* Writes labels.txt / labels.npy into @dir: row i is the model's own
 * embedding of a frame filled with colours[i]. */
static void
make_labels (const gchar * dir, gfloat emb[][D])
{
  gchar *txt = g_build_filename (dir, "labels.txt", NULL);
  gchar *npy = g_build_filename (dir, "labels.npy", NULL);
  gfloat rows[G_N_ELEMENTS (colours) * D];
  struct npu_tensor t = { 0 };
  GString *s = g_string_new (NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (colours); i++) {
    GstBuffer *b = make_frame (GST_VIDEO_FORMAT_RGB, 32, 32, px_const,
        (gpointer) colours[i]);

    reference_embedding (b, "pooler_output", emb[i]);
    memcpy (rows + i * D, emb[i], sizeof (gfloat) * D);
    g_string_append_printf (s, "%s\n", names[i]);
    gst_buffer_unref (b);
  }
  fail_unless (g_file_set_contents (txt, s->str, -1, NULL));
  t.dtype = NPU_DTYPE_FP32;
  t.ndim = 2;
  t.dims[0] = G_N_ELEMENTS (colours);
  t.dims[1] = D;
  t.data = rows;
  fail_unless_equals_int (npu_npy_write (npy, &t), NPU_OK);
  g_string_free (s, TRUE);
  g_free (txt);
  g_free (npy);
}

static void
remove_labels (gchar * dir)
{
  gchar *txt = g_build_filename (dir, "labels.txt", NULL);
  gchar *npy = g_build_filename (dir, "labels.npy", NULL);

  g_unlink (txt);
  g_unlink (npy);
  g_rmdir (dir);
  g_free (txt);
  g_free (npy);
  g_free (dir);
}

/* A frame of colour i is labelled names[i] with cosine score 1; the top-k
 * list is sorted and its scores are the cosines computed here; softmax and
 * sigmoid scores follow their formulas. labels.npy is found from
 * labels.txt. */
GST_START_TEST (test_zero_shot_labels)
{
  gchar *dir = g_dir_make_tmp ("npuembed-XXXXXX", NULL);
  gfloat emb[G_N_ELEMENTS (colours)][D];
  const gchar *fns[] = { "cosine", "softmax", "sigmoid" };
  guint f, i;

  make_labels (dir, emb);

  for (f = 0; f < G_N_ELEMENTS (fns); f++) {
    gchar *desc = g_strdup_printf ("npuembed backend=cpu mean=<0.5> std=<0.5> "
        "top-k=3 score-function=%s logit-scale=10 logit-bias=-2 "
        "labels-file=%s/labels.txt model=" SIGLIP_TINY, fns[f], dir);
    GstHarness *h = gst_harness_new_parse (desc);

    gst_harness_set_src_caps_str (h, SIGLIP_CAPS);
    for (i = 0; i < G_N_ELEMENTS (colours); i++) {
      GstBuffer *out = gst_harness_push_and_pull (h,
          make_frame (GST_VIDEO_FORMAT_RGB, 32, 32, px_const,
              (gpointer) colours[i]));
      GstVideoRegionOfInterestMeta *roi;
      GstStructure *s;
      const GValue *labels, *scores;
      gdouble score, want[G_N_ELEMENTS (colours)], sum = 0;
      guint k, j;

      roi = gst_buffer_get_video_region_of_interest_meta_id (out, 0);
      fail_unless (roi != NULL);
      fail_unless_equals_string (g_quark_to_string (roi->roi_type),
          GST_NPU_ZERO_SHOT_ROI_TYPE);
      fail_unless_equals_int (roi->w, 32);
      fail_unless_equals_int (roi->h, 32);
      s = gst_video_region_of_interest_meta_get_param (roi,
          GST_NPU_ZERO_SHOT_STRUCTURE);
      fail_unless (s != NULL);
      fail_unless_equals_string (gst_structure_get_string (s, "label"),
          names[i]);

      for (j = 0; j < G_N_ELEMENTS (colours); j++) {
        want[j] = dot (emb[i], emb[j]);
        if (f == 1)
          sum += exp (10 * want[j] - 2);
      }
      for (j = 0; j < G_N_ELEMENTS (colours); j++) {
        if (f == 1)
          want[j] = exp (10 * want[j] - 2) / sum;
        else if (f == 2)
          want[j] = 1.0 / (1.0 + exp (-(10 * want[j] - 2)));
      }
      fail_unless (gst_structure_get_double (s, "score", &score));
      fail_unless (fabs (score - want[i]) < 1e-4, "%s: score %g, want %g",
          fns[f], score, want[i]);

      labels = gst_structure_get_value (s, "labels");
      scores = gst_structure_get_value (s, "scores");
      fail_unless_equals_int (gst_value_array_get_size (labels), 3);
      fail_unless_equals_int (gst_value_array_get_size (scores), 3);
      for (k = 0; k < 3; k++) {
        const gchar *l =
            g_value_get_string (gst_value_array_get_value (labels, k));
        gdouble sc = g_value_get_double (gst_value_array_get_value (scores, k));

        for (j = 0; j < G_N_ELEMENTS (names) && strcmp (names[j], l); j++);
        fail_unless (j < G_N_ELEMENTS (names));
        fail_unless (fabs (sc - want[j]) < 1e-4);
        if (k > 0)
          fail_unless (sc <= g_value_get_double (gst_value_array_get_value
                  (scores, k - 1)));
      }
      gst_buffer_unref (out);
    }
    gst_harness_teardown (h);
    g_free (desc);
  }
  remove_labels (dir);
}

GST_END_TEST;

/* emit-messages posts one "npuembed" element message per frame, in frame
 * order, with the documented fields. */
GST_START_TEST (test_messages)
{
  gchar *dir = g_dir_make_tmp ("npuembed-XXXXXX", NULL);
  gfloat emb[G_N_ELEMENTS (colours)][D];
  GstHarness *h;
  GstBus *bus = gst_bus_new ();
  gchar *desc;
  guint i;

  make_labels (dir, emb);
  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "0:20000", TRUE);
  desc = g_strdup_printf ("npuembed backend=cpu mean=<0.5> std=<0.5> "
      "emit-messages=true labels-file=%s/labels.txt model=" SIGLIP_TINY, dir);
  h = gst_harness_new_parse (desc);
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, SIGLIP_CAPS);

  for (i = 0; i < 8; i++) {
    GstBuffer *b = make_frame (GST_VIDEO_FORMAT_RGB, 32, 32, px_const,
        (gpointer) colours[i % 4]);

    GST_BUFFER_PTS (b) = i * GST_SECOND;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  for (i = 0; i < 8; i++)
    gst_buffer_unref (gst_harness_pull (h));

  for (i = 0; i < 8; i++) {
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT);
    const GstStructure *s;
    guint64 frame, pts;
    guint dims;
    gdouble score;
    const GValue *head;

    fail_unless (m != NULL, "message %u missing", i);
    s = gst_message_get_structure (m);
    fail_unless (gst_structure_has_name (s, "npuembed"));
    fail_unless (gst_structure_get_uint64 (s, "frame", &frame));
    fail_unless_equals_uint64 (frame, i);
    fail_unless (gst_structure_get_uint64 (s, "pts", &pts));
    fail_unless_equals_uint64 (pts, i * GST_SECOND);
    fail_unless (gst_structure_get_uint (s, "dims", &dims));
    fail_unless_equals_int (dims, D);
    fail_unless_equals_string (gst_structure_get_string (s, "label"),
        names[i % 4]);
    fail_unless (gst_structure_get_double (s, "score", &score));
    fail_unless (fabs (score - 1.0) < 1e-4);
    head = gst_structure_get_value (s, "embedding-head");
    fail_unless_equals_int (gst_value_array_get_size (head), 8);
    fail_unless (fabs (g_value_get_float (gst_value_array_get_value (head,
                    0)) - emb[i % 4][0]) < 1e-5);
    gst_message_unref (m);
  }
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT) == NULL);

  gst_bus_set_flushing (bus, TRUE);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_free (desc);
  remove_labels (dir);
}

GST_END_TEST;

static Suite *
npuembed_suite (void)
{
  Suite *s = suite_create ("npuembed");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_embedding_matches_model);
  tcase_add_test (tc, test_zero_shot_labels);
  tcase_add_test (tc, test_messages);
  return s;
}

GST_CHECK_MAIN (npuembed);
