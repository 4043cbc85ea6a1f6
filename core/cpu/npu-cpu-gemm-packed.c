/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-gemm-packed.c: fp32 MatMul / Gemm with a constant B packed once per model
 * (npu_cpu_prepare) into column panels of 48: panel p holds B[0..K)[48p .. 48p+48) as K rows
 * of 48 contiguous floats (columns past N are zero), and the panels follow one another.
 *
 *  - Few rows (M <= 4: a decoder step, a batch-1 Linear) are bound by reading B once. Each
 *    thread takes a run of whole panels and so reads one contiguous stream, whatever B's
 *    stored layout (a transposed B, or a column tile of a wide one, would be a gather of
 *    short runs across pages); every row of A is summed against it in registers (portable
 *    vector code, AVX2 clone on x86-64).
 *  - More rows, on CPUs with AVX-512: an 8 x 48 register tile (24 accumulators, A broadcast
 *    from its rows in place, no packing of A per call), K in chunks of 128 so that the
 *    chunk of a panel (24 KB) stays in L1 while every row block of A passes over it.
 *    Elsewhere the unpacked GEMM runs as before.
 * Every output is one sum over k in order, computed the same way whichever thread takes
 * its panel: results do not depend on the thread count.
 *
 * The packed copy doubles the memory of the weights it covers, so packing stops at a budget
 * (an eighth of the physical memory; NPU_CPU_PACK_MB=N sets it, 0 turns packing off); what
 * is not packed runs unpacked.
 */
#include "npu-cpu-gemm-packed.h"
#include "npu-cpu-conv-direct.h"
#include "npu/npu-cpu.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PK_NR 48   /* panel width */
#define PK_KC 128  /* k chunk of the wide kernel */
#define PK_MB 256  /* rows per task of the wide kernel */
#define PK_SMALL 4 /* rows handled by the streaming kernel */

struct cpu_mm_pack {
    int64_t K, N, npanels;
    bool tb;
    size_t bytes;
    float *p; /* [npanels][K][PK_NR] */
};

/* ---- budget ------------------------------------------------------------------------------- */

static pthread_once_t budget_once = PTHREAD_ONCE_INIT;
static size_t budget_max;
static atomic_size_t budget_used;

static void
budget_init(void)
{
    const char *e = getenv("NPU_CPU_PACK_MB");
    if (e && *e) {
        budget_max = (size_t)strtoull(e, NULL, 10) << 20;
        return;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    budget_max = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 8 : (size_t)1 << 30;
}

static bool
budget_take(size_t n)
{
    pthread_once(&budget_once, budget_init);
    size_t cur = atomic_load(&budget_used);
    do {
        if (cur + n > budget_max)
            return false;
    } while (!atomic_compare_exchange_weak(&budget_used, &cur, cur + n));
    return true;
}

bool
cpu_mm_pack_budget_take(size_t bytes)
{
    return budget_take(bytes);
}

void
cpu_mm_pack_budget_give(size_t bytes)
{
    atomic_fetch_sub(&budget_used, bytes);
}

/* ---- the wide kernel (x86-64 with AVX-512) -------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(NPU_CPU_NO_CLONES)
#define PK_HAVE_WIDE 1
typedef float pk_v16f __attribute__((vector_size(64), aligned(4)));

/* c[MRV][48] = (load ? c : 0) + a[MRV][0..kc) . bp[kc][48]; a row r at a + r * lda */
#define PK_TILE(MRV)                                                                               \
    __attribute__((target("avx512f"))) static void pk_tile##MRV(int64_t kc, const float *a,        \
                                                                int64_t lda, const float *bp,      \
                                                                float *c, int64_t ldc, bool load)  \
    {                                                                                              \
        pk_v16f acc[MRV][3];                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < MRV; r++)                                      \
        {                                                                                          \
            if (load) {                                                                            \
                memcpy(&acc[r][0], c + r * ldc, 64);                                               \
                memcpy(&acc[r][1], c + r * ldc + 16, 64);                                          \
                memcpy(&acc[r][2], c + r * ldc + 32, 64);                                          \
            } else {                                                                               \
                acc[r][0] = acc[r][1] = acc[r][2] = (pk_v16f){0};                                  \
            }                                                                                      \
        }                                                                                          \
        for (int64_t k = 0; k < kc; k++) {                                                         \
            pk_v16f b0, b1, b2;                                                                    \
            memcpy(&b0, bp, 64);                                                                   \
            memcpy(&b1, bp + 16, 64);                                                              \
            memcpy(&b2, bp + 32, 64);                                                              \
            _Pragma("GCC unroll 8") for (int r = 0; r < MRV; r++)                                  \
            {                                                                                      \
                const float x = a[r * lda + k];                                                    \
                acc[r][0] += x * b0;                                                               \
                acc[r][1] += x * b1;                                                               \
                acc[r][2] += x * b2;                                                               \
            }                                                                                      \
            bp += PK_NR;                                                                           \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < MRV; r++)                                      \
        {                                                                                          \
            memcpy(c + r * ldc, &acc[r][0], 64);                                                   \
            memcpy(c + r * ldc + 16, &acc[r][1], 64);                                              \
            memcpy(c + r * ldc + 32, &acc[r][2], 64);                                              \
        }                                                                                          \
    }
PK_TILE(8)
PK_TILE(4)
PK_TILE(2)
PK_TILE(1)
#endif

static int wide_on = -1; /* -1: not decided */

bool
cpu_mm_packed_wide(int want)
{
#ifdef PK_HAVE_WIDE
    __builtin_cpu_init();
    if (want >= 0)
        wide_on = want && __builtin_cpu_supports("avx512f");
    else
        wide_on = __builtin_cpu_supports("avx512f");
    return wide_on;
#else
    (void)want;
    wide_on = 0;
    return false;
#endif
}

#ifdef PK_HAVE_WIDE
static bool
wide_ok(void)
{
    if (wide_on < 0)
        cpu_mm_packed_wide(-1);
    return wide_on > 0;
}
#endif

/* ---- the streaming kernel (M <= 4, any CPU) ------------------------------------------------- */

#define ld8(v, p) memcpy(&(v), (p), sizeof(v))
#define st8(p, v) memcpy((p), &(v), sizeof(v))

/* t[M][48] = A[M][0..K) . bp[K][48], two rows of A per pass over the panel */
CPU_HOT static void
pk_small(int64_t M, int64_t K, const float *A, int64_t lda, const float *bp, float *t)
{
    for (int64_t i = 0; i < M; i += 2) {
        const float *a0 = A + i * lda;
        const float *b = bp;
        v8f c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0}, c4 = {0}, c5 = {0};
        if (i + 1 < M) {
            const float *a1 = a0 + lda;
            v8f d0 = {0}, d1 = {0}, d2 = {0}, d3 = {0}, d4 = {0}, d5 = {0};
            for (int64_t k = 0; k < K; k++, b += PK_NR) {
                v8f b0, b1, b2, b3, b4, b5;
                ld8(b0, b), ld8(b1, b + 8), ld8(b2, b + 16);
                ld8(b3, b + 24), ld8(b4, b + 32), ld8(b5, b + 40);
                const float x0 = a0[k], x1 = a1[k];
                c0 += x0 * b0, c1 += x0 * b1, c2 += x0 * b2;
                c3 += x0 * b3, c4 += x0 * b4, c5 += x0 * b5;
                d0 += x1 * b0, d1 += x1 * b1, d2 += x1 * b2;
                d3 += x1 * b3, d4 += x1 * b4, d5 += x1 * b5;
            }
            float *u = t + (i + 1) * PK_NR;
            st8(u, d0), st8(u + 8, d1), st8(u + 16, d2);
            st8(u + 24, d3), st8(u + 32, d4), st8(u + 40, d5);
        } else {
            for (int64_t k = 0; k < K; k++, b += PK_NR) {
                v8f b0, b1, b2, b3, b4, b5;
                ld8(b0, b), ld8(b1, b + 8), ld8(b2, b + 16);
                ld8(b3, b + 24), ld8(b4, b + 32), ld8(b5, b + 40);
                const float x0 = a0[k];
                c0 += x0 * b0, c1 += x0 * b1, c2 += x0 * b2;
                c3 += x0 * b3, c4 += x0 * b4, c5 += x0 * b5;
            }
        }
        float *u = t + i * PK_NR;
        st8(u, c0), st8(u + 8, c1), st8(u + 16, c2);
        st8(u + 24, c3), st8(u + 32, c4), st8(u + 40, c5);
    }
}

/* ---- driver --------------------------------------------------------------------------------- */

struct pk_job {
    const struct cpu_mm_pack *pk;
    int64_t M, lda, ldc, mblocks;
    const float *A;
    float *C;
    bool acc;
    const float *bias;
    const struct cpu_act_spec *act;
};

/* rows [0, m) of the finished block c (ldc) over columns [j0, j0 + nc): bias, activation */
static void
pk_epilogue(const struct pk_job *j, float *c, int64_t m, int64_t j0, int64_t nc)
{
    bool act = j->act && j->act->kind != CPU_ACT_NONE;
    for (int64_t i = 0; i < m; i++, c += j->ldc) {
        if (j->bias)
            for (int64_t q = 0; q < nc; q++)
                c[q] += j->bias[j0 + q];
        if (act)
            cpu_act_apply(j->act, c, nc);
    }
}

static void
pk_small_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct pk_job *j = arg;
    const struct cpu_mm_pack *pk = j->pk;
    float t[PK_SMALL * PK_NR] __attribute__((aligned(64)));
    for (int64_t p = begin; p < end; p++) {
        int64_t j0 = p * PK_NR, nc = NPU_MIN((int64_t)PK_NR, pk->N - j0);
        pk_small(j->M, pk->K, j->A, j->lda, pk->p + p * pk->K * PK_NR, t);
        for (int64_t i = 0; i < j->M; i++) {
            float *c = j->C + i * j->ldc + j0;
            const float *s = t + i * PK_NR;
            if (j->acc)
                for (int64_t q = 0; q < nc; q++)
                    c[q] += s[q];
            else
                memcpy(c, s, sizeof(float) * (size_t)nc);
        }
        pk_epilogue(j, j->C + j0, j->M, j0, nc);
    }
}

#ifdef PK_HAVE_WIDE
static void
pk_wide_task(void *arg, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const struct pk_job *j = arg;
    const struct cpu_mm_pack *pk = j->pk;
    float t[8 * PK_NR] __attribute__((aligned(64)));
    for (int64_t task = begin; task < end; task++) {
        int64_t p = task / j->mblocks, r0 = (task % j->mblocks) * PK_MB;
        int64_t r1 = NPU_MIN(r0 + PK_MB, j->M);
        int64_t j0 = p * PK_NR, nc = NPU_MIN((int64_t)PK_NR, pk->N - j0);
        const float *bpan = pk->p + p * pk->K * PK_NR;
        for (int64_t pc = 0; pc < pk->K; pc += PK_KC) {
            int64_t kc = NPU_MIN((int64_t)PK_KC, pk->K - pc);
            bool load = pc > 0 || j->acc;
            for (int64_t i = r0; i < r1;) {
                int64_t mr = r1 - i >= 8 ? 8 : r1 - i >= 4 ? 4 : r1 - i >= 2 ? 2 : 1;
                const float *a = j->A + i * j->lda + pc;
                float *c = j->C + i * j->ldc + j0;
                float *cd = c;
                int64_t ldc = j->ldc;
                if (nc < PK_NR) { /* the last panel: through a full-width tile */
                    cd = t, ldc = PK_NR;
                    if (load)
                        for (int64_t r = 0; r < mr; r++)
                            memcpy(t + r * PK_NR, c + r * j->ldc, sizeof(float) * (size_t)nc);
                }
                const float *b = bpan + pc * PK_NR;
                switch (mr) {
                case 8: pk_tile8(kc, a, j->lda, b, cd, ldc, load); break;
                case 4: pk_tile4(kc, a, j->lda, b, cd, ldc, load); break;
                case 2: pk_tile2(kc, a, j->lda, b, cd, ldc, load); break;
                default: pk_tile1(kc, a, j->lda, b, cd, ldc, load); break;
                }
                if (cd == t)
                    for (int64_t r = 0; r < mr; r++)
                        memcpy(c + r * j->ldc, t + r * PK_NR, sizeof(float) * (size_t)nc);
                i += mr;
            }
        }
        pk_epilogue(j, j->C + r0 * j->ldc + j0, r1 - r0, j0, nc);
    }
}
#endif

bool
cpu_mm_packed_run(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *prep,
                  const struct npu_tensor *b, bool tb, int64_t M, const float *A, int64_t lda,
                  float *C, int64_t ldc, bool accumulate, const float *bias_col,
                  const struct cpu_act_spec *act)
{
    if (!prep || !prep->mm || !b || prep->w_data != b->data || prep->w_ndim != b->ndim)
        return false;
    if (memcmp(prep->w_dims, b->dims, sizeof(int64_t) * (size_t)b->ndim))
        return false;
    const struct cpu_mm_pack *pk = prep->mm;
    if (pk->tb != tb || M < 1 || pk->K < 1)
        return false;
    struct pk_job j = {pk, M, lda, ldc, 1, A, C, accumulate, bias_col, act};
    if (M <= PK_SMALL) {
        /* bound by reading B: runs of panels of at least 256 KB, each thread one stream */
        cpu_parallel_for(ctx, pk->npanels, NPU_MAX((int64_t)1, 65536 / (pk->K * PK_NR)),
                         pk_small_task, &j);
        return true;
    }
#ifdef PK_HAVE_WIDE
    if (!wide_ok())
        return false;
    j.mblocks = NPU_DIV_ROUND_UP(M, (int64_t)PK_MB);
    /* tasks of about 2 MFLOP or more, so that small products stay on one thread */
    double task_flops = 2.0 * (double)NPU_MIN(M, (int64_t)PK_MB) * PK_NR * (double)pk->K;
    cpu_parallel_for(ctx, pk->npanels * j.mblocks, (int64_t)(2e6 / task_flops) + 1, pk_wide_task,
                     &j);
    return true;
#else
    return false;
#endif
}

/* ---- prepare -------------------------------------------------------------------------------- */

size_t
cpu_mm_pack_floats(int64_t K, int64_t N)
{
    return (size_t)(NPU_DIV_ROUND_UP(N, (int64_t)PK_NR) * K * PK_NR);
}

void
cpu_mm_pack_into(bool tb, const float *src, int64_t ldb, int64_t K, int64_t N, float *dst)
{
    int64_t npanels = NPU_DIV_ROUND_UP(N, (int64_t)PK_NR);
    for (int64_t jp = 0; jp < npanels; jp++) {
        int64_t j0 = jp * PK_NR, nc = NPU_MIN((int64_t)PK_NR, N - j0);
        float *d = dst + jp * K * PK_NR;
        if (!tb) {
            for (int64_t k = 0; k < K; k++) {
                memcpy(d + k * PK_NR, src + k * ldb + j0, sizeof(float) * (size_t)nc);
                memset(d + k * PK_NR + nc, 0, sizeof(float) * (size_t)(PK_NR - nc));
            }
        } else {
            if (nc < PK_NR)
                memset(d, 0, sizeof(float) * (size_t)(K * PK_NR));
            for (int64_t q = 0; q < nc; q++) {
                const float *row = src + (j0 + q) * ldb;
                for (int64_t k = 0; k < K; k++)
                    d[k * PK_NR + q] = row[k];
            }
        }
    }
}

bool
cpu_mm_pack_wanted(void)
{
#ifdef PK_HAVE_WIDE
    return wide_ok();
#else
    return false;
#endif
}

bool
cpu_mm_packed_gemm(const float *bp, int64_t K, int64_t N, int64_t M, const float *A, int64_t lda,
                   float *C, int64_t ldc)
{
#ifdef PK_HAVE_WIDE
    if (!wide_ok() || M < 1 || K < 1 || N < 1)
        return false;
    struct cpu_mm_pack pk = {K, N, NPU_DIV_ROUND_UP(N, (int64_t)PK_NR), false, 0, (float *)bp};
    struct pk_job j = {&pk, M, lda,   ldc,  NPU_DIV_ROUND_UP(M, (int64_t)PK_MB),
                       A,   C, false, NULL, NULL};
    pk_wide_task(&j, 0, pk.npanels * j.mblocks, 0);
    return true;
#else
    (void)bp, (void)K, (void)N, (void)M, (void)A, (void)lda, (void)C, (void)ldc;
    return false;
#endif
}

void
cpu_mm_pack_free(struct cpu_mm_pack *p)
{
    if (!p)
        return;
    atomic_fetch_sub(&budget_used, p->bytes);
    free(p->p);
    free(p);
}

enum npu_status
cpu_mm_prepare(enum npu_op op, const struct npu_attrs *attrs, const struct npu_tensor *const *in,
               int nin, struct npu_cpu_prep **out)
{
    *out = NULL;
    if ((op != NPU_OP_MATMUL && op != NPU_OP_GEMM) || nin < 2 || !in[1] || !in[1]->data)
        return NPU_OK;
    const struct npu_tensor *b = in[1];
    if (b->dtype != NPU_DTYPE_FP32 || b->ndim != 2)
        return NPU_OK;
    bool tb = op == NPU_OP_GEMM && npu_attrs_int(attrs, "transB", 0) != 0;
    if (op == NPU_OP_GEMM && npu_attrs_int(attrs, "transA", 0) != 0)
        return NPU_OK;
    int64_t K = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    /* small products gain nothing from a second copy */
    if (K < 16 || N < 16 || K * N < 4096)
        return NPU_OK;
    int64_t npanels = NPU_DIV_ROUND_UP(N, (int64_t)PK_NR);
    size_t bytes = sizeof(float) * (size_t)(npanels * K * PK_NR);
    if (!budget_take(bytes))
        return NPU_OK;
    struct npu_cpu_prep *p = calloc(1, sizeof(*p));
    struct cpu_mm_pack *pk = calloc(1, sizeof(*pk));
    float *dst = NULL;
    if (!p || !pk || posix_memalign((void **)&dst, 64, bytes)) {
        free(p);
        free(pk);
        atomic_fetch_sub(&budget_used, bytes);
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_prepare: out of memory packing a %lld x %lld B",
                (long long)K, (long long)N);
        return NPU_ERR_NOMEM;
    }
    cpu_mm_pack_into(tb, b->data, tb ? K : N, K, N, dst);
    pk->K = K, pk->N = N, pk->npanels = npanels, pk->tb = tb, pk->bytes = bytes, pk->p = dst;
    p->op = op;
    p->w_data = b->data;
    p->w_ndim = b->ndim;
    memcpy(p->w_dims, b->dims, sizeof(int64_t) * (size_t)b->ndim);
    p->mm = pk;
    *out = p;
    return NPU_OK;
}

/* What npu-info reports for fp32 products with a constant B (most model MatMuls / Gemms):
 * this file's kernels, whatever the unpacked GEMM path says, unless packing is off. */
static char const_path[256];
static pthread_once_t const_path_once = PTHREAD_ONCE_INIT;

static void
const_path_decide(void)
{
    pthread_once(&budget_once, budget_init);
    const char *e = getenv("NPU_CPU_PACK_MB");
    const bool set = e && *e;
    if (!budget_max) {
        snprintf(const_path, sizeof(const_path),
                 "not packed (NPU_CPU_PACK_MB=0): they run the fp32 GEMM path above");
        return;
    }
    bool wide = false;
#ifdef PK_HAVE_WIDE
    wide = wide_ok();
#endif
    snprintf(const_path, sizeof(const_path),
             "B packed once per model into 48-column panels (up to %zu MiB%s); up to %d rows: "
             "own streaming kernel; more rows: %s",
             budget_max >> 20, set ? ", NPU_CPU_PACK_MB" : ", an eighth of the memory", PK_SMALL,
             wide ? "own AVX-512 8x48 tile" : "the fp32 GEMM path above (no AVX-512)");
}

const char *
npu_cpu_gemm_const_path(void)
{
    pthread_once(&const_path_once, const_path_decide);
    return const_path;
}
