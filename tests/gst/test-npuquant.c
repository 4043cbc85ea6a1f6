/* SPDX-License-Identifier: MIT */
/*
 * test-npuquant.c: quantisation parameters of a model quantised by OpenNPU reach
 * GstNpuTensorMeta (issue 13). image_conv.onnx (make-quant-models.py) quantised by
 * npuc --quantize w8a8 / w16a16i --quantized-outputs: npuinfer on the simulator
 * attaches the output "y" as int8 / int16 with a positive scale and the zero point the
 * quantiser chose (0 for w16a16i, symmetric), and the dequantised values
 * (gst_npu_tensor_dup_float) match the float model run by npuinfer on the CPU within a
 * few quantisation steps. The float model's own output carries no scale.
 */
#include <math.h>

#include "npu-gst-test.h"

#define RGB_CAPS(w, h) \
  "video/x-raw,format=RGB,width=" #w ",height=" #h ",framerate=30/1"

static void
px_grad (gint x, gint y, guint8 rgb[3], gpointer user)
{
  rgb[0] = (guint8) (x * 31);
  rgb[1] = (guint8) (y * 29);
  rgb[2] = (guint8) ((x * 7 + y * 13) % 256);
}

/* Runs one 8x8 RGB frame through npuinfer with @desc, returns the "y" output as
 * floats (dequantised), its meta fields in @dt, @scale, @zp. */
static gfloat *
run_y (const gchar * desc, GstNpuTensorDataType * dt, gfloat * scale, gint * zp,
    gsize * n)
{
  GstHarness *h = gst_harness_new_parse (desc);
  GstBuffer *out;
  const GstNpuTensor *t;
  gfloat *f;

  gst_harness_set_src_caps_str (h, RGB_CAPS (8, 8));
  out = gst_harness_push_and_pull (h, make_frame (GST_VIDEO_FORMAT_RGB, 8, 8,
          px_grad, NULL));
  fail_unless (out != NULL, "%s: no buffer", desc);
  t = gst_npu_tensor_meta_get_by_name (gst_buffer_get_npu_tensor_meta (out),
      "y");
  fail_unless (t != NULL, "%s: no tensor y", desc);
  *dt = t->data_type;
  *scale = t->scale;
  *zp = t->zero_point;
  f = gst_npu_tensor_dup_float (t, n);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  return f;
}

GST_START_TEST (test_quantised_by_npuc)
{
  const gchar *modes[2] = { "w8a8", "w16a16i" };
  GstNpuTensorDataType dt;
  gfloat scale, *ref, *q;
  gint zp, m;
  gsize nref, n, i;

  ref = run_y ("npuinfer backend=cpu model=" MODEL ("image_conv.onnx"), &dt,
      &scale, &zp, &nref);
  fail_unless_equals_int (dt, GST_NPU_TENSOR_DATA_TYPE_FLOAT32);
  fail_unless (scale == 0.0f, "the float model's output has scale %g", scale);
  fail_unless_equals_int (nref, 8 * 8 * 8);
  for (m = 0; m < 2; m++) {
    gchar *desc = g_strdup_printf ("npuinfer backend=sim model=%s/image_conv_%s"
        ".npub", TEST_MODELS_DIR, modes[m]);
    gdouble worst = 0;

    q = run_y (desc, &dt, &scale, &zp, &n);
    fail_unless_equals_int (dt, m ? GST_NPU_TENSOR_DATA_TYPE_INT16 :
        GST_NPU_TENSOR_DATA_TYPE_INT8);
    fail_unless (scale > 0 && isfinite (scale), "%s: scale %g", modes[m],
        scale);
    /* w16a16i is symmetric: zero point 0 */
    fail_unless (m ? zp == 0 : (zp >= -128 && zp <= 127), "%s: zero point %d",
        modes[m], zp);
    fail_unless_equals_int (n, nref);
    for (i = 0; i < n; i++)
      worst = MAX (worst, fabs (q[i] - ref[i]));
    /* the int8 / int16 rounding: a step or two (the float model's output is
     * inside the calibrated range for this input) */
    fail_unless (worst <= 2.0 * scale + 1e-3, "%s: error %g, scale %g",
        modes[m], worst, scale);
    g_print ("%s: y %s, scale %g, zero point %d, worst error %g\n", modes[m],
        m ? "int16" : "int8", scale, zp, worst);
    g_free (q);
    g_free (desc);
  }
  g_free (ref);
}

GST_END_TEST;

static Suite *
npuquant_suite (void)
{
  Suite *s = suite_create ("npuquant");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_quantised_by_npuc);
  return s;
}

GST_CHECK_MAIN (npuquant);
