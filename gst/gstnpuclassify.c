/* SPDX-License-Identifier: MIT */
/*
 * gstnpuclassify.c: npuclassify, the classifier decoder. It runs after
 * npuinfer, scores one output tensor (softmax, sigmoid or as is) with
 * npu-detect-decode.c and attaches the top-k classes as a whole-frame
 * GstVideoRegionOfInterestMeta. The video passes through.
 *
 * Why a ROI meta and not a meta of our own: on GStreamer 1.22 the ROI meta
 * with a parameter structure is the one structured per-frame result every
 * consumer already reads (appsink code, overlays, encoders' ROI handling
 * ignore what they do not know), it needs no library of ours to be read, and
 * it is what npuembed's zero-shot labels use, so an application reads both
 * the same way.
 */
/**
 * SECTION:element-npuclassify
 * @title: npuclassify
 * @short_description: decodes classifier outputs into top-k labels
 *
 * npuclassify reads one output tensor that npuinfer attaches
 * (#GstNpuTensorMeta; #GstNpuClassify:output-name, by default the first
 * output) holding one value per class: shape [nc], [1, nc] or any shape
 * whose other dimensions are 1. The values are turned into scores by
 * #GstNpuClassify:score-function and the #GstNpuClassify:top-k best classes
 * are attached as a #GstVideoRegionOfInterestMeta of type
 * "npu-classification" covering the whole frame, with a parameter
 * structure "npu-classification": `label`, `class-id` and `confidence` of
 * the best class, and `labels`, `class-ids`, `confidences` (#GstValueArray)
 * of the top-k, best first, plus `model-id`.
 *
 * An output that is not one value per class is a stream error naming its
 * shape; a frame whose output holds NaN gets no meta and a warning.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 v4l2src ! videoconvert ! \
 *     npuinfer model=mobilenet.npub ! \
 *     npuclassify labels=imagenet.txt top-k=3 ! fakesink
 * ]| Labels each camera frame with its three most likely classes.
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/video/video.h>

#include "gstnpuanalytics.h"
#include "gstnpuclassify.h"
#include "gstnpulabels.h"
#include "gstnpumeta.h"
#include "gstnpuprops.h"
#include "npu-detect-decode.h"

GST_DEBUG_CATEGORY_STATIC (gst_npu_classify_debug);
#define GST_CAT_DEFAULT gst_npu_classify_debug

#define DEFAULT_PROP_OUTPUT_NAME NULL
#define DEFAULT_PROP_SCORE_FUNCTION GST_NPU_CLASSIFY_SCORE_SOFTMAX
#define DEFAULT_PROP_TOP_K 5
#define DEFAULT_PROP_LABELS NULL

enum
{
  PROP_0,
  PROP_OUTPUT_NAME,
  PROP_SCORE_FUNCTION,
  PROP_TOP_K,
  PROP_LABELS,
};

struct _GstNpuClassify
{
  GstBaseTransform parent;

  /* properties (object lock) */
  gchar *output_name;
  GstNpuClassifyScore score_function;
  guint top_k;
  gchar *labels_path;

  /* streaming state */
  GstVideoInfo info;
  gboolean have_info;
  gchar **labels;
  guint n_labels;
};

G_DEFINE_TYPE (GstNpuClassify, gst_npu_classify, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (npuclassify, "npuclassify", GST_RANK_NONE,
    GST_TYPE_NPU_CLASSIFY);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));

GType
gst_npu_classify_score_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_CLASSIFY_SCORE_SOFTMAX, "Softmax over the classes", "softmax"},
    {GST_NPU_CLASSIFY_SCORE_SIGMOID, "Sigmoid of each value (multi-label)",
        "sigmoid"},
    {GST_NPU_CLASSIFY_SCORE_NONE, "The values as they are", "none"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuClassifyScore", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

static gboolean
gst_npu_classify_start (GstBaseTransform * trans)
{
  GstNpuClassify *self = GST_NPU_CLASSIFY (trans);
  gchar *path;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->labels_path);
  GST_OBJECT_UNLOCK (self);
  ok = gst_npu_load_labels (self, path, &self->labels, &self->n_labels);
  g_free (path);
  return ok;
}

static gboolean
gst_npu_classify_stop (GstBaseTransform * trans)
{
  GstNpuClassify *self = GST_NPU_CLASSIFY (trans);

  g_clear_pointer (&self->labels, g_strfreev);
  self->n_labels = 0;
  self->have_info = FALSE;
  return TRUE;
}

static gboolean
gst_npu_classify_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstNpuClassify *self = GST_NPU_CLASSIFY (trans);

  self->have_info = gst_video_info_from_caps (&self->info, incaps);
  return TRUE;
}

static gchar *
label_of (GstNpuClassify * self, gint id)
{
  if (id >= 0 && (guint) id < self->n_labels)
    return g_strdup (self->labels[id]);
  return g_strdup_printf ("class-%d", id);
}

static GstFlowReturn
gst_npu_classify_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNpuClassify *self = GST_NPU_CLASSIFY (trans);
  GstNpuTensorMeta *meta = gst_buffer_get_npu_tensor_meta (buf);
  const GstNpuTensor *t = NULL;
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  GValue labels = G_VALUE_INIT, ids = G_VALUE_INIT, confs = G_VALUE_INIT;
  GstNpuClassifyScore fn;
  gchar *name, *best;
  gfloat *vals, *scores;
  gint *top, k, n_top = 0, i;
  gsize numel = 0;
  guint d, big = 0;
  gchar err[256] = "";
  guint w, h;

  if (!meta)
    return GST_FLOW_OK;

  GST_OBJECT_LOCK (self);
  name = g_strdup (self->output_name);
  fn = self->score_function;
  k = (gint) self->top_k;
  GST_OBJECT_UNLOCK (self);

  if (name && *name) {
    t = gst_npu_tensor_meta_get_by_name (meta, name);
    if (!t) {
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Model %s has no output \"%s\".", GST_STR_NULL (meta->model_id),
              name), (NULL));
      g_free (name);
      return GST_FLOW_ERROR;
    }
  } else if (meta->num_tensors > 0) {
    t = &meta->tensors[0];
  }
  g_free (name);
  if (!t) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The model has no outputs to decode."), (NULL));
    return GST_FLOW_ERROR;
  }
  for (d = 0; d < t->num_dims; d++)
    if (t->dims[d] != 1)
      big++;
  vals = gst_npu_tensor_dup_float (t, &numel);
  if (!vals || big > 1 || numel == 0 || numel > G_MAXINT) {
    GString *shape = g_string_new ("[");

    for (d = 0; d < t->num_dims; d++)
      g_string_append_printf (shape, "%s%" G_GINT64_FORMAT, d ? ", " : "",
          t->dims[d]);
    g_string_append (shape, "]");
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Output \"%s\" of model %s is not one score per class.",
            g_quark_to_string (t->name), GST_STR_NULL (meta->model_id)),
        ("shape %s: a classifier output has one dimension larger than 1 "
            "([nc] or [1, nc])%s", shape->str,
            vals ? "" : ", and data that matches it"));
    g_string_free (shape, TRUE);
    g_free (vals);
    return GST_FLOW_ERROR;
  }

  top = g_new (gint, k);
  scores = g_new (gfloat, k);
  if (npu_classify_topk (vals, (gint) numel, (enum npu_classify_score) fn, k,
          top, scores, &n_top, err, sizeof (err)) != NPU_OK) {
    GST_ELEMENT_WARNING (self, STREAM, DECODE,
        ("Frame without classification: the model output is not usable."),
        ("%s", err));
    goto done;
  }

  w = self->have_info ? (guint) GST_VIDEO_INFO_WIDTH (&self->info) :
      (guint) MAX (meta->region.x + meta->region.w, 0);
  h = self->have_info ? (guint) GST_VIDEO_INFO_HEIGHT (&self->info) :
      (guint) MAX (meta->region.y + meta->region.h, 0);
  roi = gst_buffer_add_video_region_of_interest_meta (buf,
      GST_NPU_CLASSIFICATION_ROI_TYPE, 0, 0, w, h);
  g_value_init (&labels, GST_TYPE_ARRAY);
  g_value_init (&ids, GST_TYPE_ARRAY);
  g_value_init (&confs, GST_TYPE_ARRAY);
  for (i = 0; i < n_top; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_STRING);
    g_value_take_string (&v, label_of (self, top[i]));
    gst_value_array_append_and_take_value (&labels, &v);
    g_value_init (&v, G_TYPE_INT);
    g_value_set_int (&v, top[i]);
    gst_value_array_append_and_take_value (&ids, &v);
    g_value_init (&v, G_TYPE_DOUBLE);
    g_value_set_double (&v, scores[i]);
    gst_value_array_append_and_take_value (&confs, &v);
  }
  best = label_of (self, top[0]);
  s = gst_structure_new (GST_NPU_CLASSIFICATION_STRUCTURE,
      "label", G_TYPE_STRING, best,
      "class-id", G_TYPE_INT, top[0],
      "confidence", G_TYPE_DOUBLE, (gdouble) scores[0],
      "model-id", G_TYPE_STRING, meta->model_id, NULL);
  g_free (best);
  gst_structure_take_value (s, "labels", &labels);
  gst_structure_take_value (s, "class-ids", &ids);
  gst_structure_take_value (s, "confidences", &confs);
  gst_video_region_of_interest_meta_add_param (roi, s);

  /* GStreamer >= 1.24 only (gstnpuanalytics.c); a no-op here */
  if (gst_npu_analytics_enabled ()) {
    gchar **names = g_new0 (gchar *, n_top + 1);

    for (i = 0; i < n_top; i++)
      names[i] = label_of (self, top[i]);
    gst_npu_analytics_add_classification (buf, (guint) n_top, names, scores);
    g_strfreev (names);
  }

done:
  g_free (top);
  g_free (scores);
  g_free (vals);
  return GST_FLOW_OK;
}

static const GstNpuField gst_npu_classify_fields[] = {
  GST_NPU_FIELD (PROP_OUTPUT_NAME, STRING, GstNpuClassify, output_name),
  GST_NPU_FIELD (PROP_SCORE_FUNCTION, ENUM, GstNpuClassify, score_function),
  GST_NPU_FIELD (PROP_TOP_K, UINT, GstNpuClassify, top_k),
  GST_NPU_FIELD (PROP_LABELS, STRING, GstNpuClassify, labels_path),
};

static void
gst_npu_classify_finalize (GObject * object)
{
  GstNpuClassify *self = GST_NPU_CLASSIFY (object);

  g_free (self->output_name);
  g_free (self->labels_path);
  g_strfreev (self->labels);

  G_OBJECT_CLASS (gst_npu_classify_parent_class)->finalize (object);
}

static void
gst_npu_classify_class_init (GstNpuClassifyClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw_ready = GST_NPU_PARAM_RW_READY;
  const GParamFlags rw_playing = GST_NPU_PARAM_RW_PLAYING;

  GST_DEBUG_CATEGORY_INIT (gst_npu_classify_debug, "npuclassify", 0,
      "OpenNPU classification decoder");

  gst_npu_fields_class_init (gobject_class, gst_npu_classify_fields,
      G_N_ELEMENTS (gst_npu_classify_fields));
  gobject_class->finalize = gst_npu_classify_finalize;

  trans_class->start = GST_DEBUG_FUNCPTR (gst_npu_classify_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_npu_classify_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_npu_classify_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_npu_classify_transform_ip);
  trans_class->passthrough_on_same_caps = FALSE;

  /**
   * GstNpuClassify:output-name:
   *
   * The model output holding the class values; NULL: the first output.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_OUTPUT_NAME,
      g_param_spec_string ("output-name", "Output name",
          "Model output holding one value per class (NULL: the first)",
          DEFAULT_PROP_OUTPUT_NAME, rw_playing));

  /**
   * GstNpuClassify:score-function:
   *
   * How scores are computed from the output values.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_SCORE_FUNCTION,
      g_param_spec_enum ("score-function", "Score function",
          "How scores are computed from the output values",
          GST_TYPE_NPU_CLASSIFY_SCORE, DEFAULT_PROP_SCORE_FUNCTION,
          rw_playing));

  /**
   * GstNpuClassify:top-k:
   *
   * Number of best classes listed per frame.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TOP_K,
      g_param_spec_uint ("top-k", "Top k",
          "Number of best classes listed per frame", 1, 100,
          DEFAULT_PROP_TOP_K, rw_playing));

  /**
   * GstNpuClassify:labels:
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

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "OpenNPU classification decoder", "Filter/Analyzer/Video",
      "Turns a classifier output attached by npuinfer into the top-k labels "
      "(softmax or sigmoid) on a whole-frame region of interest; video "
      "passes through", "OpenNPU developers");

  gst_type_mark_as_plugin_api (GST_TYPE_NPU_CLASSIFY_SCORE, 0);
}

static void
gst_npu_classify_init (GstNpuClassify * self)
{
  self->score_function = DEFAULT_PROP_SCORE_FUNCTION;
  self->top_k = DEFAULT_PROP_TOP_K;
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}
