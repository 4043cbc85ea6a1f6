/* SPDX-License-Identifier: MIT */
/*
 * gstnpubase.h: GstNpuBase, the abstract element behind npuinfer and
 * npuembed (as GstVideoConvertScale is behind videoconvert and videoscale).
 * It owns the model, one session and one worker thread per NPU core slot,
 * the preprocessing, the in-order output queue and the source pad task.
 * Subclasses only turn a finished run into metadata: process() on the worker
 * thread, attach() on the streaming thread in input order.
 */
#ifndef __GST_NPU_BASE_H__
#define __GST_NPU_BASE_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gstnpumeta.h"
#include "npu/npu-model.h"

G_BEGIN_DECLS

#define GST_TYPE_NPU_BASE (gst_npu_base_get_type ())
G_DECLARE_DERIVABLE_TYPE (GstNpuBase, gst_npu_base, GST, NPU_BASE, GstElement);

/**
 * GstNpuBackend:
 * @GST_NPU_BACKEND_AUTO: the NPU if one is present, else the simulator
 * @GST_NPU_BACKEND_SIM: the built-in RK3588 NPU simulator
 * @GST_NPU_BACKEND_RKNPU: the vendor kernel driver (/dev/dri, rknpu)
 * @GST_NPU_BACKEND_ROCKET: the upstream accel/rocket driver
 * @GST_NPU_BACKEND_CPU: the CPU executor only (no NPU, no simulator)
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_BACKEND_AUTO,
  GST_NPU_BACKEND_SIM,
  GST_NPU_BACKEND_RKNPU,
  GST_NPU_BACKEND_ROCKET,
  GST_NPU_BACKEND_CPU,
} GstNpuBackend;

/**
 * GstNpuDropPolicy:
 * @GST_NPU_DROP_NONE: block the upstream streaming thread until a slot frees
 *     (back-pressure); every frame is inferred
 * @GST_NPU_DROP_PASS: do not infer the frame; it still goes downstream, in
 *     order, without metadata
 * @GST_NPU_DROP_DISCARD: do not infer the frame and do not push it
 *
 * What happens to a frame that arrives while max-in-flight frames are being
 * inferred.
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_DROP_NONE,
  GST_NPU_DROP_PASS,
  GST_NPU_DROP_DISCARD,
} GstNpuDropPolicy;

/**
 * GstNpuNormalization:
 * @GST_NPU_NORMALIZATION_AUTO: the model's metadata if it has any, else
 *     mean/std with the property values
 * @GST_NPU_NORMALIZATION_MEAN_STD: (pixel / 255 - mean) / std
 * @GST_NPU_NORMALIZATION_SCALE_OFFSET: pixel * scale + offset
 * @GST_NPU_NORMALIZATION_NONE: pixel values 0..255 as they are
 *
 * How 8-bit pixels become the values of a float model input. Integer inputs
 * (uint8, int8) never use it: they get the pixel, or pixel - 128 for int8.
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_NORMALIZATION_AUTO,
  GST_NPU_NORMALIZATION_MEAN_STD,
  GST_NPU_NORMALIZATION_SCALE_OFFSET,
  GST_NPU_NORMALIZATION_NONE,
} GstNpuNormalization;

/**
 * GstNpuResult:
 * @frame: input frame number (0 for the first buffer after start)
 * @pts: presentation timestamp of the frame
 * @core: NPU core the job ran on
 * @n_outputs: number of @outputs
 * @outputs: (array length=n_outputs): copies of the model outputs; a
 *     subclass may steal them (set @outputs to NULL)
 * @region: part of the frame the model saw, in frame pixels
 * @model_region: where it lies in the model input
 * @frame_width: width of the frame in pixels
 * @frame_height: height of the frame in pixels
 * @run_ns: wall time of npu_session_run
 * @user: subclass result, freed with @user_free
 * @user_free: destroy notify for @user
 *
 * The outcome of one inference, handed to the subclass.
 */
typedef struct
{
  guint64 frame;
  GstClockTime pts;
  gint core;
  guint n_outputs;
  GstNpuTensor *outputs;
  GstVideoRectangle region, model_region;
  gint frame_width, frame_height;
  guint64 run_ns;
  gpointer user;
  GDestroyNotify user_free;
} GstNpuResult;

struct _GstNpuBaseClass
{
  GstElementClass parent_class;

  /* The subclass's debug category (npuinfer, npuembed); the base class logs
   * into it too. Set in class_init. */
  GstDebugCategory *debug_category;

  /* After the model is loaded (streaming not started yet): validate the
   * model for this element, load side files. On failure post an error with
   * GST_ELEMENT_ERROR and return FALSE. Optional. */
  gboolean (*start) (GstNpuBase * self, struct npu_model * model);
  /* Undo start(); also called after a failed or partial start. Optional. */
  void (*stop) (GstNpuBase * self);

  /* On a worker thread, right after the run: derive the subclass result
   * (store it in @res->user). Return FALSE and set @error to fail the frame
   * (a STREAM error). Optional. */
  gboolean (*process) (GstNpuBase * self, GstNpuResult * res,
      GError ** error);
  /* On the source pad thread, in input order, before the frame is pushed:
   * attach metadata to @buffer (writable) and post messages. */
  void (*attach) (GstNpuBase * self, GstBuffer * buffer, GstNpuResult * res);

  gpointer _gst_reserved[GST_PADDING];
};

/* The model identifier (model-id property, else the model file's base name);
 * valid while the element is PAUSED or PLAYING. (transfer none) */
const gchar *gst_npu_base_get_model_id (GstNpuBase * self);

/* Posts GST_ELEMENT_ERROR for a failed OpenNPU call, in the domain that fits
 * @status, with the last message the core logged on this thread. */
void gst_npu_base_post_status_error (GstNpuBase * self, enum npu_status status,
    const gchar * what);

GST_DEBUG_CATEGORY_EXTERN (gst_npu_core_debug);

G_END_DECLS

#endif /* __GST_NPU_BASE_H__ */
