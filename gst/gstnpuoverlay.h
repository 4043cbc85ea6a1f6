/* SPDX-License-Identifier: MIT */
/*
 * gstnpuoverlay.h: npuoverlay, draws the regions of interest that npudetect
 * and npuclassify attach (boxes, labels, scores, track ids, top-k labels)
 * into the video frames with Cairo and Pango. See gstnpuoverlay.c.
 */
#ifndef __GST_NPU_OVERLAY_H__
#define __GST_NPU_OVERLAY_H__

#include <gst/gst.h>
#include <gst/video/gstvideofilter.h>

G_BEGIN_DECLS

#define GST_TYPE_NPU_OVERLAY (gst_npu_overlay_get_type ())
G_DECLARE_FINAL_TYPE (GstNpuOverlay, gst_npu_overlay, GST, NPU_OVERLAY,
    GstVideoFilter);

GST_ELEMENT_REGISTER_DECLARE (npuoverlay);

G_END_DECLS

#endif /* __GST_NPU_OVERLAY_H__ */
