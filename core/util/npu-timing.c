/* SPDX-License-Identifier: MIT */
/*
 * npu-timing.c: the table of NPU timing models (npu/npu-timing.h), one read-only row
 * per version of the model document, and the per-task formulas of each. DEFAULT_MODEL is
 * the row npu_timing_model() returns unless NPU_TIMING or npu_timing_model_select() names
 * another: v2 (docs/timing-model-v2.md); v1 stays so that old figures can be reproduced by
 * name.
 */
#include "npu/npu-timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-common.h"

/* Row v2 and its bounds: rates times f, overheads divided by f (f = 1: the fit). */
#define V2_ROW(nm, lbl, f)                                                                         \
    {                                                                                              \
        .name = nm, .version = 2, .label = lbl, .doc = "docs/timing-model-v2.md",                  \
        .clock_hz = 1.0e9, .mac_per_cycle_int8 = 1024, .mac_per_cycle_fp16 = 512,                  \
        .kernel_group_int8 = 32, .kernel_group_fp16 = 16, .channel_group = 32,                     \
        .flying_elems_per_cycle = 16, .dma_bytes_per_s_core = 12.0e9 * (f),                        \
        .dma_bytes_per_s_total = 28.0e9 * (f), .cbuf_bytes = 393216,                               \
        .task_overhead_s = 3.0e-6 / (f), .submit_overhead_s = 25.0e-6 / (f), .per_mechanism = 1,   \
        .cna_efficiency = (0.88 * (f) < 1.0 ? 0.88 * (f) : 1.0), .dma_eff_weight = 0.92,           \
        .dma_eff_line = 0.65, .dma_task_latency_s = 0.5e-6 / (f),                                  \
    }

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
    /* v2 (docs/timing-model-v2.md says what each constant is fitted to), then the same
     * formulas with every fitted rate and overhead moved by the published figures' +-20 %
     * towards a faster (v2-low) and a slower (v2-high) board: the bounds of every v2
     * figure. */
    V2_ROW("v2", "timing model v2", 1.0),
    V2_ROW("v2-low", "timing model v2-low (fast bound)", 1.2),
    V2_ROW("v2-high", "timing model v2-high (slow bound)", 1.0 / 1.2),
};

/* The row npu_timing_model() returns when nothing selects another. */
enum { DEFAULT_MODEL = 1 };

static const struct npu_timing_model *selected;

const struct npu_timing_model *
npu_timing_model(void)
{
    if (!selected) {
        const char *e = getenv("NPU_TIMING");
        const struct npu_timing_model *m = e && *e ? npu_timing_model_get(e) : NULL;
        if (e && *e && !m)
            fprintf(stderr, "NPU_TIMING=%s: no timing model of that name (%s); using %s\n", e,
                    npu_timing_model_names(), models[DEFAULT_MODEL].name);
        selected = m ? m : &models[DEFAULT_MODEL];
    }
    return selected;
}

int
npu_timing_model_select(const char *name)
{
    const struct npu_timing_model *m = npu_timing_model_get(name);
    if (!m)
        return -1;
    selected = m;
    return 0;
}

const char *
npu_timing_model_names(void)
{
    return "v1, v2, v2-low, v2-high";
}

void
npu_timing_task(const struct npu_timing_model *tm, int cna, double compute_s, uint64_t weight_bytes,
                uint64_t dma_bytes, double *compute_out, double *dma_out)
{
    if (!tm->per_mechanism) {
        /* v1 "Per task" */
        *compute_out = compute_s;
        *dma_out = (double)dma_bytes / tm->dma_bytes_per_s_core;
        return;
    }
    /* v2: the array issues cna_efficiency of its steps back to back; weights stream at the
     * contiguous rate, everything else at the line rate, after one DRAM round trip. */
    *compute_out = cna ? compute_s / tm->cna_efficiency : compute_s;
    uint64_t w = weight_bytes < dma_bytes ? weight_bytes : dma_bytes;
    *dma_out = dma_bytes
                   ? tm->dma_task_latency_s +
                         (double)w / (tm->dma_bytes_per_s_core * tm->dma_eff_weight) +
                         (double)(dma_bytes - w) / (tm->dma_bytes_per_s_core * tm->dma_eff_line)
                   : 0.0;
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

double
npu_timing_dram_load(const struct npu_timing_model *tm, uint64_t weight_bytes, uint64_t dma_bytes)
{
    if (!tm->per_mechanism)
        return (double)dma_bytes;
    uint64_t w = weight_bytes < dma_bytes ? weight_bytes : dma_bytes;
    return (double)w / tm->dma_eff_weight + (double)(dma_bytes - w) / tm->dma_eff_line;
}
