/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-threads.c: the CPU executor's thread pool (cpu_parallel_for in
 * core/cpu/npu-cpu.c). Idle threads spin a while before they sleep, so a job
 * can start while a worker is spinning, sleeping, or between the two; the
 * caller likewise spins, then sleeps, waiting for a worker's last chunk. On 1
 * to 4 threads, with the spin off, short and default, thousands of jobs of 1
 * to 5000 items (some right after the previous one, some after a pause longer
 * than the spin, some with slow items) must each run every item exactly once
 * and return only when all are done.
 */
#include <time.h>
#include <unistd.h>

#include "../../core/cpu/npu-cpu-internal.h"
#include "npu-test.h"

struct job {
    int *hits; /* per item */
    int64_t n;
    int slow_every; /* 0: none */
    int bad_tid;    /* set when a callback sees a tid outside [0, nthreads) */
    int nthreads;
};

static void
job_task(void *arg, int64_t b, int64_t e, int tid)
{
    struct job *j = arg;
    if (tid < 0 || tid >= j->nthreads)
        __atomic_store_n(&j->bad_tid, 1, __ATOMIC_RELAXED);
    for (int64_t i = b; i < e; i++) {
        if (j->slow_every && i % j->slow_every == 0) {
            struct timespec ts = {0, 30000}; /* 30 us */
            nanosleep(&ts, NULL);
        }
        __atomic_add_fetch(&j->hits[i], 1, __ATOMIC_RELAXED);
    }
}

static void
run_jobs(int nthreads, const char *spin)
{
    if (spin)
        setenv("NPU_CPU_SPIN_US", spin, 1);
    else
        unsetenv("NPU_CPU_SPIN_US");
    struct npu_cpu_ctx *ctx = npu_cpu_ctx_create(nthreads);
    CHECK(ctx != NULL);
    if (!ctx)
        return;
    enum { MAXN = 5000, JOBS = 3000 };
    int *hits = calloc(MAXN, sizeof(int));
    uint32_t seed = 12345u + (uint32_t)nthreads;
    int bad_jobs = 0;
    for (int k = 0; k < JOBS; k++) {
        seed = seed * 1664525u + 1013904223u;
        int64_t n = 1 + (int64_t)((seed >> 8) % (k % 7 == 0 ? MAXN : 64));
        struct job j = {
            .hits = hits, .n = n, .slow_every = k % 50 == 3 ? 7 : 0, .nthreads = ctx->nthreads};
        memset(hits, 0, sizeof(int) * (size_t)n);
        cpu_parallel_for(ctx, n, 1 + (int64_t)((seed >> 20) % 4), job_task, &j);
        /* every item exactly once, and all done when cpu_parallel_for returns */
        int wrong = j.bad_tid;
        for (int64_t i = 0; i < n; i++)
            wrong |= __atomic_load_n(&hits[i], __ATOMIC_RELAXED) != 1;
        bad_jobs += wrong;
        if (k % 300 == 150)
            usleep(2000); /* longer than any spin: workers go to sleep */
        else if (k % 97 == 5)
            usleep(60); /* about the short spin: the race between spinning and sleeping */
    }
    if (bad_jobs)
        fprintf(stderr, "%d thread(s), NPU_CPU_SPIN_US=%s: %d wrong job(s)\n", nthreads,
                spin ? spin : "(default)", bad_jobs);
    CHECK_EQ_INT(0, bad_jobs);
    free(hits);
    npu_cpu_ctx_destroy(ctx);
}

int
main(void)
{
    const char *spins[] = {"0", "50", NULL};
    for (int t = 1; t <= 4; t++)
        for (int s = 0; s < 3; s++)
            run_jobs(t, spins[s]);
    /* a context destroyed right after creation, workers never used */
    setenv("NPU_CPU_SPIN_US", "1000", 1);
    npu_cpu_ctx_destroy(npu_cpu_ctx_create(3));
    return npu_test_done("test-cpu-threads");
}
