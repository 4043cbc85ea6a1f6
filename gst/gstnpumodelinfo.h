/* SPDX-License-Identifier: MIT */
/*
 * gstnpumodelinfo.h: preprocessing defaults from a model's metadata, the
 * ONNX model's metadata_props that the model API exposes for an .onnx and
 * for an .npub alike (npu_model_prop, npu-model.h); see docs/gstreamer.md
 * "Normalisation defaults" for the keys understood.
 */
#ifndef __GST_NPU_MODEL_INFO_H__
#define __GST_NPU_MODEL_INFO_H__

#include <glib.h>

#include "npu/npu-model.h"

G_BEGIN_DECLS

typedef struct
{
  gboolean has_mean, has_std, has_scale, has_offset;
  gfloat mean[3], std[3], scale[3], offset[3];
  /* -1 when absent; else a GstNpuResizeMode / GstNpuChannelOrder value */
  gint resize;
  gint channel_order;
  /* number of metadata entries seen (all keys, understood or not) */
  guint n_props;
} GstNpuModelInfo;

void gst_npu_model_info_init (GstNpuModelInfo * info);

/* Applies one metadata entry (keys not understood are only counted; a value
 * that does not parse leaves its setting absent). */
void gst_npu_model_info_apply (GstNpuModelInfo * info, const gchar * key,
    const gchar * value);

/* Applies every metadata entry of @model, in order (a later entry of a
 * synonym, e.g. image_mean after opennpu.mean, wins). */
void gst_npu_model_info_from_model (GstNpuModelInfo * info,
    const struct npu_model *model);

G_END_DECLS

#endif /* __GST_NPU_MODEL_INFO_H__ */
