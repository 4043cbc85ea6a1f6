// SPDX-License-Identifier: MIT
/*
 * quant-dataset.c: the calibration list of the quantiser (npu-quant.h). One
 * sample per line, the model's inputs as .npy files in input order separated
 * by spaces (the layout Rockchip's toolkit reads). Every file is checked
 * against the graph's input before calibration starts, so a bad list fails
 * with the line, the file and the problem rather than in the middle of a run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-npy.h"
#include "npu/npu-quant.h"

#define DOM "quant"

void
npu_quant_dataset_free(struct npu_quant_dataset *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->nsamples * d->ninputs; i++)
        npu_npy_free(&d->t[i]);
    free(d->t);
    free(d);
}

static void
shape_str(const struct npu_tensor *t, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

/* Checks one file against graph input v. */
static enum npu_status
check_input(const char *list, int line, const char *path, const struct npu_tensor *t,
            const struct npu_value *v)
{
    char a[128], b[128];
    if (t->dtype != v->t.dtype) {
        npu_err(DOM, "%s:%d: %s is %s, the model's input '%s' is %s", list, line, path,
                npu_dtype_name(t->dtype), v->name, npu_dtype_name(v->t.dtype));
        return NPU_ERR_INVALID;
    }
    bool same = t->ndim == v->t.ndim;
    for (int i = 0; same && i < t->ndim; i++)
        same = t->dims[i] == v->t.dims[i];
    if (!same) {
        shape_str(t, a, sizeof(a));
        shape_str(&v->t, b, sizeof(b));
        npu_err(DOM, "%s:%d: %s has shape %s, the model's input '%s' has %s", list, line, path, a,
                v->name, b);
        return NPU_ERR_INVALID;
    }
    return NPU_OK;
}

enum npu_status
npu_quant_dataset_load(const char *list, const struct npu_graph *g, struct npu_quant_dataset **out)
{
    *out = NULL;
    FILE *f = fopen(list, "r");
    if (!f) {
        npu_err(DOM, "dataset %s: %s", list, strerror(errno));
        return NPU_ERR_IO;
    }
    enum npu_status st = NPU_ERR_NOMEM;
    struct npu_quant_dataset *d = calloc(1, sizeof(*d));
    char *linebuf = NULL, *dir = strdup(list);
    size_t cap = 0;
    int capn = 0, lineno = 0;
    if (!d || !dir)
        goto err;
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    d->ninputs = g->ninputs;
    if (g->ninputs < 1) {
        npu_err(DOM, "dataset %s: the model has no inputs to calibrate with", list);
        st = NPU_ERR_INVALID;
        goto err;
    }
    while (getline(&linebuf, &cap, f) > 0) {
        lineno++;
        char *save = NULL, *tok = strtok_r(linebuf, " \t\r\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        if (d->nsamples == capn) {
            capn = capn ? 2 * capn : 16;
            struct npu_tensor *nt = realloc(d->t, sizeof(*nt) * (size_t)capn * (size_t)g->ninputs);
            if (!nt)
                goto err;
            d->t = nt;
        }
        struct npu_tensor *row = &d->t[(size_t)d->nsamples * (size_t)g->ninputs];
        memset(row, 0, sizeof(*row) * (size_t)g->ninputs);
        int k = 0;
        for (; tok; tok = strtok_r(NULL, " \t\r\n", &save), k++) {
            if (k >= g->ninputs) {
                npu_err(DOM, "%s:%d: more files than the model's %d input%s", list, lineno,
                        g->ninputs, g->ninputs == 1 ? "" : "s");
                st = NPU_ERR_INVALID;
                goto err_row;
            }
            char path[4096];
            if (tok[0] == '/' || !dir[0])
                snprintf(path, sizeof(path), "%s", tok);
            else
                snprintf(path, sizeof(path), "%s%s", dir, tok);
            if ((st = npu_npy_read(path, &row[k]))) {
                npu_err(DOM, "%s:%d: cannot read %s (input %d, '%s'): %s", list, lineno, path, k,
                        g->inputs[k]->name, npu_status_str(st));
                goto err_row;
            }
            if ((st = check_input(list, lineno, path, &row[k], g->inputs[k])))
                goto err_row;
        }
        if (k < g->ninputs) {
            npu_err(DOM, "%s:%d: %d file%s, the model has %d inputs (give them in input order)",
                    list, lineno, k, k == 1 ? "" : "s", g->ninputs);
            st = NPU_ERR_INVALID;
            goto err_row;
        }
        d->nsamples++;
        continue;
    err_row:
        for (int i = 0; i < g->ninputs; i++)
            npu_npy_free(&row[i]);
        goto err;
    }
    if (d->nsamples < NPU_QUANT_MIN_SAMPLES) {
        npu_err(DOM, "dataset %s: %d sample%s; the quantiser needs at least %d", list, d->nsamples,
                d->nsamples == 1 ? "" : "s", NPU_QUANT_MIN_SAMPLES);
        st = NPU_ERR_INVALID;
        goto err;
    }
    free(linebuf);
    free(dir);
    fclose(f);
    *out = d;
    return NPU_OK;
err:
    free(linebuf);
    free(dir);
    fclose(f);
    npu_quant_dataset_free(d);
    return st;
}
