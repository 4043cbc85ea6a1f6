/* SPDX-License-Identifier: MIT */
/*
 * golden-file.h: the parts of a "golden-regcmd v1" file (tests/golden/vectors/
 * README.md) the simulator's golden tests use, read with the hardware layer's
 * parser (npu-golden.h): header lines, buffers, tasks with their keys and
 * qwords.
 */
#ifndef GOLDEN_FILE_H
#define GOLDEN_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-golden.h"

#define GF_MAX_BUF 32
#define GF_MAX_TASK 256
#define GF_MAX_HDR 96

struct gf_buf {
    char name[64];
    uint32_t start, size;
};

struct gf_task {
    int index;
    uint32_t amount, enable, int_mask, addr;
    int chain;    /* -1 if absent */
    char ran[32]; /* "yes", "no", "yes(submit1)", "unknown", ... */
    char plan[16];
    int dup_of; /* -1 if absent */
    int submit; /* -1 if absent */
    int next;   /* -1 none or absent */
    uint64_t *q;
    unsigned nq;
};

struct gf {
    char hdr_key[GF_MAX_HDR][32];
    char hdr_val[GF_MAX_HDR][512];
    unsigned n_hdr;
    struct gf_buf buf[GF_MAX_BUF];
    unsigned n_buf;
    struct gf_task task[GF_MAX_TASK];
    unsigned n_task;
};

static inline const char *
gf_header(const struct gf *g, const char *key)
{
    for (unsigned i = 0; i < g->n_hdr; i++)
        if (!strcmp(g->hdr_key[i], key))
            return g->hdr_val[i];
    return NULL;
}

static inline const struct gf_buf *
gf_buffer(const struct gf *g, const char *name)
{
    for (unsigned i = 0; i < g->n_buf; i++)
        if (!strcmp(g->buf[i].name, name))
            return &g->buf[i];
    return NULL;
}

static inline void
gf_free(struct gf *g)
{
    for (unsigned i = 0; i < g->n_task; i++)
        free(g->task[i].q);
    memset(g, 0, sizeof(*g));
}

/* Loads a file with the hardware layer's parser (npu-golden.h) and copies
 * what the tests use into struct gf. Returns 0, or -1 with a message. */
static inline int
gf_load(const char *path, struct gf *g)
{
    memset(g, 0, sizeof(*g));
    struct npu_golden ng;
    if (npu_golden_load(path, &ng) != NPU_OK) {
        fprintf(stderr, "%s: %s\n", path, ng.errmsg);
        return -1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < ng.n_header && g->n_hdr < GF_MAX_HDR; i++) {
        snprintf(g->hdr_key[g->n_hdr], sizeof(g->hdr_key[0]), "%s", ng.header[i].key);
        snprintf(g->hdr_val[g->n_hdr], sizeof(g->hdr_val[0]), "%s", ng.header[i].value);
        g->n_hdr++;
    }
    for (uint32_t i = 0; i < ng.n_buffers && g->n_buf < GF_MAX_BUF; i++) {
        struct gf_buf *b = &g->buf[g->n_buf++];
        snprintf(b->name, sizeof(b->name), "%s", ng.buffers[i].name);
        b->start = ng.buffers[i].start;
        b->size = ng.buffers[i].size;
    }
    for (uint32_t i = 0; i < ng.n_tasks; i++) {
        const struct npu_golden_task *s = &ng.tasks[i];
        if (g->n_task == GF_MAX_TASK) {
            rc = -1;
            break;
        }
        struct gf_task *t = &g->task[g->n_task++];
        memset(t, 0, sizeof(*t));
        t->index = (int)s->index;
        t->amount = s->amount < 0 ? 0 : (uint32_t)s->amount;
        t->enable = s->enable < 0 ? 0 : (uint32_t)s->enable;
        t->int_mask = s->int_mask < 0 ? 0 : (uint32_t)s->int_mask;
        t->addr = s->addr < 0 ? 0 : (uint32_t)s->addr;
        t->chain = (int)s->chain;
        t->next = (int)s->next;
        t->dup_of = (int)s->dup_of;
        const char *v = npu_golden_task_get(s, "ran");
        snprintf(t->ran, sizeof(t->ran), "%s", v ? v : "");
        v = npu_golden_task_get(s, "plan");
        snprintf(t->plan, sizeof(t->plan), "%s", v ? v : "");
        v = npu_golden_task_get(s, "submit");
        t->submit = v ? atoi(v) : -1;
        if (s->n_q) {
            t->q = malloc(s->n_q * sizeof(*t->q));
            if (!t->q) {
                rc = -1;
                break;
            }
            for (uint32_t k = 0; k < s->n_q; k++)
                t->q[k] = s->q[k].q;
        }
        t->nq = s->n_q;
    }
    npu_golden_free(&ng);
    if (rc)
        gf_free(g);
    return rc;
}

#endif /* GOLDEN_FILE_H */
