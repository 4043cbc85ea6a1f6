/* SPDX-License-Identifier: MIT */
/*
 * gstnpudetect.h: npudetect, turns the raw output tensors that npuinfer
 * attaches (GstNpuTensorMeta) into object detections
 * (GstVideoRegionOfInterestMeta). See gstnpudetect.c.
 */
#ifndef __GST_NPU_DETECT_H__
#define __GST_NPU_DETECT_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

/**
 * GstNpuDetectFormat:
 * @GST_NPU_DETECT_FORMAT_AUTO: chosen from the output shapes
 * @GST_NPU_DETECT_FORMAT_YOLOV8: ultralytics YOLOv8/YOLO11, [1, 4+nc, N]
 * @GST_NPU_DETECT_FORMAT_YOLOV5: ultralytics YOLOv5, [1, N, 5+nc]
 * @GST_NPU_DETECT_FORMAT_SSD: boxes [1, N, 4] and scores [1, N, nc]
 * @GST_NPU_DETECT_FORMAT_YOLOV8_SEG: ultralytics YOLOv8/YOLO11 -seg,
 *     [1, 4+nc+nm, N] and protos [1, nm, mh, mw]: boxes with masks
 *
 * Layout of a detector's outputs.
 *
 * Since: 0.1
 */
typedef enum
{
  GST_NPU_DETECT_FORMAT_AUTO = 0,
  GST_NPU_DETECT_FORMAT_YOLOV8 = 1,
  GST_NPU_DETECT_FORMAT_YOLOV5 = 2,
  GST_NPU_DETECT_FORMAT_SSD = 3,
  GST_NPU_DETECT_FORMAT_YOLOV8_SEG = 4,
} GstNpuDetectFormat;

#define GST_TYPE_NPU_DETECT_FORMAT (gst_npu_detect_format_get_type ())
GType gst_npu_detect_format_get_type (void);

#define GST_TYPE_NPU_DETECT (gst_npu_detect_get_type ())
G_DECLARE_FINAL_TYPE (GstNpuDetect, gst_npu_detect, GST, NPU_DETECT,
    GstBaseTransform);

GST_ELEMENT_REGISTER_DECLARE (npudetect);

G_END_DECLS

#endif /* __GST_NPU_DETECT_H__ */
