/* SPDX-License-Identifier: MIT */
/*
 * gstnpuerror.h: error routing between the OpenNPU core and GStreamer, for
 * the files of GstNpuBase; see gstnpuerror.c. (gst_npu_base_post_status_error,
 * for subclasses, is declared in gstnpubase.h.)
 */
#ifndef __GST_NPU_ERROR_H__
#define __GST_NPU_ERROR_H__

#include "gstnpubase.h"

G_BEGIN_DECLS

/* Stage of the failing call, for the error domain. */
typedef enum
{
  STAGE_LOAD,
  STAGE_SESSION,
  STAGE_RUN,
} NpuStage;

/* Creates the "opennpu" debug category and routes the core's log into it
 * (once per process). */
void gst_npu_install_core_log (void);

/* The last error the core logged on this thread, removed from it (g_free),
 * or NULL. */
gchar *gst_npu_take_core_error (void);

/* Forgets the last error the core logged on this thread (before a call whose
 * failure is to be explained). */
void gst_npu_clear_core_error (void);

/* Posts an error message for a failed OpenNPU call at @stage; takes @text
 * and the core's last error on this thread. Use POST_NPU_ERROR. */
void gst_npu_post_npu_error (GstNpuBase * self, NpuStage stage,
    enum npu_status status, const gchar * file, const gchar * func, gint line,
    gchar * text);

#define POST_NPU_ERROR(self, stage, status, ...) \
  gst_npu_post_npu_error (self, stage, status, __FILE__, GST_FUNCTION, \
      __LINE__, g_strdup_printf (__VA_ARGS__))

G_END_DECLS

#endif /* __GST_NPU_ERROR_H__ */
