/* SPDX-License-Identifier: MIT */
/*
 * npu-conv-time.c: the geometry of one rk.Conv task (the input rows a tile reads, the CBUF
 * bytes of its data and weights, the output channels CORE and DPU carry, the size of its
 * register program) and its modeled time (the selected timing model, npu_timing_task(), as
 * the simulator accounts tasks): per task, per node, and for the LUT upload before a conv.
 */
#include <stdlib.h>

#include "npu-conv-priv.h"
#include "npu/npu-timing.h"

void
rk_tile_rows(const struct rk_conv_geom *g, uint32_t oy0, uint32_t oh, struct rk_rows *r)
{
    int64_t eff = (int64_t)(g->kh - 1) * g->dy + 1;
    int64_t a = (int64_t)oy0 * g->sy - g->pt;
    int64_t b = (int64_t)(oy0 + oh - 1) * g->sy - g->pt + eff; /* exclusive */
    int64_t a0 = a < 0 ? 0 : a, b0 = b > g->h ? g->h : b;
    if (b0 <= a0) { /* only padding: still read one row (never chosen by the tiler) */
        a0 = a < 0 ? 0 : (a >= g->h ? g->h - 1 : a);
        b0 = a0 + 1;
    }
    r->iy0 = (uint32_t)a0;
    r->ih = (uint32_t)(b0 - a0);
    r->pad_top = (uint32_t)(a0 - a);
}

uint64_t
rk_weight_set_bytes(const struct rk_conv_geom *g, uint32_t nk, uint32_t nc)
{
    uint64_t per = (uint64_t)g->kh * g->kw * rk_cpad(g, nc) * rk_esize(g->in_dt);
    return per * (g->depthwise ? 1 : nk);
}

uint64_t
rk_tile_data_bytes(const struct rk_conv_geom *g, uint32_t rows, uint32_t nc)
{
    /* small-channel mode: RKNN fills 11 banks with 50 rows of 224 pixels
     * (ARGB capture), i.e. 32 bytes of CBUF per pixel */
    if (g->argb)
        return (uint64_t)g->w * rows * 32;
    uint64_t row = (uint64_t)g->w * rk_cpad(g, nc) * rk_esize(g->in_dt);
    return (row + 63) / 64 * 64 * rows;
}

/* Output channels CORE and DPU carry: padded to the kernel group, 16 for
 * fp16 and 32 for int8 (the partial table: 24 -> 32, 72 -> 80, 273 -> 288,
 * 546 -> 560, 1001 -> 1008; NOTES S20's "padded to 8" only saw 1001). */
uint32_t
conv_kout_of(const struct rk_conv_geom *g, uint32_t nk, enum npu_dtype out)
{
    (void)out;
    /* depthwise: the channel block (32 fp16, 64 int8; c144 h56 dw: 16 -> 32) */
    uint32_t a = g->depthwise ? (g->in_dt == NPU_DTYPE_INT8 ? 64 : 32) : rk_kernel_group(g);
    return (nk + a - 1) / a * a;
}

enum npu_dtype
conv_tile_out_dt(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    return t->dst > 0 ? g->part_dt : g->out_dt;
}

/* The residual is added by the first channel block's tasks (those without a partial
 * sum to add). */
bool
conv_res_here(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    return g->residual && t->src < 0;
}

bool
conv_uses_rdma(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    return (t->flags & RKT_F_BIAS) || t->src > 0 || g->q_per_channel || conv_res_here(g, t);
}

uint32_t
rk_task_body_qwords(const struct rk_conv_geom *g, const struct rk_tile *t)
{
    /* prefix 4 (RKNN) + S_POINTER 1 + CNA 48 + CORE 5 + DPU 50; MTX: no prefix.
     * With DPU_RDMA: its S_POINTER and 17 registers. */
    uint32_t n = (g->mtx ? 0 : 4) + 1 + 48 + 5 + 50;
    if (conv_uses_rdma(g, t))
        n += 1 + 17;
    return n;
}

double
rk_task_seconds(const struct rk_conv_geom *g, const struct rk_tile *t, uint64_t *dma_bytes,
                uint64_t *macs)
{
    struct rk_rows r;
    rk_tile_rows(g, t->oy0, t->oh, &r);
    const uint32_t es = rk_esize(g->in_dt), c2 = 16 / es;
    const uint32_t cpad = rk_cpad(g, t->nc);
    const struct npu_timing_model *tm = npu_timing_model();
    const uint32_t kg = g->in_dt == NPU_DTYPE_INT8 ? tm->kernel_group_int8 : tm->kernel_group_fp16;
    const uint32_t cg = tm->channel_group;
    const uint64_t hw = (uint64_t)t->oh * g->ow * g->kh * g->kw;
    uint64_t steps;
    if (g->depthwise)
        steps = (cpad + kg - 1) / kg * hw;
    else
        steps = (uint64_t)((t->nk + kg - 1) / kg) * ((cpad + cg - 1) / cg) * hw;
    double compute = (double)steps / tm->clock_hz;
    uint64_t bytes = 0;
    if (!(t->flags & RKT_F_DREUSE))
        bytes += g->argb ? (uint64_t)g->w * r.ih * g->argb * es
                         : (uint64_t)((cpad + c2 - 1) / c2) * g->w * r.ih * 16;
    uint64_t wbytes = 0;
    if (!(t->flags & RKT_F_WREUSE))
        bytes += wbytes = rk_weight_set_bytes(g, t->nk, t->nc);
    enum npu_dtype odt = conv_tile_out_dt(g, t);
    uint32_t kout = conv_kout_of(g, t->nk, odt);
    if (t->flags & RKT_F_BIAS)
        bytes += (uint64_t)kout * 4;
    if (g->q_per_channel)
        bytes += (uint64_t)kout * 4;
    if (t->src > 0) {
        /* the simulator charges the ERDMA extent (first to last byte) */
        uint32_t pes = rk_esize(g->part_dt), pc2 = 16 / pes;
        uint64_t c1 = (kout + pc2 - 1) / pc2;
        bytes +=
            (c1 - 1) * (uint64_t)g->ow * g->oh * 16 + ((uint64_t)(t->oh - 1) * g->ow + g->ow) * 16;
    }
    if (conv_res_here(g, t)) {
        /* the residual through ERDMA, charged over its extent like the partial sums */
        uint32_t rc2 = 16 / rk_esize(g->res_dt);
        uint64_t c1 = (kout + rc2 - 1) / rc2;
        bytes +=
            (c1 - 1) * (uint64_t)g->ow * g->oh * 16 + ((uint64_t)(t->oh - 1) * g->ow + g->ow) * 16;
    }
    uint32_t oc2 = 16 / rk_esize(odt);
    bytes += (uint64_t)((kout + oc2 - 1) / oc2) * g->ow * t->oh * 16;
    uint32_t n = rk_task_body_qwords(g, t) + NPU_TASK_TAIL_QWORDS;
    bytes += 16ull * ((n + 1) / 2);
    if (dma_bytes)
        *dma_bytes = bytes;
    if (macs)
        *macs = (uint64_t)(g->depthwise ? t->nc : (uint64_t)t->nk * t->nc) * hw;
    double dma;
    npu_timing_task(tm, 1, compute, wbytes, bytes, &compute, &dma);
    return (compute > dma ? compute : dma) + tm->task_overhead_s;
}

double
rk_conv_modeled(const struct npu_node *n)
{
    struct rk_conv_geom g;
    struct rk_tile *t = NULL;
    uint32_t nt = 0;
    if (rk_conv_decode(n, &g, &t, &nt))
        return -1;
    double sec = g.lut_id ? rk_lut_prologue_seconds() : 0;
    for (uint32_t i = 0; i < nt; i++)
        sec += rk_task_seconds(&g, &t[i], NULL, NULL);
    free(t);
    return sec;
}

double
rk_lut_prologue_seconds(void)
{
    /* every table uploads the same number of words: price it once with a dummy address */
    static double sec = -1;
    if (sec < 0) {
        struct npu_stream s;
        struct npu_dpu_cost c = {0};
        npu_stream_init(&s);
        struct npu_dpu_ref scratch = {NPU_BUF_ACT, 0};
        if (!npu_dpu_emit_guard(&s, scratch, &c))
            npu_dpu_emit_lut_upload(&s, npu_dpu_lut_get(npu_dpu_lut_fn_id(NPU_DPU_FN_TANH)),
                                    scratch, &c);
        npu_stream_fini(&s);
        sec = c.s;
    }
    return sec;
}
