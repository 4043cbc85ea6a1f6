/* SPDX-License-Identifier: MIT */
/*
 * sim-priv.h: the simulator's internal structures, shared by its files and by
 * nothing else: the IOVA space (sim-mem.c), the device/driver emulation with
 * one worker thread per core (sim-device.c), the PC chain walk and register
 * groups (sim-exec.c), the compute blocks (sim-cna.c, sim-dpu.c, sim-ppu.c)
 * and the timing model (sim-timing.c, with the constants of npu/npu-timing.h).
 */
#ifndef SIM_PRIV_H
#define SIM_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "npu-hw.h"
#include "npu-sim.h"
#include "npu/npu-timing.h"

/* ------------------------------------------------------------ IOVA space */

struct npu_sim_bo {
    struct npu_sim *sim;
    uint32_t iova;
    size_t size;   /* requested bytes: DMA beyond them faults */
    uint64_t span; /* page-rounded extent reserved in the IOVA space */
    uint8_t *host;
    int refs;    /* atomic: the owner plus every job snapshot holding it */
    bool mapped; /* under sim_mem.lock */
};

struct sim_mem {
    pthread_mutex_t lock;
    struct npu_sim_bo **bos; /* sorted by IOVA */
    size_t n, cap;
};

/* A job's private snapshot of the mapping table, references held. */
struct sim_memview {
    struct npu_sim_bo **bos;
    size_t n;
    size_t hint; /* last hit */
};

void sim_mem_init(struct sim_mem *mem);
void sim_bo_unref(struct npu_sim_bo *bo);
/* Takes a reference if the BO is still mapped; false if it was destroyed. */
bool sim_bo_ref_if_mapped(struct npu_sim_bo *bo);
void sim_mem_fini(struct sim_mem *mem);
enum npu_status sim_memview_take(struct sim_mem *mem, struct sim_memview *view);
void sim_memview_release(struct sim_memview *view);
const struct npu_sim_bo *sim_memview_find(struct sim_memview *view, uint64_t iova);
/* Host pointer for [iova, iova+len) if the whole range is inside one BO, else
 * NULL; *bo_out (may be NULL) gets the BO containing iova, if any. */
uint8_t *sim_memview_resolve(struct sim_memview *view, uint64_t iova, uint64_t len,
                             const struct npu_sim_bo **bo_out);

/* ---------------------------------------------------------- timing model */

/* What one executed task contributes to timing model v1 (per-task inputs). */
struct sim_task_rec {
    uint32_t task;          /* descriptor index */
    uint32_t enable;        /* op_en mask */
    uint32_t mac_per_cycle; /* of the task's precision; 0 for DPU/PPU-only */
    double compute_s;
    uint64_t feature_bytes, weight_bytes, rdma_bytes, output_bytes, regcmd_bytes;
    uint64_t mac_steps, macs;
    uint32_t n_access; /* DRAM ranges touched (PC fetches excluded), see npu_task_access */
    struct npu_task_access access[NPU_TASK_ACCESS_MAX];
    uint32_t uses_lut;
    uint32_t cbuf_from;
};

static inline uint64_t
sim_task_rec_bytes(const struct sim_task_rec *r)
{
    return r->feature_bytes + r->weight_bytes + r->rdma_bytes + r->output_bytes + r->regcmd_bytes;
}

struct sim_interval {
    double t0, t1;
    double rate; /* bytes per second moved during [t0, t1) */
};

/* Modeled timeline of the device: where each core is busy and how much DMA
 * bandwidth already-placed tasks use (for the 25 GB/s total cap). */
struct sim_ledger {
    double core_free[NPU_MAX_CORES];
    double observed; /* modeled end of the latest job the host has waited for */
    struct sim_interval *iv[NPU_MAX_CORES];
    size_t n_iv[NPU_MAX_CORES], cap_iv[NPU_MAX_CORES];
};

/* --------------------------------------------------------------- jobs */

struct sim_subjob {
    struct npu_sim_job *job;
    unsigned core;
    uint32_t task_start, task_number;
    struct sim_subjob *next; /* worker queue link */
    /* outcome, written by the worker before it marks the sub-job done */
    enum npu_status status;
    char msg[512];
    uint32_t int_status;
    uint32_t tasks_done;
    struct sim_task_rec *recs;
    size_t n_recs, cap_recs;
};

struct npu_sim_job {
    struct npu_sim *sim;
    struct npu_sim_bo *task_bo; /* reference held for the job's life */
    uint32_t timeout_ms;
    uint32_t task_base;
    uint32_t flags;
    double min_start; /* ledger.observed at submit time */
    unsigned n_sub;
    struct sim_subjob sub[NPU_MAX_CORES];
    unsigned remaining; /* sub-jobs not yet executed (under sim->lock) */
    bool placed;        /* timing placed and result final (under sim->lock) */
    struct npu_sim_job *fifo_next[NPU_MAX_CORES]; /* placement order per core */
    double host_t0;
    struct npu_job_result res;
    struct npu_task_timing *timings;
};

/* ----------------------------------------------------- per-core hardware */

/* Register blocks reachable through regcmd: enum npu_block PC..PPU_RDMA. */
#define SIM_NBLK (NPU_BLOCK_PPU_RDMA + 1)
#define SIM_BLOCK_REGS 1024 /* 4 KiB window of 32-bit registers */
#define SIM_LUT_ENTRIES 513 /* per table (facts 5.3) */
#define SIM_CBUF_BANKS 12
#define SIM_CBUF_BANK_BYTES 32768u
/* Kernels per group of the packed weight layout (facts §2.10). */
#define SIM_KERNEL_GROUP_INT8 32u
#define SIM_KERNEL_GROUP_16BIT 16u

/* What the CBUF holds after a conv task, for WEIGHT_REUSE / DATA_REUSE. */
struct sim_cbuf {
    bool weights_valid;
    uint32_t weight_bank0; /* first weight bank (= DATA_BANK of the loading task) */
    uint32_t weight_bytes;
    uint8_t *weights; /* copy of the resident weight bytes */
    size_t weights_cap;
    bool data_valid;
    uint32_t data_key[8]; /* geometry of the resident input tile */
    float *data_f;        /* resident decoded tile */
    int32_t *data_i;
    size_t data_n, data_cap;
    uint32_t weights_task, data_task; /* descriptor index of the task that loaded them */
    /* Host-side memo of the last weight unpack (no hardware state): the packed bytes and
     * geometry it was made from, and the row-major matrix load_weights made of them. A
     * later task with equal key and bytes takes the matrix as is (same bits). */
    uint32_t wmemo_key[8];
    uint8_t *wmemo_src;
    void *wmemo_mat; /* float (fp16) or int32_t elements */
    size_t wmemo_src_cap, wmemo_mat_cap;
    bool wmemo_valid;
};

struct sim_core {
    unsigned index;
    /* Two register groups per block (NOTES S1): [block][group][reg]. */
    uint32_t regs[SIM_NBLK][2][SIM_BLOCK_REGS];
    /* Whether the register was ever written in that group since power-on. */
    uint8_t written[SIM_NBLK][2][SIM_BLOCK_REGS];
    uint8_t ptr[SIM_NBLK];    /* group the next writes and launch use */
    bool pp_toggle[SIM_NBLK]; /* S_POINTER enables alternation */
    /* DPU LUT RAM (not ping-pong: uploaded once, used by later tasks, NOTES S19). */
    int16_t lut[2][SIM_LUT_ENTRIES];
    bool lut_written[2];
    uint32_t lut_access; /* last LUT_ACCESS_CFG value */
    uint32_t lut_ptr;    /* auto-incrementing LUT_ACCESS_DATA address */
    struct sim_cbuf cbuf;
};

/* A feature cube between blocks, planar [c][h][w]: floats for fp16/fp32
 * pipelines, 64-bit integers for integer ones. */
struct sim_cube {
    uint32_t w, h, c;
    bool is_int;
    float *f;
    int64_t *i;
    int64_t *winsum; /* [h][w] per-window input sums (CORE QD_EN), or NULL */
    size_t cap_f, cap_i, cap_ws;
};

/* State of one core's run of one sub-job. */
struct sim_exec {
    struct npu_sim *sim;
    struct sim_core *core;
    struct sim_subjob *sub;
    struct sim_memview mem;
    bool strict;
    bool lut_fixed;         /* the device's LUT index model is FIXED */
    bool cna_ftz;           /* the CNA flushes fp16 subnormal inputs to zero (NPU_SIM_CNA_FTZ) */
    uint32_t task_base;     /* TASK_DMA_BASE_ADDR */
    uint32_t task;          /* descriptor index of the running task */
    uint8_t grp[SIM_NBLK];  /* register group each block executes with */
    uint32_t enable;        /* op_en of the running task */
    enum npu_status status; /* first failure */
    char warned[16][96];    /* lenient-mode warnings already printed */
    unsigned n_warned;
    struct sim_task_rec rec;  /* figures of the running task */
    struct sim_cube core_out; /* CORE -> DPU */
    struct sim_cube dpu_out;  /* DPU -> PPU */
    struct sim_cube rdma_in;  /* MRDMA / PPU_RDMA input */
};

/* Failure of the running task: records "task N: <text>" (first one wins) and
 * returns false. */
bool sim_fail(struct sim_exec *x, enum npu_status st, const char *fmt, ...) NPU_PRINTF(3, 4);
/* A register pattern the facts mark unverified or open: strict mode fails
 * with NPU_ERR_HW_REFUSED naming the fact; lenient mode warns once and
 * returns true. */
bool sim_unverified(struct sim_exec *x, const char *fact, const char *fmt, ...) NPU_PRINTF(3, 4);
/* Register value of the running task's group of the block holding off.
 * Strict mode refuses reading a register no regcmd ever wrote in that group
 * (its reset value is undocumented); *ok is cleared then. */
uint32_t sim_reg(struct sim_exec *x, uint16_t off, bool *ok);
const char *sim_reg_name(uint16_t off);
/* Host pointer for a DMA of len bytes at NPU address addr (TASK_DMA_BASE_ADDR
 * added) by block blk; fails the task with a message naming the task, block,
 * what and the address if the range is not inside one mapped BO. */
uint8_t *sim_dma(struct sim_exec *x, int blk, const char *what, uint32_t addr, uint64_t len);
/* Ensures cube storage for w*h*c elements of the given kind. */
bool sim_cube_alloc(struct sim_exec *x, struct sim_cube *cube, uint32_t w, uint32_t h, uint32_t c,
                    bool is_int);
void sim_cube_free(struct sim_cube *cube);

/* The blocks (sim-cna.c, sim-dpu.c, sim-ppu.c). Each returns false after
 * sim_fail()/sim_unverified() refused. */
bool sim_cna_run(struct sim_exec *x, struct sim_cube *out);
bool sim_dpu_run(struct sim_exec *x, const struct sim_cube *in, bool to_ppu, bool to_mem);
bool sim_ppu_run(struct sim_exec *x, const struct sim_cube *from_dpu);
/* Strict mode's allow-list (sim-evidence.c): false after sim_fail() when no
 * ledger entry at or above the threshold covers the write (off 0x0008 = the
 * op_en entry). */
bool sim_evidence_check(struct sim_exec *x, uint16_t off, uint32_t value);
/* Resolves a requested threshold (0 = $NPU_SIM_EVIDENCE, else T). */
enum npu_status sim_evidence_threshold(int requested, int *out);
/* Writes a value to the LUT RAM through LUT_ACCESS_CFG/DATA (sim-dpu.c). */
bool sim_lut_access(struct sim_exec *x, uint16_t off, uint32_t value);

/* ---------------------------------------------------------------- device */

struct sim_worker {
    struct npu_sim *sim;
    unsigned core;
    pthread_t thread;
    bool started;
    struct sim_subjob *head, *tail; /* under sim->lock */
    unsigned queued;
    struct sim_core *state; /* touched only by this worker */
};

struct npu_sim {
    bool strict;
    int evidence;   /* strict allow-list threshold: enum npu_evidence_level, or -1 = off */
    bool lut_fixed; /* LUT index model FIXED (sim-dpu.c lut_fix) */
    bool cna_ftz;   /* NPU_SIM_CNA_FTZ: the CNA reads fp16 subnormals as zero (sim-cna.c) */
    unsigned n_cores;
    struct sim_mem mem;
    pthread_mutex_t lock;
    pthread_cond_t work_cond; /* workers wait for sub-jobs */
    pthread_cond_t done_cond; /* waiters wait for placement */
    bool stopping;
    struct sim_worker workers[NPU_MAX_CORES];
    struct npu_sim_job *fifo_head[NPU_MAX_CORES], *fifo_tail[NPU_MAX_CORES];
    struct sim_ledger ledger;
    unsigned jobs_alive;
};

/* Runs one core's share of a job (sim-exec.c). Fills sub->status, msg,
 * int_status, tasks_done and recs. */
void sim_exec_subjob(struct npu_sim *sim, struct sim_core *core, struct sim_subjob *sub);
struct sim_core *sim_core_new(unsigned index);
void sim_core_free(struct sim_core *core);

/* Places a finished job on the modeled timeline (sim-timing.c); caller holds
 * sim->lock. Fills job->res timing fields and job->timings. */
enum npu_status sim_timing_place(struct sim_ledger *ledger, struct npu_sim_job *job);
void sim_ledger_fini(struct sim_ledger *ledger);
/* Forget intervals that end before t (no job can start before it any more). */
void sim_ledger_prune(struct sim_ledger *ledger, double t);

double sim_now_s(void);

#endif /* SIM_PRIV_H */
