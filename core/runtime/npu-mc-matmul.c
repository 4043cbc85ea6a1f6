/* SPDX-License-Identifier: MIT */
/*
 * npu-mc-matmul.c: planning, emitting and submitting a matmul split by N over the NPU's
 * cores (npu-mc-matmul.h), with the timing model (npu/npu-timing.h, the simulator's) as
 * the judge of whether splitting pays.
 */
#include "npu-mc-matmul.h"

#include <math.h>
#include <string.h>

#include "npu-layout.h"
#include "npu/npu-timing.h"

/* Regcmd fetch of one A.1 task: about 104 body qwords + 4 tail, 16 * (AMOUNT + 1) bytes. */
#define MC_REGCMD_BYTES 880.0

static size_t
in_esize(enum npu_ref_matmul_kind kind)
{
    return kind == NPU_REF_MATMUL_INT8_INT32 ? 1 : 2;
}

static size_t
out_esize(enum npu_ref_matmul_kind kind)
{
    return kind == NPU_REF_MATMUL_FP16_FP16 ? 2 : 4;
}

/* One tile's compute seconds and DMA bytes (the timing model's "Per task"). */
static void
tile_cost(const struct npu_mc_plan *p, uint32_t nt, double *compute_s, double *bytes,
          double *weight_bytes)
{
    const struct npu_timing_model *tm = npu_timing_model();
    uint32_t kg =
        p->kind == NPU_REF_MATMUL_INT8_INT32 ? tm->kernel_group_int8 : tm->kernel_group_fp16;
    double steps =
        (double)NPU_DIV_ROUND_UP(nt, kg) * NPU_DIV_ROUND_UP(p->k, tm->channel_group) * p->m;
    *compute_s = steps / tm->clock_hz;
    size_t es = in_esize(p->kind);
    *bytes = (double)p->m * p->k * es + (double)p->k * nt * es +
             (double)p->m * nt * out_esize(p->kind) + MC_REGCMD_BYTES;
    *weight_bytes = (double)p->k * nt * es;
}

/* A core's chain time with its DMA terms stretched by f; *bytes gets its DMA bytes. */
static double
chain_s(const struct npu_mc_plan *p, const struct npu_mc_share *sh, double f, double *bytes)
{
    const struct npu_timing_model *tm = npu_timing_model();
    double t = 0, b = 0;
    for (uint32_t n0 = 0; n0 < sh->n; n0 += p->tile_n) {
        uint32_t nt = NPU_MIN(p->tile_n, sh->n - n0);
        double c, d, w;
        tile_cost(p, nt, &c, &d, &w);
        if (tm->per_mechanism) { /* v2: per mechanism (npu_timing_task) */
            double dma;
            npu_timing_task(tm, 1, c, (uint64_t)w, (uint64_t)d, &c, &dma);
            t += fmax(c, dma * f) + tm->task_overhead_s;
            d = npu_timing_dram_load(tm, (uint64_t)w, (uint64_t)d); /* for the shared cap */
        } else {
            t += fmax(c, d * f / tm->dma_bytes_per_s_core) + tm->task_overhead_s;
        }
        b += d;
    }
    *bytes = b;
    return t;
}

static void
estimate(struct npu_mc_plan *p)
{
    /* Cores run at once: if together they would pull more than dma_bytes_per_s_total, every
     * DMA term is stretched by the same factor (the timing model's "Per job"). Fixed point. */
    const struct npu_timing_model *tm = npu_timing_model();
    double f = 1;
    for (int it = 0; it < 16; it++) {
        double demand = 0;
        for (unsigned c = 0; c < p->cores; c++) {
            double bytes, t = chain_s(p, &p->share[c], f, &bytes);
            if (t > 0)
                demand += bytes / t * f; /* unstretched rate while running */
        }
        double nf = p->cores > 1 ? fmax(1.0, demand / tm->dma_bytes_per_s_total) : 1.0;
        if (fabs(nf - f) < 1e-9)
            break;
        f = nf;
    }
    double longest = 0;
    for (unsigned c = 0; c < p->cores; c++) {
        double bytes;
        p->share[c].est_s = chain_s(p, &p->share[c], f, &bytes);
        longest = fmax(longest, p->share[c].est_s);
    }
    p->dma_stretch = f;
    p->est_s = tm->submit_overhead_s + longest;
}

enum npu_status
npu_mc_plan_matmul_cores(uint32_t m, uint32_t k, uint32_t n, enum npu_ref_matmul_kind kind,
                         unsigned cores, struct npu_mc_plan *p)
{
    memset(p, 0, sizeof(*p));
    if (cores < 1 || cores > NPU_MAX_CORES || !m || !k || !n || k % 32 || n % 16 ||
        (m != 1 && m % 4) || kind > NPU_REF_MATMUL_INT8_INT32) {
        npu_err("mc",
                "cannot plan a %ux%ux%u matmul on %u cores (A.1 shapes: K %% 32, N %% 16, "
                "M %% 4 or 1)",
                m, k, n, cores);
        return NPU_ERR_INVALID;
    }
    p->m = m;
    p->k = k;
    p->n = n;
    p->kind = kind;
    size_t es = in_esize(kind);
    uint32_t data_bank = (uint32_t)NPU_DIV_ROUND_UP((uint64_t)es * m * k, 32768);
    if (data_bank > 11) {
        npu_err("mc", "A (%ux%u) does not fit the CBUF data banks of one task", m, k);
        return NPU_ERR_UNSUPPORTED;
    }
    /* Tile so that a tile's weights fit the banks A leaves free (facts 2.11). */
    uint32_t kg = kind == NPU_REF_MATMUL_INT8_INT32 ? 32 : 16;
    uint64_t cap = (uint64_t)(12 - data_bank) * 32768 / ((uint64_t)k * es);
    uint32_t tn = (uint32_t)NPU_MIN(cap / kg * kg, (uint64_t)n);
    if (tn < kg)
        tn = kg;
    p->tile_n = tn;
    uint32_t tiles = NPU_DIV_ROUND_UP(n, tn);
    if (cores > tiles)
        cores = tiles;
    p->cores = cores;
    uint32_t t0 = 0;
    for (unsigned c = 0; c < cores; c++) {
        uint32_t nt = tiles / cores + (c < tiles % cores);
        p->share[c].n0 = t0 * tn;
        p->share[c].n = NPU_MIN((t0 + nt) * tn, n) - p->share[c].n0;
        t0 += nt;
    }
    estimate(p);
    struct npu_mc_plan one = *p;
    one.cores = 1;
    memset(one.share, 0, sizeof(one.share));
    one.share[0].n = n;
    estimate(&one);
    p->est_single_s = one.est_s;
    return NPU_OK;
}

enum npu_status
npu_mc_plan_matmul(uint32_t m, uint32_t k, uint32_t n, enum npu_ref_matmul_kind kind,
                   unsigned max_cores, struct npu_mc_plan *plan)
{
    enum npu_status st = npu_mc_plan_matmul_cores(m, k, n, kind, 1, plan);
    for (unsigned c = 2; st == NPU_OK && c <= max_cores && c <= NPU_MAX_CORES; c++) {
        struct npu_mc_plan p;
        if (npu_mc_plan_matmul_cores(m, k, n, kind, c, &p) == NPU_OK && p.est_s < plan->est_s)
            *plan = p;
    }
    return st;
}

static enum npu_status
default_emit(struct npu_stream *s, const struct npu_ref_matmul *p, void *user)
{
    (void)user;
    return npu_ref_matmul_emit(s, p);
}

enum npu_status
npu_mc_emit_matmul(struct npu_mc_plan *plan, struct npu_stream *s, struct npu_ref_buf a,
                   struct npu_ref_buf b, struct npu_ref_buf c, npu_mc_emit_fn emit, void *user)
{
    if (!emit)
        emit = default_emit;
    size_t es = in_esize(plan->kind), os = out_esize(plan->kind);
    struct npu_weight_layout wl;
    enum npu_status st = npu_weight_layout_init(&wl, es, plan->n, plan->k, 1, 1, false);
    if (st != NPU_OK)
        return st;
    uint32_t c2 = (uint32_t)npu_c2(os);
    for (unsigned core = 0; core < plan->cores; core++) {
        struct npu_mc_share *sh = &plan->share[core];
        sh->first_task = s->n_tasks;
        for (uint32_t n0 = sh->n0; n0 < sh->n0 + sh->n; n0 += plan->tile_n) {
            uint32_t nt = NPU_MIN(plan->tile_n, sh->n0 + sh->n - n0);
            /* B: the tile's kernels are contiguous in the packed layout (groups of
             * kernel_group kernels, tiles are whole groups). C: channel groups of C2 are
             * surfaces of M x 16 bytes, so the tile's channels are contiguous too. */
            struct npu_ref_matmul p = {
                .kind = plan->kind,
                .m = plan->m,
                .k = plan->k,
                .n = nt,
                .input = a,
                .weight = {b.buffer, b.offset + (uint32_t)npu_weight_offset(&wl, n0, 0, 0, 0)},
                .output = {c.buffer, c.offset + (n0 / c2) * plan->m * NPU_ATOM_BYTES},
            };
            st = emit(s, &p, user);
            if (st != NPU_OK)
                return st;
        }
        sh->n_tasks = s->n_tasks - sh->first_task;
    }
    return NPU_OK;
}

enum npu_status
npu_mc_finish(const struct npu_mc_plan *plan, struct npu_regcmd_image *img, struct npu_submit *s)
{
    uint32_t total = 0;
    for (unsigned c = 0; c < plan->cores; c++) {
        const struct npu_mc_share *sh = &plan->share[c];
        if (!sh->n_tasks)
            return NPU_ERR_INVALID;
        /* Independent single-core chains: PC_REGISTER_AMOUNTS bits 17:16 stay 0 (S3). */
        enum npu_status st = npu_image_chain(img, sh->first_task, sh->n_tasks, 1);
        if (st != NPU_OK)
            return st;
        total += sh->n_tasks;
    }
    s->task_start = 0;
    s->task_number = total;
    memset(s->subcore_task, 0, sizeof(s->subcore_task));
    /* facts §4.1: one or two cores read subcore_task[i], three read [i + 2]. */
    s->core_mask = plan->cores == 3 ? 7u : plan->cores == 2 ? 3u : 1u;
    unsigned base = plan->cores == 3 ? 2 : 0;
    for (unsigned c = 0; c < plan->cores; c++) {
        s->subcore_task[base + c].task_start = plan->share[c].first_task;
        s->subcore_task[base + c].task_number = plan->share[c].n_tasks;
    }
    return NPU_OK;
}
