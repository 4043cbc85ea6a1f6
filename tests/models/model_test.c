/* SPDX-License-Identifier: MIT */
/*
 * model_test.c: runs one test model through the npu-run tool exactly as a
 * user would (inputs from the model's in.*.npy, --dims from meta.txt, outputs
 * into a fresh directory) and compares every output with torch's reference
 * out.*.npy (tests/models/make-models.py; ONNX Runtime agrees with them, see
 * check-ort.sh).
 *
 * Pass rule per output: same dtype and shape, cosine similarity >= COS_MIN
 * and max abs error <= ERR_REL * max(1, max |ref|). Both figures are printed
 * whatever the verdict, so the log shows how close we are.
 *   fp32 backends (cpu):  COS_MIN 0.9999, ERR_REL 1e-3
 *   fp16 backends (sim, NPU): COS_MIN 0.999, ERR_REL 3e-2
 *
 * Usage: model_test NPU_RUN MODEL_DIR WORK_DIR [BACKEND [DATA_SUBDIR]]
 * DATA_SUBDIR (e.g. batch2): take in/out/meta from MODEL_DIR/DATA_SUBDIR.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npu/npu-npy.h"

extern char **environ;

/* Compares one output file with its reference; true on pass. */
static bool
compare(const char *name, const char *ref_path, const char *got_path, double cos_min,
        double err_rel)
{
    struct npu_tensor ref, got;
    if (npu_npy_read(ref_path, &ref) != NPU_OK) {
        printf("FAIL %s: cannot read the reference %s\n", name, ref_path);
        return false;
    }
    if (npu_npy_read(got_path, &got) != NPU_OK) {
        printf("FAIL %s: npu-run wrote no readable %s\n", name, got_path);
        npu_npy_free(&ref);
        return false;
    }
    bool ok = got.dtype == ref.dtype && got.ndim == ref.ndim;
    for (int i = 0; ok && i < ref.ndim; i++)
        ok = got.dims[i] == ref.dims[i];
    if (!ok) {
        printf("FAIL %s: got %s ndim %d, reference %s ndim %d (or dims differ)\n", name,
               npu_dtype_name(got.dtype), got.ndim, npu_dtype_name(ref.dtype), ref.ndim);
        goto out;
    }
    int64_t n = npu_tensor_numel(&ref);
    double dot = 0, nr = 0, ng = 0, maxerr = 0, maxref = 0;
    int64_t nonfinite = 0;
    for (int64_t k = 0; k < n; k++) {
        double r = npu_dtype_load_f64(ref.dtype, ref.data, k);
        double g = npu_dtype_load_f64(got.dtype, got.data, k);
        if (!isfinite(g) && isfinite(r)) {
            nonfinite++;
            continue;
        }
        dot += r * g;
        nr += r * r;
        ng += g * g;
        maxerr = fmax(maxerr, fabs(r - g));
        maxref = fmax(maxref, fabs(r));
    }
    double cosv = (nr == 0 && ng == 0) ? 1.0 : dot / sqrt(nr * ng);
    double lim = err_rel * fmax(1.0, maxref);
    ok = !nonfinite && cosv >= cos_min && maxerr <= lim;
    printf("%s %s: cosine %.8f (min %.4f), max abs err %.3g (limit %.3g, max |ref| %.3g)%s\n",
           ok ? "ok  " : "FAIL", name, cosv, cos_min, maxerr, lim, maxref,
           nonfinite ? ", has non-finite values where the reference is finite" : "");
out:
    npu_npy_free(&ref);
    npu_npy_free(&got);
    return ok;
}

static int
run(char *const argv[])
{
    printf("+");
    for (int i = 0; argv[i]; i++)
        printf(" %s", argv[i]);
    printf("\n");
    fflush(stdout);
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
    if (err) {
        printf("cannot start %s: %s\n", argv[0], strerror(err));
        return -1;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int
main(int argc, char **argv)
{
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: %s NPU_RUN MODEL_DIR WORK_DIR [BACKEND [DATA_SUBDIR]]\n", argv[0]);
        return 2;
    }
    const char *npu_run = argv[1], *work = argv[3];
    static char mdir[1024];
    snprintf(mdir, sizeof(mdir), "%s", argv[2]);
    for (size_t l = strlen(mdir); l > 1 && mdir[l - 1] == '/'; l--)
        mdir[l - 1] = '\0';
    const char *backend = argc > 4 ? argv[4] : "cpu";
    const char *sub = argc > 5 ? argv[5] : NULL;
    static char ddir[1100];
    snprintf(ddir, sizeof(ddir), "%s%s%s", mdir, sub ? "/" : "", sub ? sub : "");
    bool fp16 = strcmp(backend, "cpu") != 0;
    double cos_min = fp16 ? 0.999 : 0.9999, err_rel = fp16 ? 3e-2 : 1e-3;

    /* A fresh output dir per model and backend. */
    const char *base = strrchr(mdir, '/');
    base = base ? base + 1 : mdir;
    char outdir[1024];
    snprintf(outdir, sizeof(outdir), "%s/%s%s%s-%s", work, base, sub ? "-" : "", sub ? sub : "",
             backend);
    mkdir(work, 0777);
    mkdir(outdir, 0777);
    DIR *od = opendir(outdir);
    struct dirent *e;
    while (od && (e = readdir(od))) {
        if (strstr(e->d_name, ".npy")) {
            char p[1400];
            snprintf(p, sizeof(p), "%s/%s", outdir, e->d_name);
            unlink(p);
        }
    }
    if (od)
        closedir(od);

    char *args[64];
    int na = 0;
    char model[1024], dims[256] = "";
    snprintf(model, sizeof(model), "%s/model.onnx", mdir);
    args[na++] = (char *)npu_run;
    args[na++] = model;
    args[na++] = "--backend";
    args[na++] = (char *)backend;
    args[na++] = "--output-dir";
    args[na++] = outdir;
    char meta[1100 + sizeof("/meta.txt")];
    snprintf(meta, sizeof(meta), "%s/meta.txt", ddir);
    FILE *mf = fopen(meta, "r");
    if (mf) {
        if (fgets(dims, sizeof(dims), mf))
            dims[strcspn(dims, "\r\n")] = '\0';
        fclose(mf);
    }
    if (dims[0]) {
        args[na++] = "--dims";
        args[na++] = dims;
    }
    static char inputs[16][1200];
    char *outs[16];
    int ni = 0, no = 0;
    DIR *d = opendir(ddir);
    if (!d) {
        printf("cannot open %s: %s\n", ddir, strerror(errno));
        return 1;
    }
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 8 || strcmp(e->d_name + l - 4, ".npy"))
            continue;
        if (!strncmp(e->d_name, "in.", 3) && ni < 16) {
            snprintf(inputs[ni], sizeof(inputs[ni]), "%.*s=%s/%s", (int)(l - 7), e->d_name + 3,
                     ddir, e->d_name);
            args[na++] = "--input";
            args[na++] = inputs[ni++];
        } else if (!strncmp(e->d_name, "out.", 4) && no < 16) {
            outs[no++] = strdup(e->d_name);
        }
    }
    closedir(d);
    args[na] = NULL;
    int rc = run(args);
    if (rc != 0) {
        printf("FAIL: npu-run exited with %d\n", rc);
        return 1;
    }
    int fails = 0;
    for (int k = 0; k < no; k++) {
        /* out.<file>.npy: <file> is the name npu-run is documented to give the
         * output (make-models.py computes it independently; odd_names checks it). */
        char name[256], ref[1400], got[1400];
        snprintf(name, sizeof(name), "%.*s", (int)(strlen(outs[k]) - 8), outs[k] + 4);
        snprintf(ref, sizeof(ref), "%s/%s", ddir, outs[k]);
        snprintf(got, sizeof(got), "%s/%s.npy", outdir, name);
        if (!compare(name, ref, got, cos_min, err_rel))
            fails++;
        free(outs[k]);
    }
    if (!no) {
        printf("FAIL: no out.*.npy in %s\n", ddir);
        return 1;
    }
    printf("%s%s%s: %d of %d outputs match torch on backend %s\n", base, sub ? "/" : "",
           sub ? sub : "", no - fails, no, backend);
    return fails ? 1 : 0;
}
