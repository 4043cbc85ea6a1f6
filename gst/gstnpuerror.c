/* SPDX-License-Identifier: MIT */
/*
 * gstnpuerror.c: error routing between the OpenNPU core and GStreamer. The
 * core's log goes to the "opennpu" debug category, and the last error it
 * logged on each thread is kept so that a failed OpenNPU call can be posted
 * as a GStreamer error message in the domain that fits its status, naming
 * the cause (gst_npu_post_npu_error, gst_npu_base_post_status_error).
 */
#include "gstnpubase.h"
#include "gstnpuerror.h"

GST_DEBUG_CATEGORY (gst_npu_core_debug);

/* The last error the core logged on this thread, to name the cause in
 * GST_ELEMENT_ERROR messages (npu_model_load logs why it failed). */
static GPrivate last_core_error = G_PRIVATE_INIT (g_free);

static void
core_log_handler (enum npu_log_level level, const char *domain,
    const char *msg, void *user)
{
  GstDebugLevel gl;

  switch (level) {
    case NPU_LOG_ERROR:
      gl = GST_LEVEL_ERROR;
      g_private_replace (&last_core_error, g_strdup_printf ("%s: %s",
              domain ? domain : "npu", msg));
      break;
    case NPU_LOG_WARN:
      gl = GST_LEVEL_WARNING;
      break;
    case NPU_LOG_INFO:
      gl = GST_LEVEL_INFO;
      break;
    default:
      gl = GST_LEVEL_DEBUG;
      break;
  }
  GST_CAT_LEVEL_LOG (gst_npu_core_debug, gl, NULL, "[%s] %s",
      domain ? domain : "npu", msg);
}

void
gst_npu_install_core_log (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GstDebugLevel th;

    GST_DEBUG_CATEGORY_INIT (gst_npu_core_debug, "opennpu", 0,
        "OpenNPU core (compiler, runtime, simulator) messages");
    npu_log_set_handler (core_log_handler, NULL);
    /* One GST_DEBUG setting controls both logs: raise (never lower) the
     * core's level to what the opennpu category would print. */
    th = gst_debug_category_get_threshold (gst_npu_core_debug);
    if (th >= GST_LEVEL_DEBUG)
      npu_log_set_level (NPU_LOG_DEBUG);
    else if (th >= GST_LEVEL_INFO && npu_log_get_level () < NPU_LOG_INFO)
      npu_log_set_level (NPU_LOG_INFO);
    g_once_init_leave (&done, 1);
  }
}

gchar *
gst_npu_take_core_error (void)
{
  gchar *e = g_private_get (&last_core_error);

  if (!e)
    return NULL;
  e = g_strdup (e);
  g_private_replace (&last_core_error, NULL);
  return e;
}

void
gst_npu_clear_core_error (void)
{
  g_private_replace (&last_core_error, NULL);
}

void
gst_npu_post_npu_error (GstNpuBase * self, NpuStage stage,
    enum npu_status status, const gchar * file, const gchar * func, gint line,
    gchar * text)
{
  GQuark domain;
  gint code;
  gchar *cause = gst_npu_take_core_error ();
  gchar *dbg;

  if (stage == STAGE_RUN) {
    domain = GST_STREAM_ERROR;
    code = GST_STREAM_ERROR_FAILED;
  } else {
    switch (status) {
      case NPU_ERR_IO:
        domain = GST_RESOURCE_ERROR;
        code = GST_RESOURCE_ERROR_OPEN_READ;
        break;
      case NPU_ERR_NO_DEVICE:
      case NPU_ERR_PERMISSION:
        domain = GST_RESOURCE_ERROR;
        code = GST_RESOURCE_ERROR_OPEN_READ_WRITE;
        break;
      case NPU_ERR_BUSY:
        domain = GST_RESOURCE_ERROR;
        code = GST_RESOURCE_ERROR_BUSY;
        break;
      default:
        domain = GST_LIBRARY_ERROR;
        code = stage == STAGE_LOAD ? GST_LIBRARY_ERROR_INIT :
            GST_LIBRARY_ERROR_FAILED;
        break;
    }
  }
  dbg = g_strdup_printf ("%s%s%s", npu_status_str (status),
      cause ? ": " : "", cause ? cause : "");
  gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR, domain,
      code, text, dbg, file, func, line);
  g_free (cause);
}

void
gst_npu_base_post_status_error (GstNpuBase * self, enum npu_status status,
    const gchar * what)
{
  POST_NPU_ERROR (self, STAGE_RUN, status, "%s", what);
}
