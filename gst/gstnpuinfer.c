/* SPDX-License-Identifier: MIT */
/*
 * gstnpuinfer.c: npuinfer, the generic inference element. All the work
 * (model, core slots, preprocessing, ordering) is in GstNpuBase; this file
 * only turns a finished run into GstNpuTensorMeta, and into upstream
 * GstTensorMeta as well when built against GStreamer 1.26 or newer.
 */
/**
 * SECTION:element-npuinfer
 * @title: npuinfer
 * @short_description: run a neural network on video frames with the RK3588 NPU
 *
 * npuinfer runs a model on each video frame and attaches every output tensor
 * of the model to the frame as a #GstNpuTensorMeta (name, data type, dims,
 * data, quantisation scale and zero point). The video itself passes through
 * unchanged, so npuinfer can sit anywhere in a pipeline, including inside a
 * player (`playbin video-filter=...`). Decoders downstream read the meta with
 * gst_buffer_get_npu_tensor_meta(). When the plugin is built against
 * GStreamer 1.26 or newer the tensors are also attached as the upstream
 * GstTensorMeta, so upstream tensor decoders work unchanged.
 *
 * The model (.onnx, compiled when the element starts, or a compiled .npub)
 * gets one session per NPU core in #GstNpuBase:cores; frames go to the cores
 * round robin (one scheduler per device, shared with the other instances in
 * the process, so several streams share the cores fairly) and leave in their
 * input order. Up to
 * #GstNpuBase:max-in-flight frames are in flight; after that the upstream
 * thread blocks, or frames skip inference or are dropped, as
 * #GstNpuBase:drop says.
 *
 * Frames are scaled to the model's input (#GstNpuBase:resize), converted to
 * RGB (or grey for one-channel models, in #GstNpuBase:channel-order), and
 * normalised for float inputs (#GstNpuBase:normalization; defaults from the
 * model's metadata where present: the ONNX metadata_props, which a .npub
 * compiled from the model carries too). Integer inputs get the pixels
 * (uint8) or pixels - 128 (int8).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,width=640,height=480 ! \
 *     npuinfer model=mobilenet.onnx backend=sim ! fakesink
 * ]| Infers 100 test frames on the simulator, all three core slots.
 * |[
 * gst-launch-1.0 filesrc location=clip.mkv ! decodebin ! videoconvert ! \
 *     npuinfer model=detector.npub resize=letterbox drop=pass ! \
 *     videoconvert ! autovideosink
 * ]| Plays a file; frames the NPU cannot keep up with are shown without
 * metadata instead of slowing the video down.
 * |[
 * gst-launch-1.0 playbin uri=file:///home/user/clip.mkv \
 *     video-filter="npuinfer model=net.onnx inference-interval=5"
 * ]| Inside a player, inferring every fifth frame.
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnpuinfer.h"

#ifdef HAVE_GST_ANALYTICS
#include <gst/analytics/analytics.h>
#endif

GST_DEBUG_CATEGORY_STATIC (gst_npu_infer_debug);
#define GST_CAT_DEFAULT gst_npu_infer_debug

struct _GstNpuInfer
{
  GstNpuBase parent;
};

G_DEFINE_TYPE (GstNpuInfer, gst_npu_infer, GST_TYPE_NPU_BASE);
GST_ELEMENT_REGISTER_DEFINE (npuinfer, "npuinfer", GST_RANK_NONE,
    GST_TYPE_NPU_INFER);

/* UNTESTED: built only against GStreamer >= 1.26 (Debian 12 has 1.22). It
 * was checked for syntax against the 1.26 declarations of
 * gst_tensor_new_simple, gst_buffer_add_tensor_meta and gst_tensor_meta_set
 * and has never been linked or run (docs/gstreamer.md, Metadata API). */
#if defined(HAVE_GST_ANALYTICS) && GST_CHECK_VERSION (1, 26, 0)
static GstTensorDataType
upstream_dtype (GstNpuTensorDataType t)
{
  switch (t) {
    case GST_NPU_TENSOR_DATA_TYPE_FLOAT16:
      return GST_TENSOR_DATA_TYPE_FLOAT16;
    case GST_NPU_TENSOR_DATA_TYPE_INT8:
      return GST_TENSOR_DATA_TYPE_INT8;
    case GST_NPU_TENSOR_DATA_TYPE_UINT8:
    case GST_NPU_TENSOR_DATA_TYPE_BOOL:
      return GST_TENSOR_DATA_TYPE_UINT8;
    case GST_NPU_TENSOR_DATA_TYPE_INT16:
      return GST_TENSOR_DATA_TYPE_INT16;
    case GST_NPU_TENSOR_DATA_TYPE_INT32:
      return GST_TENSOR_DATA_TYPE_INT32;
    case GST_NPU_TENSOR_DATA_TYPE_INT64:
      return GST_TENSOR_DATA_TYPE_INT64;
    case GST_NPU_TENSOR_DATA_TYPE_FLOAT64:
      return GST_TENSOR_DATA_TYPE_FLOAT64;
    case GST_NPU_TENSOR_DATA_TYPE_UINT16:
      return GST_TENSOR_DATA_TYPE_UINT16;
    case GST_NPU_TENSOR_DATA_TYPE_UINT32:
      return GST_TENSOR_DATA_TYPE_UINT32;
    case GST_NPU_TENSOR_DATA_TYPE_UINT64:
      return GST_TENSOR_DATA_TYPE_UINT64;
    case GST_NPU_TENSOR_DATA_TYPE_FLOAT32:
    default:
      return GST_TENSOR_DATA_TYPE_FLOAT32;
  }
}

/* The upstream meta has no quantisation fields: integer tensors go out as
 * their raw integers there; the scale and zero point are only in ours. */
static void
attach_upstream (GstBuffer * buffer, const GstNpuTensorMeta * meta)
{
  GstTensorMeta *tmeta;
  GstTensor **tensors;
  guint i, d;

  tensors = g_new0 (GstTensor *, MAX (meta->num_tensors, 1));
  for (i = 0; i < meta->num_tensors; i++) {
    const GstNpuTensor *t = &meta->tensors[i];
    gsize dims[GST_NPU_TENSOR_MAX_DIMS];

    for (d = 0; d < t->num_dims; d++)
      dims[d] = (gsize) t->dims[d];
    tensors[i] = gst_tensor_new_simple (t->name, upstream_dtype (t->data_type),
        gst_buffer_new_wrapped_bytes (t->data), GST_TENSOR_DIM_ORDER_ROW_MAJOR,
        t->num_dims, dims);
  }
  tmeta = gst_buffer_add_tensor_meta (buffer);
  gst_tensor_meta_set (tmeta, meta->num_tensors, tensors);
}
#endif

static void
gst_npu_infer_attach (GstNpuBase * base, GstBuffer * buffer, GstNpuResult * res)
{
  GstNpuInfer *self = GST_NPU_INFER (base);
  GstNpuTensorMeta *meta;

  /* the meta takes the copied outputs over */
  meta = gst_buffer_add_npu_tensor_meta (buffer,
      gst_npu_base_get_model_id (base), res->n_outputs, res->outputs);
  if (!meta)
    return;
  res->outputs = NULL;
  res->n_outputs = 0;
  meta->region.x = res->region.x;
  meta->region.y = res->region.y;
  meta->region.w = res->region.w;
  meta->region.h = res->region.h;
  meta->model_region.x = res->model_region.x;
  meta->model_region.y = res->model_region.y;
  meta->model_region.w = res->model_region.w;
  meta->model_region.h = res->model_region.h;

  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " (core %d, %"
      G_GUINT64_FORMAT " us): %u tensors", res->frame, res->core,
      res->run_ns / 1000, meta->num_tensors);

#if defined(HAVE_GST_ANALYTICS) && GST_CHECK_VERSION (1, 26, 0)
  attach_upstream (buffer, meta);
#endif
}

static void
gst_npu_infer_class_init (GstNpuInferClass * klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNpuBaseClass *base_class = GST_NPU_BASE_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_npu_infer_debug, "npuinfer", 0,
      "OpenNPU inference element");
  base_class->debug_category = gst_npu_infer_debug;
  base_class->attach = GST_DEBUG_FUNCPTR (gst_npu_infer_attach);

  gst_element_class_set_static_metadata (element_class,
      "OpenNPU inference", "Filter/Analyzer/Video",
      "Runs a neural network (.onnx or .npub) on each video frame with the "
      "RK3588 NPU (three cores, round robin, output in input order) and "
      "attaches the output tensors as GstNpuTensorMeta; video passes through",
      "OpenNPU developers");
}

static void
gst_npu_infer_init (GstNpuInfer * self)
{
}
