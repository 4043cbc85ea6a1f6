/* SPDX-License-Identifier: MIT */
/*
 * test-npudetect.c: GstHarness tests of npudetect. Frames carry tensor metas
 * the test builds itself with boxes at known model-input positions; the
 * expected frame rectangles are worked out here from the letterbox
 * arithmetic. Covers the three layouts, letterbox undo from the meta's
 * region and from properties, thresholds, NMS, top-k, labels, IoU tracking
 * over frames, every bad tensor case (wrong shapes, short data, NaN, zero and
 * thousands of detections), the gst-inspect documentation, and npuinfer
 * running a tiny YOLOv8-layout model (detector_v8.onnx) into npudetect.
 */
#include <glib/gstdio.h>

#include "npu-gst-test.h"

#define CAPS_128x64 "video/x-raw,format=RGB,width=128,height=64,framerate=30/1"

typedef struct
{
  const gfloat *data;
  guint ndim;
  gint64 dims[4];
} T;

/* An RGB frame of @w x @h with a tensor meta holding @n tensors; @letterbox:
 * the frame region / model region of a 128x64 frame letterboxed into 64x64
 * (model rows 16..48), else no region. */
static GstBuffer *
frame_with (gint w, gint h, const T * t, guint n, gboolean letterbox)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, (gsize) w * h * 3, NULL);
  GstNpuTensor *ts = g_new0 (GstNpuTensor, n);
  GstNpuTensorMeta *meta;
  guint i, d;

  gst_buffer_memset (buf, 0, 0, (gsize) w * h * 3);
  for (i = 0; i < n; i++) {
    gsize numel = 1;

    ts[i].name = g_quark_from_string (i == 0 ? "output0" : "output1");
    ts[i].data_type = GST_NPU_TENSOR_DATA_TYPE_FLOAT32;
    ts[i].num_dims = t[i].ndim;
    for (d = 0; d < t[i].ndim; d++) {
      ts[i].dims[d] = t[i].dims[d];
      numel *= (gsize) t[i].dims[d];
    }
    ts[i].data = g_bytes_new (t[i].data, numel * sizeof (gfloat));
  }
  meta = gst_buffer_add_npu_tensor_meta (buf, "test-detector", n, ts);
  if (letterbox) {
    meta->region.w = 128;
    meta->region.h = 64;
    meta->model_region.y = 16;
    meta->model_region.w = 64;
    meta->model_region.h = 32;
  }
  return buf;
}

/* a [1, 4+nc, n] YOLOv8 tensor from per-anchor boxes and scores */
static gfloat *
v8 (guint n, guint nc, const gfloat (*b)[4], const gfloat * scores)
{
  gfloat *d = g_new0 (gfloat, (4 + nc) * n);
  guint i, c, k;

  for (i = 0; i < n; i++) {
    for (k = 0; k < 4; k++)
      d[k * n + i] = b[i][k];
    for (c = 0; c < nc; c++)
      d[(4 + c) * n + i] = scores[i * nc + c];
  }
  return d;
}

/* the ROI metas of @buf, in attach order */
static GPtrArray *
rois_of (GstBuffer * buf)
{
  GPtrArray *a = g_ptr_array_new ();
  gpointer state = NULL;
  GstMeta *m;

  while ((m = gst_buffer_iterate_meta_filtered (buf, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)))
    g_ptr_array_add (a, m);
  return a;
}

static void
check_roi (GstVideoRegionOfInterestMeta * roi, guint x, guint y, guint w,
    guint h, const gchar * label, gint cls, gdouble conf, gint track)
{
  GstStructure *s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NPU_DETECTION_STRUCTURE);
  gint v;
  gdouble c;

  fail_unless (s != NULL);
  fail_unless (roi->x == x && roi->y == y && roi->w == w && roi->h == h,
      "roi %u,%u %ux%u, expected %u,%u %ux%u", roi->x, roi->y, roi->w, roi->h,
      x, y, w, h);
  fail_unless_equals_string (g_quark_to_string (roi->roi_type), label);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), label);
  fail_unless (gst_structure_get_int (s, "class-id", &v));
  fail_unless_equals_int (v, cls);
  fail_unless (gst_structure_get_double (s, "confidence", &c));
  fail_unless (fabs (c - conf) < 1e-5, "confidence %g", c);
  fail_unless (gst_structure_get_int (s, "track-id", &v));
  fail_unless_equals_int (v, track);
  fail_unless_equals_string (gst_structure_get_string (s, "model-id"),
      "test-detector");
}

static GstHarness *
detect_harness (const gchar * props)
{
  GstHarness *h = harness_with_props ("npudetect", props);

  gst_harness_set_src_caps_str (h, CAPS_128x64);
  return h;
}

/* pushes one frame, returns its ROIs (the pulled buffer in *out) */
static GPtrArray *
run_one (GstHarness * h, GstBuffer * in, GstBuffer ** out)
{
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  *out = gst_harness_pull (h);
  fail_unless (*out != NULL);
  return rois_of (*out);
}

/* anchors of the letterbox test, in 64x64 model input pixels */
static const gfloat lb_boxes[3][4] = {
  {32, 32, 16, 8}, {10, 20, 4, 4}, {33, 32, 16, 8}
};
static const gfloat lb_scores[3 * 2] = { 0.1f, 0.9f, 0.2f, 0.1f, 0.05f, 0.8f };

static gchar *
write_labels (const gchar * text)
{
  return write_temp_file ("npudetect-labels-XXXXXX.txt", text);
}

GST_START_TEST (test_yolov8_letterbox)
{
  gfloat *d = v8 (3, 2, lb_boxes, lb_scores);
  T t = { d, 3, {1, 6, 3}
  };
  gchar *labels = write_labels ("person\r\ncar\n");
  gchar *props = g_strdup_printf ("labels=%s", labels);
  GstHarness *h = detect_harness (props);
  GstBuffer *out;
  GPtrArray *r;

  /* model box (24,28)-(40,36); letterbox: frame x = 2 * model x,
   * frame y = 2 * (model y - 16) -> (48,24)-(80,40) */
  r = run_one (h, frame_with (128, 64, &t, 1, TRUE), &out);
  fail_unless_equals_int (r->len, 1);
  check_roi (r->pdata[0], 48, 24, 32, 16, "car", 1, 0.9, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* lower threshold: anchor 1 (class 0, 0.2) at model (8,18)-(12,22) */
  g_object_set (h->element, "confidence-threshold", 0.15, NULL);
  r = run_one (h, frame_with (128, 64, &t, 1, TRUE), &out);
  fail_unless_equals_int (r->len, 2);
  check_roi (r->pdata[1], 16, 4, 8, 8, "person", 0, 0.2, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* looser NMS keeps the overlapping anchor 2 (IoU 0.88) */
  g_object_set (h->element, "iou-threshold", 0.95, NULL);
  r = run_one (h, frame_with (128, 64, &t, 1, TRUE), &out);
  fail_unless_equals_int (r->len, 3);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* top-1 */
  g_object_set (h->element, "max-detections", 1, NULL);
  r = run_one (h, frame_with (128, 64, &t, 1, TRUE), &out);
  fail_unless_equals_int (r->len, 1);
  check_roi (r->pdata[0], 48, 24, 32, 16, "car", 1, 0.9, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  gst_harness_teardown (h);
  g_unlink (labels);
  g_free (labels);
  g_free (props);
  g_free (d);
}

GST_END_TEST;

GST_START_TEST (test_geometry_from_properties)
{
  gfloat *d = v8 (3, 2, lb_boxes, lb_scores);
  T t = { d, 3, {1, 6, 3}
  };
  GstHarness *h = detect_harness ("input-width=64 input-height=64 "
      "resize=letterbox");
  GstBuffer *out;
  GPtrArray *r;

  /* no region in the meta: the same letterbox worked out from the caps */
  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 1);
  check_roi (r->pdata[0], 48, 24, 32, 16, "class-1", 1, 0.9, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* stretch: frame x = 2 * model x, frame y = model y -> (48,28)-(80,36) */
  g_object_set (h->element, "resize", 0, NULL);
  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 1);
  check_roi (r->pdata[0], 48, 28, 32, 8, "class-1", 1, 0.9, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (d);
}

GST_END_TEST;

GST_START_TEST (test_nms_class_agnostic)
{
  /* a class-0 and a class-1 box on top of each other */
  const gfloat b[2][4] = { {20, 20, 10, 10}, {21, 20, 10, 10} };
  const gfloat s[4] = { 0.9f, 0.0f, 0.0f, 0.8f };
  gfloat *d = v8 (2, 2, b, s);
  T t = { d, 3, {1, 6, 2} };
  GstHarness *h = detect_harness ("input-width=128 input-height=64");
  GstBuffer *out;
  GPtrArray *r;

  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 2);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  g_object_set (h->element, "class-agnostic", TRUE, NULL);
  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 1);
  check_roi (r->pdata[0], 15, 15, 10, 10, "class-0", 0, 0.9, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (d);
}

GST_END_TEST;

GST_START_TEST (test_yolov5_and_ssd)
{
  /* YOLOv5 [1, 2, 5+2]: confidence = objectness x class score */
  const gfloat v5[2 * 7] = {
    50, 30, 20, 20, 0.9f, 0.1f, 0.8f,
    10, 10, 4, 4, 0.2f, 0.9f, 0.1f,
  };
  /* SSD, normalised boxes [1, 2, 4] and scores [1, 2, 3] */
  const gfloat boxes[2 * 4] = { 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.5f, 0.9f,
    0.9f
  };
  const gfloat scores[2 * 3] = { 0.1f, 0.7f, 0.2f, 0.05f, 0.05f, 0.9f };
  T t5 = { v5, 3, {1, 2, 7} };
  T ssd[2] = { {scores, 3, {1, 2, 3}}, {boxes, 3, {1, 2, 4}} };
  GstHarness *h = detect_harness ("input-width=128 input-height=64");
  GstBuffer *out;
  GPtrArray *r;

  r = run_one (h, frame_with (128, 64, &t5, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 1);
  check_roi (r->pdata[0], 40, 20, 20, 20, "class-1", 1, 0.72, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* scores first, boxes second: told apart by the 4; fractions of the
   * 128x64 input */
  g_object_set (h->element, "format", 3, NULL);
  r = run_one (h, frame_with (128, 64, ssd, 2, FALSE), &out);
  fail_unless_equals_int (r->len, 2);
  check_roi (r->pdata[0], 64, 32, 51, 26, "class-2", 2, 0.9, -1);
  check_roi (r->pdata[1], 13, 13, 25, 13, "class-1", 1, 0.7, -1);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_tracking)
{
  GstHarness *h = detect_harness ("input-width=128 input-height=64 "
      "tracking=true tracking-max-age=1");
  GstBuffer *out;
  GPtrArray *r;
  gint frame;

  /* two objects moving 2 px per frame for 6 frames (order swapped each
   * frame by their scores), then a third appears */
  for (frame = 0; frame < 6; frame++) {
    const gfloat b[3][4] = {
      {20.0f + 2 * frame, 20, 16, 16}, {80, 30.0f + 2 * frame, 16, 16},
      {110, 10, 8, 8}
    };
    const gfloat s[3] = { frame % 2 ? 0.6f : 0.9f, frame % 2 ? 0.9f : 0.6f,
      frame == 5 ? 0.7f : 0.0f
    };
    gfloat *d = v8 (3, 1, b, s);
    T t = { d, 3, {1, 5, 3} };
    guint i;

    r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
    fail_unless_equals_int (r->len, frame == 5 ? 3 : 2);
    for (i = 0; i < r->len; i++) {
      GstVideoRegionOfInterestMeta *roi = r->pdata[i];
      GstStructure *st = gst_video_region_of_interest_meta_get_param (roi,
          GST_NPU_DETECTION_STRUCTURE);
      gint id;

      fail_unless (gst_structure_get_int (st, "track-id", &id));
      fail_unless_equals_int (id, roi->x >= 100 ? 3 : roi->x < 60 ? 1 : 2);
    }
    g_ptr_array_unref (r);
    gst_buffer_unref (out);
    g_free (d);
  }

  /* a frame without tensor meta (not inferred) passes without ROIs */
  {
    GstBuffer *plain = gst_buffer_new_allocate (NULL, 128 * 64 * 3, NULL);

    r = run_one (h, plain, &out);
    fail_unless_equals_int (r->len, 0);
    g_ptr_array_unref (r);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_bad_tensors)
{
  gfloat zeros[64] = { 0 };
  GstHarness *h = detect_harness ("input-width=128 input-height=64");
  T rank4 = { zeros, 4, {1, 2, 2, 4}
  };
  T batch2 = { zeros, 3, {2, 6, 2}
  };
  T no_class = { zeros, 3, {1, 4, 8}
  };
  T three[3] = { {zeros, 3, {1, 6, 2}
      }, {zeros, 3, {1, 6, 2}
      },
  {zeros, 3, {1, 6, 2}
      }
  };
  T ssd_n[2] = { {zeros, 3, {1, 3, 4}
      }, {zeros, 3, {1, 2, 3}
      }
  };
  T ok = { zeros, 3, {1, 6, 2}
  };
  GstBuffer *buf, *out;
  GPtrArray *r;

  harness_expect_error (h, frame_with (128, 64, &rank4, 1, FALSE),
      "[1, 2, 2, 4]");
  harness_expect_error (h, frame_with (128, 64, &batch2, 1, FALSE),
      "[2, 6, 2]");
  g_object_set (h->element, "format", 1, NULL);
  harness_expect_error (h, frame_with (128, 64, &no_class, 1, FALSE), "yolov8");
  g_object_set (h->element, "format", 0, NULL);
  harness_expect_error (h, frame_with (128, 64, three, 3, FALSE), "3 outputs");
  harness_expect_error (h, frame_with (128, 64, ssd_n, 2, FALSE), "same N");

  /* data shorter than the shape */
  buf = frame_with (128, 64, &ok, 1, FALSE);
  {
    GstNpuTensorMeta *m = gst_buffer_get_npu_tensor_meta (buf);

    g_bytes_unref (m->tensors[0].data);
    m->tensors[0].data = g_bytes_new (zeros, 8);
  }
  harness_expect_error (h, buf, "fewer bytes");

  /* no region and no input size */
  g_object_set (h->element, "input-width", 0, NULL);
  harness_expect_error (h, frame_with (128, 64, &ok, 1, FALSE), "input-width");

  /* all zero: valid, nothing detected */
  r = run_one (h, frame_with (128, 64, &ok, 1, TRUE), &out);
  fail_unless_equals_int (r->len, 0);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* YOLOv8-seg (format auto): output0 [1, 7, 3] (1 class, 2 coefficients)
 * and protos [1, 2, 16, 16], letterboxed 128x64 -> 64x64. Prototype 0 is
 * +8 on the left half of the input, -8 on the right; prototype 1 +8
 * everywhere. Anchor 0 (coefficients 1, 0): its mask is the left half of
 * its box; anchor 2 (0, -1): an empty mask. Each detection carries a mask
 * buffer of exactly its ROI's size. Bad protos are errors naming them. */
static const gfloat seg_out0[7][3] = {
  {32, 40, 16}, {32, 40, 20}, {48, 8, 8}, {16, 8, 8},
  {0.9f, 0.1f, 0.8f}, {1, 1, 0}, {0, 0, -1},
};

GST_START_TEST (test_yolov8_seg)
{
  gfloat *protos = g_new (gfloat, 2 * 16 * 16);
  T t[2] = { {&seg_out0[0][0], 3, {1, 7, 3}}, {NULL, 4, {1, 2, 16, 16}} };
  T bad[2];
  GstHarness *h = detect_harness ("");
  GstBuffer *out, *mb;
  GPtrArray *r;
  GstMapInfo map;
  GstStructure *st;
  gint mw, mh, x, y, set;
  guint i;

  for (i = 0; i < 256; i++) {
    protos[i] = (i % 16) < 8 ? 8.0f : -8.0f;
    protos[256 + i] = 8.0f;
  }
  t[1].data = protos;
  r = run_one (h, frame_with (128, 64, t, 2, TRUE), &out);
  fail_unless_equals_int (r->len, 2);
  /* model (8,24)-(56,40) -> frame (16,16)-(112,48) */
  check_roi (g_ptr_array_index (r, 0), 16, 16, 96, 32, "class-0", 0, 0.9, -1);
  st = gst_video_region_of_interest_meta_get_param (g_ptr_array_index (r, 0),
      GST_NPU_DETECTION_STRUCTURE);
  fail_unless (gst_structure_get (st, "mask", GST_TYPE_BUFFER, &mb,
          "mask-width", G_TYPE_INT, &mw, "mask-height", G_TYPE_INT, &mh, NULL));
  fail_unless_equals_int (mw, 96);
  fail_unless_equals_int (mh, 32);
  fail_unless_equals_int (gst_buffer_get_size (mb), 96 * 32);
  fail_unless (gst_buffer_map (mb, &map, GST_MAP_READ));
  /* inside the object: left of frame x 60 (away from the rounded corners);
   * outside: right of frame x 68 */
  for (y = 4; y < 28; y++)
    for (x = 0; x < 96; x++) {
      if (16 + x < 60 && x >= 4)
        fail_unless_equals_int (map.data[y * 96 + x], 255);
      if (16 + x >= 68)
        fail_unless_equals_int (map.data[y * 96 + x], 0);
    }
  gst_buffer_unmap (mb, &map);
  gst_buffer_unref (mb);
  /* anchor 2: model (12,16)-(20,24) -> frame (24,0)-(40,16), empty mask */
  check_roi (g_ptr_array_index (r, 1), 24, 0, 16, 16, "class-0", 0, 0.8, -1);
  st = gst_video_region_of_interest_meta_get_param (g_ptr_array_index (r, 1),
      GST_NPU_DETECTION_STRUCTURE);
  fail_unless (gst_structure_get (st, "mask", GST_TYPE_BUFFER, &mb, NULL));
  fail_unless (gst_buffer_map (mb, &map, GST_MAP_READ));
  for (i = 0, set = 0; i < map.size; i++)
    set += map.data[i] != 0;
  fail_unless_equals_int (set, 0);
  gst_buffer_unmap (mb, &map);
  gst_buffer_unref (mb);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* a plain yolov8 output has no mask */
  {
    gfloat *d = v8 (3, 2, lb_boxes, lb_scores);
    T one = { d, 3, {1, 6, 3}
    };

    r = run_one (h, frame_with (128, 64, &one, 1, TRUE), &out);
    fail_unless (r->len >= 1);
    st = gst_video_region_of_interest_meta_get_param (g_ptr_array_index (r,
            0), GST_NPU_DETECTION_STRUCTURE);
    fail_if (gst_structure_has_field (st, "mask"));
    g_ptr_array_unref (r);
    gst_buffer_unref (out);
    g_free (d);
  }

  /* bad shapes: protos of 3 coefficients (no class left), a 3-d protos
   * with format=yolov8-seg, one output only */
  bad[0] = t[0];
  bad[1] = t[1];
  bad[1].dims[1] = 3;
  bad[1].dims[3] = 16;
  {
    gfloat *big = g_new0 (gfloat, 3 * 16 * 16);

    bad[1].data = big;
    harness_expect_error (h, frame_with (128, 64, bad, 2, TRUE),
        "at least one class");
    g_free (big);
  }
  gst_util_set_object_arg (G_OBJECT (h->element), "format", "yolov8-seg");
  bad[1] = t[1];
  bad[1].ndim = 3;
  bad[1].dims[2] = 256;
  harness_expect_error (h, frame_with (128, 64, bad, 2, TRUE), "protos");
  harness_expect_error (h, frame_with (128, 64, t, 1, TRUE), "two tensors");
  /* the same frame with protos first still decodes */
  bad[0] = t[1];
  bad[1] = t[0];
  r = run_one (h, frame_with (128, 64, bad, 2, TRUE), &out);
  fail_unless_equals_int (r->len, 2);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (protos);
}

GST_END_TEST;

GST_START_TEST (test_nan_and_thousands)
{
  const guint n = 8400, nc = 80;
  gfloat *d = g_new0 (gfloat, (4 + nc) * n);
  T t = { d, 3, {1, 4 + 80, 8400} };
  GstHarness *h = detect_harness ("input-width=128 input-height=64");
  GstBuffer *out;
  GPtrArray *r;
  guint i;

  /* NaN and infinite values everywhere: no boxes, no error */
  for (i = 0; i < (4 + nc) * n; i++)
    d[i] = (i % 3) ? NAN : INFINITY;
  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 0);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);

  /* 8400 confident anchors on a 16x8 grid of 8x8 cells: max-detections
   * caps per-class NMS; class-agnostic NMS keeps one box per cell */
  memset (d, 0, sizeof (gfloat) * (4 + nc) * n);
  for (i = 0; i < n; i++) {
    guint cell = i % 128;

    d[i] = 8.0f * (cell % 16) + 4;
    d[n + i] = 8.0f * (cell / 16) + 4;
    d[2 * n + i] = 6;
    d[3 * n + i] = 6;
    d[(4 + i % nc) * n + i] = 0.3f + 0.6f * i / n;
  }
  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 100);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  g_object_set (h->element, "class-agnostic", TRUE, "max-detections", 1000,
      NULL);
  r = run_one (h, frame_with (128, 64, &t, 1, FALSE), &out);
  fail_unless_equals_int (r->len, 128);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (d);
}

GST_END_TEST;

GST_START_TEST (test_missing_labels_file)
{
  GstElement *e = gst_element_factory_make ("npudetect", NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;

  fail_unless (e != NULL);
  gst_element_set_bus (e, bus);
  g_object_set (e, "labels", "/nonexistent/labels.txt", NULL);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_unref (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_END_TEST;

/* gst-inspect shows the element's metadata and a blurb for each property */
GST_START_TEST (test_inspect_docs)
{
  const gchar *props[] = { "format", "confidence-threshold", "iou-threshold",
    "max-detections", "class-agnostic", "labels", "input-width",
    "input-height", "resize", "tracking", "tracking-iou-threshold",
    "tracking-max-age", NULL
  };
  GstElementFactory *f = gst_element_factory_find ("npudetect");

  check_inspect_docs ("npudetect", "YOLOv8", props);
  fail_unless_equals_string (gst_element_factory_get_metadata (f,
          GST_ELEMENT_METADATA_KLASS), "Filter/Analyzer/Video");
  gst_object_unref (f);
}

GST_END_TEST;

/* npuinfer runs detector_v8.onnx (a fixed YOLOv8-layout output) on 320x240
 * frames letterboxed into 32x32 (model rows 4..28, scale 10) */
GST_START_TEST (test_after_npuinfer)
{
  GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu "
      "resize=letterbox model=" MODEL ("detector_v8.onnx")
      " ! npudetect tracking=true");
  GstBuffer *out;
  GPtrArray *r;
  gint frame;

  gst_harness_set_src_caps_str (h,
      "video/x-raw,format=RGB,width=320,height=240,framerate=30/1");
  for (frame = 0; frame < 3; frame++) {
    GstBuffer *in = gst_buffer_new_allocate (NULL, 320 * 240 * 3, NULL);
    GstStructure *s;

    gst_buffer_memset (in, 0, 128, 320 * 240 * 3);
    GST_BUFFER_PTS (in) = frame * GST_SECOND / 30;
    r = run_one (h, in, &out);
    fail_unless_equals_int (r->len, 2);
    /* model (8,12)-(24,20) -> frame (80,80)-(240,160) */
    s = gst_video_region_of_interest_meta_get_param (r->pdata[0],
        GST_NPU_DETECTION_STRUCTURE);
    fail_unless (((GstVideoRegionOfInterestMeta *) r->pdata[0])->x == 80 &&
        ((GstVideoRegionOfInterestMeta *) r->pdata[0])->y == 80 &&
        ((GstVideoRegionOfInterestMeta *) r->pdata[0])->w == 160 &&
        ((GstVideoRegionOfInterestMeta *) r->pdata[0])->h == 80);
    {
      gint id;
      fail_unless (gst_structure_get_int (s, "track-id", &id));
      fail_unless_equals_int (id, 1);
    }
    /* model (2,6)-(6,10) -> frame (20,20)-(60,60) */
    fail_unless (((GstVideoRegionOfInterestMeta *) r->pdata[1])->x == 20 &&
        ((GstVideoRegionOfInterestMeta *) r->pdata[1])->y == 20 &&
        ((GstVideoRegionOfInterestMeta *) r->pdata[1])->w == 40 &&
        ((GstVideoRegionOfInterestMeta *) r->pdata[1])->h == 40);
    g_ptr_array_unref (r);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* npuinfer running detector_seg.onnx (make-seg-model.py: constant
 * YOLOv8-seg outputs, protos 8x8) on a 320x240 frame letterboxed into
 * 32x32 (scale 10, model rows 4..28): the box model (8,12)-(24,20) is frame
 * (80,80)-(240,160); its mask is the part left of model x 16 = frame x 160
 * (the bilinear transition spans frame x 140..180), inside the box. */
GST_START_TEST (test_seg_after_npuinfer)
{
  GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu "
      "resize=letterbox model=" MODEL ("detector_seg.onnx") " ! npudetect");
  GstBuffer *in = gst_buffer_new_allocate (NULL, 320 * 240 * 3, NULL), *out,
      *mb;
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  GstMapInfo map;
  GPtrArray *r;
  gint mw, mh, x, y;

  gst_harness_set_src_caps_str (h,
      "video/x-raw,format=RGB,width=320,height=240,framerate=30/1");
  gst_buffer_memset (in, 0, 128, 320 * 240 * 3);
  r = run_one (h, in, &out);
  fail_unless_equals_int (r->len, 1);
  roi = r->pdata[0];
  fail_unless (roi->x == 80 && roi->y == 80 && roi->w == 160 && roi->h == 80,
      "roi %u,%u %ux%u", roi->x, roi->y, roi->w, roi->h);
  s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NPU_DETECTION_STRUCTURE);
  fail_unless (gst_structure_get (s, "mask", GST_TYPE_BUFFER, &mb,
          "mask-width", G_TYPE_INT, &mw, "mask-height", G_TYPE_INT, &mh, NULL));
  fail_unless (mw == 160 && mh == 80);
  fail_unless (gst_buffer_map (mb, &map, GST_MAP_READ));
  for (y = 10; y < 70; y++)
    for (x = 0; x < 160; x++) {
      gint fx = 80 + x;

      if (fx >= 100 && fx < 140)
        fail_unless_equals_int (map.data[y * 160 + x], 255);
      if (fx >= 180)
        fail_unless_equals_int (map.data[y * 160 + x], 0);
    }
  gst_buffer_unmap (mb, &map);
  gst_buffer_unref (mb);
  g_ptr_array_unref (r);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
npudetect_suite (void)
{
  Suite *s = suite_create ("npudetect");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_yolov8_letterbox);
  tcase_add_test (tc, test_geometry_from_properties);
  tcase_add_test (tc, test_nms_class_agnostic);
  tcase_add_test (tc, test_yolov5_and_ssd);
  tcase_add_test (tc, test_tracking);
  tcase_add_test (tc, test_bad_tensors);
  tcase_add_test (tc, test_yolov8_seg);
  tcase_add_test (tc, test_nan_and_thousands);
  tcase_add_test (tc, test_missing_labels_file);
  tcase_add_test (tc, test_inspect_docs);
  tcase_add_test (tc, test_after_npuinfer);
  tcase_add_test (tc, test_seg_after_npuinfer);
  return s;
}

GST_CHECK_MAIN (npudetect);
