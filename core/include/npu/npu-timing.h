/* SPDX-License-Identifier: MIT */
/*
 * npu-timing.h: the NPU timing model as one versioned table. Every modeled NPU figure
 * (the simulator's per-task and per-job times, the multi-core planner's estimate, the
 * back end's cost() and task emitters, the codegen's job estimates, the partition's
 * submit overhead) is computed from the constants of this table and of nothing else, so
 * that the compiler's estimates and the simulator's reports follow one model.
 *
 * Row v1 holds the constants of shared/hw/timing-model-v1.md ("Constants"), which says
 * what each one is based on; they are never tuned in code. Row v2 (docs/timing-model-v2.md)
 * adds constants per mechanism, fitted to published board figures; its formulas are
 * npu_timing_task()'s. Every published figure says which version produced it (`label`).
 * The row in use is v2 unless NPU_TIMING=v1|v2|v2-low|v2-high|PATH-OF-A-REPORT in the
 * environment or
 * npu_timing_model_select() (the tools' --timing) says otherwise; v1 stays selectable so
 * that old figures can be reproduced.
 */
#ifndef NPU_TIMING_H
#define NPU_TIMING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each field cites shared/hw/timing-model-v1.md: its name in the document's "Constants"
 * table and the section whose formula uses it. */
struct npu_timing_model {
    const char *name;  /* "v1": the row's name for npu_timing_model_get() */
    int version;       /* 1 */
    const char *label; /* "timing model v1": how every figure of this model is labelled */
    const char *doc;   /* "shared/hw/timing-model-v1.md": the document it implements */

    /* Compute ("Per task": compute_s = mac_steps / clock_hz). */
    double clock_hz;                 /* clock_hz = 1.0e9: one MAC step, one full array cycle */
    uint32_t mac_per_cycle_int8;     /* mac_per_cycle int8 = 1024 per core (MAC utilisation) */
    uint32_t mac_per_cycle_fp16;     /* mac_per_cycle int16, fp16 = 512 per core: every 16-bit
                                      * precision (MAC utilisation) */
    uint32_t kernel_group_int8;      /* kernel_group int8 = 32: kernels processed in parallel,
                                      * mac_steps = ceil(K / kernel_group) * ... */
    uint32_t kernel_group_fp16;      /* kernel_group int16, fp16 = 16 */
    uint32_t channel_group;          /* channel_group = 32: input channels per MAC step,
                                      * ... * ceil(C / channel_group) * ... */
    uint32_t flying_elems_per_cycle; /* "Per task", DPU-only (flying mode) and PPU-only
                                      * tasks: compute_s = elements / (clock_hz * 16), one
                                      * 16-byte atom per cycle; 16 */

    /* Data movement ("Per task": dma_s = dma_bytes / dma_bytes_per_s_core). */
    double dma_bytes_per_s_core;  /* dma_bytes_per_s_core = 10.0e9: one core's AXI
                                   * read + write */
    double dma_bytes_per_s_total; /* dma_bytes_per_s_total = 25.0e9: all cores together;
                                   * "Per job": above it, concurrent DMA terms stretch */
    uint32_t cbuf_bytes;          /* cbuf_bytes = 393216 per core (12 banks x 32 KiB); no
                                   * formula of v1 reads it: the tilers and the simulator
                                   * take the CBUF geometry from the hardware facts */

    /* Overheads. */
    double task_overhead_s;   /* task_overhead_s = 2.0e-6 ("Per task": task_s = max(compute_s,
                               * dma_s) + task_overhead_s): a task's regcmd fetch by the PC
                               * and the pipeline's fill and drain */
    double submit_overhead_s; /* submit_overhead_s = 60.0e-6 ("Per job": job_s =
                               * submit_overhead_s + the tasks' chain): one job through the
                               * vendor driver */

    /* Mechanisms of v2 (docs/timing-model-v2.md); v1's formulas read none of them. */
    int per_mechanism;         /* 0: v1's formulas, 1: v2's (npu_timing_task()) */
    double cna_efficiency;     /* share of a CNA task's MAC steps the array issues back to
                                * back: compute_s = mac_steps / (clock_hz x this) */
    double dma_eff_weight;     /* share of dma_bytes_per_s_core a contiguous weight stream
                                * reaches (long bursts) */
    double dma_eff_line;       /* the same for feature, output and DPU/PPU RDMA traffic:
                                * NC1HWC2 lines, strided surfaces, short bursts */
    double dma_task_latency_s; /* per task with DMA: the first burst's DRAM round trip,
                                * which compute cannot hide */
};

/* Seconds of one task's two phases under model tm: *compute_s from its MAC steps'
 * (or flying atoms') seconds at full rate, *dma_s from its bytes (weight_bytes of them
 * a contiguous weight stream). cna: a CNA task (MAC steps), else DPU/PPU-only. The task
 * takes max(*compute_s, *dma_s) + task_overhead_s. v1: compute as given, dma_bytes /
 * dma_bytes_per_s_core. */
void npu_timing_task(const struct npu_timing_model *tm, int cna, double compute_s,
                     uint64_t weight_bytes, uint64_t dma_bytes, double *compute_out,
                     double *dma_out);

/* What a task's bytes cost the DRAM shared by the cores, in bytes at full rate, for the
 * dma_bytes_per_s_total cap: v1 dma_bytes; v2 each stream's bytes over its efficiency
 * (dma_eff_weight, dma_eff_line), since short bursts occupy the DRAM as long per byte as
 * they take. */
double npu_timing_dram_load(const struct npu_timing_model *tm, uint64_t weight_bytes,
                            uint64_t dma_bytes);

/* The model every modeled figure uses: the one selected, else $NPU_TIMING's (read once),
 * else v2. Never NULL. */
const struct npu_timing_model *npu_timing_model(void);
/* The model named name ("v1", "v2"), or NULL when there is none of that name (or name is
 * NULL). */
const struct npu_timing_model *npu_timing_model_get(const char *name);
/* Makes the model named name the one npu_timing_model() returns from now on (for the
 * whole process; select before compiling or running). 0, or -1 when there is no model
 * of that name (nothing changes). */
int npu_timing_model_select(const char *name);
/* Loads a bring-up report (npu-selftest --report FILE; docs/hardware.md) as a timing model:
 * row v2 with the report's fitted per-task cost (less v2's DRAM round trip and the chain
 * task's bytes), per-submit overhead (unless host-timed) and mean per-core DMA rate (a line
 * rate: over v2's dma_eff_line). Its name is "report:FILE", its label "timing model
 * report:FILE". One report row per process (a later load replaces it). NULL, and a message
 * naming the problem in msg (may be NULL), when the file cannot be read or is not a report
 * with those figures. npu_timing_model_select() and $NPU_TIMING accept such a path (one
 * containing a '/': "./report.json"). */
const struct npu_timing_model *npu_timing_model_load_report(const char *path, char *msg,
                                                            size_t msg_len);

/* The names of the models, comma separated ("v1, v2"), for messages. */
const char *npu_timing_model_names(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_TIMING_H */
