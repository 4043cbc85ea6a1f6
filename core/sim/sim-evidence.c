/* SPDX-License-Identifier: MIT */
/*
 * sim-evidence.c: strict mode's allow-list. Every register write (and the
 * op_en entry) a task fetches must be covered by an entry of the evidence
 * ledger (core/hw/evidence.xml, docs/evidence.md) at or above the simulator's
 * threshold (V, M, O or T: npu_device_options.evidence, else $NPU_SIM_EVIDENCE);
 * otherwise the job fails naming the task, the register, the value and the
 * nearest ledger entry. The deny-list checks of the blocks run as before.
 *
 * Without a threshold the allow-list is off. The ledger's T entries come from
 * a trace of what the compiler emits for the models we test, so a user's model
 * nobody traced can write a value the ledger lacks; refusing it would fail a
 * laptop run that the board may well execute. The test suite runs with
 * NPU_SIM_EVIDENCE=T (meson's default test setup), so every program the tests
 * compile is held to the ledger.
 *
 * For keeping the ledger current, $NPU_SIM_EVIDENCE_TRACE=FILE appends every
 * distinct write no entry covers (strict or lenient) as "BLOCK.REG VALUE
 * PROGRAM" to FILE; scripts/evidence-survey.py reads such traces.
 */
#include "sim-priv.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu/npu-evidence.h"

enum npu_status
sim_evidence_threshold(int requested, int *out)
{
    if (requested < 0 || requested > NPU_EVIDENCE_V) {
        npu_err("sim",
                "evidence threshold %d: use 1 (T) to 4 (V), 0 for the default or "
                "-1 for no allow-list",
                requested);
        return NPU_ERR_INVALID;
    }
    if (requested) {
        *out = requested;
        return NPU_OK;
    }
    const char *env = getenv("NPU_SIM_EVIDENCE");
    enum npu_evidence_level lv = NPU_EVIDENCE_T;
    if (!env || !*env || !strcmp(env, "off")) {
        *out = -1;
        return NPU_OK;
    }
    if (npu_evidence_level_parse(env, &lv) != NPU_OK) {
        npu_err("sim", "NPU_SIM_EVIDENCE=%s: use V, M, O, T or off", env);
        return NPU_ERR_INVALID;
    }
    *out = (int)lv;
    return NPU_OK;
}

/* ---- the trace: distinct uncovered writes, process-wide */

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t trace_seen[1u << 14];
static unsigned trace_n;

static void
trace_write(uint16_t off, uint32_t value)
{
    const char *path = getenv("NPU_SIM_EVIDENCE_TRACE");
    if (!path || !*path)
        return;
    uint64_t key = ((uint64_t)off << 32 | value) + 1;
    pthread_mutex_lock(&trace_lock);
    unsigned cap = NPU_ARRAY_SIZE(trace_seen);
    unsigned h = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 50) & (cap - 1);
    while (trace_seen[h] && trace_seen[h] != key)
        h = (h + 1) & (cap - 1);
    if (!trace_seen[h] && trace_n + 1 < cap) {
        trace_seen[h] = key;
        trace_n++;
        FILE *f = fopen(path, "a");
        if (f) {
            const struct npu_reg_info *r = npu_reg_lookup(off);
            extern char *program_invocation_short_name;
            fprintf(f, "%s 0x%08x %s\n",
                    off == NPU_OP_EN_OFFSET ? "PC.OP_EN" : (r ? r->full_name : "?"), value,
                    program_invocation_short_name);
            fclose(f);
        }
    }
    pthread_mutex_unlock(&trace_lock);
}

bool
sim_evidence_check(struct sim_exec *x, uint16_t off, uint32_t value)
{
    const struct npu_evidence_entry *e = npu_evidence_lookup(off, value);
    if (!e)
        trace_write(off, value);
    if (!x->strict || x->sim->evidence <= 0)
        return true;
    if (e && (int)e->level >= x->sim->evidence)
        return true;
    const char *name = off == NPU_OP_EN_OFFSET ? "PC.OP_EN" : sim_reg_name(off);
    const char *thr = npu_evidence_level_name((enum npu_evidence_level)x->sim->evidence);
    if (e)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "evidence: %s = 0x%08x is covered only by ledger entry %s at level %s "
                        "(%s), below the threshold %s (NPU_SIM_EVIDENCE)",
                        name, value, e->id, npu_evidence_level_name(e->level), e->source, thr);
    uint32_t nv = 0;
    const struct npu_evidence_entry *n = npu_evidence_nearest(off, value, &nv);
    if (n)
        return sim_fail(x, NPU_ERR_HW_REFUSED,
                        "evidence: %s = 0x%08x is covered by no ledger entry (nearest: %s, value "
                        "0x%08x, level %s, %s); strict mode accepts only ledger patterns at level "
                        ">= %s (docs/evidence.md)",
                        name, value, n->id, nv, npu_evidence_level_name(n->level), n->source, thr);
    return sim_fail(x, NPU_ERR_HW_REFUSED,
                    "evidence: %s = 0x%08x: the ledger has no entry for this register; strict "
                    "mode accepts only ledger patterns at level >= %s (docs/evidence.md)",
                    name, value, thr);
}
