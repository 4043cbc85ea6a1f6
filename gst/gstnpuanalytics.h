/* SPDX-License-Identifier: MIT */
/*
 * gstnpuanalytics.h: upstream GstAnalyticsRelationMeta (GStreamer >= 1.24,
 * gst-plugins-bad's analytics library) for npudetect and npuclassify, next
 * to their GstVideoRegionOfInterestMeta, so that upstream's
 * objectdetectionoverlay and other GstAnalytics readers work unchanged.
 * Built only with HAVE_GST_ANALYTICS_MTD (meson found
 * gstreamer-analytics-1.0 >= 1.24); otherwise these functions do nothing.
 * Debian 12 has 1.22: the analytics path has not been compiled against the
 * real library here (see docs/gstreamer.md).
 */
#ifndef GST_NPU_ANALYTICS_H
#define GST_NPU_ANALYTICS_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* TRUE when this build attaches GstAnalytics metas. */
gboolean gst_npu_analytics_enabled (void);

/* One detection: a GstAnalyticsODMtd (type = label quark, box, confidence)
 * containing a one-class GstAnalyticsClsMtd, and with track_id >= 0 a
 * GstAnalyticsTrackingMtd related to it (first seen: track_first_seen;
 * npudetect passes the frame's pts, its IoU tracker keeps no first-seen
 * time; last seen: the frame's pts). */
void gst_npu_analytics_add_detection (GstBuffer * buf, const gchar * label,
    gint x, gint y, gint w, gint h, gfloat confidence, gint track_id,
    GstClockTime track_first_seen);

/* A frame classification: one GstAnalyticsClsMtd with the n labels and
 * their confidences, best first. */
void gst_npu_analytics_add_classification (GstBuffer * buf, guint n,
    gchar ** labels, const gfloat * confidences);

G_END_DECLS

#endif /* GST_NPU_ANALYTICS_H */
