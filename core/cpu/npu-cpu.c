/* SPDX-License-Identifier: MIT */
/*
 * npu-cpu.c: the CPU executor's front door. It owns the context (a small
 * persistent pthread pool plus per-thread scratch), the dispatch table
 * indexed by enum npu_op, and the checks every kernel relies on: operand
 * counts, required operands present, tensors well formed. fp16 is computed
 * in fp32 for the ops flagged CPU_F16: their fp16 operands are widened into
 * temporaries and their fp16 results rounded back to nearest even.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "npu-cpu-conv-direct.h"
#include "npu-cpu-internal.h"

/* NPU_CPU_PROFILE=cpu: the calling thread's CPU time instead of wall time (on a loaded
 * machine, the work of a 1-thread run without the time other processes had the core) */
static int prof_clock = CLOCK_MONOTONIC;

/* ---- thread pool ---------------------------------------------------------------------------- */

/* Runs chunks of the current job until none is left; returns how many this thread ran. */
static int64_t
run_chunks(struct npu_cpu_ctx *ctx, int tid)
{
    int64_t k = 0;
    if (ctx->affine) {
        const int T = ctx->nthreads;
        for (int i = 0; i < T; i++) {
            int p = (tid + i) % T;
            int64_t lo = ctx->n * p / T, hi = ctx->n * (p + 1) / T;
            for (;; k++) {
                int64_t b =
                    lo + __atomic_fetch_add(&ctx->part_next[p * 8], ctx->chunk, __ATOMIC_RELAXED);
                if (b >= hi)
                    break;
                int64_t e = b + ctx->chunk < hi ? b + ctx->chunk : hi;
                if (ctx->test_slow_ns && tid == ctx->test_slow_tid) {
                    struct timespec ts = {0, (long)ctx->test_slow_ns};
                    nanosleep(&ts, NULL);
                }
                ctx->fn(ctx->arg, b, e, tid);
            }
        }
        return k;
    }
    for (;; k++) {
        int64_t b = __atomic_fetch_add(&ctx->next, ctx->chunk, __ATOMIC_RELAXED);
        if (b >= ctx->n)
            break;
        int64_t e = b + ctx->chunk < ctx->n ? b + ctx->chunk : ctx->n;
        if (ctx->test_slow_ns && tid == ctx->test_slow_tid) {
            struct timespec ts = {0, (long)ctx->test_slow_ns};
            nanosleep(&ts, NULL);
        }
        ctx->fn(ctx->arg, b, e, tid);
    }
    return k;
}

struct worker_arg {
    struct npu_cpu_ctx *ctx;
    int tid;
};

/* How long an idle thread spins before it sleeps on a condition variable: a worker after a job
 * (the next op's job usually comes within microseconds, and waking a sleeping thread costs a
 * futex call plus the scheduler's wake-up latency, 10 to 60 us on this host, more than a small
 * op's whole run), and the caller waiting for the workers still in a job (so their last chunk
 * does not add a second wake-up). NPU_CPU_SPIN_US overrides it (0: always sleep). */
#define CPU_SPIN_US_DEFAULT 200

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spinning pays only while every spinning thread has a CPU of its own. When the machine has
 * more runnable threads than CPUs (another process, or a third thread of ours), a spinning
 * thread uses up its share of the CPU doing nothing: the scheduler then runs the others in its
 * place, a worker that spun comes back to a job milliseconds late (measured: 2 to 4 ms mean on
 * MobileNetV2 with a build running beside it, against 0.1 ms for a sleeping worker, which the
 * scheduler wakes at once), and a spinning worker can keep the caller, which would publish the
 * next job, off a CPU they share. So a spinning thread that finds it has lost its CPU to
 * another thread marks the pool contended, and for a while nobody spins (spin_back_off: 5 ms,
 * growing to 80 ms while it keeps happening): idle threads sleep at once; the first spin after
 * that probes again. Losing the CPU shows as two checks of the clock more than SPIN_GAP_NS
 * apart (64 pauses take about a microsecond) or, for a worker, a job seen SPIN_LATE_NS after it
 * was published; it counts only if the thread's involuntary context switches grew meanwhile
 * (getrusage), since a gap without one (the vCPU paused by the hypervisor, a long interrupt)
 * is not another thread of this machine, and sleeping would not help against it. After
 * SPIN_YIELD_NS a spin also yields the CPU in each check. NPU_CPU_SPIN_ADAPT=0 turns the
 * detection off. */
#define SPIN_YIELD_NS 20000
#define SPIN_GAP_NS 30000
#define SPIN_LATE_NS 30000
#define SPIN_BACKOFF_MIN_NS 5000000
#define SPIN_BACKOFF_MAX_NS 80000000

/* The calling thread's involuntary context switches so far (-1 if unknown). */
static long
thread_preemptions(void)
{
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        return ru.ru_nivcsw;
#endif
    return -1;
}

static bool
spin_allowed(struct npu_cpu_ctx *ctx, int64_t now)
{
    return ctx->spin_ns > 0 && now >= __atomic_load_n(&ctx->spin_off_until, __ATOMIC_RELAXED);
}

/* Stops spinning for a while: SPIN_BACKOFF_MIN_NS after an isolated event (a kernel thread
 * that ran for a moment), twice the last pause, up to SPIN_BACKOFF_MAX_NS, when the previous
 * one ended less than SPIN_BACKOFF_MAX_NS ago (a machine that stays loaded). Two threads
 * racing here only blur the pause length; the floor keeps it from collapsing (relaxed loads
 * on a weakly ordered CPU can pair a new spin_off_until with the initial length 0, and twice
 * 0 would stay 0 while the events keep coming, spinning never stopped). */
static void
spin_back_off(struct npu_cpu_ctx *ctx, int64_t now)
{
    int64_t off = __atomic_load_n(&ctx->spin_off_until, __ATOMIC_RELAXED);
    int64_t len = __atomic_load_n(&ctx->spin_backoff_ns, __ATOMIC_RELAXED);
    len = off > 0 && now - off < SPIN_BACKOFF_MAX_NS ? NPU_MIN(2 * len, SPIN_BACKOFF_MAX_NS)
                                                     : SPIN_BACKOFF_MIN_NS;
    len = NPU_MAX(len, SPIN_BACKOFF_MIN_NS);
    __atomic_store_n(&ctx->spin_backoff_ns, len, __ATOMIC_RELAXED);
    __atomic_store_n(&ctx->spin_off_until, now + len, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ctx->spin_backoffs, 1, __ATOMIC_RELAXED);
}

/* Marks the pool contended if this thread was preempted since it counted `cs0`; returns
 * whether it did. */
static bool
spin_contended(struct npu_cpu_ctx *ctx, long cs0)
{
    if (!ctx->spin_adapt || cs0 < 0 || thread_preemptions() == cs0)
        return false;
    spin_back_off(ctx, now_ns());
    return true;
}

struct spin {
    int64_t t0, last;
    long cs0; /* involuntary context switches at the start */
};

static bool
spin_start(struct npu_cpu_ctx *ctx, struct spin *sp)
{
    sp->t0 = sp->last = now_ns();
    if (!spin_allowed(ctx, sp->t0))
        return false;
    sp->cs0 = ctx->spin_adapt ? thread_preemptions() : -1;
    return true;
}

/* Every 64 pauses: true when the spin is over (its time is up, or its thread lost the CPU). */
static bool
spin_check(struct npu_cpu_ctx *ctx, struct spin *sp)
{
    int64_t t = now_ns();
    if (t - sp->last > SPIN_GAP_NS && spin_contended(ctx, sp->cs0))
        return true;
    sp->last = t;
    if (t - sp->t0 > ctx->spin_ns)
        return true;
    if (t - sp->t0 > SPIN_YIELD_NS)
        sched_yield();
    return false;
}

/* Spins until *p != v (returns true) or the spin is over (false). */
static bool
spin_until_change_u64(struct npu_cpu_ctx *ctx, const uint64_t *p, uint64_t v, struct spin *sp)
{
    if (!spin_start(ctx, sp))
        return false;
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v ||
            __atomic_load_n(&ctx->quit, __ATOMIC_RELAXED))
            return true;
        cpu_relax();
        if ((i & 63) == 0 && spin_check(ctx, sp))
            return false;
    }
}

static bool
spin_until_zero(struct npu_cpu_ctx *ctx, const int *p)
{
    struct spin sp;
    if (!spin_start(ctx, &sp))
        return false;
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == 0)
            return true;
        cpu_relax();
        if ((i & 63) == 0 && spin_check(ctx, &sp))
            return false;
    }
}

/* A worker joins a job only if it wakes before the job is closed; the caller waits for the
 * workers that joined, not for every worker to wake up (which, on a loaded machine, can take
 * a whole scheduler slice). */
static void *
worker_main(void *p)
{
    struct worker_arg wa = *(struct worker_arg *)p;
    struct npu_cpu_ctx *ctx = wa.ctx;
    free(p);
    uint64_t seen = 0;
    pthread_mutex_lock(&ctx->lock);
    for (;;) {
        bool spun = false;
        struct spin sp;
        if (!ctx->quit && ctx->generation == seen) {
            pthread_mutex_unlock(&ctx->lock);
            spun = spin_until_change_u64(ctx, &ctx->generation, seen, &sp);
            pthread_mutex_lock(&ctx->lock);
        }
        while (!ctx->quit && ctx->generation == seen)
            pthread_cond_wait(&ctx->start_cv, &ctx->lock);
        if (ctx->quit)
            break;
        seen = ctx->generation;
        if (spun && now_ns() - ctx->pub_ns > SPIN_LATE_NS)
            spin_contended(ctx, sp.cs0); /* spinning, yet late: off the CPU? */
        if (ctx->closed)
            continue; /* woke too late: the caller has finished this job without us */
        __atomic_add_fetch(&ctx->busy, 1, __ATOMIC_RELAXED);
        if (ctx->prof) {
            ctx->prof_pool.joined++;
            ctx->prof_pool.join_s += (now_ns() - ctx->pub_ns) * 1e-9;
        }
        pthread_mutex_unlock(&ctx->lock);
        run_chunks(ctx, wa.tid);
        pthread_mutex_lock(&ctx->lock);
        if (__atomic_sub_fetch(&ctx->busy, 1, __ATOMIC_RELEASE) == 0 && ctx->closed)
            pthread_cond_signal(&ctx->done_cv);
    }
    pthread_mutex_unlock(&ctx->lock);
    return NULL;
}

static void
pool_run(struct npu_cpu_ctx *ctx, int64_t n, int64_t grain, cpu_par_fn fn, void *arg, bool px)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    if (ctx->nworkers == 0 || n <= grain) {
        fn(arg, 0, n, 0);
        return;
    }
    /* about four chunks per thread balances uneven chunks without much queue traffic */
    int64_t chunk = NPU_DIV_ROUND_UP(n, (int64_t)ctx->nthreads * 4);
    if (chunk < grain)
        chunk = grain;
    double t0 = ctx->prof ? now_ns() * 1e-9 : 0;
    pthread_mutex_lock(&ctx->lock);
    ctx->fn = fn;
    ctx->arg = arg;
    ctx->n = n;
    ctx->chunk = chunk;
    __atomic_store_n(&ctx->next, 0, __ATOMIC_RELAXED);
    ctx->affine = ctx->affine_mode == 2 || (px && ctx->affine_mode == 1);
    if (ctx->affine)
        for (int p = 0; p < ctx->nthreads; p++)
            __atomic_store_n(&ctx->part_next[p * 8], 0, __ATOMIC_RELAXED);
    ctx->busy = 0;
    ctx->closed = false;
    ctx->pub_ns = now_ns();
    __atomic_store_n(&ctx->generation, ctx->generation + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&ctx->start_cv);
    pthread_mutex_unlock(&ctx->lock);

    int64_t mine = run_chunks(ctx, 0);
    double t1 = ctx->prof ? now_ns() * 1e-9 : 0;

    /* every chunk is taken; wait for the workers still inside one (spinning first) */
    pthread_mutex_lock(&ctx->lock);
    ctx->closed = true;
    if (ctx->busy > 0) {
        pthread_mutex_unlock(&ctx->lock);
        spin_until_zero(ctx, &ctx->busy);
        pthread_mutex_lock(&ctx->lock);
    }
    while (ctx->busy > 0)
        pthread_cond_wait(&ctx->done_cv, &ctx->lock);
    pthread_mutex_unlock(&ctx->lock);
    if (ctx->prof) {
        struct cpu_prof_pool *pp = &ctx->prof_pool;
        double t2 = now_ns() * 1e-9, w = t2 - t1;
        pp->jobs++;
        pp->chunks += NPU_DIV_ROUND_UP(n, chunk);
        pp->caller_chunks += mine;
        pp->job_s += t2 - t0;
        pp->wait_s += w;
        pp->wait_max_s = w > pp->wait_max_s ? w : pp->wait_max_s;
        pp->waits_50us += w > 50e-6;
        pp->waits_1ms += w > 1e-3;
    }
}

void
cpu_parallel_for(struct npu_cpu_ctx *ctx, int64_t n, int64_t grain, cpu_par_fn fn, void *arg)
{
    pool_run(ctx, n, grain, fn, arg, false);
}

void
cpu_parallel_for_px(struct npu_cpu_ctx *ctx, int64_t n, int64_t grain, cpu_par_fn fn, void *arg)
{
    pool_run(ctx, n, grain, fn, arg, true);
}

void
cpu_pool_test_slow(struct npu_cpu_ctx *ctx, int tid, int64_t us)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->test_slow_tid = tid;
    ctx->test_slow_ns = us > 0 ? (us < 999999 ? us : 999999) * 1000 : 0;
    pthread_mutex_unlock(&ctx->lock);
}

int64_t
cpu_pool_test_contended(struct npu_cpu_ctx *ctx, bool mark)
{
    if (mark && ctx->spin_adapt)
        spin_back_off(ctx, now_ns());
    return __atomic_load_n(&ctx->spin_backoffs, __ATOMIC_RELAXED);
}

enum npu_status
cpu_scratch_reserve(struct npu_cpu_ctx *ctx, size_t bytes)
{
    bytes = NPU_ALIGN(bytes ? bytes : 1, (size_t)64);
    for (int t = 0; t < ctx->nthreads; t++) {
        if (ctx->scratch[t].size >= bytes)
            continue;
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes))
            return cpu_fail(ctx, NPU_ERR_NOMEM, "cannot allocate %zu bytes of scratch", bytes);
        free(ctx->scratch[t].p);
        ctx->scratch[t].p = p;
        ctx->scratch[t].size = bytes;
    }
    return NPU_OK;
}

struct npu_cpu_ctx *
npu_cpu_ctx_create(int nthreads)
{
    if (nthreads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = n > 0 ? (int)n : 1;
    }
    if (nthreads > 256)
        nthreads = 256;
    struct npu_cpu_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        npu_err(CPU_LOG_DOMAIN, "out of memory creating the CPU context");
        return NULL;
    }
    ctx->nthreads = nthreads;
    ctx->cur_op = NPU_OP_NONE;
    cpu_blas_settle();
    const char *spin = getenv("NPU_CPU_SPIN_US");
    long spin_us = spin && *spin ? strtol(spin, NULL, 10) : CPU_SPIN_US_DEFAULT;
    ctx->spin_ns = (spin_us < 0 ? 0 : spin_us > 100000 ? 100000 : spin_us) * (int64_t)1000;
    const char *adapt = getenv("NPU_CPU_SPIN_ADAPT");
    ctx->spin_adapt = !(adapt && !strcmp(adapt, "0"));
    const char *aff = getenv("NPU_CPU_AFFINE");
    ctx->affine_mode = aff && *aff ? (int)strtol(aff, NULL, 10) : 1;
    if (ctx->nthreads > CPU_AFFINE_MAX)
        ctx->affine_mode = 0;
    const char *prof = getenv("NPU_CPU_PROFILE");
    if (prof && *prof && strcmp(prof, "0")) {
        ctx->prof_s = calloc(NPU_OP_COUNT, sizeof(double));
        ctx->prof_n = calloc(NPU_OP_COUNT, sizeof(int64_t));
        ctx->prof = ctx->prof_s && ctx->prof_n;
        if (!strcmp(prof, "cpu"))
            prof_clock = CLOCK_THREAD_CPUTIME_ID;
        const char *pl = getenv("NPU_CPU_PROFILE_LAYERS");
        ctx->prof_cap_layers = pl && *pl && strcmp(pl, "0") ? 512 : 0;
    }
    if (pthread_mutex_init(&ctx->lock, NULL))
        goto err_free;
    if (pthread_mutex_init(&ctx->run_lock, NULL))
        goto err_lock;
    if (pthread_cond_init(&ctx->start_cv, NULL))
        goto err_run_lock;
    if (pthread_cond_init(&ctx->done_cv, NULL))
        goto err_start_cv;
    ctx->scratch = calloc((size_t)nthreads, sizeof(*ctx->scratch));
    if (!ctx->scratch)
        goto err_done_cv;
    if (nthreads > 1) {
        ctx->workers = calloc((size_t)nthreads - 1, sizeof(pthread_t));
        if (!ctx->workers)
            goto err_scratch;
    }
    for (int t = 1; t < nthreads; t++) {
        struct worker_arg *wa = malloc(sizeof(*wa));
        if (!wa)
            break;
        wa->ctx = ctx;
        wa->tid = t;
        if (pthread_create(&ctx->workers[t - 1], NULL, worker_main, wa)) {
            free(wa);
            break;
        }
        ctx->nworkers++;
    }
    if (ctx->nworkers < nthreads - 1) {
        npu_warn(CPU_LOG_DOMAIN, "started only %d of %d CPU worker threads", ctx->nworkers + 1,
                 nthreads);
        ctx->nthreads = ctx->nworkers + 1;
    }
    return ctx;

err_scratch:
    free(ctx->scratch);
err_done_cv:
    pthread_cond_destroy(&ctx->done_cv);
err_start_cv:
    pthread_cond_destroy(&ctx->start_cv);
err_run_lock:
    pthread_mutex_destroy(&ctx->run_lock);
err_lock:
    pthread_mutex_destroy(&ctx->lock);
err_free:
    free(ctx->prof_s);
    free(ctx->prof_n);
    free(ctx);
    npu_err(CPU_LOG_DOMAIN, "cannot create the CPU context");
    return NULL;
}

double
cpu_now(void)
{
    struct timespec ts;
    clock_gettime(prof_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The NPU_CPU_PROFILE table: ops by total time, largest first. */
static void
prof_print(const struct npu_cpu_ctx *ctx)
{
    double total = 0;
    for (int op = 0; op < NPU_OP_COUNT; op++)
        total += ctx->prof_s[op];
    if (total <= 0)
        return;
    fprintf(stderr, "cpu profile (%d thread(s), %s): %.3f ms in kernels\n", ctx->nthreads,
            prof_clock == CLOCK_MONOTONIC ? "wall time" : "CPU time of the calling thread",
            total * 1e3);
    bool done[NPU_OP_COUNT] = {false};
    for (;;) {
        int best = -1;
        for (int op = 0; op < NPU_OP_COUNT; op++)
            if (!done[op] && ctx->prof_n[op] && (best < 0 || ctx->prof_s[op] > ctx->prof_s[best]))
                best = op;
        if (best < 0)
            break;
        done[best] = true;
        fprintf(stderr, "  %-24s %10.3f ms %5.1f %% %8lld calls\n", npu_op_name((enum npu_op)best),
                ctx->prof_s[best] * 1e3, 100.0 * ctx->prof_s[best] / total,
                (long long)ctx->prof_n[best]);
    }
    static const char *const conv_kind[6] = {"depthwise",          "1x1 direct",
                                             "im2col + GEMM",      "direct (packed)",
                                             "small-channel stem", "1x1 + depthwise, banded"};
    for (int k = 0; k < 6; k++)
        if (ctx->prof_conv_n[k])
            fprintf(stderr, "  Conv, %-18s %10.3f ms %5.1f %% %8lld calls %7.1f GFLOP/s\n",
                    conv_kind[k], ctx->prof_conv_s[k] * 1e3, 100.0 * ctx->prof_conv_s[k] / total,
                    (long long)ctx->prof_conv_n[k],
                    ctx->prof_conv_flop[k] / ctx->prof_conv_s[k] * 1e-9);
    const struct cpu_prof_pool *pp = &ctx->prof_pool;
    if (pp->jobs)
        fprintf(stderr,
                "  pool: %lld jobs, %.3f ms, workers joined %lld times, ran %lld of %lld chunks;"
                " caller waited %.3f ms after its last chunk (max %.3f ms, %lld waits > 50 us,"
                " %lld > 1 ms); mean join latency %.1f us; spinning stopped %lld times\n",
                (long long)pp->jobs, pp->job_s * 1e3, (long long)pp->joined,
                (long long)(pp->chunks - pp->caller_chunks), (long long)pp->chunks,
                pp->wait_s * 1e3, pp->wait_max_s * 1e3, (long long)pp->waits_50us,
                (long long)pp->waits_1ms, pp->joined ? pp->join_s / pp->joined * 1e6 : 0.0,
                (long long)__atomic_load_n(&ctx->spin_backoffs, __ATOMIC_RELAXED));
    if (ctx->prof_nlayers)
        fprintf(stderr,
                "  fp32 Conv by shape (NPU_CPU_PROFILE_LAYERS), in order of first call:\n"
                "  %-5s %5s %9s %5s %5s %5s %3s %9s %8s %10s %10s %7s\n",
                "path", "C", "HxW", "M", "G", "k", "s", "OHxOW", "calls", "us/call", "min us",
                "GFLOP/s");
    for (int i = 0; i < ctx->prof_nlayers; i++) {
        const struct cpu_prof_layer *l = &ctx->prof_layers[i];
        static const char *const kn[6] = {"dw", "1x1", "gemm", "dir", "stem", "pw+dw"};
        char hw[32], ohw[32], k[16];
        snprintf(hw, sizeof(hw), "%lldx%lld", (long long)l->H, (long long)l->W);
        snprintf(ohw, sizeof(ohw), "%lldx%lld", (long long)l->OH, (long long)l->OW);
        snprintf(k, sizeof(k), "%lldx%lld", (long long)l->kh, (long long)l->kw);
        fprintf(stderr, "  %-5s %5lld %9s %5lld %5lld %5s %3lld %9s %8lld %10.2f %10.2f %7.1f\n",
                kn[l->kind], (long long)l->C, hw, (long long)l->M, (long long)l->G, k,
                (long long)l->sh, ohw, (long long)l->n, l->s / (double)l->n * 1e6, l->smin * 1e6,
                l->flop / l->s * 1e-9);
    }
}

void
npu_cpu_ctx_destroy(struct npu_cpu_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->prof)
        prof_print(ctx);
    free(ctx->prof_s);
    free(ctx->prof_n);
    free(ctx->prof_layers);
    pthread_mutex_lock(&ctx->lock);
    __atomic_store_n(&ctx->quit, true, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&ctx->start_cv);
    pthread_mutex_unlock(&ctx->lock);
    for (int t = 0; t < ctx->nworkers; t++)
        pthread_join(ctx->workers[t], NULL);
    for (int t = 0; t < ctx->nthreads; t++)
        free(ctx->scratch[t].p);
    free(ctx->scratch);
    free(ctx->conv_buf);
    free(ctx->workers);
    pthread_cond_destroy(&ctx->done_cv);
    pthread_cond_destroy(&ctx->start_cv);
    pthread_mutex_destroy(&ctx->run_lock);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

int
npu_cpu_ctx_threads(const struct npu_cpu_ctx *ctx)
{
    return ctx ? ctx->nthreads : 0;
}

/* ---- shared helpers ------------------------------------------------------------------------- */

enum npu_status
cpu_fail(struct npu_cpu_ctx *ctx, enum npu_status st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    npu_log(NPU_LOG_ERROR, CPU_LOG_DOMAIN, "%s: %s", npu_op_name(ctx ? ctx->cur_op : NPU_OP_NONE),
            msg);
    return st;
}

const char *
cpu_dims_str(const struct npu_tensor *t, char *buf, size_t len)
{
    size_t off = 0;
    off += (size_t)snprintf(buf + off, len - off, "[");
    for (int i = 0; i < t->ndim && off < len; i++)
        off +=
            (size_t)snprintf(buf + off, len - off, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (off < len)
        snprintf(buf + off, len - off, "]");
    return buf;
}

enum npu_status
cpu_axis(struct npu_cpu_ctx *ctx, int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= (int64_t)rank)
        return KINVAL("axis %lld out of range for rank %d", (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return NPU_OK;
}

enum npu_status
cpu_check_out(struct npu_cpu_ctx *ctx, const struct npu_tensor *o, enum npu_dtype dt, int ndim,
              const int64_t *dims)
{
    if (o->dtype != dt)
        return KINVAL("output dtype is %s, expected %s", npu_dtype_name(o->dtype),
                      npu_dtype_name(dt));
    bool ok = o->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = o->dims[i] == dims[i];
    if (!ok) {
        char a[160], b[160];
        struct npu_tensor e = {.ndim = ndim};
        for (int i = 0; i < ndim; i++)
            e.dims[i] = dims[i];
        return KINVAL("output shape %s, expected %s", cpu_dims_str(o, a, sizeof(a)),
                      cpu_dims_str(&e, b, sizeof(b)));
    }
    return NPU_OK;
}

enum npu_status
cpu_read_ints(struct npu_cpu_ctx *ctx, const struct npu_tensor *t, const char *what, int64_t *v,
              int max, int *n)
{
    if (t->dtype != NPU_DTYPE_INT64 && t->dtype != NPU_DTYPE_INT32)
        return KINVAL("%s must be int32 or int64, not %s", what, npu_dtype_name(t->dtype));
    if (t->ndim > 1)
        return KINVAL("%s must be 1-D", what);
    int64_t cnt = cpu_numel(t);
    if (cnt > max)
        return KINVAL("%s has %lld entries, at most %d allowed", what, (long long)cnt, max);
    for (int64_t i = 0; i < cnt; i++)
        v[i] = t->dtype == NPU_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                           : ((const int32_t *)t->data)[i];
    *n = (int)cnt;
    return NPU_OK;
}

/* ---- dispatch ------------------------------------------------------------------------------- */

enum {
    CPU_F16 = 1u << 0,     /* fp16 operands are computed in fp32 around the kernel */
    CPU_OPT_OUT = 1u << 1, /* every output may be absent (NULL), e.g. LSTM's Y */
};

#define CPU_VAR 255 /* variadic */

struct cpu_entry {
    cpu_kernel_fn fn;
    uint8_t min_in, max_in, min_out, max_out;
    uint32_t flags;
};

static const struct cpu_entry cpu_table[NPU_OP_COUNT] = {
    /* elementwise binary */
    [NPU_OP_ADD] = {cpu_k_add, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_SUB] = {cpu_k_sub, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_MUL] = {cpu_k_mul, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_DIV] = {cpu_k_div, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_POW] = {cpu_k_pow, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_MAX] = {cpu_k_max, 1, CPU_VAR, 1, 1, CPU_F16},
    [NPU_OP_MIN] = {cpu_k_min, 1, CPU_VAR, 1, 1, CPU_F16},
    [NPU_OP_MOD] = {cpu_k_mod, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_SUM] = {cpu_k_sum, 1, CPU_VAR, 1, 1, CPU_F16},
    [NPU_OP_MEAN] = {cpu_k_mean, 1, CPU_VAR, 1, 1, CPU_F16},
    [NPU_OP_EQUAL] = {cpu_k_equal, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_LESS] = {cpu_k_less, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_GREATER] = {cpu_k_greater, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_LESS_OR_EQUAL] = {cpu_k_less_equal, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_GREATER_OR_EQUAL] = {cpu_k_greater_equal, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_AND] = {cpu_k_and, 2, 2, 1, 1, 0},
    [NPU_OP_OR] = {cpu_k_or, 2, 2, 1, 1, 0},
    [NPU_OP_XOR] = {cpu_k_xor, 2, 2, 1, 1, 0},
    [NPU_OP_WHERE] = {cpu_k_where, 3, 3, 1, 1, 0},
    [NPU_OP_PRELU] = {cpu_k_prelu, 2, 2, 1, 1, CPU_F16},
    /* elementwise unary */
    [NPU_OP_SQRT] = {cpu_k_sqrt, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_EXP] = {cpu_k_exp, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_LOG] = {cpu_k_log, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_ABS] = {cpu_k_abs, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_NEG] = {cpu_k_neg, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_RECIPROCAL] = {cpu_k_reciprocal, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_RELU] = {cpu_k_relu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_LEAKY_RELU] = {cpu_k_leaky_relu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_SIGMOID] = {cpu_k_sigmoid, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_TANH] = {cpu_k_tanh, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_HARD_SIGMOID] = {cpu_k_hard_sigmoid, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_HARD_SWISH] = {cpu_k_hard_swish, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_ELU] = {cpu_k_elu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_SELU] = {cpu_k_selu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_GELU] = {cpu_k_gelu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_SOFTPLUS] = {cpu_k_softplus, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_CLIP] = {cpu_k_clip, 1, 3, 1, 1, CPU_F16},
    [NPU_OP_ERF] = {cpu_k_erf, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_NOT] = {cpu_k_not, 1, 1, 1, 1, 0},
    [NPU_OP_CAST] = {cpu_k_cast, 1, 1, 1, 1, 0},
    [NPU_OP_CAST_LIKE] = {cpu_k_cast_like, 2, 2, 1, 1, 0},
    [NPU_OP_FLOOR] = {cpu_k_floor, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_CEIL] = {cpu_k_ceil, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_ROUND] = {cpu_k_round, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_SIGN] = {cpu_k_sign, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_SIN] = {cpu_k_sin, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_COS] = {cpu_k_cos, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_IDENTITY] = {cpu_k_copy, 1, 1, 1, 1, 0},
    [NPU_OP_DROPOUT] = {cpu_k_dropout, 1, 3, 1, 2, 0},
    /* linear algebra and convolution */
    [NPU_OP_MATMUL] = {cpu_k_matmul, 2, 3, 1, 1, CPU_F16},
    [NPU_OP_GEMM] = {cpu_k_gemm, 2, 3, 1, 1, CPU_F16},
    [NPU_OP_CONV] = {cpu_k_conv, 2, 4, 1, 1, CPU_F16},
    [NPU_OP_CONV_TRANSPOSE] = {cpu_k_conv_transpose, 2, 3, 1, 1, CPU_F16},
    [NPU_OP_EINSUM] = {cpu_k_einsum, 1, CPU_VAR, 1, 1, CPU_F16},
    /* pooling and normalisation */
    [NPU_OP_MAX_POOL] = {cpu_k_max_pool, 1, 1, 1, 2, CPU_F16},
    [NPU_OP_AVERAGE_POOL] = {cpu_k_average_pool, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_GLOBAL_AVERAGE_POOL] = {cpu_k_global_average_pool, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_GLOBAL_MAX_POOL] = {cpu_k_global_max_pool, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_BATCH_NORMALIZATION] = {cpu_k_batch_norm, 5, 5, 1, 3, CPU_F16},
    [NPU_OP_INSTANCE_NORMALIZATION] = {cpu_k_instance_norm, 3, 3, 1, 1, CPU_F16},
    [NPU_OP_LAYER_NORMALIZATION] = {cpu_k_layer_norm, 2, 3, 1, 3, CPU_F16},
    [NPU_OP_GROUP_NORMALIZATION] = {cpu_k_group_norm, 3, 3, 1, 1, CPU_F16},
    [NPU_OP_MISH] = {cpu_k_mish, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_BITWISE_AND] = {cpu_k_bitwise_and, 2, 2, 1, 1, 0},
    [NPU_OP_BITWISE_OR] = {cpu_k_bitwise_or, 2, 2, 1, 1, 0},
    [NPU_OP_BITWISE_XOR] = {cpu_k_bitwise_xor, 2, 2, 1, 1, 0},
    [NPU_OP_BITWISE_NOT] = {cpu_k_bitwise_not, 1, 1, 1, 1, 0},
    [NPU_OP_RMS_NORMALIZATION] = {cpu_k_rms_norm, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_CENTER_CROP_PAD] = {cpu_k_center_crop_pad, 2, 2, 1, 1, 0},
    [NPU_OP_COL2IM] = {cpu_k_col2im, 3, 3, 1, 1, CPU_F16},
    [NPU_OP_AFFINE_GRID] = {cpu_k_affine_grid, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_SOFTMAX] = {cpu_k_softmax, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_LOG_SOFTMAX] = {cpu_k_log_softmax, 1, 1, 1, 1, CPU_F16},
    /* reductions */
    [NPU_OP_REDUCE_MEAN] = {cpu_k_reduce_mean, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_SUM] = {cpu_k_reduce_sum, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_MAX] = {cpu_k_reduce_max, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_MIN] = {cpu_k_reduce_min, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_PROD] = {cpu_k_reduce_prod, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_L2] = {cpu_k_reduce_l2, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_SUM_SQUARE] = {cpu_k_reduce_sum_square, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_ARGMAX] = {cpu_k_argmax, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_ARGMIN] = {cpu_k_argmin, 1, 1, 1, 1, CPU_F16},
    /* shape and data movement */
    [NPU_OP_RESHAPE] = {cpu_k_reshape, 1, 2, 1, 1, 0},
    [NPU_OP_FLATTEN] = {cpu_k_flatten, 1, 1, 1, 1, 0},
    [NPU_OP_TRANSPOSE] = {cpu_k_transpose, 1, 1, 1, 1, 0},
    [NPU_OP_SQUEEZE] = {cpu_k_squeeze, 1, 2, 1, 1, 0},
    [NPU_OP_UNSQUEEZE] = {cpu_k_unsqueeze, 1, 2, 1, 1, 0},
    [NPU_OP_CONCAT] = {cpu_k_concat, 1, CPU_VAR, 1, 1, 0},
    [NPU_OP_SPLIT] = {cpu_k_split, 1, 2, 1, CPU_VAR, 0},
    [NPU_OP_SLICE] = {cpu_k_slice, 3, 5, 1, 1, 0},
    [NPU_OP_GATHER] = {cpu_k_gather, 2, 2, 1, 1, 0},
    [NPU_OP_GATHER_ELEMENTS] = {cpu_k_gather_elements, 2, 2, 1, 1, 0},
    [NPU_OP_PAD] = {cpu_k_pad, 2, 4, 1, 1, 0},
    [NPU_OP_EXPAND] = {cpu_k_expand, 2, 2, 1, 1, 0},
    [NPU_OP_TILE] = {cpu_k_tile, 2, 2, 1, 1, 0},
    [NPU_OP_SHAPE] = {cpu_k_shape, 1, 1, 1, 1, 0},
    [NPU_OP_SIZE] = {cpu_k_size, 1, 1, 1, 1, 0},
    [NPU_OP_CONSTANT] = {cpu_k_constant, 0, 0, 1, 1, 0},
    [NPU_OP_CONSTANT_OF_SHAPE] = {cpu_k_constant_of_shape, 1, 1, 1, 1, 0},
    [NPU_OP_RANGE] = {cpu_k_range, 3, 3, 1, 1, CPU_F16},
    [NPU_OP_RESIZE] = {cpu_k_resize, 1, 4, 1, 1, CPU_F16},
    [NPU_OP_TRILU] = {cpu_k_trilu, 1, 2, 1, 1, 0},
    [NPU_OP_CUMSUM] = {cpu_k_cumsum, 2, 2, 1, 1, CPU_F16},
    [NPU_OP_DEPTH_TO_SPACE] = {cpu_k_depth_to_space, 1, 1, 1, 1, 0},
    [NPU_OP_SPACE_TO_DEPTH] = {cpu_k_space_to_depth, 1, 1, 1, 1, 0},
    [NPU_OP_SCATTER_ND] = {cpu_k_scatter_nd, 3, 3, 1, 1, CPU_F16},
    [NPU_OP_STATE_WRITE] = {cpu_k_state_write, 3, 3, 1, 1, 0},
    [NPU_OP_SCATTER_ELEMENTS] = {cpu_k_scatter_elements, 3, 3, 1, 1, CPU_F16},
    [NPU_OP_TOP_K] = {cpu_k_topk, 2, 2, 1, 2, CPU_F16},
    [NPU_OP_RNN] = {cpu_k_rnn, 3, 6, 1, 2, CPU_F16 | CPU_OPT_OUT},
    [NPU_OP_GRU] = {cpu_k_gru, 3, 6, 1, 2, CPU_F16 | CPU_OPT_OUT},
    [NPU_OP_LSTM] = {cpu_k_lstm, 3, 8, 1, 3, CPU_F16 | CPU_OPT_OUT},
    [NPU_OP_IS_NAN] = {cpu_k_isnan, 1, 1, 1, 1, 0},
    [NPU_OP_IS_INF] = {cpu_k_isinf, 1, 1, 1, 1, 0},
    [NPU_OP_CELU] = {cpu_k_celu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_ONE_HOT] = {cpu_k_one_hot, 3, 3, 1, 1, 0},
    [NPU_OP_GATHER_ND] = {cpu_k_gather_nd, 2, 2, 1, 1, 0},
    [NPU_OP_REDUCE_L1] = {cpu_k_reduce_l1, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_LOG_SUM] = {cpu_k_reduce_log_sum, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_REDUCE_LOG_SUM_EXP] = {cpu_k_reduce_log_sum_exp, 1, 2, 1, 1, CPU_F16},
    [NPU_OP_GRID_SAMPLE] = {cpu_k_grid_sample, 2, 2, 1, 1, CPU_F16},
    /* quantisation */
    [NPU_OP_QUANTIZE_LINEAR] = {cpu_k_quantize_linear, 2, 3, 1, 1, CPU_F16},
    [NPU_OP_DEQUANTIZE_LINEAR] = {cpu_k_dequantize_linear, 2, 3, 1, 1, CPU_F16},
    [NPU_OP_QLINEAR_CONV] = {cpu_k_qlinear_conv, 8, 9, 1, 1, CPU_F16},
    [NPU_OP_QLINEAR_MATMUL] = {cpu_k_qlinear_matmul, 8, 9, 1, 1, CPU_F16},
    [NPU_OP_MATMUL_INTEGER] = {cpu_k_matmul_integer, 2, 4, 1, 1, 0},
    [NPU_OP_CONV_INTEGER] = {cpu_k_conv_integer, 2, 4, 1, 1, 0},
    /* fused */
    [NPU_OP_FUSED_ATTENTION] = {cpu_k_attention, 3, 4, 1, 1, CPU_F16},
    [NPU_OP_FUSED_SILU] = {cpu_k_silu, 1, 1, 1, 1, CPU_F16},
    [NPU_OP_FUSED_GELU_TANH] = {cpu_k_gelu_tanh, 1, 1, 1, 1, CPU_F16},
};

bool
npu_cpu_supports(enum npu_op op)
{
    return (unsigned)op < NPU_OP_COUNT && cpu_table[op].fn != NULL;
}

static enum npu_status
check_tensor(struct npu_cpu_ctx *ctx, const struct npu_tensor *t, const char *kind, int idx)
{
    if (t->ndim < 0 || t->ndim > NPU_MAX_DIMS)
        return KINVAL("%s %d has rank %d (at most %d)", kind, idx, t->ndim, NPU_MAX_DIMS);
    if (npu_dtype_size(t->dtype) == 0)
        return KINVAL("%s %d has no valid dtype", kind, idx);
    int64_t nb = npu_tensor_nbytes(t);
    if (nb < 0)
        return KINVAL("%s %d has negative dims or a size that overflows", kind, idx);
    if (nb > 0 && !t->data)
        return KINVAL("%s %d has no data", kind, idx);
    return NPU_OK;
}

/* The fp16 path: widen fp16 operands to fp32 temporaries, run, round results back. */
static enum npu_status
run_f16(struct npu_cpu_ctx *ctx, const struct cpu_entry *e, const struct npu_attrs *attrs,
        const struct npu_tensor *const *in, int nin, struct npu_tensor *const *out, int nout)
{
    enum npu_status st = NPU_ERR_NOMEM;
    struct npu_tensor *tin = calloc((size_t)nin + 1, sizeof(*tin));
    struct npu_tensor *tout = calloc((size_t)nout + 1, sizeof(*tout));
    const struct npu_tensor **pin = calloc((size_t)nin + 1, sizeof(*pin));
    struct npu_tensor **pout = calloc((size_t)nout + 1, sizeof(*pout));
    if (!tin || !tout || !pin || !pout)
        goto out;
    for (int i = 0; i < nin; i++) {
        pin[i] = in[i];
        if (!in[i] || in[i]->dtype != NPU_DTYPE_FP16)
            continue;
        int64_t n = cpu_numel(in[i]);
        tin[i] = *in[i];
        tin[i].dtype = NPU_DTYPE_FP32;
        tin[i].data = malloc((size_t)(n ? n : 1) * sizeof(float));
        if (!tin[i].data)
            goto out;
        npu_fp16_to_fp32_n(tin[i].data, in[i]->data, (size_t)n);
        pin[i] = &tin[i];
    }
    for (int i = 0; i < nout; i++) {
        pout[i] = out[i];
        if (!out[i] || out[i]->dtype != NPU_DTYPE_FP16)
            continue;
        int64_t n = cpu_numel(out[i]);
        tout[i] = *out[i];
        tout[i].dtype = NPU_DTYPE_FP32;
        tout[i].data = malloc((size_t)(n ? n : 1) * sizeof(float));
        if (!tout[i].data)
            goto out;
        pout[i] = &tout[i];
    }
    st = e->fn(ctx, attrs, pin, nin, pout, nout);
    if (st == NPU_OK)
        for (int i = 0; i < nout; i++)
            if (pout[i] != out[i])
                npu_fp32_to_fp16_n(out[i]->data, tout[i].data, (size_t)cpu_numel(out[i]));
    goto done;
out:
    cpu_fail(ctx, st, "out of memory widening fp16 operands");
done:
    for (int i = 0; tin && i < nin; i++)
        if (pin && pin[i] == &tin[i])
            free(tin[i].data);
    for (int i = 0; tout && i < nout; i++)
        if (pout && pout[i] == &tout[i])
            free(tout[i].data);
    free(tin);
    free(tout);
    free(pin);
    free(pout);
    return st;
}

static bool
any_f16(const struct npu_tensor *const *in, int nin, struct npu_tensor *const *out, int nout)
{
    for (int i = 0; i < nin; i++)
        if (in[i] && in[i]->dtype == NPU_DTYPE_FP16)
            return true;
    for (int i = 0; i < nout; i++)
        if (out[i] && out[i]->dtype == NPU_DTYPE_FP16)
            return true;
    return false;
}

enum npu_status
npu_cpu_run(struct npu_cpu_ctx *ctx, enum npu_op op, const struct npu_attrs *attrs,
            const struct npu_tensor *const *in, int nin, struct npu_tensor *const *out, int nout)
{
    return npu_cpu_run_prep(ctx, NULL, op, attrs, in, nin, out, nout);
}

enum npu_status
npu_cpu_run_prep(struct npu_cpu_ctx *ctx, const struct npu_cpu_prep *prep, enum npu_op op,
                 const struct npu_attrs *attrs, const struct npu_tensor *const *in, int nin,
                 struct npu_tensor *const *out, int nout)
{
    if (!ctx) {
        npu_err(CPU_LOG_DOMAIN, "npu_cpu_run: no context");
        return NPU_ERR_INVALID;
    }
    if (!npu_cpu_supports(op)) {
        npu_err(CPU_LOG_DOMAIN, "no CPU kernel for op %s (%d)", npu_op_name(op), (int)op);
        return NPU_ERR_UNSUPPORTED;
    }
    if (nin < 0 || nout < 1 || (nin > 0 && !in) || !out) {
        npu_err(CPU_LOG_DOMAIN, "%s: bad operand arrays", npu_op_name(op));
        return NPU_ERR_INVALID;
    }
    pthread_mutex_lock(&ctx->run_lock);
    ctx->cur_op = op;
    ctx->prep = prep && prep->op == op ? prep : NULL;
    const struct cpu_entry *e = &cpu_table[op];
    enum npu_status st = NPU_OK;
    if (nin < e->min_in || (e->max_in != CPU_VAR && nin > e->max_in))
        st = KINVAL("%d inputs given, expected %d to %d", nin, e->min_in, e->max_in);
    else if (nout < e->min_out || (e->max_out != CPU_VAR && nout > e->max_out))
        st = KINVAL("%d outputs given, expected %d to %d", nout, e->min_out, e->max_out);
    for (int i = 0; st == NPU_OK && i < nin; i++) {
        if (!in[i]) {
            if (i < e->min_in)
                st = KINVAL("required input %d is missing", i);
            continue;
        }
        st = check_tensor(ctx, in[i], "input", i);
    }
    for (int i = 0; st == NPU_OK && i < nout; i++) {
        if (!out[i]) {
            if (i < e->min_out && !(e->flags & CPU_OPT_OUT))
                st = KINVAL("required output %d is missing", i);
            continue;
        }
        st = check_tensor(ctx, out[i], "output", i);
    }
    double t0 = ctx->prof ? cpu_now() : 0;
    if (st == NPU_OK) {
        if ((e->flags & CPU_F16) && any_f16(in, nin, out, nout))
            st = run_f16(ctx, e, attrs, in, nin, out, nout);
        else
            st = e->fn(ctx, attrs, in, nin, out, nout);
    }
    if (ctx->prof) {
        ctx->prof_s[op] += cpu_now() - t0;
        ctx->prof_n[op]++;
    }
    ctx->cur_op = NPU_OP_NONE;
    ctx->prep = NULL;
    pthread_mutex_unlock(&ctx->run_lock);
    return st;
}
