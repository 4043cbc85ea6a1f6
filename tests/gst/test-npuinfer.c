/* SPDX-License-Identifier: MIT */
/*
 * test-npuinfer.c: gst-check tests of npuinfer (and of the GstNpuBase
 * machinery it shares with npuembed): caps, the attached tensors against a
 * direct npu_session_run on an independently computed input, preprocessing
 * (normalisation, layouts, dtypes, resize modes, YUV), ordering under random
 * job latencies, back-pressure, the drop policies, inference-interval,
 * flushing, EOS with jobs in flight, latency, state cycling.
 *
 * Jobs are slowed down with the test hook GST_NPU_TEST_JOB_DELAY_US
 * ("min:max" microseconds, read when the element starts).
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"
#include "npu/npu-npy.h"

#define RGB_CAPS(w, h) \
  "video/x-raw,format=RGB,width=" #w ",height=" #h ",framerate=30/1"

static void
px_random (gint x, gint y, guint8 rgb[3], gpointer user)
{
  GRand *r = user;
  gint c;

  for (c = 0; c < 3; c++)
    rgb[c] = (guint8) g_rand_int_range (r, 0, 256);
}

static void
px_const (gint x, gint y, guint8 rgb[3], gpointer user)
{
  memcpy (rgb, user, 3);
}

/* Buffer @i of a numbered stream: every pixel has R = G = B = (i * 7) % 256,
 * PTS i frames at 30 fps. */
static GstBuffer *
numbered_frame (guint i, gint w, gint h)
{
  guint8 c[3];
  GstBuffer *b;

  c[0] = c[1] = c[2] = (guint8) ((i * 7) % 256);
  b = make_frame (GST_VIDEO_FORMAT_RGB, w, h, px_const, c);
  GST_BUFFER_PTS (b) = gst_util_uint64_scale (i, GST_SECOND, 30);
  GST_BUFFER_DURATION (b) = gst_util_uint64_scale (1, GST_SECOND, 30);
  return b;
}

/* The first element of the "pixels" output, which image_f32.onnx copies
 * from its input. */
static gfloat
first_pixel (GstBuffer * b)
{
  GstNpuTensorMeta *meta = gst_buffer_get_npu_tensor_meta (b);
  const GstNpuTensor *t;
  const gfloat *d;

  fail_unless (meta != NULL);
  t = gst_npu_tensor_meta_get_by_name (meta, "pixels");
  fail_unless (t != NULL);
  d = gst_npu_tensor_get_data (t, NULL);
  return d[0];
}

/* The element accepts each listed format at any size, passes the video
 * through byte for byte and attaches the tensors; other formats are refused
 * at caps negotiation. */
GST_START_TEST (test_caps_formats)
{
  const gchar *formats[] = { "RGB", "RGBA", "BGR", "BGRx", "NV12", "I420",
    "GRAY8"
  };
  const gchar *refused[] = { "GRAY16_LE", "YUY2", "RGB16", "ARGB64" };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (formats); i++) {
    GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu model="
        MODEL ("image_f32.onnx"));
    gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=37,height=21,"
        "framerate=25/1", formats[i]);
    GstVideoInfo info;
    GstBuffer *in, *out;
    GstMapInfo a, b;
    GstNpuTensorMeta *meta;
    gsize k;

    gst_harness_set_src_caps_str (h, caps);
    {
      GstCaps *c = gst_caps_from_string (caps);
      fail_unless (gst_video_info_from_caps (&info, c));
      gst_caps_unref (c);
    }
    in = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
    gst_buffer_map (in, &a, GST_MAP_WRITE);
    for (k = 0; k < a.size; k++)
      a.data[k] = (guint8) (k * 31 + i);
    gst_buffer_unmap (in, &a);

    out = gst_harness_push_and_pull (h, gst_buffer_ref (in));
    fail_unless (out != NULL);
    fail_unless (gst_buffer_map (in, &a, GST_MAP_READ));
    fail_unless (gst_buffer_map (out, &b, GST_MAP_READ));
    fail_unless_equals_int (a.size, b.size);
    fail_unless (memcmp (a.data, b.data, a.size) == 0, "%s: video changed",
        formats[i]);
    gst_buffer_unmap (in, &a);
    gst_buffer_unmap (out, &b);
    meta = gst_buffer_get_npu_tensor_meta (out);
    fail_unless (meta != NULL, "%s: no meta", formats[i]);
    fail_unless_equals_int (meta->num_tensors, 2);
    fail_unless_equals_string (meta->model_id, "image_f32.onnx");
    fail_unless_equals_int (meta->region.w, 37);
    fail_unless_equals_int (meta->region.h, 21);
    gst_buffer_unref (in);
    gst_buffer_unref (out);
    g_free (caps);
    gst_harness_teardown (h);
  }

  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu model="
        MODEL ("image_f32.onnx"));
    GstElement *e = harness_npu_element (h);
    GstPad *sink = gst_element_get_static_pad (e, "sink");
    gchar *s = g_strdup_printf ("video/x-raw,format=%s,width=8,height=8,"
        "framerate=30/1", refused[i]);
    GstCaps *caps = gst_caps_from_string (s);

    fail_if (gst_pad_query_accept_caps (sink, caps), "%s accepted", refused[i]);
    gst_caps_unref (caps);
    g_free (s);
    gst_object_unref (sink);
    gst_object_unref (e);
    gst_harness_teardown (h);
  }
}

GST_END_TEST;

/* With the frame at the model's size, the attached tensors equal what
 * npu_session_run gives for the input computed here from the documented
 * formula (pixel / 255 - mean) / std, per channel, NCHW. */
GST_START_TEST (test_meta_matches_session)
{
  const gfloat mean[3] = { 0.5f, 0.25f, 0.125f }, std[3] =
      { 0.5f, 0.25f, 2.0f };
  GRand *r = g_rand_new_with_seed (42);
  GstHarness *h;
  GstBuffer *in, *out;
  GstVideoInfo info;
  GstVideoFrame f;
  gfloat tensor[3 * 4 * 4];
  struct npu_tensor t = { 0 };
  GstNpuTensor *ref;
  guint nref, round;
  gint x, y, c;

  h = gst_harness_new_parse ("npuinfer backend=cpu mean=<0.5,0.25,0.125> "
      "std=<0.5,0.25,2.0> model=" MODEL ("image_f32.onnx"));
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));

  for (round = 0; round < 4; round++) {
    in = make_frame (GST_VIDEO_FORMAT_RGB, 4, 4, px_random, r);
    gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, 4, 4);
    fail_unless (gst_video_frame_map (&f, &info, in, GST_MAP_READ));
    for (y = 0; y < 4; y++)
      for (x = 0; x < 4; x++)
        for (c = 0; c < 3; c++) {
          guint8 p = ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, 0))
              [y * GST_VIDEO_FRAME_PLANE_STRIDE (&f, 0) + 3 * x + c];
          tensor[c * 16 + y * 4 + x] = (p / 255.0f - mean[c]) / std[c];
        }
    gst_video_frame_unmap (&f);

    t.dtype = NPU_DTYPE_FP32;
    t.ndim = 4;
    t.dims[0] = 1;
    t.dims[1] = 3;
    t.dims[2] = 4;
    t.dims[3] = 4;
    t.data = tensor;
    ref = reference_run (MODEL ("image_f32.onnx"), &t, &nref);

    out = gst_harness_push_and_pull (h, in);
    assert_meta_equals (gst_buffer_get_npu_tensor_meta (out), ref, nref, 1e-5);
    /* and "pixels" is the input itself: the formula, checked directly */
    {
      const GstNpuTensor *p =
          gst_npu_tensor_meta_get_by_name (gst_buffer_get_npu_tensor_meta
          (out), "pixels");
      const gfloat *d = gst_npu_tensor_get_data (p, NULL);

      for (x = 0; x < 48; x++)
        fail_unless (fabs (d[x] - tensor[x]) < 1e-5);
    }
    free_tensors (ref, nref);
    gst_buffer_unref (out);
  }
  g_rand_free (r);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The tiny SigLIP on a 32x32 frame (its input size): every attached tensor
 * is bit for bit what the npu-run tool writes, in its own process, for the
 * input tensor computed here from the frame with the documented formula
 * (scale-offset: pixel * scale + offset, NCHW). Scale 1/256 and offset -0.5
 * are exact in float, so both sides feed identical bytes; one CPU thread on
 * both sides and NPU_PARTITION=supported (the NPU computes every node it
 * supports) make both compile the same program, so the outputs must be
 * identical, on the cpu and on the sim backend. */
GST_START_TEST (test_meta_matches_npu_run)
{
  const gchar *backends[] = { "cpu", "sim" };
  gchar *dir = g_dir_make_tmp ("npuinfer-run-XXXXXX", NULL);
  gchar *in_npy = g_build_filename (dir, "in.npy", NULL);
  GRand *r = g_rand_new_with_seed (11);
  guint b;

  g_setenv ("NPU_PARTITION", "supported", TRUE);
  for (b = 0; b < G_N_ELEMENTS (backends); b++) {
    gchar *desc = g_strdup_printf ("npuinfer backend=%s cores=1 "
        "cpu-threads=1 normalization=scale-offset "
        "scale=<0.00390625,0.00390625,0.00390625> offset=<-0.5,-0.5,-0.5> "
        "model=" SIGLIP_TINY, backends[b]);
    gchar *out_dir = g_build_filename (dir, backends[b], NULL);
    gchar *input_arg = g_strdup_printf ("pixel_values=%s", in_npy);
    const gchar *argv[] = { NPU_RUN, SIGLIP_TINY, "--backend", backends[b],
      "--threads", "1", "--input", input_arg, "--output-dir", out_dir,
      "--quiet", NULL
    };
    static gfloat tensor[3 * 32 * 32];
    struct npu_tensor t = { 0 };
    GstHarness *h = gst_harness_new_parse (desc);
    GstBuffer *in, *out;
    GstVideoInfo info;
    GstVideoFrame f;
    GstNpuTensorMeta *meta;
    gchar *err_text = NULL;
    gint x, y, c, status = -1;
    guint i;

    in = make_frame (GST_VIDEO_FORMAT_RGB, 32, 32, px_random, r);
    gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, 32, 32);
    fail_unless (gst_video_frame_map (&f, &info, in, GST_MAP_READ));
    for (y = 0; y < 32; y++)
      for (x = 0; x < 32; x++)
        for (c = 0; c < 3; c++) {
          guint8 p = ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, 0))
              [y * GST_VIDEO_FRAME_PLANE_STRIDE (&f, 0) + 3 * x + c];
          tensor[c * 1024 + y * 32 + x] = p / 256.0f - 0.5f;
        }
    gst_video_frame_unmap (&f);
    t.dtype = NPU_DTYPE_FP32;
    t.ndim = 4;
    t.dims[0] = 1;
    t.dims[1] = 3;
    t.dims[2] = 32;
    t.dims[3] = 32;
    t.data = tensor;
    fail_unless_equals_int (npu_npy_write (in_npy, &t), NPU_OK);
    fail_unless (g_spawn_sync (NULL, (gchar **) argv, NULL,
            G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err_text, &status,
            NULL));
    fail_unless (g_spawn_check_wait_status (status, NULL), "npu-run: %s",
        err_text);

    gst_harness_set_src_caps_str (h, RGB_CAPS (32, 32));
    out = gst_harness_push_and_pull (h, in);
    meta = gst_buffer_get_npu_tensor_meta (out);
    fail_unless (meta != NULL);
    fail_unless_equals_int (meta->num_tensors, 2);
    for (i = 0; i < meta->num_tensors; i++) {
      const GstNpuTensor *mt = &meta->tensors[i];
      gchar *file = g_strdup_printf ("%s/%s.npy", out_dir,
          g_quark_to_string (mt->name));
      struct npu_tensor ref = { 0 };
      gsize size;
      gconstpointer data = gst_npu_tensor_get_data (mt, &size);
      guint d;

      fail_unless_equals_int (npu_npy_read (file, &ref), NPU_OK);
      fail_unless (ref.dtype == NPU_DTYPE_FP32
          && mt->data_type == GST_NPU_TENSOR_DATA_TYPE_FLOAT32);
      fail_unless_equals_int (mt->num_dims, ref.ndim);
      for (d = 0; d < mt->num_dims; d++)
        fail_unless_equals_int64 (mt->dims[d], ref.dims[d]);
      fail_unless_equals_int (size, npu_tensor_nbytes (&ref));
      fail_unless (memcmp (data, ref.data, size) == 0,
          "%s on %s differs from npu-run's", g_quark_to_string (mt->name),
          backends[b]);
      npu_npy_free (&ref);
      g_unlink (file);
      g_free (file);
    }
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_rmdir (out_dir);
    g_free (out_dir);
    g_free (input_arg);
    g_free (err_text);
    g_free (desc);
  }
  g_unsetenv ("NPU_PARTITION");
  g_unlink (in_npy);
  g_rmdir (dir);
  g_free (in_npy);
  g_free (dir);
  g_rand_free (r);
}

GST_END_TEST;

/* An int8 output that carries its quantisation (scale 0.05, zero point 3)
 * reaches the meta as int8 data with that scale and zero point, and
 * dequantises to within half a step of the float input; the int8 values
 * are computed here from ONNX QuantizeLinear's definition. */
GST_START_TEST (test_quantised_output)
{
  GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu model="
      MODEL ("quant_out.npuir"));
  guint8 col[3] = { 200, 100, 50 };
  GstBuffer *out;
  const GstNpuTensor *t;
  const gint8 *q;
  gfloat *f;
  gsize size, n;
  gint c, i;

  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
  out = gst_harness_push_and_pull (h, make_frame (GST_VIDEO_FORMAT_RGB, 4, 4,
          px_const, col));
  t = gst_npu_tensor_meta_get_by_name (gst_buffer_get_npu_tensor_meta (out),
      "q");
  fail_unless (t != NULL);
  fail_unless_equals_int (t->data_type, GST_NPU_TENSOR_DATA_TYPE_INT8);
  fail_unless_equals_float (t->scale, 0.05f);
  fail_unless_equals_int (t->zero_point, 3);
  q = gst_npu_tensor_get_data (t, &size);
  fail_unless_equals_int (size, 48);
  f = gst_npu_tensor_dup_float (t, &n);
  fail_unless_equals_int (n, 48);
  for (c = 0; c < 3; c++)
    for (i = 0; i < 16; i++) {
      gdouble x = col[c] / 255.0;
      gint want = CLAMP ((gint) rint (x / 0.05) + 3, -128, 127);

      fail_unless_equals_int (q[c * 16 + i], want);
      fail_unless (fabs (f[c * 16 + i] - x) <= 0.025 + 1e-6);
    }
  g_free (f);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The files in @dir whose names end in @suffix (sorted), as one string;
 * removes them when @remove. */
static gchar *
list_dir (const gchar * dir, const gchar * suffix, gboolean remove)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  const gchar *f;
  gchar *res;

  while (d && (f = g_dir_read_name (d))) {
    if (!g_str_has_suffix (f, suffix))
      continue;
    g_ptr_array_add (names, g_strdup (f));
    if (remove) {
      gchar *p = g_build_filename (dir, f, NULL);

      g_unlink (p);
      g_free (p);
    }
  }
  if (d)
    g_dir_close (d);
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  g_ptr_array_add (names, NULL);
  res = g_strjoinv (",", (gchar **) names->pdata);
  g_ptr_array_unref (names);
  return res;
}

/* The defaults (backend auto, cores 7: three slots) on the NPU path: frames
 * go to the three cores in turn; cache-dir: the first start compiles and
 * writes one artifact (cached CPU cost measurements may sit beside it), the
 * second start loads it (same file, same bytes) and still applies the
 * model's metadata, which the artifact carries. */
GST_START_TEST (test_defaults_and_cache_dir)
{
  gchar *dir = g_dir_make_tmp ("npuinfer-cache-XXXXXX", NULL);
  gchar *entry_name = NULL, *entry_bytes = NULL;
  gsize entry_len = 0;
  guint run, i, cores;

  for (run = 0; run < 2; run++) {
    gchar *desc = g_strdup_printf ("npuinfer cache-dir=%s model=%s", dir,
        MODEL ("image_meta.onnx"));
    GstHarness *h = gst_harness_new_parse (desc);
    GstElement *e = harness_npu_element (h);
    GstStructure *st = NULL;
    const gchar *backend;
    guint8 col[3] = { 200, 100, 50 };
    gchar *files, *path, *bytes = NULL;
    gsize len = 0;

    g_object_get (e, "cores", &cores, NULL);
    fail_unless_equals_int (cores, 7);
    gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
    for (i = 0; i < 6; i++) {
      GstBuffer *out = gst_harness_push_and_pull (h,
          make_frame (GST_VIDEO_FORMAT_RGB, 4, 4, px_const, col));
      const GstNpuTensor *t = gst_npu_tensor_meta_get_by_name
          (gst_buffer_get_npu_tensor_meta (out), "pixels");
      const gfloat *v = gst_npu_tensor_get_data (t, NULL);

      /* the metadata's mean/std and bgr order (float16 on the NPU) */
      fail_unless (fabs (v[0] - (50 / 255.0 - 0.125) / 0.5) < 4e-3, "%g", v[0]);
      fail_unless (fabs (v[32] - (200 / 255.0 - 0.5) / 0.5) < 4e-3);
      gst_buffer_unref (out);
    }
    g_object_get (e, "stats", &st, NULL);
    backend = gst_structure_get_string (st, "backend");
    fail_unless (backend && (!strcmp (backend, "sim")
            || !strcmp (backend, "rknpu") || !strcmp (backend, "rocket")),
        "auto chose %s", backend);
    gst_structure_free (st);
    for (i = 0; i < 3; i++)
      fail_unless_equals_uint64 (stats_core_jobs (e, i), 2);

    /* (the partitioner keeps its measured CPU costs there too) */
    files = list_dir (dir, ".npub", FALSE);
    fail_unless (g_str_has_suffix (files, ".npub") && !strchr (files, ','),
        "cache folder holds \"%s\"", files);
    path = g_build_filename (dir, files, NULL);
    fail_unless (g_file_get_contents (path, &bytes, &len, NULL));
    if (run == 0) {
      struct npu_model_options o = {.backend = "sim" };
      struct npu_model *m = NULL;

      entry_name = g_strdup (files);
      entry_bytes = bytes;
      entry_len = len;
      /* the entry is an artifact with the model's five metadata entries */
      fail_unless_equals_int (npu_model_load (path, &o, &m), NPU_OK);
      fail_unless_equals_int (npu_model_num_props (m), 5);
      npu_model_free (m);
    } else {
      fail_unless_equals_string (files, entry_name);
      fail_unless (len == entry_len && !memcmp (bytes, entry_bytes, len),
          "the cache entry was rewritten");
      g_free (bytes);
    }
    g_free (path);
    g_free (files);
    gst_object_unref (e);
    gst_harness_teardown (h);
    g_free (desc);
  }
  g_free (list_dir (dir, "", TRUE));
  g_rmdir (dir);
  g_free (dir);
  g_free (entry_name);
  g_free (entry_bytes);
}

GST_END_TEST;

/* Feeds one 4x4 frame of @fmt made by @px through @desc and returns the
 * "pixels" output as floats (16 * channels values, the model's layout). */
static gfloat *
pixels_of (const gchar * desc, const gchar * fmt, gint w, gint h,
    PixelFunc px, gpointer user, gsize * n)
{
  GstHarness *hr = gst_harness_new_parse (desc);
  gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,"
      "framerate=30/1", fmt, w, h);
  GstBuffer *out;
  const GstNpuTensor *t;
  gfloat *v;

  gst_harness_set_src_caps_str (hr, caps);
  out = gst_harness_push_and_pull (hr, make_frame (gst_video_format_from_string
          (fmt), w, h, px, user));
  t = gst_npu_tensor_meta_get_by_name (gst_buffer_get_npu_tensor_meta (out),
      "pixels");
  fail_unless (t != NULL);
  v = gst_npu_tensor_dup_float (t, n);
  gst_buffer_unref (out);
  g_free (caps);
  gst_harness_teardown (hr);
  return v;
}

static void
px_xy (gint x, gint y, guint8 rgb[3], gpointer user)
{
  rgb[0] = (guint8) (10 * x + y);
  rgb[1] = (guint8) (100 + 10 * y + x);
  rgb[2] = (guint8) (200 + x + y);
}

/* channel-order=bgr, NHWC uint8 inputs, int8 grey inputs, float16 inputs,
 * normalization=none and scale-offset: each gives the layout and values the
 * documentation promises. */
/* hw-profile: "auto" by default, reads back what was set, and the verified
 * profile's program (only evidence-ledger V/M/O tasks on the NPU) runs on the
 * simulator with the same pixels as the default program. */
GST_START_TEST (test_hw_profile)
{
  GstElement *e = gst_element_factory_make ("npuinfer", NULL);
  gchar *v = NULL;
  guint8 col[3] = { 200, 100, 50 };
  gfloat px0[2];
  guint k;

  g_object_get (e, "hw-profile", &v, NULL);
  fail_unless_equals_string (v, "auto");
  g_free (v);
  g_object_set (e, "hw-profile", "verified", NULL);
  g_object_get (e, "hw-profile", &v, NULL);
  fail_unless_equals_string (v, "verified");
  g_free (v);
  gst_object_unref (e);

  for (k = 0; k < 2; k++) {
    gchar *desc =
        g_strdup_printf ("npuinfer backend=sim hw-profile=%s model=%s",
        k ? "verified" : "fast", MODEL ("image_meta.onnx"));
    GstHarness *h = gst_harness_new_parse (desc);
    GstBuffer *out;
    const gfloat *d;

    gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
    out = gst_harness_push_and_pull (h,
        make_frame (GST_VIDEO_FORMAT_RGB, 4, 4, px_const, col));
    d = gst_npu_tensor_get_data (gst_npu_tensor_meta_get_by_name
        (gst_buffer_get_npu_tensor_meta (out), "pixels"), NULL);
    px0[k] = d[0];
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_free (desc);
  }
  fail_unless (fabs (px0[0] - px0[1]) < 4e-3, "%g %g", px0[0], px0[1]);
}

GST_END_TEST;

GST_START_TEST (test_layouts_and_dtypes)
{
  gfloat *v;
  gsize n;
  gint x, y, c;

  /* BGR order, raw values */
  v = pixels_of ("npuinfer backend=cpu channel-order=bgr normalization=none "
      "model=" MODEL ("image_f32.onnx"), "RGB", 4, 4, px_xy, NULL, &n);
  fail_unless_equals_int (n, 48);
  for (y = 0; y < 4; y++)
    for (x = 0; x < 4; x++) {
      guint8 p[3];

      px_xy (x, y, p, NULL);
      for (c = 0; c < 3; c++)
        fail_unless_equals_float (v[c * 16 + y * 4 + x], p[2 - c]);
    }
  g_free (v);

  /* scale/offset */
  v = pixels_of ("npuinfer backend=cpu normalization=scale-offset "
      "scale=<2.0,1.0,0.5> offset=<-1.0,0.0,1.0> model="
      MODEL ("image_f32.onnx"), "BGRx", 4, 4, px_xy, NULL, &n);
  for (y = 0; y < 4; y++)
    for (x = 0; x < 4; x++) {
      guint8 p[3];
      const gfloat s[3] = { 2.0f, 1.0f, 0.5f }, o[3] = { -1.0f, 0.0f, 1.0f };

      px_xy (x, y, p, NULL);
      for (c = 0; c < 3; c++)
        fail_unless (fabs (v[c * 16 + y * 4 + x] - (p[c] * s[c] + o[c])) <
            1e-4);
    }
  g_free (v);

  /* uint8 NHWC input: the pixels themselves, channels last */
  v = pixels_of ("npuinfer backend=cpu model=" MODEL ("image_u8_nhwc.onnx"),
      "RGBA", 4, 4, px_xy, NULL, &n);
  fail_unless_equals_int (n, 48);
  for (y = 0; y < 4; y++)
    for (x = 0; x < 4; x++) {
      guint8 p[3];

      px_xy (x, y, p, NULL);
      for (c = 0; c < 3; c++)
        fail_unless_equals_float (v[(y * 4 + x) * 3 + c], p[c]);
    }
  g_free (v);

  /* int8 grey input from GRAY8 frames: pixel - 128 */
  v = pixels_of ("npuinfer backend=cpu model=" MODEL ("image_i8_gray.onnx"),
      "GRAY8", 4, 4, px_xy, NULL, &n);
  fail_unless_equals_int (n, 16);
  for (y = 0; y < 4; y++)
    for (x = 0; x < 4; x++) {
      guint8 p[3];

      px_xy (x, y, p, NULL);
      fail_unless_equals_float (v[y * 4 + x], (gfloat) p[0] - 128.0f);
    }
  g_free (v);

  /* float16 input: (pixel / 255 - 0.5) / 0.5 rounded to half precision */
  v = pixels_of ("npuinfer backend=cpu mean=<0.5> std=<0.5> model="
      MODEL ("image_f16.onnx"), "RGB", 4, 4, px_xy, NULL, &n);
  for (y = 0; y < 4; y++)
    for (x = 0; x < 4; x++) {
      guint8 p[3];

      px_xy (x, y, p, NULL);
      for (c = 0; c < 3; c++) {
        gdouble want = (p[c] / 255.0 - 0.5) / 0.5;
        /* half has 11 significant bits */
        fail_unless (fabs (v[c * 16 + y * 4 + x] - want) <= 1.0 / 1024);
      }
    }
  g_free (v);
}

GST_END_TEST;

/* Normalisation defaults come from the model's metadata_props, for the
 * .onnx and for the .npub npuc made of it, and a property set explicitly
 * overrides them. */
GST_START_TEST (test_metadata_defaults)
{
  static const gchar *const with_meta[] = {
    "npuinfer backend=cpu model=" MODEL ("image_meta.onnx"),
    "npuinfer backend=sim model=" MODEL ("image_meta.onnx"),
    "npuinfer backend=sim model=" MODEL ("image_meta.npub"),
  };
  guint8 col[3] = { 200, 100, 50 };
  gfloat *v;
  gsize n;
  gint i, k;

  /* image_meta.onnx: mean 0.5,0.25,0.125, std 0.5,0.25,0.5, channel-order
   * bgr, resize letterbox (irrelevant at the model's size) */
  for (k = 0; k < (gint) G_N_ELEMENTS (with_meta); k++) {
    /* on sim the Mul may run on the NPU in float16 (2^-11 relative) */
    gdouble tol = k ? 4e-3 : 1e-5;

    v = pixels_of (with_meta[k], "RGB", 4, 4, px_const, col, &n);
    fail_unless_equals_int (n, 48);
    for (i = 0; i < 16; i++) {
      fail_unless (fabs (v[i] - (50 / 255.0 - 0.125) / 0.5) < tol, "%s: %g",
          with_meta[k], v[i]);
      fail_unless (fabs (v[16 + i] - (100 / 255.0 - 0.25) / 0.25) < tol);
      fail_unless (fabs (v[32 + i] - (200 / 255.0 - 0.5) / 0.5) < tol);
    }
    g_free (v);
  }

  /* the .npub: explicit settings still win */
  v = pixels_of ("npuinfer backend=sim mean=<0,0,0> channel-order=rgb model="
      MODEL ("image_meta.npub"), "RGB", 4, 4, px_const, col, &n);
  fail_unless (fabs (v[0] - (200 / 255.0) / 0.5) < 4e-3);
  fail_unless (fabs (v[32] - (50 / 255.0) / 0.5) < 4e-3);
  g_free (v);

  /* explicit mean and channel order win, std still from the metadata */
  v = pixels_of ("npuinfer backend=cpu mean=<0,0,0> channel-order=rgb model="
      MODEL ("image_meta.onnx"), "RGB", 4, 4, px_const, col, &n);
  for (i = 0; i < 16; i++) {
    fail_unless (fabs (v[i] - (200 / 255.0) / 0.5) < 1e-5);
    fail_unless (fabs (v[16 + i] - (100 / 255.0) / 0.25) < 1e-5);
    fail_unless (fabs (v[32 + i] - (50 / 255.0) / 0.5) < 1e-5);
  }
  g_free (v);

  /* Hugging Face image_mean / image_std keys */
  v = pixels_of ("npuinfer backend=cpu model=" MODEL ("image_hf_meta.onnx"),
      "RGB", 4, 4, px_const, col, &n);
  fail_unless (fabs (v[0] - (200 / 255.0 - 0.48145466) / 0.26862954) < 1e-4);
  fail_unless (fabs (v[16] - (100 / 255.0 - 0.4578275) / 0.26130258) < 1e-4);
  fail_unless (fabs (v[32] - (50 / 255.0 - 0.40821073) / 0.27577711) < 1e-4);
  g_free (v);
}

GST_END_TEST;

static void
px_stripes (gint x, gint y, guint8 rgb[3], gpointer user)
{
  /* 32x16 frame: columns 0-7 red, 8-23 green, 24-31 blue */
  rgb[0] = x < 8 ? 255 : 0;
  rgb[1] = x >= 8 && x < 24 ? 255 : 0;
  rgb[2] = x >= 24 ? 255 : 0;
}

/* resize: crop keeps only the centre square (all green), letterbox keeps
 * everything and fills the top and bottom quarter with border-color,
 * stretch squeezes the three stripes side by side. */
GST_START_TEST (test_resize_modes)
{
  gfloat *v;
  gsize n;
  gint x, y;

  v = pixels_of ("npuinfer backend=cpu normalization=none resize=crop model="
      MODEL ("image_f32_16.onnx"), "RGB", 32, 16, px_stripes, NULL, &n);
  fail_unless_equals_int (n, 3 * 256);
  for (y = 0; y < 16; y++)
    for (x = 0; x < 16; x++) {
      fail_unless (v[y * 16 + x] < 1.0f, "red at %d,%d", x, y);
      fail_unless (v[256 + y * 16 + x] > 254.0f);
      fail_unless (v[512 + y * 16 + x] < 1.0f);
    }
  g_free (v);

  v = pixels_of ("npuinfer backend=cpu normalization=none resize=letterbox "
      "border-color=0x204060 model=" MODEL ("image_f32_16.onnx"), "RGB", 32,
      16, px_stripes, NULL, &n);
  for (x = 0; x < 16; x++) {
    /* rows 0-3 and 12-15 are border, rows 4-11 the frame */
    fail_unless_equals_float (v[0 * 16 + x], 0x20);
    fail_unless_equals_float (v[256 + 15 * 16 + x], 0x40);
    fail_unless_equals_float (v[512 + 3 * 16 + x], 0x60);
  }
  /* left quarter of the picture area is red, the middle green */
  fail_unless (v[8 * 16 + 0] > 250.0f && v[256 + 8 * 16 + 0] < 5.0f);
  fail_unless (v[256 + 8 * 16 + 8] > 250.0f && v[8 * 16 + 8] < 5.0f);
  fail_unless (v[512 + 8 * 16 + 15] > 250.0f);
  g_free (v);

  v = pixels_of ("npuinfer backend=cpu normalization=none resize=stretch "
      "model=" MODEL ("image_f32_16.onnx"), "RGB", 32, 16, px_stripes, NULL,
      &n);
  for (y = 0; y < 16; y++) {
    fail_unless (v[y * 16 + 0] > 250.0f);       /* red left */
    fail_unless (v[256 + y * 16 + 8] > 250.0f); /* green middle */
    fail_unless (v[512 + y * 16 + 15] > 250.0f);        /* blue right */
  }
  g_free (v);
}

GST_END_TEST;

/* Caps change in the middle of a stream with jobs in flight: frames of
 * each format are converted with their own format (every worker rebuilds its
 * converter), the caps reach downstream in order, and the meta's regions
 * describe each frame's own geometry. */
GST_START_TEST (test_caps_change_midstream)
{
  const struct
  {
    const gchar *fmt;
    gint w, h;
  } seq[] = { {"RGB", 16, 16}, {"BGRx", 32, 16}, {"RGB", 16, 16},
  {"GRAY8", 24, 24}
  };
  GstHarness *h;
  guint i, k, n = 0;
  guint8 grey[3] = { 90, 90, 90 };

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "0:20000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu normalization=none "
      "resize=letterbox border-color=0x000000 model="
      MODEL ("image_f32_16.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  for (i = 0; i < G_N_ELEMENTS (seq); i++) {
    gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,"
        "framerate=30/1", seq[i].fmt, seq[i].w, seq[i].h);

    gst_harness_set_src_caps_str (h, caps);
    for (k = 0; k < 3; k++)
      fail_unless_equals_int (gst_harness_push (h,
              make_frame (gst_video_format_from_string (seq[i].fmt), seq[i].w,
                  seq[i].h, px_const, grey)), GST_FLOW_OK);
    g_free (caps);
  }
  for (i = 0; i < G_N_ELEMENTS (seq); i++) {
    for (k = 0; k < 3; k++) {
      GstBuffer *b = gst_harness_pull (h);
      GstNpuTensorMeta *m = gst_buffer_get_npu_tensor_meta (b);
      const GstNpuTensor *t = gst_npu_tensor_meta_get_by_name (m, "pixels");
      const gfloat *v = gst_npu_tensor_get_data (t, NULL);

      fail_unless_equals_int (m->region.w, seq[i].w);
      fail_unless_equals_int (m->region.h, seq[i].h);
      if (seq[i].w == 32) {
        /* 32x16 letterboxed into 16x16: rows 4-11 picture, the rest border */
        fail_unless_equals_int (m->model_region.y, 4);
        fail_unless_equals_int (m->model_region.h, 8);
        fail_unless_equals_float (v[0], 0.0f);
        fail_unless_equals_float (v[3 * 16 + 5], 0.0f);
        fail_unless (fabs (v[4 * 16] - 90.0f) < 1.5f);
        fail_unless (fabs (v[2 * 256 + 11 * 16 + 15] - 90.0f) < 1.5f);
      } else {
        fail_unless_equals_int (m->model_region.h, 16);
        fail_unless (fabs (v[0] - 90.0f) < 1.5f, "%s: %g", seq[i].fmt, v[0]);
        fail_unless (fabs (v[3 * 256 - 1] - 90.0f) < 1.5f);
      }
      gst_buffer_unref (b);
      n++;
    }
  }
  fail_unless_equals_int (n, 12);
  /* the four caps went downstream, in order */
  for (i = 0; i < G_N_ELEMENTS (seq);) {
    GstEvent *ev = gst_harness_pull_event (h);

    if (GST_EVENT_TYPE (ev) == GST_EVENT_CAPS) {
      GstCaps *caps;
      GstVideoInfo info;

      gst_event_parse_caps (ev, &caps);
      fail_unless (gst_video_info_from_caps (&info, caps));
      fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), seq[i].w);
      fail_unless_equals_string (gst_video_format_to_string
          (GST_VIDEO_INFO_FORMAT (&info)), seq[i].fmt);
      i++;
    }
    gst_event_unref (ev);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* NV12 and I420 frames are converted with the colorimetry of the caps:
 * compare against BT.601 limited range computed here. GStreamer's
 * fixed-point conversion (which the element uses) is within 5 levels of the
 * exact value (it maps Y 235 to 253, not 255); BT.709 coefficients would be
 * 8 to 13 levels off for the saturated colours below. */
GST_START_TEST (test_yuv_conversion)
{
  const gchar *fmts[] = { "NV12", "I420" };
  /* colours well inside the RGB gamut: clipping is not what is tested */
  const guint8 yuv[][3] = { {120, 100, 150}, {100, 90, 170}, {60, 150, 110},
  {170, 100, 100}, {128, 128, 128}, {235, 128, 128}, {16, 128, 128}
  };
  guint i, k;

  for (i = 0; i < G_N_ELEMENTS (fmts); i++)
    for (k = 0; k < G_N_ELEMENTS (yuv); k++) {
      GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu "
          "normalization=none model=" MODEL ("image_f32.onnx"));
      gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=8,height=8,"
          "framerate=30/1,colorimetry=bt601", fmts[i]);
      GstBuffer *out;
      const GstNpuTensor *t;
      const gfloat *v;
      gdouble rgb[3];
      gint c, p;

      gst_harness_set_src_caps_str (h, caps);
      out = gst_harness_push_and_pull (h,
          make_yuv_frame (gst_video_format_from_string (fmts[i]), 8, 8,
              yuv[k][0], yuv[k][1], yuv[k][2]));
      t = gst_npu_tensor_meta_get_by_name (gst_buffer_get_npu_tensor_meta
          (out), "pixels");
      v = gst_npu_tensor_get_data (t, NULL);
      bt601_to_rgb (yuv[k][0], yuv[k][1], yuv[k][2], rgb);
      for (c = 0; c < 3; c++)
        for (p = 0; p < 16; p++)
          fail_unless (fabs (v[c * 16 + p] - rgb[c]) <= 5.0,
              "%s yuv %u,%u,%u channel %d: %g, want %g", fmts[i], yuv[k][0],
              yuv[k][1], yuv[k][2], c, v[c * 16 + p], rgb[c]);
      gst_buffer_unref (out);
      g_free (caps);
      gst_harness_teardown (h);
    }
}

GST_END_TEST;

/* Three core slots with random job latencies: frames finish out of order
 * (the stats say so), yet leave in input order, each carrying the tensors of
 * its own frame, and every core took frames. */
GST_START_TEST (test_order_random_latency)
{
  const guint N = 60;
  GstHarness *h;
  GstElement *e;
  guint i;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "0:15000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu cores=7 max-in-flight=9 "
      "normalization=none model=" MODEL ("image_f32.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  e = harness_npu_element (h);
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));

  for (i = 0; i < N; i++)
    fail_unless_equals_int (gst_harness_push (h, numbered_frame (i, 4, 4)),
        GST_FLOW_OK);
  for (i = 0; i < N; i++) {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless (b != NULL);
    fail_unless_equals_clocktime (GST_BUFFER_PTS (b),
        gst_util_uint64_scale (i, GST_SECOND, 30));
    fail_unless_equals_float (first_pixel (b), (gfloat) ((i * 7) % 256));
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (stats_get (e, "completed"), N);
  {
    guint64 sum = 0;

    /* the device scheduler hands the next frame to the core with the fewest
     * in flight, so with random latencies the shares differ; every core
     * works and no frame is lost (policy: test-npusched.c) */
    for (i = 0; i < 3; i++) {
      fail_unless (stats_core_jobs (e, i) > 0);
      sum += stats_core_jobs (e, i);
    }
    fail_unless_equals_uint64 (sum, N);
  }
  fail_unless (stats_get (e, "reordered") > 0,
      "the random delays never reordered a job: the test proves nothing");
  gst_object_unref (e);
  gst_harness_teardown (h);
}

GST_END_TEST;

typedef struct
{
  GstHarness *h;
  guint n;
  gint pushed;                  /* atomic */
  GstFlowReturn last;
} PushCtx;

static gpointer
push_thread (gpointer data)
{
  PushCtx *ctx = data;
  guint i;

  for (i = 0; i < ctx->n; i++) {
    ctx->last = gst_harness_push (ctx->h, numbered_frame (i, 4, 4));
    g_atomic_int_inc (&ctx->pushed);
  }
  return NULL;
}

/* drop=none: with max-in-flight frames in flight the upstream thread blocks
 * until one leaves; every frame is inferred. */
GST_START_TEST (test_backpressure)
{
  PushCtx ctx = { 0 };
  GstHarness *h;
  GstElement *e;
  GThread *t;
  guint i;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "300000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu cores=1 max-in-flight=2 "
      "model=" MODEL ("image_f32.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  e = harness_npu_element (h);
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));

  ctx.h = h;
  ctx.n = 5;
  t = g_thread_new ("push", push_thread, &ctx);
  g_usleep (150000);
  /* the first job is still sleeping: two frames in, the third push blocks */
  fail_unless_equals_int (g_atomic_int_get (&ctx.pushed), 2);
  fail_unless_equals_uint64 (stats_get (e, "frames"), 3);

  for (i = 0; i < 5; i++) {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless (gst_buffer_get_npu_tensor_meta (b) != NULL);
    gst_buffer_unref (b);
  }
  g_thread_join (t);
  fail_unless_equals_int (ctx.last, GST_FLOW_OK);
  fail_unless_equals_uint64 (stats_get (e, "dropped"), 0);
  fail_unless_equals_uint64 (stats_get (e, "completed"), 5);
  gst_object_unref (e);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* drop=pass: frames arriving while the window is full go downstream in
 * order without metadata; drop=discard: they are not pushed at all. */
GST_START_TEST (test_drop_policies)
{
  GstHarness *h;
  GstElement *e;
  guint i;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "200000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu cores=1 max-in-flight=1 "
      "drop=pass model=" MODEL ("image_f32.onnx"));
  e = harness_npu_element (h);
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
  for (i = 0; i < 5; i++)
    fail_unless_equals_int (gst_harness_push (h, numbered_frame (i, 4, 4)),
        GST_FLOW_OK);
  for (i = 0; i < 5; i++) {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless_equals_clocktime (GST_BUFFER_PTS (b),
        gst_util_uint64_scale (i, GST_SECOND, 30));
    if (i == 0)
      fail_unless (gst_buffer_get_npu_tensor_meta (b) != NULL);
    else
      fail_unless (gst_buffer_get_npu_tensor_meta (b) == NULL);
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (stats_get (e, "dropped"), 4);
  gst_object_unref (e);
  gst_harness_teardown (h);

  h = gst_harness_new_parse ("npuinfer backend=cpu cores=1 max-in-flight=1 "
      "drop=discard model=" MODEL ("image_f32.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  e = harness_npu_element (h);
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
  for (i = 0; i < 5; i++)
    fail_unless_equals_int (gst_harness_push (h, numbered_frame (i, 4, 4)),
        GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless_equals_clocktime (GST_BUFFER_PTS (b), 0);
    fail_unless (gst_buffer_get_npu_tensor_meta (b) != NULL);
    gst_buffer_unref (b);
  }
  /* wait for EOS: then nothing else came out */
  while (TRUE) {
    GstEvent *ev = gst_harness_pull_event (h);
    gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;

    gst_event_unref (ev);
    if (eos)
      break;
  }
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  fail_unless_equals_uint64 (stats_get (e, "dropped"), 4);
  gst_object_unref (e);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* inference-interval=3: frames 0, 3, 6, ... carry tensors, the others pass
 * through without, all in order. */
GST_START_TEST (test_inference_interval)
{
  GstHarness *h;
  guint i;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "0:5000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu inference-interval=3 "
      "model=" MODEL ("image_f32.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
  for (i = 0; i < 12; i++)
    gst_harness_push (h, numbered_frame (i, 4, 4));
  for (i = 0; i < 12; i++) {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless_equals_clocktime (GST_BUFFER_PTS (b),
        gst_util_uint64_scale (i, GST_SECOND, 30));
    fail_unless_equals_int (gst_buffer_get_npu_tensor_meta (b) != NULL,
        i % 3 == 0);
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* FLUSH_START / FLUSH_STOP in the middle of a stream with jobs in flight:
 * pending jobs are dropped, nothing is pushed twice or after the flush, and
 * the element carries on with the new segment. */
GST_START_TEST (test_flush_midstream)
{
  GstHarness *h;
  GstElement *e;
  GstSegment seg;
  GstBuffer *b;
  guint i, before = 0;
  GstClockTime last = GST_CLOCK_TIME_NONE;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "200000:300000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu max-in-flight=6 model="
      MODEL ("image_f32.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  e = harness_npu_element (h);
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));

  for (i = 0; i < 6; i++)
    gst_harness_push (h, numbered_frame (i, 4, 4));
  g_usleep (30000);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  {
    GstStructure *st;
    guint inflight = 99;

    g_object_get (e, "stats", &st, NULL);
    fail_unless (gst_structure_get_uint (st, "in-flight", &inflight));
    fail_unless_equals_int (inflight, 0);
    gst_structure_free (st);
  }

  /* frames that made it out before the flush, in order */
  while ((b = gst_harness_try_pull (h))) {
    if (GST_CLOCK_TIME_IS_VALID (last))
      fail_unless (GST_BUFFER_PTS (b) > last);
    last = GST_BUFFER_PTS (b);
    before++;
    gst_buffer_unref (b);
  }
  fail_unless (before < 6);

  for (i = 100; i < 104; i++)
    fail_unless_equals_int (gst_harness_push (h, numbered_frame (i, 4, 4)),
        GST_FLOW_OK);
  for (i = 100; i < 104; i++) {
    b = gst_harness_pull (h);
    fail_unless_equals_clocktime (GST_BUFFER_PTS (b),
        gst_util_uint64_scale (i, GST_SECOND, 30));
    fail_unless_equals_float (first_pixel (b), (gfloat) ((i * 7) % 256) /
        255.0f);
    gst_buffer_unref (b);
  }
  g_usleep (100000);
  fail_unless (gst_harness_try_pull (h) == NULL);
  gst_object_unref (e);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* EOS sent right behind frames still being inferred reaches downstream only
 * after all of them. */
GST_START_TEST (test_eos_with_jobs_in_flight)
{
  GstHarness *h;
  GstEvent *ev;
  guint i;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "30000:60000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu model="
      MODEL ("image_f32.onnx"));
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
  for (i = 0; i < 6; i++)
    gst_harness_push (h, numbered_frame (i, 4, 4));
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  do {
    ev = gst_harness_pull_event (h);
    fail_unless (ev != NULL);
    if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS)
      break;
    gst_event_unref (ev);
  } while (TRUE);
  gst_event_unref (ev);
  /* all six were pushed before the EOS */
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 6);
  for (i = 0; i < 6; i++) {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless (gst_buffer_get_npu_tensor_meta (b) != NULL);
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The LATENCY query adds max-in-flight frame durations to upstream's. */
GST_START_TEST (test_latency_query)
{
  GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu cores=7 "
      "model=" MODEL ("image_f32.onnx"));

  gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
  gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
  /* default window: 2 per slot = 6 frames at 30 fps = 200 ms */
  fail_unless_equals_clocktime (gst_harness_query_latency (h),
      10 * GST_MSECOND + gst_util_uint64_scale (6, GST_SECOND, 30));
  gst_harness_teardown (h);

  h = gst_harness_new_parse ("npuinfer backend=cpu cores=1 max-in-flight=3 "
      "model=" MODEL ("image_f32.onnx"));
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=4,height=4,"
      "framerate=10/1");
  gst_harness_set_upstream_latency (h, 0);
  fail_unless_equals_clocktime (gst_harness_query_latency (h),
      300 * GST_MSECOND);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* 200 NULL -> PLAYING -> NULL cycles, some with a frame in flight when the
 * state goes down. */
GST_START_TEST (test_state_cycles)
{
  GstHarness *h;
  GstElement *e;
  guint i;

  g_setenv ("GST_NPU_TEST_JOB_DELAY_US", "0:2000", TRUE);
  h = gst_harness_new_parse ("npuinfer backend=cpu model="
      MODEL ("image_f32.onnx"));
  e = harness_npu_element (h);
  for (i = 0; i < 200; i++) {
    fail_unless_equals_int (gst_element_set_state (h->element,
            GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    fail_unless_equals_int (gst_element_set_state (h->element,
            GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
    if (i % 10 == 0) {
      gst_harness_set_src_caps_str (h, RGB_CAPS (4, 4));
      fail_unless_equals_int (gst_harness_push (h, numbered_frame (i, 4, 4)),
          GST_FLOW_OK);
      if (i % 20 == 0) {
        GstBuffer *b = gst_harness_pull (h);

        fail_unless (gst_buffer_get_npu_tensor_meta (b) != NULL);
        gst_buffer_unref (b);
      }
    }
  }
  g_unsetenv ("GST_NPU_TEST_JOB_DELAY_US");
  /* frames pushed on the odd tens may or may not have come out */
  while (gst_harness_buffers_in_queue (h))
    gst_buffer_unref (gst_harness_pull (h));
  gst_object_unref (e);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
npuinfer_suite (void)
{
  Suite *s = suite_create ("npuinfer");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_caps_formats);
  tcase_add_test (tc, test_meta_matches_session);
  tcase_add_test (tc, test_meta_matches_npu_run);
  tcase_add_test (tc, test_layouts_and_dtypes);
  tcase_add_test (tc, test_quantised_output);
  tcase_add_test (tc, test_metadata_defaults);
  tcase_add_test (tc, test_defaults_and_cache_dir);
  tcase_add_test (tc, test_resize_modes);
  tcase_add_test (tc, test_yuv_conversion);
  tcase_add_test (tc, test_caps_change_midstream);
  tcase_add_test (tc, test_order_random_latency);
  tcase_add_test (tc, test_backpressure);
  tcase_add_test (tc, test_drop_policies);
  tcase_add_test (tc, test_inference_interval);
  tcase_add_test (tc, test_flush_midstream);
  tcase_add_test (tc, test_eos_with_jobs_in_flight);
  tcase_add_test (tc, test_latency_query);
  tcase_add_test (tc, test_state_cycles);
  tcase_add_test (tc, test_hw_profile);
  return s;
}

GST_CHECK_MAIN (npuinfer);
