/* SPDX-License-Identifier: MIT */
/*
 * npu-timing.c: the table of NPU timing models (npu/npu-timing.h), one read-only row
 * per version of the model document, and the per-task formulas of each. DEFAULT_MODEL is
 * the row npu_timing_model() returns unless NPU_TIMING or npu_timing_model_select() names
 * another: v2 (docs/timing-model-v2.md); v1 stays so that old figures can be reproduced by
 * name.
 */
#include "npu/npu-timing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-common.h"

/* Row v2 and its bounds: rates times f, overheads divided by f (f = 1: the fit). */
#define V2_ROW(nm, lbl, f)                                                                         \
    {                                                                                              \
        .name = nm, .version = 2, .label = lbl, .doc = "docs/timing-model-v2.md",                  \
        .clock_hz = 1.0e9, .mac_per_cycle_int8 = 1024, .mac_per_cycle_fp16 = 512,                  \
        .kernel_group_int8 = 32, .kernel_group_fp16 = 16, .channel_group = 32,                     \
        .flying_elems_per_cycle = 16, .dma_bytes_per_s_core = 12.0e9 * (f),                        \
        .dma_bytes_per_s_total = 28.0e9 * (f), .cbuf_bytes = 393216,                               \
        .task_overhead_s = 3.0e-6 / (f), .submit_overhead_s = 25.0e-6 / (f), .per_mechanism = 1,   \
        .cna_efficiency = (0.88 * (f) < 1.0 ? 0.88 * (f) : 1.0), .dma_eff_weight = 0.92,           \
        .dma_eff_line = 0.65, .dma_task_latency_s = 0.5e-6 / (f),                                  \
    }

static const struct npu_timing_model models[] = {
    {
        .name = "v1",
        .version = 1,
        .label = "timing model v1",
        .doc = "shared/hw/timing-model-v1.md",
        .clock_hz = 1.0e9,
        .mac_per_cycle_int8 = 1024,
        .mac_per_cycle_fp16 = 512,
        .kernel_group_int8 = 32,
        .kernel_group_fp16 = 16,
        .channel_group = 32,
        .flying_elems_per_cycle = 16,
        .dma_bytes_per_s_core = 10.0e9,
        .dma_bytes_per_s_total = 25.0e9,
        .cbuf_bytes = 393216,
        .task_overhead_s = 2.0e-6,
        .submit_overhead_s = 60.0e-6,
    },
    /* v2 (docs/timing-model-v2.md says what each constant is fitted to), then the same
     * formulas with every fitted rate and overhead moved by the published figures' +-20 %
     * towards a faster (v2-low) and a slower (v2-high) board: the bounds of every v2
     * figure. */
    V2_ROW("v2", "timing model v2", 1.0),
    V2_ROW("v2-low", "timing model v2-low (fast bound)", 1.2),
    V2_ROW("v2-high", "timing model v2-high (slow bound)", 1.0 / 1.2),
};

/* The row npu_timing_model() returns when nothing selects another. */
enum { DEFAULT_MODEL = 1 };

static const struct npu_timing_model *selected;

const struct npu_timing_model *
npu_timing_model(void)
{
    if (!selected) {
        const char *e = getenv("NPU_TIMING");
        const struct npu_timing_model *m = e && *e ? npu_timing_model_get(e) : NULL;
        char msg[400] = "";
        if (e && *e && !m && strchr(e, '/'))
            m = npu_timing_model_load_report(e, msg, sizeof(msg));
        if (e && *e && !m)
            fprintf(stderr, "NPU_TIMING=%s: no timing model of that name (%s)%s%s; using %s\n", e,
                    npu_timing_model_names(), *msg ? "; " : "", msg, models[DEFAULT_MODEL].name);
        selected = m ? m : &models[DEFAULT_MODEL];
    }
    return selected;
}

int
npu_timing_model_select(const char *name)
{
    const struct npu_timing_model *m = npu_timing_model_get(name);
    if (!m && name && strchr(name, '/'))
        m = npu_timing_model_load_report(name, NULL, 0);
    if (!m)
        return -1;
    selected = m;
    return 0;
}

const char *
npu_timing_model_names(void)
{
    return "v1, v2, v2-low, v2-high, or a bring-up report's path (npu-selftest --report)";
}

void
npu_timing_task(const struct npu_timing_model *tm, int cna, double compute_s, uint64_t weight_bytes,
                uint64_t dma_bytes, double *compute_out, double *dma_out)
{
    if (!tm->per_mechanism) {
        /* v1 "Per task" */
        *compute_out = compute_s;
        *dma_out = (double)dma_bytes / tm->dma_bytes_per_s_core;
        return;
    }
    /* v2: the array issues cna_efficiency of its steps back to back; weights stream at the
     * contiguous rate, everything else at the line rate, after one DRAM round trip. */
    *compute_out = cna ? compute_s / tm->cna_efficiency : compute_s;
    uint64_t w = weight_bytes < dma_bytes ? weight_bytes : dma_bytes;
    *dma_out = dma_bytes
                   ? tm->dma_task_latency_s +
                         (double)w / (tm->dma_bytes_per_s_core * tm->dma_eff_weight) +
                         (double)(dma_bytes - w) / (tm->dma_bytes_per_s_core * tm->dma_eff_line)
                   : 0.0;
}

/* ---- a bring-up report as a timing model ---------------------------------------------- */

/* The report row (one per process: the last report loaded) and its names. */
static struct npu_timing_model report_row;
static char report_name[288], report_label[320];

/* The number after "key" (the first occurrence at or after from), NAN when absent. */
static double
json_num(const char *from, const char *end, const char *key)
{
    const char *k = strstr(from, key);
    if (!k || k >= end)
        return NAN;
    const char *c = strchr(k + strlen(key), ':');
    if (!c || c >= end)
        return NAN;
    char *e = NULL;
    errno = 0;
    double v = strtod(c + 1, &e);
    return e == c + 1 || errno ? NAN : v;
}

/* Whether the "source" after from (before end) is src. */
static int
json_source_is(const char *from, const char *end, const char *src)
{
    const char *k = strstr(from, "\"source\"");
    if (!k || k >= end)
        return 0;
    const char *q = strchr(k + 8, '"');
    return q && q < end && !strncmp(q + 1, src, strlen(src)) && q[1 + strlen(src)] == '"';
}

/* Fills report_row from the text of a report (docs/hardware.md, "The bring-up report"):
 * v2's row with the report's fitted per-task and per-submit cost and DMA rate. -1 and
 * *why when it is not a report or lacks those figures. */
static int
report_parse(const char *txt, const char *path, const char **why)
{
    if (!strstr(txt, "\"opennpu-bringup-report\"")) {
        *why = "not an opennpu-bringup-report (npu-selftest --report FILE writes one)";
        return -1;
    }
    const char *fig = strstr(txt, "\"figures\"");
    const char *fig_end = fig ? strstr(fig, "\"timing_model\"") : NULL;
    if (!fig || !fig_end) {
        *why = "no \"figures\" section";
        return -1;
    }
    const char *t = strstr(fig, "\"task_overhead_s\"");
    const char *sb = strstr(fig, "\"submit_overhead_s\"");
    const char *d = strstr(fig, "\"dma_bytes_per_s_core\"");
    if (!t || t > fig_end || !sb || sb > fig_end || !d || d > fig_end) {
        *why = "its figures lack task_overhead_s, submit_overhead_s or dma_bytes_per_s_core "
               "(run the chain and dma steps)";
        return -1;
    }
    double task = json_num(t, fig_end, "\"value\"");
    double submit = json_num(sb, fig_end, "\"value\"");
    int submit_host = json_source_is(sb, fig_end, "host");
    double chain_bytes = json_num(fig, fig_end, "\"chain_task_bytes\"");
    /* the mean of the cores' DMA rates */
    const char *d_end = strchr(d, ']');
    double dma = 0;
    int n_dma = 0;
    for (const char *c = strstr(d, "\"value\""); c && d_end && c < d_end;
         c = strstr(c + 7, "\"value\"")) {
        double v = json_num(c, d_end, "\"value\"");
        if (!(v > 0) || !isfinite(v)) {
            *why = "a dma_bytes_per_s_core value is not a positive number";
            return -1;
        }
        dma += v;
        n_dma++;
    }
    if (!n_dma || !(task > 0) || !isfinite(task) || !isfinite(submit)) {
        *why = "its task cost, submit overhead or DMA rates are missing or not positive";
        return -1;
    }
    dma /= n_dma;
    const struct npu_timing_model *v2 = npu_timing_model_get("v2");
    report_row = *v2;
    /* The dma step moves NC1HWC2 lines (feature traffic): its rate is the line rate. The
     * chain's tasks each include one DRAM round trip and their few bytes at that rate;
     * what remains is the task overhead. A host-timed intercept is the host's submit path,
     * not the NPU's: v2's submit overhead stays. */
    report_row.dma_bytes_per_s_core = dma / v2->dma_eff_line;
    double rest = task - v2->dma_task_latency_s - (chain_bytes > 0 ? chain_bytes / dma : 0.0);
    report_row.task_overhead_s = rest > 0 ? rest : task;
    if (!submit_host && submit > 0)
        report_row.submit_overhead_s = submit;
    snprintf(report_name, sizeof(report_name), "report:%s", path);
    snprintf(report_label, sizeof(report_label), "timing model report:%s", path);
    report_row.name = report_name;
    report_row.label = report_label;
    report_row.doc = "docs/hardware.md";
    return 0;
}

const struct npu_timing_model *
npu_timing_model_load_report(const char *path, char *msg, size_t msg_len)
{
    const char *why = NULL;
    char *txt = NULL;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        why = path ? strerror(errno) : "no file named";
        goto fail;
    }
    txt = calloc(1, 1u << 20);
    size_t n = txt ? fread(txt, 1, (1u << 20) - 1, f) : 0;
    fclose(f);
    if (!txt) {
        why = "out of memory";
        goto fail;
    }
    if (!n) {
        why = "empty or unreadable";
        goto fail;
    }
    if (report_parse(txt, path, &why))
        goto fail;
    free(txt);
    return &report_row;
fail:
    free(txt);
    if (msg && msg_len)
        snprintf(msg, msg_len, "%s: %s", path ? path : "(null)", why);
    return NULL;
}

const struct npu_timing_model *
npu_timing_model_get(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < NPU_ARRAY_SIZE(models); i++)
        if (!strcmp(models[i].name, name))
            return &models[i];
    if (report_row.name && !strcmp(report_row.name, name))
        return &report_row;
    return NULL;
}

double
npu_timing_dram_load(const struct npu_timing_model *tm, uint64_t weight_bytes, uint64_t dma_bytes)
{
    if (!tm->per_mechanism)
        return (double)dma_bytes;
    uint64_t w = weight_bytes < dma_bytes ? weight_bytes : dma_bytes;
    return (double)w / tm->dma_eff_weight + (double)(dma_bytes - w) / tm->dma_eff_line;
}
