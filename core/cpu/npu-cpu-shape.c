/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-shape.c: shape and data-movement ops. They move elements by size
 * (1, 2, 4 or 8 bytes), so every dtype works, fp16 and bool included. Each
 * kernel recomputes the output shape from its operands and checks it against
 * what the caller allocated (ONNX semantics: Reshape 0/-1/allowzero, Slice
 * clamping with negative steps, Gather negative indices, Pad modes, ...).
 */
#include "npu-cpu-internal.h"

/* ---- strided copy --------------------------------------------------------------------------- */

/* out (contiguous, dims) = in at `base` walked with element strides istr (may be negative). */
struct scopy_job {
    int nd;
    int64_t dims[NPU_MAX_DIMS];
    int64_t istr[NPU_MAX_DIMS];
    int64_t base;
    size_t es;
    const char *in;
    char *out;
};

static inline void
copy_elems(char *o, const char *i, int64_t n, int64_t s, size_t es)
{
    if (s == 1) {
        memcpy(o, i, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        for (int64_t k = 0; k < n; k++)
            ((uint8_t *)o)[k] = *(const uint8_t *)(i + k * s);
        break;
    case 2:
        for (int64_t k = 0; k < n; k++)
            ((uint16_t *)o)[k] = *(const uint16_t *)(i + k * s * 2);
        break;
    case 4:
        for (int64_t k = 0; k < n; k++)
            ((uint32_t *)o)[k] = *(const uint32_t *)(i + k * s * 4);
        break;
    default:
        for (int64_t k = 0; k < n; k++)
            ((uint64_t *)o)[k] = *(const uint64_t *)(i + k * s * 8);
        break;
    }
}

static void
scopy_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct scopy_job *j = arg;
    int nd = j->nd;
    int64_t inner = j->dims[nd - 1];
    int64_t idx[NPU_MAX_DIMS] = {0}, off = j->base, r = begin;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = r % j->dims[d];
        r /= j->dims[d];
        off += idx[d] * j->istr[d];
    }
    for (int64_t row = begin; row < end; row++) {
        copy_elems(j->out + (size_t)(row * inner) * j->es, j->in + off * (int64_t)j->es, inner,
                   j->istr[nd - 1], j->es);
        for (int d = nd - 2; d >= 0; d--) {
            off += j->istr[d];
            if (++idx[d] < j->dims[d])
                break;
            off -= idx[d] * j->istr[d];
            idx[d] = 0;
        }
    }
}

/* 2-D transposed blocks: out[b][i][j] = in[b][j][i] with in rows of `ld` elements. */
struct tr_job {
    int64_t rows, cols; /* of the output matrix */
    int64_t batch;
    int64_t in_bstride, out_bstride, in_ld;
    size_t es;
    const char *in;
    char *out;
};

#define TB 32
static void
tr_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct tr_job *j = arg;
    int64_t rb = NPU_DIV_ROUND_UP(j->rows, TB), cb = NPU_DIV_ROUND_UP(j->cols, TB);
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / (rb * cb), r0 = (t % (rb * cb)) / cb * TB, c0 = (t % cb) * TB;
        int64_t r1 = NPU_MIN(r0 + TB, j->rows), c1 = NPU_MIN(c0 + TB, j->cols);
        const char *ib = j->in + (size_t)(b * j->in_bstride) * j->es;
        char *ob = j->out + (size_t)(b * j->out_bstride) * j->es;
        for (int64_t r = r0; r < r1; r++)
            copy_elems(ob + (size_t)(r * j->cols + c0) * j->es,
                       ib + (size_t)(c0 * j->in_ld + r) * j->es, c1 - c0, j->in_ld, j->es);
    }
}

/* Copies a strided view into contiguous out; merges dims first so that long runs stay long. */
static void
strided_copy(struct npu_cpu_ctx *ctx, char *out, const char *in, size_t es, int nd,
             const int64_t *dims, const int64_t *istr, int64_t base)
{
    struct scopy_job j = {.base = base, .es = es, .in = in, .out = out};
    int n = 0;
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 0)
            return;
        if (dims[d] == 1)
            continue;
        if (n > 0 && j.istr[n - 1] == istr[d] * dims[d]) {
            j.dims[n - 1] *= dims[d];
            j.istr[n - 1] = istr[d];
            continue;
        }
        j.dims[n] = dims[d];
        j.istr[n] = istr[d];
        n++;
    }
    if (n == 0) {
        j.dims[0] = 1;
        j.istr[0] = 1;
        n = 1;
    }
    j.nd = n;
    int64_t total = cpu_dims_prod(j.dims, 0, n);
    /* a plain transpose of the last two dims (optionally batched by one more contiguous dim):
     * tile it so both sides stay in cache */
    if (n >= 2 && j.istr[n - 1] != 1 && j.istr[n - 2] == 1 &&
        (n == 2 || (n == 3 && j.istr[0] == j.dims[1] * j.dims[2])) &&
        j.istr[n - 1] == j.dims[n - 2] && total >= 1024) {
        struct tr_job t = {.rows = j.dims[n - 2],
                           .cols = j.dims[n - 1],
                           .batch = n == 3 ? j.dims[0] : 1,
                           .in_ld = j.istr[n - 1],
                           .es = es,
                           .in = in + base * (int64_t)es,
                           .out = out};
        t.in_bstride = t.out_bstride = t.rows * t.cols;
        int64_t tasks = t.batch * NPU_DIV_ROUND_UP(t.rows, TB) * NPU_DIV_ROUND_UP(t.cols, TB);
        cpu_parallel_for(ctx, tasks, 16, tr_task, &t);
        return;
    }
    int64_t inner = j.dims[n - 1];
    cpu_parallel_for(ctx, total / inner, NPU_MAX((int64_t)1, 32768 / inner), scopy_task, &j);
}

static void
contig_strides(const int64_t *dims, int nd, int64_t *s)
{
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
        s[d] = acc;
        acc *= dims[d];
    }
}

/* ---- copies: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Dropout ------------------------- */

static enum npu_status
plain_copy(struct npu_cpu_ctx *ctx, const struct npu_tensor *x, struct npu_tensor *y)
{
    if (x->dtype != y->dtype)
        return KINVAL("output dtype %s differs from the input's %s", npu_dtype_name(y->dtype),
                      npu_dtype_name(x->dtype));
    if (cpu_numel(x) != cpu_numel(y))
        return KINVAL("output has %lld elements, input %lld", (long long)cpu_numel(y),
                      (long long)cpu_numel(x));
    if (y->data != x->data && cpu_numel(x) > 0)
        memmove(y->data, x->data, (size_t)cpu_numel(x) * cpu_esize(x));
    return NPU_OK;
}

enum npu_status
cpu_k_copy(CPU_KERNEL_ARGS)
{
    if (!cpu_same_dims(in[0], out[0]))
        return KINVAL("output shape differs from the input's");
    return plain_copy(ctx, in[0], out[0]);
}

enum npu_status
cpu_k_reshape(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *shape = nin > 1 ? in[1] : NULL;
    if (shape) {
        int64_t s[NPU_MAX_DIMS];
        int n;
        CPU_TRY(cpu_read_ints(ctx, shape, "shape", s, NPU_MAX_DIMS, &n));
        bool allowzero = npu_attrs_int(attrs, "allowzero", 0) != 0;
        int infer = -1;
        int64_t known = 1;
        for (int i = 0; i < n; i++) {
            if (s[i] == 0 && !allowzero) {
                if (i >= x->ndim)
                    return KINVAL("shape[%d] = 0 copies a dim the input does not have", i);
                s[i] = x->dims[i];
            }
            if (s[i] == -1) {
                if (infer >= 0)
                    return KINVAL("shape has more than one -1");
                infer = i;
                continue;
            }
            if (s[i] < 0)
                return KINVAL("shape[%d] = %lld is negative", i, (long long)s[i]);
            if (s[i] && known > INT64_MAX / s[i])
                return KINVAL("shape overflows");
            known *= s[i];
        }
        if (infer >= 0) {
            if (known == 0 || cpu_numel(x) % known)
                return KINVAL("cannot infer the -1 dim (%lld elements into %lld)",
                              (long long)cpu_numel(x), (long long)known);
            s[infer] = cpu_numel(x) / known;
        }
        CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, n, s));
    }
    return plain_copy(ctx, x, out[0]);
}

enum npu_status
cpu_k_flatten(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int axis;
    int64_t a = npu_attrs_int(attrs, "axis", 1);
    if (a < -(int64_t)x->ndim || a > x->ndim)
        return KINVAL("axis %lld out of range for rank %d", (long long)a, x->ndim);
    axis = (int)(a < 0 ? a + x->ndim : a);
    int64_t d[2] = {cpu_dims_prod(x->dims, 0, axis), cpu_dims_prod(x->dims, axis, x->ndim)};
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, 2, d));
    return plain_copy(ctx, x, out[0]);
}

/* axes from the input (opset 13+) or, for older graphs, the attribute */
static enum npu_status
axes_operand(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *t,
             int64_t *axes, int *n)
{
    *n = 0;
    if (t && !cpu_absent(t))
        return cpu_read_ints(ctx, t, "axes", axes, NPU_MAX_DIMS, n);
    size_t na;
    const int64_t *a = npu_attrs_ints(attrs, "axes", &na);
    if (a) {
        if (na > NPU_MAX_DIMS)
            return KINVAL("too many axes");
        memcpy(axes, a, na * sizeof(int64_t));
        *n = (int)na;
    }
    return NPU_OK;
}

enum npu_status
cpu_k_squeeze(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t axes[NPU_MAX_DIMS];
    int na;
    CPU_TRY(axes_operand(ctx, attrs, nin > 1 ? in[1] : NULL, axes, &na));
    bool drop[NPU_MAX_DIMS] = {false};
    for (int i = 0; i < na; i++) {
        int ax;
        CPU_TRY(cpu_axis(ctx, axes[i], x->ndim, &ax));
        if (x->dims[ax] != 1)
            return KINVAL("cannot squeeze axis %d of size %lld", ax, (long long)x->dims[ax]);
        drop[ax] = true;
    }
    int64_t d[NPU_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++)
        if (!(na ? drop[i] : x->dims[i] == 1))
            d[n++] = x->dims[i];
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, n, d));
    return plain_copy(ctx, x, out[0]);
}

enum npu_status
cpu_k_unsqueeze(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t axes[NPU_MAX_DIMS];
    int na;
    CPU_TRY(axes_operand(ctx, attrs, nin > 1 ? in[1] : NULL, axes, &na));
    int r = x->ndim + na;
    if (r > NPU_MAX_DIMS)
        return KINVAL("result rank %d is too high", r);
    bool ins[NPU_MAX_DIMS] = {false};
    for (int i = 0; i < na; i++) {
        int ax;
        CPU_TRY(cpu_axis(ctx, axes[i], r, &ax));
        if (ins[ax])
            return KINVAL("axis %d given twice", ax);
        ins[ax] = true;
    }
    int64_t d[NPU_MAX_DIMS];
    for (int i = 0, k = 0; i < r; i++)
        d[i] = ins[i] ? 1 : x->dims[k++];
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, d));
    return plain_copy(ctx, x, out[0]);
}

/* MT19937 (Matsumoto & Nishimura), seeded and read out the way numpy's legacy RandomState
 * does (seed(s), then uniform doubles from two draws: 27 + 26 bits), so that training-mode
 * Dropout with a `seed` reproduces the masks of the ONNX reference implementation. */
struct mt19937 {
    uint32_t mt[624];
    int idx;
};

static void
mt_seed(struct mt19937 *m, uint32_t s)
{
    m->mt[0] = s;
    for (uint32_t i = 1; i < 624; i++)
        m->mt[i] = 1812433253u * (m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) + i;
    m->idx = 624;
}

static uint32_t
mt_next(struct mt19937 *m)
{
    if (m->idx >= 624) {
        for (int i = 0; i < 624; i++) {
            uint32_t y = (m->mt[i] & 0x80000000u) | (m->mt[(i + 1) % 624] & 0x7fffffffu);
            m->mt[i] = m->mt[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
        }
        m->idx = 0;
    }
    uint32_t y = m->mt[m->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static double
mt_uniform(struct mt19937 *m)
{
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

/* Dropout: inference (or ratio 0) is the identity with an all-true mask. Training mode keeps
 * an element when a uniform draw in [0, 1) is >= ratio and scales it by 1 / (1 - ratio); the
 * draws come from MT19937 seeded with the `seed` attribute (0 if absent), in row-major order. */
enum npu_status
cpu_k_dropout(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    const struct npu_tensor *ratio = nin > 1 ? in[1] : NULL, *train = nin > 2 ? in[2] : NULL;
    bool training = train && cpu_numel(train) > 0 && cpu_scalar_i64(train, 0) != 0;
    double r = ratio && cpu_numel(ratio) > 0 ? cpu_scalar_f64(ratio, 0) : 0.5;
    if (ratio && !npu_dtype_is_float(ratio->dtype))
        return KINVAL("ratio must be a float scalar");
    CPU_TRY(cpu_k_copy(ctx, attrs, in, 1, out, 1));
    struct npu_tensor *mask = nout > 1 ? out[1] : NULL;
    if (mask) {
        CPU_TRY(cpu_check_out(ctx, mask, NPU_DTYPE_BOOL, x->ndim, x->dims));
        memset(mask->data, 1, (size_t)cpu_numel(x));
    }
    if (!training || r == 0)
        return NPU_OK;
    if (!(r > 0 && r <= 1))
        return KINVAL("ratio %g is outside [0, 1]", r);
    if (!npu_dtype_is_float(x->dtype))
        return KUNSUP("training-mode dropout of %s", npu_dtype_name(x->dtype));
    struct mt19937 *m = malloc(sizeof(*m));
    if (!m)
        return KNOMEM();
    mt_seed(m, (uint32_t)npu_attrs_int(attrs, "seed", 0));
    /* the scale as the reference computes it: 1 / (1 - ratio) in the ratio's precision */
    double scale =
        ratio->dtype == NPU_DTYPE_FP64 ? 1.0 / (1.0 - r) : (double)(1.0f / (1.0f - (float)r));
    int64_t n = cpu_numel(x);
    for (int64_t i = 0; i < n; i++) {
        bool keep = mt_uniform(m) >= r;
        double v = keep && r < 1 ? cpu_scalar_f64(out[0], i) * scale : 0.0;
        if (!keep && signbit(cpu_scalar_f64(out[0], i)))
            v = -0.0; /* mask * x keeps the sign of zero */
        cpu_convert(&v, NPU_DTYPE_FP64, (char *)out[0]->data + (size_t)i * cpu_esize(out[0]),
                    out[0]->dtype, 1);
        if (mask)
            ((uint8_t *)mask->data)[i] = keep;
    }
    free(m);
    return NPU_OK;
}

/* ---- Transpose ------------------------------------------------------------------------------ */

enum npu_status
cpu_k_transpose(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int r = x->ndim;
    size_t np;
    const int64_t *pa = npu_attrs_ints(attrs, "perm", &np);
    int perm[NPU_MAX_DIMS];
    if (pa) {
        if ((int)np != r)
            return KINVAL("perm has %zu entries for rank %d", np, r);
        bool seen[NPU_MAX_DIMS] = {false};
        for (int i = 0; i < r; i++) {
            int ax;
            CPU_TRY(cpu_axis(ctx, pa[i], r, &ax));
            if (seen[ax])
                return KINVAL("perm repeats axis %d", ax);
            seen[ax] = true;
            perm[i] = ax;
        }
    } else {
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    }
    int64_t od[NPU_MAX_DIMS], is[NPU_MAX_DIMS], s[NPU_MAX_DIMS];
    contig_strides(x->dims, r, s);
    for (int i = 0; i < r; i++) {
        od[i] = x->dims[perm[i]];
        is[i] = s[perm[i]];
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    if (cpu_numel(x) == 0)
        return NPU_OK;
    strided_copy(ctx, out[0]->data, x->data, cpu_esize(x), r, od, is, 0);
    return NPU_OK;
}

/* ---- Concat / Split ------------------------------------------------------------------------- */

struct cat_job {
    int nparts;
    char **ptrs;     /* part data */
    int64_t *chunk;  /* part elements per outer index (part axis dim * inner) */
    int64_t out_row; /* whole elements per outer index */
    size_t es;
    char *whole;
    bool split; /* false: parts -> whole; true: whole -> parts */
};

static void
cat_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct cat_job *j = arg;
    for (int64_t o = begin; o < end; o++) {
        char *w = j->whole + (size_t)(o * j->out_row) * j->es;
        for (int p = 0; p < j->nparts; p++) {
            size_t len = (size_t)j->chunk[p] * j->es;
            char *part = j->ptrs[p] + (size_t)o * len;
            if (len && part)
                memcpy(j->split ? part : w, j->split ? w : part, len);
            w += len;
        }
    }
}

/* Concat and Split share the checks: every part matches the whole except along axis, and
 * the parts' axis dims add up to the whole's. */
static enum npu_status
cat_split(struct npu_cpu_ctx *ctx, const struct npu_tensor *whole,
          const struct npu_tensor *const *parts, int nparts, int axis, bool split)
{
    int r = whole->ndim;
    int64_t sum = 0;
    for (int p = 0; p < nparts; p++) {
        const struct npu_tensor *t = parts[p];
        if (!t)
            return KINVAL("part %d is missing", p);
        if (t->dtype != whole->dtype)
            return KINVAL("part %d has dtype %s, expected %s", p, npu_dtype_name(t->dtype),
                          npu_dtype_name(whole->dtype));
        if (t->ndim != r)
            return KINVAL("part %d has rank %d, expected %d", p, t->ndim, r);
        for (int d = 0; d < r; d++)
            if (d != axis && t->dims[d] != whole->dims[d])
                return KINVAL("part %d differs in dim %d (%lld vs %lld)", p, d,
                              (long long)t->dims[d], (long long)whole->dims[d]);
        sum += t->dims[axis];
    }
    if (sum != whole->dims[axis])
        return KINVAL("parts add up to %lld along axis %d, the whole has %lld", (long long)sum,
                      axis, (long long)whole->dims[axis]);
    int64_t outer = cpu_dims_prod(whole->dims, 0, axis);
    int64_t inner = cpu_dims_prod(whole->dims, axis + 1, r);
    char *ptrs[256];
    int64_t chunk[256];
    if (nparts > 256)
        return KUNSUP("more than 256 parts");
    for (int p = 0; p < nparts; p++) {
        ptrs[p] = parts[p]->data;
        chunk[p] = parts[p]->dims[axis] * inner;
    }
    struct cat_job j = {nparts,           ptrs,        chunk, whole->dims[axis] * inner,
                        cpu_esize(whole), whole->data, split};
    if (outer * j.out_row == 0)
        return NPU_OK;
    cpu_parallel_for(ctx, outer, NPU_MAX((int64_t)1, 65536 / NPU_MAX(j.out_row, (int64_t)1)),
                     cat_task, &j);
    return NPU_OK;
}

enum npu_status
cpu_k_concat(CPU_KERNEL_ARGS)
{
    int axis;
    if (!npu_attrs_find(attrs, "axis"))
        return KINVAL("attribute axis is required");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), out[0]->ndim, &axis));
    return cat_split(ctx, out[0], in, nin, axis, false);
}

enum npu_status
cpu_k_split(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int axis;
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), x->ndim, &axis));
    /* the outputs' axis dims are the split; check them against `split` when given */
    const struct npu_tensor *sp = nin > 1 ? in[1] : NULL;
    int64_t sizes[256];
    int ns = 0;
    if (nout > 256)
        return KUNSUP("more than 256 outputs");
    if (sp && !cpu_absent(sp)) {
        CPU_TRY(cpu_read_ints(ctx, sp, "split", sizes, 256, &ns));
    } else {
        size_t na;
        const int64_t *a = npu_attrs_ints(attrs, "split", &na);
        if (a && na <= 256) {
            memcpy(sizes, a, na * sizeof(int64_t));
            ns = (int)na;
        }
    }
    if (ns) {
        if (ns != nout)
            return KINVAL("split has %d entries for %d outputs", ns, nout);
        for (int i = 0; i < nout; i++)
            if (out[i] && out[i]->ndim == x->ndim && out[i]->dims[axis] != sizes[i])
                return KINVAL("output %d has %lld along the axis, split says %lld", i,
                              (long long)out[i]->dims[axis], (long long)sizes[i]);
    } else {
        /* equal parts, the last one smaller: ceil(dim / n) each */
        int64_t n = npu_attrs_int(attrs, "num_outputs", nout);
        if (n != nout)
            return KINVAL("num_outputs=%lld but %d outputs", (long long)n, nout);
        int64_t each = NPU_DIV_ROUND_UP(x->dims[axis], (int64_t)nout);
        for (int i = 0; i < nout; i++) {
            int64_t want = NPU_MAX((int64_t)0, NPU_MIN(each, x->dims[axis] - i * each));
            if (out[i] && out[i]->ndim == x->ndim && out[i]->dims[axis] != want)
                return KINVAL("output %d has %lld along the axis, expected %lld", i,
                              (long long)out[i]->dims[axis], (long long)want);
        }
    }
    return cat_split(ctx, x, (const struct npu_tensor *const *)out, nout, axis, true);
}

/* ---- Slice ---------------------------------------------------------------------------------- */

enum npu_status
cpu_k_slice(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int r = x->ndim;
    int64_t starts[NPU_MAX_DIMS], ends[NPU_MAX_DIMS], axes[NPU_MAX_DIMS], steps[NPU_MAX_DIMS];
    int ns, ne, na = 0, nst = 0;
    CPU_TRY(cpu_read_ints(ctx, in[1], "starts", starts, NPU_MAX_DIMS, &ns));
    CPU_TRY(cpu_read_ints(ctx, in[2], "ends", ends, NPU_MAX_DIMS, &ne));
    if (ns != ne)
        return KINVAL("starts and ends differ in length");
    if (nin > 3 && !cpu_absent(in[3]))
        CPU_TRY(cpu_read_ints(ctx, in[3], "axes", axes, NPU_MAX_DIMS, &na));
    else
        for (na = 0; na < ns; na++)
            axes[na] = na;
    if (nin > 4 && !cpu_absent(in[4]))
        CPU_TRY(cpu_read_ints(ctx, in[4], "steps", steps, NPU_MAX_DIMS, &nst));
    else
        for (nst = 0; nst < ns; nst++)
            steps[nst] = 1;
    if (na != ns || nst != ns)
        return KINVAL("starts, ends, axes and steps differ in length");
    int64_t st[NPU_MAX_DIMS], step[NPU_MAX_DIMS], od[NPU_MAX_DIMS];
    bool seen[NPU_MAX_DIMS] = {false};
    for (int d = 0; d < r; d++) {
        st[d] = 0;
        step[d] = 1;
        od[d] = x->dims[d];
    }
    for (int i = 0; i < ns; i++) {
        int ax;
        CPU_TRY(cpu_axis(ctx, axes[i], r, &ax));
        if (seen[ax])
            return KINVAL("axis %d repeated", ax);
        seen[ax] = true;
        int64_t dim = x->dims[ax], s = starts[i], e = ends[i], k = steps[i];
        if (k == 0)
            return KINVAL("step 0 on axis %d", ax);
        /* ONNX clamping: negative indices count from the end; positive steps clamp to
         * [0, dim], negative steps to [-1, dim-1] (no overflow: dims are far below 2^62) */
        if (s < 0)
            s = s < -dim ? 0 : s + dim;
        if (e < 0)
            e = e < -dim ? (k > 0 ? 0 : -1) : e + dim;
        if (k > 0) {
            s = NPU_MIN(s, dim);
            e = NPU_MIN(e, dim);
            od[ax] = e > s ? (e - s - 1) / k + 1 : 0; /* ceil without overflow for huge k */
        } else {
            s = NPU_MIN(s, dim - 1);
            e = NPU_MIN(e, dim - 1);
            od[ax] = s <= e ? 0 : k == INT64_MIN ? 1 : (s - e - 1) / -k + 1;
        }
        st[ax] = s;
        /* a single element needs no step (and step * stride could overflow) */
        step[ax] = od[ax] > 1 ? k : 1;
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    if (cpu_numel(out[0]) == 0)
        return NPU_OK;
    int64_t s[NPU_MAX_DIMS], is[NPU_MAX_DIMS], base = 0;
    contig_strides(x->dims, r, s);
    for (int d = 0; d < r; d++) {
        base += st[d] * s[d];
        is[d] = step[d] * s[d];
    }
    strided_copy(ctx, out[0]->data, x->data, cpu_esize(x), r, od, is, base);
    return NPU_OK;
}

/* ---- Gather / GatherElements ---------------------------------------------------------------- */

struct gather_job {
    const char *data;
    char *out;
    const int64_t *idx;
    int64_t nidx, inner, axis_dim;
    size_t es;
};

static void
gather_task(void *arg, int64_t begin, int64_t end, int tid)
{
    const struct gather_job *j = arg;
    size_t blk = (size_t)j->inner * j->es;
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / j->nidx, i = t % j->nidx;
        memcpy(j->out + (size_t)t * blk, j->data + (size_t)(o * j->axis_dim + j->idx[i]) * blk,
               blk);
    }
}

/* Reads indices as int64, resolving negatives against dim; rejects out-of-range ones. */
static int64_t *
read_indices(struct npu_cpu_ctx *ctx, const struct npu_tensor *t, int64_t dim, enum npu_status *st)
{
    *st = NPU_OK;
    if (t->dtype != NPU_DTYPE_INT64 && t->dtype != NPU_DTYPE_INT32) {
        *st = KINVAL("indices must be int32 or int64, not %s", npu_dtype_name(t->dtype));
        return NULL;
    }
    int64_t n = cpu_numel(t);
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v) {
        *st = KNOMEM();
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = cpu_scalar_i64(t, i);
        if (k < -dim || k >= dim) {
            *st = KINVAL("index %lld out of range for a dim of %lld", (long long)k, (long long)dim);
            free(v);
            return NULL;
        }
        v[i] = k < 0 ? k + dim : k;
    }
    return v;
}

enum npu_status
cpu_k_gather(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *ind = in[1];
    int axis;
    if (x->ndim < 1)
        return KINVAL("data must have rank >= 1");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), x->ndim, &axis));
    int r = x->ndim - 1 + ind->ndim;
    if (r > NPU_MAX_DIMS)
        return KINVAL("result rank %d is too high", r);
    int64_t od[NPU_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < axis; d++)
        od[k++] = x->dims[d];
    for (int d = 0; d < ind->ndim; d++)
        od[k++] = ind->dims[d];
    for (int d = axis + 1; d < x->ndim; d++)
        od[k++] = x->dims[d];
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    enum npu_status st;
    int64_t *idx = read_indices(ctx, ind, x->dims[axis], &st);
    if (!idx)
        return st;
    struct gather_job j = {
        x->data,       out[0]->data, idx, cpu_numel(ind), cpu_dims_prod(x->dims, axis + 1, x->ndim),
        x->dims[axis], cpu_esize(x)};
    int64_t tasks = cpu_dims_prod(x->dims, 0, axis) * j.nidx;
    if (j.inner > 0)
        cpu_parallel_for(ctx, tasks, NPU_MAX((int64_t)1, 16384 / j.inner), gather_task, &j);
    free(idx);
    return NPU_OK;
}

enum npu_status
cpu_k_gather_elements(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0], *ind = in[1];
    int axis, r = x->ndim;
    if (r < 1)
        return KINVAL("data must have rank >= 1");
    CPU_TRY(cpu_axis(ctx, npu_attrs_int(attrs, "axis", 0), r, &axis));
    if (ind->ndim != r)
        return KINVAL("indices rank %d differs from data rank %d", ind->ndim, r);
    for (int d = 0; d < r; d++)
        if (d != axis && ind->dims[d] > x->dims[d])
            return KINVAL("indices dim %d (%lld) exceeds data's (%lld)", d, (long long)ind->dims[d],
                          (long long)x->dims[d]);
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, ind->dims));
    enum npu_status st;
    int64_t *idx = read_indices(ctx, ind, x->dims[axis], &st);
    if (!idx)
        return st;
    int64_t xs[NPU_MAX_DIMS], pos[NPU_MAX_DIMS] = {0}, n = cpu_numel(ind);
    contig_strides(x->dims, r, xs);
    size_t es = cpu_esize(x);
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int d = 0; d < r; d++)
            off += (d == axis ? idx[e] : pos[d]) * xs[d];
        memcpy((char *)out[0]->data + (size_t)e * es, (const char *)x->data + (size_t)off * es, es);
        cpu_index_next(pos, ind->dims, r);
    }
    free(idx);
    return NPU_OK;
}

/* ---- Pad ------------------------------------------------------------------------------------ */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

/* Source index of output position o along an axis of size dim with `before` padding, or -1
 * for the constant. */
static int64_t
pad_src(enum pad_mode m, int64_t o, int64_t before, int64_t dim)
{
    int64_t i = o - before;
    if (i >= 0 && i < dim)
        return i;
    switch (m) {
    case PAD_CONSTANT: return -1;
    case PAD_EDGE: return i < 0 ? 0 : dim - 1;
    case PAD_WRAP: return ((i % dim) + dim) % dim;
    case PAD_REFLECT:
        if (dim == 1)
            return 0;
        {
            int64_t period = 2 * (dim - 1);
            int64_t k = ((i % period) + period) % period;
            return k < dim ? k : period - k;
        }
    }
    return -1;
}

enum npu_status
cpu_k_pad(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int r = x->ndim;
    const char *ms = npu_attrs_string(attrs, "mode", "constant");
    enum pad_mode m;
    if (!strcmp(ms, "constant"))
        m = PAD_CONSTANT;
    else if (!strcmp(ms, "reflect"))
        m = PAD_REFLECT;
    else if (!strcmp(ms, "edge"))
        m = PAD_EDGE;
    else if (!strcmp(ms, "wrap"))
        m = PAD_WRAP;
    else
        return KUNSUP("mode \"%s\" is not supported", ms);
    int64_t pads[2 * NPU_MAX_DIMS], axes[NPU_MAX_DIMS];
    int np, na;
    CPU_TRY(cpu_read_ints(ctx, in[1], "pads", pads, 2 * NPU_MAX_DIMS, &np));
    if (nin > 3 && !cpu_absent(in[3])) {
        CPU_TRY(cpu_read_ints(ctx, in[3], "axes", axes, NPU_MAX_DIMS, &na));
    } else {
        for (na = 0; na < r; na++)
            axes[na] = na;
    }
    if (np != 2 * na)
        return KINVAL("pads has %d entries for %d axes", np, na);
    int64_t before[NPU_MAX_DIMS] = {0}, od[NPU_MAX_DIMS];
    int64_t after[NPU_MAX_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        int ax;
        CPU_TRY(cpu_axis(ctx, axes[i], r, &ax));
        if (pads[i] < -CPU_MAX_ATTR || pads[i] > CPU_MAX_ATTR || pads[na + i] < -CPU_MAX_ATTR ||
            pads[na + i] > CPU_MAX_ATTR)
            return KINVAL("pads out of range");
        before[ax] = pads[i];
        after[ax] = pads[na + i];
    }
    for (int d = 0; d < r; d++) {
        od[d] = x->dims[d] + before[d] + after[d];
        if (od[d] < 0)
            return KINVAL("pads remove more than dim %d has", d);
        if (m != PAD_CONSTANT && x->dims[d] == 0 && od[d] > 0)
            return KINVAL("mode %s cannot pad an empty dim", ms);
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    size_t es = cpu_esize(x);
    unsigned char cval[8] = {0};
    const struct npu_tensor *cv = nin > 2 ? in[2] : NULL;
    if (cv && !cpu_absent(cv) && cpu_numel(cv) >= 1) {
        if (cv->dtype != x->dtype)
            return KINVAL("constant_value dtype differs from data");
        memcpy(cval, cv->data, es);
    }
    int64_t on = cpu_numel(out[0]);
    if (on == 0)
        return NPU_OK;
    /* per-axis source maps, then one pass over the output */
    int64_t total = 0;
    for (int d = 0; d < r; d++)
        total += od[d];
    int64_t *map = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    if (!map)
        return KNOMEM();
    int64_t *mp[NPU_MAX_DIMS], xs[NPU_MAX_DIMS];
    contig_strides(x->dims, r, xs);
    for (int d = 0, o = 0; d < r; d++) {
        mp[d] = map + o;
        for (int64_t i = 0; i < od[d]; i++)
            mp[d][i] = pad_src(m, i, before[d], x->dims[d]);
        o += (int)od[d];
    }
    int64_t pos[NPU_MAX_DIMS] = {0};
    char *o = out[0]->data;
    const char *src = x->data;
    if (r == 0) {
        memcpy(o, src, es);
    } else {
        /* the innermost axis as runs: consecutive source elements (one memcpy) or fill */
        int64_t inner = od[r - 1], rows = on / inner, nseg = 0;
        int64_t *seg = malloc(sizeof(int64_t) * 3 * (size_t)inner); /* start, length, source */
        if (!seg) {
            free(map);
            return KNOMEM();
        }
        for (int64_t i = 0; i < inner;) {
            int64_t s0 = mp[r - 1][i], n = 1;
            while (i + n < inner && (s0 < 0 ? mp[r - 1][i + n] < 0 : mp[r - 1][i + n] == s0 + n))
                n++;
            seg[3 * nseg] = i, seg[3 * nseg + 1] = n, seg[3 * nseg + 2] = s0;
            nseg++;
            i += n;
        }
        for (int64_t row = 0; row < rows; row++) {
            int64_t off = 0;
            bool fill = false;
            for (int d = 0; d < r - 1; d++) {
                int64_t s = mp[d][pos[d]];
                if (s < 0)
                    fill = true;
                off += s * xs[d];
            }
            char *orow = o + (size_t)(row * inner) * es;
            for (int64_t g = 0; g < nseg; g++) {
                char *d = orow + (size_t)seg[3 * g] * es;
                int64_t n = seg[3 * g + 1], s = seg[3 * g + 2];
                if (!fill && s >= 0) {
                    memcpy(d, src + (size_t)(off + s) * es, (size_t)n * es);
                } else if (es == 4) {
                    uint32_t v;
                    memcpy(&v, cval, 4);
                    for (int64_t i = 0; i < n; i++)
                        ((uint32_t *)d)[i] = v;
                } else {
                    for (int64_t i = 0; i < n; i++)
                        memcpy(d + (size_t)i * es, cval, es);
                }
            }
            cpu_index_next(pos, od, r - 1);
        }
        free(seg);
    }
    free(map);
    return NPU_OK;
}

/* ---- Expand / Tile -------------------------------------------------------------------------- */

#define BCOPY_FN(bits)                                                                             \
    static void bcopy_##bits(void *out, const void *const *ins, const int64_t *str, int64_t n,     \
                             const void *param)                                                    \
    {                                                                                              \
        uint##bits##_t *o = out;                                                                   \
        const uint##bits##_t *x = ins[0];                                                          \
        if (str[0])                                                                                \
            memcpy(o, x, (size_t)n * sizeof(*o));                                                  \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                o[i] = x[0];                                                                       \
    }
BCOPY_FN(8)
BCOPY_FN(16)
BCOPY_FN(32)
BCOPY_FN(64)

/* out = x broadcast to out's shape (caller checked the shape). */
static enum npu_status
bcast_copy(struct npu_cpu_ctx *ctx, const struct npu_tensor *x, struct npu_tensor *o)
{
    struct cpu_bcast bc;
    const struct npu_tensor *ins[1] = {x};
    CPU_TRY(cpu_bcast_plan(ctx, &bc, o, ins, 1, false));
    cpu_bc_fn fn;
    switch (cpu_esize(x)) {
    case 1: fn = bcopy_8; break;
    case 2: fn = bcopy_16; break;
    case 4: fn = bcopy_32; break;
    default: fn = bcopy_64; break;
    }
    const void *ip[1] = {x->data};
    size_t sz[1] = {cpu_esize(x)};
    cpu_bcast_run(ctx, &bc, o->data, cpu_esize(o), ip, sz, fn, NULL);
    return NPU_OK;
}

enum npu_status
cpu_k_expand(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t s[NPU_MAX_DIMS];
    int n;
    CPU_TRY(cpu_read_ints(ctx, in[1], "shape", s, NPU_MAX_DIMS, &n));
    int r = NPU_MAX(n, x->ndim);
    int64_t od[NPU_MAX_DIMS];
    for (int d = 0; d < r; d++) {
        int ix = d - (r - x->ndim), is = d - (r - n);
        int64_t a = ix >= 0 ? x->dims[ix] : 1, b = is >= 0 ? s[is] : 1;
        if (a != b && a != 1 && b != 1)
            return KINVAL("input dim %lld does not broadcast with shape %lld", (long long)a,
                          (long long)b);
        od[d] = a == 1 ? b : a;
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    return bcast_copy(ctx, x, out[0]);
}

enum npu_status
cpu_k_tile(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int r = x->ndim;
    int64_t rep[NPU_MAX_DIMS], od[NPU_MAX_DIMS];
    int n;
    CPU_TRY(cpu_read_ints(ctx, in[1], "repeats", rep, NPU_MAX_DIMS, &n));
    if (n != r)
        return KINVAL("repeats has %d entries for rank %d", n, r);
    for (int d = 0; d < r; d++) {
        if (rep[d] < 0 || rep[d] > CPU_MAX_ATTR || (rep[d] && x->dims[d] > INT64_MAX / rep[d]))
            return KINVAL("repeat %lld out of range", (long long)rep[d]);
        od[d] = x->dims[d] * rep[d];
    }
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, r, od));
    int64_t on = cpu_numel(out[0]);
    if (on == 0)
        return NPU_OK;
    size_t es = cpu_esize(x);
    if (r == 0) {
        memcpy(out[0]->data, x->data, es);
        return NPU_OK;
    }
    int64_t xs[NPU_MAX_DIMS], pos[NPU_MAX_DIMS] = {0};
    contig_strides(x->dims, r, xs);
    int64_t inner = od[r - 1], rows = on / inner, xin = x->dims[r - 1];
    char *o = out[0]->data;
    for (int64_t row = 0; row < rows; row++) {
        int64_t off = 0;
        for (int d = 0; d < r - 1; d++)
            off += (pos[d] % x->dims[d]) * xs[d];
        for (int64_t k = 0; k < rep[r - 1]; k++)
            memcpy(o + (size_t)(row * inner + k * xin) * es,
                   (const char *)x->data + (size_t)off * es, (size_t)xin * es);
        cpu_index_next(pos, od, r - 1);
    }
    return NPU_OK;
}

/* ---- Shape, Size, Constant, ConstantOfShape, Range, Trilu ----------------------------------- */

enum npu_status
cpu_k_shape(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    int64_t r = x->ndim, s = npu_attrs_int(attrs, "start", 0), e = npu_attrs_int(attrs, "end", r);
    if (s < 0)
        s += r;
    if (e < 0)
        e += r;
    s = NPU_MIN(NPU_MAX(s, (int64_t)0), r);
    e = NPU_MIN(NPU_MAX(e, (int64_t)0), r);
    int64_t n = e > s ? e - s : 0;
    CPU_TRY(cpu_check_out(ctx, out[0], NPU_DTYPE_INT64, 1, &n));
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)out[0]->data)[i] = x->dims[s + i];
    return NPU_OK;
}

enum npu_status
cpu_k_size(CPU_KERNEL_ARGS)
{
    CPU_TRY(cpu_check_out(ctx, out[0], NPU_DTYPE_INT64, 0, NULL));
    *(int64_t *)out[0]->data = cpu_numel(in[0]);
    return NPU_OK;
}

enum npu_status
cpu_k_constant(CPU_KERNEL_ARGS)
{
    struct npu_tensor *y = out[0];
    const struct npu_tensor *t = npu_attrs_tensor(attrs, "value");
    if (t) {
        CPU_TRY(cpu_check_out(ctx, y, t->dtype, t->ndim, t->dims));
        if (cpu_numel(t) > 0) {
            if (!t->data)
                return KINVAL("value tensor has no data");
            memcpy(y->data, t->data, (size_t)cpu_numel(t) * cpu_esize(t));
        }
        return NPU_OK;
    }
    const struct npu_attr *a;
    if ((a = npu_attrs_find(attrs, "value_float")) && a->type == NPU_ATTR_FLOAT) {
        CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_FP32, 0, NULL));
        *(float *)y->data = a->f;
    } else if ((a = npu_attrs_find(attrs, "value_int")) && a->type == NPU_ATTR_INT) {
        CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_INT64, 0, NULL));
        *(int64_t *)y->data = a->i;
    } else if ((a = npu_attrs_find(attrs, "value_floats")) && a->type == NPU_ATTR_FLOATS) {
        int64_t n = (int64_t)a->n;
        CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_FP32, 1, &n));
        if (n)
            memcpy(y->data, a->floats, a->n * sizeof(float));
    } else if ((a = npu_attrs_find(attrs, "value_ints")) && a->type == NPU_ATTR_INTS) {
        int64_t n = (int64_t)a->n;
        CPU_TRY(cpu_check_out(ctx, y, NPU_DTYPE_INT64, 1, &n));
        if (n)
            memcpy(y->data, a->ints, a->n * sizeof(int64_t));
    } else {
        return KUNSUP("no supported value attribute (value, value_float(s), value_int(s))");
    }
    return NPU_OK;
}

enum npu_status
cpu_k_constant_of_shape(CPU_KERNEL_ARGS)
{
    int64_t s[NPU_MAX_DIMS];
    int n;
    CPU_TRY(cpu_read_ints(ctx, in[0], "shape", s, NPU_MAX_DIMS, &n));
    const struct npu_tensor *v = npu_attrs_tensor(attrs, "value");
    enum npu_dtype dt = v ? v->dtype : NPU_DTYPE_FP32;
    for (int i = 0; i < n; i++)
        if (s[i] < 0)
            return KINVAL("negative dim in shape");
    CPU_TRY(cpu_check_out(ctx, out[0], dt, n, s));
    unsigned char val[8] = {0};
    size_t es = npu_dtype_size(dt);
    if (v) {
        if (cpu_numel(v) != 1 || !v->data)
            return KINVAL("value must hold exactly one element");
        memcpy(val, v->data, es);
    }
    int64_t on = cpu_numel(out[0]);
    char *o = out[0]->data;
    for (int64_t i = 0; i < on; i++)
        memcpy(o + (size_t)i * es, val, es);
    return NPU_OK;
}

enum npu_status
cpu_k_range(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *s = in[0], *l = in[1], *d = in[2];
    enum npu_dtype dt = s->dtype;
    if (l->dtype != dt || d->dtype != dt)
        return KINVAL("start, limit and delta must share a dtype");
    if (cpu_numel(s) != 1 || cpu_numel(l) != 1 || cpu_numel(d) != 1)
        return KINVAL("start, limit and delta must be scalars");
    int64_t n;
    if (npu_dtype_is_float(dt)) {
        double a = cpu_scalar_f64(s, 0), b = cpu_scalar_f64(l, 0), c = cpu_scalar_f64(d, 0);
        if (c == 0 || !isfinite(a) || !isfinite(b) || !isfinite(c))
            return KINVAL("delta is 0 or an operand is not finite");
        double cnt = ceil((b - a) / c);
        if (cnt > 1e15)
            return KINVAL("range too long");
        n = cnt > 0 ? (int64_t)cnt : 0;
        CPU_TRY(cpu_check_out(ctx, out[0], dt, 1, &n));
        for (int64_t i = 0; i < n; i++) {
            if (dt == NPU_DTYPE_FP32)
                ((float *)out[0]->data)[i] = (float)a + (float)i * (float)c;
            else
                ((double *)out[0]->data)[i] = a + (double)i * c;
        }
        return NPU_OK;
    }
    if (!npu_dtype_is_int(dt))
        return KUNSUP("dtype %s is not supported", npu_dtype_name(dt));
    int64_t a = cpu_scalar_i64(s, 0), b = cpu_scalar_i64(l, 0), c = cpu_scalar_i64(d, 0);
    if (c == 0)
        return KINVAL("delta is 0");
    /* ceil((b - a) / c), exact: the span of two int64s needs 65 bits */
    __int128 span = (__int128)b - a;
    __int128 cnt = span / c + ((span % c) != 0 && ((span > 0) == (c > 0)));
    n = cnt > 0 ? (int64_t)cnt : 0;
    CPU_TRY(cpu_check_out(ctx, out[0], dt, 1, &n));
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)c);
        cpu_convert(&v, NPU_DTYPE_INT64, (char *)out[0]->data + (size_t)i * cpu_esize(out[0]), dt,
                    1);
    }
    return NPU_OK;
}

enum npu_status
cpu_k_trilu(CPU_KERNEL_ARGS)
{
    const struct npu_tensor *x = in[0];
    if (x->ndim < 2)
        return KINVAL("input must have rank >= 2");
    CPU_TRY(cpu_check_out(ctx, out[0], x->dtype, x->ndim, x->dims));
    int64_t k = 0;
    if (nin > 1 && !cpu_absent(in[1])) {
        if (cpu_numel(in[1]) != 1 || !npu_dtype_is_int(in[1]->dtype))
            return KINVAL("k must be an integer scalar");
        k = cpu_scalar_i64(in[1], 0);
    }
    bool upper = npu_attrs_int(attrs, "upper", 1) != 0;
    int64_t R = x->dims[x->ndim - 2], C = x->dims[x->ndim - 1];
    int64_t mats = cpu_dims_prod(x->dims, 0, x->ndim - 2);
    size_t es = cpu_esize(x);
    const char *src = x->data;
    char *o = out[0]->data;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                size_t e = (size_t)((m * R + i) * C + j) * es;
                /* j - i compared with k without overflow: |i|, |j| < 2^62, k clamps */
                int64_t kk = k < -(R + C) ? -(R + C) : k > R + C ? R + C : k;
                bool keep = upper ? j - i >= kk : j - i <= kk;
                if (keep)
                    memcpy(o + e, src + e, es);
                else
                    memset(o + e, 0, es);
            }
    return NPU_OK;
}
