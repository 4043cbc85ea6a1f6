/* SPDX-License-Identifier: MIT */
/*
 * gstnpuenums.h: the GTypes of GstNpuBase's enum properties (backend, drop,
 * resize, channel-order, normalization); see gstnpuenums.c. Private to the
 * plugin: the enum values are declared in gstnpubase.h and
 * gstnpupreprocess.h.
 */
#ifndef __GST_NPU_ENUMS_H__
#define __GST_NPU_ENUMS_H__

#include <glib-object.h>

G_BEGIN_DECLS

#define GST_TYPE_NPU_BACKEND (gst_npu_backend_get_type ())
GType gst_npu_backend_get_type (void);

#define GST_TYPE_NPU_DROP_POLICY (gst_npu_drop_policy_get_type ())
GType gst_npu_drop_policy_get_type (void);

#define GST_TYPE_NPU_RESIZE_MODE (gst_npu_resize_mode_get_type ())
GType gst_npu_resize_mode_get_type (void);

#define GST_TYPE_NPU_CHANNEL_ORDER (gst_npu_channel_order_get_type ())
GType gst_npu_channel_order_get_type (void);

#define GST_TYPE_NPU_NORMALIZATION (gst_npu_normalization_get_type ())
GType gst_npu_normalization_get_type (void);

G_END_DECLS

#endif /* __GST_NPU_ENUMS_H__ */
