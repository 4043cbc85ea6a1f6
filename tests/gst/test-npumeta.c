/* SPDX-License-Identifier: MIT */
/*
 * test-npumeta.c: the pieces under the elements, without a pipeline: the
 * metadata API (copy, scale transform, dequantisation), the model's
 * metadata (npu_model_prop: .onnx, .npub, compile cache) and the defaults
 * derived from it, the resize geometry, float->half, and the
 * introspected documentation of both elements (every property described,
 * every enum value with a nick).
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"
#include "gstnpumodelinfo.h"
#include "gstnpupreprocess.h"

static GstNpuTensor *
make_tensor (const gchar * name, GstNpuTensorDataType type, gconstpointer data,
    gsize size, guint ndim, const gint64 * dims, gfloat scale, gint32 zp)
{
  GstNpuTensor *t = g_new0 (GstNpuTensor, 1);

  t->name = g_quark_from_string (name);
  t->data_type = type;
  t->num_dims = ndim;
  memcpy (t->dims, dims, sizeof (gint64) * ndim);
  t->data = g_bytes_new (data, size);
  t->scale = scale;
  t->zero_point = zp;
  return t;
}

/* A copied buffer shares the tensor data; both metas free cleanly. */
GST_START_TEST (test_tensor_meta_copy)
{
  const gfloat v[6] = { 1, 2, 3, 4, 5, 6 };
  const gint64 dims[2] = { 2, 3 };
  GstBuffer *a = gst_buffer_new (), *b;
  GstNpuTensorMeta *ma, *mb;
  const GstNpuTensor *t;
  gsize size;

  ma = gst_buffer_add_npu_tensor_meta (a, "m.onnx", 1,
      make_tensor ("out", GST_NPU_TENSOR_DATA_TYPE_FLOAT32, v, sizeof (v), 2,
          dims, 0, 0));
  ma->region.w = 640;
  ma->region.h = 480;
  fail_unless_equals_string (ma->model_id, "m.onnx");

  b = gst_buffer_copy (a);
  mb = gst_buffer_get_npu_tensor_meta (b);
  fail_unless (mb != NULL && mb != ma);
  fail_unless_equals_int (mb->num_tensors, 1);
  fail_unless_equals_int (mb->region.w, 640);
  fail_unless (gst_npu_tensor_get_data (&mb->tensors[0], &size) ==
      gst_npu_tensor_get_data (&ma->tensors[0], NULL));
  fail_unless_equals_int (size, sizeof (v));
  t = gst_npu_tensor_meta_get_by_name (mb, "out");
  fail_unless (t == &mb->tensors[0]);
  fail_unless (gst_npu_tensor_meta_get_by_name (mb, "nope") == NULL);
  fail_unless_equals_int (gst_npu_tensor_get_numel (t), 6);

  gst_buffer_unref (a);
  /* still valid through the copy */
  fail_unless_equals_float (((const gfloat *) gst_npu_tensor_get_data (t,
              NULL))[5], 6.0f);
  gst_buffer_unref (b);
}

GST_END_TEST;

/* videoscale-style transforms rescale the frame region. */
GST_START_TEST (test_tensor_meta_scale)
{
  const gint64 dims[1] = { 1 };
  const gfloat v = 1;
  GstBuffer *a = gst_buffer_new (), *b = gst_buffer_new ();
  GstNpuTensorMeta *ma, *mb;
  GstVideoInfo in, out;
  GstVideoMetaTransform trans = { &in, &out };

  ma = gst_buffer_add_npu_tensor_meta (a, NULL, 1,
      make_tensor ("x", GST_NPU_TENSOR_DATA_TYPE_FLOAT32, &v, 4, 1, dims, 0,
          0));
  ma->region.x = 100;
  ma->region.y = 0;
  ma->region.w = 400;
  ma->region.h = 300;
  gst_video_info_set_format (&in, GST_VIDEO_FORMAT_RGB, 600, 300);
  gst_video_info_set_format (&out, GST_VIDEO_FORMAT_RGB, 300, 150);
  fail_unless (ma->meta.info->transform_func (b, &ma->meta, a,
          gst_video_meta_transform_scale_get_quark (), &trans));
  mb = gst_buffer_get_npu_tensor_meta (b);
  fail_unless (mb != NULL);
  fail_unless_equals_int (mb->region.x, 50);
  fail_unless_equals_int (mb->region.w, 200);
  fail_unless_equals_int (mb->region.h, 150);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
}

GST_END_TEST;

/* dup_float dequantises integer tensors and widens float16. */
GST_START_TEST (test_tensor_dup_float)
{
  const gint8 q[4] = { -128, -3, 0, 127 };
  const guint16 h[4] = { 0x3c00, 0xc000, 0x3555, 0x0001 };
  const gint64 dims[1] = { 4 };
  GstNpuTensor *t;
  gfloat *f;
  gsize n;

  t = make_tensor ("q", GST_NPU_TENSOR_DATA_TYPE_INT8, q, 4, 1, dims, 0.5f, -3);
  f = gst_npu_tensor_dup_float (t, &n);
  fail_unless_equals_int (n, 4);
  fail_unless_equals_float (f[0], (-128 + 3) * 0.5f);
  fail_unless_equals_float (f[1], 0.0f);
  fail_unless_equals_float (f[3], (127 + 3) * 0.5f);
  g_free (f);
  g_bytes_unref (t->data);
  g_free (t);

  t = make_tensor ("h", GST_NPU_TENSOR_DATA_TYPE_FLOAT16, h, 8, 1, dims, 0, 0);
  f = gst_npu_tensor_dup_float (t, &n);
  fail_unless_equals_float (f[0], 1.0f);
  fail_unless_equals_float (f[1], -2.0f);
  fail_unless (fabs (f[2] - 1.0f / 3) < 1e-3);
  fail_unless_equals_float (f[3], ldexpf (1.0f, -24));
  g_free (f);
  g_bytes_unref (t->data);
  g_free (t);

  /* data shorter than the dims say: refused, not overread */
  t = make_tensor ("s", GST_NPU_TENSOR_DATA_TYPE_FLOAT32, h, 8, 1, dims, 0, 0);
  fail_unless (gst_npu_tensor_dup_float (t, &n) == NULL);
  g_bytes_unref (t->data);
  g_free (t);
}

GST_END_TEST;

GST_START_TEST (test_embedding_meta)
{
  const gfloat v[3] = { 0.6f, 0.8f, 0.0f };
  GstBuffer *a = gst_buffer_new (), *b;
  GstNpuEmbeddingMeta *m;

  m = gst_buffer_add_npu_embedding_meta (a, "siglip", v, 3, TRUE);
  fail_unless (m->data != v);
  b = gst_buffer_copy (a);
  gst_buffer_unref (a);
  m = gst_buffer_get_npu_embedding_meta (b);
  fail_unless (m != NULL);
  fail_unless_equals_int (m->dims, 3);
  fail_unless_equals_float (m->data[1], 0.8f);
  fail_unless_equals_string (m->model_id, "siglip");
  fail_unless (m->normalized);
  gst_buffer_unref (b);
}

GST_END_TEST;

/* The entries make-gst-models.py writes into image_meta.onnx, in order. */
static const gchar *const image_meta_props[][2] = {
  {"opennpu.mean", "0.5, 0.25, 0.125"},
  {"opennpu.std", "[0.5 0.25 0.5]"},
  {"opennpu.resize", "letterbox"},
  {"opennpu.channel-order", "bgr"},
  {"unrelated", "ignored"},
};

/* Loads @path and checks its metadata (npu_model_prop) against
 * image_meta_props and what the element derives from it. */
static void
check_image_meta (const gchar * path, const gchar * backend,
    const gchar * cache_dir)
{
  struct npu_model_options o = {.backend = backend,.cache_dir = cache_dir };
  struct npu_model *m = NULL;
  GstNpuModelInfo mi;
  gint i;

  fail_unless_equals_int (npu_model_load (path, &o, &m), NPU_OK);
  fail_unless_equals_int (npu_model_num_props (m),
      G_N_ELEMENTS (image_meta_props));
  for (i = 0; i < (gint) G_N_ELEMENTS (image_meta_props); i++) {
    fail_unless_equals_string (npu_model_prop (m, i)->key,
        image_meta_props[i][0]);
    fail_unless_equals_string (npu_model_prop (m, i)->value,
        image_meta_props[i][1]);
  }
  fail_unless (npu_model_prop (m, i) == NULL);
  fail_unless (npu_model_prop (m, -1) == NULL);
  fail_unless_equals_string (npu_model_prop_value (m, "opennpu.resize"),
      "letterbox");
  fail_unless (npu_model_prop_value (m, "image_mean") == NULL);

  gst_npu_model_info_init (&mi);
  gst_npu_model_info_from_model (&mi, m);
  fail_unless (mi.has_mean && mi.has_std && !mi.has_scale);
  fail_unless_equals_float (mi.mean[0], 0.5f);
  fail_unless_equals_float (mi.mean[2], 0.125f);
  fail_unless_equals_float (mi.std[1], 0.25f);
  fail_unless_equals_int (mi.resize, GST_NPU_RESIZE_LETTERBOX);
  fail_unless_equals_int (mi.channel_order, GST_NPU_CHANNEL_ORDER_BGR);
  fail_unless_equals_int (mi.n_props, 5);
  npu_model_free (m);
}

/* Metadata through the model API: the .onnx on the cpu and sim backends,
 * the .npub npuc made of it (carrying metadata_props), the compile cache
 * (written, then hit); value parsing. */
GST_START_TEST (test_model_info)
{
  GstNpuModelInfo mi;
  struct npu_model *m = NULL;
  struct npu_model_options cpu = {.backend = "cpu" };
  gchar *cache = g_dir_make_tmp ("npu-gst-cache-XXXXXX", NULL);
  GDir *d;
  const gchar *f;

  check_image_meta (MODEL ("image_meta.onnx"), "cpu", NULL);
  check_image_meta (MODEL ("image_meta.onnx"), "sim", NULL);
  check_image_meta (MODEL ("image_meta.npub"), "sim", NULL);
  check_image_meta (MODEL ("image_meta.onnx"), "sim", cache);   /* compiles */
  check_image_meta (MODEL ("image_meta.onnx"), "sim", cache);   /* cache hit */
  d = g_dir_open (cache, 0, NULL);
  while (d && (f = g_dir_read_name (d))) {
    gchar *p = g_build_filename (cache, f, NULL);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (cache);
  g_free (cache);

  fail_unless_equals_int (npu_model_load (MODEL ("image_f32.onnx"), &cpu, &m),
      NPU_OK);
  fail_unless_equals_int (npu_model_num_props (m), 0);
  fail_unless (npu_model_prop (m, 0) == NULL);
  gst_npu_model_info_init (&mi);
  gst_npu_model_info_from_model (&mi, m);
  fail_unless_equals_int (mi.n_props, 0);
  fail_unless_equals_int (mi.resize, -1);
  fail_if (mi.has_mean || mi.has_std);
  npu_model_free (m);

  /* value forms; a value that does not parse keeps what an earlier synonym
   * set */
  gst_npu_model_info_init (&mi);
  gst_npu_model_info_apply (&mi, "image_mean", "[0.48145466 0.4578275 0.4]");
  gst_npu_model_info_apply (&mi, "mean", "0.1, nonsense");
  gst_npu_model_info_apply (&mi, "STD", "0.25");
  gst_npu_model_info_apply (&mi, "opennpu.offset", "(1;2;3)");
  gst_npu_model_info_apply (&mi, "opennpu.resize", "sideways");
  fail_unless (mi.has_mean && mi.has_std && mi.has_offset && !mi.has_scale);
  fail_unless_equals_float (mi.mean[1], 0.4578275f);
  fail_unless_equals_float (mi.std[2], 0.25f);
  fail_unless_equals_float (mi.offset[2], 3.0f);
  fail_unless_equals_int (mi.resize, -1);
  fail_unless_equals_int (mi.n_props, 5);
}

GST_END_TEST;

/* Resize geometry worked out by hand for a 224x224 model. */
GST_START_TEST (test_geometry)
{
  GstNpuInputConfig cfg = { 0 };
  GstVideoRectangle s, d;

  cfg.width = cfg.height = 224;
  cfg.resize = GST_NPU_RESIZE_LETTERBOX;
  gst_npu_input_config_geometry (&cfg, 1920, 1080, &s, &d);
  /* 1920x1080 * 224/1920 = 224 x 126, centred: y = 49 */
  fail_unless (s.x == 0 && s.y == 0 && s.w == 1920 && s.h == 1080);
  fail_unless (d.x == 0 && d.y == 49 && d.w == 224 && d.h == 126);

  cfg.resize = GST_NPU_RESIZE_CROP;
  gst_npu_input_config_geometry (&cfg, 1920, 1080, &s, &d);
  /* centre 1080x1080 square */
  fail_unless (s.x == 420 && s.y == 0 && s.w == 1080 && s.h == 1080);
  fail_unless (d.x == 0 && d.y == 0 && d.w == 224 && d.h == 224);

  gst_npu_input_config_geometry (&cfg, 480, 640, &s, &d);
  fail_unless (s.x == 0 && s.y == 80 && s.w == 480 && s.h == 480);

  cfg.resize = GST_NPU_RESIZE_STRETCH;
  gst_npu_input_config_geometry (&cfg, 7, 3, &s, &d);
  fail_unless (s.w == 7 && s.h == 3 && d.w == 224 && d.h == 224);
}

GST_END_TEST;

/* gst-inspect shows complete documentation: metadata, every property with a
 * nick and a sentence, every enum value with a nick and description. */
GST_START_TEST (test_introspection_docs)
{
  const gchar *factories[] = { "npuinfer", "npuembed" };
  guint f;

  for (f = 0; f < G_N_ELEMENTS (factories); f++) {
    GstElementFactory *fac = gst_element_factory_find (factories[f]);
    GstElement *e;
    GParamSpec **props;
    guint n, i;

    fail_unless (fac != NULL);
    fail_unless (strlen (gst_element_factory_get_metadata (fac,
                GST_ELEMENT_METADATA_DESCRIPTION)) > 40);
    fail_unless_equals_string (gst_element_factory_get_metadata (fac,
            GST_ELEMENT_METADATA_KLASS), "Filter/Analyzer/Video");
    e = gst_element_factory_create (fac, NULL);
    props = g_object_class_list_properties (G_OBJECT_GET_CLASS (e), &n);
    fail_unless (n > 20);
    for (i = 0; i < n; i++) {
      GParamSpec *p = props[i];

      if (p->owner_type == G_TYPE_OBJECT || p->owner_type == GST_TYPE_OBJECT)
        continue;
      fail_unless (strchr (p->name, '_') == NULL, "%s not kebab-case", p->name);
      fail_unless (g_param_spec_get_nick (p) && strlen (g_param_spec_get_nick
              (p)) > 1);
      fail_unless (strlen (g_param_spec_get_blurb (p)) > 15,
          "%s: blurb too short", p->name);
      fail_unless (p->flags & G_PARAM_STATIC_STRINGS);
      if (G_IS_PARAM_SPEC_ENUM (p)) {
        GEnumClass *ec = G_PARAM_SPEC_ENUM (p)->enum_class;
        guint v;

        for (v = 0; v < ec->n_values; v++) {
          fail_unless (ec->values[v].value_nick && *ec->values[v].value_nick);
          fail_unless (strlen (ec->values[v].value_name) > 3);
        }
      }
    }
    g_free (props);
    gst_object_unref (e);
    gst_object_unref (fac);
  }
}

GST_END_TEST;

static Suite *
npumeta_suite (void)
{
  Suite *s = suite_create ("npumeta");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_tensor_meta_copy);
  tcase_add_test (tc, test_tensor_meta_scale);
  tcase_add_test (tc, test_tensor_dup_float);
  tcase_add_test (tc, test_embedding_meta);
  tcase_add_test (tc, test_model_info);
  tcase_add_test (tc, test_geometry);
  tcase_add_test (tc, test_introspection_docs);
  return s;
}

GST_CHECK_MAIN (npumeta);
