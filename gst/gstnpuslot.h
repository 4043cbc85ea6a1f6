/* SPDX-License-Identifier: MIT */
/*
 * gstnpuslot.h: the items of GstNpuBase's FIFO and the worker thread of each
 * core slot; see gstnpuslot.c. Private to the base class (the types are in
 * gstnpubase-priv.h).
 */
#ifndef __GST_NPU_SLOT_H__
#define __GST_NPU_SLOT_H__

#include "gstnpubase-priv.h"

G_BEGIN_DECLS

/* A reference-counted copy of @info (unref with gst_npu_format_unref). */
GstNpuFormat *gst_npu_format_new (const GstVideoInfo * info);
/* Adds a reference; NULL-safe. */
GstNpuFormat *gst_npu_format_ref (GstNpuFormat * f);
/* Drops a reference; NULL-safe. */
void gst_npu_format_unref (GstNpuFormat * f);

/* Frees an item that no slot holds: its buffer or event, format reference,
 * result and error. */
void gst_npu_item_free (GstNpuItem * item);
/* TRUE once the item may be pushed (passed, done or failed). */
gboolean gst_npu_item_finished (const GstNpuItem * item);

/* Gives a job's core back to the device scheduler, once (priv->lock held). */
void gst_npu_item_sched_done_locked (GstNpuBase * self, GstNpuItem * item);
/* Takes pending jobs off the slots and wakes everyone (priv->lock held). */
void gst_npu_cancel_locked (GstNpuBase * self);

/* The worker thread of one slot (@data: its GstNpuSlot); returns when the
 * slot's quit is set. */
gpointer gst_npu_slot_thread (gpointer data);

G_END_DECLS

#endif /* __GST_NPU_SLOT_H__ */
