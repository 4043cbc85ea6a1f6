/* SPDX-License-Identifier: MIT */
/*
 * gstnpusched.c: one core scheduler per NPU device and process. The
 * schedulers live in a table keyed by device name under a global mutex;
 * each is reference counted by the element instances that have started on
 * it (GstNpuBase's start() acquires, stop() releases) and holds per core the
 * frames in flight (handed out, not yet finished or cancelled), the frames
 * handed out in all and a round-robin cursor for ties. The
 * facts behind it: the RK3588 NPU has three cores that run independent
 * jobs, so the device, not each element, owns them.
 */
#include "gstnpusched.h"

struct _GstNpuSched
{
  gchar *device;
  guint refs;                   /* sched_lock */
  GMutex lock;
  guint cursor;                 /* lock */
  guint64 jobs[GST_NPU_SCHED_MAX_CORES];        /* lock */
  guint busy[GST_NPU_SCHED_MAX_CORES];  /* lock */
};

static GMutex sched_lock;
static GHashTable *sched_table; /* device name -> GstNpuSched * (sched_lock) */

GstNpuSched *
gst_npu_sched_acquire (const gchar * device)
{
  GstNpuSched *s;

  if (!device)
    device = "";
  g_mutex_lock (&sched_lock);
  if (!sched_table)
    sched_table = g_hash_table_new (g_str_hash, g_str_equal);
  s = g_hash_table_lookup (sched_table, device);
  if (!s) {
    s = g_new0 (GstNpuSched, 1);
    s->device = g_strdup (device);
    g_mutex_init (&s->lock);
    g_hash_table_insert (sched_table, s->device, s);
  }
  s->refs++;
  g_mutex_unlock (&sched_lock);
  return s;
}

void
gst_npu_sched_release (GstNpuSched * sched)
{
  if (!sched)
    return;
  g_mutex_lock (&sched_lock);
  if (--sched->refs > 0) {
    g_mutex_unlock (&sched_lock);
    return;
  }
  g_hash_table_remove (sched_table, sched->device);
  if (g_hash_table_size (sched_table) == 0)
    g_clear_pointer (&sched_table, g_hash_table_unref);
  g_mutex_unlock (&sched_lock);
  g_mutex_clear (&sched->lock);
  g_free (sched->device);
  g_free (sched);
}

gint
gst_npu_sched_pick (GstNpuSched * sched, guint core_mask)
{
  guint k;
  gint core = -1;

  g_mutex_lock (&sched->lock);
  /* The core of the mask with the fewest frames in flight (a core that
   * finished early takes the next frame), then the fewest handed out in all,
   * then the first from the cursor. */
  for (k = 0; k < GST_NPU_SCHED_MAX_CORES; k++) {
    guint c = (sched->cursor + k) % GST_NPU_SCHED_MAX_CORES;

    if (!(core_mask & (1u << c)))
      continue;
    if (core < 0 || sched->busy[c] < sched->busy[core] ||
        (sched->busy[c] == sched->busy[core] &&
            sched->jobs[c] < sched->jobs[core]))
      core = (gint) c;
  }
  if (core >= 0) {
    sched->jobs[core]++;
    sched->busy[core]++;
    sched->cursor = (guint) (core + 1) % GST_NPU_SCHED_MAX_CORES;
  }
  g_mutex_unlock (&sched->lock);
  return core;
}

guint64
gst_npu_sched_core_jobs (GstNpuSched * sched, gint core)
{
  guint64 n;

  if (!sched || core < 0 || core >= GST_NPU_SCHED_MAX_CORES)
    return 0;
  g_mutex_lock (&sched->lock);
  n = sched->jobs[core];
  g_mutex_unlock (&sched->lock);
  return n;
}

void
gst_npu_sched_done (GstNpuSched * sched, gint core)
{
  if (!sched || core < 0 || core >= GST_NPU_SCHED_MAX_CORES)
    return;
  g_mutex_lock (&sched->lock);
  if (sched->busy[core] > 0)
    sched->busy[core]--;
  g_mutex_unlock (&sched->lock);
}

guint
gst_npu_sched_core_busy (GstNpuSched * sched, gint core)
{
  guint n;

  if (!sched || core < 0 || core >= GST_NPU_SCHED_MAX_CORES)
    return 0;
  g_mutex_lock (&sched->lock);
  n = sched->busy[core];
  g_mutex_unlock (&sched->lock);
  return n;
}
