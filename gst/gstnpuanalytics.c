/* SPDX-License-Identifier: MIT */
/*
 * gstnpuanalytics.c: npudetect's and npuclassify's results as upstream
 * GstAnalyticsRelationMeta metadata (ODMtd, ClsMtd, TrackingMtd; GStreamer
 * >= 1.24). The code under HAVE_GST_ANALYTICS_MTD is NOT compiled in this
 * project's CI (Debian 12 ships GStreamer 1.22); it was only checked with
 * gcc -fsyntax-only against the 1.24 declarations (docs/gstreamer.md). The
 * fallback below, which does nothing, is what the Debian 12 build compiles.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnpuanalytics.h"

#if defined (HAVE_GST_ANALYTICS_MTD) && GST_CHECK_VERSION (1, 24, 0)
#include <gst/analytics/analytics.h>

GST_DEBUG_CATEGORY_STATIC (gst_npu_analytics_debug);
#define GST_CAT_DEFAULT gst_npu_analytics_debug

static GstAnalyticsRelationMeta *
relation_meta (GstBuffer * buf)
{
  static gsize init = 0;
  GstAnalyticsRelationMeta *rmeta;

  if (g_once_init_enter (&init)) {
    GST_DEBUG_CATEGORY_INIT (gst_npu_analytics_debug, "npuanalytics", 0,
        "OpenNPU GstAnalytics metadata");
    g_once_init_leave (&init, 1);
  }
  rmeta = gst_buffer_get_analytics_relation_meta (buf);
  if (!rmeta)
    rmeta = gst_buffer_add_analytics_relation_meta (buf);
  return rmeta;
}

gboolean
gst_npu_analytics_enabled (void)
{
  return TRUE;
}

void
gst_npu_analytics_add_detection (GstBuffer * buf, const gchar * label,
    gint x, gint y, gint w, gint h, gfloat confidence, gint track_id,
    GstClockTime track_first_seen)
{
  GstAnalyticsRelationMeta *rmeta = relation_meta (buf);
  GstAnalyticsODMtd od;
  GstAnalyticsClsMtd cls;
  GstAnalyticsTrackingMtd trk;
  GQuark q = g_quark_from_string (label);

  if (!rmeta)
    return;
  if (!gst_analytics_relation_meta_add_od_mtd (rmeta, q, x, y, w, h,
          confidence, &od)) {
    GST_WARNING ("could not add an object detection mtd");
    return;
  }
  if (gst_analytics_relation_meta_add_one_cls_mtd (rmeta, confidence, q, &cls))
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_CONTAIN, od.id, cls.id);
  if (track_id >= 0 && gst_analytics_relation_meta_add_tracking_mtd (rmeta,
          (guint64) track_id, track_first_seen, &trk)) {
    gst_analytics_tracking_mtd_update_last_seen (&trk, GST_BUFFER_PTS (buf));
    gst_analytics_relation_meta_set_relation (rmeta,
        GST_ANALYTICS_REL_TYPE_RELATE_TO, od.id, trk.id);
  }
}

void
gst_npu_analytics_add_classification (GstBuffer * buf, guint n,
    gchar ** labels, const gfloat * confidences)
{
  GstAnalyticsRelationMeta *rmeta;
  GstAnalyticsClsMtd cls;
  GQuark *quarks;
  gfloat *levels;
  guint i;

  if (n == 0)
    return;
  rmeta = relation_meta (buf);
  if (!rmeta)
    return;
  quarks = g_new (GQuark, n);
  levels = g_new (gfloat, n);
  for (i = 0; i < n; i++) {
    quarks[i] = g_quark_from_string (labels[i]);
    levels[i] = confidences[i];
  }
  if (!gst_analytics_relation_meta_add_cls_mtd (rmeta, n, levels, quarks, &cls))
    GST_WARNING ("could not add a classification mtd");
  g_free (quarks);
  g_free (levels);
}

#else /* no GstAnalytics: nothing to attach */

gboolean
gst_npu_analytics_enabled (void)
{
  return FALSE;
}

void
gst_npu_analytics_add_detection (GstBuffer * buf, const gchar * label,
    gint x, gint y, gint w, gint h, gfloat confidence, gint track_id,
    GstClockTime track_first_seen)
{
}

void
gst_npu_analytics_add_classification (GstBuffer * buf, guint n,
    gchar ** labels, const gfloat * confidences)
{
}

#endif
