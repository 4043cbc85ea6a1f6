/* SPDX-License-Identifier: MIT */
/*
 * npu-hwverify.c: the verified compile profile's check (docs/evidence.md
 * "Compile profiles"). After a compile, every NPU task of the program is
 * classified with the evidence ledger (core/hw/evidence.xml through
 * npu_evidence_classify_task); a task below level O (a T pattern, or a write
 * no entry covers) names the source node that emitted it and the first such
 * write. npu_build compiles again with those nodes refused
 * (npu_backend_options.hw_refused, asked by npu_backend_supports) until the
 * program has no task below O. The ledger is the only list of what is
 * verified: when a bring-up report upgrades a pattern, it is upgraded in the
 * ledger and this check lets the pattern through with no change here.
 */
#include <stdlib.h>
#include <string.h>

#include "driver-priv.h"
#include "npu/npu-backend.h"
#include "npu/npu-evidence.h"

#define DOM "build"

static bool
listed(const struct npu_hw_refusals *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].node, name))
            return true;
    return false;
}

static enum npu_status
add(struct npu_hw_refusals *r, const char *node, const struct npu_evidence_write *w,
    enum npu_evidence_level lv)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        struct npu_hw_refusal *v = realloc(r->v, (size_t)cap * sizeof(*v));
        if (!v)
            return NPU_ERR_NOMEM;
        r->v = v;
        r->cap = cap;
    }
    char *name = strdup(node);
    if (!name)
        return NPU_ERR_NOMEM;
    r->v[r->n++] = (struct npu_hw_refusal){.node = name,
                                           .pattern = w->entry ? w->entry->id : "none",
                                           .reg = npu_evidence_reg_name(w->offset),
                                           .value = w->value,
                                           .level = (int)lv};
    return NPU_OK;
}

enum npu_status
npu_hw_collect_refusals(const struct npu_program *p, struct npu_hw_refusals *r, int *added,
                        int *below)
{
    struct npu_evidence_write *w = NULL;
    size_t wcap = 0;
    enum npu_status st = NPU_OK;
    *added = 0;
    *below = 0;
    for (int s = 0; s < p->n_steps && !st; s++) {
        const struct npu_prog_step *sp = &p->steps[s];
        if (sp->kind != NPU_STEP_NPU_JOB)
            continue;
        const struct npu_prog_job *j = &p->jobs[sp->job];
        for (uint32_t t = 0; t < j->n_tasks; t++) {
            const struct npu_prog_task *tk = &j->tasks[t];
            size_t nq = (size_t)tk->n_body + 4; /* body and the 4-qword tail */
            if (tk->start + nq > j->n_qwords) {
                npu_err(DOM, "job %d task %u: segment outside the regcmd image", sp->job, t);
                st = NPU_ERR_INTERNAL;
                break;
            }
            if (nq > wcap) {
                free(w);
                wcap = nq;
                if (!(w = malloc(wcap * sizeof(*w)))) {
                    st = NPU_ERR_NOMEM;
                    break;
                }
            }
            enum npu_evidence_level lv;
            size_t nw = 0;
            if ((st = npu_evidence_classify_task(j->regcmd + tk->start, nq, w, wcap, &nw, &lv)))
                break;
            if (lv >= NPU_EVIDENCE_O)
                continue;
            (*below)++;
            /* an unnamed node cannot be refused by name: the caller's last resort */
            const char *name = tk->name;
            if (!name || !name[0] || listed(r, name))
                continue;
            /* the first write at the task's level decides */
            size_t k = 0;
            while (k < nw && (w[k].entry ? w[k].entry->level : NPU_EVIDENCE_NONE) != lv)
                k++;
            if (k == nw)
                k = 0;
            if ((st = add(r, name, &w[k], lv)))
                break;
            (*added)++;
        }
    }
    free(w);
    return st;
}

void
npu_hw_refusals_free(struct npu_hw_refusals *r)
{
    for (int i = 0; i < r->n; i++)
        free((char *)r->v[i].node);
    free(r->v);
    memset(r, 0, sizeof(*r));
}
