/* SPDX-License-Identifier: MIT */
/*
 * gstnpuembed.h: npuembed, turns every video frame into an L2-normalised
 * embedding vector (GstNpuEmbeddingMeta) and optionally zero-shot labels.
 * See gstnpuembed.c.
 */
#ifndef __GST_NPU_EMBED_H__
#define __GST_NPU_EMBED_H__

#include "gstnpubase.h"

G_BEGIN_DECLS

#define GST_TYPE_NPU_EMBED (gst_npu_embed_get_type ())
G_DECLARE_FINAL_TYPE (GstNpuEmbed, gst_npu_embed, GST, NPU_EMBED, GstNpuBase);

GST_ELEMENT_REGISTER_DECLARE (npuembed);

G_END_DECLS

#endif /* __GST_NPU_EMBED_H__ */
