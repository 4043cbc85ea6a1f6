/* SPDX-License-Identifier: MIT */
/*
 * npu-cpucost.c: the CPU side of partitioning by cost. A node's CPU cost is
 * its kernel measured on this host, on the node's own shapes and attributes:
 * constants with their data, values the compiler knows with theirs, other
 * inputs filled with small deterministic values (floats in [-1, 1], integers
 * 0 so that indices are valid, booleans true). One warm-up run, then the
 * best of several timed runs (at least 3 and 5 ms, at most 50 runs or
 * 200 ms), with the constants prepared once (npu_cpu_prepare) as the
 * executors do. Measuring is serialised (a mutex) so that measurements do not
 * disturb each other, and cached:
 *   - in memory for the process, by a 64-bit hash of (op, input dtypes and
 *     dims and constness, attributes, threads);
 *   - in the compile cache folder, cpu-costs-v1.tsv, one "key seconds
 *     description" line per measurement appended with a single O_APPEND
 *     write (lines another process writes at the same time stay whole;
 *     malformed lines are ignored).
 * A kernel that cannot run on synthetic inputs gets an estimate from its
 * bytes (4 GB/s) and is reported as estimated.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu-fp16.h"
#include "npu-hash.h"
#include "npu/npu-cpu.h"
#include "npu/npu-partition.h"
#include "npu/npu-program-check.h"

#define DOM "partition"
#define COST_FILE "cpu-costs-v1.tsv"
#define MEASURE_MAX_BYTES (512u << 20)
#define EST_BYTES_PER_S 4e9

struct entry {
    uint64_t key;
    double s;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *cache;
static size_t ncache, capcache;
static char **loaded_dirs;
static size_t nloaded;
static struct npu_cpu_ctx *ctx;
static int ctx_threads = -1;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool
cache_get(uint64_t key, double *s)
{
    for (size_t i = 0; i < ncache; i++)
        if (cache[i].key == key) {
            *s = cache[i].s;
            return true;
        }
    return false;
}

static void
cache_put(uint64_t key, double s)
{
    double old;
    if (cache_get(key, &old))
        return;
    if (ncache == capcache) {
        size_t nc = capcache ? capcache * 2 : 256;
        struct entry *ne = realloc(cache, sizeof(*ne) * nc);
        if (!ne)
            return;
        cache = ne;
        capcache = nc;
    }
    cache[ncache++] = (struct entry){key, s};
}

static void
load_dir(const char *dir)
{
    for (size_t i = 0; i < nloaded; i++)
        if (!strcmp(loaded_dirs[i], dir))
            return;
    char **nd = realloc(loaded_dirs, sizeof(*nd) * (nloaded + 1));
    if (!nd)
        return;
    loaded_dirs = nd;
    if (!(loaded_dirs[nloaded] = strdup(dir)))
        return;
    nloaded++;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, COST_FILE);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        unsigned long long k;
        double s;
        if (sscanf(line, "%16llx\t%lf", &k, &s) == 2 && isfinite(s) && s >= 0 && s < 1e4)
            cache_put(k, s);
    }
    fclose(f);
}

static void
store_dir(const char *dir, uint64_t key, double s, const char *desc)
{
    char path[4096], line[600];
    snprintf(path, sizeof(path), "%s/%s", dir, COST_FILE);
    int n = snprintf(line, sizeof(line), "%016llx\t%.9g\t%s\n", (unsigned long long)key, s, desc);
    if (n <= 0 || n >= (int)sizeof(line))
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) != n)
        npu_dbg(DOM, "%s: short write", path);
    close(fd);
}

/* Hash of what the kernel's time depends on; desc gets a readable summary. */
static uint64_t
node_key(const struct npu_node *n, int threads, char *desc, size_t dlen)
{
    struct npu_xxh64_state h;
    /* seed 0xc0577 since the integer products run packed int8 kernels (figures cached with
     * 0xc0576 timed the reference loops, 45-700x slower; 0xc0575 packed the weights at every
     * run). The kernels this process dispatches to are part of the key too, so a figure taken
     * with another GEMM or int8 path (another CPU, NPU_CPU_QGEMM) is not reused. */
    npu_xxh64_init(&h, 0xc0577);
    const char *why = NULL, *paths[2] = {npu_cpu_gemm_path(&why), npu_cpu_int8_path()};
    for (int i = 0; i < 2; i++)
        if (paths[i])
            npu_xxh64_update(&h, paths[i], strlen(paths[i]) + 1);
    const char *op = npu_op_name(n->op);
    npu_xxh64_update(&h, op, strlen(op) + 1);
    npu_xxh64_update(&h, &threads, sizeof(threads));
    size_t dp = (size_t)snprintf(desc, dlen, "%s", op);
    for (int i = 0; i < n->nin; i++) {
        const struct npu_value *v = n->in[i];
        int32_t rec[2 + NPU_MAX_DIMS * 2] = {0};
        if (v) {
            rec[0] = v->t.dtype;
            rec[1] = v->t.ndim | (v->kind == NPU_VALUE_CONST) << 8;
            for (int d = 0; d < v->t.ndim; d++) {
                rec[2 + 2 * d] = (int32_t)v->t.dims[d];
                rec[3 + 2 * d] = (int32_t)(v->t.dims[d] >> 32);
            }
            if (dp < dlen) {
                dp += (size_t)snprintf(desc + dp, dlen - dp, " %s[", npu_dtype_name(v->t.dtype));
                for (int d = 0; d < v->t.ndim && dp < dlen; d++)
                    dp += (size_t)snprintf(desc + dp, dlen - dp, "%s%lld", d ? "," : "",
                                           (long long)v->t.dims[d]);
                if (dp < dlen)
                    dp += (size_t)snprintf(desc + dp, dlen - dp, "]");
            }
        }
        npu_xxh64_update(&h, rec, sizeof(rec));
    }
    for (int i = 0; i < n->nattr; i++) {
        const struct npu_attr *a = &n->attr[i];
        npu_xxh64_update(&h, a->name, strlen(a->name) + 1);
        npu_xxh64_update(&h, &a->type, sizeof(a->type));
        switch (a->type) {
        case NPU_ATTR_INT: npu_xxh64_update(&h, &a->i, 8); break;
        case NPU_ATTR_FLOAT: npu_xxh64_update(&h, &a->f, 4); break;
        case NPU_ATTR_STRING: npu_xxh64_update(&h, a->s, strlen(a->s) + 1); break;
        case NPU_ATTR_INTS: npu_xxh64_update(&h, a->ints, 8 * a->n); break;
        case NPU_ATTR_FLOATS: npu_xxh64_update(&h, a->floats, 4 * a->n); break;
        case NPU_ATTR_STRINGS:
            for (size_t k = 0; k < a->n; k++)
                npu_xxh64_update(&h, a->strs[k], strlen(a->strs[k]) + 1);
            break;
        case NPU_ATTR_TENSOR:
            npu_xxh64_update(&h, &a->t->dtype, sizeof(a->t->dtype));
            npu_xxh64_update(&h, a->t->dims, sizeof(int64_t) * (size_t)a->t->ndim);
            break;
        }
    }
    return npu_xxh64_digest(&h);
}

static void
fill(struct npu_tensor *t, uint32_t seed)
{
    int64_t n = npu_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        float f = (float)((int)(seed >> 9) % 2001 - 1000) / 1000.0f;
        switch (t->dtype) {
        case NPU_DTYPE_FP32: ((float *)t->data)[i] = f; break;
        case NPU_DTYPE_FP64: ((double *)t->data)[i] = f; break;
        case NPU_DTYPE_FP16: ((uint16_t *)t->data)[i] = npu_fp32_to_fp16(f); break;
        case NPU_DTYPE_BOOL: ((uint8_t *)t->data)[i] = 1; break;
        default: break; /* integers stay 0 (calloc): valid indices */
        }
    }
}

static int64_t
node_bytes(const struct npu_node *n)
{
    int64_t b = 0;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i])
            b += NPU_MAX(npu_tensor_nbytes(&n->in[i]->t), 0);
    for (int i = 0; i < n->nout; i++)
        b += NPU_MAX(npu_tensor_nbytes(&n->out[i]->t), 0);
    return b;
}

/* Times the kernel; < 0 when it cannot run. Called with the lock held. */
static double
measure(const struct npu_node *n, int threads)
{
    if (!npu_cpu_supports(n->op) || n->nin > 64 || n->nout > 64 ||
        node_bytes(n) > (int64_t)MEASURE_MAX_BYTES)
        return -1;
    if (!ctx || ctx_threads != threads) {
        npu_cpu_ctx_destroy(ctx);
        ctx = npu_cpu_ctx_create(threads);
        ctx_threads = threads;
        if (!ctx)
            return -1;
    }
    struct npu_tensor tin[64], tout[64];
    const struct npu_tensor *pin[64];
    struct npu_tensor *pout[64];
    void *owned[128];
    int nown = 0;
    double best = -1;
    struct npu_cpu_prep *prep = NULL;
    for (int i = 0; i < n->nin; i++) {
        const struct npu_value *v = n->in[i];
        pin[i] = NULL;
        if (!v)
            continue;
        tin[i] = v->t;
        const void *data = npu_value_data(v);
        if (!data || !npu_value_data_aligned(v)) {
            /* made-up contents, or an aligned copy of a constant borrowed unaligned from the
             * model file (the kernels load through typed pointers, npu-ir.h) */
            int64_t nb = npu_tensor_nbytes(&v->t);
            void *p = calloc(1, (size_t)NPU_MAX(nb, 1) + 64);
            if (!p)
                goto out;
            owned[nown++] = p;
            tin[i].data = p;
            if (data)
                memcpy(p, data, (size_t)NPU_MAX(nb, 0));
            else
                fill(&tin[i], (uint32_t)i * 7919u + 1);
        } else {
            tin[i].data = (void *)data;
        }
        pin[i] = &tin[i];
    }
    for (int i = 0; i < n->nout; i++) {
        tout[i] = n->out[i]->t;
        tout[i].data = NULL;
        int64_t nb = npu_tensor_nbytes(&tout[i]);
        void *p = calloc(1, (size_t)NPU_MAX(nb, 1) + 64);
        if (!p)
            goto out;
        owned[nown++] = p;
        tout[i].data = p;
        pout[i] = &tout[i];
    }
    struct npu_attrs a = npu_node_attrs(n);
    /* the executors pack constant weights once per model (npu_cpu_prepare), so the cost of
     * a run is measured on prepared constants: inputs that are not constants of the graph
     * are passed by shape only */
    struct npu_tensor rt[64];
    const struct npu_tensor *cin[64];
    for (int i = 0; i < n->nin; i++) {
        cin[i] = pin[i];
        if (pin[i] && n->in[i]->kind != NPU_VALUE_CONST) {
            rt[i] = *pin[i];
            rt[i].data = NULL;
            cin[i] = &rt[i];
        }
    }
    if (npu_cpu_prepare(n->op, &a, cin, n->nin, &prep) != NPU_OK)
        prep = NULL; /* measured unprepared, as npu_cpu_run would run it */
    if (npu_cpu_run_prep(ctx, prep, n->op, &a, pin, n->nin, pout, n->nout) != NPU_OK)
        goto out; /* kernel refuses synthetic inputs: estimate instead */
    double total = 0;
    for (int r = 0; r < 50; r++) {
        double t0 = now();
        if (npu_cpu_run_prep(ctx, prep, n->op, &a, pin, n->nin, pout, n->nout) != NPU_OK)
            break;
        double dt = now() - t0;
        total += dt;
        best = best < 0 || dt < best ? dt : best;
        if ((r >= 2 && total >= 5e-3) || total >= 0.2)
            break;
    }
out:
    npu_cpu_prep_free(prep);
    for (int i = 0; i < nown; i++)
        free(owned[i]);
    return best;
}

double
npu_cpu_cost(const struct npu_graph *g, const struct npu_node *n, int threads,
             const char *cache_dir, bool *measured)
{
    char desc[400];
    uint64_t key = node_key(n, threads, desc, sizeof(desc));
    double s;
    *measured = true;
    pthread_mutex_lock(&lock);
    if (cache_dir)
        load_dir(cache_dir);
    if (cache_get(key, &s)) {
        pthread_mutex_unlock(&lock);
        return s;
    }
    s = measure(n, threads);
    if (s >= 0) {
        cache_put(key, s);
        if (cache_dir)
            store_dir(cache_dir, key, s, desc);
    }
    pthread_mutex_unlock(&lock);
    if (s < 0) {
        *measured = false;
        s = 1e-6 + (double)node_bytes(n) / EST_BYTES_PER_S;
    }
    return s;
}

double
npu_convert_rate(void)
{
    static double rate;
    pthread_mutex_lock(&lock);
    if (rate == 0) {
        enum { C = 64, H = 64, W = 64 };
        struct npu_prog_tensor a = {.t = {.dtype = NPU_DTYPE_FP32, .ndim = 4, .dims = {1, C, H, W}},
                                    .layout = NPU_LAYOUT_NCHW,
                                    .mem_dtype = NPU_DTYPE_FP32};
        struct npu_prog_tensor b = a;
        b.layout = NPU_LAYOUT_NC1HWC2;
        b.mem_dtype = NPU_DTYPE_FP16;
        b.npu_c = C, b.npu_h = H, b.npu_w = W;
        size_t n = (size_t)C * H * W;
        float *src = calloc(n, sizeof(float));
        void *dst = calloc(n, 2);
        void *tmp = malloc(npu_prog_convert_scratch(&a, &b) + 1);
        double best = -1;
        for (int r = 0; src && dst && tmp && r < 5; r++) {
            double t0 = now();
            if (npu_prog_convert(&a, src, &b, dst, tmp))
                break;
            double dt = now() - t0;
            best = best < 0 || dt < best ? dt : best;
        }
        rate = best > 0 ? (double)n * 4 / best : 2e9;
        free(src);
        free(dst);
        free(tmp);
    }
    pthread_mutex_unlock(&lock);
    return rate;
}
