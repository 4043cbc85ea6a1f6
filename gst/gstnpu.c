/* SPDX-License-Identifier: MIT */
/*
 * gstnpu.c: the opennpu plugin: registers npuinfer, npuembed and the
 * decoders npudetect and npuclassify. Nothing else lives here; the inference
 * elements share GstNpuBase (gstnpubase.c).
 */
/**
 * plugin-opennpu:
 *
 * Neural network inference on the RK3588 NPU (or its simulator, or the CPU)
 * with OpenNPU: npuinfer attaches raw output tensors to video frames,
 * npuembed attaches embeddings and zero-shot labels, npudetect and
 * npuclassify decode detector and classifier outputs into regions of
 * interest.
 *
 * Since: 0.1
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnpuclassify.h"
#include "gstnpudetect.h"
#include "gstnpuembed.h"
#include "gstnpuinfer.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  if (!GST_ELEMENT_REGISTER (npuinfer, plugin))
    return FALSE;
  if (!GST_ELEMENT_REGISTER (npuembed, plugin))
    return FALSE;
  if (!GST_ELEMENT_REGISTER (npudetect, plugin))
    return FALSE;
  if (!GST_ELEMENT_REGISTER (npuclassify, plugin))
    return FALSE;
  return TRUE;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, opennpu,
    "OpenNPU neural network inference on the RK3588 NPU", plugin_init,
    PACKAGE_VERSION, "MIT/X11", "OpenNPU", "https://github.com/opennpu");
