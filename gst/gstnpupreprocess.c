/* SPDX-License-Identifier: MIT */
/*
 * gstnpupreprocess.c: video frame -> model input tensor.
 *
 * Scaling and colour conversion are GStreamer's own GstVideoConverter (the
 * code behind videoconvertscale), so every format, colorimetry and range the
 * caps describe is honoured exactly as videoconvert would. The converter
 * writes packed RGB at the model's size into a scratch image: for letterbox
 * it scales into a centred sub-rectangle and fills the border, for centre
 * crop it reads only the centre of the frame. The second step is a plain
 * loop that applies the per-channel affine normalisation and writes the
 * model's layout and element type.
 */
#include <string.h>

#include "gstnpupreprocess.h"
#include "npu/npu-fp16.h"

gboolean
gst_npu_input_config_from_model (GstNpuInputConfig * cfg,
    const struct npu_io_info *io, gchar ** why)
{
  const int64_t *d = io->dims;
  int64_t c, h, w;
  gboolean nhwc;
  size_t esize;

  switch (io->dtype) {
    case NPU_DTYPE_FP32:
    case NPU_DTYPE_FP16:
    case NPU_DTYPE_UINT8:
    case NPU_DTYPE_INT8:
      break;
    default:
      *why = g_strdup_printf ("input '%s' has element type %s; image inputs "
          "must be f32, f16, u8 or i8", io->name ? io->name : "?",
          npu_dtype_name (io->dtype));
      return FALSE;
  }

  if (io->ndim == 4 && d[0] != 1) {
    *why = g_strdup_printf ("input '%s' has batch %" G_GINT64_FORMAT
        "; only batch 1 is supported", io->name ? io->name : "?", d[0]);
    return FALSE;
  }
  if (io->ndim == 4)
    d++;
  else if (io->ndim != 3)
    goto not_image;

  /* Prefer channels-first when both readings are possible ([3,H,3]). */
  if (d[0] == 1 || d[0] == 3) {
    nhwc = FALSE;
    c = d[0];
    h = d[1];
    w = d[2];
  } else if (d[2] == 1 || d[2] == 3) {
    nhwc = TRUE;
    h = d[0];
    w = d[1];
    c = d[2];
  } else {
    goto not_image;
  }
  if (h <= 0 || w <= 0 || h > 16384 || w > 16384)
    goto not_image;

  cfg->dtype = io->dtype;
  cfg->nhwc = nhwc;
  cfg->channels = (gint) c;
  cfg->height = (gint) h;
  cfg->width = (gint) w;
  memset (&cfg->shape, 0, sizeof (cfg->shape));
  cfg->shape.dtype = io->dtype;
  cfg->shape.ndim = io->ndim;
  memcpy (cfg->shape.dims, io->dims, sizeof (int64_t) * io->ndim);
  esize = npu_dtype_size (io->dtype);
  cfg->nbytes = (gsize) (c * h * w) * esize;
  return TRUE;

not_image:
  {
    GString *s = g_string_new (NULL);
    int i;

    for (i = 0; i < io->ndim; i++)
      g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "," : "",
          io->dims[i]);
    *why = g_strdup_printf ("input '%s' has shape [%s]; an image input must "
        "be [1,C,H,W], [1,H,W,C], [C,H,W] or [H,W,C] with C = 1 or 3",
        io->name ? io->name : "?", s->str);
    g_string_free (s, TRUE);
    return FALSE;
  }
}

void
gst_npu_input_config_geometry (const GstNpuInputConfig * cfg, gint in_w,
    gint in_h, GstVideoRectangle * src, GstVideoRectangle * dst)
{
  gint mw = cfg->width, mh = cfg->height;

  src->x = src->y = 0;
  src->w = in_w;
  src->h = in_h;
  dst->x = dst->y = 0;
  dst->w = mw;
  dst->h = mh;

  if (in_w <= 0 || in_h <= 0)
    return;

  switch (cfg->resize) {
    case GST_NPU_RESIZE_STRETCH:
      break;
    case GST_NPU_RESIZE_LETTERBOX:
      /* the whole frame, aspect kept, centred; the rest is border */
      if ((gint64) mw * in_h <= (gint64) mh * in_w) {
        dst->w = mw;
        dst->h = (gint) (((gint64) in_h * mw * 2 + in_w) / (2 * in_w));
      } else {
        dst->h = mh;
        dst->w = (gint) (((gint64) in_w * mh * 2 + in_h) / (2 * in_h));
      }
      dst->w = CLAMP (dst->w, 1, mw);
      dst->h = CLAMP (dst->h, 1, mh);
      dst->x = (mw - dst->w) / 2;
      dst->y = (mh - dst->h) / 2;
      break;
    case GST_NPU_RESIZE_CROP:
      /* the largest centred part of the frame with the model's aspect */
      if ((gint64) mw * in_h <= (gint64) mh * in_w) {
        src->h = in_h;
        src->w = (gint) (((gint64) in_h * mw * 2 + mh) / (2 * mh));
      } else {
        src->w = in_w;
        src->h = (gint) (((gint64) in_w * mh * 2 + mw) / (2 * mw));
      }
      src->w = CLAMP (src->w, 1, in_w);
      src->h = CLAMP (src->h, 1, in_h);
      src->x = (in_w - src->w) / 2;
      src->y = (in_h - src->h) / 2;
      break;
  }
}

void
gst_npu_preprocessor_init (GstNpuPreprocessor * pp)
{
  memset (pp, 0, sizeof (*pp));
}

void
gst_npu_preprocessor_clear (GstNpuPreprocessor * pp)
{
  g_clear_pointer (&pp->conv, gst_video_converter_free);
  gst_clear_buffer (&pp->rgb);
  pp->configured = FALSE;
}

gboolean
gst_npu_preprocessor_configure (GstNpuPreprocessor * pp,
    const GstVideoInfo * in, const GstNpuInputConfig * cfg)
{
  GstVideoRectangle src, dst;
  GstStructure *opts;

  gst_npu_preprocessor_clear (pp);

  gst_video_info_set_format (&pp->rgb_info, cfg->channels == 1 ?
      GST_VIDEO_FORMAT_GRAY8 : GST_VIDEO_FORMAT_RGB, cfg->width, cfg->height);
  /* the converter insists on equal frame rates */
  GST_VIDEO_INFO_FPS_N (&pp->rgb_info) = GST_VIDEO_INFO_FPS_N (in);
  GST_VIDEO_INFO_FPS_D (&pp->rgb_info) = GST_VIDEO_INFO_FPS_D (in);
  pp->rgb = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&pp->rgb_info),
      NULL);

  gst_npu_input_config_geometry (cfg, GST_VIDEO_INFO_WIDTH (in),
      GST_VIDEO_INFO_HEIGHT (in), &src, &dst);

  /* Bilinear for luma and chroma: the models were trained on bilinear or
   * bicubic resizes and the difference is below their noise; no dithering,
   * so the conversion is deterministic. One thread: the element already runs
   * one preprocessor per NPU core slot in parallel. */
  opts = gst_structure_new ("GstVideoConverter",
      GST_VIDEO_CONVERTER_OPT_RESAMPLER_METHOD, GST_TYPE_VIDEO_RESAMPLER_METHOD,
      GST_VIDEO_RESAMPLER_METHOD_LINEAR,
      GST_VIDEO_CONVERTER_OPT_CHROMA_RESAMPLER_METHOD,
      GST_TYPE_VIDEO_RESAMPLER_METHOD, GST_VIDEO_RESAMPLER_METHOD_LINEAR,
      GST_VIDEO_CONVERTER_OPT_DITHER_METHOD, GST_TYPE_VIDEO_DITHER_METHOD,
      GST_VIDEO_DITHER_NONE,
      GST_VIDEO_CONVERTER_OPT_SRC_X, G_TYPE_INT, src.x,
      GST_VIDEO_CONVERTER_OPT_SRC_Y, G_TYPE_INT, src.y,
      GST_VIDEO_CONVERTER_OPT_SRC_WIDTH, G_TYPE_INT, src.w,
      GST_VIDEO_CONVERTER_OPT_SRC_HEIGHT, G_TYPE_INT, src.h,
      GST_VIDEO_CONVERTER_OPT_DEST_X, G_TYPE_INT, dst.x,
      GST_VIDEO_CONVERTER_OPT_DEST_Y, G_TYPE_INT, dst.y,
      GST_VIDEO_CONVERTER_OPT_DEST_WIDTH, G_TYPE_INT, dst.w,
      GST_VIDEO_CONVERTER_OPT_DEST_HEIGHT, G_TYPE_INT, dst.h,
      GST_VIDEO_CONVERTER_OPT_FILL_BORDER, G_TYPE_BOOLEAN, TRUE,
      GST_VIDEO_CONVERTER_OPT_BORDER_ARGB, G_TYPE_UINT,
      0xff000000u | (cfg->border_rgb & 0xffffff),
      GST_VIDEO_CONVERTER_OPT_THREADS, G_TYPE_UINT, 1, NULL);

  pp->conv = gst_video_converter_new ((GstVideoInfo *) in, &pp->rgb_info, opts);
  if (!pp->conv) {
    gst_npu_preprocessor_clear (pp);
    return FALSE;
  }
  pp->in_info = *in;
  pp->configured = TRUE;
  return TRUE;
}

gboolean
gst_npu_preprocessor_run (GstNpuPreprocessor * pp,
    const GstNpuInputConfig * cfg, GstVideoFrame * frame, gpointer out)
{
  GstVideoFrame rgb;
  const guint8 *base;
  gint stride, x, y, c;
  gint w = cfg->width, h = cfg->height, nc = cfg->channels;
  gsize plane = (gsize) w * h;
  gint src_c[3];

  if (!gst_video_frame_map (&rgb, &pp->rgb_info, pp->rgb, GST_MAP_READWRITE))
    return FALSE;
  gst_video_converter_frame (pp->conv, frame, &rgb);

  base = GST_VIDEO_FRAME_PLANE_DATA (&rgb, 0);
  stride = GST_VIDEO_FRAME_PLANE_STRIDE (&rgb, 0);

  /* tensor channel c reads RGB component src_c[c] */
  for (c = 0; c < nc; c++)
    src_c[c] = (nc == 3 && cfg->order == GST_NPU_CHANNEL_ORDER_BGR) ? 2 - c : c;

  for (y = 0; y < h; y++) {
    const guint8 *row = base + (gsize) y * stride;

    for (x = 0; x < w; x++) {
      const guint8 *px = row + (gsize) x * nc;

      for (c = 0; c < nc; c++) {
        guint8 v = px[src_c[c]];
        gsize idx = cfg->nhwc ? ((gsize) y * w + x) * nc + c :
            c * plane + (gsize) y * w + x;

        switch (cfg->dtype) {
          case NPU_DTYPE_FP32:
            ((gfloat *) out)[idx] = v * cfg->mul[c] + cfg->add[c];
            break;
          case NPU_DTYPE_FP16:
            ((guint16 *) out)[idx] =
                npu_fp32_to_fp16 (v * cfg->mul[c] + cfg->add[c]);
            break;
          case NPU_DTYPE_UINT8:
            ((guint8 *) out)[idx] = v;
            break;
          case NPU_DTYPE_INT8:
            ((gint8 *) out)[idx] = (gint8) ((gint) v - 128);
            break;
          default:
            break;
        }
      }
    }
  }
  gst_video_frame_unmap (&rgb);
  return TRUE;
}
