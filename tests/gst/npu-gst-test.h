/* SPDX-License-Identifier: MIT */
/*
 * npu-gst-test.h: helpers shared by the gst-check tests of the opennpu
 * plugin: frames with known pixels, the reference computation of a model
 * input (written here from the documented formulas, not taken from the
 * element), a direct run of the model through npu-model.h, access to the
 * element's stats, and the set-up the element tests share (a harness with
 * properties, an expected error, the gst-inspect checks, a temporary file).
 *
 * Paths come from meson: TEST_MODELS_DIR (models made by
 * make-gst-models.py) and SIGLIP_TINY (tests/models/data/siglip_tiny).
 */
#ifndef NPU_GST_TEST_H
#define NPU_GST_TEST_H

#include <math.h>
#include <string.h>
#include <unistd.h>

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

/* A harness around a @factory element whose properties are set from
 * "name=value" words in @props (h->element is the element itself, so the
 * tests can change its properties later). */
static inline GstHarness *
harness_with_props (const gchar * factory, const gchar * props)
{
  gchar *all = g_strdup_printf ("%s %s", factory, props);
  gchar **words = g_strsplit (all, " ", -1);
  GstElement *e = gst_element_factory_make (words[0], NULL);
  GstHarness *h;
  gchar **w;

  fail_unless (e != NULL);
  for (w = words + 1; *w; w++) {
    gchar **kv = g_strsplit (*w, "=", 2);

    if (kv[0] && kv[1])
      gst_util_set_object_arg (G_OBJECT (e), kv[0], kv[1]);
    g_strfreev (kv);
  }
  g_strfreev (words);
  g_free (all);
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  return h;
}

/* pushes @in, expects a flow error and an error message mentioning @what */
static inline void
harness_expect_error (GstHarness * h, GstBuffer * in, const gchar * what)
{
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL;

  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_ERROR);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message");
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (strstr (err->message, what) || (dbg && strstr (dbg, what)),
      "error '%s' (%s) does not mention '%s'", err->message, dbg, what);
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
}

/* Each property of @props (NULL-terminated) exists on @e with a blurb of
 * more than 10 characters (gst-inspect documents it). */
static inline void
check_property_blurbs (GstElement * e, const gchar * const *props)
{
  guint i;

  for (i = 0; props[i]; i++) {
    GParamSpec *p = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
        props[i]);

    fail_unless (p != NULL, "no property %s", props[i]);
    fail_unless (strlen (g_param_spec_get_blurb (p)) > 10, "%s", props[i]);
  }
}

/* The gst-inspect documentation of @factory: its description mentions
 * @word, and check_property_blurbs() on @props. */
static inline void
check_inspect_docs (const gchar * factory, const gchar * word,
    const gchar * const *props)
{
  GstElementFactory *f = gst_element_factory_find (factory);
  GstElement *e;

  fail_unless (f != NULL);
  fail_unless (strstr (gst_element_factory_get_metadata (f,
              GST_ELEMENT_METADATA_DESCRIPTION), word));
  e = gst_element_factory_create (f, NULL);
  check_property_blurbs (e, props);
  gst_object_unref (e);
  gst_object_unref (f);
}

/* A temporary file (g_file_open_tmp template @tmpl) holding @text; its path
 * (g_free, g_unlink). */
static inline gchar *
write_temp_file (const gchar * tmpl, const gchar * text)
{
  gchar *path = NULL;
  gint fd = g_file_open_tmp (tmpl, &path, NULL);

  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (path, text, -1, NULL));
  return path;
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
