/* SPDX-License-Identifier: MIT */
/*
 * gstnpuoverlay.c: npuoverlay, an in-place video filter that draws every
 * GstVideoRegionOfInterestMeta of a frame: the box, its label, score and
 * track id (npudetect's "npu-detection" parameters), and npuclassify's
 * top-k labels in the top-left corner. Drawing is done with Cairo and Pango
 * into a transparent ARGB32 surface of the frame's size, then blended into
 * the frame (any packed RGB layout, NV12 or I420) only where something was
 * drawn, so frames without ROI metas cost nothing and frames with a few
 * boxes cost the boxes' area.
 */
/**
 * SECTION:element-npuoverlay
 * @title: npuoverlay
 * @short_description: draws detections and classifications into the video
 *
 * npuoverlay draws, for every #GstVideoRegionOfInterestMeta on a frame, the
 * rectangle and a caption with the label (the parameter structure
 * "npu-detection" that npudetect adds, or else the meta's roi_type), the
 * confidence and the track id (when it is not -1). The whole-frame meta of
 * type "npu-classification" that npuclassify attaches, and the
 * "npu-zero-shot" one of npuembed's zero-shot labels, are drawn as a list of
 * labels and scores in the top-left corner instead of as a box.
 *
 * Colours: by default each class gets its own colour (a hue picked by a hash
 * of the class id; metas without a class id use a hash of their roi_type);
 * #GstNpuOverlay:color sets one fixed colour for all boxes. The caption is
 * drawn on a band of the box colour, above the box (inside it when the box
 * touches the top of the frame), in black or white, whichever contrasts.
 *
 * Segmentation masks (npudetect with a YOLOv8-seg model: the `mask`,
 * `mask-width` and `mask-height` fields of "npu-detection", covering the
 * ROI rectangle) are filled in the box colour with #GstNpuOverlay:mask-alpha
 * opacity under the box and caption.
 *
 * Formats: RGB, BGR, RGBA, BGRA, ARGB, ABGR, RGBx, BGRx, xRGB, xBGR, NV12 and
 * I420 (colours converted with BT.601 limited-range coefficients; chroma
 * takes the overlay at the top-left pixel of each chroma sample). Frames
 * without ROI metas pass untouched.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=30 ! \
 *     npuinfer model=yolov8n.npub resize=letterbox ! \
 *     npudetect labels=coco.txt tracking=true ! npuoverlay ! \
 *     videoconvert ! autovideosink
 * ]| Shows the detections with their labels, scores and track ids.
 * |[
 * gst-play-1.0 --videosink=autovideosink \
 *     --video-filter="npuinfer model=yolov8n.npub ! npudetect ! npuoverlay" \
 *     movie.mp4
 * ]| playbin's video-filter: any player shows the detections.
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include <cairo.h>
#include <pango/pangocairo.h>
#include <gst/video/video.h>

#include "gstnpumeta.h"
#include "gstnpuoverlay.h"
#include "gstnpuprops.h"

GST_DEBUG_CATEGORY_STATIC (gst_npu_overlay_debug);
#define GST_CAT_DEFAULT gst_npu_overlay_debug

#define DEFAULT_PROP_LINE_WIDTH 2.0
#define DEFAULT_PROP_FONT "Sans 10"
#define DEFAULT_PROP_SHOW_LABELS TRUE
#define DEFAULT_PROP_SHOW_SCORES TRUE
#define DEFAULT_PROP_SHOW_TRACK_IDS TRUE
#define DEFAULT_PROP_COLOR 0
#define DEFAULT_PROP_MASK_ALPHA 0.4

enum
{
  PROP_0,
  PROP_LINE_WIDTH,
  PROP_FONT,
  PROP_SHOW_LABELS,
  PROP_SHOW_SCORES,
  PROP_SHOW_TRACK_IDS,
  PROP_COLOR,
  PROP_MASK_ALPHA,
};

#define OVERLAY_FORMATS "{ RGB, BGR, RGBA, BGRA, ARGB, ABGR, RGBx, BGRx, " \
  "xRGB, xBGR, NV12, I420 }"

struct _GstNpuOverlay
{
  GstVideoFilter parent;

  /* properties, under the object lock */
  gdouble line_width;
  gchar *font;
  gboolean show_labels;
  gboolean show_scores;
  gboolean show_track_ids;
  guint color;
  gdouble mask_alpha;
  gboolean font_changed;

  /* streaming thread only */
  cairo_surface_t *surface;     /* transparent between frames */
  PangoFontDescription *font_desc;
};

/* A rectangle of the surface that was drawn into (x1, y1 exclusive). */
typedef struct
{
  gint x0, y0, x1, y1;
} Dirty;

G_DEFINE_TYPE (GstNpuOverlay, gst_npu_overlay, GST_TYPE_VIDEO_FILTER);
GST_ELEMENT_REGISTER_DEFINE (npuoverlay, "npuoverlay", GST_RANK_NONE,
    GST_TYPE_NPU_OVERLAY);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (OVERLAY_FORMATS)));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (OVERLAY_FORMATS)));

static void
dirty_add (Dirty * d, gdouble x0, gdouble y0, gdouble x1, gdouble y1)
{
  /* ROI metas are guint: keep the casts below in gint range */
  const gdouble lim = 1 << 24;
  gint ix0 = (gint) floor (CLAMP (x0, -lim, lim)) - 1;
  gint iy0 = (gint) floor (CLAMP (y0, -lim, lim)) - 1;
  gint ix1 = (gint) ceil (CLAMP (x1, -lim, lim)) + 1;
  gint iy1 = (gint) ceil (CLAMP (y1, -lim, lim)) + 1;

  if (d->x1 <= d->x0 || d->y1 <= d->y0) {
    d->x0 = ix0;
    d->y0 = iy0;
    d->x1 = ix1;
    d->y1 = iy1;
    return;
  }
  d->x0 = MIN (d->x0, ix0);
  d->y0 = MIN (d->y0, iy0);
  d->x1 = MAX (d->x1, ix1);
  d->y1 = MAX (d->y1, iy1);
}

/* Fills the object's mask (npudetect's "mask": mask-width x mask-height
 * bytes covering the ROI rectangle, 255 inside) translucently; nothing when
 * the structure has no mask or its size does not match the ROI. */
static void
fill_mask (cairo_t * cr, const GstStructure * s,
    const GstVideoRegionOfInterestMeta * roi, const gdouble rgba[4],
    gdouble alpha, Dirty * dirty)
{
  GstBuffer *mb = NULL;
  GstMapInfo map;
  gint mw = 0, mh = 0, stride, y;
  cairo_surface_t *a8;
  guint8 *dst;

  if (!s || alpha <= 0.0 || !gst_structure_get (s, "mask", GST_TYPE_BUFFER,
          &mb, "mask-width", G_TYPE_INT, &mw, "mask-height", G_TYPE_INT, &mh,
          NULL))
    return;
  if (mw <= 0 || mh <= 0 || (guint) mw != roi->w || (guint) mh != roi->h
      || !gst_buffer_map (mb, &map, GST_MAP_READ)) {
    GST_DEBUG ("mask %dx%d does not fit the ROI %ux%u", mw, mh, roi->w, roi->h);
    gst_buffer_unref (mb);
    return;
  }
  if (map.size >= (gsize) mw * mh) {
    a8 = cairo_image_surface_create (CAIRO_FORMAT_A8, mw, mh);
    if (cairo_surface_status (a8) == CAIRO_STATUS_SUCCESS) {
      stride = cairo_image_surface_get_stride (a8);
      dst = cairo_image_surface_get_data (a8);
      cairo_surface_flush (a8);
      for (y = 0; y < mh; y++)
        memcpy (dst + (gsize) y * stride, map.data + (gsize) y * mw, mw);
      cairo_surface_mark_dirty (a8);
      cairo_set_source_rgba (cr, rgba[0], rgba[1], rgba[2], rgba[3] * alpha);
      cairo_mask_surface (cr, a8, roi->x, roi->y);
      dirty_add (dirty, roi->x, roi->y, roi->x + mw, roi->y + mh);
    }
    cairo_surface_destroy (a8);
  }
  gst_buffer_unmap (mb, &map);
  gst_buffer_unref (mb);
}

/* The colour of class @id: a hue from a multiplicative hash, full value. */
static void
class_color (guint id, gdouble rgb[3])
{
  guint h = (id * 2654435761u) >> 16;
  gdouble hue = (h % 360) / 60.0, s = 0.85, f, p, q, t;
  gint i = (gint) hue;

  f = hue - i;
  p = 1.0 - s;
  q = 1.0 - s * f;
  t = 1.0 - s * (1.0 - f);
  switch (i) {
    case 0:
      rgb[0] = 1.0, rgb[1] = t, rgb[2] = p;
      break;
    case 1:
      rgb[0] = q, rgb[1] = 1.0, rgb[2] = p;
      break;
    case 2:
      rgb[0] = p, rgb[1] = 1.0, rgb[2] = t;
      break;
    case 3:
      rgb[0] = p, rgb[1] = q, rgb[2] = 1.0;
      break;
    case 4:
      rgb[0] = t, rgb[1] = p, rgb[2] = 1.0;
      break;
    default:
      rgb[0] = 1.0, rgb[1] = p, rgb[2] = q;
      break;
  }
}

/* Draws @text at (@x, @y) on a band of @bg and adds the band to @dirty. */
static void
draw_caption (cairo_t * cr, PangoLayout * layout, const gchar * text,
    gdouble x, gdouble y, const gdouble bg[4], Dirty * dirty)
{
  gint tw, th;
  gdouble lum = 0.299 * bg[0] + 0.587 * bg[1] + 0.114 * bg[2];

  pango_layout_set_text (layout, text, -1);
  pango_layout_get_pixel_size (layout, &tw, &th);
  cairo_set_source_rgba (cr, bg[0], bg[1], bg[2], bg[3]);
  cairo_rectangle (cr, x, y, tw + 4, th);
  cairo_fill (cr);
  if (lum > 0.5)
    cairo_set_source_rgb (cr, 0, 0, 0);
  else
    cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_move_to (cr, x + 2, y);
  pango_cairo_show_layout (cr, layout);
  dirty_add (dirty, x, y, x + tw + 4, y + th);
}

/* The classification list of @s ("labels" with the scores in the array
 * @scores_field, else "label" and @score_field, else @fallback) appended to
 * @out as lines. */
static void
classification_text (const GstStructure * s, const gchar * scores_field,
    const gchar * score_field, const gchar * fallback, gboolean show_scores,
    GString * out)
{
  const GValue *labels = s ? gst_structure_get_value (s, "labels") : NULL;
  const GValue *confs = s ? gst_structure_get_value (s, scores_field) : NULL;
  guint i, n;

  if (labels && GST_VALUE_HOLDS_ARRAY (labels)) {
    n = gst_value_array_get_size (labels);
    for (i = 0; i < n; i++) {
      const GValue *l = gst_value_array_get_value (labels, i);

      if (!G_VALUE_HOLDS_STRING (l))
        continue;
      if (out->len)
        g_string_append_c (out, '\n');
      g_string_append (out, g_value_get_string (l));
      if (show_scores && confs && GST_VALUE_HOLDS_ARRAY (confs) &&
          i < gst_value_array_get_size (confs)) {
        const GValue *c = gst_value_array_get_value (confs, i);

        if (G_VALUE_HOLDS_DOUBLE (c))
          g_string_append_printf (out, " %.2f", g_value_get_double (c));
      }
    }
    return;
  }
  {
    const gchar *label = s ? gst_structure_get_string (s, "label") : NULL;
    gdouble conf;

    g_string_append (out, label ? label : fallback);
    if (show_scores && s && gst_structure_get_double (s, score_field, &conf))
      g_string_append_printf (out, " %.2f", conf);
  }
}

/* Blends the premultiplied ARGB32 overlay @src over @frame within @d. */
static void
blend (GstVideoFrame * frame, cairo_surface_t * src, const Dirty * d)
{
  const GstVideoFormatInfo *finfo = frame->info.finfo;
  const guint8 *sdata = cairo_image_surface_get_data (src);
  gint sstride = cairo_image_surface_get_stride (src);
  gint x, y, c;

  if (GST_VIDEO_FORMAT_INFO_IS_RGB (finfo)) {
    gboolean alpha = GST_VIDEO_FORMAT_INFO_HAS_ALPHA (finfo);

    for (y = d->y0; y < d->y1; y++) {
      const guint32 *srow = (const guint32 *) (sdata + y * sstride);
      guint8 *comp[4];
      gint ps[4];

      for (c = 0; c < (alpha ? 4 : 3); c++) {
        comp[c] = (guint8 *) GST_VIDEO_FRAME_COMP_DATA (frame, c) +
            y * GST_VIDEO_FRAME_COMP_STRIDE (frame, c);
        ps[c] = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, c);
      }
      for (x = d->x0; x < d->x1; x++) {
        guint32 p = srow[x];
        guint a = p >> 24, inv = 255 - a;
        guint v[3] = { (p >> 16) & 255, (p >> 8) & 255, p & 255 };

        if (a == 0)
          continue;
        for (c = 0; c < 3; c++) {
          guint8 *dst = comp[c] + x * ps[c];

          *dst = v[c] + (*dst * inv + 127) / 255;
        }
        if (alpha) {
          guint8 *dst = comp[3] + x * ps[3];

          *dst = a + (*dst * inv + 127) / 255;
        }
      }
    }
    return;
  }

  /* NV12 / I420: luma per pixel, chroma per (subsampled) sample. */
  for (c = 0; c < 3; c++) {
    gint ws = GST_VIDEO_FORMAT_INFO_W_SUB (finfo, c);
    gint hs = GST_VIDEO_FORMAT_INFO_H_SUB (finfo, c);
    gint cy0 = d->y0 >> hs, cy1 = (d->y1 + (1 << hs) - 1) >> hs;
    gint cx0 = d->x0 >> ws, cx1 = (d->x1 + (1 << ws) - 1) >> ws;
    gint cw = GST_VIDEO_FRAME_COMP_WIDTH (frame, c);
    gint ch = GST_VIDEO_FRAME_COMP_HEIGHT (frame, c);
    gint ps = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, c);

    cx1 = MIN (cx1, cw);
    cy1 = MIN (cy1, ch);
    for (y = cy0; y < cy1; y++) {
      const guint32 *srow = (const guint32 *) (sdata + (y << hs) * sstride);
      guint8 *row = (guint8 *) GST_VIDEO_FRAME_COMP_DATA (frame, c) +
          y * GST_VIDEO_FRAME_COMP_STRIDE (frame, c);

      for (x = cx0; x < cx1; x++) {
        guint32 p = srow[x << ws];
        guint a = p >> 24;
        gint r, g, b, v;
        guint8 *dst = row + x * ps;

        if (a == 0)
          continue;
        /* un-premultiply */
        r = (((p >> 16) & 255) * 255 + a / 2) / a;
        g = (((p >> 8) & 255) * 255 + a / 2) / a;
        b = ((p & 255) * 255 + a / 2) / a;
        if (c == 0)
          v = 16 + ((66 * r + 129 * g + 25 * b + 128) >> 8);
        else if (c == 1)
          v = 128 + ((-38 * r - 74 * g + 112 * b + 128) >> 8);
        else
          v = 128 + ((112 * r - 94 * g - 18 * b + 128) >> 8);
        v = CLAMP (v, 0, 255);
        *dst = (v * a + *dst * (255 - a) + 127) / 255;
      }
    }
  }
}

static GstFlowReturn
gst_npu_overlay_transform_frame_ip (GstVideoFilter * filter,
    GstVideoFrame * frame)
{
  GstNpuOverlay *self = GST_NPU_OVERLAY (filter);
  GQuark classification_q =
      g_quark_from_static_string (GST_NPU_CLASSIFICATION_ROI_TYPE);
  GQuark zero_shot_q = g_quark_from_static_string (GST_NPU_ZERO_SHOT_ROI_TYPE);
  gpointer state = NULL;
  GstMeta *meta;
  cairo_t *cr;
  PangoLayout *layout;
  GString *text, *corner;
  Dirty dirty = { 0, 0, 0, 0 };
  gdouble line_width;
  gboolean show_labels, show_scores, show_track_ids;
  guint color;
  gdouble mask_alpha;
  gint w = GST_VIDEO_FRAME_WIDTH (frame), h = GST_VIDEO_FRAME_HEIGHT (frame);

  if (!gst_buffer_get_meta (frame->buffer,
          GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    return GST_FLOW_OK;
  if (!self->surface)
    return GST_FLOW_NOT_NEGOTIATED;

  GST_OBJECT_LOCK (self);
  line_width = self->line_width;
  show_labels = self->show_labels;
  show_scores = self->show_scores;
  show_track_ids = self->show_track_ids;
  color = self->color;
  mask_alpha = self->mask_alpha;
  if (self->font_changed || !self->font_desc) {
    if (self->font_desc)
      pango_font_description_free (self->font_desc);
    self->font_desc = pango_font_description_from_string (self->font);
    self->font_changed = FALSE;
  }
  GST_OBJECT_UNLOCK (self);

  cr = cairo_create (self->surface);
  layout = pango_cairo_create_layout (cr);
  pango_layout_set_font_description (layout, self->font_desc);
  cairo_set_line_width (cr, line_width);
  text = g_string_new (NULL);
  corner = g_string_new (NULL);

  while ((meta = gst_buffer_iterate_meta_filtered (frame->buffer, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) meta;
    GstStructure *s;
    const gchar *type = g_quark_to_string (roi->roi_type);
    const gchar *label;
    gint class_id, track_id = -1;
    gdouble conf, rgba[4], x, y, bw, bh;
    gboolean has_conf;

    if (roi->roi_type == classification_q) {
      if (show_labels || show_scores)
        classification_text (gst_video_region_of_interest_meta_get_param
            (roi, GST_NPU_CLASSIFICATION_STRUCTURE), "confidences",
            "confidence", type, show_scores, corner);
      continue;
    }
    if (roi->roi_type == zero_shot_q) {
      if (show_labels || show_scores)
        classification_text (gst_video_region_of_interest_meta_get_param
            (roi, GST_NPU_ZERO_SHOT_STRUCTURE), "scores", "score", type,
            show_scores, corner);
      continue;
    }

    s = gst_video_region_of_interest_meta_get_param (roi,
        GST_NPU_DETECTION_STRUCTURE);
    label = s ? gst_structure_get_string (s, "label") : NULL;
    if (!label)
      label = type ? type : "";
    if (!s || !gst_structure_get_int (s, "class-id", &class_id))
      class_id = (gint) g_str_hash (label);
    has_conf = s && gst_structure_get_double (s, "confidence", &conf);
    if (s)
      gst_structure_get_int (s, "track-id", &track_id);

    if (color >> 24) {
      rgba[0] = ((color >> 16) & 255) / 255.0;
      rgba[1] = ((color >> 8) & 255) / 255.0;
      rgba[2] = (color & 255) / 255.0;
      rgba[3] = (color >> 24) / 255.0;
    } else {
      class_color ((guint) class_id, rgba);
      rgba[3] = 1.0;
    }

    fill_mask (cr, s, roi, rgba, mask_alpha, &dirty);

    x = roi->x;
    y = roi->y;
    bw = roi->w;
    bh = roi->h;
    cairo_set_source_rgba (cr, rgba[0], rgba[1], rgba[2], rgba[3]);
    cairo_rectangle (cr, x, y, bw, bh);
    cairo_stroke (cr);
    dirty_add (&dirty, x - line_width, y - line_width, x + bw + line_width,
        y + bh + line_width);

    g_string_truncate (text, 0);
    if (show_labels)
      g_string_append (text, label);
    if (show_scores && has_conf)
      g_string_append_printf (text, "%s%.2f", text->len ? " " : "", conf);
    if (show_track_ids && track_id >= 0)
      g_string_append_printf (text, "%s#%d", text->len ? " " : "", track_id);
    if (text->len) {
      gint th;
      gdouble ty;

      pango_layout_set_text (layout, text->str, -1);
      pango_layout_get_pixel_size (layout, NULL, &th);
      ty = y - line_width / 2 - th;
      if (ty < 0)
        ty = y + line_width / 2;
      draw_caption (cr, layout, text->str, x - line_width / 2, ty, rgba,
          &dirty);
    }
  }

  if (corner->len) {
    static const gdouble bg[4] = { 0, 0, 0, 0.6 };

    draw_caption (cr, layout, corner->str, 0, 0, bg, &dirty);
  }

  g_string_free (text, TRUE);
  g_string_free (corner, TRUE);
  g_object_unref (layout);
  cairo_destroy (cr);
  cairo_surface_flush (self->surface);

  dirty.x0 = CLAMP (dirty.x0, 0, w);
  dirty.x1 = CLAMP (dirty.x1, 0, w);
  dirty.y0 = CLAMP (dirty.y0, 0, h);
  dirty.y1 = CLAMP (dirty.y1, 0, h);
  if (dirty.x1 > dirty.x0 && dirty.y1 > dirty.y0) {
    guint8 *data = cairo_image_surface_get_data (self->surface);
    gint stride = cairo_image_surface_get_stride (self->surface), yy;

    blend (frame, self->surface, &dirty);
    /* leave the surface transparent for the next frame */
    for (yy = dirty.y0; yy < dirty.y1; yy++)
      memset (data + yy * stride + 4 * dirty.x0, 0, 4 * (dirty.x1 - dirty.x0));
    cairo_surface_mark_dirty (self->surface);
  }
  return GST_FLOW_OK;
}

static gboolean
gst_npu_overlay_set_info (GstVideoFilter * filter, GstCaps * incaps,
    GstVideoInfo * in_info, GstCaps * outcaps, GstVideoInfo * out_info)
{
  GstNpuOverlay *self = GST_NPU_OVERLAY (filter);
  gint w = GST_VIDEO_INFO_WIDTH (in_info), h = GST_VIDEO_INFO_HEIGHT (in_info);

  if (self->surface) {
    cairo_surface_destroy (self->surface);
    self->surface = NULL;
  }
  self->surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, w, h);
  if (cairo_surface_status (self->surface) != CAIRO_STATUS_SUCCESS) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, (NULL),
        ("cannot make a %dx%d drawing surface: %s", w, h,
            cairo_status_to_string (cairo_surface_status (self->surface))));
    cairo_surface_destroy (self->surface);
    self->surface = NULL;
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_npu_overlay_stop (GstBaseTransform * trans)
{
  GstNpuOverlay *self = GST_NPU_OVERLAY (trans);

  if (self->surface) {
    cairo_surface_destroy (self->surface);
    self->surface = NULL;
  }
  return TRUE;
}

static const GstNpuField gst_npu_overlay_fields[] = {
  GST_NPU_FIELD (PROP_LINE_WIDTH, DOUBLE, GstNpuOverlay, line_width),
  GST_NPU_FIELD (PROP_SHOW_LABELS, BOOLEAN, GstNpuOverlay, show_labels),
  GST_NPU_FIELD (PROP_SHOW_SCORES, BOOLEAN, GstNpuOverlay, show_scores),
  GST_NPU_FIELD (PROP_SHOW_TRACK_IDS, BOOLEAN, GstNpuOverlay, show_track_ids),
  GST_NPU_FIELD (PROP_COLOR, UINT, GstNpuOverlay, color),
  GST_NPU_FIELD (PROP_MASK_ALPHA, DOUBLE, GstNpuOverlay, mask_alpha),
};

static void
gst_npu_overlay_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNpuOverlay *self = GST_NPU_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FONT:
      g_free (self->font);
      self->font = g_value_dup_string (value);
      if (!self->font)
        self->font = g_strdup (DEFAULT_PROP_FONT);
      self->font_changed = TRUE;
      break;
    default:
      if (!gst_npu_fields_set (self, gst_npu_overlay_fields,
              G_N_ELEMENTS (gst_npu_overlay_fields), prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_npu_overlay_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstNpuOverlay *self = GST_NPU_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FONT:
      g_value_set_string (value, self->font);
      break;
    default:
      if (!gst_npu_fields_get (self, gst_npu_overlay_fields,
              G_N_ELEMENTS (gst_npu_overlay_fields), prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_npu_overlay_finalize (GObject * object)
{
  GstNpuOverlay *self = GST_NPU_OVERLAY (object);

  if (self->surface)
    cairo_surface_destroy (self->surface);
  if (self->font_desc)
    pango_font_description_free (self->font_desc);
  g_free (self->font);
  G_OBJECT_CLASS (gst_npu_overlay_parent_class)->finalize (object);
}

static void
gst_npu_overlay_class_init (GstNpuOverlayClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING;

  GST_DEBUG_CATEGORY_INIT (gst_npu_overlay_debug, "npuoverlay", 0,
      "OpenNPU detection overlay");

  gobject_class->set_property = gst_npu_overlay_set_property;
  gobject_class->get_property = gst_npu_overlay_get_property;
  gobject_class->finalize = gst_npu_overlay_finalize;

  trans_class->stop = GST_DEBUG_FUNCPTR (gst_npu_overlay_stop);
  filter_class->set_info = GST_DEBUG_FUNCPTR (gst_npu_overlay_set_info);
  filter_class->transform_frame_ip =
      GST_DEBUG_FUNCPTR (gst_npu_overlay_transform_frame_ip);

  /**
   * GstNpuOverlay:line-width:
   *
   * Width of the box outlines in pixels, centred on the box edges.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_LINE_WIDTH,
      g_param_spec_double ("line-width", "Line width",
          "Width of the box outlines in pixels", 0.0, 100.0,
          DEFAULT_PROP_LINE_WIDTH, rw));

  /**
   * GstNpuOverlay:font:
   *
   * Pango font description of the captions, e.g. "Sans Bold 12".
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_FONT,
      g_param_spec_string ("font", "Font",
          "Pango font description of the captions", DEFAULT_PROP_FONT, rw));

  /**
   * GstNpuOverlay:show-labels:
   *
   * Draw the label of each box (and the classification labels).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_SHOW_LABELS,
      g_param_spec_boolean ("show-labels", "Show labels",
          "Draw the label of each box and the classification labels",
          DEFAULT_PROP_SHOW_LABELS, rw));

  /**
   * GstNpuOverlay:show-scores:
   *
   * Draw the confidence of each box and classification label.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_SHOW_SCORES,
      g_param_spec_boolean ("show-scores", "Show scores",
          "Draw the confidence of each box and classification label",
          DEFAULT_PROP_SHOW_SCORES, rw));

  /**
   * GstNpuOverlay:show-track-ids:
   *
   * Draw the track id of each tracked box ("#id").
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_SHOW_TRACK_IDS,
      g_param_spec_boolean ("show-track-ids", "Show track ids",
          "Draw the track id of each tracked box", DEFAULT_PROP_SHOW_TRACK_IDS,
          rw));

  /**
   * GstNpuOverlay:color:
   *
   * One colour for every box, as 0xAARRGGBB; 0 (alpha 0): a colour per
   * class, picked by a hash of the class id.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_COLOR,
      g_param_spec_uint ("color", "Color",
          "Colour of every box as 0xAARRGGBB; 0: one colour per class "
          "(hash of the class id)", 0, G_MAXUINT32, DEFAULT_PROP_COLOR, rw));

  /**
   * GstNpuOverlay:mask-alpha:
   *
   * Opacity of the segmentation mask fill (npudetect's YOLOv8-seg masks),
   * in the box colour; 0 draws no masks.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_MASK_ALPHA,
      g_param_spec_double ("mask-alpha", "Mask alpha",
          "Opacity of segmentation mask fills (0: no masks)", 0.0, 1.0,
          DEFAULT_PROP_MASK_ALPHA, rw));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "OpenNPU detection overlay", "Filter/Effect/Video",
      "Draws the regions of interest of npudetect (boxes, labels, scores, "
      "track ids) and npuclassify (top-k labels) into the video",
      "OpenNPU developers");
}

static void
gst_npu_overlay_init (GstNpuOverlay * self)
{
  self->line_width = DEFAULT_PROP_LINE_WIDTH;
  self->font = g_strdup (DEFAULT_PROP_FONT);
  self->show_labels = DEFAULT_PROP_SHOW_LABELS;
  self->show_scores = DEFAULT_PROP_SHOW_SCORES;
  self->show_track_ids = DEFAULT_PROP_SHOW_TRACK_IDS;
  self->color = DEFAULT_PROP_COLOR;
  self->mask_alpha = DEFAULT_PROP_MASK_ALPHA;
}
