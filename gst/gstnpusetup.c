/* SPDX-License-Identifier: MIT */
/*
 * gstnpusetup.c: GstNpuBase's start and stop (READY <-> PAUSED). start()
 * loads the model with the backend, cores and cache of the properties,
 * checks its input, sets up the preprocessing (resize, channel order and
 * normalisation from the properties and the model's metadata), opens one
 * session per core slot and starts the slots' worker threads; stop() undoes
 * all of it, also after a failed or partial start.
 */
#include <string.h>

#include "gstnpuerror.h"
#include "gstnpumodelinfo.h"
#include "gstnpusetup.h"
#include "gstnpuslot.h"
#include "gstnpustream.h"

/* timeout=0 on a device backend (rknpu, rocket): a job that long has hung */
#define DEVICE_AUTO_TIMEOUT_MS 10000

static const gchar *
backend_name (GstNpuBackend b)
{
  switch (b) {
    case GST_NPU_BACKEND_SIM:
      return "sim";
    case GST_NPU_BACKEND_RKNPU:
      return "rknpu";
    case GST_NPU_BACKEND_ROCKET:
      return "rocket";
    case GST_NPU_BACKEND_CPU:
      return "cpu";
    case GST_NPU_BACKEND_AUTO:
    default:
      return "auto";
  }
}

/* Chooses the affine normalisation: properties the user set win, then the
 * model's metadata, then the property defaults. */
static void
setup_normalization (GstNpuBase * self, const GstNpuModelInfo * mi)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuInputConfig *cfg = &priv->cfg;
  GstNpuNormalization mode = priv->normalization;
  gfloat mean[3], std[3], scale[3], offset[3];
  gint c, rgb;

  memcpy (mean, priv->mean, sizeof (mean));
  memcpy (std, priv->std, sizeof (std));
  memcpy (scale, priv->scale, sizeof (scale));
  memcpy (offset, priv->offset, sizeof (offset));

  if (mode == GST_NPU_NORMALIZATION_AUTO) {
    mode = GST_NPU_NORMALIZATION_MEAN_STD;
    if (mi && (mi->has_scale || mi->has_offset) && !priv->mean_set
        && !priv->std_set)
      mode = GST_NPU_NORMALIZATION_SCALE_OFFSET;
  }
  if (mi) {
    if (mi->has_mean && !priv->mean_set)
      memcpy (mean, mi->mean, sizeof (mean));
    if (mi->has_std && !priv->std_set)
      memcpy (std, mi->std, sizeof (std));
    if (mi->has_scale && !priv->scale_set)
      memcpy (scale, mi->scale, sizeof (scale));
    if (mi->has_offset && !priv->offset_set)
      memcpy (offset, mi->offset, sizeof (offset));
  }

  /* mean/std/scale/offset are given in R, G, B order; the tensor's channel
   * c holds colour component rgb (swapped for bgr). */
  for (c = 0; c < 3; c++) {
    rgb = cfg->order == GST_NPU_CHANNEL_ORDER_BGR && cfg->channels == 3 ?
        2 - c : c;
    switch (mode) {
      case GST_NPU_NORMALIZATION_MEAN_STD:{
        gfloat s = std[rgb] != 0.0f ? std[rgb] : 1.0f;
        cfg->mul[c] = 1.0f / (255.0f * s);
        cfg->add[c] = -mean[rgb] / s;
        break;
      }
      case GST_NPU_NORMALIZATION_SCALE_OFFSET:
        cfg->mul[c] = scale[rgb];
        cfg->add[c] = offset[rgb];
        break;
      default:
        cfg->mul[c] = 1.0f;
        cfg->add[c] = 0.0f;
        break;
    }
  }
  /* a grey model gets the mean of the three channels' parameters */
  if (cfg->channels == 1) {
    cfg->mul[0] = (cfg->mul[0] + cfg->mul[1] + cfg->mul[2]) / 3.0f;
    cfg->add[0] = (cfg->add[0] + cfg->add[1] + cfg->add[2]) / 3.0f;
  }
  GST_INFO_OBJECT (self, "normalisation: tensor = pixel * (%g, %g, %g) + "
      "(%g, %g, %g)", cfg->mul[0], cfg->mul[1], cfg->mul[2], cfg->add[0],
      cfg->add[1], cfg->add[2]);
}

static void
parse_test_delay (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  const gchar *env = g_getenv ("GST_NPU_TEST_JOB_DELAY_US");
  gchar *end = NULL;

  priv->delay_min_us = priv->delay_max_us = 0;
  if (!env || !*env)
    return;
  priv->delay_min_us = g_ascii_strtoll (env, &end, 10);
  priv->delay_max_us = priv->delay_min_us;
  if (end && *end == ':')
    priv->delay_max_us = g_ascii_strtoll (end + 1, NULL, 10);
  if (priv->delay_min_us < 0 || priv->delay_max_us < priv->delay_min_us)
    priv->delay_min_us = priv->delay_max_us = 0;
  else
    GST_WARNING_OBJECT (self, "test hook: every job waits %" G_GINT64_FORMAT
        "..%" G_GINT64_FORMAT " us (GST_NPU_TEST_JOB_DELAY_US)",
        priv->delay_min_us, priv->delay_max_us);
}

void
gst_npu_base_stop (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuBaseClass *klass = GST_NPU_BASE_GET_CLASS (self);
  struct npu_model *model;
  guint i;

  g_mutex_lock (&priv->lock);
  priv->flushing = TRUE;
  for (i = 0; i < priv->n_slots; i++)
    priv->slots[i].quit = TRUE;
  gst_npu_cancel_locked (self);
  g_mutex_unlock (&priv->lock);

  for (i = 0; i < priv->n_slots; i++) {
    GstNpuSlot *slot = &priv->slots[i];

    if (slot->thread)
      g_thread_join (slot->thread);
    slot->thread = NULL;
  }

  g_mutex_lock (&priv->lock);
  gst_npu_clear_items_locked (self);
  g_clear_pointer (&priv->format, gst_npu_format_unref);
  g_mutex_unlock (&priv->lock);

  for (i = 0; i < priv->n_slots; i++) {
    GstNpuSlot *slot = &priv->slots[i];

    if (slot->session)
      npu_session_destroy (slot->session);
    slot->session = NULL;
    gst_npu_preprocessor_clear (&slot->pp);
    g_clear_pointer (&slot->pp_format, gst_npu_format_unref);
    g_clear_pointer (&slot->input, g_free);
    g_clear_pointer (&slot->outs, g_free);
    g_clear_pointer (&slot->rand, g_rand_free);
    g_cond_clear (&slot->cond);
  }
  priv->n_slots = 0;
  priv->slot_mask = 0;
  g_clear_pointer (&priv->sched, gst_npu_sched_release);

  if (klass->stop)
    klass->stop (self);

  /* the stats property reads the model's backend name under the lock */
  g_mutex_lock (&priv->lock);
  model = priv->model;
  priv->model = NULL;
  g_mutex_unlock (&priv->lock);
  if (model)
    npu_model_free (model);
  g_clear_pointer (&priv->active_model_id, g_free);
}

gboolean
gst_npu_base_start (GstNpuBase * self)
{
  GstNpuBasePrivate *priv = PRIV (self);
  GstNpuBaseClass *klass = GST_NPU_BASE_GET_CLASS (self);
  struct npu_model_options opts;
  GstNpuModelInfo mi;
  gchar *path = NULL, *cache_dir = NULL, *model_id = NULL, *why = NULL;
  gchar *bad = NULL;
  GstNpuBackend backend;
  struct npu_model *model = NULL;
  guint cores, max_in_flight, i, core;
  gint cpu_threads, hw_profile;
  enum npu_status st;
  const struct npu_io_info *io;

  GST_OBJECT_LOCK (self);
  path = g_strdup (priv->model_path);
  cache_dir = g_strdup (priv->cache_dir);
  model_id = g_strdup (priv->model_id);
  backend = priv->backend;
  cores = priv->cores & 7;
  max_in_flight = priv->max_in_flight;
  cpu_threads = priv->cpu_threads;
  hw_profile = priv->hw_profile;
  priv->cfg.resize = priv->resize;
  priv->cfg.order = priv->channel_order;
  priv->cfg.border_rgb = priv->border_color;
  bad = g_strdup (priv->bad_setting);
  GST_OBJECT_UNLOCK (self);

  if (bad) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Invalid normalisation property: %s.", bad), (NULL));
    g_free (bad);
    goto fail;
  }

  if (!path || !*path) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("No model given."),
        ("the 'model' property is not set"));
    goto fail;
  }
  if (!g_file_test (path, G_FILE_TEST_EXISTS)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("Model file \"%s\" does not exist.", path), (NULL));
    goto fail;
  }
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Model \"%s\" is not a regular file.", path), (NULL));
    goto fail;
  }

  memset (&opts, 0, sizeof (opts));
  opts.backend = backend_name (backend);
  opts.cache_dir = cache_dir;
  opts.core_mask = cores;
  /* The slots run in parallel: share the CPUs among them rather than let
   * each session start one thread per CPU. */
  if (cpu_threads <= 0) {
    guint n = 0, b;

    for (b = 0; b < MAX_SLOTS; b++)
      n += (cores >> b) & 1;
    cpu_threads = MAX (1, (gint) g_get_num_processors () / (gint) MAX (n, 1));
  }
  opts.cpu_threads = cpu_threads;
  opts.hw_profile = hw_profile;

  GST_INFO_OBJECT (self, "loading %s (backend %s, cores 0x%x, %d CPU threads "
      "per session)", path, opts.backend, cores, cpu_threads);
  gst_npu_clear_core_error ();
  st = npu_model_load (path, &opts, &model);
  g_mutex_lock (&priv->lock);
  priv->model = model;
  g_mutex_unlock (&priv->lock);
  if (st != NPU_OK) {
    POST_NPU_ERROR (self, STAGE_LOAD, st, "Could not load model \"%s\" "
        "(backend %s).", path, opts.backend);
    goto fail;
  }
  GST_INFO_OBJECT (self, "model runs on backend %s",
      npu_model_backend (priv->model));
  /* Preprocessing defaults: the model's metadata, the same for an .onnx and
   * the .npub compiled from it (the compiler carries metadata_props). */
  gst_npu_model_info_init (&mi);
  gst_npu_model_info_from_model (&mi, priv->model);
  GST_INFO_OBJECT (self, "%u metadata entries in %s", mi.n_props, path);
  /* The simulator and the CPU executor can be slow on a slow host without
   * being stuck; a device job that takes 10 s has hung. */
  priv->auto_timeout_ms = !strcmp (npu_model_backend (priv->model), "rknpu")
      || !strcmp (npu_model_backend (priv->model), "rocket") ?
      DEVICE_AUTO_TIMEOUT_MS : 0;

  if (npu_model_num_inputs (priv->model) != 1) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Model \"%s\" has %d inputs; this element feeds exactly one image "
            "input.", path, npu_model_num_inputs (priv->model)), (NULL));
    goto fail;
  }
  if (npu_model_num_outputs (priv->model) < 1) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Model \"%s\" has no outputs.", path), (NULL));
    goto fail;
  }
  io = npu_model_input (priv->model, 0);
  if (!gst_npu_input_config_from_model (&priv->cfg, io, &why)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Model \"%s\" does not take an image.", path), ("%s", why));
    g_free (why);
    goto fail;
  }

  GST_OBJECT_LOCK (self);
  if (mi.resize >= 0 && !priv->resize_set)
    priv->cfg.resize = mi.resize;
  if (mi.channel_order >= 0 && !priv->channel_order_set)
    priv->cfg.order = mi.channel_order;
  setup_normalization (self, &mi);
  GST_OBJECT_UNLOCK (self);

  GST_INFO_OBJECT (self, "input %s: %s %dx%dx%d %s", io->name ? io->name : "",
      npu_dtype_name (io->dtype), priv->cfg.channels, priv->cfg.height,
      priv->cfg.width, priv->cfg.nhwc ? "NHWC" : "NCHW");

  if (model_id && *model_id)
    priv->active_model_id = g_strdup (model_id);
  else
    priv->active_model_id = g_path_get_basename (path);

  if (klass->start && !klass->start (self, priv->model))
    goto fail;

  parse_test_delay (self);

  /* One slot per core in the mask, in core order (facts: the RK3588 NPU has
   * three cores that run independent jobs); the device's scheduler picks
   * the core of each frame (alone: 0, 1, 2, 0, ...). */
  priv->n_slots = 0;
  priv->slot_mask = 0;
  for (core = 0; core < MAX_SLOTS; core++)
    priv->core_slot[core] = -1;
  for (core = 0; core < MAX_SLOTS; core++) {
    GstNpuSlot *slot;

    if (!(cores & (1u << core)))
      continue;
    priv->core_slot[core] = (gint) priv->n_slots;
    priv->slot_mask |= 1u << core;
    slot = &priv->slots[priv->n_slots++];
    memset (slot, 0, sizeof (*slot));
    slot->self = self;
    slot->index = priv->n_slots - 1;
    slot->core = core;
    g_cond_init (&slot->cond);
    g_queue_init (&slot->jobs);
    gst_npu_preprocessor_init (&slot->pp);
    slot->input = g_malloc0 (MAX (priv->cfg.nbytes, 1));
    slot->outs = g_new0 (struct npu_tensor,
        npu_model_num_outputs (priv->model));
    slot->rand = g_rand_new_with_seed (0x6e7075 + core);

    gst_npu_clear_core_error ();
    st = npu_session_create (priv->model, core, &slot->session);
    if (st != NPU_OK) {
      POST_NPU_ERROR (self, STAGE_SESSION, st, "Could not open NPU core %u "
          "(backend %s).", core, npu_model_backend (priv->model));
      goto fail;
    }
  }

  /* The cores belong to the device, not to this instance: frames of all
   * the instances on one device take turns on its scheduler. */
  priv->sched = gst_npu_sched_acquire (npu_model_backend (priv->model));

  priv->window = max_in_flight ? max_in_flight : 2 * priv->n_slots;
  GST_INFO_OBJECT (self, "%u core slots, up to %u frames in flight",
      priv->n_slots, priv->window);

  g_mutex_lock (&priv->lock);
  gst_npu_set_flushing_locked (self, FALSE);
  priv->frame_count = 0;
  priv->jobs_in_flight = priv->n_unpushed = priv->running = 0;
  priv->n_submitted = priv->n_completed = priv->n_dropped = 0;
  priv->n_skipped = priv->n_failed = priv->run_ns_total = 0;
  priv->n_reordered = 0;
  g_mutex_unlock (&priv->lock);

  for (i = 0; i < priv->n_slots; i++) {
    GstNpuSlot *slot = &priv->slots[i];
    gchar *name = g_strdup_printf ("npu-core%d", slot->core);
    GError *err = NULL;

    slot->thread = g_thread_try_new (name, gst_npu_slot_thread, slot, &err);
    g_free (name);
    if (!slot->thread) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Could not start a worker thread."), ("%s", err->message));
      g_clear_error (&err);
      goto fail;
    }
  }

  g_free (path);
  g_free (cache_dir);
  g_free (model_id);
  return TRUE;

fail:
  gst_npu_base_stop (self);
  g_free (path);
  g_free (cache_dir);
  g_free (model_id);
  return FALSE;
}
