/* SPDX-License-Identifier: MIT */
/*
 * gstnpubase.c: GstNpuBase, the machinery shared by npuinfer and npuembed.
 * This file is the element itself: GObject boilerplate, properties, pads,
 * state changes. The rest is split by job: gstnpuenums.c (the GTypes of the
 * enum properties), gstnpuerror.c (core log and error routing),
 * gstnpuslot.c (the FIFO items and the core slot workers), gstnpustream.c
 * (the data path between the pads), gstnpusetup.c (start and stop);
 * gstnpubase-priv.h holds the state they share.
 *
 * Data flow. The sink pad's chain function never runs a model. It numbers
 * the frame, decides whether to infer it (inference-interval, drop policy),
 * and appends an item to one FIFO that holds buffers and serialized events
 * in arrival order. A frame to infer is also queued on the next core slot,
 * round robin (slot 0, 1, 2, 0, ...). Each slot has its own npu_session and
 * its own worker thread that preprocesses the frame, calls npu_session_run
 * (blocking) and copies the outputs. The source pad has a task that pushes
 * the FIFO's head once it is finished, so frames, skipped frames and events
 * leave in exactly the order they came in, whatever order the slots finish
 * in.
 *
 * Back-pressure. At most max-in-flight inferred frames are in the FIFO. The
 * chain function waits for room (drop=none), or lets the frame through
 * without inference (drop=pass) or drops it (drop=discard).
 *
 * Locking. One mutex (priv->lock) guards the FIFO, the slot queues and the
 * counters; priv->cond is broadcast whenever an item finishes, leaves the
 * FIFO or flushing starts; each slot's cond wakes its worker. Properties are
 * guarded by the object lock; the few the streaming threads read while
 * PLAYING are plain integers read atomically.
 *
 * Flushing. FLUSH_START (and pad deactivation) takes pending jobs off the
 * slots and wakes every waiter. npu_session_run cannot be interrupted, so
 * FLUSH_STOP (and stop) wait for running jobs to return before the FIFO is
 * emptied; the wait is bounded by one inference per slot.
 */
#include <math.h>
#include <string.h>

#include "gstnpubase-priv.h"
#include "gstnpuenums.h"
#include "gstnpuerror.h"
#include "gstnpusetup.h"
#include "gstnpustream.h"
#include "npu/npu-backend.h"

#define DEFAULT_PROP_MODEL NULL
#define DEFAULT_PROP_MODEL_ID NULL
#define DEFAULT_PROP_BACKEND GST_NPU_BACKEND_AUTO
#define DEFAULT_PROP_CORES 7
#define DEFAULT_PROP_MAX_IN_FLIGHT 0
#define DEFAULT_PROP_INFERENCE_INTERVAL 1
#define DEFAULT_PROP_CACHE_DIR NULL
#define DEFAULT_PROP_DROP GST_NPU_DROP_NONE
#define DEFAULT_PROP_TIMEOUT 0
#define DEFAULT_PROP_RESIZE GST_NPU_RESIZE_STRETCH
#define DEFAULT_PROP_CHANNEL_ORDER GST_NPU_CHANNEL_ORDER_RGB
#define DEFAULT_PROP_NORMALIZATION GST_NPU_NORMALIZATION_AUTO
#define DEFAULT_PROP_BORDER_COLOR 0x000000
#define DEFAULT_PROP_CPU_THREADS 0

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_MODEL_ID,
  PROP_BACKEND,
  PROP_CORES,
  PROP_MAX_IN_FLIGHT,
  PROP_INFERENCE_INTERVAL,
  PROP_CACHE_DIR,
  PROP_DROP,
  PROP_TIMEOUT,
  PROP_RESIZE,
  PROP_CHANNEL_ORDER,
  PROP_NORMALIZATION,
  PROP_MEAN,
  PROP_STD,
  PROP_SCALE,
  PROP_OFFSET,
  PROP_BORDER_COLOR,
  PROP_CPU_THREADS,
  PROP_HW_PROFILE,
  PROP_STATS,
};

G_DEFINE_ABSTRACT_TYPE_WITH_PRIVATE (GstNpuBase, gst_npu_base,
    GST_TYPE_ELEMENT);

GstNpuBasePrivate *
gst_npu_base_get_private (GstNpuBase * self)
{
  return gst_npu_base_get_instance_private (self);
}

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

static void gst_npu_base_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_npu_base_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_npu_base_finalize (GObject * object);
static GstStateChangeReturn gst_npu_base_change_state (GstElement * element,
    GstStateChange transition);

/* ---- GObject / GstElement ------------------------------------------------ */

static GstStateChangeReturn
gst_npu_base_change_state (GstElement * element, GstStateChange transition)
{
  GstNpuBase *self = GST_NPU_BASE (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!gst_npu_base_start (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_npu_base_parent_class)->change_state (element,
      transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
      gst_npu_base_stop (self);
    return ret;
  }

  switch (transition) {
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      gst_npu_base_stop (self);
      break;
    default:
      break;
  }
  return ret;
}

static gboolean
get_triplet (const GValue * value, gfloat out[3])
{
  guint n = gst_value_array_get_size (value), i;

  if (n != 1 && n != 3)
    return FALSE;
  for (i = 0; i < 3; i++) {
    const GValue *v = gst_value_array_get_value (value, n == 1 ? 0 : i);

    if (G_VALUE_HOLDS_FLOAT (v))
      out[i] = g_value_get_float (v);
    else if (G_VALUE_HOLDS_DOUBLE (v))
      out[i] = (gfloat) g_value_get_double (v);
    else if (G_VALUE_HOLDS_INT (v))
      out[i] = (gfloat) g_value_get_int (v);
    else
      return FALSE;
  }
  return TRUE;
}

/* A mean/std/scale/offset property: 1 or 3 numbers (std: none of them 0);
 * *set records that the user gave it. A refused value is kept in
 * bad_setting and stops the element from starting: silently running with
 * another normalisation would give wrong results. */
static void
set_triplet_prop (GstNpuBase * self, GParamSpec * pspec, const GValue * value,
    gfloat out[3], gboolean * set)
{
  GstNpuBasePrivate *priv = PRIV (self);
  gfloat v[3];
  gchar *why = NULL;
  guint i;

  if (!get_triplet (value, v)) {
    why = g_strdup_printf ("%s needs 1 or 3 numbers, got %u", pspec->name,
        gst_value_array_get_size (value));
  } else {
    for (i = 0; i < 3 && !why; i++)
      if (!isfinite (v[i]) || (!strcmp (pspec->name, "std") && v[i] == 0.0f))
        why = g_strdup_printf ("%s <%g, %g, %g> has a %s value", pspec->name,
            v[0], v[1], v[2], isfinite (v[i]) ? "zero" : "non-finite");
  }
  if (why) {
    GST_WARNING_OBJECT (self, "%s", why);
    g_free (priv->bad_setting);
    priv->bad_setting = why;
    return;
  }
  if (priv->bad_setting && g_str_has_prefix (priv->bad_setting, pspec->name)) {
    g_free (priv->bad_setting);
    priv->bad_setting = NULL;
  }
  memcpy (out, v, sizeof (v));
  *set = TRUE;
}

static void
set_triplet (GValue * value, const gfloat in[3])
{
  guint i;

  for (i = 0; i < 3; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_FLOAT);
    g_value_set_float (&v, in[i]);
    gst_value_array_append_value (value, &v);
    g_value_unset (&v);
  }
}

static void
gst_npu_base_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNpuBase *self = GST_NPU_BASE (object);
  GstNpuBasePrivate *priv = PRIV (self);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_free (priv->model_path);
      priv->model_path = g_value_dup_string (value);
      break;
    case PROP_MODEL_ID:
      g_free (priv->model_id);
      priv->model_id = g_value_dup_string (value);
      break;
    case PROP_BACKEND:
      priv->backend = g_value_get_enum (value);
      break;
    case PROP_CORES:
      priv->cores = g_value_get_uint (value);
      break;
    case PROP_MAX_IN_FLIGHT:
      priv->max_in_flight = g_value_get_uint (value);
      break;
    case PROP_INFERENCE_INTERVAL:
      g_atomic_int_set (&priv->interval, (gint) g_value_get_uint (value));
      break;
    case PROP_CACHE_DIR:
      g_free (priv->cache_dir);
      priv->cache_dir = g_value_dup_string (value);
      break;
    case PROP_DROP:
      g_atomic_int_set (&priv->drop, g_value_get_enum (value));
      break;
    case PROP_TIMEOUT:
      g_atomic_int_set (&priv->timeout_ms, (gint) g_value_get_uint (value));
      break;
    case PROP_RESIZE:
      priv->resize = g_value_get_enum (value);
      priv->resize_set = TRUE;
      break;
    case PROP_CHANNEL_ORDER:
      priv->channel_order = g_value_get_enum (value);
      priv->channel_order_set = TRUE;
      break;
    case PROP_NORMALIZATION:
      priv->normalization = g_value_get_enum (value);
      break;
    case PROP_MEAN:
      set_triplet_prop (self, pspec, value, priv->mean, &priv->mean_set);
      break;
    case PROP_STD:
      set_triplet_prop (self, pspec, value, priv->std, &priv->std_set);
      break;
    case PROP_SCALE:
      set_triplet_prop (self, pspec, value, priv->scale, &priv->scale_set);
      break;
    case PROP_OFFSET:
      set_triplet_prop (self, pspec, value, priv->offset, &priv->offset_set);
      break;
    case PROP_BORDER_COLOR:
      priv->border_color = g_value_get_uint (value);
      break;
    case PROP_CPU_THREADS:
      priv->cpu_threads = g_value_get_int (value);
      break;
    case PROP_HW_PROFILE:{
      const gchar *v = g_value_get_string (value);
      int p;
      if (npu_hw_profile_parse (v ? v : "auto", &p) == NPU_OK)
        priv->hw_profile = p;
      else
        g_warning ("%s: hw-profile '%s': use auto, fast or verified; kept '%s'",
            GST_OBJECT_NAME (self), v, npu_hw_profile_name (priv->hw_profile));
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static GstStructure *
make_stats (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstStructure *s;
  GValue arr = G_VALUE_INIT;
  guint i;

  g_value_init (&arr, GST_TYPE_ARRAY);
  g_mutex_lock (&priv->lock);
  for (i = 0; i < priv->n_slots; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_UINT64);
    g_value_set_uint64 (&v, priv->slots[i].jobs_done);
    gst_value_array_append_value (&arr, &v);
    g_value_unset (&v);
  }
  s = gst_structure_new ("GstNpuStats",
      "frames", G_TYPE_UINT64, priv->frame_count,
      "submitted", G_TYPE_UINT64, priv->n_submitted,
      "completed", G_TYPE_UINT64, priv->n_completed,
      "failed", G_TYPE_UINT64, priv->n_failed,
      "dropped", G_TYPE_UINT64, priv->n_dropped,
      "skipped", G_TYPE_UINT64, priv->n_skipped,
      "reordered", G_TYPE_UINT64, priv->n_reordered,
      "in-flight", G_TYPE_UINT, priv->jobs_in_flight,
      "max-in-flight", G_TYPE_UINT, priv->window,
      "mean-run-us", G_TYPE_DOUBLE, priv->n_completed ?
      priv->run_ns_total / 1000.0 / priv->n_completed : 0.0,
      "backend", G_TYPE_STRING, priv->model ?
      npu_model_backend (priv->model) : "", NULL);
  {
    GValue dev = G_VALUE_INIT;

    /* the device scheduler's count per core, summed over every instance on
     * the device in this process (several streams) */
    g_value_init (&dev, GST_TYPE_ARRAY);
    for (i = 0; priv->sched && i < GST_NPU_SCHED_MAX_CORES; i++) {
      GValue v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_UINT64);
      g_value_set_uint64 (&v, gst_npu_sched_core_jobs (priv->sched, (gint) i));
      gst_value_array_append_value (&dev, &v);
      g_value_unset (&v);
    }
    gst_structure_take_value (s, "device-core-jobs", &dev);
  }
  g_mutex_unlock (&priv->lock);
  gst_structure_take_value (s, "core-jobs", &arr);
  return s;
}

static void
gst_npu_base_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNpuBase *self = GST_NPU_BASE (object);
  GstNpuBasePrivate *priv = PRIV (self);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string (value, priv->model_path);
      break;
    case PROP_MODEL_ID:
      g_value_set_string (value, priv->model_id);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, priv->backend);
      break;
    case PROP_CORES:
      g_value_set_uint (value, priv->cores);
      break;
    case PROP_MAX_IN_FLIGHT:
      g_value_set_uint (value, priv->max_in_flight);
      break;
    case PROP_INFERENCE_INTERVAL:
      g_value_set_uint (value, (guint) g_atomic_int_get (&priv->interval));
      break;
    case PROP_CACHE_DIR:
      g_value_set_string (value, priv->cache_dir);
      break;
    case PROP_DROP:
      g_value_set_enum (value, g_atomic_int_get (&priv->drop));
      break;
    case PROP_TIMEOUT:
      g_value_set_uint (value, (guint) g_atomic_int_get (&priv->timeout_ms));
      break;
    case PROP_RESIZE:
      g_value_set_enum (value, priv->resize);
      break;
    case PROP_CHANNEL_ORDER:
      g_value_set_enum (value, priv->channel_order);
      break;
    case PROP_NORMALIZATION:
      g_value_set_enum (value, priv->normalization);
      break;
    case PROP_MEAN:
      set_triplet (value, priv->mean);
      break;
    case PROP_STD:
      set_triplet (value, priv->std);
      break;
    case PROP_SCALE:
      set_triplet (value, priv->scale);
      break;
    case PROP_OFFSET:
      set_triplet (value, priv->offset);
      break;
    case PROP_BORDER_COLOR:
      g_value_set_uint (value, priv->border_color);
      break;
    case PROP_CPU_THREADS:
      g_value_set_int (value, priv->cpu_threads);
      break;
    case PROP_HW_PROFILE:
      g_value_set_string (value, npu_hw_profile_name (priv->hw_profile));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_npu_base_finalize (GObject * object)
{
  GstNpuBase *self = GST_NPU_BASE (object);
  GstNpuBasePrivate *priv = PRIV (self);

  g_free (priv->bad_setting);
  g_free (priv->model_path);
  g_free (priv->model_id);
  g_free (priv->cache_dir);
  g_mutex_clear (&priv->lock);
  g_cond_clear (&priv->cond);

  G_OBJECT_CLASS (gst_npu_base_parent_class)->finalize (object);
}

static void
gst_npu_base_init (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstElementClass *eklass = GST_ELEMENT_GET_CLASS (self);
  gint i;

  g_mutex_init (&priv->lock);
  g_cond_init (&priv->cond);
  g_queue_init (&priv->items);
  priv->flushing = TRUE;
  priv->srcresult = GST_FLOW_FLUSHING;

  priv->backend = DEFAULT_PROP_BACKEND;
  priv->cores = DEFAULT_PROP_CORES;
  priv->max_in_flight = DEFAULT_PROP_MAX_IN_FLIGHT;
  priv->interval = DEFAULT_PROP_INFERENCE_INTERVAL;
  priv->drop = DEFAULT_PROP_DROP;
  priv->timeout_ms = DEFAULT_PROP_TIMEOUT;
  priv->resize = DEFAULT_PROP_RESIZE;
  priv->channel_order = DEFAULT_PROP_CHANNEL_ORDER;
  priv->normalization = DEFAULT_PROP_NORMALIZATION;
  priv->border_color = DEFAULT_PROP_BORDER_COLOR;
  priv->cpu_threads = DEFAULT_PROP_CPU_THREADS;
  for (i = 0; i < 3; i++) {
    priv->mean[i] = 0.0f;
    priv->std[i] = 1.0f;
    priv->scale[i] = 1.0f / 255.0f;
    priv->offset[i] = 0.0f;
  }

  priv->sinkpad = gst_pad_new_from_template (gst_element_class_get_pad_template
      (eklass, "sink"), "sink");
  gst_pad_set_chain_function (priv->sinkpad,
      GST_DEBUG_FUNCPTR (gst_npu_base_chain));
  gst_pad_set_event_function (priv->sinkpad,
      GST_DEBUG_FUNCPTR (gst_npu_base_sink_event));
  gst_pad_set_query_function (priv->sinkpad,
      GST_DEBUG_FUNCPTR (gst_npu_base_sink_query));
  gst_pad_set_activatemode_function (priv->sinkpad,
      GST_DEBUG_FUNCPTR (gst_npu_base_sink_activate_mode));
  GST_PAD_SET_PROXY_CAPS (priv->sinkpad);
  GST_PAD_SET_PROXY_ALLOCATION (priv->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), priv->sinkpad);

  priv->srcpad = gst_pad_new_from_template (gst_element_class_get_pad_template
      (eklass, "src"), "src");
  gst_pad_set_query_function (priv->srcpad,
      GST_DEBUG_FUNCPTR (gst_npu_base_src_query));
  gst_pad_set_activatemode_function (priv->srcpad,
      GST_DEBUG_FUNCPTR (gst_npu_base_src_activate_mode));
  GST_PAD_SET_PROXY_CAPS (priv->srcpad);
  GST_PAD_SET_PROXY_ALLOCATION (priv->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), priv->srcpad);
}

static void
gst_npu_base_class_init (GstNpuBaseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = rw | GST_PARAM_MUTABLE_PLAYING;

  gst_npu_install_core_log ();
  /* subclasses replace it with their own category in their class_init */
  klass->debug_category = gst_npu_core_debug;

  gobject_class->set_property = gst_npu_base_set_property;
  gobject_class->get_property = gst_npu_base_get_property;
  gobject_class->finalize = gst_npu_base_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_npu_base_change_state);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  /**
   * GstNpuBase:model:
   *
   * The model: an ONNX file (.onnx, compiled when the element starts) or a
   * compiled OpenNPU artifact (.npub). It must have one image input
   * ([1,C,H,W] or [1,H,W,C], C = 1 or 3; float32, float16, uint8 or int8).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model",
          "Model file: .onnx (compiled on start) or .npub (compiled "
          "artifact), with one image input", DEFAULT_PROP_MODEL, rw_ready));

  /**
   * GstNpuBase:model-id:
   *
   * The identifier written into the metadata (model_id fields). NULL means
   * the base name of the model file.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_MODEL_ID,
      g_param_spec_string ("model-id", "Model id",
          "Identifier of the model in the metadata (NULL: the model file's "
          "base name)", DEFAULT_PROP_MODEL_ID, rw_ready));

  /**
   * GstNpuBase:backend:
   *
   * Where the model runs. `auto` uses the NPU when a driver is present and
   * the simulator otherwise; `cpu` runs every op on the CPU executor.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Execution backend", GST_TYPE_NPU_BACKEND, DEFAULT_PROP_BACKEND,
          rw_ready));

  /**
   * GstNpuBase:cores:
   *
   * Bit mask of the RK3588 NPU cores to use (bit 0 = core 0, ...). The
   * element opens one session per core and sends frames to them in turn.
   * 7 = all three cores.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_CORES,
      g_param_spec_uint ("cores", "Cores",
          "Bit mask of NPU cores to use round robin (1 = core 0, 7 = all "
          "three)", 1, 7, DEFAULT_PROP_CORES, rw_ready));

  /**
   * GstNpuBase:max-in-flight:
   *
   * Largest number of frames that may be submitted for inference but not
   * yet pushed downstream. When it is reached the drop policy applies.
   * 0 = two per core slot (one running, one waiting). It also sets the
   * latency the element reports: max-in-flight frame durations.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_MAX_IN_FLIGHT,
      g_param_spec_uint ("max-in-flight", "Max in flight",
          "Frames submitted but not yet pushed, before the drop policy "
          "applies (0 = 2 per core slot)", 0, 64, DEFAULT_PROP_MAX_IN_FLIGHT,
          rw_ready));

  /**
   * GstNpuBase:inference-interval:
   *
   * Infer every Nth frame (the first frame is always inferred). The other
   * frames pass through in order, without metadata.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_INFERENCE_INTERVAL,
      g_param_spec_uint ("inference-interval", "Inference interval",
          "Infer every Nth frame; the others pass through without metadata",
          1, G_MAXINT, DEFAULT_PROP_INFERENCE_INTERVAL, rw_playing));

  /**
   * GstNpuBase:cache-dir:
   *
   * Folder for compiled models. An .onnx model compiled once is reused from
   * here on later starts. NULL = no cache.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_CACHE_DIR,
      g_param_spec_string ("cache-dir", "Cache directory",
          "Folder where compiled models are cached (NULL = no cache)",
          DEFAULT_PROP_CACHE_DIR, rw_ready));

  /**
   * GstNpuBase:drop:
   *
   * What to do with a frame that arrives while max-in-flight frames are in
   * flight: block upstream (`none`, back-pressure), pass it downstream in
   * order without metadata (`pass`), or drop it (`discard`).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_DROP,
      g_param_spec_enum ("drop", "Drop policy",
          "What happens to a frame when max-in-flight frames are in flight",
          GST_TYPE_NPU_DROP_POLICY, DEFAULT_PROP_DROP, rw_playing));

  /**
   * GstNpuBase:timeout:
   *
   * Milliseconds a frame's inference may take (queueing on its core
   * included) before the element fails with a STREAM error. 0 (default) =
   * automatic: 10 s on the device backends (rknpu, rocket), no limit on the
   * simulator and the CPU, which may just be slow. G_MAXINT = no limit.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_TIMEOUT,
      g_param_spec_uint ("timeout", "Timeout",
          "Milliseconds one inference may take before the element fails "
          "(0 = 10 s on rknpu/rocket, no limit on sim/cpu)", 0, G_MAXINT,
          DEFAULT_PROP_TIMEOUT, rw_playing));

  /**
   * GstNpuBase:resize:
   *
   * How a frame is fitted to the model's input size. Default: the model's
   * `opennpu.resize` metadata if present, else stretch.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_RESIZE,
      g_param_spec_enum ("resize", "Resize",
          "How frames are fitted to the model input (default: model "
          "metadata, else stretch)", GST_TYPE_NPU_RESIZE_MODE,
          DEFAULT_PROP_RESIZE, rw_ready));

  /**
   * GstNpuBase:channel-order:
   *
   * Colour channel order the model expects. Default: the model's
   * `opennpu.channel-order` metadata if present, else RGB.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_CHANNEL_ORDER,
      g_param_spec_enum ("channel-order", "Channel order",
          "Channel order of the model input (default: model metadata, else "
          "rgb)", GST_TYPE_NPU_CHANNEL_ORDER, DEFAULT_PROP_CHANNEL_ORDER,
          rw_ready));

  /**
   * GstNpuBase:normalization:
   *
   * How pixels become values of a float input. `auto` uses the mean/std or
   * scale/offset in the model's ONNX metadata_props when present (keys in
   * docs/gstreamer.md), else mean-std with the mean and std properties.
   * Properties that were set explicitly always win over metadata.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_NORMALIZATION,
      g_param_spec_enum ("normalization", "Normalization",
          "How pixels map to float input values", GST_TYPE_NPU_NORMALIZATION,
          DEFAULT_PROP_NORMALIZATION, rw_ready));

  /**
   * GstNpuBase:mean:
   *
   * Per-channel mean (R, G, B; in 0..1 pixel units) for mean-std
   * normalisation: value = (pixel / 255 - mean) / std. One number applies to
   * all channels. Default <0, 0, 0> unless the model's metadata has one.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_MEAN,
      gst_param_spec_array ("mean", "Mean",
          "Per-channel mean R,G,B in 0..1 units for mean-std normalisation, "
          "e.g. \"<0.5,0.5,0.5>\" (default <0,0,0> or model metadata)",
          g_param_spec_float ("mean-value", "Mean value", "One channel's mean",
              -G_MAXFLOAT, G_MAXFLOAT, 0.0f, rw), rw_ready));

  /**
   * GstNpuBase:std:
   *
   * Per-channel standard deviation (R, G, B; 0..1 units) for mean-std
   * normalisation. Default <1, 1, 1> unless the model's metadata has one.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_STD,
      gst_param_spec_array ("std", "Standard deviation",
          "Per-channel std R,G,B in 0..1 units for mean-std normalisation, "
          "e.g. \"<0.5,0.5,0.5>\" (default <1,1,1> or model metadata)",
          g_param_spec_float ("std-value", "Std value", "One channel's std",
              -G_MAXFLOAT, G_MAXFLOAT, 1.0f, rw), rw_ready));

  /**
   * GstNpuBase:scale:
   *
   * Per-channel factor for scale-offset normalisation: value = pixel (0..255)
   * * scale + offset. Default <1/255, 1/255, 1/255>.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_SCALE,
      gst_param_spec_array ("scale", "Scale",
          "Per-channel factor for scale-offset normalisation, value = pixel "
          "* scale + offset (default <1/255,1/255,1/255> or model metadata)",
          g_param_spec_float ("scale-value", "Scale value",
              "One channel's scale", -G_MAXFLOAT, G_MAXFLOAT, 1.0f / 255.0f,
              rw), rw_ready));

  /**
   * GstNpuBase:offset:
   *
   * Per-channel offset for scale-offset normalisation. Default <0, 0, 0>.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_OFFSET,
      gst_param_spec_array ("offset", "Offset",
          "Per-channel offset for scale-offset normalisation (default "
          "<0,0,0> or model metadata)",
          g_param_spec_float ("offset-value", "Offset value",
              "One channel's offset", -G_MAXFLOAT, G_MAXFLOAT, 0.0f, rw),
          rw_ready));

  /**
   * GstNpuBase:border-color:
   *
   * Fill colour (0xRRGGBB) of the letterbox border.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_BORDER_COLOR,
      g_param_spec_uint ("border-color", "Border color",
          "Letterbox border colour as 0xRRGGBB", 0, 0xffffff,
          DEFAULT_PROP_BORDER_COLOR, rw_ready));

  /**
   * GstNpuBase:cpu-threads:
   *
   * Threads each session may use for operations that run on the CPU.
   * 0 = the number of CPUs divided by the number of core slots.
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_CPU_THREADS,
      g_param_spec_int ("cpu-threads", "CPU threads",
          "Threads per session for CPU operations (0 = CPUs / core slots)",
          0, 256, DEFAULT_PROP_CPU_THREADS, rw_ready));

  /**
   * GstNpuBase:hw-profile:
   *
   * Register patterns the compiled program may use (docs/evidence.md,
   * "Compile profiles"): "fast" (every pattern the back end knows),
   * "verified" (only NPU tasks the evidence ledger covers at level V, M or O;
   * other operations run on the CPU) or "auto" ($NPU_HW_PROFILE, else
   * verified on rknpu and rocket, fast on sim).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_HW_PROFILE,
      g_param_spec_string ("hw-profile", "Hardware profile",
          "Register patterns of the compiled program: auto, fast or verified",
          "auto", rw_ready));

  /**
   * GstNpuBase:stats:
   *
   * Counters since the element started, as a GstNpuStats structure:
   * frames, submitted, completed, failed, dropped, skipped, reordered
   * (uint64; reordered counts jobs that finished while an earlier frame's
   * job was still running, and were held back to keep the order),
   * in-flight, max-in-flight (uint), mean-run-us (double, mean
   * npu_session_run time), backend (string, the backend the model runs on;
   * empty when stopped), core-jobs (array of uint64, completed jobs per
   * core slot, in core order) and device-core-jobs (array of uint64, the
   * frames the device's scheduler handed each core 0..2, summed over every
   * element instance on the device in the process; empty when stopped).
   *
   * Since: 0.1
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Frame and per-core job counters (GstNpuStats structure)",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_type_mark_as_plugin_api (GST_TYPE_NPU_BASE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NPU_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NPU_DROP_POLICY, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NPU_RESIZE_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NPU_CHANNEL_ORDER, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NPU_NORMALIZATION, 0);
}

const gchar *
gst_npu_base_get_model_id (GstNpuBase * self)
{
  return PRIV (self)->active_model_id;
}
