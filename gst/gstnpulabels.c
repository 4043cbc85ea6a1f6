/* SPDX-License-Identifier: MIT */
/*
 * gstnpulabels.c: labels files for the decoders and npuembed
 * (gstnpulabels.h): the file's lines as labels, and the start() step of
 * npudetect / npuclassify that reads the file named by their `labels`
 * property and posts the element error when it cannot.
 */
#include "gstnpulabels.h"

gchar **
gst_npu_labels_from_text (const gchar * text, guint * n_labels)
{
  gchar **lines = g_strsplit (text, "\n", -1);
  guint n = g_strv_length (lines), i;

  /* a file ending in a newline has an empty last piece */
  if (n > 0 && lines[n - 1][0] == '\0') {
    g_free (lines[n - 1]);
    lines[--n] = NULL;
  }
  for (i = 0; i < n; i++)
    g_strchomp (lines[i]);      /* CRLF files, trailing blanks */
  if (n == 0) {
    g_strfreev (lines);
    return NULL;
  }
  *n_labels = n;
  return lines;
}

gchar **
gst_npu_read_labels (const gchar * path, guint * n_labels, GError ** error)
{
  gchar *text = NULL;
  gchar **lines;

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  lines = gst_npu_labels_from_text (text, n_labels);
  g_free (text);
  if (!lines)
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
        "labels file %s has no labels", path);
  return lines;
}

gboolean
gst_npu_load_labels_full (GstElement * element, GstDebugCategory * cat,
    const gchar * path, gchar *** labels, guint * n_labels,
    const gchar * file, const gchar * function, gint line)
{
  GError *err = NULL;
  gchar *txt, *dbg;

  if (!path || !*path)
    return TRUE;
  *labels = gst_npu_read_labels (path, n_labels, &err);
  if (*labels)
    return TRUE;
  /* what GST_ELEMENT_ERROR does, at the caller's place */
  txt = g_strdup_printf ("Cannot read the labels file \"%s\".", path);
  dbg = g_strdup (err->message);
  if (gst_debug_category_get_threshold (cat) >= GST_LEVEL_WARNING) {
    gst_debug_log (cat, GST_LEVEL_WARNING, file, function, line,
        G_OBJECT (element), "error: %s", txt);
    gst_debug_log (cat, GST_LEVEL_WARNING, file, function, line,
        G_OBJECT (element), "error: %s", dbg);
  }
  gst_element_message_full (element, GST_MESSAGE_ERROR, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_OPEN_READ, txt, dbg, file, function, line);
  g_clear_error (&err);
  return FALSE;
}
