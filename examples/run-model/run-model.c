/* SPDX-License-Identifier: MIT */
/*
 * run-model.c: an application outside the OpenNPU tree, built against the
 * installed library with pkg-config (Makefile beside it). It loads a model
 * (.onnx, compiled on load, or a compiled .npub) with the public model API
 * (npu/npu-model.h) on the built-in NPU simulator "sim" (or the backend -b
 * names), feeds input i from the i-th .npy file given or zeros, runs it once
 * and prints each output's name, dtype, shape and first values.
 *
 *   run-model [-b BACKEND] MODEL [INPUT.npy]...
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <npu/npu-model.h>
#include <npu/npu-npy.h>

#define MAX_INPUT_FILES 64
#define SHOW_VALUES 8

static void
print_tensor(const char *what, const char *name, const struct npu_tensor *t)
{
    printf("%-6s %-20s %s [", what, name, npu_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++)
        printf("%s%lld", d ? ", " : "", (long long)t->dims[d]);
    printf("]");
}

/* Fills t with the shape and dtype of io and zeroed data. */
static bool
zeros_like(const struct npu_io_info *io, struct npu_tensor *t)
{
    memset(t, 0, sizeof(*t));
    t->dtype = io->dtype;
    t->ndim = io->ndim;
    memcpy(t->dims, io->dims, sizeof(t->dims));
    int64_t bytes = npu_tensor_nbytes(t);
    if (bytes < 0)
        return false;
    t->data = calloc(1, bytes ? (size_t)bytes : 1);
    return t->data != NULL;
}

static bool
same_shape(const struct npu_io_info *io, const struct npu_tensor *t)
{
    if (io->dtype != t->dtype || io->ndim != t->ndim)
        return false;
    for (int d = 0; d < io->ndim; d++)
        if (io->dims[d] != t->dims[d])
            return false;
    return true;
}

int
main(int argc, char **argv)
{
    const char *backend = "sim", *model_path = NULL;
    const char *files[MAX_INPUT_FILES];
    int nfiles = 0;

    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-b") && a + 1 < argc) {
            backend = argv[++a];
        } else if (argv[a][0] == '-') {
            fprintf(stderr, "usage: run-model [-b BACKEND] MODEL [INPUT.npy]...\n");
            return 2;
        } else if (!model_path) {
            model_path = argv[a];
        } else if (nfiles < MAX_INPUT_FILES) {
            files[nfiles++] = argv[a];
        } else {
            fprintf(stderr, "run-model: at most %d input files\n", MAX_INPUT_FILES);
            return 2;
        }
    }
    if (!model_path) {
        fprintf(stderr, "usage: run-model [-b BACKEND] MODEL [INPUT.npy]...\n");
        return 2;
    }

    struct npu_model_options mo = {.backend = backend};
    struct npu_model *m = NULL;
    enum npu_status st = npu_model_load(model_path, &mo, &m);
    if (st != NPU_OK) {
        fprintf(stderr, "run-model: %s: %s\n", model_path, npu_status_str(st));
        return 1;
    }
    int nin = npu_model_num_inputs(m), nout = npu_model_num_outputs(m);
    printf("model  %s: %d input(s), %d output(s), backend %s\n", model_path, nin, nout,
           npu_model_backend(m));
    if (nfiles > nin)
        fprintf(stderr, "run-model: %d input files for %d inputs; the rest are ignored\n", nfiles,
                nin);

    int rc = 1;
    struct npu_session *s = NULL;
    struct npu_tensor *in = calloc((size_t)nin + 1, sizeof(*in));
    struct npu_tensor *out = calloc((size_t)nout + 1, sizeof(*out));
    if (!in || !out)
        goto done;

    for (int i = 0; i < nin; i++) {
        const struct npu_io_info *io = npu_model_input(m, i);
        if (i < nfiles) {
            if (npu_npy_read(files[i], &in[i]) != NPU_OK)
                goto done; /* the library logged why */
            if (!same_shape(io, &in[i])) {
                fprintf(stderr, "run-model: %s: dtype or shape differs from input %s\n", files[i],
                        io->name);
                goto done;
            }
        } else if (!zeros_like(io, &in[i])) {
            fprintf(stderr, "run-model: input %s: out of memory\n", io->name);
            goto done;
        }
        print_tensor("input", io->name, &in[i]);
        printf(" %s\n", i < nfiles ? files[i] : "zeros");
    }

    st = npu_session_create(m, 0, &s);
    if (st != NPU_OK) {
        fprintf(stderr, "run-model: session: %s\n", npu_status_str(st));
        goto done;
    }
    struct npu_run_stats stats;
    st = npu_session_run(s, in, nin, out, nout, &stats);
    if (st != NPU_OK) {
        fprintf(stderr, "run-model: run: %s\n", npu_status_str(st));
        goto done;
    }

    rc = 0;
    for (int i = 0; i < nout; i++) {
        int64_t n = npu_tensor_numel(&out[i]);
        print_tensor("output", npu_model_output(m, i)->name, &out[i]);
        printf(":");
        for (int64_t k = 0; k < n && k < SHOW_VALUES; k++)
            printf(" %.6g", npu_dtype_load_f64(out[i].dtype, out[i].data, k));
        printf("%s\n", n > SHOW_VALUES ? " ..." : "");
        for (int64_t k = 0; k < n; k++) {
            if (npu_dtype_is_float(out[i].dtype) &&
                !isfinite(npu_dtype_load_f64(out[i].dtype, out[i].data, k))) {
                fprintf(stderr, "run-model: output %s: element %lld is not finite\n",
                        npu_model_output(m, i)->name, (long long)k);
                rc = 1;
                break;
            }
        }
    }
    printf("run    %.3f ms wall; %u NPU submit(s), %u task(s), %.3f ms NPU time modeled\n",
           stats.wall_s * 1e3, stats.submits, stats.tasks, stats.npu_modeled_s * 1e3);

done:
    npu_session_destroy(s);
    for (int i = 0; in && i < nin; i++) {
        if (i < nfiles)
            npu_npy_free(&in[i]);
        else
            free(in[i].data);
    }
    free(in);
    free(out);
    npu_model_free(m);
    return rc;
}
