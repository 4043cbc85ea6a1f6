/* SPDX-License-Identifier: MIT */
/*
 * gstnpustream.c: GstNpuBase's data path, from the sink pad to the source
 * pad. The sink pad's chain function numbers each frame, applies
 * inference-interval and the drop policy, queues the frames to infer on the
 * core slots the device's scheduler picks (gstnpusched.c) and appends every
 * buffer and serialized event to the FIFO; the source pad task pushes the FIFO's head once it is finished.
 * Also here: the flushing state, flush events, draining for serialized
 * queries, the latency query and pad activation.
 */
#include "gstnpuslot.h"
#include "gstnpustream.h"

static void gst_npu_base_loop (GstPad * pad);

/* ---- FIFO state ---------------------------------------------------------- */

/* Empties the FIFO once no worker holds an item (priv->lock held, flushing
 * set so that no new work starts). */
void
gst_npu_clear_items_locked (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuItem *item;

  gst_npu_cancel_locked (self);
  while (priv->running > 0)
    g_cond_wait (&priv->cond, &priv->lock);
  while ((item = g_queue_pop_head (&priv->items)))
    gst_npu_item_free (item);
  priv->jobs_in_flight = 0;
  /* an item being pushed by the task is counted until it is pushed */
  priv->n_unpushed = 0;
}

/* Enters the flushing state (downstream sees FLUSHING, the jobs not started are dropped and
 * everyone waiting is woken) or leaves it (priv->lock held). */
void
gst_npu_set_flushing_locked (GstNpuBase * self, gboolean flushing)
{
  GstNpuBasePrivate *priv = PRIV (self);

  priv->flushing = flushing;
  priv->srcresult = flushing ? GST_FLOW_FLUSHING : GST_FLOW_OK;
  if (flushing)
    gst_npu_cancel_locked (self);
}

/* GST_FLOW_OK while streaming goes on, else why new data is refused: FLUSHING, or what
 * pushing downstream returned (priv->lock held). */
static GstFlowReturn
stream_state_locked (GstNpuBasePrivate * priv)
{
  return priv->flushing ? GST_FLOW_FLUSHING : priv->srcresult;
}

/* ---- pads ---------------------------------------------------------------- */

GstFlowReturn
gst_npu_base_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstNpuBase *self = GST_NPU_BASE (parent);
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuItem *item;
  GstFlowReturn ret;
  guint interval = (guint) g_atomic_int_get (&priv->interval);
  GstNpuDropPolicy drop = g_atomic_int_get (&priv->drop);
  gboolean infer;
  guint64 frame;

  g_mutex_lock (&priv->lock);
  ret = stream_state_locked (priv);
  if (ret != GST_FLOW_OK)
    goto out_unlock;
  if (!priv->format) {
    g_mutex_unlock (&priv->lock);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("buffer arrived before any accepted caps (unsupported format?); "
            "sink caps must be %s", VIDEO_CAPS));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }

  frame = priv->frame_count++;
  infer = priv->n_slots > 0 && (interval <= 1 || frame % interval == 0);
  if (!infer)
    priv->n_skipped++;

  while (infer && priv->jobs_in_flight >= priv->window) {
    if (drop != GST_NPU_DROP_NONE) {
      infer = FALSE;
      priv->n_dropped++;
      GST_LOG_OBJECT (self, "all %u slots busy: frame %" G_GUINT64_FORMAT
          " %s", priv->window, frame, drop == GST_NPU_DROP_PASS ?
          "passes without inference" : "dropped");
      if (drop == GST_NPU_DROP_DISCARD) {
        ret = GST_FLOW_OK;
        goto out_unlock;
      }
      break;
    }
    GST_LOG_OBJECT (self, "window full (%u), waiting", priv->window);
    g_cond_wait (&priv->cond, &priv->lock);
    ret = stream_state_locked (priv);
    if (ret != GST_FLOW_OK)
      goto out_unlock;
  }

  item = g_new0 (GstNpuItem, 1);
  item->obj = GST_MINI_OBJECT_CAST (buffer);
  item->format = gst_npu_format_ref (priv->format);
  item->result.frame = frame;
  item->result.pts = GST_BUFFER_PTS (buffer);
  item->submit_time = g_get_monotonic_time ();
  if (infer) {
    /* The device's scheduler picks the core, shared with every other
     * instance on the device (one instance alone: round robin). */
    gint core = gst_npu_sched_pick (priv->sched, priv->slot_mask);
    GstNpuSlot *slot = &priv->slots[core >= 0 ? priv->core_slot[core] : 0];

    item->is_job = TRUE;
    item->sched_held = core >= 0;
    item->sched_core = core;
    item->state = ITEM_PENDING;
    item->slot = slot->index;
    g_queue_push_tail (&slot->jobs, item);
    g_cond_signal (&slot->cond);
    priv->jobs_in_flight++;
    priv->n_submitted++;
  } else {
    item->state = ITEM_PASS;
  }
  g_queue_push_tail (&priv->items, item);
  priv->n_unpushed++;
  g_cond_broadcast (&priv->cond);
  g_mutex_unlock (&priv->lock);
  return GST_FLOW_OK;

out_unlock:
  g_mutex_unlock (&priv->lock);
  gst_buffer_unref (buffer);
  return ret;
}

static gboolean
queue_event (GstNpuBase * self, GstEvent * event)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuItem *item;

  g_mutex_lock (&priv->lock);
  if (stream_state_locked (priv) != GST_FLOW_OK) {
    GST_DEBUG_OBJECT (self, "not forwarding %" GST_PTR_FORMAT ": %s", event,
        gst_flow_get_name (priv->srcresult));
    g_mutex_unlock (&priv->lock);
    gst_event_unref (event);
    return FALSE;
  }
  item = g_new0 (GstNpuItem, 1);
  item->obj = GST_MINI_OBJECT_CAST (event);
  item->state = ITEM_PASS;
  g_queue_push_tail (&priv->items, item);
  priv->n_unpushed++;
  g_cond_broadcast (&priv->cond);
  g_mutex_unlock (&priv->lock);
  return TRUE;
}

gboolean
gst_npu_base_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstNpuBase *self = GST_NPU_BASE (parent);
  GstNpuBasePrivate *priv = PRIV (self);
  gboolean ret;

  GST_LOG_OBJECT (self, "event %" GST_PTR_FORMAT, event);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      ret = gst_pad_push_event (priv->srcpad, event);
      g_mutex_lock (&priv->lock);
      gst_npu_set_flushing_locked (self, TRUE);
      g_mutex_unlock (&priv->lock);
      gst_pad_pause_task (priv->srcpad);
      return ret;

    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&priv->lock);
      gst_npu_clear_items_locked (self);
      gst_npu_set_flushing_locked (self, FALSE);
      g_mutex_unlock (&priv->lock);
      ret = gst_pad_push_event (priv->srcpad, event);
      if (GST_PAD_IS_ACTIVE (priv->srcpad))
        gst_pad_start_task (priv->srcpad, (GstTaskFunction) gst_npu_base_loop,
            priv->srcpad, NULL);
      return ret;

    case GST_EVENT_CAPS:{
      GstCaps *caps;
      GstVideoInfo info;

      gst_event_parse_caps (event, &caps);
      if (!gst_video_info_from_caps (&info, caps)) {
        GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
            ("cannot parse caps %" GST_PTR_FORMAT, caps));
        gst_event_unref (event);
        return FALSE;
      }
      g_mutex_lock (&priv->lock);
      gst_npu_format_unref (priv->format);
      priv->format = gst_npu_format_new (&info);
      g_mutex_unlock (&priv->lock);
      GST_DEBUG_OBJECT (self, "format %s %dx%d",
          gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&info)),
          GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info));
      return queue_event (self, event);
    }

    default:
      if (GST_EVENT_IS_SERIALIZED (event))
        return queue_event (self, event);
      return gst_pad_push_event (priv->srcpad, event);
  }
}

/* Waits until every item received so far has been pushed downstream, for
 * serialized queries. FALSE if flushing or streaming stopped. */
static gboolean
drain (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  gboolean ok;

  g_mutex_lock (&priv->lock);
  while (priv->n_unpushed > 0 && stream_state_locked (priv) == GST_FLOW_OK)
    g_cond_wait (&priv->cond, &priv->lock);
  ok = stream_state_locked (priv) == GST_FLOW_OK;
  g_mutex_unlock (&priv->lock);
  return ok;
}

gboolean
gst_npu_base_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstNpuBase *self = GST_NPU_BASE (parent);

  if (GST_QUERY_IS_SERIALIZED (query)) {
    GST_DEBUG_OBJECT (self, "draining for %" GST_PTR_FORMAT, query);
    if (!drain (self))
      return FALSE;
  }
  return gst_pad_query_default (pad, parent, query);
}

gboolean
gst_npu_base_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstNpuBase *self = GST_NPU_BASE (parent);
  GstNpuBasePrivate *priv = PRIV (self);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max, ours = 0;

    if (!gst_pad_peer_query (priv->sinkpad, query))
      return FALSE;
    gst_query_parse_latency (query, &live, &min, &max);

    /* A frame can wait behind max-in-flight earlier frames before it leaves:
     * that many frame durations. */
    g_mutex_lock (&priv->lock);
    if (priv->format && GST_VIDEO_INFO_FPS_N (&priv->format->info) > 0)
      ours = gst_util_uint64_scale_int (priv->window * GST_SECOND,
          GST_VIDEO_INFO_FPS_D (&priv->format->info),
          GST_VIDEO_INFO_FPS_N (&priv->format->info));
    g_mutex_unlock (&priv->lock);

    GST_DEBUG_OBJECT (self, "upstream latency min %" GST_TIME_FORMAT " max %"
        GST_TIME_FORMAT ", ours %" GST_TIME_FORMAT, GST_TIME_ARGS (min),
        GST_TIME_ARGS (max), GST_TIME_ARGS (ours));
    min += ours;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += ours;
    gst_query_set_latency (query, live, min, max);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

gboolean
gst_npu_base_sink_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstNpuBase *self = GST_NPU_BASE (parent);
  GstNpuBasePrivate *priv = PRIV (self);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;

  g_mutex_lock (&priv->lock);
  gst_npu_set_flushing_locked (self, !active);
  g_mutex_unlock (&priv->lock);
  if (!active) {
    /* wait for the chain function to leave */
    GST_PAD_STREAM_LOCK (pad);
    g_mutex_lock (&priv->lock);
    gst_npu_clear_items_locked (self);
    g_mutex_unlock (&priv->lock);
    GST_PAD_STREAM_UNLOCK (pad);
  }
  return TRUE;
}

gboolean
gst_npu_base_src_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstNpuBase *self = GST_NPU_BASE (parent);
  GstNpuBasePrivate *priv = PRIV (self);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;

  g_mutex_lock (&priv->lock);
  gst_npu_set_flushing_locked (self, !active);
  g_mutex_unlock (&priv->lock);
  if (active)
    return gst_pad_start_task (pad, (GstTaskFunction) gst_npu_base_loop, pad,
        NULL);
  return gst_pad_stop_task (pad);
}

/* The source pad task: pushes the FIFO's head once it is finished. */
static void
gst_npu_base_loop (GstPad * pad)
{
  GstNpuBase *self = GST_NPU_BASE (GST_PAD_PARENT (pad));
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuBaseClass *klass = GST_NPU_BASE_GET_CLASS (self);
  GstNpuItem *item;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean error_posted = FALSE;

  g_mutex_lock (&priv->lock);
  for (;;) {
    gint timeout_ms;

    if (priv->flushing)
      goto flushing;
    item = g_queue_peek_head (&priv->items);
    if (item && gst_npu_item_finished (item))
      break;
    timeout_ms = g_atomic_int_get (&priv->timeout_ms);
    if (timeout_ms == 0)
      timeout_ms = priv->auto_timeout_ms;
    if (item && timeout_ms > 0) {
      gint64 t0 = item->state == ITEM_RUNNING ? item->start_time :
          item->submit_time;
      gint64 deadline = t0 + (gint64) timeout_ms * 1000;

      if (g_get_monotonic_time () >= deadline) {
        guint64 frame = item->result.frame;
        gint core = priv->slots[item->slot].core;

        /* upstream sees ERROR from the moment the error is posted */
        ret = GST_FLOW_ERROR;
        priv->srcresult = ret;
        g_cond_broadcast (&priv->cond);
        g_mutex_unlock (&priv->lock);
        GST_ELEMENT_ERROR (self, STREAM, FAILED,
            ("Inference timed out."), ("frame %" G_GUINT64_FORMAT " on NPU "
                "core %d did not finish within %d ms (timeout property)",
                frame, core, timeout_ms));
        error_posted = TRUE;
        goto pause;
      }
      g_cond_wait_until (&priv->cond, &priv->lock, deadline);
    } else {
      g_cond_wait (&priv->cond, &priv->lock);
    }
  }

  g_queue_pop_head (&priv->items);
  if (item->is_job) {
    priv->jobs_in_flight--;
    g_cond_broadcast (&priv->cond);
  }
  g_mutex_unlock (&priv->lock);

  if (GST_IS_BUFFER (item->obj)) {
    GstBuffer *buf = GST_BUFFER_CAST (item->obj);

    item->obj = NULL;
    if (item->state == ITEM_FAILED) {
      g_mutex_lock (&priv->lock);
      if (!priv->flushing)
        priv->srcresult = GST_FLOW_ERROR;
      g_cond_broadcast (&priv->cond);
      g_mutex_unlock (&priv->lock);
      gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR,
          GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
          g_strdup (item->error_is_timeout ? "Inference timed out." :
              "Inference failed."), g_strdup (item->error), __FILE__,
          GST_FUNCTION, __LINE__);
      error_posted = TRUE;
      gst_buffer_unref (buf);
      ret = GST_FLOW_ERROR;
    } else {
      if (item->has_result && klass->attach) {
        buf = gst_buffer_make_writable (buf);
        klass->attach (self, buf, &item->result);
      }
      ret = gst_pad_push (priv->srcpad, buf);
    }
  } else {
    GstEvent *event = GST_EVENT_CAST (item->obj);
    gboolean is_eos = GST_EVENT_TYPE (event) == GST_EVENT_EOS;

    item->obj = NULL;
    gst_pad_push_event (priv->srcpad, event);
    if (is_eos)
      ret = GST_FLOW_EOS;
  }
  gst_npu_item_free (item);

  g_mutex_lock (&priv->lock);
  if (priv->n_unpushed > 0)
    priv->n_unpushed--;
  if (ret != GST_FLOW_OK && !priv->flushing)
    priv->srcresult = ret;
  g_cond_broadcast (&priv->cond);
  g_mutex_unlock (&priv->lock);

  if (ret != GST_FLOW_OK)
    goto pause;
  return;

flushing:
  g_mutex_unlock (&priv->lock);
  GST_DEBUG_OBJECT (self, "flushing, pausing task");
  gst_pad_pause_task (pad);
  return;

pause:
  GST_DEBUG_OBJECT (self, "pausing task: %s", gst_flow_get_name (ret));
  gst_pad_pause_task (pad);
  if (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS) {
    if (!error_posted && ret != GST_FLOW_FLUSHING)
      GST_ELEMENT_FLOW_ERROR (self, ret);
    if (ret != GST_FLOW_FLUSHING)
      gst_pad_push_event (priv->srcpad, gst_event_new_eos ());
  }
}
