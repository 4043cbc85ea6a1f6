/* SPDX-License-Identifier: MIT */
/*
 * gstnpusched.h: the process-wide core scheduler of one NPU device, shared
 * by every GstNpuBase instance (npuinfer, npuembed, ...) that runs on it, so
 * that N streams in one process spread their frames over the three cores
 * together instead of each instance starting its own round robin at core 0.
 * See gstnpusched.c.
 */
#ifndef __GST_NPU_SCHED_H__
#define __GST_NPU_SCHED_H__

#include <glib.h>

G_BEGIN_DECLS

#define GST_NPU_SCHED_MAX_CORES 3

typedef struct _GstNpuSched GstNpuSched;

/* The scheduler of @device (the backend name of the loaded model, e.g.
 * "sim", "rknpu"), created on first use; every call takes a reference.
 * Never NULL. */
GstNpuSched *gst_npu_sched_acquire (const gchar * device);
/* Drops a reference; the last one frees the scheduler. NULL-safe. */
void gst_npu_sched_release (GstNpuSched * sched);

/* The core for the next frame of an instance that has sessions on the
 * cores of @core_mask (bits 0..2): of those, the one with the fewest frames
 * in flight on the device (picked and not yet given back with
 * gst_npu_sched_done), then the one handed the fewest frames so far, then
 * the first at or after the device's round-robin cursor, which then moves
 * past it. One instance on all cores alone thus visits them 0, 1, 2, 0, ...
 * as its private round robin did; several instances (also with different
 * masks) share the cores so that each runs its fair share of all their
 * frames, and a core that finishes early takes the next frame. The caller
 * must give every picked frame back with gst_npu_sched_done once it has run
 * or was cancelled. Returns -1 for an empty mask. */
gint gst_npu_sched_pick (GstNpuSched * sched, guint core_mask);

/* Gives back a frame picked for @core (it ran, failed or was cancelled). */
void gst_npu_sched_done (GstNpuSched * sched, gint core);

/* Frames in flight on @core (0 for a core out of range). */
guint gst_npu_sched_core_busy (GstNpuSched * sched, gint core);

/* Frames handed to @core by gst_npu_sched_pick since the scheduler was
 * created (0 for a core out of range). */
guint64 gst_npu_sched_core_jobs (GstNpuSched * sched, gint core);

G_END_DECLS

#endif /* __GST_NPU_SCHED_H__ */
