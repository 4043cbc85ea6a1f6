/* SPDX-License-Identifier: MIT */
/*
 * pb_crosscheck.c: two independent TensorProto readers must agree: the
 * conformance runner's own (onnx-pb.c, which decodes the expected outputs)
 * and the importer's (npu_onnx_read_tensor). Every input_K.pb/output_K.pb of
 * the given test-data sets is decoded by both; dtype, shape, name and bytes
 * must be equal wherever both accept the file, and they must accept the same
 * files (sequence/optional protos and string tensors are refused by both).
 * Usage: pb_crosscheck SET_DIR...
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-test.h"
#include "npu/npu-onnx.h"
#include "onnx-pb.h"

static int files, both_ok, both_refused, disagree;

static void
quiet_log(enum npu_log_level level, const char *domain, const char *msg, void *user)
{
}

static void
check_file(const char *path)
{
    uint8_t *buf;
    size_t len;
    struct npu_tensor a = {0}, b = {0};
    char name_a[PB_NAME] = "", *name_b = NULL;
    int et;
    files++;
    if (pb_slurp(path, &buf, &len)) {
        fprintf(stderr, "%s: unreadable\n", path);
        disagree++;
        return;
    }
    enum npu_status sa = pb_read_tensor(buf, len, &a, name_a, &et);
    free(buf);
    enum npu_status sb = npu_onnx_read_tensor(path, &b, &name_b);
    if (sa && sb) {
        both_refused++;
    } else if (sa || sb) {
        fprintf(stderr, "%s: runner reader says %s, importer says %s\n", path, npu_status_str(sa),
                npu_status_str(sb));
        disagree++;
    } else {
        bool same = a.dtype == b.dtype && a.ndim == b.ndim && !strcmp(name_a, name_b ? name_b : "");
        for (int i = 0; same && i < a.ndim; i++)
            same = a.dims[i] == b.dims[i];
        int64_t nb = npu_tensor_nbytes(&a);
        if (same && nb > 0)
            same = !memcmp(a.data, b.data, (size_t)nb);
        if (same) {
            both_ok++;
        } else {
            fprintf(stderr, "%s: the readers disagree (%s vs %s, ndim %d vs %d)\n", path,
                    npu_dtype_name(a.dtype), npu_dtype_name(b.dtype), a.ndim, b.ndim);
            disagree++;
        }
    }
    free(a.data);
    free(b.data);
    free(name_b);
}

static void
walk(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[2048];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        if (l > 3 && !strcmp(e->d_name + l - 3, ".pb"))
            check_file(p);
        else if (depth < 2)
            walk(p, depth + 1);
    }
    closedir(d);
}

int
main(int argc, char **argv)
{
    npu_log_set_handler(quiet_log, NULL);
    for (int i = 1; i < argc; i++)
        walk(argv[i], 0);
    printf("pb_crosscheck: %d files: %d decoded identically, %d refused by both, %d disagree\n",
           files, both_ok, both_refused, disagree);
    CHECK(files > 0);
    CHECK_EQ_INT(0, disagree);
    return npu_test_done("pb_crosscheck");
}
