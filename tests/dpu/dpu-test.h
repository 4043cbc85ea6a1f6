/* SPDX-License-Identifier: MIT */
/*
 * dpu-test.h: a small rig for the DPU/PPU lowering tests: a strict simulator device, a
 * weights BO and an activation BO (relocation buffers 0 and 1, as NPU_BUF_WEIGHTS and
 * NPU_BUF_ACT), bump allocation inside them, an npu_stream the emitters append to, and a
 * run step that lays the stream out, chains it into one job, relocates and submits it.
 * Maps are filled and read back in (c, y, x) order through their own strides, so the
 * tests never assume the layout the code under test computes.
 */
#ifndef DPU_TEST_H
#define DPU_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-dpu.h"
#include "npu-hw.h"
#include "npu-test.h"
#include "npu/npu-device.h"

#define DRIG_W 0u /* weights buffer id */
#define DRIG_A 1u /* activation buffer id */

struct drig {
    struct npu_device *dev;
    struct npu_bo *bo[2];
    uint8_t *map[2];
    size_t size[2], top[2];
    struct npu_stream s;
    struct npu_dpu_cost cost; /* emitters' estimate of the stream */
    struct npu_job_result res;
    char msg[512];
    unsigned submits;
};

static inline void
drig_open(struct drig *r, size_t wbytes, size_t abytes)
{
    memset(r, 0, sizeof(*r));
    struct npu_device_options o = {.strict = 1};
    if (npu_device_open_ex("sim", &o, &r->dev) != NPU_OK) {
        fprintf(stderr, "cannot open the simulator\n");
        exit(1);
    }
    size_t sz[2] = {wbytes, abytes};
    for (int i = 0; i < 2; i++) {
        r->size[i] = sz[i] ? sz[i] : 4096;
        if (npu_bo_create(r->dev, r->size[i], 0, &r->bo[i]) != NPU_OK) {
            fprintf(stderr, "cannot create a %zu-byte BO\n", r->size[i]);
            exit(1);
        }
        r->map[i] = npu_bo_map(r->bo[i]);
    }
    npu_stream_init(&r->s);
}

static inline void
drig_close(struct drig *r)
{
    npu_stream_fini(&r->s);
    for (int i = 0; i < 2; i++)
        npu_bo_destroy(r->bo[i]);
    npu_device_close(r->dev);
}

/* 64-byte aligned bump allocation in buffer b. */
static inline struct npu_dpu_ref
drig_alloc(struct drig *r, unsigned b, size_t bytes)
{
    size_t off = NPU_ALIGN(r->top[b], 64);
    if (off + bytes > r->size[b]) {
        fprintf(stderr, "drig: buffer %u full (%zu + %zu > %zu)\n", b, off, bytes, r->size[b]);
        exit(1);
    }
    r->top[b] = off + bytes;
    struct npu_dpu_ref ref = {b, (uint32_t)off};
    return ref;
}

static inline uint8_t *
drig_ptr(struct drig *r, struct npu_dpu_ref ref)
{
    return r->map[ref.buffer] + ref.offset;
}

/* A packed map of type t allocated in buffer b. */
static inline struct npu_dpu_map
drig_map(struct drig *r, unsigned b, enum npu_dpu_type t, uint32_t c, uint32_t h, uint32_t w)
{
    struct npu_dpu_map m = {.type = t, .w = w, .h = h, .c = c, .line = w, .surf = w * h};
    m.ref = drig_alloc(r, b, npu_dpu_map_extent(&m));
    return m;
}

/* Address of element (c, y, x) of a map, written out from the map's definition. */
static inline uint8_t *
drig_elem(struct drig *r, const struct npu_dpu_map *m, uint32_t c, uint32_t y, uint32_t x)
{
    unsigned es = npu_dpu_type_bytes(m->type), c2 = 16 / es;
    size_t off = (size_t)(c / c2) * npu_dpu_map_surf(m) * 16 +
                 ((size_t)y * npu_dpu_map_line(m) + x) * 16 + (size_t)(c % c2) * es;
    return drig_ptr(r, m->ref) + off;
}

/* Writes v[c][y][x] (rounded to the map's type). */
static inline void
drig_put(struct drig *r, const struct npu_dpu_map *m, const float *v)
{
    for (uint32_t c = 0; c < m->c; c++)
        for (uint32_t y = 0; y < m->h; y++)
            for (uint32_t x = 0; x < m->w; x++) {
                float f = v[((size_t)c * m->h + y) * m->w + x];
                uint8_t *p = drig_elem(r, m, c, y, x);
                if (m->type == NPU_DPU_FP16) {
                    uint16_t h = npu_fp32_to_fp16(f);
                    memcpy(p, &h, 2);
                } else if (m->type == NPU_DPU_FP32) {
                    memcpy(p, &f, 4);
                } else {
                    p[0] = (uint8_t)(int8_t)lrintf(f);
                }
            }
}

static inline void
drig_get(struct drig *r, const struct npu_dpu_map *m, float *v)
{
    for (uint32_t c = 0; c < m->c; c++)
        for (uint32_t y = 0; y < m->h; y++)
            for (uint32_t x = 0; x < m->w; x++) {
                uint8_t *p = drig_elem(r, m, c, y, x);
                float f;
                if (m->type == NPU_DPU_FP16) {
                    uint16_t h;
                    memcpy(&h, p, 2);
                    f = npu_fp16_to_fp32(h);
                } else if (m->type == NPU_DPU_FP32) {
                    memcpy(&f, p, 4);
                } else {
                    f = (int8_t)p[0];
                }
                v[((size_t)c * m->h + y) * m->w + x] = f;
            }
}

/* fp32 constants (per-channel operands) in the weights buffer. */
static inline struct npu_dpu_ref
drig_f32(struct drig *r, const float *v, size_t n)
{
    struct npu_dpu_ref ref = drig_alloc(r, DRIG_W, n * 4);
    memcpy(drig_ptr(r, ref), v, n * 4);
    return ref;
}

/* Packs OIHW fp32 weights (depthwise: C x 1 x kh x kw) as fp16 into the weights buffer. */
static inline struct npu_dpu_ref
drig_weights(struct drig *r, const float *oihw, uint32_t k, uint32_t c, uint32_t kh, uint32_t kw,
             bool depthwise)
{
    struct npu_weight_layout l;
    if (npu_weight_layout_init(&l, 2, k, c, kh, kw, depthwise) != NPU_OK) {
        fprintf(stderr, "drig: weight layout refused\n");
        exit(1);
    }
    size_t n = (size_t)(depthwise ? 1 : k) * c * kh * kw;
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = npu_fp32_to_fp16(oihw[i]);
    struct npu_dpu_ref ref = drig_alloc(r, DRIG_W, l.total_bytes);
    if (npu_weight_pack(&l, drig_ptr(r, ref), l.total_bytes, h, 0) != NPU_OK) {
        fprintf(stderr, "drig: weight packing failed\n");
        exit(1);
    }
    free(h);
    return ref;
}

/*
 * Runs every task of r->s as one job (one submit) on core 0, then resets the stream.
 * Returns the job status; r->res has the modeled figures and r->msg the message.
 */
static inline enum npu_status
drig_run(struct drig *r)
{
    enum npu_status st = npu_stream_status(&r->s);
    struct npu_regcmd_image img;
    struct npu_bo *rbo = NULL, *tbo = NULL;
    memset(&img, 0, sizeof(img));
    r->msg[0] = 0;
    if (st != NPU_OK) {
        snprintf(r->msg, sizeof(r->msg), "stream: %s", npu_stream_error(&r->s));
        goto out;
    }
    uint32_t n = r->s.n_tasks;
    if (!n) {
        st = NPU_ERR_INVALID;
        goto out;
    }
    /* first pass at IOVA 0 to learn the size, then at the BO's address */
    if ((st = npu_stream_layout(&r->s, 0, 0, &img)))
        goto out;
    size_t bytes = img.n_qwords * 8;
    npu_image_fini(&img);
    if ((st = npu_bo_create(r->dev, bytes, 0, &rbo)) ||
        (st = npu_bo_create(r->dev, n * sizeof(struct npu_rknpu_task), NPU_BO_TASKS, &tbo)))
        goto out;
    if ((st = npu_stream_layout(&r->s, npu_bo_iova(rbo), 0, &img)) ||
        (st = npu_image_chain(&img, 0, n, 1)))
        goto out;
    uint32_t iova[2] = {npu_bo_iova(r->bo[0]), npu_bo_iova(r->bo[1])};
    if ((st = npu_image_relocate(&img, iova, 2)))
        goto out;
    memcpy(npu_bo_map(rbo), img.qwords, bytes);
    if ((st = npu_image_fill_rknpu_tasks(&img, npu_bo_map(tbo), n)))
        goto out;
    struct npu_submit sub;
    memset(&sub, 0, sizeof(sub));
    sub.task_bo = tbo;
    sub.task_number = n;
    sub.core_mask = 1;
    sub.flags = NPU_JOB_PC | NPU_JOB_PINGPONG;
    sub.timeout_ms = 6000;
    for (unsigned i = 0; i < NPU_SUBCORE_SLOTS; i++)
        sub.subcore_task[i].task_number = n;
    struct npu_job *job = NULL;
    if ((st = npu_job_submit(r->dev, &sub, &job)))
        goto out;
    st = npu_job_wait(job, -1, &r->res);
    snprintf(r->msg, sizeof(r->msg), "%s", r->res.message);
    r->res.tasks = NULL;
    npu_job_destroy(job);
    r->submits++;
out:
    npu_image_fini(&img);
    npu_bo_destroy(rbo);
    npu_bo_destroy(tbo);
    npu_stream_fini(&r->s);
    npu_stream_init(&r->s);
    if (st != NPU_OK)
        fprintf(stderr, "drig_run: %s (%s)\n", npu_status_str(st), r->msg);
    return st;
}

/* Deterministic test data. */
static inline float
drand_sym(uint32_t *s, float amp)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return amp * (2.0f * (float)(*s >> 8) / 16777216.0f - 1.0f);
}

static inline float
f16r(float f)
{
    return npu_fp16_to_fp32(npu_fp32_to_fp16(f));
}

/* Fills v with n fp16-representable values in [-amp, amp]. */
static inline void
drand_fill(float *v, size_t n, uint32_t seed, float amp)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++)
        v[i] = f16r(drand_sym(&s, amp));
}

/* Largest |a - b| / (atol + rtol |b|) over n values; > 1 means out of tolerance. */
static inline double
dcompare(const float *got, const double *want, size_t n, double atol, double rtol, size_t *worst)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        double e = d == 0 ? 0 : d / (atol + rtol * fabs(want[i]));
        if (!(e <= m)) { /* NaN counts as worst */
            m = isnan(e) ? INFINITY : e;
            if (worst)
                *worst = i;
        }
    }
    return m;
}

#endif /* DPU_TEST_H */
