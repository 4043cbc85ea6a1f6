/* SPDX-License-Identifier: MIT */
/*
 * gstnpumeta.c: GstNpuTensorMeta and GstNpuEmbeddingMeta (see gstnpumeta.h).
 *
 * Both metas keep their payload in GBytes, so copying a meta (tee, queue,
 * gst_buffer_make_writable) shares the data instead of duplicating tensors.
 * The tensor meta carries the frame region the model saw; a scaling transform
 * (videoscale) rescales it, every other transform copies it unchanged. The
 * embedding describes the frame as a whole and survives every transform.
 */
#include <string.h>

#include <gst/video/video.h>

#include "gstnpumeta.h"
#include "npu/npu-fp16.h"

GType
gst_npu_tensor_data_type_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_TENSOR_DATA_TYPE_FLOAT32, "32-bit float", "float32"},
    {GST_NPU_TENSOR_DATA_TYPE_FLOAT16, "16-bit float", "float16"},
    {GST_NPU_TENSOR_DATA_TYPE_INT8, "signed 8-bit integer", "int8"},
    {GST_NPU_TENSOR_DATA_TYPE_UINT8, "unsigned 8-bit integer", "uint8"},
    {GST_NPU_TENSOR_DATA_TYPE_INT16, "signed 16-bit integer", "int16"},
    {GST_NPU_TENSOR_DATA_TYPE_INT32, "signed 32-bit integer", "int32"},
    {GST_NPU_TENSOR_DATA_TYPE_INT64, "signed 64-bit integer", "int64"},
    {GST_NPU_TENSOR_DATA_TYPE_BOOL, "boolean (one byte)", "bool"},
    {GST_NPU_TENSOR_DATA_TYPE_FLOAT64, "64-bit float", "float64"},
    {GST_NPU_TENSOR_DATA_TYPE_UINT16, "unsigned 16-bit integer", "uint16"},
    {GST_NPU_TENSOR_DATA_TYPE_UINT32, "unsigned 32-bit integer", "uint32"},
    {GST_NPU_TENSOR_DATA_TYPE_UINT64, "unsigned 64-bit integer", "uint64"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuTensorDataType", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

gsize
gst_npu_tensor_data_type_size (GstNpuTensorDataType type)
{
  switch (type) {
    case GST_NPU_TENSOR_DATA_TYPE_INT8:
    case GST_NPU_TENSOR_DATA_TYPE_UINT8:
    case GST_NPU_TENSOR_DATA_TYPE_BOOL:
      return 1;
    case GST_NPU_TENSOR_DATA_TYPE_FLOAT16:
    case GST_NPU_TENSOR_DATA_TYPE_INT16:
    case GST_NPU_TENSOR_DATA_TYPE_UINT16:
      return 2;
    case GST_NPU_TENSOR_DATA_TYPE_FLOAT32:
    case GST_NPU_TENSOR_DATA_TYPE_INT32:
    case GST_NPU_TENSOR_DATA_TYPE_UINT32:
      return 4;
    case GST_NPU_TENSOR_DATA_TYPE_INT64:
    case GST_NPU_TENSOR_DATA_TYPE_FLOAT64:
    case GST_NPU_TENSOR_DATA_TYPE_UINT64:
      return 8;
  }
  return 0;
}

gsize
gst_npu_tensor_get_numel (const GstNpuTensor * tensor)
{
  gsize n = 1;
  guint i;

  g_return_val_if_fail (tensor != NULL, 0);

  for (i = 0; i < tensor->num_dims; i++)
    n *= (gsize) MAX (tensor->dims[i], 0);
  return n;
}

gconstpointer
gst_npu_tensor_get_data (const GstNpuTensor * tensor, gsize * size)
{
  g_return_val_if_fail (tensor != NULL, NULL);

  if (!tensor->data) {
    if (size)
      *size = 0;
    return NULL;
  }
  return g_bytes_get_data (tensor->data, size);
}

gfloat *
gst_npu_tensor_dup_float (const GstNpuTensor * tensor, gsize * n_elements)
{
  gsize n, i, size;
  const guint8 *p;
  gfloat *out;
  gboolean quant;

  g_return_val_if_fail (tensor != NULL, NULL);

  n = gst_npu_tensor_get_numel (tensor);
  p = gst_npu_tensor_get_data (tensor, &size);
  if (size < n * gst_npu_tensor_data_type_size (tensor->data_type))
    return NULL;

  out = g_new (gfloat, MAX (n, 1));
  quant = tensor->scale != 0.0f;

  for (i = 0; i < n; i++) {
    gdouble v;

    switch (tensor->data_type) {
      case GST_NPU_TENSOR_DATA_TYPE_FLOAT32:{
        gfloat f;
        memcpy (&f, p + 4 * i, 4);
        v = f;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_FLOAT16:{
        guint16 h;
        memcpy (&h, p + 2 * i, 2);
        v = npu_fp16_to_fp32 (h);
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_FLOAT64:{
        gdouble d;
        memcpy (&d, p + 8 * i, 8);
        v = d;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_INT8:
        v = ((const gint8 *) p)[i];
        break;
      case GST_NPU_TENSOR_DATA_TYPE_UINT8:
      case GST_NPU_TENSOR_DATA_TYPE_BOOL:
        v = p[i];
        break;
      case GST_NPU_TENSOR_DATA_TYPE_INT16:{
        gint16 x;
        memcpy (&x, p + 2 * i, 2);
        v = x;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_UINT16:{
        guint16 x;
        memcpy (&x, p + 2 * i, 2);
        v = x;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_INT32:{
        gint32 x;
        memcpy (&x, p + 4 * i, 4);
        v = x;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_UINT32:{
        guint32 x;
        memcpy (&x, p + 4 * i, 4);
        v = x;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_INT64:{
        gint64 x;
        memcpy (&x, p + 8 * i, 8);
        v = (gdouble) x;
        break;
      }
      case GST_NPU_TENSOR_DATA_TYPE_UINT64:{
        guint64 x;
        memcpy (&x, p + 8 * i, 8);
        v = (gdouble) x;
        break;
      }
      default:
        g_free (out);
        return NULL;
    }
    if (quant)
      v = (v - tensor->zero_point) * tensor->scale;
    out[i] = (gfloat) v;
  }

  if (n_elements)
    *n_elements = n;
  return out;
}

/* ---- GstNpuTensorMeta ---------------------------------------------------- */

static gboolean
tensor_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstNpuTensorMeta *tmeta = (GstNpuTensorMeta *) meta;

  tmeta->model_id = NULL;
  tmeta->num_tensors = 0;
  tmeta->tensors = NULL;
  memset (&tmeta->region, 0, sizeof (tmeta->region));
  memset (&tmeta->model_region, 0, sizeof (tmeta->model_region));
  return TRUE;
}

static void
tensor_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstNpuTensorMeta *tmeta = (GstNpuTensorMeta *) meta;
  guint i;

  for (i = 0; i < tmeta->num_tensors; i++)
    g_clear_pointer (&tmeta->tensors[i].data, g_bytes_unref);
  g_clear_pointer (&tmeta->tensors, g_free);
  tmeta->num_tensors = 0;
}

static gboolean
tensor_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  GstNpuTensorMeta *smeta = (GstNpuTensorMeta *) meta;
  GstNpuTensorMeta *dmeta;
  GstNpuTensor *tensors;
  guint i;

  /* One tensor meta per buffer: a second copy into the same destination
   * (merging buffers) keeps the first. */
  if (gst_buffer_get_npu_tensor_meta (dest))
    return TRUE;

  tensors = g_new0 (GstNpuTensor, MAX (smeta->num_tensors, 1));
  for (i = 0; i < smeta->num_tensors; i++) {
    tensors[i] = smeta->tensors[i];
    if (tensors[i].data)
      g_bytes_ref (tensors[i].data);
  }
  dmeta = gst_buffer_add_npu_tensor_meta (dest, smeta->model_id,
      smeta->num_tensors, tensors);
  if (!dmeta)
    return FALSE;
  dmeta->region = smeta->region;
  dmeta->model_region = smeta->model_region;

  if (GST_VIDEO_META_TRANSFORM_IS_SCALE (type)) {
    GstVideoMetaTransform *trans = data;
    gint ow = GST_VIDEO_INFO_WIDTH (trans->in_info);
    gint oh = GST_VIDEO_INFO_HEIGHT (trans->in_info);
    gint nw = GST_VIDEO_INFO_WIDTH (trans->out_info);
    gint nh = GST_VIDEO_INFO_HEIGHT (trans->out_info);

    if (ow > 0 && oh > 0) {
      dmeta->region.x = (gint) ((gint64) smeta->region.x * nw / ow);
      dmeta->region.y = (gint) ((gint64) smeta->region.y * nh / oh);
      dmeta->region.w = (gint) ((gint64) smeta->region.w * nw / ow);
      dmeta->region.h = (gint) ((gint64) smeta->region.h * nh / oh);
    }
  }
  return TRUE;
}

GType
gst_npu_tensor_meta_api_get_type (void)
{
  static gsize type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstNpuTensorMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

const GstMetaInfo *
gst_npu_tensor_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NPU_TENSOR_META_API_TYPE,
        "GstNpuTensorMeta", sizeof (GstNpuTensorMeta), tensor_meta_init,
        tensor_meta_free, tensor_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNpuTensorMeta *
gst_buffer_add_npu_tensor_meta (GstBuffer * buffer, const gchar * model_id,
    guint num_tensors, GstNpuTensor * tensors)
{
  GstNpuTensorMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (num_tensors == 0 || tensors != NULL, NULL);

  meta = (GstNpuTensorMeta *) gst_buffer_add_meta (buffer,
      GST_NPU_TENSOR_META_INFO, NULL);
  if (!meta)
    return NULL;
  meta->model_id = model_id ? g_intern_string (model_id) : NULL;
  meta->num_tensors = num_tensors;
  meta->tensors = tensors;
  return meta;
}

const GstNpuTensor *
gst_npu_tensor_meta_get_by_name (GstNpuTensorMeta * meta, const gchar * name)
{
  GQuark q;
  guint i;

  g_return_val_if_fail (meta != NULL, NULL);
  g_return_val_if_fail (name != NULL, NULL);

  q = g_quark_try_string (name);
  if (!q)
    return NULL;
  for (i = 0; i < meta->num_tensors; i++)
    if (meta->tensors[i].name == q)
      return &meta->tensors[i];
  return NULL;
}

/* ---- GstNpuEmbeddingMeta ------------------------------------------------- */

static gboolean
embedding_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstNpuEmbeddingMeta *emeta = (GstNpuEmbeddingMeta *) meta;

  emeta->model_id = NULL;
  emeta->dims = 0;
  emeta->data = NULL;
  emeta->normalized = FALSE;
  emeta->bytes = NULL;
  return TRUE;
}

static void
embedding_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstNpuEmbeddingMeta *emeta = (GstNpuEmbeddingMeta *) meta;

  g_clear_pointer (&emeta->bytes, g_bytes_unref);
  emeta->data = NULL;
}

static gboolean
embedding_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  GstNpuEmbeddingMeta *smeta = (GstNpuEmbeddingMeta *) meta;
  GstNpuEmbeddingMeta *dmeta;

  if (gst_buffer_get_npu_embedding_meta (dest))
    return TRUE;

  dmeta = (GstNpuEmbeddingMeta *) gst_buffer_add_meta (dest,
      GST_NPU_EMBEDDING_META_INFO, NULL);
  if (!dmeta)
    return FALSE;
  dmeta->model_id = smeta->model_id;
  dmeta->dims = smeta->dims;
  dmeta->normalized = smeta->normalized;
  dmeta->bytes = smeta->bytes ? g_bytes_ref (smeta->bytes) : NULL;
  dmeta->data = smeta->data;
  return TRUE;
}

GType
gst_npu_embedding_meta_api_get_type (void)
{
  static gsize type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstNpuEmbeddingMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

const GstMetaInfo *
gst_npu_embedding_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NPU_EMBEDDING_META_API_TYPE,
        "GstNpuEmbeddingMeta", sizeof (GstNpuEmbeddingMeta),
        embedding_meta_init, embedding_meta_free, embedding_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNpuEmbeddingMeta *
gst_buffer_add_npu_embedding_meta (GstBuffer * buffer, const gchar * model_id,
    const gfloat * data, guint dims, gboolean normalized)
{
  GstNpuEmbeddingMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (dims == 0 || data != NULL, NULL);

  meta = (GstNpuEmbeddingMeta *) gst_buffer_add_meta (buffer,
      GST_NPU_EMBEDDING_META_INFO, NULL);
  if (!meta)
    return NULL;
  meta->model_id = model_id ? g_intern_string (model_id) : NULL;
  meta->dims = dims;
  meta->normalized = normalized;
  meta->bytes = g_bytes_new (data, (gsize) dims * sizeof (gfloat));
  meta->data = g_bytes_get_data (meta->bytes, NULL);
  return meta;
}
