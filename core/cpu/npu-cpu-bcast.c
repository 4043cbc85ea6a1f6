/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-bcast.c: numpy (multidirectional) broadcasting, done once for all
 * elementwise kernels. A plan right-aligns the operand shapes, drops size-1
 * output dims and merges neighbouring dims that every operand walks
 * contiguously (or not at all), so "same shape", "scalar", "per-channel" and
 * "per-row" cases all end up as a short outer loop around one long inner loop
 * whose operand strides are 0 or 1. The run splits rows (and long rows into
 * column chunks) over the thread pool.
 */
#include "npu-cpu-internal.h"

enum npu_status
cpu_bcast_plan(struct npu_cpu_ctx *ctx, struct cpu_bcast *b, const struct npu_tensor *outt,
               const struct npu_tensor *const *ins, int nin, bool exact)
{
    if (nin < 1 || nin > CPU_BC_MAX_IN)
        npu_die("broadcast of %d operands", nin);
    int r = outt->ndim;
    memset(b, 0, sizeof(*b));
    b->nin = nin;
    int64_t full[CPU_BC_MAX_IN][NPU_MAX_DIMS];
    for (int i = 0; i < nin; i++) {
        if (ins[i]->ndim > r) {
            char s1[160], s2[160];
            return KINVAL("input %d of shape %s does not broadcast to output shape %s", i,
                          cpu_dims_str(ins[i], s1, sizeof(s1)), cpu_dims_str(outt, s2, sizeof(s2)));
        }
        /* contiguous strides of the operand, right-aligned to the output rank */
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int id = d - (r - ins[i]->ndim);
            int64_t dim = id >= 0 ? ins[i]->dims[id] : 1;
            full[i][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    for (int d = 0; d < r; d++) {
        int64_t od = outt->dims[d], bd = 1;
        for (int i = 0; i < nin; i++) {
            int id = d - (r - ins[i]->ndim);
            int64_t dim = id >= 0 ? ins[i]->dims[id] : 1;
            if (dim != 1) {
                if (bd != 1 && bd != dim) {
                    char s1[160], s2[160];
                    return KINVAL("shapes %s and %s do not broadcast",
                                  cpu_dims_str(ins[0], s1, sizeof(s1)),
                                  cpu_dims_str(ins[i], s2, sizeof(s2)));
                }
                bd = dim;
            }
            if (dim != 1 && dim != od) {
                char s1[160], s2[160];
                return KINVAL("input %d of shape %s does not broadcast to output shape %s", i,
                              cpu_dims_str(ins[i], s1, sizeof(s1)),
                              cpu_dims_str(outt, s2, sizeof(s2)));
            }
        }
        if (exact && bd != od) {
            char s1[160];
            return KINVAL("output shape %s is not the broadcast of the inputs (dim %d is %lld, "
                          "inputs give %lld)",
                          cpu_dims_str(outt, s1, sizeof(s1)), d, (long long)od, (long long)bd);
        }
    }
    /* drop size-1 output dims, merge contiguous neighbours */
    int n = 0;
    for (int d = 0; d < r; d++) {
        int64_t od = outt->dims[d];
        if (od == 1)
            continue;
        bool merge = n > 0;
        for (int i = 0; merge && i < nin; i++)
            merge = b->strides[i][n - 1] == full[i][d] * od;
        if (merge) {
            b->dims[n - 1] *= od;
            for (int i = 0; i < nin; i++)
                b->strides[i][n - 1] = full[i][d];
        } else {
            b->dims[n] = od;
            for (int i = 0; i < nin; i++)
                b->strides[i][n] = full[i][d];
            n++;
        }
    }
    if (n == 0) {
        n = 1;
        b->dims[0] = 1;
    }
    b->ndim = n;
    b->numel = cpu_dims_prod(b->dims, 0, n);
    return NPU_OK;
}

struct bc_job {
    const struct cpu_bcast *b;
    char *out;
    size_t esize;
    const char *ins[CPU_BC_MAX_IN];
    size_t insz[CPU_BC_MAX_IN];
    int64_t ncol, colw; /* inner dim cut into ncol chunks of colw */
    cpu_bc_fn fn;
    const void *param;
};

static void
bc_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct bc_job *j = arg;
    const struct cpu_bcast *b = j->b;
    int nd = b->ndim, nin = b->nin;
    int64_t inner = b->dims[nd - 1];
    int64_t str[CPU_BC_MAX_IN];
    for (int i = 0; i < nin; i++)
        str[i] = b->strides[i][nd - 1];
    int64_t row = begin / j->ncol, col = begin % j->ncol;
    /* operand offsets of the first row, by div/mod over the outer dims */
    int64_t idx[NPU_MAX_DIMS] = {0}, off[CPU_BC_MAX_IN] = {0};
    int64_t rr = row;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = rr % b->dims[d];
        rr /= b->dims[d];
        for (int i = 0; i < nin; i++)
            off[i] += idx[d] * b->strides[i][d];
    }
    for (int64_t t = begin; t < end;) {
        int64_t c0 = col * j->colw;
        int64_t cn = inner - c0 < j->colw ? inner - c0 : j->colw;
        const void *ip[CPU_BC_MAX_IN];
        for (int i = 0; i < nin; i++)
            ip[i] = j->ins[i] + (size_t)(off[i] + c0 * str[i]) * j->insz[i];
        j->fn(j->out + (size_t)(row * inner + c0) * j->esize, ip, str, cn, j->param);
        t++;
        if (++col == j->ncol) {
            col = 0;
            row++;
            /* odometer step over the outer dims */
            for (int d = nd - 2; d >= 0; d--) {
                for (int i = 0; i < nin; i++)
                    off[i] += b->strides[i][d];
                if (++idx[d] < b->dims[d])
                    break;
                for (int i = 0; i < nin; i++)
                    off[i] -= idx[d] * b->strides[i][d];
                idx[d] = 0;
            }
        }
    }
}

void
cpu_bcast_run(struct npu_cpu_ctx *ctx, const struct cpu_bcast *b, void *out, size_t esize,
              const void *const *ins, const size_t *insz, cpu_bc_fn fn, const void *param)
{
    if (b->numel == 0)
        return;
    struct bc_job j = {.b = b, .out = out, .esize = esize, .fn = fn, .param = param};
    for (int i = 0; i < b->nin; i++) {
        j.ins[i] = ins[i];
        j.insz[i] = insz[i];
    }
    int64_t inner = b->dims[b->ndim - 1], rows = b->numel / inner;
    /* rows long enough and numerous enough need no cutting; otherwise cut the inner dim into
     * chunks of >= 4096 so that a single huge row still spreads over the threads */
    const int64_t min_cut = 4096;
    j.ncol = 1;
    if (rows < (int64_t)ctx->nthreads * 4 && inner >= 2 * min_cut) {
        int64_t want = NPU_DIV_ROUND_UP((int64_t)ctx->nthreads * 4, rows);
        int64_t maxc = inner / min_cut;
        j.ncol = want < maxc ? want : maxc;
    }
    j.colw = NPU_DIV_ROUND_UP(inner, j.ncol);
    j.ncol = NPU_DIV_ROUND_UP(inner, j.colw);
    int64_t per_task = j.colw;
    int64_t grain = NPU_DIV_ROUND_UP((int64_t)16384, per_task);
    cpu_parallel_for(ctx, rows * j.ncol, grain, bc_task, &j);
}
