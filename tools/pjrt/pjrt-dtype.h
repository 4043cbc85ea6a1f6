/* SPDX-License-Identifier: MIT */
/*
 * pjrt-dtype.h: PJRT_Buffer_Type <-> enum npu_dtype, the element types the
 * plugin (pjrt-plugin.c) and its driver (tools/pjrt-run) both translate.
 * One table, so that the two cannot disagree on a type.
 */
#ifndef OPENNPU_PJRT_DTYPE_H
#define OPENNPU_PJRT_DTYPE_H

#include "npu/npu-tensor.h"
#include "pjrt-c-api.h"

static const struct {
    PJRT_Buffer_Type pt;
    enum npu_dtype dt;
} pjrt_dtype_map[] = {
    {PJRT_Buffer_Type_PRED, NPU_DTYPE_BOOL},  {PJRT_Buffer_Type_S8, NPU_DTYPE_INT8},
    {PJRT_Buffer_Type_S16, NPU_DTYPE_INT16},  {PJRT_Buffer_Type_S32, NPU_DTYPE_INT32},
    {PJRT_Buffer_Type_S64, NPU_DTYPE_INT64},  {PJRT_Buffer_Type_U8, NPU_DTYPE_UINT8},
    {PJRT_Buffer_Type_U16, NPU_DTYPE_UINT16}, {PJRT_Buffer_Type_U32, NPU_DTYPE_UINT32},
    {PJRT_Buffer_Type_U64, NPU_DTYPE_UINT64}, {PJRT_Buffer_Type_F16, NPU_DTYPE_FP16},
    {PJRT_Buffer_Type_F32, NPU_DTYPE_FP32},   {PJRT_Buffer_Type_F64, NPU_DTYPE_FP64},
};

/* NPU_DTYPE_UNDEFINED for a PJRT type we do not carry. */
static inline enum npu_dtype
pjrt_npu_dtype(PJRT_Buffer_Type t)
{
    for (size_t i = 0; i < sizeof pjrt_dtype_map / sizeof pjrt_dtype_map[0]; i++)
        if (pjrt_dtype_map[i].pt == t)
            return pjrt_dtype_map[i].dt;
    return NPU_DTYPE_UNDEFINED;
}

/* PJRT_Buffer_Type_INVALID for an npu dtype PJRT has no type for here. */
static inline PJRT_Buffer_Type
pjrt_buffer_type(enum npu_dtype d)
{
    for (size_t i = 0; i < sizeof pjrt_dtype_map / sizeof pjrt_dtype_map[0]; i++)
        if (pjrt_dtype_map[i].dt == d)
            return pjrt_dtype_map[i].pt;
    return PJRT_Buffer_Type_INVALID;
}

#endif /* OPENNPU_PJRT_DTYPE_H */
