/* SPDX-License-Identifier: MIT */
/*
 * npu-evidence.c: lookups over the evidence ledger (the table gen-evidence.py
 * generates from core/hw/evidence.xml) and the classification of a task's
 * register writes: which entry covers each write, and the task's weakest
 * level. The simulator's strict allow-list and `npuc --evidence` use it.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "npu-regcmd.h"
#include "npu/npu-evidence.h"

extern const struct npu_evidence_entry npu_evidence_entries[];
extern const unsigned npu_evidence_n_entries;

const struct npu_evidence_entry *
npu_evidence_ledger(unsigned *n_entries)
{
    if (n_entries)
        *n_entries = npu_evidence_n_entries;
    return npu_evidence_entries;
}

const char *
npu_evidence_level_name(enum npu_evidence_level level)
{
    switch (level) {
    case NPU_EVIDENCE_V: return "V";
    case NPU_EVIDENCE_M: return "M";
    case NPU_EVIDENCE_O: return "O";
    case NPU_EVIDENCE_T: return "T";
    case NPU_EVIDENCE_NONE: break;
    }
    return "none";
}

enum npu_status
npu_evidence_level_parse(const char *text, enum npu_evidence_level *out)
{
    static const enum npu_evidence_level lv[] = {NPU_EVIDENCE_V, NPU_EVIDENCE_M, NPU_EVIDENCE_O,
                                                 NPU_EVIDENCE_T};
    if (!text || !out)
        return NPU_ERR_INVALID;
    for (unsigned i = 0; i < NPU_ARRAY_SIZE(lv); i++)
        if (!strcasecmp(text, npu_evidence_level_name(lv[i]))) {
            *out = lv[i];
            return NPU_OK;
        }
    return NPU_ERR_INVALID;
}

/* First entry of the register (the table is sorted by offset), or the end. */
static unsigned
first_of(uint16_t offset)
{
    unsigned lo = 0, hi = npu_evidence_n_entries;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (npu_evidence_entries[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool
holds(const struct npu_evidence_entry *e, uint32_t value)
{
    if (e->any)
        return true;
    value &= e->mask;
    unsigned lo = 0, hi = e->n_values;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (e->values[mid] < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->n_values && e->values[lo] == value;
}

const struct npu_evidence_entry *
npu_evidence_lookup(uint16_t offset, uint32_t value)
{
    /* Entries of one register come strongest first: the first match wins. */
    for (unsigned i = first_of(offset);
         i < npu_evidence_n_entries && npu_evidence_entries[i].offset == offset; i++)
        if (holds(&npu_evidence_entries[i], value))
            return &npu_evidence_entries[i];
    return NULL;
}

const struct npu_evidence_entry *
npu_evidence_nearest(uint16_t offset, uint32_t value, uint32_t *nearest_value)
{
    const struct npu_evidence_entry *best = NULL;
    int best_d = 33;
    uint32_t best_v = 0;
    for (unsigned i = first_of(offset);
         i < npu_evidence_n_entries && npu_evidence_entries[i].offset == offset; i++) {
        const struct npu_evidence_entry *e = &npu_evidence_entries[i];
        if (e->any) {
            best = e;
            best_v = value;
            break;
        }
        for (unsigned k = 0; k < e->n_values; k++) {
            int d = __builtin_popcount((e->values[k] ^ value) & e->mask);
            if (d < best_d) {
                best_d = d;
                best = e;
                best_v = e->values[k] | (value & ~e->mask);
            }
        }
    }
    if (nearest_value)
        *nearest_value = best_v;
    return best;
}

const char *
npu_evidence_reg_name(uint16_t offset)
{
    if (offset == NPU_OP_EN_OFFSET)
        return "PC.OP_EN";
    const struct npu_reg_info *r = npu_reg_lookup(offset);
    return r ? r->full_name : "?";
}

enum npu_status
npu_evidence_classify_task(const uint64_t *qwords, size_t n_qwords,
                           struct npu_evidence_write *writes, size_t cap, size_t *n_writes,
                           enum npu_evidence_level *weakest)
{
    if ((!qwords && n_qwords) || !weakest || (!writes && cap)) {
        npu_err("hw", "npu_evidence_classify_task: NULL argument");
        return NPU_ERR_INVALID;
    }
    enum npu_evidence_level low = NPU_EVIDENCE_V;
    size_t n = 0;
    for (size_t i = 0; i < n_qwords; i++) {
        struct npu_qword_info q;
        enum npu_qword_kind kind = npu_qword_classify(qwords[i], &q);
        if (kind == NPU_QW_NOP || kind == NPU_QW_MARKER)
            continue;
        const struct npu_evidence_entry *e = NULL;
        uint16_t off = q.offset;
        if (kind == NPU_QW_OP_EN)
            off = NPU_OP_EN_OFFSET;
        if (kind == NPU_QW_REG || kind == NPU_QW_OP_EN)
            e = npu_evidence_lookup(off, q.value);
        if (writes && n < cap)
            writes[n] = (struct npu_evidence_write){(uint32_t)i, off, q.value, e};
        n++;
        if (!e)
            low = NPU_EVIDENCE_NONE;
        else if (e->level < low)
            low = e->level;
    }
    if (n_writes)
        *n_writes = n;
    *weakest = low;
    return NPU_OK;
}
