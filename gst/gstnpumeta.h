/* SPDX-License-Identifier: MIT */
/*
 * gstnpumeta.h: the metadata that the opennpu elements hang on video frames.
 * npuinfer attaches a GstNpuTensorMeta (every output tensor of the model, with
 * its quantisation parameters); npuembed attaches a GstNpuEmbeddingMeta (one
 * L2-normalised float vector). Both live in the small shared library
 * libgstnpumeta-1.0 so that applications (pipelines/npu-embed-store) can read
 * them without loading the plugin's code themselves.
 *
 * The header does not include any OpenNPU core header: applications need only
 * GStreamer to consume the metadata.
 */
#ifndef __GST_NPU_META_H__
#define __GST_NPU_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/**
 * GstNpuTensorDataType:
 * @GST_NPU_TENSOR_DATA_TYPE_FLOAT32: 32-bit IEEE float
 * @GST_NPU_TENSOR_DATA_TYPE_FLOAT16: 16-bit IEEE half float (raw bits)
 * @GST_NPU_TENSOR_DATA_TYPE_INT8: signed 8-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_UINT8: unsigned 8-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_INT16: signed 16-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_INT32: signed 32-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_INT64: signed 64-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_BOOL: one byte per element, 0 or 1
 * @GST_NPU_TENSOR_DATA_TYPE_FLOAT64: 64-bit IEEE float
 * @GST_NPU_TENSOR_DATA_TYPE_UINT16: unsigned 16-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_UINT32: unsigned 32-bit integer
 * @GST_NPU_TENSOR_DATA_TYPE_UINT64: unsigned 64-bit integer
 *
 * Element type of a #GstNpuTensor.
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_TENSOR_DATA_TYPE_FLOAT32,
  GST_NPU_TENSOR_DATA_TYPE_FLOAT16,
  GST_NPU_TENSOR_DATA_TYPE_INT8,
  GST_NPU_TENSOR_DATA_TYPE_UINT8,
  GST_NPU_TENSOR_DATA_TYPE_INT16,
  GST_NPU_TENSOR_DATA_TYPE_INT32,
  GST_NPU_TENSOR_DATA_TYPE_INT64,
  GST_NPU_TENSOR_DATA_TYPE_BOOL,
  GST_NPU_TENSOR_DATA_TYPE_FLOAT64,
  GST_NPU_TENSOR_DATA_TYPE_UINT16,
  GST_NPU_TENSOR_DATA_TYPE_UINT32,
  GST_NPU_TENSOR_DATA_TYPE_UINT64,
} GstNpuTensorDataType;

#define GST_TYPE_NPU_TENSOR_DATA_TYPE (gst_npu_tensor_data_type_get_type ())
GType gst_npu_tensor_data_type_get_type (void);

/* Bytes per element of @type (0 if unknown). */
gsize gst_npu_tensor_data_type_size (GstNpuTensorDataType type);

/**
 * GST_NPU_TENSOR_MAX_DIMS:
 *
 * Largest rank a #GstNpuTensor can have (the same as the OpenNPU core).
 *
 * Since: 0.1
 */
#define GST_NPU_TENSOR_MAX_DIMS 8

/**
 * GstNpuTensor:
 * @name: the model's name for this output, as a quark
 * @data_type: element type
 * @num_dims: rank (0 for a scalar)
 * @dims: (array length=num_dims): extent of each dimension, row-major
 *     (C order, the last dimension varies fastest), as in ONNX
 * @data: the elements, row-major, `numel * element size` bytes
 * @scale: quantisation scale of an integer tensor, 0 if the tensor is not
 *     quantised; real value = (q - @zero_point) * @scale
 * @zero_point: quantisation zero point (meaningful only if @scale != 0)
 *
 * One output tensor of a model run. The data is immutable and shared between
 * copies of the meta.
 *
 * Since: 0.1
 */
typedef struct
{
  GQuark name;
  GstNpuTensorDataType data_type;
  guint num_dims;
  gint64 dims[GST_NPU_TENSOR_MAX_DIMS];
  GBytes *data;
  gfloat scale;
  gint32 zero_point;
} GstNpuTensor;

/* Number of elements of @tensor (1 for a scalar). */
gsize gst_npu_tensor_get_numel (const GstNpuTensor * tensor);

/* Element data of @tensor; @size (may be NULL) receives its size in bytes. */
gconstpointer gst_npu_tensor_get_data (const GstNpuTensor * tensor,
    gsize * size);

/* Converts every element of @tensor to float, dequantising integer tensors
 * that carry a scale. Returns a newly allocated array of @n_elements floats
 * (free with g_free()), or NULL if the type cannot be converted. */
gfloat *gst_npu_tensor_dup_float (const GstNpuTensor * tensor,
    gsize * n_elements);

/**
 * GstNpuTensorMeta:
 * @meta: parent #GstMeta
 * @model_id: (nullable): interned identifier of the model that produced the
 *     tensors (by default the model file's base name)
 * @num_tensors: number of entries in @tensors
 * @tensors: (array length=num_tensors): the model's outputs, in the model's
 *     output order
 * @region: the part of the frame, in frame pixels, that the model saw
 *     (the whole frame for stretch and letterbox, the centre square for crop)
 * @model_region: where @region lies in the model's input, in model input
 *     pixels (smaller than the input for letterbox)
 *
 * Raw output tensors of one inference on one video frame, attached by
 * npuinfer. @region and @model_region let a decoder map coordinates in the
 * model's input back to the frame.
 *
 * Since: 0.1
 */
typedef struct
{
  GstMeta meta;

  const gchar *model_id;
  guint num_tensors;
  GstNpuTensor *tensors;

  struct
  {
    gint x, y, w, h;
  } region, model_region;
} GstNpuTensorMeta;

GType gst_npu_tensor_meta_api_get_type (void);
#define GST_NPU_TENSOR_META_API_TYPE (gst_npu_tensor_meta_api_get_type ())

const GstMetaInfo *gst_npu_tensor_meta_get_info (void);
#define GST_NPU_TENSOR_META_INFO (gst_npu_tensor_meta_get_info ())

#define gst_buffer_get_npu_tensor_meta(b) \
  ((GstNpuTensorMeta *) gst_buffer_get_meta ((b), GST_NPU_TENSOR_META_API_TYPE))

/* Attaches a tensor meta to @buffer. Takes ownership of @tensors (an array of
 * @num_tensors entries allocated with g_new0(), each tensor's @data
 * reference included). */
GstNpuTensorMeta *gst_buffer_add_npu_tensor_meta (GstBuffer * buffer,
    const gchar * model_id, guint num_tensors, GstNpuTensor * tensors);

/* The tensor called @name, or NULL. (transfer none) */
const GstNpuTensor *gst_npu_tensor_meta_get_by_name (GstNpuTensorMeta * meta,
    const gchar * name);

/**
 * GstNpuEmbeddingMeta:
 * @meta: parent #GstMeta
 * @model_id: (nullable): interned identifier of the model that produced the
 *     vector
 * @dims: number of elements of the vector
 * @data: the vector, @dims floats; unit L2 norm when @normalized is TRUE
 * @normalized: whether the vector was L2-normalised (npuembed always does,
 *     except for an all-zero output which cannot be)
 *
 * One embedding vector for one video frame, attached by npuembed. Cosine
 * similarity between two frames is the dot product of their vectors.
 *
 * Since: 0.1
 */
typedef struct
{
  GstMeta meta;

  const gchar *model_id;
  guint dims;
  const gfloat *data;
  gboolean normalized;

  /*< private > */
  GBytes *bytes;
} GstNpuEmbeddingMeta;

GType gst_npu_embedding_meta_api_get_type (void);
#define GST_NPU_EMBEDDING_META_API_TYPE (gst_npu_embedding_meta_api_get_type ())

const GstMetaInfo *gst_npu_embedding_meta_get_info (void);
#define GST_NPU_EMBEDDING_META_INFO (gst_npu_embedding_meta_get_info ())

#define gst_buffer_get_npu_embedding_meta(b) \
  ((GstNpuEmbeddingMeta *) gst_buffer_get_meta ((b), \
      GST_NPU_EMBEDDING_META_API_TYPE))

/* Attaches an embedding meta to @buffer; @data (@dims floats) is copied. */
GstNpuEmbeddingMeta *gst_buffer_add_npu_embedding_meta (GstBuffer * buffer,
    const gchar * model_id, const gfloat * data, guint dims,
    gboolean normalized);

/**
 * GST_NPU_ZERO_SHOT_ROI_TYPE:
 *
 * The roi_type of the #GstVideoRegionOfInterestMeta that npuembed attaches
 * when it has label embeddings: it covers the whole frame and carries one
 * parameter structure named #GST_NPU_ZERO_SHOT_STRUCTURE.
 *
 * Since: 0.1
 */
#define GST_NPU_ZERO_SHOT_ROI_TYPE "npu-zero-shot"

/**
 * GST_NPU_ZERO_SHOT_STRUCTURE:
 *
 * Name of the parameter structure of the zero-shot ROI meta. Fields:
 * `label` (string, best label), `score` (double, its score), `labels`
 * (#GstValueArray of strings, the top-k labels best first), `scores`
 * (#GstValueArray of doubles), `model-id` (string).
 *
 * Since: 0.1
 */
#define GST_NPU_ZERO_SHOT_STRUCTURE "npu-zero-shot"

/**
 * GST_NPU_DETECTION_STRUCTURE:
 *
 * Name of the parameter structure that npudetect adds to each
 * #GstVideoRegionOfInterestMeta it attaches (one per detected object; the
 * meta's roi_type is the label). Fields: `label` (string), `class-id` (int),
 * `confidence` (double), `track-id` (int; -1 unless tracking is on),
 * `model-id` (string, may be absent); for a segmentation model (YOLOv8-seg)
 * also `mask` (#GstBuffer of `mask-width` x `mask-height` bytes, row-major,
 * no padding: 255 where the object is, 0 elsewhere), `mask-width` and
 * `mask-height` (int, the ROI's w and h: the mask covers the ROI rectangle
 * pixel for pixel).
 *
 * Since: 0.1
 */
#define GST_NPU_DETECTION_STRUCTURE "npu-detection"

/**
 * GST_NPU_CLASSIFICATION_ROI_TYPE:
 *
 * The roi_type of the #GstVideoRegionOfInterestMeta that npuclassify
 * attaches: it covers the whole frame and carries one parameter structure
 * named #GST_NPU_CLASSIFICATION_STRUCTURE.
 *
 * Since: 0.1
 */
#define GST_NPU_CLASSIFICATION_ROI_TYPE "npu-classification"

/**
 * GST_NPU_CLASSIFICATION_STRUCTURE:
 *
 * Name of the parameter structure of the classification ROI meta. Fields:
 * `label` (string, best class), `class-id` (int), `confidence` (double),
 * `labels` (#GstValueArray of strings, the top-k best first), `class-ids`
 * (#GstValueArray of ints), `confidences` (#GstValueArray of doubles),
 * `model-id` (string, may be absent).
 *
 * Since: 0.1
 */
#define GST_NPU_CLASSIFICATION_STRUCTURE "npu-classification"

G_END_DECLS

#endif /* __GST_NPU_META_H__ */
