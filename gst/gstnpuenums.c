/* SPDX-License-Identifier: MIT */
/*
 * gstnpuenums.c: the GTypes of the enums that GstNpuBase's properties take
 * (backend, drop, resize, channel-order, normalization), registered once on
 * first use. Nothing else: the enums themselves are declared in gstnpubase.h
 * and gstnpupreprocess.h, the properties in gstnpubase.c.
 */
#include "gstnpuenums.h"
#include "gstnpubase.h"
#include "gstnpupreprocess.h"

GType
gst_npu_backend_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_BACKEND_AUTO, "The NPU if present, else the simulator", "auto"},
    {GST_NPU_BACKEND_SIM, "Built-in RK3588 NPU simulator", "sim"},
    {GST_NPU_BACKEND_RKNPU, "Vendor rknpu kernel driver", "rknpu"},
    {GST_NPU_BACKEND_ROCKET, "Upstream accel/rocket kernel driver", "rocket"},
    {GST_NPU_BACKEND_CPU, "CPU executor only", "cpu"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuBackend", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

GType
gst_npu_drop_policy_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_DROP_NONE, "Block upstream until a slot is free (back-pressure)",
        "none"},
    {GST_NPU_DROP_PASS, "Pass the frame on without inference and metadata",
        "pass"},
    {GST_NPU_DROP_DISCARD, "Drop the frame entirely", "discard"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuDropPolicy", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

GType
gst_npu_resize_mode_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_RESIZE_STRETCH, "Scale the whole frame to the input size, "
          "ignoring aspect ratio", "stretch"},
    {GST_NPU_RESIZE_LETTERBOX, "Scale the whole frame keeping aspect ratio, "
          "fill the rest with border-color", "letterbox"},
    {GST_NPU_RESIZE_CROP, "Scale the centre of the frame keeping aspect "
          "ratio, cutting off the rest", "crop"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuResizeMode", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

GType
gst_npu_channel_order_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_CHANNEL_ORDER_RGB, "Red, green, blue", "rgb"},
    {GST_NPU_CHANNEL_ORDER_BGR, "Blue, green, red", "bgr"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuChannelOrder", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}

GType
gst_npu_normalization_get_type (void)
{
  static gsize id = 0;
  static const GEnumValue values[] = {
    {GST_NPU_NORMALIZATION_AUTO, "From the model's metadata if present, "
          "else mean-std with the mean and std properties", "auto"},
    {GST_NPU_NORMALIZATION_MEAN_STD, "(pixel / 255 - mean) / std",
        "mean-std"},
    {GST_NPU_NORMALIZATION_SCALE_OFFSET, "pixel * scale + offset",
        "scale-offset"},
    {GST_NPU_NORMALIZATION_NONE, "Raw pixel values 0..255", "none"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&id)) {
    GType tmp = g_enum_register_static ("GstNpuNormalization", values);
    g_once_init_leave (&id, tmp);
  }
  return (GType) id;
}
