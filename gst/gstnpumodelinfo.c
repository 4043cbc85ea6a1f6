/* SPDX-License-Identifier: MIT */
/*
 * gstnpumodelinfo.c: reads preprocessing hints from ONNX metadata_props.
 *
 * Only the top level of the ModelProto is walked: each field is a protobuf
 * key (varint: field number << 3 | wire type) followed by its payload, and
 * every field except 14 (metadata_props, a StringStringEntryProto with
 * key = 1, value = 2) is skipped by its length. The graph (field 7), which
 * holds the weights, is never parsed, so this costs one pass over the keys of
 * a memory-mapped file whatever the model's size.
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

static gboolean
read_varint (const guint8 ** p, const guint8 * end, guint64 * out)
{
  guint64 v = 0;
  guint shift = 0;

  while (*p < end && shift < 64) {
    guint8 b = *(*p)++;
    v |= (guint64) (b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return TRUE;
    }
    shift += 7;
  }
  return FALSE;
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

static void
apply_prop (GstNpuModelInfo * info, const gchar * key, const gchar * value)
{
  info->n_props++;

  if (!g_ascii_strcasecmp (key, "opennpu.mean")
      || !g_ascii_strcasecmp (key, "image_mean")
      || !g_ascii_strcasecmp (key, "mean")) {
    info->has_mean = parse_triplet (value, info->mean);
  } else if (!g_ascii_strcasecmp (key, "opennpu.std")
      || !g_ascii_strcasecmp (key, "image_std")
      || !g_ascii_strcasecmp (key, "std")) {
    info->has_std = parse_triplet (value, info->std);
  } else if (!g_ascii_strcasecmp (key, "opennpu.scale")) {
    info->has_scale = parse_triplet (value, info->scale);
  } else if (!g_ascii_strcasecmp (key, "opennpu.offset")) {
    info->has_offset = parse_triplet (value, info->offset);
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

/* Reads the field at *p and moves past it: its number, and for a length-delimited field
 * (wire type 2) its payload (*data, *len; NULL and 0 for the other types, whose varint or
 * fixed-size value is skipped). FALSE if the field is malformed or runs past end. */
static gboolean
next_field (const guint8 ** p, const guint8 * end, guint64 * field,
    const guint8 ** data, guint64 * len)
{
  guint64 tag, dummy;

  if (!read_varint (p, end, &tag))
    return FALSE;
  *field = tag >> 3;
  *data = NULL;
  *len = 0;
  switch (tag & 7) {
    case 0:
      return read_varint (p, end, &dummy);
    case 1:
      if (end - *p < 8)
        return FALSE;
      *p += 8;
      return TRUE;
    case 5:
      if (end - *p < 4)
        return FALSE;
      *p += 4;
      return TRUE;
    case 2:
      if (!read_varint (p, end, len) || *len > (guint64) (end - *p))
        return FALSE;
      *data = *p;
      *p += *len;
      return TRUE;
    default:
      return FALSE;
  }
}

static gboolean
parse_entry (GstNpuModelInfo * info, const guint8 * p, const guint8 * end)
{
  gchar *key = NULL, *value = NULL;

  while (p < end) {
    guint64 field, len;
    const guint8 *data;

    if (!next_field (&p, end, &field, &data, &len))
      goto bad;
    if (data && field == 1) {
      g_free (key);
      key = g_strndup ((const gchar *) data, len);
    } else if (data && field == 2) {
      g_free (value);
      value = g_strndup ((const gchar *) data, len);
    }
  }
  if (key)
    apply_prop (info, key, value ? value : "");
  g_free (key);
  g_free (value);
  return TRUE;

bad:
  g_free (key);
  g_free (value);
  return FALSE;
}

gboolean
gst_npu_model_info_parse_onnx (const guint8 * data, gsize len,
    GstNpuModelInfo * info, GError ** error)
{
  const guint8 *p = data, *end = data + len;

  while (p < end) {
    guint64 field, n;
    const guint8 *payload;

    if (!next_field (&p, end, &field, &payload, &n))
      goto bad;
    if (payload && field == 14 && !parse_entry (info, payload, payload + n)) {
      p = payload;              /* the error names where the entry starts */
      goto bad;
    }
  }
  return TRUE;

bad:
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
      "not an ONNX model: malformed protobuf at byte %" G_GSIZE_FORMAT,
      (gsize) (p - data));
  return FALSE;
}

gboolean
gst_npu_model_info_read_onnx (const gchar * path, GstNpuModelInfo * info,
    GError ** error)
{
  GMappedFile *mf;
  gboolean ret;

  mf = g_mapped_file_new (path, FALSE, error);
  if (!mf)
    return FALSE;
  ret = gst_npu_model_info_parse_onnx ((const guint8 *)
      g_mapped_file_get_contents (mf), g_mapped_file_get_length (mf), info,
      error);
  g_mapped_file_unref (mf);
  return ret;
}
