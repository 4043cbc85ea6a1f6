/* SPDX-License-Identifier: MIT */
/*
 * npu-gst-test.h: helpers shared by the gst-check tests of the opennpu
 * plugin: frames with known pixels, the reference computation of a model
 * input (written here from the documented formulas, not taken from the
 * element), a direct run of the model through npu-model.h, and access to the
 * element's stats.
 *
 * Paths come from meson: TEST_MODELS_DIR (models made by
 * make-gst-models.py) and SIGLIP_TINY (tests/models/data/siglip_tiny).
 */
#ifndef NPU_GST_TEST_H
#define NPU_GST_TEST_H

#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gstnpumeta.h"
#include "npu/npu-model.h"

#define MODEL(name) TEST_MODELS_DIR "/" name

typedef void (*PixelFunc) (gint x, gint y, guint8 rgb[3], gpointer user);

/* A frame of @fmt (an RGB-family or GRAY8 format) whose pixel (x, y) has
 * the colour @px gives; GRAY8 takes the red component. */
static inline GstBuffer *
make_frame (GstVideoFormat fmt, gint w, gint h, PixelFunc px, gpointer user)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  GstBuffer *buf;
  gint x, y;

  gst_video_info_set_format (&info, fmt, w, h);
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_memset (buf, 0, 0, GST_VIDEO_INFO_SIZE (&info));
  fail_unless (gst_video_frame_map (&frame, &info, buf, GST_MAP_WRITE));
  for (y = 0; y < h; y++) {
    guint8 *row = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0) +
        y * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);

    for (x = 0; x < w; x++) {
      guint8 c[3];

      px (x, y, c, user);
      switch (fmt) {
        case GST_VIDEO_FORMAT_RGB:
          memcpy (row + 3 * x, c, 3);
          break;
        case GST_VIDEO_FORMAT_BGR:
          row[3 * x] = c[2];
          row[3 * x + 1] = c[1];
          row[3 * x + 2] = c[0];
          break;
        case GST_VIDEO_FORMAT_RGBA:
          memcpy (row + 4 * x, c, 3);
          row[4 * x + 3] = 255;
          break;
        case GST_VIDEO_FORMAT_BGRx:
          row[4 * x] = c[2];
          row[4 * x + 1] = c[1];
          row[4 * x + 2] = c[0];
          row[4 * x + 3] = 255;
          break;
        case GST_VIDEO_FORMAT_GRAY8:
          row[x] = c[0];
          break;
        default:
          fail ("make_frame: unsupported format");
      }
    }
  }
  gst_video_frame_unmap (&frame);
  return buf;
}

/* A frame of a YUV format (NV12, I420) with constant Y, U, V. */
static inline GstBuffer *
make_yuv_frame (GstVideoFormat fmt, gint w, gint h, guint8 Y, guint8 U,
    guint8 V)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  GstBuffer *buf;
  guint p, r;

  gst_video_info_set_format (&info, fmt, w, h);
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  fail_unless (gst_video_frame_map (&frame, &info, buf, GST_MAP_WRITE));
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&frame); p++) {
    guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, p);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, p);
    guint rows = GST_VIDEO_FRAME_COMP_HEIGHT (&frame, p == 0 ? 0 : 1);
    guint cols = GST_VIDEO_FRAME_COMP_WIDTH (&frame, p == 0 ? 0 : 1);

    for (r = 0; r < rows; r++) {
      guint8 *row = d + r * stride;
      guint c;

      if (p == 0) {
        memset (row, Y, cols);
      } else if (fmt == GST_VIDEO_FORMAT_NV12) {
        for (c = 0; c < cols; c++) {
          row[2 * c] = U;
          row[2 * c + 1] = V;
        }
      } else {
        memset (row, p == 1 ? U : V, cols);
      }
    }
  }
  gst_video_frame_unmap (&frame);
  return buf;
}

/* BT.601 limited range YUV -> RGB in 0..255 (ITU-R BT.601 coefficients,
 * computed here in double precision, independently of GStreamer). */
static inline void
bt601_to_rgb (guint8 Y, guint8 U, guint8 V, gdouble rgb[3])
{
  gdouble y = (Y - 16) * 255.0 / 219.0;
  gdouble u = (U - 128) * 255.0 / 224.0;
  gdouble v = (V - 128) * 255.0 / 224.0;
  gdouble kr = 0.299, kb = 0.114, kg = 1.0 - kr - kb;
  gint i;

  rgb[0] = y + 2.0 * (1.0 - kr) * v;
  rgb[2] = y + 2.0 * (1.0 - kb) * u;
  rgb[1] = (y - kr * rgb[0] - kb * rgb[2]) / kg;
  for (i = 0; i < 3; i++)
    rgb[i] = CLAMP (rgb[i], 0.0, 255.0);
}

/* Runs @model_path on @in (backend cpu, core 0) and returns the outputs as a
 * GstNpuTensor array (GBytes data, like the meta's), for comparison. */
static inline GstNpuTensor *
reference_run (const gchar * model_path, const struct npu_tensor *in,
    guint * n_out)
{
  struct npu_model_options opts = { 0 };
  struct npu_model *m = NULL;
  struct npu_session *s = NULL;
  struct npu_tensor outs[16];
  GstNpuTensor *res;
  gint n, i;

  opts.backend = "cpu";
  opts.cpu_threads = 1;
  fail_unless_equals_int (npu_model_load (model_path, &opts, &m), NPU_OK);
  fail_unless_equals_int (npu_session_create (m, 0, &s), NPU_OK);
  n = npu_model_num_outputs (m);
  fail_unless (n > 0 && n <= 16);
  memset (outs, 0, sizeof (outs));
  fail_unless_equals_int (npu_session_run (s, in, 1, outs, n, NULL), NPU_OK);
  res = g_new0 (GstNpuTensor, n);
  for (i = 0; i < n; i++) {
    res[i].name = g_quark_from_string (npu_model_output (m, i)->name);
    res[i].num_dims = outs[i].ndim;
    memcpy (res[i].dims, outs[i].dims, sizeof (gint64) * outs[i].ndim);
    fail_unless (outs[i].dtype == NPU_DTYPE_FP32);
    res[i].data_type = GST_NPU_TENSOR_DATA_TYPE_FLOAT32;
    res[i].data = g_bytes_new (outs[i].data, npu_tensor_nbytes (&outs[i]));
  }
  npu_session_destroy (s);
  npu_model_free (m);
  *n_out = n;
  return res;
}

static inline void
free_tensors (GstNpuTensor * t, guint n)
{
  guint i;

  for (i = 0; i < n; i++)
    g_bytes_unref (t[i].data);
  g_free (t);
}

/* Every tensor of @meta equals @ref (same name, dims, float data within
 * @tol relative + absolute). */
static inline void
assert_meta_equals (GstNpuTensorMeta * meta, const GstNpuTensor * ref,
    guint n_ref, gdouble tol)
{
  guint i, d;

  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->num_tensors, n_ref);
  for (i = 0; i < n_ref; i++) {
    const GstNpuTensor *t = &meta->tensors[i];
    gsize n, nr, k;
    gfloat *a, *b;

    fail_unless_equals_string (g_quark_to_string (t->name),
        g_quark_to_string (ref[i].name));
    fail_unless_equals_int (t->num_dims, ref[i].num_dims);
    for (d = 0; d < t->num_dims; d++)
      fail_unless_equals_int64 (t->dims[d], ref[i].dims[d]);
    a = gst_npu_tensor_dup_float (t, &n);
    b = gst_npu_tensor_dup_float (&ref[i], &nr);
    fail_unless (a && b);
    fail_unless_equals_int (n, nr);
    for (k = 0; k < n; k++)
      fail_unless (fabs (a[k] - b[k]) <= tol * (1.0 + fabs (b[k])),
          "tensor %s element %u: %g != %g", g_quark_to_string (t->name),
          (guint) k, a[k], b[k]);
    g_free (a);
    g_free (b);
  }
}

/* The npuinfer/npuembed element inside a harness (transfer full). */
static inline GstElement *
harness_npu_element (GstHarness * h)
{
  GstElement *e = gst_harness_find_element (h, "npuinfer");

  if (!e)
    e = gst_harness_find_element (h, "npuembed");
  fail_unless (e != NULL);
  return e;
}

static inline guint64
stats_get (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  guint64 v = 0;

  g_object_get (e, "stats", &s, NULL);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v), "no field %s", field);
  gst_structure_free (s);
  return v;
}

static inline guint64
stats_core_jobs (GstElement * e, guint slot)
{
  GstStructure *s = NULL;
  const GValue *arr;
  guint64 v;

  g_object_get (e, "stats", &s, NULL);
  arr = gst_structure_get_value (s, "core-jobs");
  fail_unless (arr && slot < gst_value_array_get_size (arr));
  v = g_value_get_uint64 (gst_value_array_get_value (arr, slot));
  gst_structure_free (s);
  return v;
}

#endif /* NPU_GST_TEST_H */
