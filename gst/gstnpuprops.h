/* SPDX-License-Identifier: MIT */
/*
 * gstnpuprops.h: table-driven GObject properties for the plugin's elements
 * (npudetect, npuclassify, npuembed, npuoverlay): a property that only stores
 * its value in an instance field is a row {prop_id, type, offset}, and one
 * set / get serves them all under the object lock; see gstnpuprops.c.
 */
#ifndef __GST_NPU_PROPS_H__
#define __GST_NPU_PROPS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* The flags of a read-write property settable up to READY / also in PLAYING. */
#define GST_NPU_PARAM_RW_READY (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)
#define GST_NPU_PARAM_RW_PLAYING (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_PLAYING)

/* The C type of the field a property is stored in. */
typedef enum
{
  GST_NPU_FIELD_STRING,         /* gchar *, owned (g_free) */
  GST_NPU_FIELD_INT,            /* gint */
  GST_NPU_FIELD_UINT,           /* guint */
  GST_NPU_FIELD_DOUBLE,         /* gdouble */
  GST_NPU_FIELD_BOOLEAN,        /* gboolean */
  GST_NPU_FIELD_ENUM,           /* an enum of the property's GType */
} GstNpuFieldType;

typedef struct
{
  guint prop_id;
  GstNpuFieldType type;
  gsize offset;                 /* G_STRUCT_OFFSET of the field */
} GstNpuField;

#define GST_NPU_FIELD_SIZE_STRING sizeof (gchar *)
#define GST_NPU_FIELD_SIZE_INT sizeof (gint)
#define GST_NPU_FIELD_SIZE_UINT sizeof (guint)
#define GST_NPU_FIELD_SIZE_DOUBLE sizeof (gdouble)
#define GST_NPU_FIELD_SIZE_BOOLEAN sizeof (gboolean)
#define GST_NPU_FIELD_SIZE_ENUM sizeof (gint)

/* A row of a property table: property @prop_id stored in @member of @Struct,
 * of @type (STRING, INT, UINT, DOUBLE, BOOLEAN, ENUM). A member whose size is
 * not the type's does not compile (a negative array size). */
#define GST_NPU_FIELD(prop_id, type, Struct, member) \
  { (prop_id), GST_NPU_FIELD_ ## type, G_STRUCT_OFFSET (Struct, member) + \
        0 * sizeof (char[sizeof (((Struct *) 0)->member) == \
                GST_NPU_FIELD_SIZE_ ## type ? 1 : -1]) }

/* Makes @fields (static, @n_fields rows) the properties of @klass's type:
 * its set_property / get_property then copy the row of the property's id
 * under the object lock, G_OBJECT_WARN_INVALID_PROPERTY_ID without one. For
 * an element all of whose own properties are rows (call it in class_init). */
void gst_npu_fields_class_init (GObjectClass * klass,
    const GstNpuField * fields, guint n_fields);

/* The same without the lock, for a set_property / get_property that handles
 * some properties itself: FALSE when no row has @prop_id. */
gboolean gst_npu_fields_set (gpointer instance, const GstNpuField * fields,
    guint n_fields, guint prop_id, const GValue * value);
gboolean gst_npu_fields_get (gpointer instance, const GstNpuField * fields,
    guint n_fields, guint prop_id, GValue * value);

G_END_DECLS

#endif /* __GST_NPU_PROPS_H__ */
