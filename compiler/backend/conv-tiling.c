/* SPDX-License-Identifier: MIT */
/*
 * conv-tiling.c: the tiler of the conv/matmul lowering. It splits a conv whose input and
 * weights do not fit the CBUF (12 banks of 32 KiB, facts §2.11):
 *   - output rows, each tile reading the input rows its kernel needs
 *     (overlap kh - stride rows), DATA_BANK = the banks the tile's rows fill
 *     (NOTES S14);
 *   - output kernels, in kernel groups (16 fp16 / 32 int8), either to keep
 *     a kernel tile's weights resident across row tiles (WEIGHT_REUSE) or
 *     with the input resident across kernel tiles (DATA_REUSE);
 *   - input-channel blocks, accumulated across tasks: block 0 writes a
 *     partial sum (fp32 by default), block j adds its conv to block j-1's
 *     partial with the DPU EW stage (ALU add, per-pixel operand read by
 *     ERDMA), the last block writes the result (facts §5.3).
 * Every candidate is priced with timing model v1 exactly as the simulator
 * accounts tasks (rk_task_seconds) and the cheapest wins; the RKNN rule
 * (NOTES S14) is one candidate and can be forced (rknn_tiling).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conv-priv.h"

#define BANK_BYTES 32768u
#define CBUF_BANKS 12u
#define MAX_IN_ROWS 2047u /* CNA DATAIN_HEIGHT [10:0] */

void
conv_plan_free(struct plan *p)
{
    free(p->t);
    memset(p, 0, sizeof(*p));
}

static bool
plan_push(struct plan *p, const struct rk_tile *t)
{
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        struct rk_tile *x = realloc(p->t, sizeof(*x) * cap);
        if (!x)
            return false;
        p->t = x;
        p->cap = cap;
    }
    p->t[p->n++] = *t;
    return true;
}

/* Parameters of one candidate. */
struct cand {
    uint32_t nc;     /* input channels per block (S = ceil(C / nc) blocks) */
    uint32_t bank;   /* DATA_BANK */
    uint32_t rows;   /* output rows per row tile */
    uint32_t nk;     /* kernels per kernel tile */
    bool kern_outer; /* loop kernels (then blocks) outside rows: weights stay, WEIGHT_REUSE */
};

/* Output rows a tile of `in_rows` input rows can produce. */
static uint32_t
rows_out_for(const struct rk_conv_geom *g, uint32_t in_rows)
{
    uint32_t eff = (g->kh - 1) * g->dy + 1;
    if (in_rows < eff)
        return 0;
    return (in_rows - eff) / g->sy + 1;
}

/* Largest number of output rows whose input fits `bank` data banks. The
 * tile's real input rows (padding and the map's edges cut them) are checked
 * by the caller through rk_tile_rows. */
static uint32_t
rows_fit(const struct rk_conv_geom *g, uint32_t nc, uint32_t bank)
{
    uint64_t row = rk_tile_data_bytes(g, 1, nc);
    uint64_t in_rows = (uint64_t)bank * BANK_BYTES / row;
    if (in_rows > MAX_IN_ROWS)
        in_rows = MAX_IN_ROWS;
    uint32_t r = rows_out_for(g, (uint32_t)in_rows);
    /* padding rows do not occupy the CBUF: a tile may cover up to pt more */
    return r > g->oh ? g->oh : r;
}

/* Whether a task's weights can flow through `wbanks` weight banks: resident,
 * or streamed with at least one kernel group fitting (facts §6.12; the
 * simulator refuses less). */
static bool
weights_ok(const struct rk_conv_geom *g, uint32_t nk, uint32_t nc, uint32_t wbanks, bool *resident)
{
    uint64_t cap = (uint64_t)wbanks * BANK_BYTES;
    uint64_t all = rk_weight_set_bytes(g, nk, nc);
    *resident = all <= cap;
    if (*resident)
        return true;
    uint32_t kg = g->depthwise ? 1 : NPU_MIN(nk, rk_kernel_group(g));
    return rk_weight_set_bytes(g, kg, nc) <= cap;
}

/* Appends the task of row block ri, kernel block ki and input-channel step s (of S) of
 * the group whose channels start at cb and kernels at kb (C channels, K kernels a group);
 * `flags` adds to the BIAS (first step) and ACT (last step) flags. */
static bool
push_tile(struct plan *p, const struct rk_conv_geom *g, const struct cand *c, uint32_t C,
          uint32_t K, uint32_t S, uint32_t cb, uint32_t kb, uint32_t ri, uint32_t ki, uint32_t s,
          uint32_t flags)
{
    struct rk_tile t = {0};
    t.oy0 = ri * c->rows;
    t.oh = NPU_MIN(c->rows, g->oh - t.oy0);
    t.k0 = kb + ki * c->nk;
    t.nk = NPU_MIN(c->nk, K - ki * c->nk);
    t.c0 = g->depthwise ? t.k0 : cb + s * c->nc;
    t.nc = g->depthwise ? t.nk : NPU_MIN(c->nc, C - s * c->nc);
    t.bank = c->bank;
    t.src = s ? (int32_t)(1 + (s - 1) % 2) : -1;
    t.dst = s + 1 < S ? (int32_t)(1 + s % 2) : 0;
    t.flags = flags;
    if (!s && g->bias)
        t.flags |= RKT_F_BIAS;
    if (s + 1 == S)
        t.flags |= RKT_F_ACT;
    return plan_push(p, &t);
}

/* Builds the task list of a candidate; false when it breaks a constraint. */
static bool
build(const struct rk_conv_geom *g, const struct cand *c, uint32_t groups, uint32_t max_tasks,
      struct plan *p)
{
    const uint32_t C = groups > 1 ? g->c / groups : g->c;
    const uint32_t K = groups > 1 ? g->k / groups : g->k;
    const uint32_t S = g->depthwise ? 1 : (C + c->nc - 1) / c->nc;
    const uint32_t R = (g->oh + c->rows - 1) / c->rows;
    const uint32_t KT = (K + c->nk - 1) / c->nk;
    if ((uint64_t)R * KT * S * groups > max_tasks)
        return false;
    p->n = 0;
    p->parts = S > 1 ? 2 : 0;
    p->seconds = 0;
    p->dma_bytes = p->macs = 0;
    /* per-task weight set offsets are assigned later (packing) */
    for (uint32_t gi = 0; gi < groups; gi++) {
        uint32_t cb = gi * C, kb = gi * K;
        if (c->kern_outer) {
            for (uint32_t ki = 0; ki < KT; ki++)
                for (uint32_t s = 0; s < S; s++)
                    for (uint32_t ri = 0; ri < R; ri++) {
                        /* later row tiles of the same weight set: WEIGHT_REUSE
                         * when resident (checked below) */
                        uint32_t f = ri > 0 ? RKT_F_WREUSE : 0;
                        if (!push_tile(p, g, c, C, K, S, cb, kb, ri, ki, s, f))
                            return false;
                    }
        } else {
            for (uint32_t ri = 0; ri < R; ri++)
                for (uint32_t ki = 0; ki < KT; ki++)
                    for (uint32_t s = 0; s < S; s++) {
                        uint32_t f = ki > 0 && S == 1 && !g->depthwise ? RKT_F_DREUSE : 0;
                        if (!push_tile(p, g, c, C, K, S, cb, kb, ri, ki, s, f))
                            return false;
                    }
        }
    }
    /* check every task against the CBUF and price it */
    for (uint32_t i = 0; i < p->n; i++) {
        struct rk_tile *t = &p->t[i];
        struct rk_rows r;
        rk_tile_rows(g, t->oy0, t->oh, &r);
        if (r.ih > MAX_IN_ROWS || r.pad_top > 15)
            return false;
        if (rk_tile_data_bytes(g, r.ih, t->nc) > (uint64_t)t->bank * BANK_BYTES)
            return false;
        bool res;
        if (!weights_ok(g, t->nk, t->nc, CBUF_BANKS - t->bank, &res))
            return false;
        {
            /* WEIGHT_REUSE whenever the last weight load (of this group of
             * tasks) was this very set and it stayed resident: RKNN does so on
             * later tiles (NOTES S14, partial table) */
            const struct rk_tile *q = NULL;
            for (uint32_t j = i; j-- > 0;)
                if (!(p->t[j].flags & RKT_F_WREUSE)) {
                    q = &p->t[j];
                    break;
                }
            if (res && q && q->k0 == t->k0 && q->nk == t->nk && q->c0 == t->c0 && q->nc == t->nc &&
                q->bank == t->bank)
                t->flags |= RKT_F_WREUSE;
            else
                t->flags &= ~RKT_F_WREUSE;
        }
        if (t->flags & RKT_F_DREUSE) {
            const struct rk_tile *q = i ? &p->t[i - 1] : NULL;
            struct rk_rows rq;
            if (q)
                rk_tile_rows(g, q->oy0, q->oh, &rq);
            if (!q || rq.iy0 != r.iy0 || rq.ih != r.ih || q->c0 != t->c0 || q->nc != t->nc ||
                q->bank != t->bank)
                t->flags &= ~RKT_F_DREUSE;
        }
        uint64_t b, m;
        p->seconds += rk_task_seconds(g, t, &b, &m);
        p->dma_bytes += b;
        p->macs += m;
    }
    return true;
}

/* RKNN's single-core rule (NOTES S14, derived from the ab-conv captures):
 * the whole input in as few banks as it needs when it fits next to one
 * weight bank; otherwise weight banks for all weights (if they fit) or two
 * kernel groups, the rest data banks filled with as many rows as fit, the
 * same split for every tile, WEIGHT_REUSE on later tiles when resident. */
static bool
rknn_cand(const struct rk_conv_geom *g, uint32_t C, uint32_t K, struct cand *c)
{
    memset(c, 0, sizeof(*c));
    c->nc = C;
    c->nk = K;
    c->kern_outer = true;
    if (g->depthwise) {
        /* depthwise (partial table: c768 h20 5x5 tiles 448 + 320; c128 h56
         * tiles of 32; c64 h112 / c96 h150 tiles of 32 x 50 / 37 input rows):
         * channel tiles, the most multiples of 32 whose whole map fits 11
         * banks, else 32 with as many rows as fit; rows outside channels */
        uint64_t cap = (uint64_t)(CBUF_BANKS - 1) * BANK_BYTES;
        uint32_t nc = 0;
        for (uint32_t t = 32; t < C + 32; t += 32) {
            uint32_t tc = NPU_MIN(t, C);
            if (rk_tile_data_bytes(g, g->h, tc) <= cap)
                nc = tc;
        }
        c->kern_outer = false;
        if (nc) {
            c->nc = c->nk = nc;
            uint64_t in = rk_tile_data_bytes(g, g->h, nc);
            c->bank = (uint32_t)((in + BANK_BYTES - 1) / BANK_BYTES);
            c->rows = g->oh;
            return true;
        }
        c->nc = c->nk = NPU_MIN(C, 32u);
        c->bank = CBUF_BANKS - 1;
        c->rows = rows_fit(g, c->nc, c->bank);
        return c->rows > 0;
    }
    uint64_t in = rk_tile_data_bytes(g, g->h, C);
    if (in <= (uint64_t)(CBUF_BANKS - 1) * BANK_BYTES) {
        c->bank = (uint32_t)((in + BANK_BYTES - 1) / BANK_BYTES);
        if (!c->bank)
            c->bank = 1;
        c->rows = g->oh;
        return true;
    }
    uint64_t all = rk_weight_set_bytes(g, K, C);
    uint64_t two = rk_weight_set_bytes(g, NPU_MIN(K, 2 * rk_kernel_group(g)), C);
    uint64_t wb = all <= (uint64_t)(CBUF_BANKS - 1) * BANK_BYTES ? all : two;
    uint32_t wbanks = (uint32_t)((wb + BANK_BYTES - 1) / BANK_BYTES);
    if (wbanks < 1)
        wbanks = 1;
    if (wbanks >= CBUF_BANKS)
        return false;
    c->bank = CBUF_BANKS - wbanks;
    c->rows = rows_fit(g, C, c->bank);
    return c->rows > 0;
}

/* Chooses the tiling of a conv (per group when groups > 1). */
bool
conv_plan_conv(const struct rk_conv_geom *g, uint32_t groups, const struct npu_backend_options *o,
               struct plan *best)
{
    return conv_plan_conv1(g, groups, o, false, best);
}

/* one_set: the weights are one packed set (no channel blocks); kernel tiles
 * then take their kernels' slice of it. */
bool
conv_plan_search(const struct rk_conv_geom *g, uint32_t groups, const struct npu_backend_options *o,
                 bool one_set, struct plan *best)
{
    const uint32_t C = groups > 1 ? g->c / groups : g->c;
    const uint32_t K = groups > 1 ? g->k / groups : g->k;
    const uint32_t kg = rk_kernel_group(g);
    uint32_t max_tasks = o->max_tasks ? o->max_tasks : 4095;
    struct plan p = {0};
    bool have = false;
    memset(best, 0, sizeof(*best));

    /* forced tiling (tests): candidates must match what is forced */
    const bool forced = o->force_rows || o->force_kernels || o->force_channels || o->force_order;
#define FORCED_OK(c_)                                                                              \
    ((!o->force_rows || (c_)->rows == NPU_MIN(o->force_rows, g->oh)) &&                            \
     (!o->force_kernels || (c_)->nk == NPU_MIN(o->force_kernels, K)) &&                            \
     (!o->force_channels || g->depthwise || (c_)->nc == NPU_MIN(o->force_channels, C)) &&          \
     (!o->force_order || (c_)->kern_outer == (o->force_order == 2)))
#define TRY(cand_)                                                                                 \
    do {                                                                                           \
        if (FORCED_OK(cand_) && build(g, (cand_), groups, max_tasks, &p) &&                        \
            (!have || p.seconds < best->seconds * (1 - 1e-9))) {                                   \
            struct plan t_ = *best;                                                                \
            *best = p;                                                                             \
            p = t_;                                                                                \
            have = true;                                                                           \
        }                                                                                          \
    } while (0)

    struct cand c;
    if (rknn_cand(g, C, K, &c)) {
        TRY(&c);
        if (have && (o->rknn_tiling || g->mtx)) {
            conv_plan_free(&p);
            return true;
        }
    }
    if (forced && !g->mtx) {
        /* the forced sizes, every bank split that holds them */
        uint32_t nc = o->force_channels && !g->depthwise ? NPU_MIN(o->force_channels, C) : C;
        uint32_t nk = o->force_kernels ? NPU_MIN(o->force_kernels, K) : K;
        if (g->depthwise)
            nc = nk;
        for (uint32_t bank = 1; bank < CBUF_BANKS; bank++)
            for (int order = 0; order < 2; order++) {
                c.nc = nc;
                c.nk = nk;
                c.bank = bank;
                c.rows = o->force_rows ? NPU_MIN(o->force_rows, g->oh) : rows_fit(g, nc, bank);
                c.kern_outer = order == 1;
                if (c.rows)
                    TRY(&c);
            }
        conv_plan_free(&p);
        return have;
    }
    if (g->mtx) {
        conv_plan_free(&p);
        return false; /* MTX's A.1 is one task with the whole input resident */
    }
    if (g->depthwise) {
        /* channel tiles (32 channels = one depthwise weight block) */
        uint32_t nks[2] = {C, 32}, n_nk = C > 32 ? 2 : 1;
        for (uint32_t b = 0; b < n_nk; b++) {
            uint32_t last_rows = 0;
            for (uint32_t bank = 1; bank < CBUF_BANKS; bank++) {
                uint32_t rows = rows_fit(g, nks[b], bank);
                if (!rows || rows == last_rows)
                    continue;
                last_rows = rows;
                for (int order = 0; order < 2; order++) {
                    c.nc = nks[b];
                    c.nk = nks[b];
                    c.bank = bank;
                    c.rows = rows;
                    c.kern_outer = order == 1;
                    TRY(&c);
                }
            }
        }
        conv_plan_free(&p);
        return have;
    }
    /* channel blocks: none, then multiples of 32 channels (one MAC pass each) */
    uint32_t ncs[40], n_nc = 0;
    ncs[n_nc++] = C;
    if (C > 32 && !(g->act == RK_ACT_CLIP && g->act_lo != 0) && !g->q_per_channel && !one_set) {
        /* (accumulation leaves only ReLU / ReLU-X for the last block) */
        for (uint32_t S = 2; S <= 64 && n_nc < NPU_ARRAY_SIZE(ncs); S++) {
            uint32_t nc = (C + S - 1) / S;
            nc = (nc + 31) / 32 * 32;
            if (nc >= C || nc == ncs[n_nc - 1])
                continue;
            ncs[n_nc++] = nc;
            if (nc == 32)
                break;
        }
    }
    for (uint32_t a = 0; a < n_nc; a++) {
        uint32_t nc = ncs[a];
        uint32_t last_rows = 0;
        for (uint32_t bank = 1; bank < CBUF_BANKS; bank++) {
            uint32_t rows = rows_fit(g, nc, bank);
            if (!rows || rows == last_rows)
                continue;
            last_rows = rows;
            uint32_t wb = CBUF_BANKS - bank;
            /* kernel tiles: all kernels, or the most whose weights stay resident */
            uint32_t nks[2], n_nk = 0;
            nks[n_nk++] = K;
            uint64_t per = rk_weight_set_bytes(g, 1, nc);
            uint64_t res = (uint64_t)wb * BANK_BYTES / per / kg * kg;
            if (res >= kg && res < K)
                nks[n_nk++] = (uint32_t)res;
            for (uint32_t b = 0; b < n_nk; b++) {
                for (int order = 0; order < 2; order++) {
                    c.nc = nc;
                    c.bank = bank;
                    c.rows = rows;
                    c.nk = nks[b];
                    c.kern_outer = order == 1;
                    TRY(&c);
                }
            }
        }
    }
#undef TRY
#undef FORCED_OK
    conv_plan_free(&p);
    return have;
}

/* Plans already searched: the search prices every candidate tiling with the timing model,
 * and the same geometry is planned again and again (a transformer's layers repeat their
 * matmuls; the partitioner's cost() and the lowering plan each one; SigLIP-B/16: 7 % of
 * its compile). The plan is a function of the geometry (compared byte for byte), groups,
 * one_set, the options the search reads and the timing model's figures (compared byte for
 * byte too), so a remembered plan is the one the search would return. A few recent ones,
 * shared by all threads under a lock, in static storage (nothing to free at exit). */
struct plan_memo {
    bool used, ok, one_set;
    uint32_t groups, max_tasks, force_rows, force_kernels, force_channels, force_order;
    int rknn_tiling;
    struct rk_conv_geom g;
    struct npu_timing_model tm;
    struct plan p; /* p.t: a private copy of the tiles */
};
static struct plan_memo plan_memo[16];
static unsigned plan_memo_next;
static pthread_mutex_t plan_memo_lock = PTHREAD_MUTEX_INITIALIZER;

static bool
memo_matches(const struct plan_memo *m, const struct rk_conv_geom *g, uint32_t groups,
             const struct npu_backend_options *o, bool one_set, const struct npu_timing_model *tm)
{
    return m->used && m->groups == groups && m->one_set == one_set &&
           m->max_tasks == o->max_tasks && m->force_rows == o->force_rows &&
           m->force_kernels == o->force_kernels && m->force_channels == o->force_channels &&
           m->force_order == (uint32_t)o->force_order && m->rknn_tiling == o->rknn_tiling &&
           !memcmp(&m->g, g, sizeof(*g)) && !memcmp(&m->tm, tm, sizeof(*tm));
}

/* *dst = a copy of src with its own tiles; false when out of memory (dst then empty). */
static bool
plan_copy(struct plan *dst, const struct plan *src)
{
    *dst = *src;
    dst->t = NULL;
    dst->cap = 0;
    if (!src->n)
        return true;
    dst->t = malloc((size_t)src->n * sizeof(*src->t));
    if (!dst->t) {
        memset(dst, 0, sizeof(*dst));
        return false;
    }
    memcpy(dst->t, src->t, (size_t)src->n * sizeof(*src->t));
    dst->cap = src->n;
    return true;
}

bool
conv_plan_conv1(const struct rk_conv_geom *g, uint32_t groups, const struct npu_backend_options *o,
                bool one_set, struct plan *best)
{
    const struct npu_timing_model *tm = npu_timing_model();
    pthread_mutex_lock(&plan_memo_lock);
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(plan_memo); i++) {
        const struct plan_memo *m = &plan_memo[i];
        if (memo_matches(m, g, groups, o, one_set, tm) && plan_copy(best, &m->p)) {
            bool ok = m->ok;
            pthread_mutex_unlock(&plan_memo_lock);
            return ok;
        }
    }
    pthread_mutex_unlock(&plan_memo_lock);
    bool ok = conv_plan_search(g, groups, o, one_set, best);
    struct plan copy;
    if (!plan_copy(&copy, best))
        return ok; /* not remembered */
    pthread_mutex_lock(&plan_memo_lock);
    struct plan_memo *m = &plan_memo[plan_memo_next++ % NPU_ARRAY_SIZE(plan_memo)];
    conv_plan_free(&m->p);
    memset(m, 0, sizeof(*m));
    m->used = true;
    m->ok = ok;
    m->one_set = one_set;
    m->groups = groups;
    m->max_tasks = o->max_tasks;
    m->force_rows = o->force_rows;
    m->force_kernels = o->force_kernels;
    m->force_channels = o->force_channels;
    m->force_order = (uint32_t)o->force_order;
    m->rknn_tiling = o->rknn_tiling;
    memcpy(&m->g, g, sizeof(*g));
    memcpy(&m->tm, tm, sizeof(*tm));
    m->p = copy;
    pthread_mutex_unlock(&plan_memo_lock);
    return ok;
}
