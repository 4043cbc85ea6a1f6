/* SPDX-License-Identifier: MIT */
/*
 * npu-task.c: the regcmd stream builder (emit -> layout -> chain -> relocate -> descriptors),
 * see npu-task.h. Every register number and bit comes from the generated header.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu-task.h"

static const char dom[] = "hw";

static void __attribute__((format(printf, 3, 4)))
fail(struct npu_stream *s, enum npu_status st, const char *fmt, ...)
{
    va_list ap;

    if (s->error != NPU_OK)
        return;
    s->error = st;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
    va_end(ap);
    npu_err(dom, "regcmd builder: %s", s->errmsg);
}

/* Grows *p (elements of size es) to hold at least need; returns false on overflow/OOM. */
static bool
grow(void **p, uint32_t *cap, uint32_t need, size_t es)
{
    uint32_t nc;
    void *np;

    if (need <= *cap)
        return true;
    nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > UINT32_MAX / 2)
            return false;
        nc *= 2;
    }
    if ((size_t)nc > SIZE_MAX / es)
        return false;
    np = realloc(*p, (size_t)nc * es);
    if (!np)
        return false;
    *p = np;
    *cap = nc;
    return true;
}

void
npu_stream_init(struct npu_stream *s)
{
    memset(s, 0, sizeof(*s));
}

void
npu_stream_fini(struct npu_stream *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_tasks; i++) {
        free(s->tasks[i].body);
        free(s->tasks[i].relocs);
    }
    free(s->tasks);
    memset(s, 0, sizeof(*s));
}

enum npu_status
npu_stream_begin_task(struct npu_stream *s)
{
    struct npu_task_seg *t;

    if (s->error != NPU_OK)
        return s->error;
    if (s->open) {
        fail(s, NPU_ERR_INVALID, "begin_task while task %u is still open", s->n_tasks - 1);
        return s->error;
    }
    if (!grow((void **)&s->tasks, &s->cap_tasks, s->n_tasks + 1, sizeof(*s->tasks))) {
        fail(s, NPU_ERR_NOMEM, "out of memory for task %u", s->n_tasks);
        return s->error;
    }
    t = &s->tasks[s->n_tasks++];
    memset(t, 0, sizeof(*t));
    s->open = true;
    return NPU_OK;
}

static struct npu_task_seg *
open_task(struct npu_stream *s)
{
    if (s->error != NPU_OK)
        return NULL;
    if (!s->open) {
        fail(s, NPU_ERR_INVALID, "register write outside a task (call npu_stream_begin_task)");
        return NULL;
    }
    return &s->tasks[s->n_tasks - 1];
}

static bool
push_n(struct npu_stream *s, struct npu_task_seg *t, const uint64_t *q, uint32_t n)
{
    if (n > UINT32_MAX - t->n_body ||
        !grow((void **)&t->body, &t->cap_body, t->n_body + n, sizeof(*t->body))) {
        fail(s, NPU_ERR_NOMEM, "out of memory in task %u", s->n_tasks - 1);
        return false;
    }
    memcpy(t->body + t->n_body, q, (size_t)n * sizeof(*q));
    t->n_body += n;
    return true;
}

/* Dry lowerings emit every register write of every task they cost: the common case (room
 * left) stays inline. */
static inline bool
push(struct npu_stream *s, struct npu_task_seg *t, uint64_t q)
{
    if (__builtin_expect(t->n_body < t->cap_body, 1)) {
        t->body[t->n_body++] = q;
        return true;
    }
    return push_n(s, t, &q, 1);
}

/* The register at reg if a regcmd stream may write it (else fails the stream), and its
 * regcmd target (npu_target_for_offset). */
static const struct npu_reg_info *
check_reg_target(struct npu_stream *s, uint16_t reg, uint16_t *target)
{
    const struct npu_reg_info *ri = npu_reg_lookup_target(reg, target);

    if (!ri) {
        fail(s, NPU_ERR_INVALID, "task %u: no register at offset 0x%04x", s->n_tasks - 1, reg);
        return NULL;
    }
    if (ri->flags & (NPU_REG_RO | NPU_REG_NO_REGCMD)) {
        fail(s, NPU_ERR_INVALID, "task %u: %s cannot be written by a regcmd stream", s->n_tasks - 1,
             ri->full_name);
        return NULL;
    }
    return ri;
}

void
npu_emit(struct npu_stream *s, uint16_t reg, uint32_t value)
{
    struct npu_task_seg *t = open_task(s);
    uint16_t target;

    if (!t || !check_reg_target(s, reg, &target))
        return;
    /* The chain registers belong to the tail, which layout and chain write. */
    if (reg == REG_PC_BASE_ADDRESS || reg == REG_PC_REGISTER_AMOUNTS) {
        fail(s, NPU_ERR_INVALID, "task %u: PC chain registers are written by npu_image_chain",
             s->n_tasks - 1);
        return;
    }
    /* npu_regcmd_reg(reg, value), the target from the table */
    push(s, t, target ? npu_regcmd_pack(target, reg, value) : 0);
}

void
npu_emit_reloc(struct npu_stream *s, uint16_t reg, uint32_t buffer, uint32_t offset)
{
    struct npu_task_seg *t = open_task(s);
    const struct npu_reg_info *ri;
    uint16_t target;

    if (!t || !(ri = check_reg_target(s, reg, &target)))
        return;
    if (!(ri->flags & NPU_REG_ADDR) || reg == REG_PC_BASE_ADDRESS) {
        fail(s, NPU_ERR_INVALID, "task %u: %s is not a relocatable DMA address register",
             s->n_tasks - 1, ri->full_name);
        return;
    }
    /* buffer may be NPU_RELOC_REGCMD: data inside the regcmd buffer (RKNN keeps constants
     * there, NOTES 2 onpu-matmul). */
    if (!grow((void **)&t->relocs, &t->cap_relocs, t->n_relocs + 1, sizeof(*t->relocs))) {
        fail(s, NPU_ERR_NOMEM, "out of memory in task %u", s->n_tasks - 1);
        return;
    }
    t->relocs[t->n_relocs++] = (struct npu_reloc){t->n_body, buffer, offset};
    push(s, t, target ? npu_regcmd_pack(target, reg, offset) : 0);
}

void
npu_emit_raw(struct npu_stream *s, uint64_t qword)
{
    struct npu_task_seg *t = open_task(s);

    if (t)
        push(s, t, qword);
}

void
npu_emit_raw_n(struct npu_stream *s, const uint64_t *qwords, uint32_t n)
{
    struct npu_task_seg *t = open_task(s);

    if (t && n)
        push_n(s, t, qwords, n);
}

enum npu_status
npu_stream_end_task(struct npu_stream *s, uint32_t enable_mask)
{
    struct npu_task_seg *t = open_task(s);

    if (!t)
        return s->error;
    if (!enable_mask) {
        for (uint32_t i = 0; i < t->n_body; i++) {
            int b = npu_block_for_target(npu_regcmd_target(t->body[i]));

            if (b >= 0 && npu_rk3588_blocks[b].op_en_bit >= 0)
                enable_mask |= 1u << npu_rk3588_blocks[b].op_en_bit;
        }
    }
    if (!enable_mask || (enable_mask & ~NPU_OP_EN_ALL)) {
        fail(s, NPU_ERR_INVALID, "task %u: op_en mask 0x%x enables no block or unknown bits",
             s->n_tasks - 1, enable_mask);
        return s->error;
    }
    t->enable_mask = enable_mask;
    t->int_mask = npu_int_mask_for_enable(enable_mask);
    s->open = false;
    return NPU_OK;
}

enum npu_status
npu_stream_status(const struct npu_stream *s)
{
    return s->error;
}

const char *
npu_stream_error(const struct npu_stream *s)
{
    return s->errmsg;
}

void
npu_image_fini(struct npu_regcmd_image *img)
{
    if (!img)
        return;
    free(img->qwords);
    free(img->tasks);
    free(img->relocs);
    memset(img, 0, sizeof(*img));
}

static void
write_tail(uint64_t *seg_tail, uint32_t enable_mask)
{
    seg_tail[0] = 0; /* no next task: zero qword, as RKNN and Mesa write it */
    seg_tail[1] = npu_regcmd_reg(REG_PC_REGISTER_AMOUNTS, 0);
    seg_tail[2] = NPU_MARKER_QWORD;
    seg_tail[3] = npu_regcmd_op_en(enable_mask);
}

enum npu_status
npu_stream_layout(const struct npu_stream *s, uint32_t iova, uint32_t align,
                  struct npu_regcmd_image *img)
{
    uint64_t bytes = 0;
    uint32_t n_relocs = 0;

    memset(img, 0, sizeof(*img));
    if (s->error != NPU_OK) {
        npu_err(dom, "layout: the stream has an error: %s", s->errmsg);
        return s->error;
    }
    if (s->open || !s->n_tasks) {
        npu_err(dom, "layout: %s", s->open ? "a task is still open" : "no tasks");
        return NPU_ERR_INVALID;
    }
    if (!align)
        align = NPU_SEGMENT_ALIGN;
    if (align < NPU_SEGMENT_ALIGN_MIN || (align & (align - 1)) || iova % align) {
        npu_err(dom, "layout: alignment %u must be a power of two >= 16 dividing IOVA 0x%x", align,
                iova);
        return NPU_ERR_INVALID;
    }
    for (uint32_t i = 0; i < s->n_tasks; i++) {
        bytes += NPU_ALIGN((uint64_t)(s->tasks[i].n_body + NPU_TASK_TAIL_QWORDS) * 8, align);
        n_relocs += s->tasks[i].n_relocs;
    }
    if ((uint64_t)iova + bytes > (1ull << 32)) {
        npu_err(dom, "layout: %llu bytes at 0x%x cross 4 GiB", (unsigned long long)bytes, iova);
        return NPU_ERR_INVALID;
    }
    img->n_qwords = (size_t)(bytes / 8);
    img->qwords = calloc(img->n_qwords, sizeof(uint64_t));
    img->tasks = calloc(s->n_tasks, sizeof(*img->tasks));
    img->relocs = n_relocs ? calloc(n_relocs + s->n_tasks, sizeof(*img->relocs)) : NULL;
    img->cap_relocs = n_relocs ? n_relocs + s->n_tasks : 0;
    if (!img->qwords || !img->tasks || (n_relocs && !img->relocs)) {
        npu_image_fini(img);
        return NPU_ERR_NOMEM;
    }
    img->iova = iova;
    img->align = align;
    img->n_tasks = s->n_tasks;

    size_t pos = 0;
    for (uint32_t i = 0; i < s->n_tasks; i++) {
        const struct npu_task_seg *t = &s->tasks[i];
        struct npu_image_task *it = &img->tasks[i];

        it->start = (uint32_t)pos;
        it->n_body = t->n_body;
        it->enable_mask = t->enable_mask;
        it->int_mask = t->int_mask;
        it->op_idx = t->op_idx;
        if (t->n_body)
            memcpy(&img->qwords[pos], t->body, t->n_body * sizeof(uint64_t));
        write_tail(&img->qwords[pos + t->n_body], t->enable_mask);
        for (uint32_t r = 0; r < t->n_relocs; r++) {
            img->relocs[img->n_relocs] = t->relocs[r];
            img->relocs[img->n_relocs++].qword += (uint32_t)pos;
        }
        pos += NPU_ALIGN((size_t)(t->n_body + NPU_TASK_TAIL_QWORDS) * 8, align) / 8;
    }
    return NPU_OK;
}

enum npu_status
npu_image_chain(struct npu_regcmd_image *img, uint32_t first, uint32_t count, unsigned cores)
{
    if (!count || first >= img->n_tasks || count > img->n_tasks - first) {
        npu_err(dom, "chain: %u tasks from task %u out of range (%u tasks)", count, first,
                img->n_tasks);
        return NPU_ERR_INVALID;
    }
    if (cores < 1 || cores > NPU_RKNPU_MAX_CORES) {
        npu_err(dom, "chain: %u cores (1..3)", cores);
        return NPU_ERR_INVALID;
    }
    for (uint32_t i = first; i + 1 < first + count; i++) {
        const struct npu_image_task *next = &img->tasks[i + 1];
        uint64_t *tail = &img->qwords[img->tasks[i].start + img->tasks[i].n_body];
        uint32_t amount = npu_pc_amount(next->n_body + NPU_TASK_TAIL_QWORDS);
        uint32_t tail0 = img->tasks[i].start + img->tasks[i].n_body;
        bool have = false;

        if (amount > PC_REGISTER_AMOUNTS_PC_DATA_AMOUNT__MAX) {
            npu_err(dom, "chain: task %u has %u qwords, more than one PC fetch can hold", i + 1,
                    next->n_body + NPU_TASK_TAIL_QWORDS);
            return NPU_ERR_INVALID;
        }
        tail[0] = npu_regcmd_reg(REG_PC_BASE_ADDRESS, npu_image_task_iova(img, i + 1));
        tail[1] =
            npu_regcmd_reg(REG_PC_REGISTER_AMOUNTS, PC_REGISTER_AMOUNTS_PC_DATA_AMOUNT(amount) |
                                                        PC_REGISTER_AMOUNTS_CORE_NUM(cores - 1));
        /* Record the chain address as a relocation against the regcmd buffer itself. */
        for (uint32_t r = 0; r < img->n_relocs; r++)
            if (img->relocs[r].qword == tail0)
                have = true, img->relocs[r].offset = next->start * 8u;
        if (!have) {
            if (!grow((void **)&img->relocs, &img->cap_relocs, img->n_relocs + 1,
                      sizeof(*img->relocs)))
                return NPU_ERR_NOMEM;
            img->relocs[img->n_relocs++] =
                (struct npu_reloc){tail0, NPU_RELOC_REGCMD, next->start * 8u};
        }
    }
    return NPU_OK;
}

enum npu_status
npu_image_relocate(struct npu_regcmd_image *img, const uint32_t *buffer_iova, uint32_t n_buffers)
{
    for (uint32_t r = 0; r < img->n_relocs; r++) {
        const struct npu_reloc *rl = &img->relocs[r];
        uint64_t q = img->qwords[rl->qword];
        const struct npu_reg_info *ri = npu_reg_lookup(npu_regcmd_offset(q));
        uint64_t base, addr;

        if (rl->buffer == NPU_RELOC_REGCMD) {
            base = img->iova;
        } else if (buffer_iova && rl->buffer < n_buffers) {
            base = buffer_iova[rl->buffer];
        } else {
            npu_err(dom, "relocate: qword %u refers to buffer %u, only %u given", rl->qword,
                    rl->buffer, n_buffers);
            return NPU_ERR_INVALID;
        }
        addr = base + rl->offset;
        if (addr > UINT32_MAX) {
            npu_err(dom, "relocate: address 0x%llx of qword %u is past 4 GiB",
                    (unsigned long long)addr, rl->qword);
            return NPU_ERR_INVALID;
        }
        /* Registers whose only address field starts at bit 4 need 16-byte alignment
         * (facts 2.10 alignment summary). */
        if (ri && ri->n_fields && ri->fields[0].low == 4 && (addr & 0xf)) {
            npu_err(dom, "relocate: %s = 0x%llx is not 16-byte aligned", ri->full_name,
                    (unsigned long long)addr);
            return NPU_ERR_INVALID;
        }
        img->qwords[rl->qword] =
            npu_regcmd_pack(npu_regcmd_target(q), npu_regcmd_offset(q), (uint32_t)addr);
    }
    return NPU_OK;
}

enum npu_status
npu_image_fill_rknpu_tasks(const struct npu_regcmd_image *img, struct npu_rknpu_task *out,
                           uint32_t n_out)
{
    if (n_out < img->n_tasks) {
        npu_err(dom, "descriptors: room for %u of %u tasks", n_out, img->n_tasks);
        return NPU_ERR_INVALID;
    }
    for (uint32_t i = 0; i < img->n_tasks; i++) {
        const struct npu_image_task *t = &img->tasks[i];

        memset(&out[i], 0, sizeof(out[i]));
        out[i].op_idx = t->op_idx;
        out[i].enable_mask = t->enable_mask;
        out[i].int_mask = t->int_mask;
        out[i].int_clear = NPU_INT_CLEAR_ALL;
        out[i].regcfg_amount = t->n_body;
        out[i].regcmd_addr = npu_image_task_iova(img, i);
    }
    return NPU_OK;
}

enum npu_status
npu_image_fill_rocket_tasks(const struct npu_regcmd_image *img, struct npu_rocket_task *out,
                            uint32_t n_out)
{
    if (n_out < img->n_tasks) {
        npu_err(dom, "rocket tasks: room for %u of %u tasks", n_out, img->n_tasks);
        return NPU_ERR_INVALID;
    }
    for (uint32_t i = 0; i < img->n_tasks; i++) {
        out[i].regcmd = npu_image_task_iova(img, i);
        out[i].regcmd_count = img->tasks[i].n_body + NPU_TASK_TAIL_QWORDS;
    }
    return NPU_OK;
}

void
npu_tail_parse(const uint64_t *seg, size_t n, struct npu_tail *out)
{
    const uint64_t *t;
    uint64_t t0, t1;

    memset(out, 0, sizeof(*out));
    if (!seg || n < NPU_TASK_TAIL_QWORDS)
        return;
    t = seg + n - NPU_TASK_TAIL_QWORDS;
    t0 = t[0];
    t1 = t[1];
    out->well_formed = (t0 == 0 || (npu_regcmd_target(t0) == NPU_TARGET_PC &&
                                    npu_regcmd_offset(t0) == REG_PC_BASE_ADDRESS)) &&
                       npu_regcmd_target(t1) == NPU_TARGET_PC &&
                       npu_regcmd_offset(t1) == REG_PC_REGISTER_AMOUNTS &&
                       t[2] == NPU_MARKER_QWORD && npu_qword_classify(t[3], NULL) == NPU_QW_OP_EN;
    if (t0 && npu_regcmd_offset(t0) == REG_PC_BASE_ADDRESS)
        out->next_addr = npu_regcmd_value(t0);
    out->has_next = out->next_addr != 0;
    if (npu_regcmd_offset(t1) == REG_PC_REGISTER_AMOUNTS) {
        out->next_amount = PC_REGISTER_AMOUNTS_PC_DATA_AMOUNT__GET(npu_regcmd_value(t1));
        out->cores = PC_REGISTER_AMOUNTS_CORE_NUM__GET(npu_regcmd_value(t1)) + 1;
    }
    out->enable_mask = npu_regcmd_value(t[3]);
}
