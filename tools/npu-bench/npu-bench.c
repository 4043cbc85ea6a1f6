/* SPDX-License-Identifier: MIT */
/*
 * npu-bench: where the time of a model goes, per op and per frame, on an NPU
 * backend (the simulator unless told otherwise). It loads the model through
 * the model API (compiling it, with the compile cache when one is set), runs
 * it on random inputs and reports, per IR node / step and in total: the NPU
 * time, modeled by the selected timing model (v2 unless --timing or NPU_TIMING
 * says otherwise; never a measurement on the simulator),
 * submits, tasks, DMA bytes and MAC utilisation from the same model, and the
 * host time of the CPU steps and conversions, measured (host-dependent).
 * NPU tasks are attributed to the IR node named on them (npu_prog_task.name,
 * which the codegen sets on every task it emits and .npub files keep); for
 * jobs whose tasks carry no names (a program made another way), the per-node
 * rows are the back end's compile-time estimates (the same timing model) and
 * the job totals come from the simulator. `npu-bench --help` is the manual.
 *
 * It compiles and runs through the same calls as the model API's NPU backends
 * (npu-build.h, then the program executor on a device), so that it can see
 * the lowered graph.
 */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-build.h"
#include "npu/npu-model.h"
#include "npu/npu-program-exec.h"
#include "npu/npu-program.h"
#include "npu/npu-timing.h"

static const char usage[] =
    "usage: npu-bench MODEL [options]\n"
    "\n"
    "Runs MODEL (.onnx, .npuir or a compiled .npub) on an NPU backend and reports per op\n"
    "(IR node or step) and per frame: NPU time, submits, tasks, DMA bytes and MAC\n"
    "utilisation - all modeled (timing model v2 unless --timing says otherwise) on the\n"
    "simulator - and the CPU time of\n"
    "the CPU steps and conversions, measured on this host.\n"
    "\n"
    "    -b, --backend NAME    sim (default), rknpu, rocket, auto\n"
    "    -n, --runs N          timed runs after the warm-up (default 3); host times are\n"
    "                          averaged, modeled figures are the same every run\n"
    "    -w, --warmup N        untimed runs first (default 1)\n"
    "    -d, --dims LIST       symbolic input dims, e.g. batch=1\n"
    "    -t, --threads N       threads for CPU ops (default 0: all)\n"
    "    -c, --core N          NPU core of the session (default 0)\n"
    "    -p, --partition MODE  cost (default), supported, cpu (sets NPU_PARTITION)\n"
    "        --cpu-cost MODEL  CPU costs of partitioning by cost: board (RK3588 CPU model\n"
    "                          v1, modeled), measured (timed on this host), auto (default:\n"
    "                          $NPU_CPU_COST if set, else measured on rknpu/rocket, board\n"
    "                          on sim)\n"
    "        --timing NAME     timing model of every modeled figure: v2 (default,\n"
    "                          docs/timing-model-v2.md), v2-low, v2-high (its bounds), v1;\n"
    "                          sets what $NPU_TIMING would\n"
    "        --cores N         then run frames round robin over cores 0 .. N-1 (1-3), one\n"
    "                          session per core, all at once (their jobs share DRAM), and\n"
    "                          print the modeled frames per second\n"
    "        --frames F        frames of --cores (default 4 per core)\n"
    "        --cache-dir DIR   compile cache\n"
    "        --seed S          random inputs' seed (default 0)\n"
    "        --top N           print only the N most expensive ops (default: all)\n"
    "        --json FILE       also write the figures as JSON (- = stdout, tables then\n"
    "                          go to stderr)\n"
    "    -h, --help            this text\n"
    "\n"
    "Random inputs: floats uniform in [-1, 1]; integers uniform in [0, 100), or 1 when\n"
    "the input's name contains \"mask\"; booleans 1.\n"
    "Exit status: 0 success, 1 load or run failure, 2 command line.\n";

/* Compile-time estimate of one rk.* node (from its modeled_us attribute). */
struct est {
    char name[160];
    char op[24];
    double s;
};

struct ests {
    struct est *v;
    int n, cap;
};

static void
collect_estimates(const struct npu_graph *g, const struct npu_program *p, void *user)
{
    struct ests *e = user;
    npu_graph_for_each_node (g, n) {
        if (!npu_op_is_rk(n->op) || n->op == NPU_OP_RK_TO_NPU || n->op == NPU_OP_RK_TO_HOST)
            continue;
        if (e->n == e->cap) {
            int nc = e->cap ? e->cap * 2 : 256;
            struct est *nv = realloc(e->v, sizeof(*nv) * (size_t)nc);
            if (!nv)
                return;
            e->v = nv;
            e->cap = nc;
        }
        struct est *x = &e->v[e->n++];
        snprintf(x->name, sizeof(x->name), "%s", n->name && n->name[0] ? n->name : "(unnamed)");
        snprintf(x->op, sizeof(x->op), "%s", npu_op_name(n->op));
        x->s = npu_node_float(n, "modeled_us", 0) * 1e-6;
    }
}

struct op_row {
    char name[160];
    const char *kind; /* "npu", "cpu", "convert" */
    const char *op;   /* CPU op name or "" */
    double modeled_s, host_s;
    unsigned submits, tasks;
    uint64_t dma, macs;
    double util_w; /* task mac_utilisation x task time, for the weighted mean */
    double task_s; /* modeled time of the tasks alone */
};

static uint64_t rng_state;

static uint64_t
rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void *
random_input(const struct npu_io_info *io, struct npu_tensor *t)
{
    memset(t, 0, sizeof(*t));
    t->dtype = io->dtype;
    t->ndim = io->ndim;
    memcpy(t->dims, io->dims, sizeof(t->dims));
    int64_t n = npu_tensor_numel(t), nb = npu_tensor_nbytes(t);
    if (n < 0 || nb < 0)
        return NULL;
    void *d = calloc(1, (size_t)nb + 1);
    bool mask = io->name && strstr(io->name, "mask");
    for (int64_t i = 0; d && i < n; i++) {
        double u = (double)(rng() >> 11) * (1.0 / 9007199254740992.0);
        int64_t iv = mask ? 1 : (int64_t)(u * 100);
        switch (t->dtype) {
        case NPU_DTYPE_FP32: ((float *)d)[i] = (float)(2 * u - 1); break;
        case NPU_DTYPE_FP64: ((double *)d)[i] = 2 * u - 1; break;
        case NPU_DTYPE_INT64: ((int64_t *)d)[i] = iv; break;
        case NPU_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)iv; break;
        case NPU_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)iv; break;
        case NPU_DTYPE_INT8:
        case NPU_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)iv; break;
        case NPU_DTYPE_BOOL: ((uint8_t *)d)[i] = 1; break;
        default: break;
        }
    }
    t->data = d;
    return d;
}

/* One core's share of the round-robin frames (--cores): frames c, c + n, ... */
struct rr_worker {
    struct npu_prog_session *s;
    const struct npu_tensor *in;
    int nin, nout;
    long frames;
    double start, end; /* modeled timeline of its runs */
    int failed;
    pthread_t th;
};

static void *
rr_run(void *arg)
{
    struct rr_worker *w = arg;
    struct npu_tensor *outs = calloc((size_t)w->nout + 1, sizeof(*outs));
    w->start = INFINITY;
    w->end = -INFINITY;
    for (long f = 0; f < w->frames && outs; f++) {
        struct npu_prog_run_stats rs = {0};
        if (npu_prog_session_run(w->s, w->in, w->nin, outs, w->nout, &rs) || !rs.timing_valid ||
            !rs.submits) {
            w->failed = 1;
            break;
        }
        w->start = fmin(w->start, rs.npu_modeled_start_s);
        w->end = fmax(w->end, rs.npu_modeled_end_s);
    }
    w->failed |= !outs;
    free(outs);
    return NULL;
}

/* --cores N: frames round robin over cores 0 .. N-1, one session per core, all running at
 * once (their jobs share DRAM on the device's modeled timeline). Prints the modeled span
 * from the first job's start to the last job's end and the frames per second it gives. */
static int
round_robin(FILE *out, struct npu_prog_model *pm, int cores, long frames, int threads,
            const struct npu_tensor *in, int nin, int nout, double one_frame_s, const char *tml)
{
    struct rr_worker w[3] = {0};
    int rc = 0;
    for (int c = 0; c < cores; c++) {
        w[c] = (struct rr_worker){
            .in = in, .nin = nin, .nout = nout, .frames = frames / cores + (c < frames % cores)};
        if (npu_prog_session_create(pm, c, threads, &w[c].s)) {
            fprintf(stderr, "npu-bench: cannot open a session on core %d\n", c);
            rc = 1;
        }
    }
    int started = 0;
    for (int c = 0; c < cores && !rc; c++, started++)
        if (pthread_create(&w[c].th, NULL, rr_run, &w[c]))
            rc = 1;
    for (int c = 0; c < started; c++)
        pthread_join(w[c].th, NULL);
    double t0 = INFINITY, t1 = -INFINITY;
    for (int c = 0; c < cores; c++) {
        rc |= w[c].failed;
        if (w[c].frames) {
            t0 = fmin(t0, w[c].start);
            t1 = fmax(t1, w[c].end);
        }
        npu_prog_session_destroy(w[c].s);
    }
    if (rc) {
        fprintf(stderr, "npu-bench: round-robin runs failed\n");
        return 1;
    }
    double span = t1 - t0;
    fprintf(out, "\n%ld frames round robin over %d core(s), one session per core at once:\n",
            frames, cores);
    fprintf(out, "  NPU span         %.3f ms  modeled (%s): first job's start to last job's end\n",
            span * 1e3, tml);
    fprintf(out, "  frames/s         %.1f  modeled (%s); one core, frame after frame: %.1f\n",
            span > 0 ? (double)frames / span : 0.0, tml, one_frame_s > 0 ? 1.0 / one_frame_s : 0.0);
    return 0;
}

static struct op_row *
row_for(struct op_row **rows, int *n, int *cap, const char *name, const char *kind, const char *op)
{
    /* compared as stored (unnamed and truncated alike), so one node is one row */
    char shown[sizeof((*rows)->name)];
    snprintf(shown, sizeof(shown), "%s", name && name[0] ? name : "(unnamed)");
    for (int i = 0; i < *n; i++)
        if (!strcmp((*rows)[i].name, shown) && !strcmp((*rows)[i].kind, kind))
            return &(*rows)[i];
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        struct op_row *nr = realloc(*rows, sizeof(*nr) * (size_t)nc);
        if (!nr)
            return NULL;
        *rows = nr;
        *cap = nc;
    }
    struct op_row *r = &(*rows)[(*n)++];
    memset(r, 0, sizeof(*r));
    memcpy(r->name, shown, sizeof(r->name));
    r->kind = kind;
    r->op = op ? op : "";
    return r;
}

static int
by_cost(const void *a, const void *b)
{
    const struct op_row *x = a, *y = b;
    double cx = x->modeled_s + x->host_s, cy = y->modeled_s + y->host_s;
    return cx < cy ? 1 : cx > cy ? -1 : strcmp(x->name, y->name);
}

static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static bool
is_matmul_class(enum npu_op op)
{
    return op == NPU_OP_MATMUL || op == NPU_OP_GEMM || op == NPU_OP_CONV ||
           op == NPU_OP_MATMUL_INTEGER || op == NPU_OP_CONV_INTEGER ||
           op == NPU_OP_QLINEAR_MATMUL || op == NPU_OP_QLINEAR_CONV ||
           op == NPU_OP_FUSED_ATTENTION || op == NPU_OP_EINSUM;
}

int
main(int argc, char **argv)
{
    enum { O_CACHE = 256, O_SEED, O_TOP, O_JSON, O_CPUCOST, O_TIMING, O_CORES, O_FRAMES };
    static const struct option lopts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"runs", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},
        {"dims", required_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 't'},
        {"core", required_argument, NULL, 'c'},
        {"partition", required_argument, NULL, 'p'},
        {"cache-dir", required_argument, NULL, O_CACHE},
        {"seed", required_argument, NULL, O_SEED},
        {"top", required_argument, NULL, O_TOP},
        {"json", required_argument, NULL, O_JSON},
        {"cpu-cost", required_argument, NULL, O_CPUCOST},
        {"timing", required_argument, NULL, O_TIMING},
        {"cores", required_argument, NULL, O_CORES},
        {"frames", required_argument, NULL, O_FRAMES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct npu_model_options mo = {.backend = "sim"};
    struct npu_build_options bo = {.no_cache = true};
    long runs = 3, warmup = 1, top = 0, rr_frames = 0;
    int rr_cores = 0;
    int core = 0;
    const char *json = NULL;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "b:n:w:d:t:c:p:h", lopts, NULL)) != -1) {
        switch (c) {
        case 'b': mo.backend = optarg; break;
        case 'n':
            runs = strtol(optarg, &end, 10);
            if (*end || runs < 1 || runs > 100000) {
                fprintf(stderr, "npu-bench: --runs %s: 1 to 100000\n", optarg);
                return 2;
            }
            break;
        case 'w':
            warmup = strtol(optarg, &end, 10);
            if (*end || warmup < 0 || warmup > 1000) {
                fprintf(stderr, "npu-bench: --warmup %s: 0 to 1000\n", optarg);
                return 2;
            }
            break;
        case 'd':
            mo.dim_values = optarg;
            mo.strict_dims = true;
            break;
        case 't':
            mo.cpu_threads = (int)strtol(optarg, &end, 10);
            if (*end || mo.cpu_threads < 0) {
                fprintf(stderr, "npu-bench: --threads %s: a count (0 = all)\n", optarg);
                return 2;
            }
            break;
        case 'c':
            core = (int)strtol(optarg, &end, 10);
            if (*end || core < 0 || core > 2) {
                fprintf(stderr, "npu-bench: --core %s: 0, 1 or 2\n", optarg);
                return 2;
            }
            break;
        case 'p':
            if (strcmp(optarg, "cost") && strcmp(optarg, "supported") && strcmp(optarg, "cpu")) {
                fprintf(stderr, "npu-bench: --partition %s: cost, supported or cpu\n", optarg);
                return 2;
            }
            setenv("NPU_PARTITION", optarg, 1);
            break;
        case O_CACHE:
            mo.cache_dir = optarg;
            bo.cache_dir = optarg;
            bo.no_cache = false;
            break;
        case O_SEED: rng_state = strtoull(optarg, &end, 10); break;
        case O_TOP: top = strtol(optarg, &end, 10); break;
        case O_JSON: json = optarg; break;
        case O_CORES:
            rr_cores = (int)strtol(optarg, &end, 10);
            if (*end || rr_cores < 1 || rr_cores > 3) {
                fprintf(stderr, "npu-bench: --cores %s: 1, 2 or 3\n", optarg);
                return 2;
            }
            break;
        case O_FRAMES:
            rr_frames = strtol(optarg, &end, 10);
            if (*end || rr_frames < 1 || rr_frames > 100000) {
                fprintf(stderr, "npu-bench: --frames %s: 1 to 100000\n", optarg);
                return 2;
            }
            break;
        case O_TIMING:
            if (npu_timing_model_select(optarg)) {
                fprintf(stderr, "npu-bench: --timing %s: use %s\n", optarg,
                        npu_timing_model_names());
                return 2;
            }
            break;
        case O_CPUCOST:
            if (npu_cpu_cost_mode_parse(optarg, &bo.cpu_cost)) {
                fprintf(stderr, "npu-bench: --cpu-cost %s: board, measured or auto\n", optarg);
                return 2;
            }
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "npu-bench: %s\n%s", optind >= argc ? "no model given" : "one model only",
                usage);
        return 2;
    }
    if (!strcmp(mo.backend, "cpu")) {
        fprintf(stderr, "npu-bench: backend cpu has no NPU figures; use npu-run --backend cpu\n");
        return 2;
    }
    const char *model = argv[optind];
    FILE *out = json && !strcmp(json, "-") ? stderr : stdout;
    const char *tml = npu_timing_model()->label;

    struct ests est = {0};
    bo.dim_values = mo.dim_values;
    bo.strict_dims = mo.strict_dims;
    bo.cpu_threads = mo.cpu_threads;
    bo.on_lowered = collect_estimates;
    bo.on_lowered_user = &est;
    struct npu_built *built = NULL;
    struct npu_device *dev = NULL;
    struct npu_prog_model *pm = NULL;
    struct npu_prog_session *s = NULL;
    char backend_name[16] = "";
    struct npu_device_info dinfo;
    if (npu_device_open(mo.backend, &dev) || npu_device_get_info(dev, &dinfo)) {
        fprintf(stderr, "npu-bench: %s: cannot open backend %s\n", model, mo.backend);
        npu_device_close(dev);
        free(est.v);
        return 1;
    }
    /* next to a real NPU this host is the board's CPU (the CPU cost model's auto rule) */
    bo.on_device = !strcmp(dinfo.backend, "rknpu") || !strcmp(dinfo.backend, "rocket");
    enum npu_cpu_cost_mode cpu_cost;
    if (npu_build_cpu_cost_mode(&bo, &cpu_cost) || npu_build(model, &bo, &built)) {
        fprintf(stderr, "npu-bench: %s: cannot load\n", model);
        npu_device_close(dev);
        free(est.v);
        return 1;
    }
    const struct npu_program *p = built->prog;
    if (npu_prog_model_create(dev, p, NULL, &pm) ||
        npu_prog_session_create(pm, core, mo.cpu_threads, &s)) {
        fprintf(stderr, "npu-bench: %s: cannot set up backend %s\n", model, mo.backend);
        npu_prog_session_destroy(s);
        npu_prog_model_destroy(pm);
        npu_device_close(dev);
        npu_built_free(built);
        free(est.v);
        return 1;
    }
    snprintf(backend_name, sizeof(backend_name), "%s", dinfo.backend);
    int nin = p->n_inputs, nout = p->n_outputs;
    struct npu_tensor *in = calloc((size_t)nin + 1, sizeof(*in));
    struct npu_tensor *outs = calloc((size_t)nout + 1, sizeof(*outs));
    for (int i = 0; i < nin; i++) {
        const struct npu_prog_tensor *t = &p->tensors[p->inputs[i]];
        struct npu_io_info io = {.name = t->name, .dtype = t->t.dtype, .ndim = t->t.ndim};
        memcpy(io.dims, t->t.dims, sizeof(io.dims));
        random_input(&io, &in[i]);
    }
    size_t ntasks = 0;
    for (int j = 0; j < p->n_jobs; j++)
        ntasks += p->jobs[j].n_tasks;
    struct npu_prog_step_stats *steps = calloc((size_t)p->n_steps + 1, sizeof(*steps));
    double *host_sum = calloc((size_t)p->n_steps + 1, sizeof(double));
    struct npu_prog_task_stats *tasks = calloc(ntasks + 1, sizeof(*tasks));
    struct npu_prog_run_stats rs = {0};
    double wall = 0, cpu = 0, conv = 0;
    int rc = 0;
    for (long r = 0; r < warmup + runs; r++) {
        rs = (struct npu_prog_run_stats){.steps = steps, .task_stats = tasks, .task_cap = ntasks};
        if (npu_prog_session_run(s, in, nin, outs, nout, &rs)) {
            fprintf(stderr, "npu-bench: %s: run %ld failed\n", model, r);
            rc = 1;
            goto done;
        }
        if (r < warmup)
            continue;
        wall += rs.wall_s;
        cpu += rs.cpu_s;
        conv += rs.convert_s;
        for (int i = 0; i < p->n_steps; i++)
            host_sum[i] += steps[i].host_s;
    }

    /* per op: NPU tasks by their node name, CPU steps and conversions by step;
     * jobs without task names by the compile-time estimates of their nodes */
    struct op_row *rows = NULL;
    int nrows = 0, caprows = 0, unnamed_jobs = 0;
    bool *job_named = calloc((size_t)p->n_jobs + 1, sizeof(bool));
    for (int j = 0; j < p->n_jobs; j++) {
        job_named[j] = p->jobs[j].n_tasks > 0;
        for (uint32_t t = 0; t < p->jobs[j].n_tasks; t++)
            job_named[j] &= p->jobs[j].tasks[t].name != NULL;
        unnamed_jobs += !job_named[j];
    }
    for (size_t t = 0; t < rs.n_task_stats; t++) {
        const struct npu_prog_task_stats *ts = &tasks[t];
        if (!job_named[p->steps[ts->step].job])
            continue;
        struct op_row *r = row_for(&rows, &nrows, &caprows, ts->name, "npu", "");
        if (!r)
            break;
        r->modeled_s += ts->modeled_s;
        r->task_s += ts->modeled_s;
        r->util_w += ts->mac_utilisation * ts->modeled_s;
        r->tasks++;
        r->dma += ts->dma_bytes;
        r->macs += ts->macs;
    }
    int cpu_mm = 0;
    for (int i = 0; i < p->n_steps; i++) {
        const struct npu_prog_step *st = &p->steps[i];
        if (st->kind == NPU_STEP_NPU_JOB && !job_named[st->job]) {
            /* the whole job as one row; its nodes' estimates follow below */
            struct op_row *r = row_for(&rows, &nrows, &caprows, st->name, "job", "");
            if (r) {
                r->modeled_s += steps[i].modeled_s;
                r->task_s += steps[i].modeled_s;
                r->util_w += steps[i].mac_utilisation * steps[i].modeled_s;
                r->submits++;
                r->tasks += steps[i].tasks;
                r->dma += steps[i].dma_bytes;
                r->macs += steps[i].macs;
            }
            continue;
        }
        if (st->kind == NPU_STEP_NPU_JOB) {
            /* the submit overhead goes to the job's first task's node */
            const struct npu_prog_job *jb = &p->jobs[st->job];
            const char *nm = jb->n_tasks && jb->tasks[0].name ? jb->tasks[0].name : st->name;
            struct op_row *r = row_for(&rows, &nrows, &caprows, nm, "npu", "");
            if (r) {
                double sum_tasks = 0;
                for (size_t t = 0; t < rs.n_task_stats; t++)
                    if (tasks[t].step == i)
                        sum_tasks += tasks[t].modeled_s;
                r->modeled_s += steps[i].modeled_s - sum_tasks;
                r->submits++;
            }
            continue;
        }
        bool is_cpu = st->kind == NPU_STEP_CPU;
        struct op_row *r = row_for(&rows, &nrows, &caprows, st->name, is_cpu ? "cpu" : "convert",
                                   is_cpu ? npu_op_name(st->op) : "");
        if (r)
            r->host_s += host_sum[i] / (double)runs;
        cpu_mm += is_cpu && is_matmul_class(st->op);
    }
    if (unnamed_jobs)
        for (int i = 0; i < est.n; i++) {
            struct op_row *r = row_for(&rows, &nrows, &caprows, est.v[i].name, "npu~", est.v[i].op);
            if (r)
                r->modeled_s += est.v[i].s;
        }
    free(job_named);
    qsort(rows, (size_t)nrows, sizeof(*rows), by_cost);

    fprintf(out, "model    %s on backend %s, core %d, %ld run(s) after %ld warm-up\n", model,
            backend_name, core, runs, warmup);
    fprintf(out, "program  %d steps, %d NPU job(s), %zu task(s)%s\n", p->n_steps, p->n_jobs, ntasks,
            built->from_cache ? " (compile cache hit)" : "");
    if (built->from_npub)
        fprintf(out, "partition as compiled into the artifact\n");
    else if (npu_build_partition_mode(&bo) == NPU_PARTITION_COST)
        fprintf(out, "partition by cost; CPU costs %s\n",
                cpu_cost == NPU_CPU_COST_BOARD
                    ? "modeled (RK3588 CPU model v1, not measured on a board)"
                    : "measured on this host");
    else
        fprintf(out, "partition %s\n",
                npu_build_partition_mode(&bo) == NPU_PARTITION_SUPPORTED
                    ? "supported (every supported node on the NPU)"
                    : "cpu (every node on the CPU)");
    fprintf(out, "\nper op: NPU figures modeled (%s); CPU ms measured on this host\n", tml);
    if (unnamed_jobs)
        fprintf(out,
                "(%d job(s) without task names: each is a 'job' row with the simulator's "
                "figures, and its nodes are 'npu~' rows with the back end's compile-time "
                "estimates%s)\n",
                unnamed_jobs,
                est.n ? "" : " - none here: compile from the model, not a .npub, to get them");
    fprintf(out, "%-44s %-7s %-18s %11s %7s %6s %10s %6s %9s\n", "op", "kind", "cpu op", "npu_ms",
            "submits", "tasks", "dma_MB", "util%", "cpu_ms");
    for (int i = 0; i < nrows && (!top || i < top); i++) {
        const struct op_row *r = &rows[i];
        char nm[45];
        snprintf(nm, sizeof(nm), "%s", r->name);
        double util = r->task_s > 0 ? r->util_w / r->task_s * 100 : 0;
        if (!strcmp(r->kind, "npu") || !strcmp(r->kind, "job"))
            fprintf(out, "%-44s %-7s %-18s %11.4f %7u %6u %10.3f %6.1f %9s\n", nm, r->kind, "",
                    r->modeled_s * 1e3, r->submits, r->tasks, (double)r->dma / 1e6, util, "-");
        else if (!strcmp(r->kind, "npu~"))
            fprintf(out, "%-44s %-7s %-18s %11.4f %7s %6s %10s %6s %9s\n", nm, r->kind, r->op,
                    r->modeled_s * 1e3, "-", "-", "-", "-", "-");
        else
            fprintf(out, "%-44s %-7s %-18s %11s %7s %6s %10s %6s %9.4f\n", nm, r->kind, r->op, "-",
                    "-", "-", "-", "-", r->host_s * 1e3);
    }
    if (top && nrows > top)
        fprintf(out, "(%d more)\n", nrows - (int)top);
    {
        /* the sum of every row (not only the printed ones): the per-frame figures below
         * come from the run statistics, so the two agree when every task is attributed */
        /* utilisation over the whole NPU time, submits included, as the per-frame figure */
        double npu_s = 0, util_w = 0, host_s = 0;
        unsigned sub = 0, tk = 0;
        uint64_t dma = 0;
        for (int i = 0; i < nrows; i++) {
            const struct op_row *r = &rows[i];
            if (!strcmp(r->kind, "npu~"))
                continue; /* estimates, already counted in their 'job' row */
            npu_s += r->modeled_s;
            util_w += r->util_w;
            sub += r->submits;
            tk += r->tasks;
            dma += r->dma;
            host_s += r->host_s;
        }
        fprintf(out, "%-44s %-7s %-18s %11.4f %7u %6u %10.3f %6.1f %9.4f\n", "(sum of the rows)",
                "total", "", npu_s * 1e3, sub, tk, (double)dma / 1e6,
                npu_s > 0 ? util_w / npu_s * 100 : 0, host_s * 1e3);
    }
    fprintf(out, "\nper frame:\n");
    fprintf(out, "  NPU time         %.3f ms  modeled (%s)%s\n", rs.npu_modeled_s * 1e3, tml,
            rs.timing_valid ? "" : " (not every job reported timing)");
    fprintf(out, "  submits          %u\n", rs.submits);
    fprintf(out, "  tasks            %u\n", rs.tasks);
    fprintf(out, "  DMA              %.3f MB  modeled (%s)\n", rs.dma_bytes / 1e6, tml);
    fprintf(out, "  MAC utilisation  %.1f%%  modeled (%s)\n", rs.mac_utilisation * 100, tml);
    fprintf(out, "  CPU ops          %.3f ms  measured (host)\n", cpu / (double)runs * 1e3);
    fprintf(out, "  conversions      %.3f ms  measured (host)\n", conv / (double)runs * 1e3);
    fprintf(out, "  wall             %.3f ms  measured (host; includes simulating the NPU)\n",
            wall / (double)runs * 1e3);
    fprintf(out, "  matmul-class ops on the CPU: %d%s\n", cpu_mm,
            cpu_mm ? " (see the cpu rows above)" : " (every one runs on the NPU)");
    if (rr_cores > 0 && round_robin(out, pm, rr_cores, rr_frames ? rr_frames : 4L * rr_cores,
                                    mo.cpu_threads, in, nin, nout, rs.npu_modeled_s, tml)) {
        rc = 1;
        goto done;
    }

    if (json) {
        FILE *jf = !strcmp(json, "-") ? stdout : fopen(json, "w");
        if (!jf) {
            fprintf(stderr, "npu-bench: cannot write %s\n", json);
            rc = 1;
            goto done;
        }
        fprintf(jf, "{\n  \"model\": ");
        json_str(jf, model);
        fprintf(jf, ",\n  \"backend\": ");
        json_str(jf, backend_name);
        fprintf(jf, ",\n  \"timing_model\": \"%s\",\n", tml);
        fprintf(jf, "  \"task_overhead_us\": %.3f,\n  \"submit_overhead_us\": %.3f,\n",
                npu_timing_model()->task_overhead_s * 1e6,
                npu_timing_model()->submit_overhead_s * 1e6);
        fprintf(jf, "  \"runs\": %ld,\n", runs);
        fprintf(jf,
                "  \"per_frame\": {\"npu_modeled_ms\": %.6f, \"submits\": %u, \"tasks\": %u, "
                "\"dma_bytes\": %llu, \"mac_utilisation\": %.6f, \"cpu_ms\": %.6f, "
                "\"convert_ms\": %.6f, \"wall_ms\": %.6f, \"timing_valid\": %s, "
                "\"cpu_matmul_ops\": %d},\n",
                rs.npu_modeled_s * 1e3, rs.submits, rs.tasks, (unsigned long long)rs.dma_bytes,
                rs.mac_utilisation, cpu / (double)runs * 1e3, conv / (double)runs * 1e3,
                wall / (double)runs * 1e3, rs.timing_valid ? "true" : "false", cpu_mm);
        fprintf(jf, "  \"ops\": [\n");
        for (int i = 0; i < nrows; i++) {
            const struct op_row *r = &rows[i];
            fprintf(jf, "    {\"name\": ");
            json_str(jf, r->name);
            fprintf(jf, ", \"kind\": \"%s\", \"cpu_op\": ", r->kind);
            json_str(jf, r->op);
            fprintf(jf,
                    ", \"npu_modeled_ms\": %.6f, \"submits\": %u, \"tasks\": %u, "
                    "\"dma_bytes\": %llu, \"macs\": %llu, \"cpu_ms\": %.6f}%s\n",
                    r->modeled_s * 1e3, r->submits, r->tasks, (unsigned long long)r->dma,
                    (unsigned long long)r->macs, r->host_s * 1e3, i + 1 < nrows ? "," : "");
        }
        fprintf(jf, "  ]\n}\n");
        if (jf != stdout)
            fclose(jf);
    }
    free(rows);
done:
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    free(in);
    free(outs);
    free(steps);
    free(host_sum);
    free(tasks);
    npu_prog_session_destroy(s);
    npu_prog_model_destroy(pm);
    npu_device_close(dev);
    npu_built_free(built);
    free(est.v);
    return rc;
}
