/* SPDX-License-Identifier: MIT */
/*
 * gstnpupreprocess.h: turns one video frame into the model's input tensor:
 * scale (stretch, letterbox or centre crop) and colour conversion through a
 * GstVideoConverter into packed RGB (or GRAY8 for one-channel models), then
 * normalisation and layout (NCHW or NHWC; float32, float16, uint8 or int8).
 */
#ifndef __GST_NPU_PREPROCESS_H__
#define __GST_NPU_PREPROCESS_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "npu/npu-model.h"

G_BEGIN_DECLS

typedef enum
{
  GST_NPU_RESIZE_STRETCH = 0,
  GST_NPU_RESIZE_LETTERBOX = 1,
  GST_NPU_RESIZE_CROP = 2,
} GstNpuResizeMode;

typedef enum
{
  GST_NPU_CHANNEL_ORDER_RGB = 0,
  GST_NPU_CHANNEL_ORDER_BGR = 1,
} GstNpuChannelOrder;

/* Everything about the model's input that does not depend on the video. */
typedef struct
{
  enum npu_dtype dtype;         /* FP32, FP16, UINT8 or INT8 */
  gboolean nhwc;                /* else NCHW */
  gint width, height, channels; /* channels: 1 or 3 */
  struct npu_tensor shape;      /* dtype/ndim/dims for npu_session_run */
  gsize nbytes;
  /* float inputs: tensor = pixel(0..255) * mul[c] + add[c], c in the
   * tensor's channel order */
  gfloat mul[3], add[3];
  GstNpuChannelOrder order;
  GstNpuResizeMode resize;
  guint32 border_rgb;           /* letterbox fill, 0xRRGGBB */
} GstNpuInputConfig;

/* Checks that @io is an image input ([1,C,H,W], [1,H,W,C], [C,H,W] or
 * [H,W,C] with C 1 or 3; float32/float16/uint8/int8) and fills the shape part
 * of @cfg. Returns FALSE with a reason in @why (g_free) otherwise. */
gboolean gst_npu_input_config_from_model (GstNpuInputConfig * cfg,
    const struct npu_io_info *io, gchar ** why);

/* The frame rectangle the model sees and where it lands in the model input,
 * for a frame of @in_w x @in_h. */
void gst_npu_input_config_geometry (const GstNpuInputConfig * cfg,
    gint in_w, gint in_h, GstVideoRectangle * src, GstVideoRectangle * dst);

/* Per-worker state: a converter for the current video format and the
 * intermediate RGB image. Not thread-safe; one per worker. */
typedef struct
{
  GstVideoInfo in_info;
  gboolean configured;
  GstVideoConverter *conv;
  GstVideoInfo rgb_info;
  GstBuffer *rgb;
} GstNpuPreprocessor;

void gst_npu_preprocessor_init (GstNpuPreprocessor * pp);
void gst_npu_preprocessor_clear (GstNpuPreprocessor * pp);

/* (Re)builds the converter for frames of @in. */
gboolean gst_npu_preprocessor_configure (GstNpuPreprocessor * pp,
    const GstVideoInfo * in, const GstNpuInputConfig * cfg);

/* Writes the tensor for @frame (mapped with the configured info) into @out,
 * cfg->nbytes bytes. Returns FALSE if the scratch image cannot be mapped. */
gboolean gst_npu_preprocessor_run (GstNpuPreprocessor * pp,
    const GstNpuInputConfig * cfg, GstVideoFrame * frame, gpointer out);

G_END_DECLS

#endif /* __GST_NPU_PREPROCESS_H__ */
