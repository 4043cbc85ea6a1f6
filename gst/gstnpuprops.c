/* SPDX-License-Identifier: MIT */
/*
 * gstnpuprops.c: table-driven GObject properties (gstnpuprops.h). The
 * elements' properties that only store a value (thresholds, file names,
 * enums) are rows of a table, so that each element's set_property /
 * get_property is one call instead of a switch repeating the same cases.
 */
#include "gstnpuprops.h"

static const GstNpuField *
find_field (const GstNpuField * fields, guint n_fields, guint prop_id)
{
  guint i;

  for (i = 0; i < n_fields; i++)
    if (fields[i].prop_id == prop_id)
      return &fields[i];
  return NULL;
}

gboolean
gst_npu_fields_set (gpointer instance, const GstNpuField * fields,
    guint n_fields, guint prop_id, const GValue * value)
{
  const GstNpuField *f = find_field (fields, n_fields, prop_id);
  gpointer p;

  if (!f)
    return FALSE;
  p = G_STRUCT_MEMBER_P (instance, f->offset);
  switch (f->type) {
    case GST_NPU_FIELD_STRING:
      g_free (*(gchar **) p);
      *(gchar **) p = g_value_dup_string (value);
      break;
    case GST_NPU_FIELD_INT:
      *(gint *) p = g_value_get_int (value);
      break;
    case GST_NPU_FIELD_UINT:
      *(guint *) p = g_value_get_uint (value);
      break;
    case GST_NPU_FIELD_DOUBLE:
      *(gdouble *) p = g_value_get_double (value);
      break;
    case GST_NPU_FIELD_BOOLEAN:
      *(gboolean *) p = g_value_get_boolean (value);
      break;
    case GST_NPU_FIELD_ENUM:
      *(gint *) p = g_value_get_enum (value);
      break;
  }
  return TRUE;
}

gboolean
gst_npu_fields_get (gpointer instance, const GstNpuField * fields,
    guint n_fields, guint prop_id, GValue * value)
{
  const GstNpuField *f = find_field (fields, n_fields, prop_id);
  gpointer p;

  if (!f)
    return FALSE;
  p = G_STRUCT_MEMBER_P (instance, f->offset);
  switch (f->type) {
    case GST_NPU_FIELD_STRING:
      g_value_set_string (value, *(gchar **) p);
      break;
    case GST_NPU_FIELD_INT:
      g_value_set_int (value, *(gint *) p);
      break;
    case GST_NPU_FIELD_UINT:
      g_value_set_uint (value, *(guint *) p);
      break;
    case GST_NPU_FIELD_DOUBLE:
      g_value_set_double (value, *(gdouble *) p);
      break;
    case GST_NPU_FIELD_BOOLEAN:
      g_value_set_boolean (value, *(gboolean *) p);
      break;
    case GST_NPU_FIELD_ENUM:
      g_value_set_enum (value, *(gint *) p);
      break;
  }
  return TRUE;
}

void
gst_npu_fields_set_property (GObject * object, const GstNpuField * fields,
    guint n_fields, guint prop_id, const GValue * value, GParamSpec * pspec)
{
  gboolean found;

  GST_OBJECT_LOCK (object);
  found = gst_npu_fields_set (object, fields, n_fields, prop_id, value);
  GST_OBJECT_UNLOCK (object);
  if (!found)
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

void
gst_npu_fields_get_property (GObject * object, const GstNpuField * fields,
    guint n_fields, guint prop_id, GValue * value, GParamSpec * pspec)
{
  gboolean found;

  GST_OBJECT_LOCK (object);
  found = gst_npu_fields_get (object, fields, n_fields, prop_id, value);
  GST_OBJECT_UNLOCK (object);
  if (!found)
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}
