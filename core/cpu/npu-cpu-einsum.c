/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-einsum.c: Einsum. The equation is parsed into labels (letters, and
 * "..." expanded into one hidden label per broadcast dim); the implicit form
 * (no "->") outputs the labels seen once, in alphabetical order after the
 * ellipsis dims.
 *
 * Two-operand contractions that are a (batched) matrix product, which is what
 * attention and linear layers written as Einsum are, run as permute + GEMM +
 * permute (fp32 through the threaded GEMM, fp64 through dgemm). Everything
 * else (diagonals such as "ii->i", sums, traces, more operands, broadcasting
 * of size-1 dims) takes a generic loop over all label values, accumulating
 * in double (in int64 for integer tensors).
 */
#include <ctype.h>

#include "npu-cpu-internal.h"

#define EIN_MAX_OPS 8
#define EIN_MAX_LABELS 64 /* 52 letters + up to 8 ellipsis dims, rounded */

struct ein_term {
    int n; /* labels in this term = rank */
    int lab[NPU_MAX_DIMS];
};

struct ein {
    int nops;
    struct ein_term t[EIN_MAX_OPS];
    struct ein_term out;
    int nlab;
    int64_t size[EIN_MAX_LABELS];
};

/* label ids: 'a'-'z' -> 0-25, 'A'-'Z' -> 26-51, ellipsis dim k (from the right) -> 52 + k */
static int
letter_id(char c)
{
    return islower((unsigned char)c) ? c - 'a' : c - 'A' + 26;
}

/* Parses one term; `ell_rank` is how many dims "..." stands for in this operand (from the
 * operand's rank), or -1 for the output (filled from the widest input ellipsis). */
static enum npu_status
parse_term(struct npu_cpu_ctx *ctx, const char *s, const char *e, int rank, int ell_out,
           struct ein_term *t, int *ell_rank)
{
    int letters = 0;
    bool ell = false;
    for (const char *p = s; p < e; p++) {
        if (*p == ' ')
            continue;
        if (*p == '.') {
            if (p + 2 >= e || p[1] != '.' || p[2] != '.' || ell)
                return KINVAL("bad ellipsis in equation");
            ell = true;
            p += 2;
            continue;
        }
        if (!isalpha((unsigned char)*p))
            return KINVAL("bad character '%c' in equation", *p);
        letters++;
    }
    int er = 0;
    if (ell)
        er = rank >= 0 ? rank - letters : ell_out;
    if (er < 0 || (!ell && rank >= 0 && letters != rank))
        return KINVAL("term has %d labels for an operand of rank %d", letters, rank);
    if (letters + er > NPU_MAX_DIMS)
        return KINVAL("term has too many dims");
    t->n = 0;
    for (const char *p = s; p < e; p++) {
        if (*p == ' ')
            continue;
        if (*p == '.') {
            for (int k = er - 1; k >= 0; k--)
                t->lab[t->n++] = 52 + k;
            p += 2;
            continue;
        }
        t->lab[t->n++] = letter_id(*p);
    }
    *ell_rank = ell ? er : -1;
    return NPU_OK;
}

static enum npu_status
ein_parse(struct npu_cpu_ctx *ctx, const char *eq, const struct npu_tensor *const *in, int nin,
          struct ein *E)
{
    memset(E, 0, sizeof(*E));
    if (nin > EIN_MAX_OPS)
        return KUNSUP("more than %d operands", EIN_MAX_OPS);
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    const char *p = eq;
    int max_ell = 0, k = 0;
    while (k < nin) {
        const char *c = memchr(p, ',', (size_t)(lhs_end - p));
        const char *te = c ? c : lhs_end;
        int er;
        CPU_TRY(parse_term(ctx, p, te, in[k]->ndim, 0, &E->t[k], &er));
        max_ell = NPU_MAX(max_ell, er);
        k++;
        if (!c)
            break;
        p = c + 1;
    }
    if (k != nin || (p < lhs_end && memchr(p, ',', (size_t)(lhs_end - p))))
        return KINVAL("equation has a different number of terms than the %d inputs", nin);
    E->nops = nin;
    /* label sizes; size-1 dims broadcast against others */
    for (int i = 0; i < EIN_MAX_LABELS; i++)
        E->size[i] = -1;
    for (int o = 0; o < nin; o++)
        for (int d = 0; d < E->t[o].n; d++) {
            int l = E->t[o].lab[d];
            int64_t s = in[o]->dims[d];
            if (E->size[l] < 0 || E->size[l] == 1)
                E->size[l] = s;
            else if (s != 1 && s != E->size[l])
                return KINVAL("label size mismatch (%lld vs %lld)", (long long)s,
                              (long long)E->size[l]);
        }
    if (arrow) {
        int er;
        CPU_TRY(parse_term(ctx, arrow + 2, eq + strlen(eq), -1, max_ell, &E->out, &er));
        for (int d = 0; d < E->out.n; d++) {
            if (E->size[E->out.lab[d]] < 0)
                return KINVAL("output label does not appear in the inputs");
            for (int q = 0; q < d; q++)
                if (E->out.lab[q] == E->out.lab[d])
                    return KINVAL("output label repeated");
        }
    } else {
        /* implicit: ellipsis dims, then labels seen exactly once, alphabetically */
        int cnt[EIN_MAX_LABELS] = {0};
        for (int o = 0; o < nin; o++)
            for (int d = 0; d < E->t[o].n; d++)
                cnt[E->t[o].lab[d]]++;
        E->out.n = 0;
        for (int k2 = max_ell - 1; k2 >= 0; k2--)
            E->out.lab[E->out.n++] = 52 + k2;
        static const char order[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        for (const char *c = order; *c; c++) {
            int l = letter_id(*c);
            if (cnt[l] == 1) {
                if (E->out.n >= NPU_MAX_DIMS)
                    return KINVAL("output rank too high");
                E->out.lab[E->out.n++] = l;
            }
        }
    }
    E->nlab = EIN_MAX_LABELS;
    return NPU_OK;
}

/* ---- generic loop ------------------------------------------------------------------------- */

static enum npu_status
ein_generic(struct npu_cpu_ctx *ctx, const struct ein *E, const struct npu_tensor *const *in,
            struct npu_tensor *y)
{
    /* all labels in use, output labels first so that each output element is one run */
    int labs[EIN_MAX_LABELS], nl = 0;
    bool used[EIN_MAX_LABELS] = {false};
    for (int d = 0; d < E->out.n; d++) {
        labs[nl++] = E->out.lab[d];
        used[E->out.lab[d]] = true;
    }
    int nout = nl;
    for (int o = 0; o < E->nops; o++)
        for (int d = 0; d < E->t[o].n; d++)
            if (!used[E->t[o].lab[d]]) {
                used[E->t[o].lab[d]] = true;
                labs[nl++] = E->t[o].lab[d];
            }
    /* strides of every operand per label (sum over repeated labels: diagonals) */
    int64_t str[EIN_MAX_OPS][EIN_MAX_LABELS];
    memset(str, 0, sizeof(str));
    for (int o = 0; o < E->nops; o++) {
        int64_t s = 1;
        for (int d = E->t[o].n - 1; d >= 0; d--) {
            if (in[o]->dims[d] != 1)
                for (int q = 0; q < nl; q++)
                    if (labs[q] == E->t[o].lab[d])
                        str[o][q] += s;
            s *= in[o]->dims[d];
        }
    }
    int64_t sz[EIN_MAX_LABELS];
    for (int q = 0; q < nl; q++)
        sz[q] = E->size[labs[q]];
    int64_t ny = cpu_dims_prod(sz, 0, nout), nred = cpu_dims_prod(sz + nout, 0, nl - nout);
    bool flt = npu_dtype_is_float(y->dtype);
    int64_t idx[EIN_MAX_LABELS] = {0};
    for (int64_t e = 0; e < ny; e++) {
        /* output label values of element e */
        int64_t r = e;
        for (int q = nout - 1; q >= 0; q--) {
            idx[q] = r % sz[q];
            r /= sz[q];
        }
        for (int q = nout; q < nl; q++)
            idx[q] = 0;
        double accf = 0;
        uint64_t acci = 0;
        for (int64_t t = 0; t < nred; t++) {
            double pf = 1;
            uint64_t pi = 1;
            for (int o = 0; o < E->nops; o++) {
                int64_t off = 0;
                for (int q = 0; q < nl; q++)
                    off += idx[q] * str[o][q];
                if (flt)
                    pf *= cpu_scalar_f64(in[o], off);
                else
                    pi *= (uint64_t)cpu_scalar_i64(in[o], off);
            }
            accf += pf;
            acci += pi;
            cpu_index_next(idx + nout, sz + nout, nl - nout);
        }
        char *dst = (char *)y->data + (size_t)e * cpu_esize(y);
        if (flt) {
            cpu_convert(&accf, NPU_DTYPE_FP64, dst, y->dtype, 1);
        } else {
            int64_t v = (int64_t)acci;
            cpu_convert(&v, NPU_DTYPE_INT64, dst, y->dtype, 1);
        }
    }
    return NPU_OK;
}

/* ---- matmul-shaped contractions ------------------------------------------------------------- */

/* Copies operand `t` (labels tl) into dst laid out as the label order `order`. */
static void
permute_into(const struct npu_tensor *t, const struct ein_term *tl, const int *order, int n,
             const struct ein *E, void *dst)
{
    int64_t s[NPU_MAX_DIMS], acc = 1, sz[NPU_MAX_DIMS], ist[NPU_MAX_DIMS];
    for (int d = tl->n - 1; d >= 0; d--) {
        s[d] = acc;
        acc *= t->dims[d];
    }
    for (int q = 0; q < n; q++) {
        sz[q] = E->size[order[q]];
        ist[q] = 0;
        for (int d = 0; d < tl->n; d++)
            if (tl->lab[d] == order[q])
                ist[q] = s[d];
    }
    size_t es = cpu_esize(t);
    int64_t total = cpu_dims_prod(sz, 0, n), idx[NPU_MAX_DIMS] = {0}, off = 0;
    for (int64_t e = 0; e < total; e++) {
        memcpy((char *)dst + (size_t)e * es, (const char *)t->data + (size_t)off * es, es);
        for (int q = n - 1; q >= 0; q--) {
            off += ist[q];
            if (++idx[q] < sz[q])
                break;
            off -= idx[q] * ist[q];
            idx[q] = 0;
        }
    }
}

static bool
has_label(const struct ein_term *t, int l)
{
    for (int d = 0; d < t->n; d++)
        if (t->lab[d] == l)
            return true;
    return false;
}

/* Returns true (and does the work) if the two-operand contraction is a batched matmul. */
static enum npu_status
ein_matmul(struct npu_cpu_ctx *ctx, const struct ein *E, const struct npu_tensor *const *in,
           struct npu_tensor *y, bool *done)
{
    *done = false;
    if (E->nops != 2 || (y->dtype != NPU_DTYPE_FP32 && y->dtype != NPU_DTYPE_FP64))
        return NPU_OK;
    const struct ein_term *A = &E->t[0], *B = &E->t[1], *O = &E->out;
    int bl[NPU_MAX_DIMS], ml[NPU_MAX_DIMS], nl[NPU_MAX_DIMS], kl[NPU_MAX_DIMS];
    int nb = 0, nm = 0, nn = 0, nk = 0;
    /* every label once per term, no size-1 broadcasting, each label in a known role */
    for (int o = 0; o < 2; o++) {
        const struct ein_term *t = &E->t[o];
        for (int d = 0; d < t->n; d++) {
            if (in[o]->dims[d] != E->size[t->lab[d]])
                return NPU_OK;
            for (int q = 0; q < d; q++)
                if (t->lab[q] == t->lab[d])
                    return NPU_OK;
        }
    }
    for (int d = 0; d < A->n; d++) {
        int l = A->lab[d];
        bool inb = has_label(B, l), ino = has_label(O, l);
        if (inb && ino)
            bl[nb++] = l;
        else if (inb)
            kl[nk++] = l;
        else if (ino)
            ml[nm++] = l;
        else
            return NPU_OK; /* summed over A alone */
    }
    for (int d = 0; d < B->n; d++) {
        int l = B->lab[d];
        if (has_label(A, l))
            continue;
        if (!has_label(O, l))
            return NPU_OK;
        nl[nn++] = l;
    }
    int64_t batch = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < nb; i++)
        batch *= E->size[bl[i]];
    for (int i = 0; i < nm; i++)
        M *= E->size[ml[i]];
    for (int i = 0; i < nn; i++)
        N *= E->size[nl[i]];
    for (int i = 0; i < nk; i++)
        K *= E->size[kl[i]];
    int oa[NPU_MAX_DIMS * 2], ob[NPU_MAX_DIMS * 2], oc[NPU_MAX_DIMS * 2];
    int na = 0, nbb = 0, nc = 0;
    for (int i = 0; i < nb; i++)
        oa[na++] = ob[nbb++] = oc[nc++] = bl[i];
    for (int i = 0; i < nm; i++)
        oa[na++] = oc[nc++] = ml[i];
    for (int i = 0; i < nk; i++)
        oa[na++] = kl[i];
    for (int i = 0; i < nk; i++)
        ob[nbb++] = kl[i];
    for (int i = 0; i < nn; i++)
        ob[nbb++] = oc[nc++] = nl[i];
    if (na > NPU_MAX_DIMS || nbb > NPU_MAX_DIMS || nc > NPU_MAX_DIMS)
        return NPU_OK;
    size_t es = cpu_esize(y);
    void *pa = malloc(es * (size_t)NPU_MAX(batch * M * K, (int64_t)1));
    void *pb = malloc(es * (size_t)NPU_MAX(batch * K * N, (int64_t)1));
    void *pc = malloc(es * (size_t)NPU_MAX(batch * M * N, (int64_t)1));
    int64_t *offs = malloc(sizeof(int64_t) * 3 * (size_t)NPU_MAX(batch, (int64_t)1));
    enum npu_status st = NPU_OK;
    if (!pa || !pb || !pc || !offs) {
        st = KNOMEM();
        goto out;
    }
    permute_into(in[0], A, oa, na, E, pa);
    permute_into(in[1], B, ob, nbb, E, pb);
    if (y->dtype == NPU_DTYPE_FP32) {
        for (int64_t b = 0; b < batch; b++) {
            offs[b] = b * M * K;
            offs[batch + b] = b * K * N;
            offs[2 * batch + b] = b * M * N;
        }
        struct cpu_gemm_batch g = {
            .M = M,
            .N = N,
            .K = K,
            .alpha = 1,
            .beta = 0,
            .A = pa,
            .B = pb,
            .C = pc,
            .lda = K,
            .ldb = N,
            .ldc = N,
            .a_off = offs,
            .b_off = offs + batch,
            .c_off = offs + 2 * batch,
            .batch = batch,
        };
        cpu_gemm_batched(ctx, &g);
    } else {
        for (int64_t b = 0; b < batch; b++)
            cpu_dgemm(false, false, M, N, K, 1.0, (const double *)pa + b * M * K, K,
                      (const double *)pb + b * K * N, N, 0.0, (double *)pc + b * M * N, N);
    }
    /* C is laid out as oc; the output wants O's order */
    struct npu_tensor ct = {.dtype = y->dtype, .ndim = nc, .data = pc};
    struct ein_term ctl = {.n = nc};
    for (int i = 0; i < nc; i++) {
        ct.dims[i] = E->size[oc[i]];
        ctl.lab[i] = oc[i];
    }
    permute_into(&ct, &ctl, O->lab, O->n, E, y->data);
    *done = true;
out:
    free(pa);
    free(pb);
    free(pc);
    free(offs);
    return st;
}

enum npu_status
cpu_k_einsum(CPU_KERNEL_ARGS)
{
    const char *eq = npu_attrs_string(attrs, "equation", NULL);
    if (!eq)
        return KINVAL("attribute equation is required");
    for (int i = 0; i < nin; i++) {
        if (!in[i])
            return KINVAL("input %d is missing", i);
        if (in[i]->dtype != out[0]->dtype)
            return KINVAL("input %d dtype differs from the output's", i);
    }
    if (out[0]->dtype == NPU_DTYPE_BOOL)
        return KUNSUP("bool is not supported");
    struct ein E;
    CPU_TRY(ein_parse(ctx, eq, in, nin, &E));
    int64_t od[NPU_MAX_DIMS];
    for (int d = 0; d < E.out.n; d++)
        od[d] = E.size[E.out.lab[d]];
    CPU_TRY(cpu_check_out(ctx, out[0], out[0]->dtype, E.out.n, od));
    if (cpu_numel(out[0]) == 0)
        return NPU_OK;
    bool done;
    CPU_TRY(ein_matmul(ctx, &E, in, out[0], &done));
    if (done)
        return NPU_OK;
    return ein_generic(ctx, &E, in, out[0]);
}
