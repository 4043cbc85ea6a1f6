/* SPDX-License-Identifier: MIT */
/*
 * test-npuoverlay.c: npuoverlay draws the ROI metas that the test attaches
 * itself (as npudetect and npuclassify would): the box outline is coloured
 * where the edges are and the inside of the box is left as it was (RGB,
 * BGRx, NV12), captions and per-class colours follow the properties, frames
 * without metas pass bit-exact, and a frame rendered to PNG through pngenc
 * (written to the build dir, read back with Cairo) has the same pixels.
 */
#include <cairo.h>

#include "npu-gst-test.h"

#define W 128
#define H 96
#define GRAY 100

static void
gray (gint x, gint y, guint8 rgb[3], gpointer user)
{
  rgb[0] = rgb[1] = rgb[2] = GRAY;
}

/* A detection ROI as npudetect attaches it. */
static void
add_detection (GstBuffer * buf, const gchar * label, gint class_id,
    gdouble conf, gint track, guint x, guint y, guint w, guint h)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_add_video_region_of_interest_meta (buf, label, x, y, w, h);

  gst_video_region_of_interest_meta_add_param (roi,
      gst_structure_new (GST_NPU_DETECTION_STRUCTURE, "label", G_TYPE_STRING,
          label, "class-id", G_TYPE_INT, class_id, "confidence", G_TYPE_DOUBLE,
          conf, "track-id", G_TYPE_INT, track, NULL));
}

/* Pixel (x, y) of an RGB or BGRx frame as r, g, b. */
static void
get_rgb (GstBuffer * buf, GstVideoFormat fmt, gint x, gint y, guint8 rgb[3])
{
  GstVideoInfo info;
  GstVideoFrame frame;
  const guint8 *p;

  gst_video_info_set_format (&info, fmt, W, H);
  fail_unless (gst_video_frame_map (&frame, &info, buf, GST_MAP_READ));
  p = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0) +
      y * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
  if (fmt == GST_VIDEO_FORMAT_RGB) {
    memcpy (rgb, p + 3 * x, 3);
  } else {
    fail_unless (fmt == GST_VIDEO_FORMAT_BGRx);
    rgb[0] = p[4 * x + 2];
    rgb[1] = p[4 * x + 1];
    rgb[2] = p[4 * x];
  }
  gst_video_frame_unmap (&frame);
}

#define ASSERT_RGB(px, r, g, b, what) \
  fail_unless ((px)[0] == (r) && (px)[1] == (g) && (px)[2] == (b), \
      "%s: got %d,%d,%d, want %d,%d,%d", what, (px)[0], (px)[1], (px)[2], \
      r, g, b)

static GstHarness *
overlay_harness (const gchar * format, const gchar * props)
{
  gchar *desc = g_strdup_printf ("npuoverlay %s", props);
  GstHarness *h = gst_harness_new_parse (desc);
  gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,"
      "framerate=30/1", format, W, H);

  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  g_free (desc);
  return h;
}

/* Box (32,32) 48x32 in red, line width 4: the edges (columns 30..33 and
 * 78..81, rows 30..33 and 62..65) are red, the inside and outside gray. */
static void
check_box_edges (GstVideoFormat fmt, const gchar * format)
{
  GstHarness *h = overlay_harness (format,
      "color=0xffff0000 line-width=4 show-labels=false show-scores=false "
      "show-track-ids=false");
  GstBuffer *in = make_frame (fmt, W, H, gray, NULL), *out;
  guint8 px[3];
  static const gint edges[][2] = {
    {32, 48}, {30, 48}, {33, 40}, {80, 48}, {78, 40}, {81, 56},
    {56, 32}, {56, 30}, {56, 64}, {40, 65}, {32, 32}, {80, 64},
  };
  static const gint untouched[][2] = {
    {56, 48}, {35, 35}, {76, 60}, {28, 48}, {83, 48}, {56, 28}, {56, 67},
    {0, 0}, {W - 1, H - 1}, {5, 25},
  };
  guint i;

  add_detection (in, "cat", 1, 0.9, 3, 32, 32, 48, 32);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  for (i = 0; i < G_N_ELEMENTS (edges); i++) {
    gchar *what = g_strdup_printf ("%s edge (%d,%d)", format, edges[i][0],
        edges[i][1]);

    get_rgb (out, fmt, edges[i][0], edges[i][1], px);
    ASSERT_RGB (px, 255, 0, 0, what);
    g_free (what);
  }
  for (i = 0; i < G_N_ELEMENTS (untouched); i++) {
    gchar *what = g_strdup_printf ("%s untouched (%d,%d)", format,
        untouched[i][0], untouched[i][1]);

    get_rgb (out, fmt, untouched[i][0], untouched[i][1], px);
    ASSERT_RGB (px, GRAY, GRAY, GRAY, what);
    g_free (what);
  }
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_START_TEST (test_box_edges_rgb)
{
  check_box_edges (GST_VIDEO_FORMAT_RGB, "RGB");
}

GST_END_TEST;

GST_START_TEST (test_box_edges_bgrx)
{
  check_box_edges (GST_VIDEO_FORMAT_BGRx, "BGRx");
}

GST_END_TEST;

/* NV12: luma of the edge is BT.601 red (82), chroma red's (90, 240);
 * inside the box luma and chroma stay as they were. */
GST_START_TEST (test_box_edges_nv12)
{
  GstHarness *h = overlay_harness ("NV12",
      "color=0xffff0000 line-width=4 show-labels=false");
  GstVideoInfo info;
  GstVideoFrame frame;
  GstBuffer *in, *out;
  const guint8 *y, *uv;
  gint ys, uvs;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, W, H);
  in = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_memset (in, 0, 128, GST_VIDEO_INFO_SIZE (&info));
  add_detection (in, "cat", 1, 0.9, -1, 32, 32, 48, 32);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gst_video_frame_map (&frame, &info, out, GST_MAP_READ));
  y = GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);
  uv = GST_VIDEO_FRAME_PLANE_DATA (&frame, 1);
  ys = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
  uvs = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 1);
  fail_unless_equals_int (y[48 * ys + 32], 82);
  fail_unless_equals_int (uv[24 * uvs + 2 * 16], 90);
  fail_unless_equals_int (uv[24 * uvs + 2 * 16 + 1], 240);
  fail_unless_equals_int (y[48 * ys + 56], 128);
  fail_unless_equals_int (uv[24 * uvs + 2 * 28], 128);
  fail_unless_equals_int (uv[24 * uvs + 2 * 28 + 1], 128);
  gst_video_frame_unmap (&frame);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The caption sits on a band of the box colour right above the box: with
 * any of label, score or track id shown the band is there, with none of
 * them it is not. */
/* A YOLOv8-seg mask (npudetect's "mask" field, the ROI's size): the box
 * (32,32) 48x32 in red, its mask the left 24 columns. With mask-alpha=0.5
 * the masked inside is half red over the gray, the unmasked inside stays
 * gray; mask-alpha=0, or a mask whose size is not the ROI's, fills
 * nothing. */
static void
add_masked_detection (GstBuffer * buf, gint mw, gint mh)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_add_video_region_of_interest_meta (buf, "cat", 32, 32, 48,
      32);
  guint8 *m = g_malloc0 ((gsize) mw * mh);
  GstBuffer *mb;
  gint x, y;

  for (y = 0; y < mh; y++)
    for (x = 0; x < mw / 2; x++)
      m[y * mw + x] = 255;
  mb = gst_buffer_new_wrapped (m, (gsize) mw * mh);
  gst_video_region_of_interest_meta_add_param (roi,
      gst_structure_new (GST_NPU_DETECTION_STRUCTURE, "label", G_TYPE_STRING,
          "cat", "class-id", G_TYPE_INT, 1, "confidence", G_TYPE_DOUBLE, 0.9,
          "track-id", G_TYPE_INT, -1, "mask", GST_TYPE_BUFFER, mb,
          "mask-width", G_TYPE_INT, mw, "mask-height", G_TYPE_INT, mh, NULL));
  gst_buffer_unref (mb);
}

static gboolean
near_rgb (const guint8 px[3], gint r, gint g, gint b)
{
  return ABS (px[0] - r) <= 2 && ABS (px[1] - g) <= 2 && ABS (px[2] - b) <= 2;
}

GST_START_TEST (test_mask_fill)
{
  static const gchar *props[] = { "mask-alpha=0.5", "mask-alpha=0",
    "mask-alpha=0.5"
  };
  guint k;

  for (k = 0; k < G_N_ELEMENTS (props); k++) {
    gchar *p = g_strdup_printf ("color=0xffff0000 line-width=2 "
        "show-labels=false show-scores=false %s", props[k]);
    GstHarness *h = overlay_harness ("RGB", p);
    GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL), *out;
    gint half = (GRAY + 1) / 2, filled = k == 0;
    guint8 px[3];
    static const gint in_mask[][2] = { {36, 36}, {44, 48}, {54, 60} };
    static const gint out_mask[][2] = { {58, 36}, {70, 48}, {77, 60} };
    guint i;

    /* k == 2: a mask of the wrong size is ignored */
    add_masked_detection (in, k == 2 ? 40 : 48, 32);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    out = gst_harness_pull (h);
    for (i = 0; i < G_N_ELEMENTS (in_mask); i++) {
      get_rgb (out, GST_VIDEO_FORMAT_RGB, in_mask[i][0], in_mask[i][1], px);
      if (filled)
        fail_unless (near_rgb (px, half + 128, half, half),
            "%s: masked (%d,%d): %d,%d,%d, want ~%d,%d,%d", props[k],
            in_mask[i][0], in_mask[i][1], px[0], px[1], px[2], half + 128,
            half, half);
      else
        ASSERT_RGB (px, GRAY, GRAY, GRAY, "no fill");
    }
    for (i = 0; i < G_N_ELEMENTS (out_mask); i++) {
      get_rgb (out, GST_VIDEO_FORMAT_RGB, out_mask[i][0], out_mask[i][1], px);
      ASSERT_RGB (px, GRAY, GRAY, GRAY, "unmasked inside");
    }
    /* the box edge is still drawn over the fill */
    get_rgb (out, GST_VIDEO_FORMAT_RGB, 32, 48, px);
    ASSERT_RGB (px, 255, 0, 0, "edge");
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_free (p);
  }
}

GST_END_TEST;

/* The whole chain: npuinfer running detector_seg.onnx (make-seg-model.py)
 * ! npudetect ! npuoverlay on a gray 320x240 frame: the object's mask (the
 * left part of the box (80,80)-(240,160), left of frame x ~160) is half
 * green over the gray, the rest of the box inside untouched. */
GST_START_TEST (test_seg_pipeline)
{
  GstHarness *h = gst_harness_new_parse ("npuinfer backend=cpu "
      "resize=letterbox model=" TEST_MODELS_DIR "/detector_seg.onnx ! "
      "npudetect ! npuoverlay color=0xff00ff00 mask-alpha=0.5 line-width=2 "
      "show-labels=false show-scores=false");
  GstBuffer *in = gst_buffer_new_allocate (NULL, 320 * 240 * 3, NULL), *out;
  GstMapInfo map;
  static const gint masked[][2] = { {100, 100}, {130, 120}, {110, 140} };
  static const gint unmasked[][2] = { {200, 100}, {220, 140}, {190, 120} };
  guint i;

  gst_harness_set_src_caps_str (h,
      "video/x-raw,format=RGB,width=320,height=240,framerate=30/1");
  gst_buffer_memset (in, 0, GRAY, 320 * 240 * 3);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  for (i = 0; i < G_N_ELEMENTS (masked); i++) {
    const guint8 *p = map.data + (masked[i][1] * 320 + masked[i][0]) * 3;

    fail_unless (near_rgb (p, (GRAY + 1) / 2, (GRAY + 1) / 2 + 128,
            (GRAY + 1) / 2), "masked (%d,%d): %d,%d,%d", masked[i][0],
        masked[i][1], p[0], p[1], p[2]);
  }
  for (i = 0; i < G_N_ELEMENTS (unmasked); i++) {
    const guint8 *p = map.data + (unmasked[i][1] * 320 + unmasked[i][0]) * 3;

    ASSERT_RGB (p, GRAY, GRAY, GRAY, "unmasked inside");
  }
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_caption)
{
  static const gchar *props[] = {
    "show-labels=true show-scores=false show-track-ids=false",
    "show-labels=false show-scores=true show-track-ids=false",
    "show-labels=false show-scores=false show-track-ids=true",
    "show-labels=false show-scores=false show-track-ids=false",
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (props); i++) {
    gchar *p = g_strdup_printf ("color=0xff0000ff line-width=4 %s", props[i]);
    GstHarness *h = overlay_harness ("RGB", p);
    GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL), *out;
    guint8 px[3];

    add_detection (in, "cat", 1, 0.9, 3, 32, 40, 48, 32);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    out = gst_harness_pull (h);
    /* band: left margin of the caption, 2 rows above the outline */
    get_rgb (out, GST_VIDEO_FORMAT_RGB, 31, 36, px);
    if (i < 3)
      ASSERT_RGB (px, 0, 0, 255, p);
    else
      ASSERT_RGB (px, GRAY, GRAY, GRAY, p);
    /* the inside stays */
    get_rgb (out, GST_VIDEO_FORMAT_RGB, 56, 56, px);
    ASSERT_RGB (px, GRAY, GRAY, GRAY, p);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_free (p);
  }
}

GST_END_TEST;

/* color=0: one colour per class, the same for the same class. */
GST_START_TEST (test_class_colors)
{
  GstHarness *h = overlay_harness ("RGB", "line-width=4 show-labels=false "
      "show-scores=false show-track-ids=false");
  GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL), *out;
  guint8 a[3], b[3], c[3];

  add_detection (in, "a", 0, 0.9, -1, 10, 10, 20, 20);
  add_detection (in, "b", 1, 0.8, -1, 60, 10, 20, 20);
  add_detection (in, "a", 0, 0.7, -1, 10, 60, 20, 20);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  get_rgb (out, GST_VIDEO_FORMAT_RGB, 10, 20, a);
  get_rgb (out, GST_VIDEO_FORMAT_RGB, 60, 20, b);
  get_rgb (out, GST_VIDEO_FORMAT_RGB, 10, 70, c);
  fail_if (a[0] == GRAY && a[1] == GRAY && a[2] == GRAY);
  fail_if (memcmp (a, b, 3) == 0, "classes 0 and 1 share a colour");
  fail_unless (memcmp (a, c, 3) == 0, "class 0 has two colours");
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* npuclassify's (and npuembed's zero-shot) whole-frame ROI: a darkened
 * label list in the top-left corner, no box around the frame. */
static void
check_corner (const gchar * roi_type, const gchar * structure,
    const gchar * scores_field)
{
  GstHarness *h = overlay_harness ("RGB", "");
  GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL), *out;
  GstVideoRegionOfInterestMeta *roi;
  GValue labels = G_VALUE_INIT, confs = G_VALUE_INIT, v = G_VALUE_INIT;
  GstStructure *s;
  guint8 px[3];

  gst_value_array_init (&labels, 2);
  gst_value_array_init (&confs, 2);
  g_value_init (&v, G_TYPE_STRING);
  g_value_set_string (&v, "tabby");
  gst_value_array_append_value (&labels, &v);
  g_value_set_string (&v, "tiger");
  gst_value_array_append_value (&labels, &v);
  g_value_unset (&v);
  g_value_init (&v, G_TYPE_DOUBLE);
  g_value_set_double (&v, 0.7);
  gst_value_array_append_value (&confs, &v);
  g_value_set_double (&v, 0.2);
  gst_value_array_append_value (&confs, &v);
  g_value_unset (&v);
  s = gst_structure_new (structure, "label", G_TYPE_STRING, "tabby", NULL);
  gst_structure_take_value (s, "labels", &labels);
  gst_structure_take_value (s, scores_field, &confs);
  roi = gst_buffer_add_video_region_of_interest_meta (in, roi_type, 0, 0, W, H);
  gst_video_region_of_interest_meta_add_param (roi, s);

  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  get_rgb (out, GST_VIDEO_FORMAT_RGB, 0, 1, px);
  fail_unless (px[0] == px[1] && px[1] == px[2] && px[0] >= 38 && px[0] <= 42,
      "%s corner band %d,%d,%d", roi_type, px[0], px[1], px[2]);
  /* no outline along the frame's right and bottom edges */
  get_rgb (out, GST_VIDEO_FORMAT_RGB, W - 1, H / 2, px);
  ASSERT_RGB (px, GRAY, GRAY, GRAY, "right edge");
  get_rgb (out, GST_VIDEO_FORMAT_RGB, W / 2, H - 1, px);
  ASSERT_RGB (px, GRAY, GRAY, GRAY, "bottom edge");
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_START_TEST (test_classification_corner)
{
  check_corner (GST_NPU_CLASSIFICATION_ROI_TYPE,
      GST_NPU_CLASSIFICATION_STRUCTURE, "confidences");
  check_corner (GST_NPU_ZERO_SHOT_ROI_TYPE, GST_NPU_ZERO_SHOT_STRUCTURE,
      "scores");
}

GST_END_TEST;

/* Frames without ROI metas are not touched; boxes partly outside the frame
 * are clipped, not a crash. */
GST_START_TEST (test_no_meta_and_clipping)
{
  GstHarness *h = overlay_harness ("RGB", "");
  GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL), *out;
  GstMapInfo a, b;
  GstBuffer *ref = gst_buffer_copy_deep (in);

  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gst_buffer_map (out, &a, GST_MAP_READ));
  fail_unless (gst_buffer_map (ref, &b, GST_MAP_READ));
  fail_unless_equals_int (a.size, b.size);
  fail_unless (memcmp (a.data, b.data, a.size) == 0);
  gst_buffer_unmap (out, &a);
  gst_buffer_unmap (ref, &b);
  gst_buffer_unref (out);
  gst_buffer_unref (ref);

  in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL);
  add_detection (in, "big", 2, 0.5, 7, 100, 80, 400, 300);
  add_detection (in, "top", 3, 0.5, 8, 0, 0, W, H);
  add_detection (in, "huge", 4, 0.5, 9, G_MAXUINT - 10, 5, G_MAXUINT, 10);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* npuoverlay ! pngenc: the PNG written to the build dir, read back with
 * Cairo, has the red outline and the untouched inside. */
GST_START_TEST (test_png)
{
  GstHarness *h = gst_harness_new_parse ("npuoverlay color=0xffff0000 "
      "line-width=4 ! pngenc");
  GstBuffer *in = make_frame (GST_VIDEO_FORMAT_RGB, W, H, gray, NULL), *out;
  const gchar *path = TEST_BUILD_DIR "/npuoverlay-test.png";
  cairo_surface_t *png;
  GstMapInfo map;
  const guint8 *data;
  gint stride;
  guint32 edge, inside;

  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=128,"
      "height=96,framerate=30/1");
  add_detection (in, "cat", 1, 0.9, 3, 32, 32, 48, 32);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless (g_file_set_contents (path, (const gchar *) map.data, map.size,
          NULL));
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  png = cairo_image_surface_create_from_png (path);
  fail_unless_equals_int (cairo_surface_status (png), CAIRO_STATUS_SUCCESS);
  fail_unless_equals_int (cairo_image_surface_get_width (png), W);
  fail_unless_equals_int (cairo_image_surface_get_height (png), H);
  data = cairo_image_surface_get_data (png);
  stride = cairo_image_surface_get_stride (png);
  edge = *(const guint32 *) (data + 48 * stride + 4 * 32) & 0xffffff;
  inside = *(const guint32 *) (data + 48 * stride + 4 * 56) & 0xffffff;
  fail_unless_equals_int (edge, 0xff0000);
  fail_unless_equals_int (inside, GRAY * 0x010101);
  cairo_surface_destroy (png);
}

GST_END_TEST;

/* gst-inspect documentation: the properties have blurbs. */
GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("npuoverlay", NULL);
  static const gchar *names[] = { "line-width", "font", "show-labels",
    "show-scores", "show-track-ids", "color", NULL
  };
  gchar *font;

  fail_unless (e != NULL);
  check_property_blurbs (e, names);
  g_object_set (e, "font", "Monospace Bold 14", NULL);
  g_object_get (e, "font", &font, NULL);
  fail_unless_equals_string (font, "Monospace Bold 14");
  g_free (font);
  gst_object_unref (e);
}

GST_END_TEST;

static Suite *
npuoverlay_suite (void)
{
  Suite *s = suite_create ("npuoverlay");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_box_edges_rgb);
  tcase_add_test (tc, test_box_edges_bgrx);
  tcase_add_test (tc, test_box_edges_nv12);
  tcase_add_test (tc, test_caption);
  tcase_add_test (tc, test_mask_fill);
  tcase_add_test (tc, test_seg_pipeline);
  tcase_add_test (tc, test_class_colors);
  tcase_add_test (tc, test_classification_corner);
  tcase_add_test (tc, test_no_meta_and_clipping);
  tcase_add_test (tc, test_png);
  tcase_add_test (tc, test_properties);
  return s;
}

GST_CHECK_MAIN (npuoverlay);
