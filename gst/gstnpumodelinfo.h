/* SPDX-License-Identifier: MIT */
/*
 * gstnpumodelinfo.h: preprocessing defaults read from an ONNX model's
 * metadata_props (ModelProto field 14). The model API (npu-model.h) does not
 * expose them, so the elements read the file's top level themselves; see
 * docs/gstreamer.md "Normalisation defaults" for the keys understood.
 */
#ifndef __GST_NPU_MODEL_INFO_H__
#define __GST_NPU_MODEL_INFO_H__

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  gboolean has_mean, has_std, has_scale, has_offset;
  gfloat mean[3], std[3], scale[3], offset[3];
  /* -1 when absent; else a GstNpuResizeMode / GstNpuChannelOrder value */
  gint resize;
  gint channel_order;
  /* number of metadata_props entries seen (all keys, understood or not) */
  guint n_props;
} GstNpuModelInfo;

void gst_npu_model_info_init (GstNpuModelInfo * info);

/* Scans the top level of the ONNX file at @path for metadata_props. A file
 * without metadata is fine (returns TRUE with nothing set). Returns FALSE
 * with @error set only if the file cannot be mapped or its top level is not
 * valid protobuf. */
gboolean gst_npu_model_info_read_onnx (const gchar * path,
    GstNpuModelInfo * info, GError ** error);

/* Same, on an in-memory image (for tests). */
gboolean gst_npu_model_info_parse_onnx (const guint8 * data, gsize len,
    GstNpuModelInfo * info, GError ** error);

G_END_DECLS

#endif /* __GST_NPU_MODEL_INFO_H__ */
