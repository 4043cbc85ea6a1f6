/* SPDX-License-Identifier: MIT */
/*
 * gstnpumodelinfo.c: preprocessing hints from a model's metadata.
 *
 * The entries come from the model API (npu_model_prop): the ONNX model's
 * metadata_props, which the compiler carries into .npub artifacts, so an
 * .onnx and the .npub made from it give the same defaults through this one
 * path.
 *
 * Keys understood (values use 0..1 pixel units, like Hugging Face's
 * image_mean/image_std, and are 1 or 3 numbers separated by commas or
 * spaces, brackets allowed):
 *   opennpu.mean | image_mean | mean          per-channel mean
 *   opennpu.std  | image_std  | std           per-channel standard deviation
 *   opennpu.scale, opennpu.offset             tensor = pixel(0..255)*scale+offset
 *   opennpu.resize                            stretch | letterbox | crop
 *   opennpu.channel-order                     rgb | bgr
 */
#include <stdlib.h>
#include <string.h>

#include "gstnpumodelinfo.h"

void
gst_npu_model_info_init (GstNpuModelInfo * info)
{
  memset (info, 0, sizeof (*info));
  info->resize = -1;
  info->channel_order = -1;
}

/* Parses "0.5, 0.5, 0.5" / "[0.48145466 0.4578275 0.40821073]" / "0.5".
 * One number is broadcast to three channels. */
static gboolean
parse_triplet (const gchar * s, gfloat out[3])
{
  gfloat v[3];
  guint n = 0;

  while (*s) {
    gchar *end;
    gdouble d;

    if (strchr ("[]() ,;\t", *s)) {
      s++;
      continue;
    }
    d = g_ascii_strtod (s, &end);
    if (end == s || n == 3)
      return FALSE;
    v[n++] = (gfloat) d;
    s = end;
  }
  if (n == 1)
    v[1] = v[2] = v[0];
  else if (n != 3)
    return FALSE;
  memcpy (out, v, sizeof (v));
  return TRUE;
}

void
gst_npu_model_info_apply (GstNpuModelInfo * info, const gchar * key,
    const gchar * value)
{
  info->n_props++;

  if (!g_ascii_strcasecmp (key, "opennpu.mean")
      || !g_ascii_strcasecmp (key, "image_mean")
      || !g_ascii_strcasecmp (key, "mean")) {
    info->has_mean |= parse_triplet (value, info->mean);
  } else if (!g_ascii_strcasecmp (key, "opennpu.std")
      || !g_ascii_strcasecmp (key, "image_std")
      || !g_ascii_strcasecmp (key, "std")) {
    info->has_std |= parse_triplet (value, info->std);
  } else if (!g_ascii_strcasecmp (key, "opennpu.scale")) {
    info->has_scale |= parse_triplet (value, info->scale);
  } else if (!g_ascii_strcasecmp (key, "opennpu.offset")) {
    info->has_offset |= parse_triplet (value, info->offset);
  } else if (!g_ascii_strcasecmp (key, "opennpu.resize")) {
    /* values match GstNpuResizeMode: 0 stretch, 1 letterbox, 2 crop */
    if (!g_ascii_strcasecmp (value, "stretch"))
      info->resize = 0;
    else if (!g_ascii_strcasecmp (value, "letterbox"))
      info->resize = 1;
    else if (!g_ascii_strcasecmp (value, "crop"))
      info->resize = 2;
  } else if (!g_ascii_strcasecmp (key, "opennpu.channel-order")) {
    if (!g_ascii_strcasecmp (value, "rgb"))
      info->channel_order = 0;
    else if (!g_ascii_strcasecmp (value, "bgr"))
      info->channel_order = 1;
  }
}

void
gst_npu_model_info_from_model (GstNpuModelInfo * info,
    const struct npu_model *model)
{
  gint i, n = npu_model_num_props (model);

  for (i = 0; i < n; i++) {
    const struct npu_model_prop *p = npu_model_prop (model, i);

    gst_npu_model_info_apply (info, p->key, p->value);
  }
}
