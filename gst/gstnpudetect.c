/* SPDX-License-Identifier: MIT */
/*
 * gstnpudetect.c: npudetect, the object detection decoder. It runs after
 * npuinfer, reads the GstNpuTensorMeta of each frame, decodes it with
 * npu-detect-decode.c (plain C, unit tested on its own), optionally gives the
 * boxes track ids (IoU tracker) and attaches one
 * GstVideoRegionOfInterestMeta per object. The video passes through.
 */
/**
 * SECTION:element-npudetect
 * @title: npudetect
 * @short_description: decodes detector outputs into regions of interest
 *
 * npudetect reads the raw output tensors that npuinfer attaches
 * (#GstNpuTensorMeta) and turns them into object detections: one
 * #GstVideoRegionOfInterestMeta per object, in frame pixels, whose roi_type
 * is the object's label and whose parameter structure
 * "npu-detection" holds `label` (string), `class-id` (int), `confidence`
 * (double), `track-id` (int, -1 unless #GstNpuDetect:tracking is on) and
 * `model-id` (string). The video passes through unchanged; frames without
 * tensor meta (skipped by npuinfer's inference-interval or drop=pass) get no
 * detections.
 *
 * Output layouts (#GstNpuDetect:format):
 *
 * - `yolov8`: ultralytics YOLOv8 / YOLO11 export, the first output of shape
 *   [1, 4+nc, N]: box centre x, centre y, width, height in model input
 *   pixels, then one score per class (already a probability).
 * - `yolov5`: ultralytics YOLOv5 export, the first output [1, N, 5+nc]:
 *   cx, cy, w, h, objectness, class scores; confidence = objectness x class
 *   score.
 * - `ssd`: two outputs, boxes [1, N, 4] (x0, y0, x1, y1, in model input
 *   pixels, or fractions of the input when every coordinate lies within
 *   ±1.5) and scores [1, N, nc] (probabilities), in either order.
 * - `yolov8-seg`: ultralytics YOLOv8 / YOLO11 segmentation export: output0
 *   [1, 4+nc+nm, N] (as `yolov8`, then nm mask coefficients per anchor) and
 *   output1, the mask prototypes [1, nm, mh, mw] (nm = 32, 160 x 160 at a
 *   640 input), in either order. Each detection also gets its mask (below).
 * - `auto` (default): `yolov8-seg` with two outputs one of which has four
 *   dims, `ssd` with two or more outputs, else `yolov8` or `yolov5`,
 *   whichever fits the shape (the longer axis is the anchors).
 *
 * Each anchor keeps its best class. Anchors scoring below
 * #GstNpuDetect:confidence-threshold, or with a NaN or infinite value, are
 * dropped; the rest go through greedy non-maximum suppression
 * (#GstNpuDetect:iou-threshold, within each class unless
 * #GstNpuDetect:class-agnostic) and the #GstNpuDetect:max-detections best
 * are kept.
 *
 * Coordinates are mapped back to the frame with the region and model region
 * that npuinfer records in the tensor meta, so stretch, letterbox and crop
 * (npuinfer's resize property) are undone exactly as they were done. A
 * tensor meta without that region (attached by another element) needs
 * #GstNpuDetect:input-width and #GstNpuDetect:input-height, and
 * #GstNpuDetect:resize says how the frame was fitted.
 *
 * Outputs that do not have the layout of the format (wrong rank or sizes,
 * a batch other than 1, too few outputs) are a stream error naming the
 * shapes. NaN values and frames with nothing detected give no boxes.
 *
 * Masks (`yolov8-seg`): as ultralytics' process_mask, sigmoid of the
 * detection's coefficients times the prototypes, zero outside the box (at
 * the prototypes' resolution), sampled bilinearly at every frame pixel of
 * the ROI rectangle mapped into the model input (letterbox and crop undone)
 * and thresholded at 0.5. The parameter structure then also holds `mask`
 * (a #GstBuffer of `mask-width` x `mask-height` bytes, row-major, 255 inside
 * the object, 0 outside), `mask-width` and `mask-height` (the ROI's w and
 * h). npuoverlay fills it translucently.
 *
 * With #GstNpuDetect:tracking each box continues the track of the box of the
 * previous inferred frame it overlaps most (IoU at least
 * #GstNpuDetect:tracking-iou-threshold, same class unless class-agnostic);
 * the others start new tracks. A track unmatched for more than
 * #GstNpuDetect:tracking-max-age inferred frames ends. Ids start at 1.
 *
 * Built against GStreamer >= 1.24 (gstreamer-analytics-1.0), each
 * detection is also a #GstAnalyticsODMtd of a #GstAnalyticsRelationMeta
 * (type: the label) containing a #GstAnalyticsClsMtd, and with tracking a
 * related #GstAnalyticsTrackingMtd, for upstream's objectdetectionoverlay;
 * this path is not compiled by the Debian 12 (GStreamer 1.22) build.
 *
 * `GST_DEBUG=npudetect:6` logs one line per detection (label, class,
 * confidence, rectangle, track id).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=30 ! \
 *     npuinfer model=yolov8n.npub resize=letterbox ! \
 *     npudetect labels=coco.txt tracking=true ! fakesink
 * ]| Detects objects; each frame carries one region of interest per object.
 * |[
 * gst-launch-1.0 v4l2src ! videoconvert ! \
 *     npuinfer model=yolov8n-seg.onnx resize=letterbox ! \
 *     npudetect labels=coco.txt ! npuoverlay ! videoconvert ! autovideosink
 * ]| Instance segmentation: each detection also carries its mask, which
 * npuoverlay fills translucently.
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include <gst/video/video.h>

#include "gstnpuanalytics.h"
#include "gstnpudetect.h"
#include "gstnpuenums.h"
#include "gstnpulabels.h"
#include "gstnpumeta.h"
#include "gstnpupreprocess.h"
#include "gstnpuprops.h"
#include "npu-detect-decode.h"

GST_DEBUG_CATEGORY_STATIC (gst_npu_detect_debug);
#define GST_CAT_DEFAULT gst_npu_detect_debug

#define DEFAULT_PROP_FORMAT GST_NPU_DETECT_FORMAT_AUTO
#define DEFAULT_PROP_CONFIDENCE_THRESHOLD 0.25
#define DEFAULT_PROP_IOU_THRESHOLD 0.45
#define DEFAULT_PROP_MAX_DETECTIONS 100
#define DEFAULT_PROP_CLASS_AGNOSTIC FALSE
#define DEFAULT_PROP_LABELS NULL
#define DEFAULT_PROP_INPUT_WIDTH 0
#define DEFAULT_PROP_INPUT_HEIGHT 0
#define DEFAULT_PROP_RESIZE GST_NPU_RESIZE_STRETCH
#define DEFAULT_PROP_TRACKING FALSE
#define DEFAULT_PROP_TRACKING_IOU_THRESHOLD 0.3
#define DEFAULT_PROP_TRACKING_MAX_AGE 5

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_CONFIDENCE_THRESHOLD,
  PROP_IOU_THRESHOLD,
  PROP_MAX_DETECTIONS,
  PROP_CLASS_AGNOSTIC,
  PROP_LABELS,
  PROP_INPUT_WIDTH,
  PROP_INPUT_HEIGHT,
  PROP_RESIZE,
  PROP_TRACKING,
  PROP_TRACKING_IOU_THRESHOLD,
  PROP_TRACKING_MAX_AGE,
};

struct _GstNpuDetect
{
  GstBaseTransform parent;

  /* properties (object lock) */
  GstNpuDetectFormat format;
  gdouble confidence_threshold;
  gdouble iou_threshold;
  guint max_detections;
  gboolean class_agnostic;
  gchar *labels_path;
  gint input_width, input_height;
  GstNpuResizeMode resize;
  gboolean tracking;
  gdouble tracking_iou_threshold;
  guint tracking_max_age;

  /* streaming state */
  GstVideoInfo info;
  gboolean have_info;
  gchar **labels;
  guint n_labels;
  struct npu_iou_tracker tracker;
  gboolean tracker_ready;
  gboolean warned_label;
};

G_DEFINE_TYPE (GstNpuDetect, gst_npu_detect, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (npudetect, "npudetect", GST_RANK_NONE,
    GST_TYPE_NPU_DETECT);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));

GType
gst_npu_detect_format_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_DETECT_FORMAT_AUTO, "Chosen from the output shapes", "auto"},
    {GST_NPU_DETECT_FORMAT_YOLOV8,
        "YOLOv8/YOLO11 (ultralytics), [1, 4+classes, anchors]", "yolov8"},
    {GST_NPU_DETECT_FORMAT_YOLOV5,
          "YOLOv5 (ultralytics), [1, anchors, 5+classes] with objectness",
        "yolov5"},
    {GST_NPU_DETECT_FORMAT_SSD,
        "SSD style, boxes [1, N, 4] and scores [1, N, classes]", "ssd"},
    {GST_NPU_DETECT_FORMAT_YOLOV8_SEG,
        "YOLOv8/YOLO11-seg (ultralytics), [1, 4+classes+nm, anchors] and "
          "protos [1, nm, mh, mw]: boxes with masks", "yolov8-seg"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuDetectFormat", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

static gboolean
gst_npu_detect_start (GstBaseTransform * trans)
{
  GstNpuDetect *self = GST_NPU_DETECT (trans);
  gchar *path;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->labels_path);
  npu_iou_tracker_init (&self->tracker, (gfloat) self->tracking_iou_threshold,
      (gint) self->tracking_max_age, self->class_agnostic);
  GST_OBJECT_UNLOCK (self);
  self->tracker_ready = TRUE;
  self->warned_label = FALSE;

  ok = gst_npu_load_labels (self, path, &self->labels, &self->n_labels);
  g_free (path);
  return ok;
}

static gboolean
gst_npu_detect_stop (GstBaseTransform * trans)
{
  GstNpuDetect *self = GST_NPU_DETECT (trans);

  g_clear_pointer (&self->labels, g_strfreev);
  self->n_labels = 0;
  if (self->tracker_ready)
    npu_iou_tracker_clear (&self->tracker);
  self->tracker_ready = FALSE;
  self->have_info = FALSE;
  return TRUE;
}

static gboolean
gst_npu_detect_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstNpuDetect *self = GST_NPU_DETECT (trans);

  self->have_info = gst_video_info_from_caps (&self->info, incaps);
  return TRUE;
}

/* Where the model's input lies in the frame (see npu_detect_geometry). */
static gboolean
detect_geometry (GstNpuDetect * self, GstNpuTensorMeta * meta,
    struct npu_detect_geometry *g, gchar ** why)
{
  gint fw = self->have_info ? GST_VIDEO_INFO_WIDTH (&self->info) : 0;
  gint fh = self->have_info ? GST_VIDEO_INFO_HEIGHT (&self->info) : 0;
  gint iw, ih;
  GstNpuResizeMode resize;

  GST_OBJECT_LOCK (self);
  iw = self->input_width;
  ih = self->input_height;
  resize = self->resize;
  GST_OBJECT_UNLOCK (self);

  if (meta->model_region.w > 0 && meta->model_region.h > 0 &&
      meta->region.w > 0 && meta->region.h > 0) {
    g->model_x = meta->model_region.x;
    g->model_y = meta->model_region.y;
    g->model_w = meta->model_region.w;
    g->model_h = meta->model_region.h;
    g->frame_x = meta->region.x;
    g->frame_y = meta->region.y;
    g->frame_w = meta->region.w;
    g->frame_h = meta->region.h;
    /* the letterbox border is split evenly (gstnpupreprocess.c) */
    g->input_w = iw > 0 ? iw : meta->model_region.w + 2 * meta->model_region.x;
    g->input_h = ih > 0 ? ih : meta->model_region.h + 2 * meta->model_region.y;
    if (fw <= 0 || fh <= 0) {
      fw = meta->region.x + meta->region.w;
      fh = meta->region.y + meta->region.h;
    }
  } else {
    GstNpuInputConfig cfg;
    GstVideoRectangle src, dst;

    if (iw <= 0 || ih <= 0 || fw <= 0 || fh <= 0) {
      *why = g_strdup_printf ("the tensor meta does not say where the frame "
          "lies in the model input; set input-width and input-height "
          "(now %d x %d) and negotiate video caps", iw, ih);
      return FALSE;
    }
    memset (&cfg, 0, sizeof (cfg));
    cfg.width = iw;
    cfg.height = ih;
    cfg.resize = resize;
    gst_npu_input_config_geometry (&cfg, fw, fh, &src, &dst);
    g->model_x = dst.x;
    g->model_y = dst.y;
    g->model_w = dst.w;
    g->model_h = dst.h;
    g->frame_x = src.x;
    g->frame_y = src.y;
    g->frame_w = src.w;
    g->frame_h = src.h;
    g->input_w = iw;
    g->input_h = ih;
  }
  g->clip_w = fw;
  g->clip_h = fh;
  return TRUE;
}

static GstFlowReturn
gst_npu_detect_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNpuDetect *self = GST_NPU_DETECT (trans);
  GstNpuTensorMeta *meta = gst_buffer_get_npu_tensor_meta (buf);
  struct npu_detect_tensor tensors[2];
  gfloat *data[2] = { NULL, NULL };
  struct npu_detect_params p;
  struct npu_detect_geometry g;
  struct npu_detect_box *boxes = NULL;
  enum npu_detect_format used = NPU_DETECT_FORMAT_AUTO;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean tracking;
  gchar err[256] = "";
  gchar *why = NULL;
  guint n_use, i;
  gint n = 0;

  if (!meta)
    return GST_FLOW_OK;
  if (meta->num_tensors == 0) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The model has no outputs to decode."), (NULL));
    return GST_FLOW_ERROR;
  }

  GST_OBJECT_LOCK (self);
  p.format = (enum npu_detect_format) self->format;
  p.conf_threshold = (gfloat) self->confidence_threshold;
  p.iou_threshold = (gfloat) self->iou_threshold;
  p.max_detections = (gint) self->max_detections;
  p.class_agnostic = self->class_agnostic;
  tracking = self->tracking;
  GST_OBJECT_UNLOCK (self);

  if (!detect_geometry (self, meta, &g, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Cannot map the detections back to the frame."), ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }

  /* yolo: the first output; ssd: the first two; auto: all the outputs
   * (more than two is an error the decoder explains) */
  switch (p.format) {
    case NPU_DETECT_FORMAT_YOLOV8:
    case NPU_DETECT_FORMAT_YOLOV5:
      n_use = 1;
      break;
    default:
      n_use = MIN (meta->num_tensors, 2);
      if (p.format == NPU_DETECT_FORMAT_AUTO && meta->num_tensors > 2)
        n_use = meta->num_tensors;
      break;
  }
  if (n_use > 2) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Cannot decode the outputs of model %s.",
            GST_STR_NULL (meta->model_id)),
        ("the model has %u outputs; format=auto decodes one (yolo) or two "
            "(ssd, yolov8-seg); set format", meta->num_tensors));
    return GST_FLOW_ERROR;
  }
  for (i = 0; i < n_use; i++) {
    const GstNpuTensor *t = &meta->tensors[i];
    gsize numel = 0;
    guint d;

    data[i] = gst_npu_tensor_dup_float (t, &numel);
    if (!data[i]) {
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Cannot decode the outputs of model %s.",
              GST_STR_NULL (meta->model_id)),
          ("output %u (%s) has fewer bytes than its shape needs or a type "
              "that is not a number", i, g_quark_to_string (t->name)));
      ret = GST_FLOW_ERROR;
      goto done;
    }
    tensors[i].data = data[i];
    tensors[i].numel = numel;
    tensors[i].ndim = (gint) MIN (t->num_dims, NPU_DETECT_MAX_DIMS);
    for (d = 0; d < (guint) tensors[i].ndim; d++)
      tensors[i].dims[d] = t->dims[d];
  }

  boxes = g_new (struct npu_detect_box, MAX (p.max_detections, 1));
  if (npu_detect_decode (tensors, (gint) n_use, &p, &g, boxes,
          p.max_detections, &n, &used, err, sizeof (err)) != NPU_OK) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Cannot decode the outputs of model %s.",
            GST_STR_NULL (meta->model_id)), ("%s", err));
    ret = GST_FLOW_ERROR;
    goto done;
  }
  if (tracking && npu_iou_tracker_update (&self->tracker, boxes, n) != NPU_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Out of memory."),
        ("the tracker could not grow"));
    ret = GST_FLOW_ERROR;
    goto done;
  }
  GST_LOG_OBJECT (self, "%d detection(s) (format %d)", n, used);

  for (i = 0; i < (guint) n; i++) {
    const struct npu_detect_box *b = &boxes[i];
    GstVideoRegionOfInterestMeta *roi;
    GstStructure *params;
    gchar *fallback = NULL;
    const gchar *label;
    guint x0 = (guint) (b->x0 + 0.5f), y0 = (guint) (b->y0 + 0.5f);
    guint x1 = (guint) (b->x1 + 0.5f), y1 = (guint) (b->y1 + 0.5f);

    if (b->class_id >= 0 && (guint) b->class_id < self->n_labels) {
      label = self->labels[b->class_id];
    } else {
      if (self->n_labels > 0 && !self->warned_label) {
        GST_ELEMENT_WARNING (self, STREAM, DECODE,
            ("Class %d has no label.", b->class_id),
            ("the labels file has %u labels", self->n_labels));
        self->warned_label = TRUE;
      }
      label = fallback = g_strdup_printf ("class-%d", b->class_id);
    }
    roi = gst_buffer_add_video_region_of_interest_meta (buf, label, x0, y0,
        x1 > x0 ? x1 - x0 : 0, y1 > y0 ? y1 - y0 : 0);
    roi->id = (gint) i;
    GST_LOG_OBJECT (self, "frame %" GST_TIME_FORMAT " detection %u: %s "
        "(class %d) %.3f at %u,%u %ux%u track %d",
        GST_TIME_ARGS (GST_BUFFER_PTS (buf)), i, label, b->class_id,
        b->score, roi->x, roi->y, roi->w, roi->h, b->track_id);
    params = gst_structure_new (GST_NPU_DETECTION_STRUCTURE,
        "label", G_TYPE_STRING, label,
        "class-id", G_TYPE_INT, b->class_id,
        "confidence", G_TYPE_DOUBLE, (gdouble) b->score,
        "track-id", G_TYPE_INT, b->track_id,
        "model-id", G_TYPE_STRING, meta->model_id, NULL);
    if (used == NPU_DETECT_FORMAT_YOLOV8_SEG && roi->w > 0 && roi->h > 0) {
      guint8 *mask = g_malloc ((gsize) roi->w * roi->h);
      GstBuffer *mb;

      if (npu_detect_seg_mask (tensors, (gint) n_use, b, &g, (gint) roi->x,
              (gint) roi->y, (gint) roi->w, (gint) roi->h, mask, err,
              sizeof (err)) != NPU_OK) {
        g_free (mask);
        gst_structure_free (params);
        g_free (fallback);
        GST_ELEMENT_ERROR (self, STREAM, DECODE,
            ("Cannot decode the masks of model %s.",
                GST_STR_NULL (meta->model_id)), ("%s", err));
        ret = GST_FLOW_ERROR;
        goto done;
      }
      mb = gst_buffer_new_wrapped (mask, (gsize) roi->w * roi->h);
      gst_structure_set (params, "mask", GST_TYPE_BUFFER, mb,
          "mask-width", G_TYPE_INT, (gint) roi->w,
          "mask-height", G_TYPE_INT, (gint) roi->h, NULL);
      gst_buffer_unref (mb);
    }
    gst_video_region_of_interest_meta_add_param (roi, params);
    /* GStreamer >= 1.24 only (gstnpuanalytics.c); a no-op here */
    gst_npu_analytics_add_detection (buf, label, (gint) roi->x, (gint) roi->y,
        (gint) roi->w, (gint) roi->h, b->score, b->track_id,
        GST_BUFFER_PTS (buf));
    g_free (fallback);
  }

done:
  g_free (boxes);
  g_free (data[0]);
  g_free (data[1]);
  return ret;
}

static const GstNpuField gst_npu_detect_fields[] = {
  GST_NPU_FIELD (PROP_FORMAT, ENUM, GstNpuDetect, format),
  GST_NPU_FIELD (PROP_CONFIDENCE_THRESHOLD, DOUBLE, GstNpuDetect,
      confidence_threshold),
  GST_NPU_FIELD (PROP_IOU_THRESHOLD, DOUBLE, GstNpuDetect, iou_threshold),
  GST_NPU_FIELD (PROP_MAX_DETECTIONS, UINT, GstNpuDetect, max_detections),
  GST_NPU_FIELD (PROP_CLASS_AGNOSTIC, BOOLEAN, GstNpuDetect, class_agnostic),
  GST_NPU_FIELD (PROP_LABELS, STRING, GstNpuDetect, labels_path),
  GST_NPU_FIELD (PROP_INPUT_WIDTH, INT, GstNpuDetect, input_width),
  GST_NPU_FIELD (PROP_INPUT_HEIGHT, INT, GstNpuDetect, input_height),
  GST_NPU_FIELD (PROP_RESIZE, ENUM, GstNpuDetect, resize),
  GST_NPU_FIELD (PROP_TRACKING, BOOLEAN, GstNpuDetect, tracking),
  GST_NPU_FIELD (PROP_TRACKING_IOU_THRESHOLD, DOUBLE, GstNpuDetect,
      tracking_iou_threshold),
  GST_NPU_FIELD (PROP_TRACKING_MAX_AGE, UINT, GstNpuDetect, tracking_max_age),
};

static void
gst_npu_detect_finalize (GObject * object)
{
  GstNpuDetect *self = GST_NPU_DETECT (object);

  g_free (self->labels_path);
  g_strfreev (self->labels);
  if (self->tracker_ready)
    npu_iou_tracker_clear (&self->tracker);

  G_OBJECT_CLASS (gst_npu_detect_parent_class)->finalize (object);
}

static void
gst_npu_detect_class_init (GstNpuDetectClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw_ready = GST_NPU_PARAM_RW_READY;
  const GParamFlags rw_playing = GST_NPU_PARAM_RW_PLAYING;

  GST_DEBUG_CATEGORY_INIT (gst_npu_detect_debug, "npudetect", 0,
      "OpenNPU detection decoder");

  gst_npu_fields_class_init (gobject_class, gst_npu_detect_fields,
      G_N_ELEMENTS (gst_npu_detect_fields));
  gobject_class->finalize = gst_npu_detect_finalize;

  trans_class->start = GST_DEBUG_FUNCPTR (gst_npu_detect_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_npu_detect_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_npu_detect_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_npu_detect_transform_ip);
  trans_class->passthrough_on_same_caps = FALSE;

  /**
   * GstNpuDetect:format:
   *
   * Layout of the detector's outputs.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "Layout of the detector's outputs", GST_TYPE_NPU_DETECT_FORMAT,
          DEFAULT_PROP_FORMAT, rw_playing));

  /**
   * GstNpuDetect:confidence-threshold:
   *
   * Detections scoring below this are dropped.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_CONFIDENCE_THRESHOLD,
      g_param_spec_double ("confidence-threshold", "Confidence threshold",
          "Detections scoring below this are dropped", 0.0, 1.0,
          DEFAULT_PROP_CONFIDENCE_THRESHOLD, rw_playing));

  /**
   * GstNpuDetect:iou-threshold:
   *
   * Non-maximum suppression: a box whose intersection over union with a
   * better box (of the same class unless #GstNpuDetect:class-agnostic)
   * exceeds this is dropped.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_IOU_THRESHOLD,
      g_param_spec_double ("iou-threshold", "IoU threshold",
          "NMS drops a box overlapping a better one by more than this IoU",
          0.0, 1.0, DEFAULT_PROP_IOU_THRESHOLD, rw_playing));

  /**
   * GstNpuDetect:max-detections:
   *
   * At most this many detections per frame, the best ones.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_MAX_DETECTIONS,
      g_param_spec_uint ("max-detections", "Max detections",
          "At most this many detections per frame (the best)", 1, 10000,
          DEFAULT_PROP_MAX_DETECTIONS, rw_playing));

  /**
   * GstNpuDetect:class-agnostic:
   *
   * Non-maximum suppression across classes (else within each class), and
   * tracks that may change class.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_CLASS_AGNOSTIC,
      g_param_spec_boolean ("class-agnostic", "Class agnostic",
          "NMS across classes instead of within each class",
          DEFAULT_PROP_CLASS_AGNOSTIC, rw_playing));

  /**
   * GstNpuDetect:labels:
   *
   * Text file with one label per line, line i naming class i. Without it
   * (or for a class past its end) the label is "class-N".
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "Text file, one label per line (line i names class i)",
          DEFAULT_PROP_LABELS, rw_ready));

  /**
   * GstNpuDetect:input-width:
   *
   * Width of the model input, for tensor metas that do not record where the
   * frame lies in the model input (npuinfer's do); 0: from the meta. With
   * the meta's region it only sets the size that SSD's fractional boxes
   * refer to.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_INPUT_WIDTH,
      g_param_spec_int ("input-width", "Input width",
          "Model input width (0: from the tensor meta)", 0, 65536,
          DEFAULT_PROP_INPUT_WIDTH, rw_playing));

  /**
   * GstNpuDetect:input-height:
   *
   * Height of the model input; see #GstNpuDetect:input-width.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_INPUT_HEIGHT,
      g_param_spec_int ("input-height", "Input height",
          "Model input height (0: from the tensor meta)", 0, 65536,
          DEFAULT_PROP_INPUT_HEIGHT, rw_playing));

  /**
   * GstNpuDetect:resize:
   *
   * How the frame was fitted to the model input, used only with
   * #GstNpuDetect:input-width and #GstNpuDetect:input-height for tensor
   * metas without a region (the same arithmetic as npuinfer's resize).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_RESIZE,
      g_param_spec_enum ("resize", "Resize",
          "How the frame was fitted to the model input (only for tensor "
          "metas without a region)", GST_TYPE_NPU_RESIZE_MODE,
          DEFAULT_PROP_RESIZE, rw_playing));

  /**
   * GstNpuDetect:tracking:
   *
   * Give detections track ids that stay the same across frames while the
   * object's boxes overlap (IoU tracker).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TRACKING,
      g_param_spec_boolean ("tracking", "Tracking",
          "Track ids stable across frames (IoU tracker)",
          DEFAULT_PROP_TRACKING, rw_ready));

  /**
   * GstNpuDetect:tracking-iou-threshold:
   *
   * Least IoU between a box and the track's last box for the box to
   * continue the track.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TRACKING_IOU_THRESHOLD,
      g_param_spec_double ("tracking-iou-threshold", "Tracking IoU threshold",
          "Least IoU with a track's last box to continue the track", 0.0, 1.0,
          DEFAULT_PROP_TRACKING_IOU_THRESHOLD, rw_ready));

  /**
   * GstNpuDetect:tracking-max-age:
   *
   * A track not matched for more than this many inferred frames ends.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TRACKING_MAX_AGE,
      g_param_spec_uint ("tracking-max-age", "Tracking max age",
          "Inferred frames a track survives unmatched", 0, 1000,
          DEFAULT_PROP_TRACKING_MAX_AGE, rw_ready));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "OpenNPU detection decoder", "Filter/Analyzer/Video",
      "Decodes YOLOv8/YOLO11, YOLOv5 and SSD detector outputs attached by "
      "npuinfer into regions of interest in frame coordinates, with NMS and "
      "optional IoU tracking; video passes through", "OpenNPU developers");

  gst_type_mark_as_plugin_api (GST_TYPE_NPU_DETECT_FORMAT, 0);
}

static void
gst_npu_detect_init (GstNpuDetect * self)
{
  self->format = DEFAULT_PROP_FORMAT;
  self->confidence_threshold = DEFAULT_PROP_CONFIDENCE_THRESHOLD;
  self->iou_threshold = DEFAULT_PROP_IOU_THRESHOLD;
  self->max_detections = DEFAULT_PROP_MAX_DETECTIONS;
  self->class_agnostic = DEFAULT_PROP_CLASS_AGNOSTIC;
  self->input_width = DEFAULT_PROP_INPUT_WIDTH;
  self->input_height = DEFAULT_PROP_INPUT_HEIGHT;
  self->resize = DEFAULT_PROP_RESIZE;
  self->tracking = DEFAULT_PROP_TRACKING;
  self->tracking_iou_threshold = DEFAULT_PROP_TRACKING_IOU_THRESHOLD;
  self->tracking_max_age = DEFAULT_PROP_TRACKING_MAX_AGE;
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}
