/* SPDX-License-Identifier: MIT */
/*
 * npu-mc-matmul.h: one large matmul C[M][N] = A[M][K] . B[K][N] split over the NPU's cores
 * by N, when timing model v1 says that is faster (internal to core/runtime; a plan option
 * for the compiler's matmul lowering, see docs/hardware.md "Multi-core").
 *
 * The matmul is tiled by N into one-task tiles (facts A.1: A whole in CBUF, the tile's
 * weights in the remaining banks), the tiles are dealt to 1..3 cores as contiguous N ranges,
 * each core's tiles form one PC chain, and the job is one submit: core mask 7 with core i's
 * chain in subcore_task[i + 2] (three cores), or mask 3 with [i] (two; facts §4.1). A tile
 * reads all of A, its weight columns and writes its output channels, so the shares are
 * independent: no cross-core synchronisation is needed (RKNN's cooperative NN_MODE plans are
 * another thing, errata S3/S4).
 *
 * The estimate is timing model v1 evaluated analytically: per task max(compute, DMA at
 * dma_bytes_per_s_core) + task overhead, a submit overhead per job, and when cores run at
 * once their DMA terms stretched so that together they stay within dma_bytes_per_s_total.
 * The simulator computes the same model task by task; tests compare the two.
 *
 * The emitter is pluggable: by default each tile is npu_ref_matmul_emit() (Appendix A.1);
 * the compiler's own matmul lowering can be passed instead.
 */
#ifndef NPU_MC_MATMUL_H
#define NPU_MC_MATMUL_H

#include "npu-refprog.h"
#include "npu-task.h"
#include "npu/npu-device.h"

struct npu_mc_share {
    uint32_t n0, n;               /* output channels of this core */
    uint32_t first_task, n_tasks; /* in the emitted stream (set by npu_mc_emit_matmul) */
    double est_s;                 /* modeled chain time, DMA stretched (timing model v1) */
};

struct npu_mc_plan {
    uint32_t m, k, n;
    enum npu_ref_matmul_kind kind;
    uint32_t tile_n; /* output channels per task */
    unsigned cores;  /* 1, 2 or 3 */
    struct npu_mc_share share[NPU_MAX_CORES];
    double est_s;        /* modeled job time of this plan (timing model v1) */
    double est_single_s; /* the same matmul on one core */
    double dma_stretch;  /* >= 1: the total-bandwidth factor applied */
};

/* Plans the split over exactly `cores` (1..3) cores. */
enum npu_status npu_mc_plan_matmul_cores(uint32_t m, uint32_t k, uint32_t n,
                                         enum npu_ref_matmul_kind kind, unsigned cores,
                                         struct npu_mc_plan *plan);
/* Plans with the number of cores (1..max_cores) whose estimate is least. */
enum npu_status npu_mc_plan_matmul(uint32_t m, uint32_t k, uint32_t n,
                                   enum npu_ref_matmul_kind kind, unsigned max_cores,
                                   struct npu_mc_plan *plan);

/* Emits one tile (a one-task matmul of shape p) into s. */
typedef enum npu_status (*npu_mc_emit_fn)(struct npu_stream *s, const struct npu_ref_matmul *p,
                                          void *user);

/* Emits every core's tiles, core 0 first, into s (A, B packed with npu_weight_pack_matmul for
 * all N, C as NC1HWC2 for all N; the tiles address their parts). Fills the shares' task
 * ranges. emit NULL = npu_ref_matmul_emit. */
enum npu_status npu_mc_emit_matmul(struct npu_mc_plan *plan, struct npu_stream *s,
                                   struct npu_ref_buf a, struct npu_ref_buf b, struct npu_ref_buf c,
                                   npu_mc_emit_fn emit, void *user);

/* After layout and relocation: chains each core's tasks and fills the submit's core mask and
 * subcore_task ranges (task_start/task_number cover all tasks). */
enum npu_status npu_mc_finish(const struct npu_mc_plan *plan, struct npu_regcmd_image *img,
                              struct npu_submit *s);

#endif /* NPU_MC_MATMUL_H */
