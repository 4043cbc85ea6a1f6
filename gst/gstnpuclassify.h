/* SPDX-License-Identifier: MIT */
/*
 * gstnpuclassify.h: npuclassify, turns a classifier's output tensor that
 * npuinfer attaches (GstNpuTensorMeta) into top-k labels on a whole-frame
 * GstVideoRegionOfInterestMeta. See gstnpuclassify.c.
 */
#ifndef __GST_NPU_CLASSIFY_H__
#define __GST_NPU_CLASSIFY_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

/**
 * GstNpuClassifyScore:
 * @GST_NPU_CLASSIFY_SCORE_SOFTMAX: softmax over the classes (single label)
 * @GST_NPU_CLASSIFY_SCORE_SIGMOID: sigmoid of each logit (multi-label)
 * @GST_NPU_CLASSIFY_SCORE_NONE: the values as they are (the model already
 *     outputs probabilities)
 *
 * How class scores are computed from the classifier's output.
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_CLASSIFY_SCORE_SOFTMAX = 0,
  GST_NPU_CLASSIFY_SCORE_SIGMOID = 1,
  GST_NPU_CLASSIFY_SCORE_NONE = 2,
} GstNpuClassifyScore;

#define GST_TYPE_NPU_CLASSIFY_SCORE (gst_npu_classify_score_get_type ())
GType gst_npu_classify_score_get_type (void);

#define GST_TYPE_NPU_CLASSIFY (gst_npu_classify_get_type ())
G_DECLARE_FINAL_TYPE (GstNpuClassify, gst_npu_classify, GST, NPU_CLASSIFY,
    GstBaseTransform);

GST_ELEMENT_REGISTER_DECLARE (npuclassify);

G_END_DECLS

#endif /* __GST_NPU_CLASSIFY_H__ */
