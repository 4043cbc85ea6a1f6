/* SPDX-License-Identifier: MIT */
/*
 * gstnpuslot.c: the work of GstNpuBase's core slots. The items of the FIFO
 * (buffers and events, with the video format and the result of a frame),
 * and the worker thread of each slot, one per NPU core: it takes the frames
 * queued on its slot, preprocesses each, runs the model with the slot's
 * npu_session, copies the outputs into the item's result, lets the subclass
 * process() it and marks the item finished. The source pad task pushes the
 * items in order; start() and stop() open and close the slots.
 */
#include <string.h>

#include "gstnpuerror.h"
#include "gstnpuslot.h"

/* ---- items --------------------------------------------------------------- */

GstNpuFormat *
gst_npu_format_new (const GstVideoInfo * info)
{
  GstNpuFormat *f = g_atomic_rc_box_new0 (GstNpuFormat);

  f->info = *info;
  return f;
}

GstNpuFormat *
gst_npu_format_ref (GstNpuFormat * f)
{
  return f ? g_atomic_rc_box_acquire (f) : NULL;
}

void
gst_npu_format_unref (GstNpuFormat * f)
{
  if (f)
    g_atomic_rc_box_release (f);
}

static void
result_clear (GstNpuResult * r)
{
  guint i;

  if (r->outputs) {
    for (i = 0; i < r->n_outputs; i++)
      g_clear_pointer (&r->outputs[i].data, g_bytes_unref);
    g_clear_pointer (&r->outputs, g_free);
  }
  r->n_outputs = 0;
  if (r->user && r->user_free)
    r->user_free (r->user);
  r->user = NULL;
}

void
gst_npu_item_free (GstNpuItem * item)
{
  if (item->obj)
    gst_mini_object_unref (item->obj);
  gst_npu_format_unref (item->format);
  result_clear (&item->result);
  g_free (item->error);
  g_free (item);
}

gboolean
gst_npu_item_finished (const GstNpuItem * item)
{
  return item->state == ITEM_PASS || item->state == ITEM_DONE ||
      item->state == ITEM_FAILED;
}

/* Takes pending jobs off the slots and wakes everyone (priv->lock held). */
/* Gives an item's core back to the device scheduler once (priv->lock held). */
void
gst_npu_item_sched_done_locked (GstNpuBase * self, GstNpuItem * item)
{
  GstNpuBasePrivate *priv = PRIV (self);

  if (!item->sched_held)
    return;
  item->sched_held = FALSE;
  gst_npu_sched_done (priv->sched, item->sched_core);
}

void
gst_npu_cancel_locked (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  guint i;

  for (i = 0; i < priv->n_slots; i++) {
    GList *l;

    /* jobs that will not run give their core back to the device */
    for (l = priv->slots[i].jobs.head; l; l = l->next)
      gst_npu_item_sched_done_locked (self, l->data);
    g_queue_clear (&priv->slots[i].jobs);
    g_cond_signal (&priv->slots[i].cond);
  }
  g_cond_broadcast (&priv->cond);
}

/* ---- worker -------------------------------------------------------------- */

static GstNpuTensorDataType
map_dtype (enum npu_dtype t)
{
  switch (t) {
    case NPU_DTYPE_FP16:
      return GST_NPU_TENSOR_DATA_TYPE_FLOAT16;
    case NPU_DTYPE_INT8:
      return GST_NPU_TENSOR_DATA_TYPE_INT8;
    case NPU_DTYPE_UINT8:
      return GST_NPU_TENSOR_DATA_TYPE_UINT8;
    case NPU_DTYPE_INT16:
      return GST_NPU_TENSOR_DATA_TYPE_INT16;
    case NPU_DTYPE_INT32:
      return GST_NPU_TENSOR_DATA_TYPE_INT32;
    case NPU_DTYPE_INT64:
      return GST_NPU_TENSOR_DATA_TYPE_INT64;
    case NPU_DTYPE_BOOL:
      return GST_NPU_TENSOR_DATA_TYPE_BOOL;
    case NPU_DTYPE_FP64:
      return GST_NPU_TENSOR_DATA_TYPE_FLOAT64;
    case NPU_DTYPE_UINT16:
      return GST_NPU_TENSOR_DATA_TYPE_UINT16;
    case NPU_DTYPE_UINT32:
      return GST_NPU_TENSOR_DATA_TYPE_UINT32;
    case NPU_DTYPE_UINT64:
      return GST_NPU_TENSOR_DATA_TYPE_UINT64;
    case NPU_DTYPE_FP32:
    default:
      return GST_NPU_TENSOR_DATA_TYPE_FLOAT32;
  }
}

/* Test hook (docs/gstreamer.md, "Test hooks"): GST_NPU_TEST_JOB_DELAY_US =
 * "min:max" makes every job wait a random time in [min, max] microseconds
 * before it runs. The wait ends early on flush, stop or quit, so tests of
 * timeouts and flushing do not wait it out. */
static void
test_delay (GstNpuBase * self, GstNpuSlot * slot)
{
  GstNpuBasePrivate *priv = PRIV (self);
  gint64 us, end;

  if (priv->delay_max_us <= 0)
    return;
  us = priv->delay_min_us;
  if (priv->delay_max_us > priv->delay_min_us)
    us += (gint64) g_rand_double_range (slot->rand, 0,
        (gdouble) (priv->delay_max_us - priv->delay_min_us + 1));
  end = g_get_monotonic_time () + us;

  g_mutex_lock (&priv->lock);
  while (!priv->flushing && !slot->quit)
    if (!g_cond_wait_until (&slot->cond, &priv->lock, end))
      break;
  g_mutex_unlock (&priv->lock);
}

static void
run_job (GstNpuBase * self, GstNpuSlot * slot, GstNpuItem * item)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuBaseClass *klass = GST_NPU_BASE_GET_CLASS (self);
  GstNpuResult *res = &item->result;
  GstVideoInfo *info = &item->format->info;
  GstBuffer *buf = GST_BUFFER_CAST (item->obj);
  GstVideoFrame frame;
  struct npu_tensor in;
  enum npu_status st;
  gint nout = npu_model_num_outputs (priv->model);
  gint64 t0, t1;
  GError *err = NULL;
  gint i;

  test_delay (self, slot);

  res->core = slot->core;
  res->frame_width = GST_VIDEO_INFO_WIDTH (info);
  res->frame_height = GST_VIDEO_INFO_HEIGHT (info);
  gst_npu_input_config_geometry (&priv->cfg, res->frame_width,
      res->frame_height, &res->region, &res->model_region);

  if (slot->pp_format != item->format) {
    gst_npu_format_unref (slot->pp_format);
    slot->pp_format = NULL;
    if (!gst_npu_preprocessor_configure (&slot->pp, info, &priv->cfg)) {
      item->status = NPU_ERR_UNSUPPORTED;
      item->error = g_strdup_printf ("cannot convert %s %dx%d to the model "
          "input", gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (info)),
          res->frame_width, res->frame_height);
      return;
    }
    slot->pp_format = gst_npu_format_ref (item->format);
  }

  if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READ)) {
    item->status = NPU_ERR_INVALID;
    item->error = g_strdup_printf ("frame %" G_GUINT64_FORMAT " could not be "
        "mapped: buffer of %" G_GSIZE_FORMAT " bytes is smaller than the "
        "caps require (%" G_GSIZE_FORMAT ")", res->frame,
        gst_buffer_get_size (buf), GST_VIDEO_INFO_SIZE (info));
    return;
  }
  if (!gst_npu_preprocessor_run (&slot->pp, &priv->cfg, &frame, slot->input)) {
    gst_video_frame_unmap (&frame);
    item->status = NPU_ERR_NOMEM;
    item->error = g_strdup ("could not map the preprocessing image");
    return;
  }
  gst_video_frame_unmap (&frame);

  in = priv->cfg.shape;
  in.data = slot->input;
  memset (slot->outs, 0, sizeof (struct npu_tensor) * nout);

  gst_npu_clear_core_error ();
  t0 = g_get_monotonic_time ();
  st = npu_session_run (slot->session, &in, 1, slot->outs, nout, NULL);
  t1 = g_get_monotonic_time ();
  res->run_ns = (guint64) (t1 - t0) * 1000;
  if (st != NPU_OK) {
    gchar *cause = gst_npu_take_core_error ();

    item->status = st;
    item->error = g_strdup_printf ("npu_session_run on core %d failed: %s%s%s",
        slot->core, npu_status_str (st), cause ? ": " : "", cause ? cause : "");
    item->error_is_timeout = st == NPU_ERR_TIMEOUT;
    g_free (cause);
    return;
  }

  res->n_outputs = nout;
  res->outputs = g_new0 (GstNpuTensor, MAX (nout, 1));
  for (i = 0; i < nout; i++) {
    const struct npu_io_info *oi = npu_model_output (priv->model, i);
    const struct npu_tensor *t = &slot->outs[i];
    GstNpuTensor *o = &res->outputs[i];
    int64_t nb = npu_tensor_nbytes (t);

    if (nb < 0 || (nb > 0 && !t->data) || t->ndim > GST_NPU_TENSOR_MAX_DIMS) {
      item->status = NPU_ERR_INTERNAL;
      item->error = g_strdup_printf ("output %d of the run is malformed", i);
      return;
    }
    if (oi && oi->name)
      o->name = g_quark_from_string (oi->name);
    else {
      gchar *n = g_strdup_printf ("output%d", i);
      o->name = g_quark_from_string (n);
      g_free (n);
    }
    o->data_type = map_dtype (t->dtype);
    o->num_dims = t->ndim;
    memcpy (o->dims, t->dims, sizeof (gint64) * t->ndim);
    o->data = g_bytes_new (t->data, (gsize) nb);
    o->scale = t->qscale;
    o->zero_point = t->qzero;
  }

  if (klass->process && !klass->process (self, res, &err)) {
    item->status = NPU_ERR_INVALID;
    item->error = g_strdup (err ? err->message : "post-processing failed");
    g_clear_error (&err);
    return;
  }
  item->has_result = TRUE;
  item->status = NPU_OK;
}

gpointer
gst_npu_slot_thread (gpointer data)
{
  GstNpuSlot *slot = data;
  GstNpuBase *self = slot->self;
  GstNpuBasePrivate *priv = PRIV (self);

  g_mutex_lock (&priv->lock);
  for (;;) {
    GstNpuItem *item;

    while (!slot->quit && g_queue_is_empty (&slot->jobs))
      g_cond_wait (&slot->cond, &priv->lock);
    if (slot->quit)
      break;
    item = g_queue_pop_head (&slot->jobs);
    item->state = ITEM_RUNNING;
    item->start_time = g_get_monotonic_time ();
    priv->running++;
    g_mutex_unlock (&priv->lock);

    run_job (self, slot, item);

    g_mutex_lock (&priv->lock);
    priv->running--;
    gst_npu_item_sched_done_locked (self, item);
    item->state = item->status == NPU_OK ? ITEM_DONE : ITEM_FAILED;
    {
      GList *l;

      for (l = priv->items.head; l && l->data != item; l = l->next) {
        GstNpuItem *earlier = l->data;

        if (earlier->is_job && !gst_npu_item_finished (earlier)) {
          priv->n_reordered++;
          break;
        }
      }
    }
    if (item->status == NPU_OK) {
      priv->n_completed++;
      priv->run_ns_total += item->result.run_ns;
      slot->jobs_done++;
    } else {
      priv->n_failed++;
    }
    g_cond_broadcast (&priv->cond);
  }
  g_mutex_unlock (&priv->lock);
  return NULL;
}
