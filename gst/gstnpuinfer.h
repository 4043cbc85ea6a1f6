/* SPDX-License-Identifier: MIT */
/*
 * gstnpuinfer.h: npuinfer, runs a model on every video frame and attaches
 * the raw output tensors as GstNpuTensorMeta. See gstnpuinfer.c.
 */
#ifndef __GST_NPU_INFER_H__
#define __GST_NPU_INFER_H__

#include "gstnpubase.h"

G_BEGIN_DECLS

#define GST_TYPE_NPU_INFER (gst_npu_infer_get_type ())
G_DECLARE_FINAL_TYPE (GstNpuInfer, gst_npu_infer, GST, NPU_INFER, GstNpuBase);

GST_ELEMENT_REGISTER_DECLARE (npuinfer);

G_END_DECLS

#endif /* __GST_NPU_INFER_H__ */
