/* SPDX-License-Identifier: MIT */
/*
 * npu-conformance: runs the ONNX backend test sets that Debian's
 * libonnx-testdata installs (data/node/<test>/model.onnx with
 * test_data_set_N/input_K.pb and output_K.pb; likewise data/pytorch-*)
 * through the model API (npu-model.h) on one or more backends (--backend
 * cpu,sim runs every test on both and reports them side by side), and prints
 * a table and totals. docs/conformance.md describes the scope rule, the
 * tolerances and how to read the output.
 *
 * Each test runs in a forked child with its stderr captured and a wall-clock
 * limit, so a crash or hang in one test is reported as that test's failure
 * and the run goes on. The parent only reads model summaries (onnx-pb.c) and
 * collects the children's one-line verdicts from a pipe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "npu/npu-common.h"
#include "npu/npu-cpu.h"
#include "npu/npu-model.h"
#include "npu/npu-ops.h"
#include "onnx-pb.h"

#define MAX_SETS 8
#define MAX_BACKENDS 4
#define REASON 320

enum verdict { V_PASS, V_FAIL, V_OUT_OF_SCOPE, V_CRASH, V_TIMEOUT };
static const char *const verdict_name[] = {"pass", "FAIL", "skip", "CRASH", "TIMEOUT"};

struct test {
    char name[256];
    char dir[1024];
    int set;
    struct pb_model *summary; /* NULL if unreadable */
    enum verdict v;
    bool to_run;
    char reason[REASON];
    double maxerr;
    int baked;        /* shape-operand inputs given as constants (see bake_shape_inputs) */
    unsigned submits; /* NPU jobs the run submitted (NPU backends) */
    /* the verdicts per backend (copied from the fields above after each pass) */
    struct result {
        enum verdict v;
        char reason[REASON];
        double maxerr;
        int baked;
        unsigned submits;
    } res[MAX_BACKENDS];
    /* while running */
    pid_t pid;
    int pipe_fd;
    FILE *errlog;
    double start;
};

struct tolerance {
    double f32_atol, f32_rtol; /* fp32 and fp64 outputs */
    double f16_atol, f16_rtol; /* fp16 outputs */
};

static struct {
    const char *backend;
    struct tolerance tol;
    const char *tol_name;
    const char *backends[MAX_BACKENDS]; /* --backend a,b,... */
    int nbackends;
    const char *partition; /* NPU_PARTITION for the NPU backends */
    /* NPU backends: weight operands fed as graph inputs become constants too
     * (the back end takes weights as constants, as exported models have them) */
    bool bake_weights;
    double timeout;
    int jobs;
    double min_pass;
    const char *filter;
    bool quiet, verbose;
} opt = {
    .backend = "cpu",
    .timeout = 20,
    .min_pass = -1,
};

/*
 * Tolerances: |got - expected| <= atol + rtol * |expected| per element (the
 * numpy.allclose rule the ONNX backend tests use, whose defaults are rtol
 * 1e-3, atol 1e-7). We keep rtol 1e-3 and widen atol to 1e-5 for fp32, since
 * results that should be ~0 come out of differently ordered sums. fp16
 * outputs: about 4 ulp relative. The "fp16" set is for NPU backends, which
 * compute in fp16 whatever the output type. Integers and bools are exact;
 * NaN must be NaN at the same place, infinities must match with sign.
 */
static const struct tolerance tol_fp32 = {1e-5, 1e-3, 1e-3, 4e-3};
static const struct tolerance tol_fp16 = {1e-3, 1e-2, 1e-3, 1e-2};

/*
 * Ops that need no CPU kernel because the importer consumes them (they
 * become constants or aliases at import time). Everything else in scope must
 * satisfy npu_cpu_supports().
 */
static const char *const importer_ops[] = {"Constant", "Identity"};

/* Verdict text, cut to REASON bytes. */
static void NPU_PRINTF(2, 3) set_reason(char *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r, REASON, fmt, ap);
    va_end(ap);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- scope ---- */

static bool
op_supported(const char *op)
{
    for (size_t i = 0; i < NPU_ARRAY_SIZE(importer_ops); i++)
        if (!strcmp(op, importer_ops[i]))
            return true;
    enum npu_op o = npu_op_from_name(op);
    return o != NPU_OP_NONE && npu_cpu_supports(o);
}

static bool
io_in_scope(const struct pb_io *io, const char *what, char *reason)
{
    if (!io->is_tensor) {
        set_reason(reason, "%s '%s' is not a tensor (sequence/map/optional)", what, io->name);
        return false;
    }
    if (pb_onnx_dtype(io->elem_type) == NPU_DTYPE_UNDEFINED) {
        set_reason(reason, "%s '%s' has type %s, which npu_dtype lacks", what, io->name,
                   pb_onnx_type_name(io->elem_type));
        return false;
    }
    return true;
}

/* In scope: every op (local functions' bodies included, which the importer
 * inlines) is in the default domain and supported, every graph input and
 * output a tensor of a type we have. */
static bool
in_scope(const struct pb_model *m, char *reason)
{
    char missing[REASON] = "";
    size_t n = 0;
    for (int i = 0; i < m->nops; i++) {
        if (op_supported(m->ops[i]))
            continue;
        n += (size_t)snprintf(missing + n, n < sizeof(missing) ? sizeof(missing) - n : 0, "%s%s",
                              n ? " " : "", m->ops[i]);
        if (n >= sizeof(missing))
            break;
    }
    if (missing[0]) {
        set_reason(reason, "unsupported op: %.290s", missing);
        return false;
    }
    for (int i = 0; i < m->ninputs; i++)
        if (!io_in_scope(&m->inputs[i], "input", reason))
            return false;
    for (int i = 0; i < m->noutputs; i++)
        if (!io_in_scope(&m->outputs[i], "output", reason))
            return false;
    return true;
}

/* ---- the child: one test ---- */

static char child_first_error[REASON];

static void
child_log(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
    if (level == NPU_LOG_ERROR && !child_first_error[0])
        snprintf(child_first_error, sizeof(child_first_error), "%s: %s", domain, msg);
    fprintf(stderr, "[%s] %s\n", domain, msg);
}

static double
half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

static double
elem_f(const struct npu_tensor *t, int64_t k)
{
    switch (t->dtype) {
    case NPU_DTYPE_FP32: return ((const float *)t->data)[k];
    case NPU_DTYPE_FP64: return ((const double *)t->data)[k];
    case NPU_DTYPE_FP16: return half_to_double(((const uint16_t *)t->data)[k]);
    default: return NAN;
    }
}

static void
shape_str(const struct npu_tensor *t, char *b, size_t cap)
{
    size_t n = (size_t)snprintf(b, cap, "[");
    for (int i = 0; i < t->ndim && n < cap; i++)
        n += (size_t)snprintf(b + n, cap - n, "%s%" PRId64, i ? "," : "", t->dims[i]);
    if (n < cap)
        snprintf(b + n, cap - n, "]");
}

/* Compares one output; false with a reason on mismatch. *maxerr grows. */
static bool
compare(const struct npu_tensor *got, const struct npu_tensor *exp, int idx, char *reason,
        double *maxerr)
{
    char gs[96], es[96];
    shape_str(got, gs, sizeof(gs));
    shape_str(exp, es, sizeof(es));
    if (got->dtype != exp->dtype) {
        set_reason(reason, "output %d: dtype %s, expected %s", idx, npu_dtype_name(got->dtype),
                   npu_dtype_name(exp->dtype));
        return false;
    }
    bool same = got->ndim == exp->ndim;
    for (int i = 0; same && i < got->ndim; i++)
        same = got->dims[i] == exp->dims[i];
    if (!same) {
        set_reason(reason, "output %d: shape %s, expected %s", idx, gs, es);
        return false;
    }
    int64_t n = npu_tensor_numel(exp);
    if (n > 0 && !got->data) {
        set_reason(reason, "output %d: no data", idx);
        return false;
    }
    if (npu_dtype_is_float(exp->dtype)) {
        double atol = exp->dtype == NPU_DTYPE_FP16 ? opt.tol.f16_atol : opt.tol.f32_atol;
        double rtol = exp->dtype == NPU_DTYPE_FP16 ? opt.tol.f16_rtol : opt.tol.f32_rtol;
        int64_t bad = 0, first = -1;
        for (int64_t k = 0; k < n; k++) {
            double g = elem_f(got, k), e = elem_f(exp, k);
            bool ok;
            if (isnan(e) || isnan(g))
                ok = isnan(e) && isnan(g);
            else if (isinf(e) || isinf(g))
                ok = g == e;
            else {
                double d = fabs(g - e);
                ok = d <= atol + rtol * fabs(e);
                if (d > *maxerr)
                    *maxerr = d;
            }
            if (!ok && bad++ == 0)
                first = k;
        }
        if (bad) {
            set_reason(reason,
                       "output %d: %" PRId64 " of %" PRId64 " values off (first at %" PRId64
                       ": got %.7g, expected %.7g), max abs err %.3g",
                       idx, bad, n, first, elem_f(got, first), elem_f(exp, first), *maxerr);
            return false;
        }
        return true;
    }
    size_t es_ = npu_dtype_size(exp->dtype);
    int64_t bad = 0, first = -1;
    for (int64_t k = 0; k < n; k++) {
        bool ok;
        if (exp->dtype == NPU_DTYPE_BOOL)
            ok = (((const uint8_t *)got->data)[k] != 0) == (((const uint8_t *)exp->data)[k] != 0);
        else
            ok = !memcmp((const uint8_t *)got->data + k * es_, (const uint8_t *)exp->data + k * es_,
                         es_);
        if (!ok && bad++ == 0)
            first = k;
    }
    if (bad) {
        long long gv = 0, ev = 0;
        memcpy(&gv, (const uint8_t *)got->data + first * es_, es_);
        memcpy(&ev, (const uint8_t *)exp->data + first * es_, es_);
        set_reason(reason,
                   "output %d: %" PRId64 " of %" PRId64 " values differ (first at %" PRId64
                   ": got %lld, expected %lld)",
                   idx, bad, n, first, gv, ev);
        return false;
    }
    return true;
}

/* Reads DIR/PREFIX_k.pb for k = 0.. into an array; returns the count or -1. */
static int
read_pbs(const char *dir, const char *prefix, struct npu_tensor *t, char (*names)[PB_NAME], int cap,
         char *reason)
{
    int n = 0;
    for (;; n++) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s_%d.pb", dir, prefix, n);
        if (access(path, F_OK))
            return n;
        if (n >= cap) {
            set_reason(reason, "more than %d %s files", cap, prefix);
            return -1;
        }
        uint8_t *buf;
        size_t len;
        int et = 0;
        if (pb_slurp(path, &buf, &len)) {
            set_reason(reason, "cannot read %.250s", path);
            return -1;
        }
        enum npu_status st = pb_read_tensor(buf, len, &t[n], names[n], &et);
        free(buf);
        if (st) {
            set_reason(reason, "%s_%d.pb: %s (type %s)", prefix, n,
                       st == NPU_ERR_UNSUPPORTED ? "not a tensor we represent" : "malformed",
                       pb_onnx_type_name(et));
            return -1;
        }
    }
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Index of the data file for a model input/output called name: by the
 * graph's I/O order, else by the TensorProto's own name, else position. */
static int
io_index(const struct pb_io *ios, int nios, char (*pb_names)[PB_NAME], int n, const char *name,
         int fallback)
{
    for (int j = 0; j < nios && j < n; j++)
        if (!strcmp(ios[j].name, name))
            return j;
    for (int j = 0; j < n; j++)
        if (pb_names[j][0] && !strcmp(pb_names[j], name))
            return j;
    return fallback < n ? fallback : 0;
}

/*
 * npu-model.h fixes every shape at load time, as exported models have it
 * (their shape operands are constants or computed from Shape). Node tests
 * often feed shape operands (Reshape's shape, Slice's starts, Resize's
 * scales, ...) as graph inputs; those inputs are turned into initializers
 * holding this data set's values, in a temporary copy of the model. The op
 * still runs on the backend; only the operand is known at load.
 */
static int
bake_shape_inputs(const struct test *t, const char *setdir, const char *model_path, char *tmp_path,
                  size_t cap, int *baked, char *reason)
{
    const struct pb_model *sm = t->summary;
    const char *names[PB_MAX_IO];
    uint8_t *bufs[PB_MAX_IO] = {0};
    size_t lens[PB_MAX_IO];
    uint8_t *model = NULL, *out = NULL;
    size_t mlen, olen;
    int n = 0, rc = -1;

    *baked = 0;
    /* On the NPU backends weight operands too (see opt.bake_weights). */
    bool weights = opt.bake_weights && strcmp(opt.backend, "cpu");
    for (int i = 0; i < sm->ninputs; i++) {
        bool shape = false;
        for (int j = 0; j < sm->nshape_operands && !shape; j++)
            shape = !strcmp(sm->shape_operands[j], sm->inputs[i].name);
        for (int j = 0; weights && j < sm->nweight_operands && !shape; j++)
            shape = !strcmp(sm->weight_operands[j], sm->inputs[i].name);
        if (!shape)
            continue;
        char path[1400];
        snprintf(path, sizeof(path), "%.1300s/input_%d.pb", setdir, i);
        if (pb_slurp(path, &bufs[n], &lens[n])) {
            set_reason(reason, "cannot read %.300s", path);
            goto out;
        }
        names[n++] = sm->inputs[i].name;
    }
    if (!n)
        return 0;
    if (pb_slurp(model_path, &model, &mlen) ||
        pb_bake_inputs(model, mlen, n, names, (const uint8_t *const *)bufs, lens, &out, &olen)) {
        set_reason(reason, "cannot rewrite the model to bake shape inputs");
        goto out;
    }
    const char *tmpdir = getenv("TMPDIR");
    snprintf(tmp_path, cap, "%s/npu-conformance-XXXXXX.onnx", tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(tmp_path, 5);
    if (fd < 0 || write(fd, out, olen) != (ssize_t)olen) {
        set_reason(reason, "cannot write %s: %s", tmp_path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp_path);
        }
        tmp_path[0] = '\0';
        goto out;
    }
    close(fd);
    *baked = n;
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(model);
    free(out);
    return rc;
}

/* Runs one data set; true on pass. */
static bool
run_data_set(const struct test *t, const char *setdir, char *reason, double *maxerr, int *baked,
             unsigned *submits)
{
    struct npu_tensor in[PB_MAX_IO] = {0}, exp[PB_MAX_IO] = {0}, out[PB_MAX_IO] = {0};
    static char in_names[PB_MAX_IO][PB_NAME], out_names[PB_MAX_IO][PB_NAME];
    struct npu_tensor ordered[PB_MAX_IO];
    struct npu_model *m = NULL;
    struct npu_session *s = NULL;
    bool pass = false;
    int nin = -1, nexp = -1;

    nin = read_pbs(setdir, "input", in, in_names, PB_MAX_IO, reason);
    if (nin < 0)
        goto out;
    nexp = read_pbs(setdir, "output", exp, out_names, PB_MAX_IO, reason);
    if (nexp < 0)
        goto out;

    /* Bind symbolic input dims to this data set's shapes. */
    char dims[1024] = "";
    size_t dn = 0;
    const struct pb_model *sm = t->summary;
    for (int i = 0; i < sm->ninputs && i < nin; i++) {
        const struct pb_io *io = &sm->inputs[i];
        for (int d = 0; d < io->ndim && d < in[i].ndim; d++) {
            if (!io->params[d][0] || strstr(dims, io->params[d]))
                continue;
            dn += (size_t)snprintf(dims + dn, dn < sizeof(dims) ? sizeof(dims) - dn : 0,
                                   "%s%s=%" PRId64, dn ? "," : "", io->params[d], in[i].dims[d]);
        }
    }
    char model_path[1200];
    snprintf(model_path, sizeof(model_path), "%s/model.onnx", t->dir);
    char tmp_path[256] = "";
    if (bake_shape_inputs(t, setdir, model_path, tmp_path, sizeof(tmp_path), baked, reason))
        goto out;
    struct npu_model_options mo = {
        .backend = opt.backend,
        .cpu_threads = 1,
        .dim_values = dims[0] ? dims : NULL,
    };
    enum npu_status st = npu_model_load(tmp_path[0] ? tmp_path : model_path, &mo, &m);
    if (tmp_path[0])
        unlink(tmp_path);
    if (st) {
        set_reason(reason, "load: %s: %s", npu_status_str(st),
                   child_first_error[0] ? child_first_error : "(no message)");
        goto out;
    }
    int mnin = npu_model_num_inputs(m), mnout = npu_model_num_outputs(m);
    if (mnin != nin - *baked || mnout != nexp) {
        set_reason(reason, "model has %d inputs/%d outputs, test data %d/%d (%d baked)", mnin,
                   mnout, nin, nexp, *baked);
        goto out;
    }
    /* input_K.pb belongs to graph input K; match the model's inputs by name. */
    for (int i = 0; i < mnin; i++) {
        const struct npu_io_info *info = npu_model_input(m, i);
        int k = io_index(sm->inputs, sm->ninputs, in_names, nin, info->name, i);
        ordered[i] = in[k];
        bool same = in[k].dtype == info->dtype && in[k].ndim == info->ndim;
        for (int d = 0; same && d < info->ndim; d++)
            same = in[k].dims[d] == info->dims[d];
        if (!same) {
            char a[96];
            struct npu_tensor tmp = {.dtype = info->dtype, .ndim = info->ndim};
            memcpy(tmp.dims, info->dims, sizeof(info->dims));
            shape_str(&tmp, a, sizeof(a));
            char b[96];
            shape_str(&in[k], b, sizeof(b));
            set_reason(reason, "input '%s': model wants %s %s, data is %s %s", info->name,
                       npu_dtype_name(info->dtype), a, npu_dtype_name(in[k].dtype), b);
            goto out;
        }
    }
    st = npu_session_create(m, 0, &s);
    if (st) {
        set_reason(reason, "session: %s: %s", npu_status_str(st),
                   child_first_error[0] ? child_first_error : "(no message)");
        goto out;
    }
    struct npu_run_stats rstats;
    st = npu_session_run(s, ordered, mnin, out, mnout, &rstats);
    if (!st && rstats.submits > *submits)
        *submits = rstats.submits;
    if (st) {
        set_reason(reason, "run: %s: %s", npu_status_str(st),
                   child_first_error[0] ? child_first_error : "(no message)");
        goto out;
    }
    for (int i = 0; i < mnout; i++) {
        const struct npu_io_info *info = npu_model_output(m, i);
        int k = io_index(sm->outputs, sm->noutputs, out_names, nexp, info->name, i);
        if (!compare(&out[i], &exp[k], i, reason, maxerr))
            goto out;
    }
    pass = true;
out:
    npu_session_destroy(s);
    npu_model_free(m);
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    for (int i = 0; i < nexp; i++)
        free(exp[i].data);
    return pass;
}

static bool
run_test(const struct test *t, char *reason, double *maxerr, int *baked, unsigned *submits)
{
    DIR *d = opendir(t->dir);
    if (!d) {
        set_reason(reason, "cannot open %s", t->dir);
        return false;
    }
    char *sets[64];
    int nsets = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nsets < 64)
        if (!strncmp(e->d_name, "test_data_set_", 14))
            sets[nsets++] = strdup(e->d_name);
    closedir(d);
    qsort(sets, (size_t)nsets, sizeof(sets[0]), cmp_str);
    bool pass = nsets > 0;
    if (!nsets)
        set_reason(reason, "no test_data_set_*");
    for (int i = 0; i < nsets; i++) {
        char setdir[1400];
        snprintf(setdir, sizeof(setdir), "%s/%s", t->dir, sets[i]);
        if (pass && !run_data_set(t, setdir, reason, maxerr, baked, submits)) {
            if (nsets > 1) {
                char tmp[REASON];
                snprintf(tmp, sizeof(tmp), "%s: %s", sets[i], reason);
                memcpy(reason, tmp, REASON);
            }
            pass = false;
        }
        free(sets[i]);
    }
    return pass;
}

/* ---- the parent: scheduling, collection, report ---- */

static void
start_child(struct test *t)
{
    int fds[2];
    t->errlog = tmpfile();
    if (pipe(fds) < 0 || !t->errlog) {
        t->v = V_CRASH;
        set_reason(t->reason, "cannot start: %s", strerror(errno));
        t->pid = 0;
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        t->v = V_CRASH;
        set_reason(t->reason, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        t->pid = 0;
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        if (!opt.verbose)
            dup2(fileno(t->errlog), STDERR_FILENO);
        /* stdout belongs to the parent's table. */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDOUT_FILENO);
        npu_log_set_handler(child_log, NULL);
        /* On the NPU backends every node the back end supports goes to the NPU
         * (unless --partition says otherwise): with the default cost rule
         * these one-op tests would run on the CPU and test nothing new. */
        if (strcmp(opt.backend, "cpu") && opt.partition)
            setenv("NPU_PARTITION", opt.partition, 1);
        char reason[REASON] = "";
        double maxerr = 0;
        int baked = 0;
        unsigned submits = 0;
        bool pass = run_test(t, reason, &maxerr, &baked, &submits);
        char msg[REASON + 64];
        int n = snprintf(msg, sizeof(msg), "%c %d %.9g %u %s", pass ? 'P' : 'F', baked, maxerr,
                         submits, reason);
        if (write(fds[1], msg, (size_t)NPU_MIN(n, (int)sizeof(msg) - 1)) < 0)
            _exit(3);
        /* exit(), not _exit(): in sanitizer builds LeakSanitizer then checks
         * this test's load/run/free cycle and fails it on a leak. */
        exit(0);
    }
    close(fds[1]);
    t->pid = pid;
    t->pipe_fd = fds[0];
    t->start = now_s();
}

static void
errlog_tail(struct test *t, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (!t->errlog)
        return;
    fflush(t->errlog);
    long end = fseek(t->errlog, 0, SEEK_END) == 0 ? ftell(t->errlog) : 0;
    long from = end > (long)cap - 1 ? end - (long)cap + 1 : 0;
    fseek(t->errlog, from, SEEK_SET);
    size_t n = fread(buf, 1, cap - 1, t->errlog);
    buf[n] = '\0';
}

static void
finish_child(struct test *t, int status, bool timed_out)
{
    char msg[REASON + 64] = "";
    ssize_t n = read(t->pipe_fd, msg, sizeof(msg) - 1);
    close(t->pipe_fd);
    msg[n > 0 ? n : 0] = '\0';
    if (timed_out) {
        t->v = V_TIMEOUT;
        set_reason(t->reason, "no result after %.0f s (killed)", opt.timeout);
    } else if (WIFSIGNALED(status)) {
        t->v = V_CRASH;
        set_reason(t->reason, "killed by signal %d (%s)", WTERMSIG(status),
                   strsignal(WTERMSIG(status)));
    } else if (n <= 0) {
        t->v = V_CRASH;
        set_reason(t->reason, "exited with status %d without a verdict", WEXITSTATUS(status));
    } else if (WEXITSTATUS(status) != 0) {
        t->v = V_CRASH;
        set_reason(t->reason,
                   "exited with status %d after its verdict (%c): a sanitizer "
                   "or leak report? (run with --filter %.100s --verbose)",
                   WEXITSTATUS(status), msg[0], t->name);
    } else {
        char *sp = strchr(msg, ' ');
        t->baked = sp ? atoi(sp + 1) : 0;
        sp = sp ? strchr(sp + 1, ' ') : NULL;
        t->maxerr = sp ? strtod(sp + 1, NULL) : 0;
        sp = sp ? strchr(sp + 1, ' ') : NULL;
        t->submits = sp ? (unsigned)strtoul(sp + 1, NULL, 10) : 0;
        char *r = sp ? strchr(sp + 1, ' ') : NULL;
        set_reason(t->reason, "%s", r ? r + 1 : "");
        t->v = msg[0] == 'P' ? V_PASS : V_FAIL;
    }
    if (t->v == V_CRASH || t->v == V_TIMEOUT) {
        char tail[1600];
        errlog_tail(t, tail, sizeof(tail));
        if (tail[0] && !opt.quiet)
            fprintf(stderr, "---- %s: last output ----\n%s\n----\n", t->name, tail);
    }
    fclose(t->errlog);
    t->errlog = NULL;
    t->pid = 0;
}

static void
run_all(struct test *tests, int n)
{
    int *queue = malloc(sizeof(int) * (size_t)(n + 1));
    int nq = 0, next = 0, running = 0;
    for (int i = 0; i < n; i++)
        if (tests[i].to_run)
            queue[nq++] = i;
    int *slots = calloc((size_t)opt.jobs, sizeof(int));
    for (int j = 0; j < opt.jobs; j++)
        slots[j] = -1;
    while (next < nq || running) {
        for (int j = 0; j < opt.jobs && next < nq; j++) {
            if (slots[j] >= 0)
                continue;
            struct test *t = &tests[queue[next++]];
            start_child(t);
            if (t->pid) {
                slots[j] = (int)(t - tests);
                running++;
            }
        }
        bool progressed = false;
        for (int j = 0; j < opt.jobs; j++) {
            if (slots[j] < 0)
                continue;
            struct test *t = &tests[slots[j]];
            int status;
            pid_t r = waitpid(t->pid, &status, WNOHANG);
            if (r == t->pid) {
                finish_child(t, status, false);
            } else if (now_s() - t->start > opt.timeout) {
                kill(t->pid, SIGKILL);
                waitpid(t->pid, &status, 0);
                finish_child(t, status, true);
            } else {
                continue;
            }
            slots[j] = -1;
            running--;
            progressed = true;
        }
        if (!progressed) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    free(slots);
    free(queue);
}

static int
cmp_test(const void *a, const void *b)
{
    const struct test *x = a, *y = b;
    if (x->set != y->set)
        return x->set - y->set;
    return strcmp(x->name, y->name);
}

/* Collects the tests of one set directory (entries holding model.onnx). */
static int
collect(const char *setdir, int set, struct test **tests, int *n, int *cap)
{
    DIR *d = opendir(setdir);
    if (!d) {
        fprintf(stderr, "npu-conformance: cannot open %s: %s\n", setdir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (opt.filter && !strstr(e->d_name, opt.filter))
            continue;
        char mp[1400];
        snprintf(mp, sizeof(mp), "%s/%s/model.onnx", setdir, e->d_name);
        if (access(mp, R_OK))
            continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 1024;
            *tests = realloc(*tests, sizeof(**tests) * (size_t)*cap);
        }
        struct test *t = &(*tests)[(*n)++];
        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof(t->name), "%s", e->d_name);
        snprintf(t->dir, sizeof(t->dir), "%s/%s", setdir, e->d_name);
        t->set = set;
        uint8_t *buf;
        size_t len;
        t->summary = calloc(1, sizeof(*t->summary));
        enum npu_status st = pb_slurp(mp, &buf, &len);
        if (!st) {
            st = pb_model_summary(buf, len, t->summary);
            free(buf);
        }
        if (st) {
            t->v = V_OUT_OF_SCOPE;
            set_reason(t->reason, "model not summarised: %s", npu_status_str(st));
            free(t->summary);
            t->summary = NULL;
        } else if (!in_scope(t->summary, t->reason)) {
            t->v = V_OUT_OF_SCOPE;
        } else {
            t->to_run = true;
        }
    }
    closedir(d);
    return 0;
}

struct op_count {
    char op[PB_NAME];
    int fails;
};

static void
report_set(const char *setdir, struct test *tests, int n, int set, int *in_scope_out,
           int *passed_out)
{
    int nb = opt.nbackends;
    int total = 0, scope = 0;
    int passed[MAX_BACKENDS] = {0}, failed[MAX_BACKENDS] = {0}, crashed[MAX_BACKENDS] = {0};
    int timeouts[MAX_BACKENDS] = {0}, baked[MAX_BACKENDS] = {0}, npu_work[MAX_BACKENDS] = {0};
    struct op_count ops[MAX_BACKENDS][256];
    int nops[MAX_BACKENDS] = {0};
    if (!opt.quiet) {
        printf("\n%-64s", "test");
        for (int b = 0; b < nb; b++)
            printf(" %-7s", opt.backends[b]);
        printf(" %s\n", "max abs err / reason");
    }
    for (int i = 0; i < n; i++) {
        struct test *t = &tests[i];
        if (t->set != set)
            continue;
        total++;
        if (t->res[0].v != V_OUT_OF_SCOPE)
            scope++;
        bool all_pass = true;
        for (int b = 0; b < nb; b++) {
            const struct result *r = &t->res[b];
            passed[b] += r->v == V_PASS;
            baked[b] += r->v == V_PASS && r->baked;
            npu_work[b] += r->v == V_PASS && r->submits > 0;
            failed[b] += r->v == V_FAIL;
            crashed[b] += r->v == V_CRASH;
            timeouts[b] += r->v == V_TIMEOUT;
            all_pass &= r->v == V_PASS || r->v == V_OUT_OF_SCOPE;
        }
        bool show = !opt.quiet || !all_pass;
        if (show) {
            printf("%-64s", t->name);
            for (int b = 0; b < nb; b++)
                printf(" %-7s", verdict_name[t->res[b].v]);
            /* the first backend's figure or reason, then the others' reasons where
             * they differ */
            const struct result *r0 = &t->res[0];
            if (r0->v == V_PASS)
                printf(" %.3g%s", r0->maxerr, r0->baked ? " (shape operands as constants)" : "");
            else
                printf(" %s", r0->reason);
            for (int b = 1; b < nb; b++) {
                const struct result *r = &t->res[b];
                if (r->v == V_PASS && nb > 1)
                    printf(" | %s %.3g%s", opt.backends[b], r->maxerr, r->submits ? " (NPU)" : "");
                else if (r->v != V_OUT_OF_SCOPE && strcmp(r->reason, r0->reason))
                    printf(" | %s: %s", opt.backends[b], r->reason);
            }
            printf("\n");
        }
        for (int b = 0; b < nb; b++) {
            const struct result *r = &t->res[b];
            if (r->v == V_PASS || r->v == V_OUT_OF_SCOPE || !t->summary)
                continue;
            for (int k = 0; k < t->summary->nops; k++) {
                const char *op = t->summary->ops[k];
                if (!strcmp(op, "Constant"))
                    continue;
                int j;
                for (j = 0; j < nops[b] && strcmp(ops[b][j].op, op); j++)
                    ;
                if (j == nops[b]) {
                    if (nops[b] == 256)
                        continue;
                    snprintf(ops[b][j].op, PB_NAME, "%s", op);
                    ops[b][nops[b]++].fails = 0;
                }
                ops[b][j].fails++;
            }
        }
    }
    for (int b = 0; b < nb; b++) {
        int notpassed = failed[b] + crashed[b] + timeouts[b];
        bool cpu = !strcmp(opt.backends[b], "cpu");
        printf("\n== %s (backend %s, %s tolerances)\n", setdir, opt.backends[b],
               opt.tol_name ? opt.tol_name
               : cpu        ? "fp32"
                            : "fp16");
        printf("   tests %d, in scope %d, passed %d, failed %d (crashed %d, timed out %d), "
               "out of scope %d\n",
               total, scope, passed[b], notpassed, crashed[b], timeouts[b], total - scope);
        printf("   passed %.1f%% of in-scope, %d of %d (%.1f%%) of all; %d of the passes had "
               "shape%s operands given as constants\n",
               scope ? 100.0 * passed[b] / scope : 0.0, passed[b], total,
               total ? 100.0 * passed[b] / total : 0.0, baked[b],
               !cpu && opt.bake_weights ? " or weight" : "");
        if (!cpu)
            printf("   %d of the passes ran NPU jobs (partition: %s); the others ran their "
                   "ops as CPU steps of the compiled program\n",
                   npu_work[b], opt.partition ? opt.partition : "cost");
        if (nops[b]) {
            for (int x = 0; x < nops[b]; x++)
                for (int y = x + 1; y < nops[b]; y++)
                    if (ops[b][y].fails > ops[b][x].fails) {
                        struct op_count tmp = ops[b][x];
                        ops[b][x] = ops[b][y];
                        ops[b][y] = tmp;
                    }
            printf("   failing tests by op:");
            for (int x = 0; x < nops[b]; x++)
                printf(" %s %d%s", ops[b][x].op, ops[b][x].fails, x + 1 < nops[b] ? "," : "\n");
        }
        in_scope_out[b] = scope;
        passed_out[b] = passed[b];
    }
}

static const char usage_text[] =
    "usage: npu-conformance [options] SET_DIR...\n"
    "  Runs every test under each SET_DIR (e.g. /usr/share/libonnx-testdata/data/node)\n"
    "  whose ops are all supported, on each backend, and prints a table and totals.\n"
    "  -b, --backend LIST   backend or comma list, e.g. cpu,sim (default cpu)\n"
    "  -T, --tol fp32|fp16  tolerance set (default fp32 for cpu, fp16 for others)\n"
    "  -p, --partition MODE NPU backends: supported (default: every node the NPU back\n"
    "                       end supports runs on the NPU) or cost (the default rule,\n"
    "                       which leaves one-op tests on the CPU)\n"
    "  -W, --no-weight-constants  NPU backends: keep weight operands (MatMul B, Conv/Gemm\n"
    "                       weights and bias, norm parameters) as graph inputs; by\n"
    "                       default they become constants as in exported models\n"
    "  -t, --timeout SEC    per-test wall-clock limit (default 20)\n"
    "  -j, --jobs N         tests run in parallel (default: online CPUs)\n"
    "  -m, --min-pass PCT   exit 1 unless every set passes PCT%% of its in-scope tests\n"
    "  -f, --filter TEXT    only tests whose name contains TEXT\n"
    "  -q, --quiet          list only failures, not passes and skips\n"
    "  -v, --verbose        children keep their stderr (logs interleave)\n"
    "  -h, --help           this text\n";

int
main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"tol", required_argument, NULL, 'T'},
        {"timeout", required_argument, NULL, 't'},
        {"jobs", required_argument, NULL, 'j'},
        {"min-pass", required_argument, NULL, 'm'},
        {"filter", required_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"partition", required_argument, NULL, 'p'},
        {"no-weight-constants", no_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *tol = NULL;
    int c;
    opt.partition = "supported";
    opt.bake_weights = true;
    while ((c = getopt_long(argc, argv, "b:T:t:j:m:f:p:Wqvh", lopts, NULL)) != -1) {
        switch (c) {
        case 'b': opt.backend = optarg; break;
        case 'T': tol = optarg; break;
        case 't': opt.timeout = atof(optarg); break;
        case 'j': opt.jobs = atoi(optarg); break;
        case 'm': opt.min_pass = atof(optarg); break;
        case 'f': opt.filter = optarg; break;
        case 'p':
            if (strcmp(optarg, "supported") && strcmp(optarg, "cost")) {
                fputs("npu-conformance: --partition wants supported or cost\n", stderr);
                return 2;
            }
            opt.partition = optarg;
            break;
        case 'W': opt.bake_weights = false; break;
        case 'q': opt.quiet = true; break;
        case 'v': opt.verbose = true; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (optind >= argc || argc - optind > MAX_SETS) {
        fputs(usage_text, stderr);
        return 2;
    }
    /* --backend a,b: split in place */
    for (char *p = (char *)opt.backend, *q; p && opt.nbackends < MAX_BACKENDS; p = q) {
        q = strchr(p, ',');
        if (q)
            *q++ = 0;
        if (*p)
            opt.backends[opt.nbackends++] = p;
    }
    if (!opt.nbackends) {
        fputs(usage_text, stderr);
        return 2;
    }
    if (tol && strcmp(tol, "fp32") && strcmp(tol, "fp16")) {
        fprintf(stderr, "npu-conformance: --tol wants fp32 or fp16\n");
        return 2;
    }
    opt.tol_name = tol;
    if (opt.timeout <= 0)
        opt.timeout = 20;
    if (opt.jobs <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        opt.jobs = ncpu > 0 ? (int)ncpu : 1;
    }

    struct test *tests = NULL;
    int n = 0, cap = 0;
    for (int s = optind; s < argc; s++)
        if (collect(argv[s], s - optind, &tests, &n, &cap) < 0)
            return 2;
    qsort(tests, (size_t)n, sizeof(*tests), cmp_test);
    double t0 = now_s();
    for (int b = 0; b < opt.nbackends; b++) {
        opt.backend = opt.backends[b];
        const char *tn = tol ? tol : strcmp(opt.backend, "cpu") ? "fp16" : "fp32";
        opt.tol = !strcmp(tn, "fp32") ? tol_fp32 : tol_fp16;
        run_all(tests, n);
        for (int i = 0; i < n; i++) {
            struct test *t = &tests[i];
            struct result *r = &t->res[b];
            r->v = t->v;
            memcpy(r->reason, t->reason, REASON);
            r->maxerr = t->maxerr;
            r->baked = t->baked;
            r->submits = t->submits;
            if (t->to_run) { /* fresh for the next backend */
                t->v = V_PASS;
                t->reason[0] = 0;
                t->maxerr = 0;
                t->baked = 0;
                t->submits = 0;
            }
        }
    }
    double dt = now_s() - t0;

    bool gate_ok = true;
    for (int s = optind; s < argc; s++) {
        int scope[MAX_BACKENDS], passed[MAX_BACKENDS];
        report_set(argv[s], tests, n, s - optind, scope, passed);
        for (int b = 0; b < opt.nbackends; b++) {
            if (opt.min_pass >= 0 && scope[b] && 100.0 * passed[b] / scope[b] < opt.min_pass) {
                printf("   GATE: %s below the required %.1f%% of in-scope tests\n", opt.backends[b],
                       opt.min_pass);
                gate_ok = false;
            }
        }
    }
    printf("\n%d tests x %d backend(s) in %.1f s with %d jobs\n", n, opt.nbackends, dt, opt.jobs);
    for (int i = 0; i < n; i++)
        free(tests[i].summary);
    free(tests);
    return gate_ok ? 0 : 1;
}
