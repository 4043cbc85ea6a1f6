/* SPDX-License-Identifier: MIT */
/*
 * npu-replay.c: codegen route (c), template replay. A job's regcmd image is
 * written as a "golden-regcmd v1" text (core/hw npu-golden.h, format in
 * tests/golden/vectors/README.md) whose address qwords carry their
 * relocation ("@weights+0x..", "@act+0x..", "@regcmd+0x.."); reading such a
 * text back gives a job that, relocated with the same buffer addresses, is
 * byte-identical to the original. Any stream in that format with these three
 * buffer names can be replayed the same way (e.g. a hand-edited program or
 * a captured one re-labelled).
 *
 * Buffer addresses written into the text are placeholders (the address
 * value of a relocated qword is ignored when reading): weights at
 * 0x10000000, activations at 0x20000000, the regcmd image at 0x00010000.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-rk.h"

static const struct {
    const char *name;
    uint32_t id;
    uint32_t start;
} bufs[] = {
    {"weights", NPU_BUF_WEIGHTS, 0x10000000u},
    {"act", NPU_BUF_ACT, 0x20000000u},
    {"regcmd", NPU_RELOC_REGCMD, 0x00010000u},
};

enum npu_status
npu_job_to_golden(const struct npu_prog_job *j, const char *name, char **text, size_t *len)
{
    struct npu_golden g;
    enum npu_status st;
    char buf[96];
    memset(&g, 0, sizeof(g));
    *text = NULL;
    if ((st = npu_golden_add_header(&g, "format", "golden-regcmd v1")) ||
        (st = npu_golden_add_header(&g, "case", name ? name : "job")) ||
        (st = npu_golden_add_header(&g, "kind", "opennpu codegen template (route c)")))
        goto out;
    snprintf(buf, sizeof(buf), "%u", j->segment_align);
    if ((st = npu_golden_add_header(&g, "segment-align", buf)))
        goto out;
    for (size_t b = 0; b < NPU_ARRAY_SIZE(bufs); b++) {
        uint32_t size = bufs[b].id == NPU_RELOC_REGCMD ? j->n_qwords * 8u : 0x10000000u;
        if ((st = npu_golden_add_buffer(&g, bufs[b].name, bufs[b].start, size,
                                        bufs[b].id == NPU_RELOC_REGCMD ? "regcmd image"
                                                                       : "relocated buffer")))
            goto out;
    }
    for (uint32_t t = 0; t < j->n_tasks; t++) {
        struct npu_golden_task *gt = npu_golden_add_task(&g, t);
        if (!gt) {
            st = NPU_ERR_NOMEM;
            goto out;
        }
        snprintf(buf, sizeof(buf), "%u", j->tasks[t].n_body);
        if ((st = npu_golden_task_set(gt, "amount", buf)))
            goto out;
        snprintf(buf, sizeof(buf), "0x%02x", j->tasks[t].enable_mask);
        if ((st = npu_golden_task_set(gt, "enable", buf)))
            goto out;
        snprintf(buf, sizeof(buf), "0x%x", j->tasks[t].int_mask);
        if ((st = npu_golden_task_set(gt, "int_mask", buf)))
            goto out;
        snprintf(buf, sizeof(buf), "0x%08x", bufs[2].start + j->tasks[t].start * 8u);
        if ((st = npu_golden_task_set(gt, "addr", buf)))
            goto out;
        uint32_t n = j->tasks[t].n_body + NPU_TASK_TAIL_QWORDS;
        for (uint32_t q = 0; q < n; q++) {
            uint32_t at = j->tasks[t].start + q;
            uint64_t v = j->regcmd[at];
            int32_t bi = -1;
            uint32_t off = 0, flags = 0;
            for (uint32_t r = 0; r < j->n_relocs; r++) {
                if (j->relocs[r].qword != at)
                    continue;
                for (size_t b = 0; b < NPU_ARRAY_SIZE(bufs); b++)
                    if (bufs[b].id == j->relocs[r].buffer)
                        bi = (int32_t)b;
                if (bi < 0) {
                    npu_err(NPU_BE_DOM, "template: relocation against unknown buffer %u",
                            j->relocs[r].buffer);
                    st = NPU_ERR_INVALID;
                    goto out;
                }
                off = j->relocs[r].offset;
                flags = NPU_GQ_RELOC;
                /* show the placeholder address in the value */
                v = (v & ~(0xffffffffull << 16)) | ((uint64_t)(bufs[bi].start + off) << 16);
            }
            if ((st = npu_golden_task_add_qword(gt, v, flags, bi, off)))
                goto out;
        }
    }
    if ((st = npu_golden_index(&g)))
        goto out;
    *text = npu_golden_to_string(&g, len);
    st = *text ? NPU_OK : NPU_ERR_NOMEM;
out:
    npu_golden_free(&g);
    return st;
}

enum npu_status
npu_job_from_golden(const char *text, size_t len, struct npu_program *p, struct npu_prog_job *out)
{
    struct npu_golden g;
    enum npu_status st = npu_golden_parse(text, len, "template", &g);
    memset(out, 0, sizeof(*out));
    if (st) {
        npu_err(NPU_BE_DOM, "template: %s", g.errmsg);
        return st;
    }
    uint32_t align = NPU_SEGMENT_ALIGN;
    const char *a = npu_golden_header(&g, "segment-align");
    if (a) {
        align = (uint32_t)strtoul(a, NULL, 0);
        if (align < NPU_SEGMENT_ALIGN_MIN || (align & (align - 1)) || align > 4096) {
            npu_err(NPU_BE_DOM, "template: segment-align %s", a);
            st = NPU_ERR_CORRUPT;
            goto out;
        }
    }
    /* map the text's buffers to relocation ids */
    int32_t map[64];
    if (g.n_buffers > 64) {
        st = NPU_ERR_CORRUPT;
        goto out;
    }
    for (uint32_t b = 0; b < g.n_buffers; b++) {
        map[b] = -1;
        for (size_t k = 0; k < NPU_ARRAY_SIZE(bufs); k++)
            if (!strcmp(g.buffers[b].name, bufs[k].name))
                map[b] = (int32_t)k;
    }
    uint64_t nq = 0;
    uint32_t nrel = 0;
    const uint32_t aq = align / 8;
    for (uint32_t t = 0; t < g.n_tasks; t++) {
        if (g.tasks[t].dup_of >= 0 || g.tasks[t].amount < 0 || g.tasks[t].n_q < 4) {
            npu_err(NPU_BE_DOM, "template: task %u is not a full segment", t);
            st = NPU_ERR_CORRUPT;
            goto out;
        }
        nq = (nq + aq - 1) / aq * aq + g.tasks[t].n_q;
        for (uint32_t q = 0; q < g.tasks[t].n_q; q++)
            nrel += (g.tasks[t].q[q].flags & NPU_GQ_RELOC) != 0;
    }
    nq = (nq + aq - 1) / aq * aq;
    if (!g.n_tasks || nq > (64u << 20)) {
        st = NPU_ERR_CORRUPT;
        goto out;
    }
    uint64_t *img = npu_program_alloc(p, nq * 8);
    struct npu_prog_task *tasks = npu_program_alloc(p, sizeof(*tasks) * g.n_tasks);
    struct npu_prog_reloc *rel = npu_program_alloc(p, sizeof(*rel) * (nrel + 1));
    if (!img || !tasks || !rel) {
        st = NPU_ERR_NOMEM;
        goto out;
    }
    uint64_t pos = 0;
    nrel = 0;
    for (uint32_t t = 0; t < g.n_tasks; t++) {
        const struct npu_golden_task *gt = &g.tasks[t];
        pos = (pos + aq - 1) / aq * aq;
        tasks[t].start = (uint32_t)pos;
        tasks[t].n_body = gt->n_q - NPU_TASK_TAIL_QWORDS;
        tasks[t].enable_mask = gt->enable >= 0 ? (uint32_t)gt->enable : 0;
        tasks[t].int_mask = gt->int_mask >= 0 ? (uint32_t)gt->int_mask
                                              : npu_int_mask_for_enable(tasks[t].enable_mask);
        for (uint32_t q = 0; q < gt->n_q; q++) {
            uint64_t v = gt->q[q].q;
            if (gt->q[q].flags & NPU_GQ_RELOC) {
                int32_t b = gt->q[q].buffer >= 0 ? map[gt->q[q].buffer] : -1;
                if (b < 0) {
                    npu_err(NPU_BE_DOM,
                            "template: task %u qword %u: relocation against a "
                            "buffer other than weights, act or regcmd",
                            t, q);
                    st = NPU_ERR_CORRUPT;
                    goto out;
                }
                rel[nrel].qword = (uint32_t)(pos + q);
                rel[nrel].buffer = bufs[b].id;
                rel[nrel].offset = gt->q[q].buf_offset;
                nrel++;
                /* unrelocated images hold the offset in the value field */
                v = (v & ~(0xffffffffull << 16)) | ((uint64_t)gt->q[q].buf_offset << 16);
            }
            img[pos + q] = v;
        }
        pos += gt->n_q;
    }
    out->regcmd = img;
    out->n_qwords = (uint32_t)nq;
    out->tasks = tasks;
    out->n_tasks = g.n_tasks;
    out->relocs = rel;
    out->n_relocs = nrel;
    out->segment_align = align;
    st = NPU_OK;
out:
    npu_golden_free(&g);
    return st;
}
