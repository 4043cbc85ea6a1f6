/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu-internal.h: what the CPU kernel files share and nobody else sees:
 * the executor context with its thread pool and per-thread scratch, the
 * kernel signature and dispatch flags, numpy broadcasting plans,
 * saturating float-to-integer conversion, and small helpers for reading ONNX
 * operand tensors (axes, pads, scalars). fp16 conversion is npu/npu-fp16.h
 * (core/util), shared with every other layer.
 *
 * Every kernel is `enum npu_status k_xxx(CPU_KERNEL_ARGS)`; npu-cpu.c has
 * already checked the operand count, that required operands are present and
 * that every tensor is well formed (rank, dims, dtype, data when non-empty).
 * Kernels still check that shapes agree with each other and with the
 * outputs the caller allocated, since they must never read or write outside
 * the given shapes.
 */
#ifndef NPU_CPU_INTERNAL_H
#define NPU_CPU_INTERNAL_H

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-common.h"
#include "npu/npu-cpu.h"
#include "npu/npu-fp16.h"
#include "npu/npu-ops.h"
#include "npu/npu-tensor.h"

#define CPU_LOG_DOMAIN "cpu"

/* ---- runtime CPU dispatch for the hot loops -------------------------------------------------
 * The build targets the baseline ISA (x86-64 or armv8-a). On x86-64 the hottest loops are also
 * compiled for x86-64-v3 (AVX2+FMA) and chosen at load time through an ifunc, so one binary
 * runs everywhere and still uses the machine's vectors. aarch64 always has NEON. */
/* (not under ThreadSanitizer: its instrumented ifunc resolvers run before its runtime) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 &&           \
    !defined(NPU_CPU_NO_CLONES) && !defined(__SANITIZE_THREAD__)
#define CPU_HOT __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define CPU_HOT
#endif

typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef int32_t v8i __attribute__((vector_size(32), aligned(4)));

/* ---- context and thread pool ---------------------------------------------------------------- */

typedef void (*cpu_par_fn)(void *arg, int64_t begin, int64_t end, int tid);

struct cpu_scratch {
    void *p;
    size_t size;
};

#define CPU_AFFINE_MAX 8

struct npu_cpu_ctx {
    int nthreads;         /* workers + the calling thread */
    pthread_t *workers;   /* nthreads - 1 */
    int nworkers;         /* workers actually started */
    pthread_mutex_t lock; /* guards the job fields below */
    pthread_cond_t start_cv;
    pthread_cond_t done_cv;
    uint64_t generation; /* bumped for every job; workers wait for a change */
    int busy;            /* workers that joined the current job and are still in it */
    bool closed;         /* the caller is done with its chunks; late wakers stay out */
    bool quit;
    int64_t spin_ns;         /* idle threads spin this long before sleeping (npu-cpu.c) */
    bool spin_adapt;         /* stop spinning for a while when a spinning thread loses its CPU */
    int64_t spin_off_until;  /* atomic, CLOCK_MONOTONIC ns: nobody spins before this */
    int64_t spin_backoffs;   /* atomic: how often spinning was stopped */
    int64_t spin_backoff_ns; /* atomic: the length of the last stop */
    int64_t pub_ns;          /* when the current job was published */
    int test_slow_tid;       /* tests (cpu_pool_test_slow): this thread sleeps before each chunk */
    int64_t test_slow_ns;
    /* the current job */
    cpu_par_fn fn;
    void *arg;
    int64_t n, chunk;
    int64_t next; /* atomic: next chunk start */
    /* cpu_parallel_for_px jobs (up to CPU_AFFINE_MAX threads): cut into nthreads contiguous
     * parts, thread t starts with part t and then takes what is left of the others;
     * part_next[t * 8] is part t's next chunk start, relative (atomic). affine_mode
     * (NPU_CPU_AFFINE): 0 never, 1 cpu_parallel_for_px jobs, 2 every job */
    int affine_mode;
    bool affine; /* the current job */
    int64_t part_next[CPU_AFFINE_MAX * 8];
    /* one npu_cpu_run at a time per context */
    pthread_mutex_t run_lock;
    enum npu_op cur_op;          /* for messages */
    struct cpu_scratch *scratch; /* nthreads entries */
    /* NPU_CPU_PROFILE=1: wall time and calls per op, printed to stderr when the context is
     * destroyed (npu_cpu_run's whole call, checks included) */
    bool prof;
    double *prof_s;  /* [NPU_OP_COUNT] */
    int64_t *prof_n; /* [NPU_OP_COUNT] */
    /* fp32 Conv by path: depthwise, 1x1 direct, im2col, direct packed, small-channel stem */
    double prof_conv_s[6];
    int64_t prof_conv_n[6];
    double prof_conv_flop[6];
    /* NPU_CPU_PROFILE_LAYERS=1 (with NPU_CPU_PROFILE): fp32 Conv time by shape and path */
    struct cpu_prof_layer *prof_layers;
    int prof_nlayers, prof_cap_layers;
    /* npu_cpu_run_prep: the current call's prepared data (NULL in npu_cpu_run) */
    const struct npu_cpu_prep *prep;
    /* the direct convolution's padded input copy (npu-cpu-conv-direct.c), kept between calls */
    float *conv_buf;
    size_t conv_buf_size;
    /* NPU_CPU_PROFILE: the pool's jobs (cpu_parallel_for calls that used the workers), the
     * time from publishing a job to its end, the caller's wait for workers still in a chunk
     * after it ran out of chunks, and who ran the chunks */
    struct cpu_prof_pool {
        int64_t jobs, joined, chunks, caller_chunks, waits_50us, waits_1ms;
        double job_s, wait_s, wait_max_s, join_s; /* join_s: publish to a worker's join */
    } prof_pool;
};

/* One fp32 Conv shape in the per-layer profile (npu-cpu-conv.c records, npu-cpu.c prints) */
struct cpu_prof_layer {
    int kind; /* the path, as prof_conv_s */
    int64_t C, H, W, M, G, kh, kw, sh, sw, OH, OW;
    double s, smin, flop;
    int64_t n;
};

/* Monotonic seconds (the profile's clock). */
double cpu_now(void);

/* Runs fn over [0, n) in chunks of at least `grain` items on all threads; returns when all
 * chunks are done. Results must not depend on how the range is cut (they never do in our
 * kernels: every item is computed the same way whichever thread takes it). Never call it from
 * inside a parallel callback. */
void cpu_parallel_for(struct npu_cpu_ctx *ctx, int64_t n, int64_t grain, cpu_par_fn fn, void *arg);
/* cpu_parallel_for for jobs whose task index runs over pixel ranges in order (rows, bands,
 * panels of one plane): thread t starts with the t-th of nthreads contiguous parts, so that
 * a pixel-range job that follows another one reads mostly what its own thread wrote. */
void cpu_parallel_for_px(struct npu_cpu_ctx *ctx, int64_t n, int64_t grain, cpu_par_fn fn,
                         void *arg);
/* Tests only: thread `tid` of the pool sleeps `us` microseconds before each chunk it takes (a
 * worker the scheduler starves); us = 0 ends it. Call between jobs. */
void cpu_pool_test_slow(struct npu_cpu_ctx *ctx, int tid, int64_t us);
/* Tests only: marks the pool contended (idle threads sleep instead of spinning, npu-cpu.c);
 * returns how often that has happened so far, by this call or by the pool's own detection. */
int64_t cpu_pool_test_contended(struct npu_cpu_ctx *ctx, bool mark);
/* The GEMM kernels' per-thread packing buffer of at least n floats (npu-cpu-gemm.c) */
float *cpu_gemm_pack_buffer(size_t n);

/* Makes every thread's scratch buffer at least `bytes` long (64-byte aligned). Call before
 * cpu_parallel_for; callbacks then use cpu_scratch(ctx, tid). */
enum npu_status cpu_scratch_reserve(struct npu_cpu_ctx *ctx, size_t bytes);
static inline void *
cpu_scratch(struct npu_cpu_ctx *ctx, int tid)
{
    return ctx->scratch[tid].p;
}

/* ---- kernels -------------------------------------------------------------------------------- */

#define CPU_KERNEL_ARGS                                                                            \
    struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, const struct npu_tensor *const *in,    \
        int nin, struct npu_tensor *const *out, int nout
typedef enum npu_status (*cpu_kernel_fn)(CPU_KERNEL_ARGS);

/* Logs "cpu: <Op>: message" and returns the status, so kernels can `return KERR(...)`. */
enum npu_status cpu_fail(struct npu_cpu_ctx *ctx, enum npu_status st, const char *fmt, ...)
    NPU_PRINTF(3, 4);
#define KINVAL(...) cpu_fail(ctx, NPU_ERR_INVALID, __VA_ARGS__)
#define KUNSUP(...) cpu_fail(ctx, NPU_ERR_UNSUPPORTED, __VA_ARGS__)
#define KNOMEM() cpu_fail(ctx, NPU_ERR_NOMEM, "out of memory")

#define CPU_TRY(expr)                                                                              \
    do {                                                                                           \
        enum npu_status st_ = (expr);                                                              \
        if (st_ != NPU_OK)                                                                         \
            return st_;                                                                            \
    } while (0)

/* Kernels by file. */
#define CPU_DECLARE(name) enum npu_status name(CPU_KERNEL_ARGS);
/* npu-cpu-elementwise.c */
CPU_DECLARE(cpu_k_add)
CPU_DECLARE(cpu_k_sub)
CPU_DECLARE(cpu_k_mul)
CPU_DECLARE(cpu_k_div)
CPU_DECLARE(cpu_k_pow)
CPU_DECLARE(cpu_k_mod)
CPU_DECLARE(cpu_k_max)
CPU_DECLARE(cpu_k_min)
CPU_DECLARE(cpu_k_sum)
CPU_DECLARE(cpu_k_mean)
CPU_DECLARE(cpu_k_equal)
CPU_DECLARE(cpu_k_less)
CPU_DECLARE(cpu_k_greater)
CPU_DECLARE(cpu_k_less_equal)
CPU_DECLARE(cpu_k_greater_equal)
CPU_DECLARE(cpu_k_and)
CPU_DECLARE(cpu_k_or)
CPU_DECLARE(cpu_k_xor)
CPU_DECLARE(cpu_k_where)
CPU_DECLARE(cpu_k_prelu)
CPU_DECLARE(cpu_k_sqrt)
CPU_DECLARE(cpu_k_exp)
CPU_DECLARE(cpu_k_log)
CPU_DECLARE(cpu_k_abs)
CPU_DECLARE(cpu_k_neg)
CPU_DECLARE(cpu_k_reciprocal)
CPU_DECLARE(cpu_k_relu)
CPU_DECLARE(cpu_k_leaky_relu)
CPU_DECLARE(cpu_k_sigmoid)
CPU_DECLARE(cpu_k_tanh)
CPU_DECLARE(cpu_k_hard_sigmoid)
CPU_DECLARE(cpu_k_hard_swish)
CPU_DECLARE(cpu_k_elu)
CPU_DECLARE(cpu_k_selu)
CPU_DECLARE(cpu_k_gelu)
CPU_DECLARE(cpu_k_softplus)
CPU_DECLARE(cpu_k_clip)
CPU_DECLARE(cpu_k_erf)
CPU_DECLARE(cpu_k_not)
CPU_DECLARE(cpu_k_floor)
CPU_DECLARE(cpu_k_ceil)
CPU_DECLARE(cpu_k_round)
CPU_DECLARE(cpu_k_sign)
CPU_DECLARE(cpu_k_sin)
CPU_DECLARE(cpu_k_cos)
CPU_DECLARE(cpu_k_silu)
CPU_DECLARE(cpu_k_gelu_tanh)
/* npu-cpu-cast.c */
CPU_DECLARE(cpu_k_cast)
CPU_DECLARE(cpu_k_cast_like)
/* npu-cpu-gemm.c */
CPU_DECLARE(cpu_k_matmul)
CPU_DECLARE(cpu_k_gemm)
CPU_DECLARE(cpu_k_matmul_integer)
CPU_DECLARE(cpu_k_qlinear_matmul)
/* npu-cpu-einsum.c */
CPU_DECLARE(cpu_k_einsum)
/* npu-cpu-conv.c */
CPU_DECLARE(cpu_k_conv)
CPU_DECLARE(cpu_k_conv_transpose)
CPU_DECLARE(cpu_k_conv_integer)
CPU_DECLARE(cpu_k_qlinear_conv)
/* npu-cpu-pool.c */
CPU_DECLARE(cpu_k_max_pool)
CPU_DECLARE(cpu_k_average_pool)
CPU_DECLARE(cpu_k_global_average_pool)
CPU_DECLARE(cpu_k_global_max_pool)
/* npu-cpu-norm.c */
CPU_DECLARE(cpu_k_batch_norm)
CPU_DECLARE(cpu_k_instance_norm)
CPU_DECLARE(cpu_k_layer_norm)
CPU_DECLARE(cpu_k_group_norm)
/* npu-cpu-elementwise.c (opset 18+) */
CPU_DECLARE(cpu_k_bitwise_and)
CPU_DECLARE(cpu_k_bitwise_or)
CPU_DECLARE(cpu_k_bitwise_xor)
CPU_DECLARE(cpu_k_bitwise_not)
CPU_DECLARE(cpu_k_mish)
/* npu-cpu-opset18.c */
CPU_DECLARE(cpu_k_rms_norm)
CPU_DECLARE(cpu_k_center_crop_pad)
CPU_DECLARE(cpu_k_col2im)
CPU_DECLARE(cpu_k_affine_grid)
CPU_DECLARE(cpu_k_softmax)
CPU_DECLARE(cpu_k_log_softmax)
CPU_DECLARE(cpu_k_attention)
/* npu-cpu-reduce.c */
CPU_DECLARE(cpu_k_reduce_mean)
CPU_DECLARE(cpu_k_reduce_sum)
CPU_DECLARE(cpu_k_reduce_max)
CPU_DECLARE(cpu_k_reduce_min)
CPU_DECLARE(cpu_k_reduce_prod)
CPU_DECLARE(cpu_k_reduce_l2)
CPU_DECLARE(cpu_k_reduce_sum_square)
CPU_DECLARE(cpu_k_argmax)
CPU_DECLARE(cpu_k_argmin)
CPU_DECLARE(cpu_k_cumsum)
/* npu-cpu-shape.c */
CPU_DECLARE(cpu_k_copy)
CPU_DECLARE(cpu_k_dropout)
CPU_DECLARE(cpu_k_transpose)
CPU_DECLARE(cpu_k_concat)
CPU_DECLARE(cpu_k_split)
CPU_DECLARE(cpu_k_slice)
CPU_DECLARE(cpu_k_gather)
CPU_DECLARE(cpu_k_gather_elements)
CPU_DECLARE(cpu_k_pad)
CPU_DECLARE(cpu_k_expand)
CPU_DECLARE(cpu_k_tile)
CPU_DECLARE(cpu_k_shape)
CPU_DECLARE(cpu_k_size)
CPU_DECLARE(cpu_k_constant)
CPU_DECLARE(cpu_k_constant_of_shape)
CPU_DECLARE(cpu_k_range)
CPU_DECLARE(cpu_k_trilu)
CPU_DECLARE(cpu_k_reshape)
CPU_DECLARE(cpu_k_squeeze)
CPU_DECLARE(cpu_k_unsqueeze)
CPU_DECLARE(cpu_k_flatten)
/* npu-cpu-resize.c */
CPU_DECLARE(cpu_k_resize)
/* npu-cpu-index.c */
CPU_DECLARE(cpu_k_depth_to_space)
CPU_DECLARE(cpu_k_space_to_depth)
CPU_DECLARE(cpu_k_scatter_nd)
CPU_DECLARE(cpu_k_state_write)
CPU_DECLARE(cpu_k_scatter_elements)
CPU_DECLARE(cpu_k_topk)
/* npu-cpu-rnn.c */
CPU_DECLARE(cpu_k_rnn)
CPU_DECLARE(cpu_k_gru)
CPU_DECLARE(cpu_k_lstm)
/* npu-cpu-index.c, npu-cpu-elementwise.c, npu-cpu-reduce.c: later additions */
CPU_DECLARE(cpu_k_one_hot)
CPU_DECLARE(cpu_k_gather_nd)
CPU_DECLARE(cpu_k_isnan)
CPU_DECLARE(cpu_k_isinf)
CPU_DECLARE(cpu_k_celu)
CPU_DECLARE(cpu_k_reduce_l1)
CPU_DECLARE(cpu_k_reduce_log_sum)
CPU_DECLARE(cpu_k_reduce_log_sum_exp)
/* npu-cpu-gridsample.c */
CPU_DECLARE(cpu_k_grid_sample)
/* npu-cpu-quant.c */
CPU_DECLARE(cpu_k_quantize_linear)
CPU_DECLARE(cpu_k_dequantize_linear)
#undef CPU_DECLARE

/* ---- tensor helpers -------------------------------------------------------------------------
 */

static inline int64_t
cpu_numel(const struct npu_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->dims[i]; /* npu-cpu.c has checked that this does not overflow */
    return n;
}

static inline size_t
cpu_esize(const struct npu_tensor *t)
{
    return npu_dtype_size(t->dtype);
}

static inline bool
cpu_same_dims(const struct npu_tensor *a, const struct npu_tensor *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Product of dims[from..to). */
static inline int64_t
cpu_dims_prod(const int64_t *dims, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= dims[i];
    return n;
}

/* Row-major strides (in elements) of dims[0..n-1]: st[n-1] = 1. */
static inline void
cpu_row_strides(const int64_t *dims, int n, int64_t *st)
{
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        st[i] = s;
        s *= dims[i];
    }
}

/* Steps the row-major multi-index idx[0..n-1] within dims (the last one moves fastest, an
 * odometer); false when it wraps around to all zeros. */
static inline bool
cpu_index_next(int64_t *idx, const int64_t *dims, int n)
{
    for (int d = n - 1; d >= 0; d--) {
        if (++idx[d] < dims[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

/* Formats dims as "[2,3,4]" into buf (for messages). */
const char *cpu_dims_str(const struct npu_tensor *t, char *buf, size_t len);

/* Normalises an ONNX axis in [-rank, rank) to [0, rank). */
enum npu_status cpu_axis(struct npu_cpu_ctx *ctx, int64_t axis, int rank, int *out);

/* Checks out's dtype and dims. ndim/dims describe what the kernel computed. */
enum npu_status cpu_check_out(struct npu_cpu_ctx *ctx, const struct npu_tensor *o,
                              enum npu_dtype dt, int ndim, const int64_t *dims);

/* Reads an int32/int64 1-D (or scalar) tensor into v (at most max entries). */
enum npu_status cpu_read_ints(struct npu_cpu_ctx *ctx, const struct npu_tensor *t, const char *what,
                              int64_t *v, int max, int *n);
/* Element i of any numeric tensor as double / as int64 (floats truncate, saturating): the
 * util layer's loads (npu-tensor.h). */
static inline double
cpu_scalar_f64(const struct npu_tensor *t, int64_t i)
{
    return npu_dtype_load_f64(t->dtype, t->data, i);
}

static inline int64_t
cpu_scalar_i64(const struct npu_tensor *t, int64_t i)
{
    return npu_dtype_load_i64(t->dtype, t->data, i);
}

/* True if a tensor is an absent optional operand (NULL, or a 0-element placeholder as old
 * Resize graphs pass for roi/scales). */
static inline bool
cpu_absent(const struct npu_tensor *t)
{
    return !t || (t->ndim == 1 && t->dims[0] == 0);
}

/* ---- conversion (npu-cpu-cast.c) ------------------------------------------------------------ */

/* n elements from sdt to ddt with Cast's rules; src and dst may alias only if sdt == ddt. */
void cpu_convert(const void *src, enum npu_dtype sdt, void *dst, enum npu_dtype ddt, int64_t n);
/* A malloc'ed copy of t's data converted to ddt (NULL if out of memory). */
void *cpu_convert_alloc(const struct npu_tensor *t, enum npu_dtype ddt);
/* ONNX TensorProto.DataType code -> dtype (UNDEFINED for types we do not have). */
enum npu_dtype cpu_dtype_from_onnx(int64_t code);

/* ---- saturating float -> integer (NaN -> 0, truncation toward zero) --------------------------
 * ONNX leaves out-of-range float-to-int conversion undefined; C makes it undefined behaviour.
 * We define it: saturate to the type's range, NaN gives 0. */
#define CPU_SAT_FN(name, T, lo, hi, tmax)                                                          \
    static inline T name(double x)                                                                 \
    {                                                                                              \
        if (!(x == x))                                                                             \
            return 0;                                                                              \
        if (x <= (lo))                                                                             \
            return (T)(lo);                                                                        \
        if (x >= (hi))                                                                             \
            return (tmax);                                                                         \
        return (T)x;                                                                               \
    }
/* hi is the first double at or above which the value no longer fits (2^63 for int64) */
CPU_SAT_FN(cpu_sat_i8, int8_t, -128.0, 127.0, INT8_MAX)
CPU_SAT_FN(cpu_sat_u8, uint8_t, 0.0, 255.0, UINT8_MAX)
CPU_SAT_FN(cpu_sat_i16, int16_t, -32768.0, 32767.0, INT16_MAX)
CPU_SAT_FN(cpu_sat_u16, uint16_t, 0.0, 65535.0, UINT16_MAX)
CPU_SAT_FN(cpu_sat_i32, int32_t, -2147483648.0, 2147483647.0, INT32_MAX)
CPU_SAT_FN(cpu_sat_u32, uint32_t, 0.0, 4294967295.0, UINT32_MAX)
CPU_SAT_FN(cpu_sat_i64, int64_t, -9223372036854775808.0, 9223372036854775808.0, INT64_MAX)
CPU_SAT_FN(cpu_sat_u64, uint64_t, 0.0, 18446744073709551616.0, UINT64_MAX)
#undef CPU_SAT_FN

/* ---- numpy broadcasting --------------------------------------------------------------------- */

#define CPU_BC_MAX_IN 4

/* A broadcast of up to CPU_BC_MAX_IN operands to one output, with size-1 output dims dropped
 * and adjacent dims merged where every operand is contiguous (or broadcast) across both. The
 * innermost dim then has stride 1 or 0 in every operand, so the inner loops are plain
 * vectorisable loops over same-shape, scalar or per-row operands. */
struct cpu_bcast {
    int nin;
    int ndim; /* >= 1 */
    int64_t dims[NPU_MAX_DIMS];
    int64_t strides[CPU_BC_MAX_IN][NPU_MAX_DIMS]; /* in elements; 0 = broadcast */
    int64_t numel;
};

/* Plans out = f(ins...). Checks that every input broadcasts to out's shape and, if `exact`,
 * that out's shape is exactly the broadcast of the inputs (multidirectional); otherwise only
 * that the inputs broadcast to out (unidirectional, as Expand and PRelu need). */
enum npu_status cpu_bcast_plan(struct npu_cpu_ctx *ctx, struct cpu_bcast *b,
                               const struct npu_tensor *outt, const struct npu_tensor *const *ins,
                               int nin, bool exact);

/* The inner loop: n outputs from operands whose inner stride is str[i] (0 or 1). */
typedef void (*cpu_bc_fn)(void *out, const void *const *ins, const int64_t *str, int64_t n,
                          const void *param);

/* Runs fn over the plan in parallel. esize: element size of out; insz: of each input. */
void cpu_bcast_run(struct npu_cpu_ctx *ctx, const struct cpu_bcast *b, void *out, size_t esize,
                   const void *const *ins, const size_t *insz, cpu_bc_fn fn, const void *param);

/* ---- math ----------------------------------------------------------------------------------- */

/* exp for float, accurate to ~1 ulp, branch-free so loops over it vectorise. */
static inline float
cpu_expf(float x)
{
    /* clamp keeps 2^n finite in two steps; comparisons leave NaN alone */
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 89.0f ? 89.0f : xc;
    /* n = round(x / ln2) via the 1.5 * 2^23 trick (no float->int conversion) */
    const float magic = 12582912.0f;
    float t = xc * 1.44269504088896341f + magic;
    float fn = t - magic;
    int32_t n = (int32_t)(npu_f32_bits(t) - npu_f32_bits(magic));
    /* r = x - n ln2 in two parts (Cody-Waite), |r| <= ln2/2 */
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    /* exp(r) = 1 + r + r^2 P(r): minimax on [-ln2/2, ln2/2] */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* scale by 2^n as 2^n1 * 2^n2 so neither factor leaves the normal range */
    int32_t n1 = n >> 1, n2 = n - n1;
    float s1 = npu_bits_f32((uint32_t)(n1 + 127) << 23);
    float s2 = npu_bits_f32((uint32_t)(n2 + 127) << 23);
    float y = p * s1 * s2;
    return x != x ? x : y;
}

#if defined(__x86_64__) && defined(__GNUC__)
typedef float cpu_v16f __attribute__((vector_size(64), aligned(4)));
typedef int32_t cpu_v16i __attribute__((vector_size(64), aligned(4)));
typedef uint32_t cpu_v16u __attribute__((vector_size(64), aligned(4)));
/* cpu_expf on 16 lanes in place, for code built for AVX-512 (the direct convolution's SiLU /
 * Sigmoid epilogue): the same steps and constants, so the same float in every lane as
 * cpu_expf gives, NaN included. Through a pointer: no vector argument crosses a call ABI. */
static inline __attribute__((always_inline)) void
cpu_expf_v16(cpu_v16f *v)
{
    const cpu_v16f x = *v, magic = (cpu_v16f){0} + 12582912.0f;
    cpu_v16i lo = x<-104.0f, hi = x> 89.0f;
    cpu_v16f xc = (cpu_v16f)(((cpu_v16i)x & ~lo) | ((cpu_v16i)((cpu_v16f){0} - 104.0f) & lo));
    xc = (cpu_v16f)(((cpu_v16i)xc & ~hi) | ((cpu_v16i)((cpu_v16f){0} + 89.0f) & hi));
    cpu_v16f t = xc * 1.44269504088896341f + magic;
    cpu_v16f fn = t - magic;
    cpu_v16i n = (cpu_v16i)((cpu_v16u)t - (cpu_v16u)magic);
    cpu_v16f r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    cpu_v16f p = (cpu_v16f){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    cpu_v16i n1 = n >> 1, n2 = n - n1;
    cpu_v16f s1 = (cpu_v16f)((n1 + 127) << 23), s2 = (cpu_v16f)((n2 + 127) << 23);
    cpu_v16f y = p * s1 * s2;
    cpu_v16i nan = x != x;
    *v = (cpu_v16f)(((cpu_v16i)x & nan) | ((cpu_v16i)y & ~nan));
}
#endif

/* sigmoid from e = exp(-|x|), so that neither tail overflows or loses its relative accuracy:
 * 1 / (1 + e) for x >= 0, e / (1 + e) below (the Sigmoid kernel and the RNN gates) */
static inline float
cpu_sigmoidf(float x)
{
    float ax = x < 0 ? -x : x;
    float e = cpu_expf(-ax);
    float s = 1.0f / (1.0f + e);
    return x < 0 ? e * s : s;
}

/* tanh for float, ~2 ulp, branch-free: expm1(2|x|) / (expm1(2|x|) + 2), with expm1 from its
 * Taylor series below 0.625 (where exp(u) - 1 would cancel) and from cpu_expf above. */
static inline float
cpu_tanhf(float x)
{
    uint32_t sign = npu_f32_bits(x) & 0x80000000u;
    float ax = npu_bits_f32(npu_f32_bits(x) & 0x7fffffffu);
    float u = 2.0f * (ax < 9.0f ? ax : 9.0f); /* tanh(9) rounds to 1 */
    float p = 1.0f / 40320;
    p = p * u + 1.0f / 5040;
    p = p * u + 1.0f / 720;
    p = p * u + 1.0f / 120;
    p = p * u + 1.0f / 24;
    p = p * u + 1.0f / 6;
    p = p * u + 0.5f;
    p = p * u * u + u;
    float em1 = u < 0.625f ? p : cpu_expf(u) - 1.0f;
    float t = em1 / (em1 + 2.0f);
    return x != x ? x : npu_bits_f32(npu_f32_bits(t) | sign);
}

/* erf(z) = z P(z^2) on |z| <= 0.921875, fitted by least squares on the relative error
 * (max 1.5e-7 in fp32 evaluation) */
static inline float
cpu_erf_near(float z, float z2)
{
    float p = 1.1328495e-06f;
    p = p * z2 - 1.4166274e-05f;
    p = p * z2 + 1.1992795e-04f;
    p = p * z2 - 8.5452938e-04f;
    p = p * z2 + 5.2238912e-03f;
    p = p * z2 - 2.6866157e-02f;
    p = p * z2 + 1.1283792e-01f;
    p = p * z2 - 3.7612638e-01f;
    p = p * z2 + 1.1283792e+00f;
    return z * p;
}

/* erfc(a) for a >= 0.921875: exp(-a^2) Q(1 / (1 + a/2)), Q fitted on [0.92, 10.5] (max
 * relative error 3e-7 in fp32; the rounding of a^2 adds up to a^2 * 6e-8 far out) */
static inline float
cpu_erfc_far(float a, float a2)
{
    float t = 1.0f / (1.0f + 0.5f * a);
    float q = -6.1231133e-02f;
    q = q * t + 3.0341691e-01f;
    q = q * t - 5.3586197e-01f;
    q = q * t + 3.3949456e-01f;
    q = q * t - 7.0966832e-02f;
    q = q * t + 2.2209452e-01f;
    q = q * t + 2.3790678e-01f;
    q = q * t + 2.8319895e-01f;
    q = q * t + 2.8201628e-01f;
    q = q * t + 2.4410542e-06f;
    return cpu_expf(-a2) * q;
}

static inline float
cpu_erff(float x)
{
    float ax = npu_bits_f32(npu_f32_bits(x) & 0x7fffffffu), x2 = x * x;
    float near = cpu_erf_near(x, x2);
    float far = 1.0f - cpu_erfc_far(ax, x2);
    far = npu_bits_f32(npu_f32_bits(far) | (npu_f32_bits(x) & 0x80000000u));
    return ax <= 0.921875f ? near : far;
}

/* GELU (erf form) = 0.5 x (1 + erf(x / sqrt 2)); in the tails through erfc so that neither
 * side cancels: x (1 - erfc(z) / 2) for z > 0, x erfc(-z) / 2 for z < 0 */
static inline float
cpu_geluf(float x)
{
    float z = x * 0.70710678118654752f, z2 = z * z;
    float az = npu_bits_f32(npu_f32_bits(z) & 0x7fffffffu);
    float near = 0.5f * x * (1.0f + cpu_erf_near(z, z2));
    float ec = cpu_erfc_far(az, z2);
    float far = z > 0 ? x * (1.0f - 0.5f * ec) : 0.5f * x * ec;
    far = x < -30.0f ? -0.0f : far; /* -inf * 0 would be NaN */
    return az <= 0.921875f ? near : far;
}

/* Vector kernels over float arrays (npu-cpu-elementwise.c), in place allowed. */
void cpu_vexp(const float *x, float *y, int64_t n);
/* y = exp(x - m), returns the sum of y (summed in 8 fixed lanes, so deterministic). */
float cpu_vexp_sum(const float *x, float *y, int64_t n, float m);
float cpu_vmax(const float *x, int64_t n);
void cpu_vscale(float *x, int64_t n, float s);

/* ---- fused activations (npu_act attribute on Conv/Gemm/MatMul) ------------------------------ */

enum cpu_act {
    CPU_ACT_NONE = 0,
    CPU_ACT_RELU,
    CPU_ACT_LEAKY_RELU,
    CPU_ACT_CLIP,
    CPU_ACT_SIGMOID,
    CPU_ACT_TANH,
    CPU_ACT_GELU,
    CPU_ACT_GELU_TANH,
    CPU_ACT_SILU,
    CPU_ACT_HARD_SWISH,
    CPU_ACT_HARD_SIGMOID,
};

struct cpu_act_spec {
    enum cpu_act kind;
    float alpha, beta;
};

/* Reads npu_act / npu_act_alpha / npu_act_beta; unknown names are UNSUPPORTED. */
enum npu_status cpu_act_parse(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs,
                              struct cpu_act_spec *act);
/* Applies an activation in place over n floats. */
void cpu_act_apply(const struct cpu_act_spec *act, float *x, int64_t n);

/* ---- sliding windows (npu-cpu-pool.c), shared by Conv and the pools ------------------------ */

#define CPU_MAX_SP (NPU_MAX_DIMS - 2)
/* Bound on size-like attribute values (strides, pads, dilations, repeats...): products of two
 * such values and a dim stay far below 2^63. */
#define CPU_MAX_ATTR (INT64_C(1) << 31)

/* Geometry of a window op over `nsp` spatial dims: sizes, kernel, strides, dilations and the
 * padding at the start (pb) and end (pe) of each dim, resolved from auto_pad or pads. */
struct cpu_win {
    int nsp;
    int64_t in[CPU_MAX_SP], out[CPU_MAX_SP], k[CPU_MAX_SP];
    int64_t s[CPU_MAX_SP], d[CPU_MAX_SP], pb[CPU_MAX_SP], pe[CPU_MAX_SP];
};

/* Reads strides/dilations/pads/auto_pad; kernel sizes come from the caller (the weights or
 * kernel_shape). Computes out[] with floor (or ceil, for pools with ceil_mode) rounding. */
enum npu_status cpu_win_setup(struct npu_cpu_ctx *ctx, const struct npu_attrs *attrs, int nsp,
                              const int64_t *in_sp, const int64_t *kernel, bool ceil_mode,
                              struct cpu_win *w);
/* NPU_CPU_PROFILE_LAYERS: one call of a Conv-like step of the given path (kind, as
 * prof_conv_s) and shape, s seconds (npu-cpu-conv.c) */
void cpu_conv_prof_layer(struct npu_cpu_ctx *ctx, int kind, int64_t C, int64_t M, int64_t G,
                         const struct cpu_win *w, double s, double flop);

/* Requantises int32 accumulators to int8/uint8: saturate(rint(acc * scale) + zp). */
void cpu_requantize(const int32_t *acc, int64_t rows, int64_t cols, const float *scale,
                    bool per_col, int32_t zp, enum npu_dtype dt, void *y);
/* int16 (npu-cpu-qlinear16.c): exact sums in double -> saturate16(rint(acc * scale) + zp);
 * the int16 QLinearMatMul (A int16 [..., M, K], B int16 [K, N]). */
void cpu_requantize_i16(const double *acc, int64_t rows, int64_t cols, const float *scale,
                        bool per_col, int32_t zp, int16_t *y);
enum npu_status cpu_qlinear_matmul_i16(CPU_KERNEL_ARGS);

/* ---- GEMM (npu-cpu-gemm.c) ------------------------------------------------------------------ */

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major, single-threaded (the caller splits work).
 * beta == 0 means C is write-only (NaN in C is not propagated). */
void cpu_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* What a GEMM adds to each finished row of C while it is still in cache: C[i][j] +=
 * bias_row[i] (per row) and/or bias_col[j] (per column), then the activation (either may be
 * NULL / CPU_ACT_NONE). */
struct cpu_epilogue {
    const float *bias_row, *bias_col;
    const struct cpu_act_spec *act;
};
void cpu_sgemm_ep(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                  const struct cpu_epilogue *ep);
void cpu_dgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
               int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc);

/* Batched, threaded GEMM over `batch` independent problems with per-batch element offsets. The
 * work is cut into tiles whose sizes depend only on the shape, so any thread count gives
 * bit-identical results. Single-threaded BLAS is used per tile when available. */
struct cpu_gemm_batch {
    bool ta, tb;
    int64_t M, N, K;
    float alpha, beta;
    const float *A;
    const float *B;
    float *C;
    int64_t lda, ldb, ldc;
    const int64_t *a_off, *b_off, *c_off; /* per batch (NULL = all 0) */
    int64_t batch;
    /* epilogue on each finished C tile: C += bias (per column, or per row), then act */
    const float *bias_col; /* [N] or NULL */
    const float *bias_row; /* [M] or NULL, per batch offset none */
    const struct cpu_act_spec *act;
};
void cpu_gemm_batched(struct npu_cpu_ctx *ctx, const struct cpu_gemm_batch *g);

/* Is a real BLAS linked in? And switch its use off/on (tests, benchmarks). */
bool cpu_have_blas(void);
void cpu_gemm_use_blas(bool on);
/* Pins BLAS to one thread and stops OpenBLAS's idle server threads (once per process; every
 * CPU context calls it when it is created, before its own workers start). */
void cpu_blas_settle(void);
/* The fallback kernel's panel width: 16 (AVX2/SSE/portable) or 32 (AVX-512, if the CPU has it)
 * or 12 (aarch64: the NEON 8x12 kernel, the default there; 16 selects the portable one);
 * `want` 0 just reports. Not thread-safe against running GEMMs: tests and benchmarks only. */
int cpu_gemm_kernel_width(int want);
/* The ISA level (0 SSE, 1 AVX, 2 AVX2+FMA, 3 AVX-512) of an OpenBLAS x86-64 core name as
 * openblas_get_corename() gives it; -1 for a name not known. */
int cpu_openblas_core_level(const char *core);
/* aarch64: whether OpenBLAS's core set `core` is a misfit for a CPU whose biggest core has MIDR
 * part `big_part` (-1 unknown): its generic "armv8" fallback, or a little-core set on a CPU
 * with bigger cores. Writes the reason (either way) to why[n]. Pure: testable anywhere. */
bool cpu_openblas_arm_misfit(const char *core, int big_part, char *why, size_t n);

#endif /* NPU_CPU_INTERNAL_H */
