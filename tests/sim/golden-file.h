/* SPDX-License-Identifier: MIT */
/*
 * golden-file.h: a reader for the "golden-regcmd v1" text format of
 * tests/golden/vectors/README.md, enough for the simulator's golden tests:
 * header lines, "# buffer:" lines, task lines with their key=value pairs and
 * the qwords of each task. (Test-side helper written while the hardware
 * layer's parser was not yet available.)
 */
#ifndef GOLDEN_FILE_H
#define GOLDEN_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int chain;       /* -1 if absent */
    char ran[32];    /* "yes", "no", "yes(submit1)", "unknown", ... */
    char plan[16];
    int dup_of;      /* -1 if absent */
    int submit;      /* -1 if absent */
    int next;        /* -1 none or absent */
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

static inline void
gf_task_kv(struct gf_task *t, const char *k, const char *v)
{
    if (!strcmp(k, "amount"))
        t->amount = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(k, "enable"))
        t->enable = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(k, "int_mask"))
        t->int_mask = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(k, "addr"))
        t->addr = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(k, "chain"))
        t->chain = atoi(v);
    else if (!strcmp(k, "ran"))
        snprintf(t->ran, sizeof(t->ran), "%s", v);
    else if (!strcmp(k, "plan"))
        snprintf(t->plan, sizeof(t->plan), "%s", v);
    else if (!strcmp(k, "dup_of"))
        t->dup_of = atoi(v);
    else if (!strcmp(k, "submit"))
        t->submit = atoi(v);
    else if (!strcmp(k, "next"))
        t->next = strcmp(v, "none") ? atoi(v) : -1;
}

/* Returns 0 on success, -1 (message on stderr) on a malformed file. */
static inline int
gf_load(const char *path, struct gf *g)
{
    memset(g, 0, sizeof(*g));
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    char line[1024];
    struct gf_task *cur = NULL;
    unsigned cap = 0;
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#') {
            const char *p = line + 1;
            while (*p == ' ')
                p++;
            const char *colon = strchr(p, ':');
            if (!colon)
                continue;
            char key[32];
            snprintf(key, sizeof(key), "%.*s", (int)(colon - p), p);
            const char *val = colon + 1;
            while (*val == ' ')
                val++;
            if (!strcmp(key, "buffer") && g->n_buf < GF_MAX_BUF) {
                struct gf_buf *b = &g->buf[g->n_buf];
                char nm[64];
                unsigned long st, sz;
                if (sscanf(val, "%63s %li %li", nm, (long *)&st, (long *)&sz) == 3) {
                    snprintf(b->name, sizeof(b->name), "%s", nm);
                    b->start = (uint32_t)st;
                    b->size = (uint32_t)sz;
                    g->n_buf++;
                }
            } else if (g->n_hdr < GF_MAX_HDR) {
                snprintf(g->hdr_key[g->n_hdr], sizeof(g->hdr_key[0]), "%s", key);
                snprintf(g->hdr_val[g->n_hdr], sizeof(g->hdr_val[0]), "%s", val);
                g->n_hdr++;
            }
            continue;
        }
        if (!strncmp(line, "task ", 5)) {
            if (g->n_task == GF_MAX_TASK) {
                rc = -1;
                break;
            }
            cur = &g->task[g->n_task++];
            memset(cur, 0, sizeof(*cur));
            cur->chain = cur->dup_of = cur->submit = cur->next = -1;
            cap = 0;
            char *save = NULL;
            char *tok = strtok_r(line + 5, " ", &save);
            cur->index = atoi(tok);
            while ((tok = strtok_r(NULL, " ", &save))) {
                char *eq = strchr(tok, '=');
                if (!eq)
                    continue;
                *eq = 0;
                gf_task_kv(cur, tok, eq + 1);
            }
            continue;
        }
        unsigned t, o, v;
        if (sscanf(line, "%4x %4x %8x", &t, &o, &v) == 3) {
            if (!cur) {
                fprintf(stderr, "%s:%d: qword before any task\n", path, lineno);
                rc = -1;
                break;
            }
            if (cur->nq == cap) {
                cap = cap ? cap * 2 : 128;
                uint64_t *n = realloc(cur->q, cap * sizeof(*n));
                if (!n) {
                    rc = -1;
                    break;
                }
                cur->q = n;
            }
            cur->q[cur->nq++] = (uint64_t)t << 48 | (uint64_t)v << 16 | o;
        }
    }
    fclose(f);
    if (rc)
        gf_free(g);
    return rc;
}

#endif /* GOLDEN_FILE_H */
