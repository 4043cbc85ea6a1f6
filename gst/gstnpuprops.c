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

/* Copies between @value and the field of @prop_id: into the field when @set
 * (@value is only read then), else out of it. FALSE when no row has @prop_id. */
static gboolean
fields_copy (gpointer instance, const GstNpuField * fields, guint n_fields,
    guint prop_id, GValue * value, gboolean set)
{
  const GstNpuField *f = find_field (fields, n_fields, prop_id);
  gpointer p;

  if (!f)
    return FALSE;
  p = G_STRUCT_MEMBER_P (instance, f->offset);
  switch (f->type) {
    case GST_NPU_FIELD_STRING:
      if (set) {
        g_free (*(gchar **) p);
        *(gchar **) p = g_value_dup_string (value);
      } else {
        g_value_set_string (value, *(gchar **) p);
      }
      break;
    case GST_NPU_FIELD_INT:
      if (set)
        *(gint *) p = g_value_get_int (value);
      else
        g_value_set_int (value, *(gint *) p);
      break;
    case GST_NPU_FIELD_UINT:
      if (set)
        *(guint *) p = g_value_get_uint (value);
      else
        g_value_set_uint (value, *(guint *) p);
      break;
    case GST_NPU_FIELD_DOUBLE:
      if (set)
        *(gdouble *) p = g_value_get_double (value);
      else
        g_value_set_double (value, *(gdouble *) p);
      break;
    case GST_NPU_FIELD_BOOLEAN:
      if (set)
        *(gboolean *) p = g_value_get_boolean (value);
      else
        g_value_set_boolean (value, *(gboolean *) p);
      break;
    case GST_NPU_FIELD_ENUM:
      if (set)
        *(gint *) p = g_value_get_enum (value);
      else
        g_value_set_enum (value, *(gint *) p);
      break;
  }
  return TRUE;
}

gboolean
gst_npu_fields_set (gpointer instance, const GstNpuField * fields,
    guint n_fields, guint prop_id, const GValue * value)
{
  return fields_copy (instance, fields, n_fields, prop_id, (GValue *) value,
      TRUE);
}

gboolean
gst_npu_fields_get (gpointer instance, const GstNpuField * fields,
    guint n_fields, guint prop_id, GValue * value)
{
  return fields_copy (instance, fields, n_fields, prop_id, value, FALSE);
}

/* A class's table, kept as qdata of the type that installs the properties
 * (GParamSpec.owner_type), so that subclasses find their parent's rows. */
typedef struct
{
  const GstNpuField *fields;
  guint n_fields;
} GstNpuFieldTable;

static GQuark
fields_quark (void)
{
  static GQuark q;

  if (!q)
    q = g_quark_from_static_string ("gst-npu-fields");
  return q;
}

/* set_property / get_property: fields_copy under the object lock. */
static void
fields_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec, gboolean set)
{
  const GstNpuFieldTable *t = g_type_get_qdata (pspec->owner_type,
      fields_quark ());
  gboolean found = FALSE;

  if (t) {
    GST_OBJECT_LOCK (object);
    found = fields_copy (object, t->fields, t->n_fields, prop_id, value, set);
    GST_OBJECT_UNLOCK (object);
  }
  if (!found)
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
fields_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  fields_property (object, prop_id, (GValue *) value, pspec, TRUE);
}

static void
fields_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  fields_property (object, prop_id, value, pspec, FALSE);
}

void
gst_npu_fields_class_init (GObjectClass * klass, const GstNpuField * fields,
    guint n_fields)
{
  GstNpuFieldTable *t = g_new (GstNpuFieldTable, 1);

  t->fields = fields;
  t->n_fields = n_fields;
  g_type_set_qdata (G_TYPE_FROM_CLASS (klass), fields_quark (), t);
  klass->set_property = fields_set_property;
  klass->get_property = fields_get_property;
}
