/* SPDX-License-Identifier: MIT */
/*
 * test-npuclassify.c: GstHarness tests of npuclassify. Frames carry tensor
 * metas the test builds with known logits; the expected softmax and sigmoid
 * scores are computed here. Covers top-k order, labels, output-name, the
 * whole-frame ROI, bad shapes, short data, NaN logits, the gst-inspect
 * documentation, and npuinfer's image_f32.onnx "mean" output classified.
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"

static GstBuffer *
frame_with_logits (const gfloat * v, guint ndim, const gint64 * dims,
    gsize bytes)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 64 * 32 * 3, NULL);
  GstNpuTensor *t = g_new0 (GstNpuTensor, 2);
  guint d;

  gst_buffer_memset (buf, 0, 0, 64 * 32 * 3);
  t[0].name = g_quark_from_string ("features");
  t[0].data_type = GST_NPU_TENSOR_DATA_TYPE_FLOAT32;
  t[0].num_dims = 1;
  t[0].dims[0] = 1;
  t[0].data = g_bytes_new (v, sizeof (gfloat));
  t[1].name = g_quark_from_string ("logits");
  t[1].data_type = GST_NPU_TENSOR_DATA_TYPE_FLOAT32;
  t[1].num_dims = ndim;
  for (d = 0; d < ndim; d++)
    t[1].dims[d] = dims[d];
  t[1].data = g_bytes_new (v, bytes);
  gst_buffer_add_npu_tensor_meta (buf, "test-classifier", 2, t);
  return buf;
}

static GstHarness *
classify_harness (const gchar * props)
{
  GstHarness *h = harness_with_props ("npuclassify output-name=logits", props);

  gst_harness_set_src_caps_str (h,
      "video/x-raw,format=RGB,width=64,height=32,framerate=30/1");
  return h;
}

static GstStructure *
classification_of (GstBuffer * buf)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_get_video_region_of_interest_meta (buf);

  if (!roi)
    return NULL;
  fail_unless_equals_string (g_quark_to_string (roi->roi_type),
      GST_NPU_CLASSIFICATION_ROI_TYPE);
  fail_unless (roi->x == 0 && roi->y == 0 && roi->w == 64 && roi->h == 32);
  return gst_video_region_of_interest_meta_get_param (roi,
      GST_NPU_CLASSIFICATION_STRUCTURE);
}

static const gfloat logits[4] = { 1.0f, 3.0f, 2.0f, -1.0f };
static const gint64 dims_1x4[2] = { 1, 4 };

GST_START_TEST (test_softmax_topk_labels)
{
  gchar *path = write_temp_file ("npuclassify-labels-XXXXXX.txt",
      "cat\ndog\nbird\nfish\n");
  gchar *props;
  GstHarness *h;
  GstBuffer *out;
  GstStructure *s;
  const GValue *arr;
  gdouble z = exp (1.0) + exp (3.0) + exp (2.0) + exp (-1.0), c;
  gint id;

  props = g_strdup_printf ("labels=%s top-k=3", path);
  h = classify_harness (props);
  fail_unless_equals_int (gst_harness_push (h, frame_with_logits (logits, 2,
              dims_1x4, sizeof (logits))), GST_FLOW_OK);
  out = gst_harness_pull (h);
  s = classification_of (out);
  fail_unless (s != NULL);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "dog");
  fail_unless (gst_structure_get_int (s, "class-id", &id));
  fail_unless_equals_int (id, 1);
  fail_unless (gst_structure_get_double (s, "confidence", &c));
  fail_unless (fabs (c - exp (3.0) / z) < 1e-6, "confidence %g", c);
  arr = gst_structure_get_value (s, "labels");
  fail_unless_equals_int (gst_value_array_get_size (arr), 3);
  fail_unless_equals_string (g_value_get_string (gst_value_array_get_value
          (arr, 1)), "bird");
  fail_unless_equals_string (g_value_get_string (gst_value_array_get_value
          (arr, 2)), "cat");
  arr = gst_structure_get_value (s, "confidences");
  fail_unless (fabs (g_value_get_double (gst_value_array_get_value (arr,
                  2)) - exp (1.0) / z) < 1e-6);
  arr = gst_structure_get_value (s, "class-ids");
  fail_unless_equals_int (g_value_get_int (gst_value_array_get_value (arr,
              1)), 2);
  fail_unless_equals_string (gst_structure_get_string (s, "model-id"),
      "test-classifier");
  gst_buffer_unref (out);

  /* sigmoid, top-1, [4] */
  g_object_set (h->element, "score-function", 1, "top-k", 1, NULL);
  fail_unless_equals_int (gst_harness_push (h, frame_with_logits (logits, 1,
              dims_1x4 + 1, sizeof (logits))), GST_FLOW_OK);
  out = gst_harness_pull (h);
  s = classification_of (out);
  fail_unless (gst_structure_get_double (s, "confidence", &c));
  fail_unless (fabs (c - 1.0 / (1.0 + exp (-3.0))) < 1e-6);
  fail_unless_equals_int (gst_value_array_get_size (gst_structure_get_value
          (s, "labels")), 1);
  gst_buffer_unref (out);

  /* frames without tensor meta pass untouched */
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              64 * 32 * 3, NULL)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gst_buffer_get_video_region_of_interest_meta (out) == NULL);
  gst_buffer_unref (out);

  gst_harness_teardown (h);
  g_unlink (path);
  g_free (path);
  g_free (props);
}

GST_END_TEST;

GST_START_TEST (test_bad_tensors)
{
  const gfloat six[6] = { 0 };
  const gint64 dims_2x3[3] = { 1, 2, 3 };
  const gfloat nan_logits[4] = { 0.0f, NAN, 1.0f, 2.0f };
  GstHarness *h = classify_harness ("");
  GstBus *bus = gst_bus_new ();
  GstBuffer *out;
  GstMessage *msg;

  harness_expect_error (h, frame_with_logits (six, 3, dims_2x3, sizeof (six)),
      "[1, 2, 3]");
  harness_expect_error (h, frame_with_logits (logits, 2, dims_1x4, 8),
      "[1, 4]");
  g_object_set (h->element, "output-name", "nope", NULL);
  harness_expect_error (h, frame_with_logits (logits, 2, dims_1x4,
          sizeof (logits)), "nope");
  g_object_set (h->element, "output-name", "logits", NULL);

  /* NaN: no classification for the frame, a warning, the stream goes on */
  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (gst_harness_push (h, frame_with_logits (nan_logits,
              2, dims_1x4, sizeof (nan_logits))), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gst_buffer_get_video_region_of_interest_meta (out) == NULL);
  gst_buffer_unref (out);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_inspect_docs)
{
  const gchar *props[] = { "output-name", "score-function", "top-k",
    "labels", NULL
  };

  check_inspect_docs ("npuclassify", "top-k", props);
}

GST_END_TEST;

static void
red (gint x, gint y, guint8 rgb[3], gpointer user)
{
  rgb[0] = 255;
  rgb[1] = 0;
  rgb[2] = 0;
}

/* image_f32.onnx's "mean" output ([1, 3], the mean of each channel) as
 * three class logits: a red frame is class 0 */
GST_START_TEST (test_after_npuinfer)
{
  GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu model="
      MODEL ("image_f32.onnx") " ! npuclassify output-name=mean top-k=3 "
      "score-function=none");
  GstBuffer *out;
  GstStructure *s;
  gint id;
  gdouble c;

  gst_harness_set_src_caps_str (h,
      "video/x-raw,format=RGB,width=8,height=8,framerate=30/1");
  fail_unless_equals_int (gst_harness_push (h, make_frame (GST_VIDEO_FORMAT_RGB,
              8, 8, red, NULL)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  s = gst_video_region_of_interest_meta_get_param
      (gst_buffer_get_video_region_of_interest_meta (out),
      GST_NPU_CLASSIFICATION_STRUCTURE);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_int (s, "class-id", &id));
  fail_unless_equals_int (id, 0);
  fail_unless (gst_structure_get_double (s, "confidence", &c));
  fail_unless (c > 0.5, "red channel mean %g", c);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
npuclassify_suite (void)
{
  Suite *s = suite_create ("npuclassify");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_softmax_topk_labels);
  tcase_add_test (tc, test_bad_tensors);
  tcase_add_test (tc, test_inspect_docs);
  tcase_add_test (tc, test_after_npuinfer);
  return s;
}

GST_CHECK_MAIN (npuclassify);
