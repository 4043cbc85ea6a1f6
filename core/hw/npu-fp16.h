/* SPDX-License-Identifier: MIT */
/*
 * npu-fp16.h: kept so that `#include "npu-fp16.h"` in the hardware layer's users still
 * resolves; the conversions now live in core/util (npu/npu-fp16.h), which every layer may use.
 */
#include "npu/npu-fp16.h"
