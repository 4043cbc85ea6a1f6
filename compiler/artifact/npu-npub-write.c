/* SPDX-License-Identifier: MIT */
/*
 * npu-npub-write.c: serialises a struct npu_program into a .npub file
 * (npub-format.h, docs/npub-format.md). Sections are lists of pieces -
 * records encoded here, or borrowed memory such as the weights and the host
 * constants - so that a model's weights are hashed and written straight from
 * the program, never copied. Every section is hashed (XXH64), then the body
 * and the header; files are written to a temporary name in the target folder
 * and renamed over the destination once complete and flushed, so a reader
 * (or a concurrent compile-cache user) never sees half a file. The format
 * version written is the oldest that holds the artifact (1 without model
 * metadata, 2 with its PROPS section).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu-hash.h"
#include "npu-version.h"
#include "npu/npu-npub.h"
#include "npub-format.h"

#define DOM "npub"

uint32_t
npu_compiler_version(void)
{
    return NPU_COMPILER_VERSION_NUM;
}

const char *
npu_compiler_version_str(void)
{
    return "opennpu " NPU_COMPILER_VERSION;
}

struct piece {
    const void *p; /* NULL = zeros */
    uint64_t n;
};

struct wsec {
    uint32_t kind, count;
    struct piece *pc;
    int npc, cap;
    uint64_t size, offset, hash;
};

struct writer {
    struct wsec sec[SEC_KIND_END];
    void **owned;
    int nowned, capowned;
    /* string pool */
    char *str;
    uint64_t nstr, capstr;
    uint32_t *slot; /* open addressing: string offset + 1, 0 = empty */
    uint64_t capslot, nslot;
    bool oom;
};

static void *
w_alloc(struct writer *w, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p || w->nowned == w->capowned) {
        int nc = w->capowned ? w->capowned * 2 : 64;
        void **no = p ? realloc(w->owned, sizeof(*no) * (size_t)nc) : NULL;
        if (!no) {
            free(p);
            w->oom = true;
            return NULL;
        }
        w->owned = no;
        w->capowned = nc;
    }
    w->owned[w->nowned++] = p;
    return p;
}

static void
add_piece(struct writer *w, int kind, const void *p, uint64_t n)
{
    struct wsec *s = &w->sec[kind];
    if (!n)
        return;
    if (s->npc == s->cap) {
        int nc = s->cap ? s->cap * 2 : 16;
        struct piece *np = realloc(s->pc, sizeof(*np) * (size_t)nc);
        if (!np) {
            w->oom = true;
            return;
        }
        s->pc = np;
        s->cap = nc;
    }
    s->pc[s->npc++] = (struct piece){p, n};
    s->size += n;
}

/* Appends a copy-free piece padded to NPUB_ALIGN; returns its offset. */
static uint64_t
add_blob(struct writer *w, int kind, const void *p, uint64_t n)
{
    uint64_t off = w->sec[kind].size;
    add_piece(w, kind, p, n);
    uint64_t pad = NPU_ALIGN(n, NPUB_ALIGN) - n;
    add_piece(w, kind, NULL, pad);
    return off;
}

/* A new record of `bytes` in section kind (owned, zeroed). */
static uint8_t *
add_record(struct writer *w, int kind, size_t bytes)
{
    uint8_t *r = w_alloc(w, bytes);
    if (!r)
        return NULL;
    add_piece(w, kind, r, bytes);
    w->sec[kind].count++;
    return r;
}

static uint64_t
str_hash(const char *s)
{
    return npu_xxh64(s, strlen(s), 0x6e707562);
}

static uint32_t
intern(struct writer *w, const char *s)
{
    if (!s)
        return NPUB_NO_STRING;
    if (w->nslot * 2 >= w->capslot) {
        uint64_t nc = w->capslot ? w->capslot * 2 : 1024;
        uint32_t *ns = calloc(nc, sizeof(*ns));
        if (!ns) {
            w->oom = true;
            return NPUB_NO_STRING;
        }
        for (uint64_t i = 0; i < w->capslot; i++) {
            if (!w->slot[i])
                continue;
            uint64_t h = str_hash(w->str + w->slot[i] - 1) & (nc - 1);
            while (ns[h])
                h = (h + 1) & (nc - 1);
            ns[h] = w->slot[i];
        }
        free(w->slot);
        w->slot = ns;
        w->capslot = nc;
    }
    uint64_t h = str_hash(s) & (w->capslot - 1);
    while (w->slot[h]) {
        if (!strcmp(w->str + w->slot[h] - 1, s))
            return w->slot[h] - 1;
        h = (h + 1) & (w->capslot - 1);
    }
    size_t len = strlen(s) + 1;
    if (w->nstr + len >= 0xfffffff0u) {
        w->oom = true;
        return NPUB_NO_STRING;
    }
    if (w->nstr + len > w->capstr) {
        uint64_t nc = NPU_MAX(w->capstr * 2, w->nstr + len + 4096);
        char *nb = realloc(w->str, nc);
        if (!nb) {
            w->oom = true;
            return NPUB_NO_STRING;
        }
        w->str = nb;
        w->capstr = nc;
    }
    uint32_t off = (uint32_t)w->nstr;
    memcpy(w->str + off, s, len);
    w->nstr += len;
    w->slot[h] = off + 1;
    w->nslot++;
    return off;
}

static uint32_t
add_indices(struct writer *w, const int *v, int n)
{
    uint32_t start = w->sec[SEC_INDICES].count;
    if (n <= 0)
        return start;
    uint8_t *r = w_alloc(w, 4 * (size_t)n);
    if (!r)
        return start;
    for (int i = 0; i < n; i++)
        put32(r + 4 * i, (uint32_t)v[i]);
    add_piece(w, SEC_INDICES, r, 4 * (uint64_t)n);
    w->sec[SEC_INDICES].count += (uint32_t)n;
    return start;
}

static void
put_dims(uint8_t *r, const int64_t *dims, int ndim)
{
    for (int d = 0; d < NPU_MAX_DIMS; d++)
        put64(r + 8 * d, d < ndim ? (uint64_t)dims[d] : 0);
}

static void
add_attr(struct writer *w, const struct npu_attr *a)
{
    uint8_t *r = add_record(w, SEC_ATTRS, ATTR_BYTES);
    if (!r)
        return;
    put32(r + A_NAME, intern(w, a->name));
    put32(r + A_TYPE, (uint32_t)a->type);
    put32(r + A_S, NPUB_NO_STRING);
    uint64_t n = 0, off = 0;
    uint8_t *pl = NULL;
    switch (a->type) {
    case NPU_ATTR_INT: put64(r + A_I, (uint64_t)a->i); break;
    case NPU_ATTR_FLOAT: putf32(r + A_F, a->f); break;
    case NPU_ATTR_STRING: put32(r + A_S, intern(w, a->s)); break;
    case NPU_ATTR_INTS:
        n = a->n;
        if (n && (pl = w_alloc(w, 8 * n)))
            for (uint64_t i = 0; i < n; i++)
                put64(pl + 8 * i, (uint64_t)a->ints[i]);
        off = add_blob(w, SEC_CONSTS, pl, 8 * n);
        break;
    case NPU_ATTR_FLOATS:
        n = a->n;
        if (n && (pl = w_alloc(w, 4 * n)))
            for (uint64_t i = 0; i < n; i++)
                putf32(pl + 4 * i, a->floats[i]);
        off = add_blob(w, SEC_CONSTS, pl, 4 * n);
        break;
    case NPU_ATTR_STRINGS:
        n = a->n;
        if (n && (pl = w_alloc(w, 4 * n)))
            for (uint64_t i = 0; i < n; i++)
                put32(pl + 4 * i, intern(w, a->strs[i]));
        off = add_blob(w, SEC_CONSTS, pl, 4 * n);
        break;
    case NPU_ATTR_TENSOR: {
        const struct npu_tensor *t = a->t;
        int64_t nb = npu_tensor_nbytes(t);
        put32(r + A_T_DTYPE, (uint32_t)t->dtype);
        put32(r + A_T_NDIM, (uint32_t)t->ndim);
        put_dims(r + A_T_DIMS, t->dims, t->ndim);
        putf32(r + A_T_QSCALE, t->qscale);
        put32(r + A_T_QZERO, (uint32_t)t->qzero);
        n = nb > 0 ? (uint64_t)nb : 0;
        off = add_blob(w, SEC_CONSTS, t->data, n);
        break;
    }
    }
    put64(r + A_PAYLOAD, off);
    put64(r + A_N, n);
}

/* The format version a file needs: 1 unless it carries model metadata (2) or
 * state and run-time positioned relocations (3) (npu-npub.h), so files without
 * them stay readable by earlier builds. */
static uint32_t
format_of(const struct npu_program *p, const struct npu_npub_meta *meta)
{
    bool state = p->state_bytes > 0;
    for (int j = 0; j < p->n_jobs; j++)
        state |= p->jobs[j].n_dynrelocs > 0;
    for (int i = 0; i < p->n_tensors; i++)
        state |= p->tensors[i].place == NPU_PLACE_NPU && p->tensors[i].buffer == NPU_BUF_STATE;
    return state ? 3 : meta && meta->n_props ? 2 : 1;
}

static void
build(struct writer *w, const struct npu_program *p, const struct npu_npub_meta *meta)
{
    for (int k = 1; k < SEC_KIND_END; k++)
        w->sec[k].kind = (uint32_t)k;
    intern(w, ""); /* offset 0 is the empty string */

    for (uint32_t i = 0; meta && i < meta->n_props; i++) {
        uint8_t *r = add_record(w, SEC_PROPS, PROP_BYTES);
        if (!r)
            return;
        put32(r + PR_KEY, intern(w, meta->props[i].key));
        put32(r + PR_VALUE, intern(w, meta->props[i].value));
    }

    char *text = w_alloc(w, 4096 + (meta && meta->options ? strlen(meta->options) : 0) +
                                (meta && meta->source ? strlen(meta->source) : 0));
    if (text) {
        int n = sprintf(text, "compiler=%s\nformat=%u\nprogram_version=%u\n",
                        npu_compiler_version_str(), format_of(p, meta), p->version);
        if (meta && meta->source)
            n += sprintf(text + n, "source=%s\n", meta->source);
        if (meta && meta->options)
            n += sprintf(text + n, "options=%s\n", meta->options);
        add_piece(w, SEC_META, text, (uint64_t)n);
    }

    uint8_t *pr = add_record(w, SEC_PROGRAM, PROGRAM_BYTES);
    if (pr) {
        put32(pr + P_N_INPUTS, (uint32_t)p->n_inputs);
        put32(pr + P_INPUTS_START, add_indices(w, p->inputs, p->n_inputs));
        put32(pr + P_N_OUTPUTS, (uint32_t)p->n_outputs);
        put32(pr + P_OUTPUTS_START, add_indices(w, p->outputs, p->n_outputs));
        put32(pr + P_PRODUCER, intern(w, p->producer));
        put64(pr + P_ACT_BYTES, p->act_bytes);
        put64(pr + P_HOST_BYTES, p->host_bytes);
        put64(pr + P_WEIGHTS_BYTES, p->weights_bytes);
        put64(pr + P_STATE_BYTES, p->state_bytes); /* zero (reserved) below format 3 */
    }

    for (int i = 0; i < p->n_tensors; i++) {
        const struct npu_prog_tensor *t = &p->tensors[i];
        uint8_t *r = add_record(w, SEC_TENSORS, TENSOR_BYTES);
        if (!r)
            return;
        put32(r + T_NAME, intern(w, t->name));
        put32(r + T_DTYPE, (uint32_t)t->t.dtype);
        put32(r + T_NDIM, (uint32_t)t->t.ndim);
        put32(r + T_PLACE, (uint32_t)t->place);
        put_dims(r + T_DIMS, t->t.dims, t->t.ndim);
        put64(r + T_OFFSET, t->offset);
        put64(r + T_BYTES, t->bytes);
        put32(r + T_BUFFER, t->buffer);
        put32(r + T_LAYOUT, (uint32_t)t->layout);
        put32(r + T_MEM_DTYPE, (uint32_t)t->mem_dtype);
        put32(r + T_NPU_C, t->npu_c);
        put32(r + T_NPU_H, t->npu_h);
        put32(r + T_NPU_W, t->npu_w);
        put32(r + T_ORDER, t->npu_order);
        putf32(r + T_QSCALE, t->t.qscale);
        put32(r + T_QZERO, (uint32_t)t->t.qzero);
        put32(r + T_IO_INPUT, (uint32_t)t->io_input);
        put32(r + T_IO_OUTPUT, (uint32_t)t->io_output);
        if (t->place == NPU_PLACE_HOST && t->t.data) {
            int64_t nb = npu_tensor_nbytes(&t->t);
            put32(r + T_FLAGS, T_FLAG_CONST);
            put64(r + T_DATA_SIZE, nb > 0 ? (uint64_t)nb : 0);
            put64(r + T_DATA_OFFSET, add_blob(w, SEC_CONSTS, t->t.data, nb > 0 ? (uint64_t)nb : 0));
        }
    }

    for (int s = 0; s < p->n_steps; s++) {
        const struct npu_prog_step *st = &p->steps[s];
        uint8_t *r = add_record(w, SEC_STEPS, STEP_BYTES);
        if (!r)
            return;
        put32(r + ST_KIND, (uint32_t)st->kind);
        put32(r + ST_OP,
              st->kind == NPU_STEP_CPU ? intern(w, npu_op_name(st->op)) : NPUB_NO_STRING);
        put32(r + ST_JOB, (uint32_t)st->job);
        put32(r + ST_NAME, intern(w, st->name));
        put32(r + ST_IN_START, add_indices(w, st->in, st->nin));
        put32(r + ST_NIN, (uint32_t)st->nin);
        put32(r + ST_OUT_START, add_indices(w, st->out, st->nout));
        put32(r + ST_NOUT, (uint32_t)st->nout);
        put32(r + ST_ATTR_START, w->sec[SEC_ATTRS].count);
        put32(r + ST_NATTR, (uint32_t)st->attrs.n);
        for (size_t a = 0; a < st->attrs.n; a++)
            add_attr(w, &st->attrs.v[a]);
    }

    uint64_t qwords = 0;
    for (int j = 0; j < p->n_jobs; j++) {
        const struct npu_prog_job *jb = &p->jobs[j];
        uint8_t *r = add_record(w, SEC_JOBS, JOB_BYTES);
        uint8_t *q = w_alloc(w, 8 * (size_t)jb->n_qwords);
        if (!r || !q)
            return;
        put64(r + J_REGCMD_START, qwords);
        put32(r + J_N_QWORDS, jb->n_qwords);
        put32(r + J_TASK_START, w->sec[SEC_TASKS].count);
        put32(r + J_N_TASKS, jb->n_tasks);
        put32(r + J_RELOC_START, w->sec[SEC_RELOCS].count);
        put32(r + J_N_RELOCS, jb->n_relocs);
        put32(r + J_ALIGN, jb->segment_align);
        putf64(r + J_MODELED, jb->modeled_s);
        for (uint32_t i = 0; i < jb->n_qwords; i++)
            put64(q + 8 * i, jb->regcmd[i]);
        add_piece(w, SEC_REGCMD, q, 8 * (uint64_t)jb->n_qwords);
        qwords += jb->n_qwords;
        for (uint32_t t = 0; t < jb->n_tasks; t++) {
            uint8_t *k = add_record(w, SEC_TASKS, TASK_BYTES);
            if (!k)
                return;
            put32(k + K_START, jb->tasks[t].start);
            put32(k + K_N_BODY, jb->tasks[t].n_body);
            put32(k + K_ENABLE, jb->tasks[t].enable_mask);
            put32(k + K_INT_MASK, jb->tasks[t].int_mask);
            put32(k + K_NAME, intern(w, jb->tasks[t].name));
        }
        for (uint32_t i = 0; i < jb->n_relocs; i++) {
            uint8_t *k = add_record(w, SEC_RELOCS, RELOC_BYTES);
            if (!k)
                return;
            put32(k + R_QWORD, jb->relocs[i].qword);
            put32(k + R_BUFFER, jb->relocs[i].buffer);
            put32(k + R_OFFSET, jb->relocs[i].offset);
        }
        for (uint32_t i = 0; i < jb->n_dynrelocs; i++) {
            const struct npu_prog_dynreloc *d = &jb->dynrelocs[i];
            uint8_t *k = add_record(w, SEC_DYNRELOCS, DYNRELOC_BYTES);
            if (!k)
                return;
            put32(k + D_JOB, (uint32_t)j);
            put32(k + D_RELOC, d->reloc);
            put32(k + D_INPUT, d->input);
            put32(k + D_STRIDE, d->stride);
            put32(k + D_LIMIT, d->limit);
            put32(k + D_EXTENT, d->extent);
        }
    }
    w->sec[SEC_REGCMD].count = (uint32_t)NPU_MIN(qwords, UINT32_MAX);
    add_piece(w, SEC_WEIGHTS, p->weights, p->weights_bytes);
    /* the string pool last: every record above has interned its strings */
    add_piece(w, SEC_STRINGS, w->str, w->nstr);
}

/* ---- output -------------------------------------------------------------------------- */

/* A file is written through a staging buffer of whole blocks: with O_DIRECT (where the
 * file system takes it) the blocks go to the device from there, instead of the kernel
 * copying every byte into freshly allocated page-cache pages first (the file is flushed to
 * the device before the rename anyway). Without O_DIRECT, or once a direct write is
 * refused, the same blocks are written through the page cache. */
#define STAGE_BYTES ((size_t)4 << 20)
#define STAGE_ALIGN 4096u

struct out {
    int fd;       /* or */
    uint8_t *buf; /* memory */
    uint64_t pos;
    struct npu_xxh64_state *body; /* hashes what passes through */
    bool hash_only;               /* neither copies nor writes */
    bool err;
    uint8_t *stage; /* fd: cap bytes (a multiple of STAGE_ALIGN), STAGE_ALIGN-aligned */
    size_t staged, cap;
    bool direct; /* fd is open with O_DIRECT */
};

static const uint8_t zeros[4096];

/* Writes all of p to o->fd. */
static bool
write_all(struct out *o, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = write(o->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EINVAL && o->direct) {
            /* the file system refuses this direct write: through the page cache */
            int fl = fcntl(o->fd, F_GETFL);
            if (fl == -1 || fcntl(o->fd, F_SETFL, fl & ~O_DIRECT) == -1)
                return false;
            o->direct = false;
            continue;
        }
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* Writes the staged bytes: whole blocks directly; a last partial block (end of file)
 * through the page cache. */
static void
flush_stage(struct out *o, bool last)
{
    size_t n = o->staged;
    if (!n || o->err)
        return;
    size_t whole = o->direct ? n / STAGE_ALIGN * STAGE_ALIGN : n;
    if (whole && !write_all(o, o->stage, whole))
        o->err = true;
    if (!o->err && whole < n) {
        if (!last) { /* only at the end: keep the tail for the next flush */
            memmove(o->stage, o->stage + whole, n - whole);
            o->staged = n - whole;
            return;
        }
        int fl = fcntl(o->fd, F_GETFL);
        if (fl == -1 || fcntl(o->fd, F_SETFL, fl & ~O_DIRECT) == -1)
            o->err = true;
        o->direct = false;
        if (!o->err && !write_all(o, o->stage + whole, n - whole))
            o->err = true;
    }
    o->staged = 0;
}

static void
emit(struct out *o, const void *p, uint64_t n)
{
    while (n && !o->err) {
        uint64_t k = p ? n : NPU_MIN(n, sizeof(zeros));
        const void *src = p ? p : zeros;
        if (o->stage)
            k = NPU_MIN(k, o->cap - o->staged);
        if (o->body)
            npu_xxh64_update(o->body, src, (size_t)k);
        if (o->hash_only) {
            ;
        } else if (o->buf) {
            memcpy(o->buf + o->pos, src, (size_t)k);
        } else {
            memcpy(o->stage + o->staged, src, (size_t)k);
            o->staged += (size_t)k;
            if (o->staged == o->cap)
                flush_stage(o, false);
        }
        o->pos += k;
        n -= k;
        if (p)
            p = (const uint8_t *)p + k;
    }
}

static void
hash_section(struct wsec *s)
{
    struct npu_xxh64_state h;
    npu_xxh64_init(&h, 0);
    for (int i = 0; i < s->npc; i++) {
        uint64_t n = s->pc[i].n;
        const uint8_t *p = s->pc[i].p;
        while (n) {
            uint64_t k = p ? n : NPU_MIN(n, sizeof(zeros));
            npu_xxh64_update(&h, p ? p : zeros, (size_t)k);
            n -= k;
            if (p)
                p += k;
        }
    }
    s->hash = npu_xxh64_digest(&h);
}

/* Streams the body - the section table, then every section at its offset
 * with zero padding between - into o (which may only hash). */
static void
emit_body(struct writer *w, const uint8_t *table, uint32_t ns, uint64_t end, struct out *o)
{
    emit(o, table, (uint64_t)ns * NPUB_SECTION_ENTRY_BYTES);
    for (int k = 1; k < SEC_KIND_END; k++) {
        struct wsec *s = &w->sec[k];
        if (!s->offset)
            continue;
        emit(o, NULL, s->offset - o->pos);
        for (int i = 0; i < s->npc; i++)
            emit(o, s->pc[i].p, s->pc[i].n);
    }
    emit(o, NULL, end - o->pos);
}

static bool
present(const struct writer *w, int k)
{
    return w->sec[k].size || k == SEC_PROGRAM || k == SEC_STRINGS || k == SEC_META;
}

/* Lays out, hashes and writes everything. With o == NULL only computes the
 * file size; o->buf (if used) must hold that many bytes. */
static enum npu_status
serialise(struct writer *w, const struct npu_npub_meta *meta, const struct npu_program *p,
          struct out *o, uint64_t *size)
{
    uint8_t table[NPUB_MAX_SECTIONS * NPUB_SECTION_ENTRY_BYTES];
    uint32_t ns = 0;
    for (int k = 1; k < SEC_KIND_END; k++)
        ns += present(w, k);
    uint64_t pos =
        NPU_ALIGN(NPUB_HEADER_BYTES + (uint64_t)ns * NPUB_SECTION_ENTRY_BYTES, NPUB_ALIGN);
    uint32_t e = 0;
    memset(table, 0, sizeof(table));
    for (int k = 1; k < SEC_KIND_END; k++) {
        struct wsec *s = &w->sec[k];
        if (!present(w, k))
            continue;
        s->offset = pos;
        pos = NPU_ALIGN(pos + s->size, NPUB_ALIGN);
        if (o)
            hash_section(s);
        uint8_t *t = table + e++ * NPUB_SECTION_ENTRY_BYTES;
        put32(t + S_KIND, s->kind);
        put32(t + S_COUNT, s->count);
        put64(t + S_OFFSET, s->offset);
        put64(t + S_SIZE, s->size);
        put64(t + S_HASH, s->hash);
    }
    *size = pos;
    if (!o)
        return NPU_OK;

    uint8_t hdr[NPUB_HEADER_BYTES];
    memset(hdr, 0, sizeof(hdr));
    memcpy(hdr + H_MAGIC, NPUB_MAGIC, 8);
    put32(hdr + H_FORMAT, format_of(p, meta));
    put32(hdr + H_HEADER_SIZE, NPUB_HEADER_BYTES);
    put64(hdr + H_FILE_SIZE, pos);
    put32(hdr + H_N_SECTIONS, ns);
    put64(hdr + H_TABLE_OFFSET, NPUB_HEADER_BYTES);
    put32(hdr + H_COMPILER, npu_compiler_version());
    put32(hdr + H_PROGRAM_VERSION, p->version);
    put64(hdr + H_MODEL_HASH, meta ? meta->model_hash : 0);
    put64(hdr + H_OPTIONS_HASH, meta ? meta->options_hash : 0);
    put64(hdr + H_TABLE_HASH, npu_xxh64(table, (size_t)ns * NPUB_SECTION_ENTRY_BYTES, 0));

    struct npu_xxh64_state body;
    npu_xxh64_init(&body, 0);
    struct out hash_only = {.body = &body, .pos = NPUB_HEADER_BYTES, .hash_only = true};
    emit_body(w, table, ns, pos, &hash_only);
    put64(hdr + H_BODY_HASH, npu_xxh64_digest(&body));
    put64(hdr + H_HEADER_HASH, npu_xxh64(hdr, H_HEADER_HASH, 0));
    emit(o, hdr, sizeof(hdr));
    emit_body(w, table, ns, pos, o);
    return o->err ? NPU_ERR_IO : NPU_OK;
}

static void
writer_fini(struct writer *w)
{
    for (int k = 0; k < SEC_KIND_END; k++)
        free(w->sec[k].pc);
    for (int i = 0; i < w->nowned; i++)
        free(w->owned[i]);
    free(w->owned);
    free(w->str);
    free(w->slot);
}

static enum npu_status
prepare(struct writer *w, const struct npu_program *p, const struct npu_npub_meta *meta)
{
    memset(w, 0, sizeof(*w));
    if (!p) {
        npu_err(DOM, "no program to write");
        return NPU_ERR_INVALID;
    }
    char why[256];
    if (meta && !npu_npub_props_check(meta->props, meta->n_props, why, sizeof(why))) {
        npu_err(DOM, "cannot write the model metadata: %s", why);
        return NPU_ERR_INVALID;
    }
    build(w, p, meta);
    if (w->oom) {
        npu_err(DOM, "out of memory while encoding the program");
        return NPU_ERR_NOMEM;
    }
    return NPU_OK;
}

enum npu_status
npu_npub_encode(const struct npu_program *p, const struct npu_npub_meta *meta, void **buf,
                size_t *len)
{
    struct writer w;
    uint64_t size = 0;
    *buf = NULL;
    *len = 0;
    enum npu_status st = prepare(&w, p, meta);
    if (!st)
        st = serialise(&w, meta, p, NULL, &size);
    uint8_t *b = st ? NULL : malloc(size ? size : 1);
    if (!st && !b)
        st = NPU_ERR_NOMEM;
    if (!st) {
        struct out o = {.buf = b};
        st = serialise(&w, meta, p, &o, &size);
    }
    writer_fini(&w);
    if (st) {
        free(b);
        return st;
    }
    *buf = b;
    *len = (size_t)size;
    return NPU_OK;
}

enum npu_status
npu_npub_save(const struct npu_program *p, const struct npu_npub_meta *meta, const char *path)
{
    return npu_npub_save_ex(p, meta, path, 0);
}

enum npu_status
npu_npub_save_ex(const struct npu_program *p, const struct npu_npub_meta *meta, const char *path,
                 unsigned flags)
{
    /* the file-system failures of an optional write (the compile cache) are
     * warnings: the caller goes on without the file */
    enum npu_log_level lvl = flags & NPU_NPUB_QUIET ? NPU_LOG_WARN : NPU_LOG_ERROR;
    struct writer w;
    uint64_t size = 0;
    enum npu_status st = prepare(&w, p, meta);
    if (!st)
        st = serialise(&w, meta, p, NULL, &size);
    if (st) {
        writer_fini(&w);
        return st;
    }
    static unsigned counter;
    size_t plen = strlen(path) + 64;
    char *tmp = malloc(plen);
    void *stage = NULL;
    int fd = -1;
    size_t cap = (size_t)NPU_MIN((uint64_t)STAGE_BYTES, NPU_ALIGN(size + 1, STAGE_ALIGN));
    if (!tmp || posix_memalign(&stage, STAGE_ALIGN, cap)) {
        free(tmp);
        writer_fini(&w);
        return NPU_ERR_NOMEM;
    }
    snprintf(tmp, plen, "%s.tmp.%ld.%u", path, (long)getpid(),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    /* direct for a large file only: a small one is cheaper through the page cache */
    bool direct = size >= 2 * STAGE_BYTES;
#ifdef O_DIRECT
    if (direct)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0644);
    if (!direct || (fd < 0 && errno == EINVAL)) /* not on this file system (tmpfs) */
#endif
    {
        direct = false;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
        npu_log(lvl, DOM, "%s: cannot create: %s", tmp, strerror(errno));
        st = NPU_ERR_IO;
        goto out;
    }
    struct out o = {.fd = fd, .stage = stage, .cap = cap, .direct = direct};
    st = serialise(&w, meta, p, &o, &size);
    flush_stage(&o, true);
    if (!st && (o.err || fsync(fd)))
        st = NPU_ERR_IO;
    if (close(fd))
        st = NPU_ERR_IO;
    /* rename() would replace a device node, FIFO or symbolic link by the file */
    struct stat sb;
    if (!st && !lstat(path, &sb) && !S_ISREG(sb.st_mode)) {
        npu_log(lvl, DOM, "%s: exists and is not a regular file; not replacing it", path);
        st = NPU_ERR_INVALID;
    } else if (!st && rename(tmp, path)) {
        npu_log(lvl, DOM, "%s: cannot rename into place: %s", path, strerror(errno));
        st = NPU_ERR_IO;
    } else if (st && st != NPU_ERR_INVALID) {
        npu_log(lvl, DOM, "%s: write failed: %s", tmp, strerror(errno));
    }
    if (st)
        unlink(tmp);
out:
    free(stage);
    free(tmp);
    writer_fini(&w);
    return st;
}
