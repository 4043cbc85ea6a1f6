/* SPDX-License-Identifier: MIT */
/*
 * gstnpubase-priv.h: GstNpuBase's private state (the instance's private
 * struct, the work items and core slots), shared by the files that implement
 * the base class; gstnpubase.c lists them and describes the data flow and
 * the locking rules. Not for subclasses: they see gstnpubase.h only.
 */
#ifndef __GST_NPU_BASE_PRIV_H__
#define __GST_NPU_BASE_PRIV_H__

#include "gstnpubase.h"
#include "gstnpupreprocess.h"
#include "gstnpusched.h"

G_BEGIN_DECLS

/* Base-class code logs into the subclass's category (npuinfer, npuembed);
 * every function that logs has a `self`. */
#define GST_CAT_DEFAULT (GST_NPU_BASE_GET_CLASS (self)->debug_category)

#define MAX_SLOTS 3

#define VIDEO_CAPS GST_VIDEO_CAPS_MAKE ("{ RGB, RGBA, BGR, BGRx, NV12, I420, GRAY8 }")

/* The video format of a stretch of the stream (between CAPS events);
 * shared by the items that carry frames of it. */
typedef struct
{
  GstVideoInfo info;
} GstNpuFormat;

typedef enum
{
  ITEM_PASS,                    /* no inference: ready to push */
  ITEM_PENDING,                 /* queued on a slot */
  ITEM_RUNNING,
  ITEM_DONE,
  ITEM_FAILED,
} ItemState;

typedef struct
{
  GstMiniObject *obj;           /* GstBuffer or GstEvent */
  ItemState state;
  gboolean is_job;
  /* picked by the device scheduler and not yet given back (priv->lock) */
  gboolean sched_held;
  gint sched_core;
  GstNpuFormat *format;
  gint slot;
  gint64 submit_time, start_time;
  GstNpuResult result;
  gboolean has_result;
  enum npu_status status;
  gchar *error;
  gboolean error_is_timeout;
} GstNpuItem;

typedef struct
{
  GstNpuBase *self;
  gint index;
  gint core;
  GThread *thread;
  GCond cond;
  GQueue jobs;                  /* GstNpuItem *, borrowed from the FIFO */
  gboolean quit;
  struct npu_session *session;
  GstNpuPreprocessor pp;
  GstNpuFormat *pp_format;
  gpointer input;
  struct npu_tensor *outs;
  GRand *rand;
  guint64 jobs_done;
} GstNpuSlot;

typedef struct
{
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  gchar *model_path;
  gchar *model_id;
  GstNpuBackend backend;
  guint cores;
  guint max_in_flight;
  gchar *cache_dir;
  GstNpuResizeMode resize;
  gboolean resize_set;
  GstNpuChannelOrder channel_order;
  gboolean channel_order_set;
  GstNpuNormalization normalization;
  gfloat mean[3], std[3], scale[3], offset[3];
  gboolean mean_set, std_set, scale_set, offset_set;
  /* why the last mean/std/scale/offset value was refused (the element
   * refuses to start with it), or NULL */
  gchar *bad_setting;
  guint border_color;
  gint cpu_threads;
  gint hw_profile;              /* enum npu_hw_profile (npu-backend.h) */
  /* read by the streaming threads without the object lock (atomic) */
  gint interval;
  gint drop;
  gint timeout_ms;
  gint auto_timeout_ms;         /* what timeout=0 means for this backend */

  /* set up by start(), constant while streaming */
  struct npu_model *model;
  gchar *active_model_id;
  GstNpuInputConfig cfg;
  GstNpuSlot slots[MAX_SLOTS];
  guint n_slots;
  /* the device's shared core scheduler and, per core, the index of this
   * instance's slot on it (-1: none) */
  GstNpuSched *sched;
  guint slot_mask;
  gint core_slot[MAX_SLOTS];
  guint window;                 /* effective max-in-flight */
  gint64 delay_min_us, delay_max_us;    /* test hook, see start() */

  /* streaming state (priv->lock) */
  GMutex lock;
  GCond cond;
  GQueue items;
  guint jobs_in_flight;         /* inferred frames in the FIFO */
  guint n_unpushed;             /* FIFO length + the item being pushed */
  guint running;                /* jobs inside a worker */
  gboolean flushing;
  GstFlowReturn srcresult;
  GstNpuFormat *format;
  guint64 frame_count;

  /* statistics (priv->lock) */
  guint64 n_submitted, n_completed, n_dropped, n_skipped, n_failed;
  guint64 n_reordered;          /* jobs that finished before an earlier one */
  guint64 run_ns_total;
} GstNpuBasePrivate;

/* The instance's GstNpuBasePrivate (gst_npu_base_get_instance_private is
 * static to gstnpubase.c). */
GstNpuBasePrivate *gst_npu_base_get_private (GstNpuBase * self);

#define PRIV(self) (gst_npu_base_get_private (GST_NPU_BASE (self)))

G_END_DECLS

#endif /* __GST_NPU_BASE_PRIV_H__ */
