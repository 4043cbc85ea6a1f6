/* SPDX-License-Identifier: MIT */
/*
 * npu-run: runs a model once or N times through the model API (npu-model.h)
 * with inputs from .npy files or seeded random data, writes every output as
 * DIR/<sanitised output name>.npy, and prints the time per run, the backend
 * that ran and the run statistics. It is the command-line face of the same
 * path the GStreamer elements take, so the model tests drive it as a user
 * would. `npu-run --help` is the manual.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "npu/npu-backend.h"
#include "npu/npu-common.h"
#include "npu/npu-fp16.h"
#include "npu/npu-model.h"
#include "npu/npu-npy.h"
#include "npu/npu-timing.h"

#define MAX_INPUT_ARGS 256

static const char help_text[] =
    "NAME\n"
    "    npu-run - run an ONNX model (or compiled .npub) through OpenNPU\n"
    "\n"
    "SYNOPSIS\n"
    "    npu-run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--backend NAME]\n"
    "            [--runs N] [--dims name=value,...] [--seed S] [--threads N]\n"
    "            [--core N] [--cache-dir DIR] [--cpu-cost MODEL] [--int-range LO,HI]\n"
    "            [--max-memory SIZE] [--hw-profile fast|verified] [--per-run]\n"
    "            [--quiet]\n"
    "\n"
    "DESCRIPTION\n"
    "    Loads MODEL with npu_model_load(), creates one session, runs it --runs times\n"
    "    on the same inputs and prints the time per run (mean and min), the backend\n"
    "    that ran, and the statistics of the last run. With --output-dir the outputs\n"
    "    of the last run are written as NumPy .npy files.\n"
    "\n"
    "OPTIONS\n"
    "    -i, --input NAME=FILE.npy\n"
    "        Feed model input NAME from FILE (NumPy .npy, C order, little-endian).\n"
    "        Its dtype and shape must equal the model's (see --dims). Repeatable;\n"
    "        inputs not given get seeded random data (see RANDOM INPUTS).\n"
    "    -o, --output-dir DIR\n"
    "        Write each output to DIR/<name>.npy (see OUTPUT FILES). DIR is created\n"
    "        if missing (one level). Without it, outputs are only summarised.\n"
    "    -b, --backend NAME\n"
    "        cpu (CPU executor only), sim (built-in NPU simulator), rknpu, rocket, or\n"
    "        auto (default: the best one present).\n"
    "    -n, --runs N\n"
    "        Run N times (default 1); times are reported as mean and min over N.\n"
    "    -d, --dims name=value,...\n"
    "        Sizes for symbolic input dims (e.g. batch=4,seq=64). A symbolic dim\n"
    "        not listed takes its size from the --input file that has it (and\n"
    "        passes it on to other inputs with the same dim name), else 1.\n"
    "    -s, --seed S\n"
    "        Seed of the random inputs (default 0). Input number k uses stream\n"
    "        S*1000+k, so giving some inputs by file does not change the others.\n"
    "    -t, --threads N\n"
    "        Threads for CPU ops (default 0: one per CPU).\n"
    "    -c, --core N\n"
    "        NPU core (0-2) of the session (default 0; ignored by cpu).\n"
    "    --cache-dir DIR\n"
    "        Compiled-artifact cache.\n"
    "    --cpu-cost MODEL\n"
    "        CPU costs when the NPU backends partition by cost: board (RK3588 CPU\n"
    "        model v1, modeled, the same program on every host), measured (timed on\n"
    "        this host), auto (default: measured on rknpu/rocket, where this host is\n"
    "        the board's CPU; board on sim). Sets NPU_CPU_COST.\n"
    "    --hw-profile fast|verified|auto\n"
    "        Register patterns the compiled program may use (docs/evidence.md): fast\n"
    "        (every pattern the back end knows) or verified (only NPU tasks whose\n"
    "        every register write the evidence ledger covers at level V, M or O;\n"
    "        other nodes run on the CPU). Default auto: $NPU_HW_PROFILE, else\n"
    "        verified on rknpu and rocket and fast on sim.\n"
    "    --int-range LO,HI\n"
    "        Range [LO, HI) of random integer inputs (default 0,100).\n"
    "    --max-memory SIZE\n"
    "        Refuse, before allocating anything, a model whose inputs and outputs\n"
    "        together need more than SIZE bytes (suffix K, M, G or T: powers of\n"
    "        1024; 0 = no limit). Default: 80% of this machine's RAM. The error\n"
    "        gives the sizes.\n"
    "    --per-run\n"
    "        Also print one line per run: its wall time, the process's CPU time\n"
    "        (all threads) and its minor page faults, to see warm-up effects.\n"
    "    -q, --quiet\n"
    "        Print only errors and the timing line.\n"
    "    -h, --help\n"
    "        This text.\n"
    "\n"
    "RANDOM INPUTS\n"
    "    f32/f16/f64: N(0,1). int32/int64/int16: uniform in [LO,HI) of --int-range\n"
    "    (default [0,100): valid token ids for any vocabulary of 100 or more, and\n"
    "    valid indices along most axes); but an integer or bool input whose name\n"
    "    contains \"mask\" is all ones (attend everywhere). int8: uniform in\n"
    "    [-128,127]; uint8/uint16/uint32/uint64: uniform in [0,255] (image-like).\n"
    "    bool: 0 or 1 with equal odds.\n"
    "\n"
    "OUTPUT FILES\n"
    "    Output NAME is written to DIR/<file>.npy where <file> is NAME with every\n"
    "    byte outside [A-Za-z0-9._-] replaced by '_', a leading '.' replaced by\n"
    "    '_', cut to 200 bytes; an empty name becomes \"output<k>\". If two outputs\n"
    "    map to the same file, the later one gets \"-<k>\" appended (k = output\n"
    "    index). Every renamed output is reported. Example: \"/logits:0\" ->\n"
    "    DIR/_logits_0.npy.\n"
    "\n"
    "STATISTICS\n"
    "    wall and host CPU-op time are measured; NPU time, DMA bytes and MAC\n"
    "    utilisation are modeled and printed as \"modeled (timing model v2)\" (the\n"
    "    model in use: v2 unless $NPU_TIMING names another) when the backend\n"
    "    reports them (never on cpu).\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 1 load or run failure; 2 bad command line or input file.\n"
    "\n"
    "EXAMPLES\n"
    "    npu-run siglip.onnx --backend cpu --runs 10\n"
    "    npu-run gpt2.onnx -i input_ids=ids.npy -o out/ --dims batch=1\n";

struct input_arg {
    const char *name;
    const char *file;
    bool used;
};

struct opts {
    const char *model;
    const char *outdir;
    const char *backend;
    const char *dims;
    const char *cache_dir;
    int hw_profile; /* enum npu_hw_profile */
    uint64_t seed;
    long runs;
    int threads;
    int core;
    int64_t int_lo, int_hi;
    uint64_t max_memory; /* bytes; 0 = no limit */
    bool max_memory_set;
    bool quiet;
    bool per_run;
    struct input_arg in[MAX_INPUT_ARGS];
    int nin;
};

/* ---- seeded random numbers: splitmix64, Box-Muller ---- */

static uint64_t
rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double
rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double
rng_normal(uint64_t *s)
{
    double u1 = rng_uniform(s), u2 = rng_uniform(s);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void
fill_random(struct npu_tensor *t, const char *name, uint64_t stream, const struct opts *o)
{
    int64_t n = npu_tensor_numel(t);
    uint64_t s = stream * 0x2545f4914f6cdd1dull + 12345;
    bool mask = strstr(name, "mask") != NULL;
    int64_t lo = o->int_lo, span = o->int_hi - o->int_lo;
    for (int64_t k = 0; k < n; k++) {
        switch (t->dtype) {
        case NPU_DTYPE_FP32: ((float *)t->data)[k] = (float)rng_normal(&s); break;
        case NPU_DTYPE_FP64: ((double *)t->data)[k] = rng_normal(&s); break;
        case NPU_DTYPE_FP16:
            ((uint16_t *)t->data)[k] = npu_fp32_to_fp16((float)rng_normal(&s));
            break;
        case NPU_DTYPE_INT64:
            ((int64_t *)t->data)[k] = mask ? 1 : lo + (int64_t)(rng_next(&s) % (uint64_t)span);
            break;
        case NPU_DTYPE_INT32:
            ((int32_t *)t->data)[k] =
                mask ? 1 : (int32_t)(lo + (int64_t)(rng_next(&s) % (uint64_t)span));
            break;
        case NPU_DTYPE_INT16:
            ((int16_t *)t->data)[k] =
                mask ? 1 : (int16_t)(lo + (int64_t)(rng_next(&s) % (uint64_t)span));
            break;
        case NPU_DTYPE_INT8: ((int8_t *)t->data)[k] = (int8_t)(rng_next(&s) % 256 - 128); break;
        case NPU_DTYPE_UINT8: ((uint8_t *)t->data)[k] = (uint8_t)(rng_next(&s) % 256); break;
        case NPU_DTYPE_UINT16: ((uint16_t *)t->data)[k] = (uint16_t)(rng_next(&s) % 256); break;
        case NPU_DTYPE_UINT32: ((uint32_t *)t->data)[k] = (uint32_t)(rng_next(&s) % 256); break;
        case NPU_DTYPE_UINT64: ((uint64_t *)t->data)[k] = rng_next(&s) % 256; break;
        case NPU_DTYPE_BOOL:
            ((uint8_t *)t->data)[k] = mask ? 1 : (uint8_t)(rng_next(&s) & 1);
            break;
        default: break;
        }
    }
}

/* ---- helpers ---- */

static void
format_shape(char *buf, size_t cap, int ndim, const int64_t *dims)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

static bool
parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* User plus system CPU time of the process between two getrusage() calls, in seconds. */
static double
rusage_cpu_s(const struct rusage *b, const struct rusage *a)
{
    double tb = (double)(b->ru_utime.tv_sec + b->ru_stime.tv_sec) +
                (double)(b->ru_utime.tv_usec + b->ru_stime.tv_usec) * 1e-6;
    double ta = (double)(a->ru_utime.tv_sec + a->ru_stime.tv_sec) +
                (double)(a->ru_utime.tv_usec + a->ru_stime.tv_usec) * 1e-6;
    return tb - ta;
}

/* The output file name for output k (see OUTPUT FILES in the help text). */
static void
sanitise_name(const char *name, int k, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *p = name; *p && n < 200 && n + 1 < cap; p++) {
        char c = *p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        buf[n++] = ok ? c : '_';
    }
    buf[n] = '\0';
    if (n == 0)
        snprintf(buf, cap, "output%d", k);
    else if (buf[0] == '.')
        buf[0] = '_';
}

/* "123", "512K", "8G" (powers of 1024). */
static bool
parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    double v = strtod(s, &end);
    if (errno || end == s || !(v >= 0))
        return false;
    int shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default: return false;
    }
    if (*end == 'B' || *end == 'i')
        end += *end == 'i' && end[1] == 'B' ? 2 : 1;
    if (*end)
        return false;
    v = ldexp(v, shift);
    if (v >= 18446744073709551615.0)
        return false;
    *out = (uint64_t)v;
    return true;
}

static void
format_bytes(char *buf, size_t cap, uint64_t b)
{
    if (b >= (1ull << 30))
        snprintf(buf, cap, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, cap, "%.1f MiB", (double)b / (1ull << 20));
    else
        snprintf(buf, cap, "%" PRIu64 " bytes", b);
}

/* The default budget: 80% of the machine's RAM (0 = unknown, no limit). */
static uint64_t
default_budget(uint64_t *ram)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    *ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    return *ram / 5 * 4;
}

/* Refuses a model whose inputs and outputs alone exceed the budget, before
 * any of them is allocated (random input generation runs at ~10 s/GB and an
 * oversized run would end with the OOM killer). Returns 0 or an exit status. */
static int
check_memory(const struct npu_model *m, const struct opts *o)
{
    uint64_t ram = 0, budget = o->max_memory_set ? o->max_memory : default_budget(&ram);
    uint64_t tin = 0, tout = 0, big = 0;
    const struct npu_io_info *bigi = NULL;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? npu_model_num_outputs(m) : npu_model_num_inputs(m);
        for (int k = 0; k < n; k++) {
            const struct npu_io_info *io = pass ? npu_model_output(m, k) : npu_model_input(m, k);
            struct npu_tensor t = {.dtype = io->dtype, .ndim = io->ndim};
            memcpy(t.dims, io->dims, sizeof(io->dims));
            int64_t nb = npu_tensor_nbytes(&t);
            uint64_t b = nb < 0 ? UINT64_MAX / 4 : (uint64_t)nb;
            *(pass ? &tout : &tin) += b;
            if (b >= big) {
                big = b;
                bigi = io;
            }
        }
    }
    if (!budget || tin + tout <= budget)
        return 0;
    char a[32], bi[32], bo[32], bb[32], bg[32], r[32], shape[160];
    format_bytes(a, sizeof(a), tin + tout);
    format_bytes(bi, sizeof(bi), tin);
    format_bytes(bo, sizeof(bo), tout);
    format_bytes(bb, sizeof(bb), budget);
    format_bytes(bg, sizeof(bg), big);
    format_bytes(r, sizeof(r), ram);
    format_shape(shape, sizeof(shape), bigi->ndim, bigi->dims);
    fprintf(stderr,
            "npu-run: the model's inputs and outputs need %s (inputs %s, outputs %s; the largest "
            "is '%s', %s %s, %s), more than the memory budget of %s (%s%s%s); check --dims, or "
            "raise --max-memory\n",
            a, bi, bo, bigi->name ? bigi->name : "", npu_dtype_name(bigi->dtype), shape, bg, bb,
            o->max_memory_set ? "--max-memory" : "80% of this machine's ",
            o->max_memory_set ? "" : r, o->max_memory_set ? "" : " of RAM; --max-memory");
    return 1;
}

static void
usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "npu-run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'npu-run --help'.\n");
}

static int
parse_args(int argc, char **argv, struct opts *o)
{
    enum { OPT_CACHE = 256, OPT_INT_RANGE, OPT_CPU_COST, OPT_MAX_MEM, OPT_HW_PROFILE, OPT_PER_RUN };
    static const struct option lopts[] = {
        {"input", required_argument, NULL, 'i'},
        {"output-dir", required_argument, NULL, 'o'},
        {"backend", required_argument, NULL, 'b'},
        {"runs", required_argument, NULL, 'n'},
        {"dims", required_argument, NULL, 'd'},
        {"seed", required_argument, NULL, 's'},
        {"threads", required_argument, NULL, 't'},
        {"core", required_argument, NULL, 'c'},
        {"cache-dir", required_argument, NULL, OPT_CACHE},
        {"int-range", required_argument, NULL, OPT_INT_RANGE},
        {"cpu-cost", required_argument, NULL, OPT_CPU_COST},
        {"max-memory", required_argument, NULL, OPT_MAX_MEM},
        {"hw-profile", required_argument, NULL, OPT_HW_PROFILE},
        {"per-run", no_argument, NULL, OPT_PER_RUN},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long v;
    int c;

    o->runs = 1;
    o->int_lo = 0;
    o->int_hi = 100;
    while ((c = getopt_long(argc, argv, "i:o:b:n:d:s:t:c:qh", lopts, NULL)) != -1) {
        switch (c) {
        case 'i': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1]) {
                usage_error("--input wants NAME=FILE.npy, got '%s'", optarg);
                return 2;
            }
            if (o->nin >= MAX_INPUT_ARGS) {
                usage_error("too many --input options%s", "");
                return 2;
            }
            *eq = '\0';
            for (int i = 0; i < o->nin; i++)
                if (!strcmp(o->in[i].name, optarg)) {
                    usage_error("input '%s' given twice", optarg);
                    return 2;
                }
            o->in[o->nin].name = optarg;
            o->in[o->nin].file = eq + 1;
            o->nin++;
            break;
        }
        case 'o': o->outdir = optarg; break;
        case 'b': o->backend = optarg; break;
        case 'd': o->dims = optarg; break;
        case OPT_CACHE: o->cache_dir = optarg; break;
        case OPT_CPU_COST:
            if (strcmp(optarg, "board") && strcmp(optarg, "measured") && strcmp(optarg, "auto")) {
                usage_error("--cpu-cost wants board, measured or auto, got '%s'", optarg);
                return 2;
            }
            setenv("NPU_CPU_COST", optarg, 1); /* read by the compile (npu-partition.h) */
            break;
        case OPT_HW_PROFILE:
            if (npu_hw_profile_parse(optarg, &o->hw_profile)) {
                usage_error("--hw-profile wants fast, verified or auto, got '%s'", optarg);
                return 2;
            }
            break;
        case 'q': o->quiet = true; break;
        case OPT_PER_RUN: o->per_run = true; break;
        case 'n':
            if (!parse_long(optarg, 1, 1000000, &o->runs)) {
                usage_error("--runs wants a count from 1 to 1000000, got '%s'", optarg);
                return 2;
            }
            break;
        case 's': {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(optarg, &end, 0);
            if (errno || end == optarg || *end || optarg[0] == '-') {
                usage_error("--seed wants a non-negative integer, got '%s'", optarg);
                return 2;
            }
            o->seed = s;
            break;
        }
        case 't':
            if (!parse_long(optarg, 0, 1024, &v)) {
                usage_error("--threads wants 0..1024, got '%s'", optarg);
                return 2;
            }
            o->threads = (int)v;
            break;
        case 'c':
            if (!parse_long(optarg, 0, 2, &v)) {
                usage_error("--core wants 0, 1 or 2, got '%s'", optarg);
                return 2;
            }
            o->core = (int)v;
            break;
        case OPT_INT_RANGE: {
            long long lo, hi;
            char tail;
            if (sscanf(optarg, "%lld,%lld%c", &lo, &hi, &tail) != 2 || hi <= lo || lo < INT32_MIN ||
                hi > INT32_MAX) {
                usage_error("--int-range wants LO,HI with LO < HI (32-bit), got '%s'", optarg);
                return 2;
            }
            o->int_lo = lo;
            o->int_hi = hi;
            break;
        }
        case OPT_MAX_MEM:
            if (!parse_size(optarg, &o->max_memory)) {
                usage_error("--max-memory wants a size such as 512M or 8G (0 = no limit), got '%s'",
                            optarg);
                return 2;
            }
            o->max_memory_set = true;
            break;
        case 'h': fputs(help_text, stdout); return 0;
        default: fprintf(stderr, "Try 'npu-run --help'.\n"); return 2;
        }
    }
    if (optind != argc - 1) {
        usage_error("%s", optind >= argc ? "no MODEL given" : "more than one MODEL given");
        return 2;
    }
    o->model = argv[optind];
    return -1;
}

/* The --dims string to load the model with: --dims, then "<input>:<axis>=<size>"
 * for every axis of every --input file that can be read (the importer sizes
 * a symbolic dim by them when --dims does not name it, and passes the value
 * on to the dim's name: attention_mask follows input_ids). Files that cannot
 * be read are reported later, by prepare_inputs. NULL if there is nothing to
 * add (then --dims alone is used); else malloc'd. */
static void
drop_log(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    (void)level, (void)domain, (void)msg, (void)user;
}

static char *
dims_with_input_shapes(const struct opts *o)
{
    size_t cap = (o->dims ? strlen(o->dims) : 0) + 1, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    if (o->dims)
        len = (size_t)snprintf(s, cap, "%s", o->dims);
    bool added = false;
    for (int a = 0; a < o->nin; a++) {
        const char *nm = o->in[a].name;
        if (strchr(nm, ',') || strchr(nm, '='))
            continue; /* cannot be written in a dims string */
        struct npu_tensor t;
        npu_log_set_handler(drop_log, NULL); /* prepare_inputs reports unreadable files */
        enum npu_status st = npu_npy_read(o->in[a].file, &t);
        npu_log_set_handler(NULL, NULL);
        if (st != NPU_OK)
            continue;
        for (int d = 0; d < t.ndim; d++) {
            size_t add = strlen(nm) + 48;
            char *n2 = realloc(s, len + add + 1);
            if (!n2) {
                npu_npy_free(&t);
                free(s);
                return NULL;
            }
            s = n2;
            len += (size_t)snprintf(s + len, add + 1, "%s%s:%d=%" PRId64, len ? "," : "", nm, d,
                                    t.dims[d]);
            added = true;
        }
        npu_npy_free(&t);
    }
    if (!added) {
        free(s);
        return NULL;
    }
    return s;
}

/* Loads --input files and fills the rest with random data; returns 0 or an
 * exit status. */
static int
prepare_inputs(const struct npu_model *m, struct opts *o, struct npu_tensor *in, bool *owned_npy)
{
    int nin = npu_model_num_inputs(m);
    for (int a = 0; a < o->nin; a++) {
        int k;
        for (k = 0; k < nin; k++)
            if (!strcmp(npu_model_input(m, k)->name, o->in[a].name))
                break;
        if (k == nin) {
            fprintf(stderr, "npu-run: the model has no input '%s'; its inputs are:", o->in[a].name);
            for (int i = 0; i < nin; i++)
                fprintf(stderr, " '%s'", npu_model_input(m, i)->name);
            fprintf(stderr, "\n");
            return 2;
        }
        o->in[a].used = true;
    }
    for (int k = 0; k < nin; k++) {
        const struct npu_io_info *info = npu_model_input(m, k);
        const char *file = NULL;
        for (int a = 0; a < o->nin; a++)
            if (!strcmp(o->in[a].name, info->name))
                file = o->in[a].file;
        char want[160], got[160];
        format_shape(want, sizeof(want), info->ndim, info->dims);
        if (file) {
            if (npu_npy_read(file, &in[k]) != NPU_OK) {
                fprintf(stderr, "npu-run: input '%s': cannot use %s (reason above)\n", info->name,
                        file);
                return 2;
            }
            owned_npy[k] = true;
            format_shape(got, sizeof(got), in[k].ndim, in[k].dims);
            if (in[k].dtype != info->dtype) {
                fprintf(stderr, "npu-run: input '%s': %s holds %s %s, the model wants %s %s\n",
                        info->name, file, npu_dtype_name(in[k].dtype), got,
                        npu_dtype_name(info->dtype), want);
                return 2;
            }
            bool same = in[k].ndim == info->ndim;
            for (int d = 0; same && d < info->ndim; d++)
                same = in[k].dims[d] == info->dims[d];
            if (!same) {
                fprintf(stderr, "npu-run: input '%s': %s has shape %s, the model wants %s%s\n",
                        info->name, file, got, want,
                        " (a symbolic dim takes its --dims value, else the size of the"
                        " --input that has it, else 1)");
                return 2;
            }
            if (!o->quiet)
                printf("input  %-24s %s %s from %s\n", info->name, npu_dtype_name(info->dtype),
                       want, file);
        } else {
            in[k].dtype = info->dtype;
            in[k].ndim = info->ndim;
            memcpy(in[k].dims, info->dims, sizeof(info->dims));
            int64_t nb = npu_tensor_nbytes(&in[k]);
            if (nb < 0 || npu_dtype_size(info->dtype) == 0) {
                fprintf(stderr, "npu-run: input '%s': cannot make random %s %s\n", info->name,
                        npu_dtype_name(info->dtype), want);
                return 1;
            }
            in[k].data = aligned_alloc(64, NPU_ALIGN((size_t)nb + 1, (size_t)64));
            if (!in[k].data) {
                fprintf(stderr, "npu-run: out of memory for input '%s'\n", info->name);
                return 1;
            }
            fill_random(&in[k], info->name, o->seed * 1000 + (uint64_t)k, o);
            if (!o->quiet)
                printf("input  %-24s %s %s random (seed %" PRIu64 ")\n", info->name,
                       npu_dtype_name(info->dtype), want, o->seed);
        }
    }
    return 0;
}

static void
summarise(const struct npu_tensor *t, char *buf, size_t cap)
{
    int64_t n = npu_tensor_numel(t);
    if (n <= 0 || !t->data ||
        (t->dtype != NPU_DTYPE_FP32 && t->dtype != NPU_DTYPE_FP64 && t->dtype != NPU_DTYPE_INT64 &&
         t->dtype != NPU_DTYPE_INT32)) {
        buf[0] = '\0';
        return;
    }
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int64_t nan = 0;
    for (int64_t k = 0; k < n; k++) {
        double v = t->dtype == NPU_DTYPE_FP32    ? ((const float *)t->data)[k]
                   : t->dtype == NPU_DTYPE_FP64  ? ((const double *)t->data)[k]
                   : t->dtype == NPU_DTYPE_INT64 ? (double)((const int64_t *)t->data)[k]
                                                 : ((const int32_t *)t->data)[k];
        if (isnan(v)) {
            nan++;
            continue;
        }
        mn = fmin(mn, v);
        mx = fmax(mx, v);
        sum += v;
    }
    snprintf(buf, cap, " min %.5g max %.5g mean %.5g%s", mn, mx,
             n > nan ? sum / (double)(n - nan) : NAN, nan ? " (has NaN)" : "");
}

static int
write_outputs(const struct npu_model *m, const struct opts *o, const struct npu_tensor *out)
{
    int nout = npu_model_num_outputs(m);
    char(*files)[256] = calloc((size_t)nout + 1, sizeof(*files));
    int rc = 0;
    if (!files)
        return 1;
    if (o->outdir && mkdir(o->outdir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "npu-run: cannot create %s: %s\n", o->outdir, strerror(errno));
        free(files);
        return 1;
    }
    for (int k = 0; k < nout; k++) {
        const char *name = npu_model_output(m, k)->name;
        sanitise_name(name ? name : "", k, files[k], 220);
        for (int j = 0; j < k; j++)
            if (!strcmp(files[j], files[k])) {
                size_t l = strlen(files[k]);
                snprintf(files[k] + l, sizeof(files[k]) - l, "-%d", k);
                break;
            }
        char shape[160], stats[160];
        format_shape(shape, sizeof(shape), out[k].ndim, out[k].dims);
        summarise(&out[k], stats, sizeof(stats));
        if (!o->quiet)
            printf("output %-24s %s %s%s\n", name, npu_dtype_name(out[k].dtype), shape, stats);
        if (!o->outdir)
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.npy", o->outdir, files[k]);
        if (npu_npy_write(path, &out[k]) != NPU_OK) {
            fprintf(stderr, "npu-run: cannot write output '%s' (reason above)\n", name);
            rc = 1;
            continue;
        }
        if (!o->quiet && strcmp(files[k], name ? name : ""))
            printf("       (output '%s' written as %s)\n", name, path);
    }
    if (o->outdir && !o->quiet && !rc)
        printf("wrote %d output(s) to %s\n", nout, o->outdir);
    free(files);
    return rc;
}

int
main(int argc, char **argv)
{
    struct opts o = {0};
    struct npu_model *m = NULL;
    struct npu_session *s = NULL;
    struct npu_tensor *in = NULL, *out = NULL;
    bool *owned = NULL;
    int nin = 0, rc;
    enum npu_status st;

    rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    char *dims = dims_with_input_shapes(&o);
    struct npu_model_options mo = {
        .backend = o.backend,
        .cache_dir = o.cache_dir,
        .cpu_threads = o.threads,
        .dim_values = dims ? dims : o.dims,
        .strict_dims = true,
        .hw_profile = o.hw_profile,
    };
    st = npu_model_load(o.model, &mo, &m);
    free(dims);
    if (st != NPU_OK) {
        fprintf(stderr, "npu-run: cannot load %s: %s\n", o.model, npu_status_str(st));
        return 1;
    }
    nin = npu_model_num_inputs(m);
    int nout = npu_model_num_outputs(m);
    in = calloc((size_t)nin + 1, sizeof(*in));
    out = calloc((size_t)nout + 1, sizeof(*out));
    owned = calloc((size_t)nin + 1, sizeof(*owned));
    if (!in || !out || !owned) {
        fprintf(stderr, "npu-run: out of memory\n");
        rc = 1;
        goto out_free;
    }
    if (!o.quiet)
        printf("model  %s: %d input(s), %d output(s), backend %s\n", o.model, nin, nout,
               npu_model_backend(m));
    if ((rc = check_memory(m, &o)) || (rc = prepare_inputs(m, &o, in, owned)))
        goto out_free;

    st = npu_session_create(m, o.core, &s);
    if (st != NPU_OK) {
        fprintf(stderr, "npu-run: cannot create a session: %s\n", npu_status_str(st));
        rc = 1;
        goto out_free;
    }
    struct npu_run_stats stats = {0};
    double sum = 0, best = INFINITY;
    for (long r = 0; r < o.runs; r++) {
        struct rusage ru0, ru1;
        if (o.per_run)
            getrusage(RUSAGE_SELF, &ru0);
        double t0 = now_s();
        st = npu_session_run(s, in, nin, out, nout, &stats);
        double dt = now_s() - t0;
        if (o.per_run && st == NPU_OK) {
            getrusage(RUSAGE_SELF, &ru1);
            printf("run    %ld: %.3f ms wall, %.3f ms CPU, %ld minor fault(s)\n", r + 1, dt * 1e3,
                   rusage_cpu_s(&ru1, &ru0) * 1e3, ru1.ru_minflt - ru0.ru_minflt);
        }
        if (st != NPU_OK) {
            fprintf(stderr, "npu-run: run %ld failed: %s\n", r + 1, npu_status_str(st));
            rc = 1;
            goto out_session;
        }
        sum += dt;
        best = fmin(best, dt);
    }
    if ((rc = write_outputs(m, &o, out)))
        goto out_session;
    printf("time   %.3f ms mean, %.3f ms min over %ld run(s) on backend %s\n",
           sum / (double)o.runs * 1e3, best * 1e3, o.runs, npu_model_backend(m));
    if (!o.quiet) {
        printf("stats  last run: wall %.3f ms, host CPU ops %.3f ms\n", stats.wall_s * 1e3,
               stats.cpu_s * 1e3);
        if (stats.submits || stats.tasks)
            printf("stats  NPU jobs: %u submit(s), %u task(s)\n", stats.submits, stats.tasks);
        if (stats.npu_modeled_s > 0 || stats.dma_bytes || stats.mac_utilisation > 0)
            printf("stats  NPU time %.3f ms, DMA %" PRIu64 " bytes, MAC utilisation %.1f%%: "
                   "modeled (%s)\n",
                   stats.npu_modeled_s * 1e3, stats.dma_bytes, stats.mac_utilisation * 100.0,
                   npu_timing_model()->label);
    }
    rc = 0;
out_session:
    npu_session_destroy(s);
out_free:
    for (int k = 0; in && k < nin; k++) {
        if (owned[k])
            npu_npy_free(&in[k]);
        else
            free(in[k].data);
    }
    free(in);
    free(out);
    free(owned);
    npu_model_free(m);
    return rc;
}
