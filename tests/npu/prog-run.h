/* SPDX-License-Identifier: MIT */
/*
 * prog-run.h: a small executor of struct npu_program for the back end's own
 * tests, on any device of npu-device.h (the simulator in strict mode here).
 * It is deliberately plain: one session, BOs for the weights, activations,
 * each job's regcmd and task descriptors, a malloc'd host arena; CPU steps
 * through the CPU kernels, CONVERT steps element by element (NCHW <-> NC1HWC2
 * with the view order of npu-program.h), NPU jobs relocated with
 * npu_image_relocate and submitted as one chain on core 0. The runtime
 * is the real executor; this one lets the back-end tests run without it.
 */
#ifndef PROG_RUN_H
#define PROG_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-hw.h"
#include "npu/npu-backend.h"
#include "npu/npu-cpu.h"
#include "npu/npu-device.h"

struct prun {
    const struct npu_program *p;
    struct npu_device *dev;
    struct npu_bo *wbo, *abo;
    struct npu_bo **rbo, **tbo; /* per job */
    uint8_t *host;
    struct npu_cpu_ctx *cpu;
    /* figures of the last run */
    double modeled_s, dma_bytes_sum;
    unsigned submits, tasks;
    uint64_t macs, dma_bytes;
    char msg[600];
};

static inline void
prun_close(struct prun *r)
{
    if (r->p) {
        for (int j = 0; j < r->p->n_jobs; j++) {
            if (r->rbo)
                npu_bo_destroy(r->rbo[j]);
            if (r->tbo)
                npu_bo_destroy(r->tbo[j]);
        }
    }
    free(r->rbo);
    free(r->tbo);
    npu_bo_destroy(r->wbo);
    npu_bo_destroy(r->abo);
    free(r->host);
    if (r->cpu)
        npu_cpu_ctx_destroy(r->cpu);
    if (r->dev)
        npu_device_close(r->dev);
    memset(r, 0, sizeof(*r));
}

static inline enum npu_status
prun_open(struct prun *r, const struct npu_program *p)
{
    memset(r, 0, sizeof(*r));
    r->p = p;
    struct npu_device_options o = {.strict = 1};
    enum npu_status st = npu_device_open_ex("sim", &o, &r->dev);
    if (st)
        return st;
    r->cpu = npu_cpu_ctx_create(1);
    r->host = calloc(1, p->host_bytes ? p->host_bytes : 64);
    r->rbo = calloc((size_t)p->n_jobs + 1, sizeof(*r->rbo));
    r->tbo = calloc((size_t)p->n_jobs + 1, sizeof(*r->tbo));
    if (!r->cpu || !r->host || !r->rbo || !r->tbo)
        return NPU_ERR_NOMEM;
    if ((st = npu_bo_create(r->dev, p->weights_bytes ? p->weights_bytes : 64, 0, &r->wbo)) ||
        (st = npu_bo_create(r->dev, p->act_bytes ? p->act_bytes : 64, 0, &r->abo)))
        return st;
    memcpy(npu_bo_map(r->wbo), p->weights, p->weights_bytes);
    for (int j = 0; j < p->n_jobs; j++) {
        const struct npu_prog_job *jb = &p->jobs[j];
        if ((st = npu_bo_create(r->dev, (size_t)jb->n_qwords * 8, 0, &r->rbo[j])) ||
            (st = npu_bo_create(r->dev, (size_t)jb->n_tasks * sizeof(struct npu_rknpu_task),
                                NPU_BO_TASKS, &r->tbo[j])))
            return st;
    }
    return NPU_OK;
}

/* Element i of a host tensor as double, and storing. */
static inline double
prun_get(const struct npu_tensor *t, const void *d, int64_t i)
{
    switch (t->dtype) {
    case NPU_DTYPE_FP32: return ((const float *)d)[i];
    case NPU_DTYPE_FP16: return npu_fp16_to_fp32(((const uint16_t *)d)[i]);
    case NPU_DTYPE_INT8: return ((const int8_t *)d)[i];
    case NPU_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case NPU_DTYPE_INT32: return ((const int32_t *)d)[i];
    case NPU_DTYPE_INT64: return (double)((const int64_t *)d)[i];
    default: return 0;
    }
}

static inline void
prun_put(enum npu_dtype dt, void *d, int64_t i, double v)
{
    switch (dt) {
    case NPU_DTYPE_FP32: ((float *)d)[i] = (float)v; break;
    case NPU_DTYPE_FP16: ((uint16_t *)d)[i] = npu_fp32_to_fp16((float)v); break;
    case NPU_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case NPU_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case NPU_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case NPU_DTYPE_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    default: break;
    }
}

/* Byte offset of logical element i in an NPU tensor (NC1HWC2 over its view, or
 * packed pixels [H][W][C] for SMALL_C). */
static inline size_t
prun_npu_off(const struct npu_prog_tensor *t, int64_t i)
{
    uint32_t C = t->npu_c, H = t->npu_h, W = t->npu_w, c, h, w;
    if (t->layout == NPU_LAYOUT_SMALL_C) {
        c = (uint32_t)(i / ((int64_t)H * W));
        h = (uint32_t)(i / W % H);
        w = (uint32_t)(i % W);
        return (((size_t)h * W + w) * C + c) * npu_dtype_size(t->mem_dtype);
    }
    if (t->npu_order == NPU_VIEW_NCHW) {
        c = (uint32_t)(i / ((int64_t)H * W));
        h = (uint32_t)(i / W % H);
        w = (uint32_t)(i % W);
    } else {
        c = (uint32_t)(i % C);
        w = (uint32_t)(i / C % W);
        h = (uint32_t)(i / C / W);
    }
    return npu_nc1hwc2_offset(npu_dtype_size(t->mem_dtype), c, h, w, H, W);
}

static inline void *
prun_host_data(struct prun *r, const struct npu_prog_tensor *t)
{
    return t->t.data ? t->t.data : r->host + t->offset;
}

static inline enum npu_status
prun_convert(struct prun *r, const struct npu_prog_tensor *a, const struct npu_prog_tensor *b)
{
    uint8_t *act = npu_bo_map(r->abo);
    int64_t n = npu_tensor_numel(&a->t);
    if (a->place == NPU_PLACE_HOST) {
        const void *src = prun_host_data(r, a);
        uint8_t *dst = act + b->offset;
        memset(dst, 0, b->bytes); /* padding lanes hold 0 */
        /* uint8 on the host is int8 - 128 on the NPU (docs/npu-backend.md) */
        double off = b->npu_offset;
        for (int64_t i = 0; i < n; i++)
            prun_put(b->mem_dtype, dst + prun_npu_off(b, i), 0, prun_get(&a->t, src, i) + off);
    } else {
        const uint8_t *src = act + a->offset;
        void *dst = prun_host_data(r, b);
        double off = -(double)a->npu_offset;
        for (int64_t i = 0; i < n; i++) {
            struct npu_tensor tt = {.dtype = a->mem_dtype};
            prun_put(b->t.dtype, dst, i, prun_get(&tt, src + prun_npu_off(a, i), 0) + off);
        }
    }
    return NPU_OK;
}

static inline enum npu_status
prun_job(struct prun *r, int j)
{
    const struct npu_prog_job *jb = &r->p->jobs[j];
    struct npu_regcmd_image img;
    memset(&img, 0, sizeof(img));
    img.qwords = npu_bo_map(r->rbo[j]);
    memcpy(img.qwords, jb->regcmd, (size_t)jb->n_qwords * 8);
    img.n_qwords = jb->n_qwords;
    img.iova = npu_bo_iova(r->rbo[j]);
    img.align = jb->segment_align;
    struct npu_image_task *it = calloc(jb->n_tasks, sizeof(*it));
    struct npu_reloc *rl = calloc(jb->n_relocs + 1, sizeof(*rl));
    if (!it || !rl) {
        free(it);
        free(rl);
        return NPU_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < jb->n_tasks; i++) {
        it[i].start = jb->tasks[i].start;
        it[i].n_body = jb->tasks[i].n_body;
        it[i].enable_mask = jb->tasks[i].enable_mask;
        it[i].int_mask = jb->tasks[i].int_mask;
    }
    for (uint32_t i = 0; i < jb->n_relocs; i++)
        rl[i] = (struct npu_reloc){jb->relocs[i].qword, jb->relocs[i].buffer, jb->relocs[i].offset};
    img.tasks = it;
    img.n_tasks = jb->n_tasks;
    img.relocs = rl;
    img.n_relocs = img.cap_relocs = jb->n_relocs;
    uint32_t iovas[NPU_BUF_COUNT] = {npu_bo_iova(r->wbo), npu_bo_iova(r->abo)};
    enum npu_status st = npu_image_relocate(&img, iovas, NPU_BUF_COUNT);
    if (!st)
        st = npu_image_fill_rknpu_tasks(&img, npu_bo_map(r->tbo[j]), jb->n_tasks);
    free(it);
    free(rl);
    if (st)
        return st;
    struct npu_submit s;
    memset(&s, 0, sizeof(s));
    s.task_bo = r->tbo[j];
    s.task_number = jb->n_tasks;
    s.core_mask = 1;
    s.subcore_task[0].task_number = jb->n_tasks;
    s.flags = NPU_JOB_PC | NPU_JOB_PINGPONG;
    s.timeout_ms = 60000;
    struct npu_job *job = NULL;
    if ((st = npu_job_submit(r->dev, &s, &job)))
        return st;
    struct npu_job_result res;
    st = npu_job_wait(job, -1, &res);
    snprintf(r->msg, sizeof(r->msg), "%s", res.message);
    if (!st && res.timing_valid) {
        r->modeled_s += res.modeled_s;
        r->dma_bytes += res.dma_bytes;
        r->macs += res.macs;
        r->tasks += res.n_tasks;
    }
    r->submits++;
    npu_job_destroy(job);
    return st;
}

/* Runs the program once: inputs[i] (row-major) in, outputs[i] views of the
 * host arena. */
static inline enum npu_status
prun_run(struct prun *r, const struct npu_tensor *inputs, struct npu_tensor *outputs)
{
    const struct npu_program *p = r->p;
    enum npu_status st;
    r->modeled_s = 0;
    r->dma_bytes = r->macs = 0;
    r->submits = r->tasks = 0;
    r->msg[0] = 0;
    for (int i = 0; i < p->n_inputs; i++) {
        const struct npu_prog_tensor *t = &p->tensors[p->inputs[i]];
        memcpy(r->host + t->offset, inputs[i].data, t->bytes);
    }
    for (int k = 0; k < p->n_steps; k++) {
        const struct npu_prog_step *s = &p->steps[k];
        if (s->kind == NPU_STEP_CONVERT) {
            st = prun_convert(r, &p->tensors[s->in[0]], &p->tensors[s->out[0]]);
        } else if (s->kind == NPU_STEP_NPU_JOB) {
            st = prun_job(r, s->job);
        } else {
            struct npu_tensor tin[64], tout[16];
            const struct npu_tensor *pin[64];
            struct npu_tensor *pout[16];
            for (int i = 0; i < s->nin && i < 64; i++) {
                if (s->in[i] < 0) {
                    pin[i] = NULL;
                    continue;
                }
                const struct npu_prog_tensor *t = &p->tensors[s->in[i]];
                tin[i] = t->t;
                tin[i].data = prun_host_data(r, t);
                pin[i] = &tin[i];
            }
            for (int i = 0; i < s->nout && i < 16; i++) {
                const struct npu_prog_tensor *t = &p->tensors[s->out[i]];
                tout[i] = t->t;
                tout[i].data = prun_host_data(r, t);
                pout[i] = &tout[i];
            }
            st = npu_cpu_run(r->cpu, s->op, &s->attrs, pin, s->nin, pout, s->nout);
        }
        if (st) {
            npu_log(NPU_LOG_ERROR, "prun", "step %d (%s) failed: %s %s", k, s->name,
                    npu_status_str(st), r->msg);
            return st;
        }
    }
    for (int i = 0; i < p->n_outputs; i++) {
        const struct npu_prog_tensor *t = &p->tensors[p->outputs[i]];
        outputs[i] = t->t;
        outputs[i].data = prun_host_data(r, t);
    }
    return NPU_OK;
}

#endif /* PROG_RUN_H */
