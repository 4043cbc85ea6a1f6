/* SPDX-License-Identifier: MIT */
/*
 * gstnpustream.h: GstNpuBase's data path between its pads (pad functions,
 * FIFO and flushing state); see gstnpustream.c. Private to the base class.
 */
#ifndef __GST_NPU_STREAM_H__
#define __GST_NPU_STREAM_H__

#include "gstnpubase-priv.h"

G_BEGIN_DECLS

/* Empties the FIFO once no worker holds an item (priv->lock held, flushing
 * set so that no new work starts). */
void gst_npu_clear_items_locked (GstNpuBase * self);
/* Enters the flushing state or leaves it (priv->lock held). */
void gst_npu_set_flushing_locked (GstNpuBase * self, gboolean flushing);

/* The pad functions that gst_npu_base_init installs. */
GstFlowReturn gst_npu_base_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
gboolean gst_npu_base_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
gboolean gst_npu_base_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
gboolean gst_npu_base_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
gboolean gst_npu_base_sink_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active);
gboolean gst_npu_base_src_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active);

G_END_DECLS

#endif /* __GST_NPU_STREAM_H__ */
