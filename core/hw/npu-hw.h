/* SPDX-License-Identifier: MIT */
/*
 * npu-hw.h: the RK3588 hardware layer in one include. Everything that emits, decodes,
 * simulates or submits NPU register-command streams reads the hardware through here:
 *   npu-rk3588-regs.h  generated offsets, fields, packers, enums, targets (registers.xml)
 *   npu-regdb.h        the same database as data, and lookups (for decoders)
 *   npu-regcmd.h       the 64-bit regcmd entry, amounts, qword classification, formatting
 *   npu-abi.h          vendor rknpu and rocket kernel ABI structs, checked at compile time
 *   npu/npu-fp16.h     fp32 <-> fp16 (round to nearest even), scalar and bulk (core/util)
 *   npu-task.h         task segment builder: emit, layout, chain, relocate, descriptors
 *   npu-layout.h       NC1HWC2, small-channel input, conv/matmul/depthwise weight packing
 *   npu-golden.h       golden-regcmd v1 text format: parse and write
 *   npu-refprog.h      facts Appendix A reference programs (matmul, flying elementwise)
 */
#ifndef NPU_HW_H
#define NPU_HW_H

#include "npu/npu-common.h"

#include "npu-abi.h"
#include "npu-golden.h"
#include "npu-layout.h"
#include "npu-refprog.h"
#include "npu-regcmd.h"
#include "npu-regdb.h"
#include "npu-rk3588-regs.h"
#include "npu-task.h"
#include "npu/npu-fp16.h"

#endif /* NPU_HW_H */
