/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-pool-slow.c: the CPU executor's thread pool when the scheduler does
 * not give every thread its CPU (core/cpu/npu-cpu.c). A worker that the test
 * hook slows before each chunk (as a preempted or starved thread) leaves its
 * chunks to the others, and the pool marked contended (idle threads sleep
 * instead of spinning) still runs every job: Conv (direct and depthwise),
 * MatMul and Softmax on 2 and 3 threads must give the same bytes as on 1
 * thread in every case. Pixel-range jobs (cpu_parallel_for_px: each thread
 * starts on its own contiguous part, then takes the others' leftovers) run
 * every index once with a slowed worker, and the narrow 1x1 convs cut that
 * way give the 1-thread bytes on 2 and 3 threads, with the split on, off and
 * on every job; so do depthwise convs cut into a band of rows per thread. Then the pool's own
 * detection: with the caller and its worker on one CPU, a spinning worker loses that CPU to the
 * caller, and the pool must notice and stop spinning.
 */
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "../../core/cpu/npu-cpu-internal.h"
#include "cpu-test-util.h"
#include "npu-test.h"

struct op_case {
    const char *what;
    enum npu_op op;
    int nin;
    struct npu_tensor *in[3];
    struct npu_tensor *ref; /* the 1-thread output */
    struct alist al;
};

/* Frees the inputs and references of n cases. */
static void
cases_free(struct op_case *cs, int n)
{
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < cs[i].nin; k++)
            tt_free(cs[i].in[k]);
        tt_free(cs[i].ref);
    }
}

static void
check_case(struct npu_cpu_ctx *ctx, struct op_case *c, const char *mode)
{
    struct npu_tensor *y = tt_new(c->ref->dtype, c->ref->ndim, c->ref->dims);
    CHECK_EQ_INT(NPU_OK, run_op(ctx, c->op, &c->al, c->nin, c->in, 1, &y));
    if (!tt_same_bytes(c->ref, y))
        fprintf(stderr, "%s on %d threads, %s: not the 1-thread bytes\n", c->what, ctx->nthreads,
                mode);
    CHECK(tt_same_bytes(c->ref, y));
    tt_free(y);
}

/* The 1-thread references of n cases (inputs filled by the caller); then `round` on pools of
 * 2 and 3 threads; then the cases freed. */
static void
cases_on_pools(struct op_case *cs, int n,
               void (*round)(struct npu_cpu_ctx *ctx, struct op_case *cs, int n))
{
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(NPU_OK,
                     run_op(tctx1, cs[i].op, &cs[i].al, cs[i].nin, cs[i].in, 1, &cs[i].ref));
    for (int nt = 2; nt <= 3; nt++) {
        struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(nt);
        CHECK(ctx != NULL);
        if (!ctx)
            continue;
        round(ctx, cs, n);
        npu_cpu_ctx_destroy(ctx);
    }
    cases_free(cs, n);
}

/* each case with all threads well, each worker slowed in turn, the pool contended, and
 * contended with a worker slowed */
static void
slow_round(struct npu_cpu_ctx *ctx, struct op_case *cs, int n)
{
    const int nt = ctx->nthreads;
    for (int i = 0; i < n; i++) {
        check_case(ctx, &cs[i], "all threads well");
        /* worker 1 (and, on 3 threads, then worker 2) sleeps 300 us before each chunk */
        for (int tid = 1; tid < nt; tid++) {
            cpu_pool_test_slow(ctx, tid, 300);
            check_case(ctx, &cs[i], "one worker slowed");
        }
        cpu_pool_test_slow(ctx, 0, 0);
        int64_t before = cpu_pool_test_contended(ctx, false);
        CHECK(cpu_pool_test_contended(ctx, true) == before + 1);
        check_case(ctx, &cs[i], "pool contended (no spinning)");
        cpu_pool_test_slow(ctx, 1, 300);
        check_case(ctx, &cs[i], "pool contended and one worker slowed");
        cpu_pool_test_slow(ctx, 0, 0);
    }
}

static void
pool_slow_worker(void)
{
    struct op_case cs[4] = {{0}};
    /* Conv 3x3 pad 1, 32 -> 64 channels, 28x28 */
    cs[0].what = "Conv 3x3";
    cs[0].op = NPU_OP_CONV;
    cs[0].nin = 3;
    cs[0].in[0] = tt(NPU_DTYPE_FP32, 4, 1, 32, 28, 28);
    cs[0].in[1] = tt(NPU_DTYPE_FP32, 4, 64, 32, 3, 3);
    cs[0].in[2] = tt(NPU_DTYPE_FP32, 1, 64);
    al_ints(&cs[0].al, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    cs[0].ref = tt(NPU_DTYPE_FP32, 4, 1, 64, 28, 28);
    /* depthwise 3x3 stride 2, 96 channels, 56x56 */
    cs[1].what = "depthwise Conv";
    cs[1].op = NPU_OP_CONV;
    cs[1].nin = 2;
    cs[1].in[0] = tt(NPU_DTYPE_FP32, 4, 1, 96, 56, 56);
    cs[1].in[1] = tt(NPU_DTYPE_FP32, 4, 96, 1, 3, 3);
    al_ints(&cs[1].al, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    al_ints(&cs[1].al, "strides", (const int64_t[]){2, 2}, 2);
    al_int(&cs[1].al, "group", 96);
    cs[1].ref = tt(NPU_DTYPE_FP32, 4, 1, 96, 28, 28);
    /* MatMul 96x384 by 384x200 */
    cs[2].what = "MatMul";
    cs[2].op = NPU_OP_MATMUL;
    cs[2].nin = 2;
    cs[2].in[0] = tt(NPU_DTYPE_FP32, 2, 96, 384);
    cs[2].in[1] = tt(NPU_DTYPE_FP32, 2, 384, 200);
    cs[2].ref = tt(NPU_DTYPE_FP32, 2, 96, 200);
    /* Softmax over rows of 1000 */
    cs[3].what = "Softmax";
    cs[3].op = NPU_OP_SOFTMAX;
    cs[3].nin = 1;
    cs[3].in[0] = tt(NPU_DTYPE_FP32, 2, 64, 1000);
    al_int(&cs[3].al, "axis", -1);
    cs[3].ref = tt(NPU_DTYPE_FP32, 2, 64, 1000);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < cs[i].nin; k++)
            tt_fill_rand(cs[i].in[k], -1, 1);
    cases_on_pools(cs, 4, slow_round);
}

struct busy_job {
    int64_t *hits;
};

static void busy_task(void *arg, int64_t b, int64_t e, int tid);

/* cpu_parallel_for_px: every index exactly once, whichever thread is slow */
static void
pool_px_once(void)
{
    const int64_t ns[5] = {1, 2, 7, 13, 1001};
    for (int nt = 2; nt <= 3; nt++) {
        struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(nt);
        CHECK(ctx != NULL);
        if (!ctx)
            continue;
        CHECK_EQ_INT(1, ctx->affine_mode); /* on by default */
        for (int slow = 0; slow <= nt; slow++) {
            cpu_pool_test_slow(ctx, slow < nt ? slow : 0, slow < nt ? 50 : 0);
            for (int i = 0; i < 5; i++) {
                int64_t *hits = calloc((size_t)ns[i], sizeof(int64_t));
                CHECK(hits != NULL);
                if (!hits)
                    continue;
                struct busy_job j = {hits};
                cpu_parallel_for_px(ctx, ns[i], 1, busy_task, &j);
                int64_t bad = 0;
                for (int64_t k = 0; k < ns[i]; k++)
                    bad += hits[k] != 1;
                if (bad)
                    fprintf(stderr,
                            "px job of %lld on %d threads (slow %d): %lld indices not run once\n",
                            (long long)ns[i], nt, slow, (long long)bad);
                CHECK_EQ_INT(0, bad);
                free(hits);
            }
        }
        cpu_pool_test_slow(ctx, 0, 0);
        npu_cpu_ctx_destroy(ctx);
    }
}

/* each case with the pixel-range split off, on (the default) and on every job, all threads
 * well and then worker 1 slowed */
static void
px_round(struct npu_cpu_ctx *ctx, struct op_case *cs, int n)
{
    for (int mode = 0; mode <= 2; mode++) {
        ctx->affine_mode = mode;
        for (int i = 0; i < n; i++) {
            check_case(ctx, &cs[i], mode ? "pixel-range split" : "split off");
            cpu_pool_test_slow(ctx, 1, 100);
            check_case(ctx, &cs[i], "one worker slowed");
            cpu_pool_test_slow(ctx, 0, 0);
        }
    }
}

/* The 1x1 convs with few output channels (MobileNetV2's projections: panel-major, channels
 * uncut, so a pixel-range job), a plane with a ragged last panel (28x28) and one of 112x112;
 * 14x14 planes (5 panels: channels cut on 1 thread, pixels only on 2), a 13x15 one whose last
 * panel holds 3 outputs, more output channels than pixels (channels cut, channel-major on 2
 * threads or more: 14x14 and a 7x9 plane of 2 panels with an odd channel count):
 * the 1-thread bytes on 2 and 3 threads, pixel-range split on (default), off, and on every job */
static void
pool_px_narrow_1x1(void)
{
    enum { NS = 9 };
    const int64_t shapes[NS][4] = {{144, 56, 56, 24},  {96, 28, 28, 24},  {192, 28, 28, 32},
                                   {32, 112, 112, 16}, {384, 14, 14, 64}, {200, 13, 15, 40},
                                   {96, 14, 14, 17},   {64, 14, 14, 384}, {150, 7, 9, 203}};
    struct op_case cs[NS] = {{0}};
    for (int i = 0; i < NS; i++) {
        const int64_t C = shapes[i][0], H = shapes[i][1], W = shapes[i][2], M = shapes[i][3];
        cs[i].what = "narrow 1x1 Conv";
        cs[i].op = NPU_OP_CONV;
        cs[i].nin = 3;
        cs[i].in[0] = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(1), C, H, W), -1, 1);
        cs[i].in[1] = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, M, C, D(1), D(1)), -1, 1);
        cs[i].in[2] = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, M), -1, 1);
        cs[i].ref = tt(NPU_DTYPE_FP32, 4, D(1), M, H, W);
    }
    cases_on_pools(cs, NS, px_round);
}

/* Depthwise convs tall enough to be cut into a band of output rows per thread (16 rows a
 * thread or more, with the pixel-range split on): odd heights and widths, 3x3 to 7x7, stride
 * 1 and 2 with asymmetric pads, a channel multiplier, a batch of 2, fused activations in
 * registers and one applied after (silu), an odd channel count (the odd bands start halfway
 * through the channels): the 1-thread bytes on 2 and 3 threads, split on, off and on every
 * job, with and without a slowed worker. */
static void
pool_px_dw_bands(void)
{
    enum { ND = 6 };
    /* N, C, multiplier, H, W, K, stride, pad top, left, bottom, right, act */
    const struct {
        int64_t N, C, mult, H, W, K, s, pt, pl, pb, pr;
        const char *act;
    } dc[ND] = {
        {1, 32, 1, 112, 112, 3, 1, 1, 1, 1, 1, "clip"},
        {1, 5, 1, 65, 37, 5, 2, 2, 1, 1, 2, "hard_swish"},
        {2, 7, 2, 33, 50, 3, 1, 1, 1, 1, 1, NULL},
        {1, 3, 1, 97, 20, 7, 1, 3, 3, 3, 3, "relu"},
        {1, 9, 1, 34, 9, 3, 1, 0, 1, 2, 1, "silu"},
        {1, 4, 1, 131, 33, 5, 2, 2, 2, 2, 2, "hard_sigmoid"},
    };
    struct op_case cs[ND] = {{0}};
    int64_t st[ND][2], pads[ND][4];
    for (int i = 0; i < ND; i++) {
        const int64_t M = dc[i].C * dc[i].mult;
        const int64_t OH = (dc[i].H + dc[i].pt + dc[i].pb - dc[i].K) / dc[i].s + 1;
        const int64_t OW = (dc[i].W + dc[i].pl + dc[i].pr - dc[i].K) / dc[i].s + 1;
        cs[i].what = "depthwise Conv in row bands";
        cs[i].op = NPU_OP_CONV;
        cs[i].nin = 3;
        cs[i].in[0] =
            tt_fill_rand(tt(NPU_DTYPE_FP32, 4, dc[i].N, dc[i].C, dc[i].H, dc[i].W), -1, 1);
        cs[i].in[1] = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, M, D(1), dc[i].K, dc[i].K), -1, 1);
        cs[i].in[2] = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, M), -1, 1);
        cs[i].ref = tt(NPU_DTYPE_FP32, 4, dc[i].N, M, OH, OW);
        st[i][0] = st[i][1] = dc[i].s;
        pads[i][0] = dc[i].pt;
        pads[i][1] = dc[i].pl;
        pads[i][2] = dc[i].pb;
        pads[i][3] = dc[i].pr;
        al_ints(&cs[i].al, "strides", st[i], 2);
        al_ints(&cs[i].al, "pads", pads[i], 4);
        al_int(&cs[i].al, "group", dc[i].C);
        if (dc[i].act)
            al_str(&cs[i].al, "npu_act", dc[i].act);
        if (dc[i].act && !strcmp(dc[i].act, "clip")) {
            al_float(&cs[i].al, "npu_act_alpha", 0.0f);
            al_float(&cs[i].al, "npu_act_beta", 0.5f);
        }
    }
    cases_on_pools(cs, ND, px_round);
}

static void
busy_task(void *arg, int64_t b, int64_t e, int tid)
{
    (void)tid;
    struct busy_job *j = arg;
    for (int64_t i = b; i < e; i++) {
        volatile double x = 1.0;
        for (int k = 0; k < 2000; k++)
            x = x * 1.0000001 + 1e-9;
        __atomic_add_fetch(&j->hits[i], 1, __ATOMIC_RELAXED);
    }
}

/* The caller and a spinning worker on one CPU: the worker cannot see a job until the caller
 * has had that CPU, so it must find itself off the CPU (or late) and stop the spinning. */
static void
pool_detects_contention(void)
{
    cpu_set_t old, one;
    if (sched_getaffinity(0, sizeof(old), &old)) {
        printf("test-cpu-pool-slow: no sched_getaffinity, contention check skipped\n");
        return;
    }
    int cpu = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
        if (CPU_ISSET(c, &old))
            cpu = c;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    /* the ordinary time-sharing policy (run under chrt -f, a real-time caller would never
     * let its worker run until it sleeps) */
    struct sched_param sp = {0};
    sched_setscheduler(0, SCHED_OTHER, &sp);
    if (cpu < 0 || sched_setaffinity(0, sizeof(one), &one)) {
        printf("test-cpu-pool-slow: cannot pin to one CPU, contention check skipped\n");
        return;
    }
    setenv("NPU_CPU_SPIN_US", "2000", 1);
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(2); /* its worker inherits the one CPU */
    unsetenv("NPU_CPU_SPIN_US");
    CHECK(ctx != NULL);
    if (ctx) {
        enum { N = 64, JOBS = 400 };
        int64_t hits[N];
        int wrong = 0;
        for (int k = 0; k < JOBS; k++) {
            memset(hits, 0, sizeof(hits));
            struct busy_job j = {hits};
            cpu_parallel_for(ctx, N, 1, busy_task, &j);
            for (int i = 0; i < N; i++)
                wrong += hits[i] != 1;
        }
        CHECK_EQ_INT(0, wrong);
        /* a caller that never left the CPU (a real-time policy) lets the worker check now */
        usleep(5000);
        int64_t stops = cpu_pool_test_contended(ctx, false);
        if (stops < 1)
            fprintf(stderr, "two threads on one CPU: the pool never stopped spinning\n");
        CHECK(stops >= 1);
        npu_cpu_ctx_destroy(ctx);
    }
    CHECK_EQ_INT(0, sched_setaffinity(0, sizeof(old), &old));
}

/* A back-off always stops spinning for a while, whatever length the last one recorded: the
 * state a thread can leave on a weakly ordered CPU (a new spin_off_until read with the
 * initial length 0, npu-cpu.c's spin_back_off) must not make every later stop 0 ns long. */
static void
pool_backoff_floor(void)
{
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(2);
    CHECK(ctx != NULL);
    if (!ctx)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const int64_t t0 = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    __atomic_store_n(&ctx->spin_backoff_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ctx->spin_off_until, t0, __ATOMIC_RELAXED);
    for (int k = 0; k < 3; k++) {
        int64_t before = cpu_pool_test_contended(ctx, false);
        CHECK(cpu_pool_test_contended(ctx, true) == before + 1);
        int64_t len = __atomic_load_n(&ctx->spin_backoff_ns, __ATOMIC_RELAXED);
        int64_t until = __atomic_load_n(&ctx->spin_off_until, __ATOMIC_RELAXED);
        if (len <= 0 || until <= t0)
            fprintf(stderr, "back-off %d after a 0 ns one: %lld ns, until %+lld ns\n", k,
                    (long long)len, (long long)(until - t0));
        CHECK(len > 0);
        CHECK(until > t0);
    }
    npu_cpu_ctx_destroy(ctx);
}

int
main(void)
{
    unsetenv("NPU_CPU_SPIN_ADAPT");
    unsetenv("NPU_CPU_SPIN_US");
    tctx_init();
    unsetenv("NPU_CPU_AFFINE");
    pool_slow_worker();
    pool_px_once();
    pool_px_narrow_1x1();
    pool_px_dw_bands();
    pool_detects_contention();
    pool_backoff_floor();
    tctx_fini();
    return npu_test_done("test-cpu-pool-slow");
}
