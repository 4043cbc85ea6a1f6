/* SPDX-License-Identifier: MIT */
/*
 * test-model-npu.c: the model API's NPU path (backend "sim") on the test
 * models of tests/models/data (torch exports):
 *  - accuracy: tiny SigLIP and tiny GPT-2 (and their batch-2 / batch-3 data
 *    sets) with every node the back end supports placed on the NPU
 *    (NPU_PARTITION=supported, so that the NPU really computes) match the CPU
 *    executor with cosine similarity >= 0.999 per output (the figures are
 *    printed; the test fails below);
 *  - the compile cache: miss (compiles, writes one entry), hit (skips the
 *    compile; the time saved is printed), identical outputs; a damaged or
 *    truncated entry is ignored, rebuilt and replaced; $NPU_CACHE_DIR is
 *    used when the options give no folder; other dims make another entry;
 *  - a .npub saved from a loaded model loads through npu_model_load and gives
 *    the same outputs;
 *  - sessions on the three cores run concurrently from three threads and
 *    reproduce the single-thread outputs bit for bit.
 * Usage: test-model-npu MODELS_DATA_DIR
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "npu-test.h"
#include "npu/npu-exec.h"
#include "npu/npu-model.h"
#include "npu/npu-npub.h"
#include "npu/npu-npy.h"
#include "npu/npu-program.h"
#include "npu/npu-timing.h"

static const char *data_dir;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct inputs {
    struct npu_tensor t[8];
    int n;
};

/* in.<name>.npy of a data set, in the model's input order. */
static void
read_inputs(const struct npu_model *m, const char *dir, struct inputs *in)
{
    char p[1400];
    in->n = npu_model_num_inputs(m);
    for (int i = 0; i < in->n; i++) {
        snprintf(p, sizeof(p), "%s/in.%s.npy", dir, npu_model_input(m, i)->name);
        CHECK_EQ_INT(NPU_OK, npu_npy_read(p, &in->t[i]));
    }
}

static void
free_inputs(struct inputs *in)
{
    for (int i = 0; i < in->n; i++)
        npu_npy_free(&in->t[i]);
}

static double
cosine(const struct npu_tensor *a, const struct npu_tensor *b, double *maxerr)
{
    int64_t n = npu_tensor_numel(a);
    double ab = 0, aa = 0, bb = 0, e = 0;
    if (a->dtype != NPU_DTYPE_FP32 || b->dtype != NPU_DTYPE_FP32 || n != npu_tensor_numel(b))
        return -2;
    for (int64_t i = 0; i < n; i++) {
        double x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
        ab += x * y;
        aa += x * x;
        bb += y * y;
        e = fmax(e, fabs(x - y));
    }
    *maxerr = e;
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1 : 0);
}

/* Runs m once on in; copies the outputs (caller frees each .data). */
static int
run_copy(struct npu_model *m, int core, const struct inputs *in, struct npu_tensor *out,
         struct npu_run_stats *st)
{
    struct npu_session *s = NULL;
    int no = npu_model_num_outputs(m);
    if (npu_session_create(m, core, &s))
        return -1;
    enum npu_status r = npu_session_run(s, in->t, in->n, out, no, st);
    CHECK_EQ_INT(NPU_OK, r);
    for (int k = 0; r == NPU_OK && k < no; k++) {
        size_t nb = (size_t)npu_tensor_nbytes(&out[k]);
        void *c = malloc(nb ? nb : 1);
        memcpy(c, out[k].data, nb);
        out[k].data = c;
    }
    npu_session_destroy(s);
    return r == NPU_OK ? no : -1;
}

static void
free_outs(struct npu_tensor *o, int n)
{
    for (int i = 0; i < n; i++)
        free(o[i].data);
}

static void
test_accuracy(const char *model, const char *sub, const char *dims)
{
    char md[1200], mp[1300], dd[1300];
    snprintf(md, sizeof(md), "%s/%s", data_dir, model);
    snprintf(mp, sizeof(mp), "%s/model.onnx", md);
    snprintf(dd, sizeof(dd), "%s%s%s", md, sub ? "/" : "", sub ? sub : "");
    struct npu_model_options oc = {.backend = "cpu", .dim_values = dims};
    struct npu_model_options os = {.backend = "sim", .dim_values = dims};
    struct npu_model *mc = NULL, *ms = NULL;
    setenv("NPU_PARTITION", "supported", 1);
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &oc, &mc));
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &os, &ms));
    unsetenv("NPU_PARTITION");
    if (!mc || !ms)
        goto out;
    CHECK_STR("sim", npu_model_backend(ms));
    const struct npu_program *p = npu_model_program(ms);
    CHECK(p && p->n_jobs > 0); /* the NPU computes something */
    struct inputs in;
    read_inputs(mc, dd, &in);
    struct npu_tensor oc_out[8], os_out[8];
    struct npu_run_stats st;
    int no = run_copy(mc, 0, &in, oc_out, NULL);
    int no2 = run_copy(ms, 0, &in, os_out, &st);
    CHECK(no > 0 && no == no2);
    CHECK(st.submits > 0 && st.npu_modeled_s > 0);
    for (int k = 0; k < no && no == no2; k++) {
        double err = 0, c = cosine(&oc_out[k], &os_out[k], &err);
        printf("accuracy %s%s%s output %s: cosine %.6f, max abs error %.3g (sim, %u submits, "
               "%u tasks, %.3f ms NPU modeled (%s)) vs cpu\n",
               model, sub ? "/" : "", sub ? sub : "", npu_model_output(ms, k)->name, c, err,
               st.submits, st.tasks, st.npu_modeled_s * 1e3, npu_timing_model()->label);
        CHECK(c >= 0.999);
    }
    if (no > 0)
        free_outs(oc_out, no);
    if (no2 > 0)
        free_outs(os_out, no2);
    free_inputs(&in);
out:
    npu_model_free(mc);
    npu_model_free(ms);
}

static int
count_npub(const char *dir, char *first, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".npub")) {
            if (!n && first)
                snprintf(first, len, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static bool
same_outputs(const struct npu_tensor *a, const struct npu_tensor *b, int n)
{
    for (int k = 0; k < n; k++)
        if (npu_tensor_nbytes(&a[k]) != npu_tensor_nbytes(&b[k]) ||
            memcmp(a[k].data, b[k].data, (size_t)npu_tensor_nbytes(&a[k])))
            return false;
    return true;
}

static void
test_cache(void)
{
    char dir[] = "/tmp/npu-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char mp[1400], md[1300], entry[1400];
    snprintf(md, sizeof(md), "%s/siglip_tiny", data_dir);
    snprintf(mp, sizeof(mp), "%s/model.onnx", md);
    struct npu_model_options o = {.backend = "sim", .cache_dir = dir};
    struct npu_model *m1 = NULL, *m2 = NULL, *m3 = NULL;
    unsetenv("NPU_CACHE_DIR");
    setenv("NPU_PARTITION", "supported", 1);

    double t0 = now();
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m1));
    double miss = now() - t0;
    CHECK(m1 && !npu_model_from_cache(m1) && npu_model_compile_seconds(m1) > 0);
    CHECK_EQ_INT(1, count_npub(dir, entry, sizeof(entry)));
    t0 = now();
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m2));
    double hit = now() - t0;
    CHECK(m2 && npu_model_from_cache(m2) && npu_model_compile_seconds(m2) == 0);
    printf("cache: siglip_tiny load %.1f ms on a miss (compile %.1f ms), %.1f ms on a hit: "
           "%.1f ms saved (x%.1f)\n",
           miss * 1e3, npu_model_compile_seconds(m1) * 1e3, hit * 1e3, (miss - hit) * 1e3,
           miss / hit);
    struct inputs in;
    read_inputs(m1, md, &in);
    struct npu_tensor a[4], b[4];
    int na = run_copy(m1, 0, &in, a, NULL), nb = run_copy(m2, 1, &in, b, NULL);
    CHECK(na == 2 && nb == 2 && same_outputs(a, b, 2));
    free_outs(b, nb);
    npu_model_free(m2);
    m2 = NULL;

    /* damaged entry: one byte flipped in the middle -> ignored, rebuilt, replaced */
    struct stat sb;
    CHECK_EQ_INT(0, stat(entry, &sb));
    FILE *f = fopen(entry, "r+b");
    fseek(f, sb.st_size / 2, SEEK_SET);
    int c = fgetc(f);
    fseek(f, sb.st_size / 2, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m2));
    CHECK(m2 && !npu_model_from_cache(m2));
    npu_model_free(m2);
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m2));
    CHECK(m2 && npu_model_from_cache(m2)); /* the rebuilt entry is good */
    npu_model_free(m2);
    /* truncated entry */
    CHECK_EQ_INT(0, truncate(entry, sb.st_size / 3));
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o, &m2));
    CHECK(m2 && !npu_model_from_cache(m2));
    nb = run_copy(m2, 2, &in, b, NULL);
    CHECK(nb == 2 && same_outputs(a, b, 2));
    free_outs(b, nb);
    npu_model_free(m2);
    CHECK_EQ_INT(1, count_npub(dir, NULL, 0));
    /* the environment variable */
    setenv("NPU_CACHE_DIR", dir, 1);
    struct npu_model_options oe = {.backend = "sim"};
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &oe, &m2));
    CHECK(m2 && npu_model_from_cache(m2));
    npu_model_free(m2);
    unsetenv("NPU_CACHE_DIR");
    /* other dims: another entry */
    struct npu_model_options o2 = {.backend = "sim", .cache_dir = dir, .dim_values = "batch=2"};
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &o2, &m3));
    CHECK(m3 && !npu_model_from_cache(m3));
    CHECK_EQ_INT(2, count_npub(dir, NULL, 0));
    npu_model_free(m3);

    /* a .npub saved from the model loads through the model API */
    char np[1400];
    snprintf(np, sizeof(np), "%s/saved.npub", dir);
    CHECK_EQ_INT(NPU_OK, npu_npub_save(npu_model_program(m1), NULL, np));
    CHECK_EQ_INT(NPU_OK, npu_model_load(np, &(struct npu_model_options){.backend = "sim"}, &m3));
    if (m3) {
        CHECK_EQ_INT(2, npu_model_num_outputs(m3));
        CHECK_STR(npu_model_output(m1, 0)->name, npu_model_output(m3, 0)->name);
        nb = run_copy(m3, 0, &in, b, NULL);
        CHECK(nb == 2 && same_outputs(a, b, 2));
        free_outs(b, nb);
    }
    /* ... but not on the cpu backend, which has no program executor */
    struct npu_model *m4 = NULL;
    npu_log_set_level(-1);
    CHECK_EQ_INT(NPU_ERR_UNSUPPORTED,
                 npu_model_load(np, &(struct npu_model_options){.backend = "cpu"}, &m4));
    npu_log_set_level(NPU_LOG_WARN);
    npu_model_free(m3);
    unsetenv("NPU_PARTITION");
    free_outs(a, na);
    free_inputs(&in);
    npu_model_free(m1);

    /* clean up the folder */
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[1400];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* ---- concurrency --------------------------------------------------------------------- */

struct worker {
    struct npu_model *m;
    const struct inputs *in;
    const struct npu_tensor *ref;
    int core, runs, ok;
};

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct npu_session *s = NULL;
    if (npu_session_create(w->m, w->core, &s))
        return NULL;
    for (int i = 0; i < w->runs; i++) {
        struct npu_tensor out[4];
        if (npu_session_run(s, w->in->t, w->in->n, out, 2, NULL) == NPU_OK &&
            same_outputs(out, w->ref, 2))
            w->ok++;
    }
    npu_session_destroy(s);
    return NULL;
}

static void
test_threads(void)
{
    char mp[1400], md[1300];
    snprintf(md, sizeof(md), "%s/siglip_tiny", data_dir);
    snprintf(mp, sizeof(mp), "%s/model.onnx", md);
    struct npu_model *m = NULL;
    setenv("NPU_PARTITION", "supported", 1);
    CHECK_EQ_INT(NPU_OK, npu_model_load(mp, &(struct npu_model_options){.backend = "sim"}, &m));
    unsetenv("NPU_PARTITION");
    if (!m)
        return;
    struct inputs in;
    read_inputs(m, md, &in);
    struct npu_tensor ref[4];
    int no = run_copy(m, 0, &in, ref, NULL);
    CHECK_EQ_INT(2, no);
    struct worker w[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct worker){m, &in, ref, i, 6, 0};
        CHECK_EQ_INT(0, pthread_create(&th[i], NULL, worker_main, &w[i]));
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(w[i].runs, w[i].ok);
    }
    printf("threads: 3 sessions on cores 0-2 x %d runs, outputs identical to one session's\n",
           w[0].runs);
    /* a session on a core outside the mask is refused */
    struct npu_model *m2 = NULL;
    struct npu_session *s = NULL;
    CHECK_EQ_INT(
        NPU_OK,
        npu_model_load(mp, &(struct npu_model_options){.backend = "sim", .core_mask = 0x2}, &m2));
    npu_log_set_level(-1);
    CHECK_EQ_INT(NPU_ERR_INVALID, npu_session_create(m2, 0, &s));
    npu_log_set_level(NPU_LOG_WARN);
    CHECK_EQ_INT(NPU_OK, npu_session_create(m2, 1, &s));
    npu_session_destroy(s);
    npu_model_free(m2);
    free_outs(ref, no);
    free_inputs(&in);
    npu_model_free(m);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-model-npu MODELS_DATA_DIR\n");
        return 2;
    }
    data_dir = argv[1];
    test_accuracy("siglip_tiny", NULL, NULL);
    test_accuracy("siglip_tiny", "batch2", "batch=2");
    test_accuracy("gpt2_tiny", NULL, NULL);
    test_accuracy("gpt2_tiny", "batch3", "batch=3");
    test_cache();
    test_threads();
    return npu_test_done("test-model-npu");
}
