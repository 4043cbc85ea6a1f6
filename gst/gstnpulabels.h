/* SPDX-License-Identifier: MIT */
/*
 * gstnpulabels.h: labels files (a text file, one label per line, line i
 * naming class i) for npudetect, npuclassify and npuembed; see
 * gstnpulabels.c.
 */
#ifndef __GST_NPU_LABELS_H__
#define __GST_NPU_LABELS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* The labels of @text, one a line: a final newline starts no label, each is
 * stripped of trailing blanks (CRLF files). NULL when there are none. */
gchar **gst_npu_labels_from_text (const gchar * text, guint * n_labels);

/* Reads a labels file (one label per line; a final empty line is ignored);
 * NULL with @error when it cannot be read or has no labels. */
gchar **gst_npu_read_labels (const gchar * path, guint * n_labels,
    GError ** error);

/* An element's start(): when @path is set, reads it into @labels /
 * @n_labels, or posts RESOURCE OPEN_READ "Cannot read the labels file" (at
 * the caller's file, function and line, logged in its GST_CAT_DEFAULT) and
 * returns FALSE. */
#define gst_npu_load_labels(element, path, labels, n_labels) \
  gst_npu_load_labels_full (GST_ELEMENT (element), GST_CAT_DEFAULT, (path), \
      (labels), (n_labels), __FILE__, GST_FUNCTION, __LINE__)
gboolean gst_npu_load_labels_full (GstElement * element,
    GstDebugCategory * cat, const gchar * path, gchar *** labels,
    guint * n_labels, const gchar * file, const gchar * function, gint line);

G_END_DECLS

#endif /* __GST_NPU_LABELS_H__ */
