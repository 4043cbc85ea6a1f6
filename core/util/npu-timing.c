/* SPDX-License-Identifier: MIT */
/*
 * npu-timing.c: the table of NPU timing models (npu/npu-timing.h), one read-only row
 * per version of the model document; CURRENT_MODEL is the row npu_timing_model()
 * returns. Adding v2 means a shared/hw/timing-model-v2.md, a second row here and
 * CURRENT_MODEL pointing at it; v1 stays so that old figures can be reproduced by name.
 */
#include "npu/npu-timing.h"

#include <string.h>

#include "npu/npu-common.h"

static const struct npu_timing_model models[] = {
    {
        .name = "v1",
        .version = 1,
        .label = "timing model v1",
        .doc = "shared/hw/timing-model-v1.md",
        .clock_hz = 1.0e9,
        .mac_per_cycle_int8 = 1024,
        .mac_per_cycle_fp16 = 512,
        .kernel_group_int8 = 32,
        .kernel_group_fp16 = 16,
        .channel_group = 32,
        .flying_elems_per_cycle = 16,
        .dma_bytes_per_s_core = 10.0e9,
        .dma_bytes_per_s_total = 25.0e9,
        .cbuf_bytes = 393216,
        .task_overhead_s = 2.0e-6,
        .submit_overhead_s = 60.0e-6,
    },
};

/* The row npu_timing_model() returns. */
enum { CURRENT_MODEL = 0 };

const struct npu_timing_model *
npu_timing_model(void)
{
    return &models[CURRENT_MODEL];
}

const struct npu_timing_model *
npu_timing_model_get(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(models); i++)
        if (!strcmp(models[i].name, name))
            return &models[i];
    return NULL;
}
