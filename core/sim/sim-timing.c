/* SPDX-License-Identifier: MIT */
/*
 * sim-timing.c: the timing model (the constants of npu/npu-timing.h; v1 is
 * shared/hw/timing-model-v1.md), applied to the tasks a job actually
 * executed. The executing core records per task the compute time (MAC steps,
 * or 16-byte atoms for DPU/PPU-only tasks) and the bytes each DMA engine
 * moved; this file turns them into modeled times (npu_timing_task(): v1 below,
 * v2 per mechanism, docs/timing-model-v2.md):
 *
 *   dma_s  = bytes / dma_bytes_per_s_core (x stretch)
 *   task_s = max(compute_s, dma_s) + task_overhead_s
 *   job_s  = submit_overhead_s + chain of task_s   (longest core chain)
 *
 * Multi-core bandwidth cap: the sum of the rates of the tasks running at the
 * same modeled time (v2: of their DRAM load, npu_timing_dram_load()) may not
 * exceed dma_bytes_per_s_total; where it would,
 * every concurrent task's DMA term is stretched by the same factor
 * (sum of nominal rates / total). The tasks of one job (its cores) are
 * solved together by fixed-point iteration, so they see each other
 * symmetrically. Jobs are placed when they finish, in per-core FIFO order;
 * a job placed later sees earlier-placed jobs as fixed, and earlier results
 * are not revised (they may already have been returned), so between two
 * independently submitted concurrent jobs the stretch falls on the one placed
 * second. docs/simulator.md discusses this choice.
 */
#include "sim-priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TM_ITERATIONS 4 /* of the fixed point below (a solver setting, not the model's) */

void
sim_ledger_fini(struct sim_ledger *l)
{
    for (unsigned c = 0; c < NPU_MAX_CORES; c++)
        free(l->iv[c]);
    memset(l, 0, sizeof(*l));
}

void
sim_ledger_prune(struct sim_ledger *l, double t)
{
    for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
        size_t k = 0;
        while (k < l->n_iv[c] && l->iv[c][k].t1 <= t)
            k++;
        if (k) {
            memmove(l->iv[c], l->iv[c] + k, (l->n_iv[c] - k) * sizeof(*l->iv[c]));
            l->n_iv[c] -= k;
        }
    }
}

/* Average rate over [t0, t1) of intervals sorted by time (non-overlapping,
 * non-decreasing t1). */
static double
avg_rate(const struct sim_interval *iv, size_t n, double t0, double t1)
{
    if (t1 <= t0 || !n)
        return 0.0;
    /* first interval that ends after t0 */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (iv[mid].t1 <= t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    double acc = 0.0;
    for (size_t i = lo; i < n && iv[i].t0 < t1; i++) {
        double a = fmax(iv[i].t0, t0), b = fmin(iv[i].t1, t1);
        if (b > a)
            acc += iv[i].rate * (b - a);
    }
    return acc / (t1 - t0);
}

struct tm_task {
    double compute, dma, rate; /* nominal */
    double factor;
    double t0, t1; /* main phase (DMA/compute) in modeled seconds */
};

static enum npu_status
ledger_append(struct sim_ledger *l, unsigned c, double t0, double t1, double rate)
{
    if (t1 <= t0)
        return NPU_OK;
    if (l->n_iv[c] == l->cap_iv[c]) {
        size_t cap = l->cap_iv[c] ? l->cap_iv[c] * 2 : 256;
        struct sim_interval *n = realloc(l->iv[c], cap * sizeof(*n));
        if (!n)
            return NPU_ERR_NOMEM;
        l->iv[c] = n;
        l->cap_iv[c] = cap;
    }
    l->iv[c][l->n_iv[c]++] = (struct sim_interval){t0, t1, rate};
    return NPU_OK;
}

enum npu_status
sim_timing_place(struct sim_ledger *l, struct npu_sim_job *job)
{
    const struct npu_timing_model *tm = npu_timing_model();
    struct npu_job_result *r = &job->res;
    size_t total = 0;
    for (unsigned s = 0; s < job->n_sub; s++)
        total += job->sub[s].n_recs;

    struct tm_task *tt = total ? calloc(total, sizeof(*tt)) : NULL;
    struct npu_task_timing *out = total ? calloc(total, sizeof(*out)) : NULL;
    /* per sub-job: index of its first task in tt, and its chain start */
    size_t first[NPU_MAX_CORES + 1];
    double start[NPU_MAX_CORES];
    struct sim_interval *mine[NPU_MAX_CORES] = {0};
    enum npu_status st = NPU_OK;
    if (total && (!tt || !out)) {
        st = NPU_ERR_NOMEM;
        goto out;
    }

    first[0] = 0;
    double job_start = INFINITY;
    for (unsigned s = 0; s < job->n_sub; s++) {
        const struct sim_subjob *sub = &job->sub[s];
        first[s + 1] = first[s] + sub->n_recs;
        double t = fmax(job->min_start, l->core_free[sub->core]);
        job_start = fmin(job_start, t);
        start[s] = t + tm->submit_overhead_s;
        for (size_t i = 0; i < sub->n_recs; i++) {
            const struct sim_task_rec *rec = &sub->recs[i];
            struct tm_task *x = &tt[first[s] + i];
            npu_timing_task(tm, (rec->enable & NPU_OP_EN_CNA) != 0, rec->compute_s,
                            rec->weight_bytes, sim_task_rec_bytes(rec), &x->compute, &x->dma);
            double main = fmax(x->compute, x->dma);
            double load = npu_timing_dram_load(tm, rec->weight_bytes, sim_task_rec_bytes(rec));
            x->rate = main > 0 ? load / main : 0.0;
            x->factor = 1.0;
        }
        if (sub->n_recs) {
            mine[s] = calloc(sub->n_recs, sizeof(**mine));
            if (!mine[s]) {
                st = NPU_ERR_NOMEM;
                goto out;
            }
        }
    }
    if (!job->n_sub)
        job_start = job->min_start;

    /* Fixed-point iteration: lay the chains out with the current stretch
     * factors, then recompute every factor from the rates overlapping it. */
    for (int it = 0; it < TM_ITERATIONS; it++) {
        for (unsigned s = 0; s < job->n_sub; s++) {
            double t = start[s];
            for (size_t i = first[s]; i < first[s + 1]; i++) {
                struct tm_task *x = &tt[i];
                x->t0 = t;
                x->t1 = t + fmax(x->compute, x->dma * x->factor);
                t = x->t1 + tm->task_overhead_s;
                mine[s][i - first[s]] = (struct sim_interval){x->t0, x->t1, x->rate};
            }
        }
        bool multi = job->n_sub > 1;
        bool others_exist = false;
        for (unsigned c = 0; c < NPU_MAX_CORES; c++)
            others_exist |= l->n_iv[c] > 0;
        if (!multi && !others_exist)
            break;
        for (unsigned s = 0; s < job->n_sub; s++) {
            unsigned core = job->sub[s].core;
            for (size_t i = first[s]; i < first[s + 1]; i++) {
                struct tm_task *x = &tt[i];
                double d0 = x->t0, d1 = x->t0 + fmax(x->compute, x->dma);
                double demand = x->rate;
                for (unsigned c = 0; c < NPU_MAX_CORES; c++) {
                    bool in_job = false;
                    for (unsigned o = 0; o < job->n_sub; o++) {
                        if (job->sub[o].core != c)
                            continue;
                        in_job = true;
                        if (o != s)
                            demand += avg_rate(mine[o], first[o + 1] - first[o], d0, d1);
                    }
                    if (!in_job && c != core)
                        demand += avg_rate(l->iv[c], l->n_iv[c], d0, d1);
                }
                x->factor =
                    demand > tm->dma_bytes_per_s_total ? demand / tm->dma_bytes_per_s_total : 1.0;
            }
        }
    }

    /* Results and the ledger. */
    double job_end = job_start;
    uint64_t macs = 0, dma_bytes = 0;
    double compute_sum = 0, dma_sum = 0;
    uint32_t mpc = 0;
    for (unsigned s = 0; s < job->n_sub; s++) {
        const struct sim_subjob *sub = &job->sub[s];
        double t = start[s];
        for (size_t i = 0; i < sub->n_recs; i++) {
            const struct sim_task_rec *rec = &sub->recs[i];
            struct tm_task *x = &tt[first[s] + i];
            struct npu_task_timing *o = &out[first[s] + i];
            x->t0 = t;
            x->t1 = t + fmax(x->compute, x->dma * x->factor);
            t = x->t1 + tm->task_overhead_s;
            o->task = rec->task;
            o->core = sub->core;
            o->enable = rec->enable;
            o->compute_s = x->compute;
            o->dma_s = x->dma * x->factor;
            o->task_s = fmax(o->compute_s, o->dma_s) + tm->task_overhead_s;
            o->feature_bytes = rec->feature_bytes;
            o->weight_bytes = rec->weight_bytes;
            o->rdma_bytes = rec->rdma_bytes;
            o->output_bytes = rec->output_bytes;
            o->regcmd_bytes = rec->regcmd_bytes;
            o->dma_bytes = sim_task_rec_bytes(rec);
            o->mac_steps = rec->mac_steps;
            o->macs = rec->macs;
            o->n_access = rec->n_access;
            memcpy(o->access, rec->access, sizeof(o->access));
            o->uses_lut = rec->uses_lut;
            o->cbuf_from = rec->cbuf_from;
            o->mac_utilisation =
                rec->mac_per_cycle
                    ? (double)rec->macs / ((double)rec->mac_per_cycle * tm->clock_hz * o->task_s)
                    : 0.0;
            if (rec->mac_per_cycle > mpc)
                mpc = rec->mac_per_cycle;
            macs += rec->macs;
            dma_bytes += o->dma_bytes;
            compute_sum += o->compute_s;
            dma_sum += o->dma_s;
            st = ledger_append(l, sub->core, x->t0, x->t1, x->rate);
            if (st != NPU_OK)
                goto out;
        }
        l->core_free[sub->core] = t;
        job_end = fmax(job_end, t);
    }
    if (!job->n_sub)
        job_end = job_start + tm->submit_overhead_s;
    for (size_t i = 0; i < total; i++)
        out[i].start_s = tt[i].t0 - job_start;

    r->timing_valid = true;
    r->timing_model = tm->label;
    r->modeled_start_s = job_start;
    r->modeled_end_s = job_end;
    r->modeled_s = job_end - job_start;
    r->compute_s = compute_sum;
    r->dma_s = dma_sum;
    r->dma_bytes = dma_bytes;
    r->macs = macs;
    r->mac_utilisation =
        mpc && r->modeled_s > 0
            ? (double)macs / ((double)mpc * job->n_sub * tm->clock_hz * r->modeled_s)
            : 0.0;
    r->n_tasks = (uint32_t)total;
    job->timings = out;
    r->tasks = out;
    out = NULL;
out:
    for (unsigned s = 0; s < NPU_MAX_CORES; s++)
        free(mine[s]);
    free(tt);
    free(out);
    return st;
}
