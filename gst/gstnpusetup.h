/* SPDX-License-Identifier: MIT */
/*
 * gstnpusetup.h: GstNpuBase's start and stop; see gstnpusetup.c. Private to
 * the base class.
 */
#ifndef __GST_NPU_SETUP_H__
#define __GST_NPU_SETUP_H__

#include "gstnpubase-priv.h"

G_BEGIN_DECLS

/* READY -> PAUSED: model, preprocessing, sessions and worker threads. On
 * failure posts an error, undoes what was done and returns FALSE. */
gboolean gst_npu_base_start (GstNpuBase * self);
/* PAUSED -> READY (and after a failed start): stops and frees all of it. */
void gst_npu_base_stop (GstNpuBase * self);

G_END_DECLS

#endif /* __GST_NPU_SETUP_H__ */
